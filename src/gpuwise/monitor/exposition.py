"""Rendering metric families as the Prometheus text format (0.0.4) or OpenMetrics 1.0.0 text, fast.

Why not prometheus-client's `generate_latest`: it validates and escapes every label name of every sample
(about 2,000 samples for 8 GPUs), which made it ~80 % of a scrape's CPU time. The exporter's label sets
repeat (each GPU's labels appear on some 30 families), so here each distinct label set is escaped once per
render and reused. The output is byte for byte what prometheus-client 0.26 writes with its default
escaping (`underscores`) for the families the exporter builds (gauges, counters and `unknown`s without
timestamps, exemplars or `_created` samples, with valid metric and label names); the tests compare the two
on recorded GPUs and on label values with quotes, backslashes, newlines and non-ASCII text. Anything
outside that subset raises `ValueError` rather than render differently.

Pure: no I/O, no clock.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

from prometheus_client.core import Metric

__all__ = ["render_openmetrics", "render_text"]

_LEGACY_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
_LEGACY_LABEL = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
_TEXT_TYPES = {"gauge": "gauge", "counter": "counter", "unknown": "untyped"}
_OM_ONLY_SUFFIXES = ("_created", "_gsum", "_gcount")


def render_text(families: Iterable[Metric], counters: frozenset[str] = frozenset()) -> bytes:
    """The Prometheus text format. An `unknown` family named in `counters` is typed `counter` under its
    exact name (dcgm-exporter's counters lack the `_total` suffix that OpenMetrics requires)."""
    out: list[str] = []
    labels = _LabelCache()
    for metric in families:
        name, kind = _checked(metric)
        help_name = f"{name}_total" if kind == "counter" else name
        typ = "counter" if kind == "unknown" and name in counters else _TEXT_TYPES[kind]
        doc = metric.documentation.replace("\\", r"\\").replace("\n", r"\n")
        out.append(f"# HELP {help_name} {doc}\n# TYPE {help_name} {typ}\n")
        out.extend(_sample_lines(metric, labels))
    return "".join(out).encode("utf-8")


def render_openmetrics(families: Iterable[Metric]) -> bytes:
    """OpenMetrics 1.0.0 text, ending in `# EOF`."""
    out: list[str] = []
    labels = _LabelCache()
    for metric in families:
        name, kind = _checked(metric)
        doc = metric.documentation.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")
        out.append(f"# HELP {name} {doc}\n# TYPE {name} {kind}\n")
        if metric.unit:
            out.append(f"# UNIT {name} {metric.unit}\n")
        out.extend(_sample_lines(metric, labels))
    out.append("# EOF\n")
    return "".join(out).encode("utf-8")


def _checked(metric: Metric) -> tuple[str, str]:
    if metric.type not in _TEXT_TYPES:
        raise ValueError(f"cannot render a {metric.type} family ({metric.name})")
    if not _LEGACY_NAME.match(metric.name):
        raise ValueError(f"metric name {metric.name!r} needs escaping")
    return metric.name, metric.type


def _sample_lines(metric: Metric, labels: _LabelCache) -> list[str]:
    lines = []
    values = labels.values
    for s in metric.samples:
        if s[3:] != _PLAIN:  # (timestamp, exemplar, native_histogram) of prometheus-client's Sample
            raise ValueError(f"{s.name}: timestamps, exemplars and native histograms are not rendered")
        if s.name not in labels.names:
            _check_sample_name(metric.name, s.name)
            labels.names.add(s.name)
        # most readings repeat (0, 1, whole percentages): format each once; 0.0 and -0.0 are equal
        # keys of a dict but not the same text, so a zero is keyed by its repr
        key = s.value if s.value else repr(s.value)
        value = values.get(key)
        if value is None:
            value = values[key] = go_float(s.value)
        lines.append(f"{s.name}{labels.get(s.labels)} {value}\n")
    return lines


_PLAIN = (None, None, None)


def _check_sample_name(family: str, name: str) -> None:
    if name != family and name.startswith(family) and name[len(family) :] in _OM_ONLY_SUFFIXES:
        raise ValueError(f"{name}: OpenMetrics-only samples are not rendered")
    if not _LEGACY_NAME.match(name):
        raise ValueError(f"sample name {name!r} needs escaping")


class _LabelCache:
    """`{k="v",...}` per distinct label set (keys sorted, values escaped), built once per render; also the
    sample names already checked and the values already formatted in this render."""

    def __init__(self) -> None:
        self._rendered: dict[tuple[tuple[str, str], ...], str] = {}
        self.names: set[str] = set()
        self.values: dict[float | str, str] = {}

    def get(self, labels: dict[str, str]) -> str:
        if not labels:
            return ""
        key = tuple(labels.items())
        got = self._rendered.get(key)
        if got is None:
            got = self._rendered[key] = _render_labels(key)
        return got

    def __len__(self) -> int:
        return len(self._rendered)


def _render_labels(items: tuple[tuple[str, str], ...]) -> str:
    parts = []
    for k, v in sorted(items):
        if not _LEGACY_LABEL.match(k):
            raise ValueError(f"label name {k!r} needs escaping")
        escaped = v.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")
        parts.append(f'{k}="{escaped}"')
    return "{" + ",".join(parts) + "}"


def go_float(value: float) -> str:
    """A float as Go's strconv writes it, the way Prometheus expects (prometheus-client's floatToGoString)."""
    d = float(value)
    if math.isinf(d):
        return "+Inf" if d > 0 else "-Inf"
    if math.isnan(d):
        return "NaN"
    s = repr(d)
    dot = s.find(".")
    # Go switches to exponent notation sooner than Python (from 1e21 down to 1e+06 for positive values)
    if d > 0 and dot > 6:
        mantissa = f"{s[0]}.{s[1:dot]}{s[dot + 1 :]}".rstrip("0.")
        return f"{mantissa}e+{dot - 1:02d}"
    return s
