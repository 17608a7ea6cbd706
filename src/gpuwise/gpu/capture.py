"""Capture files: several nvidia-smi outputs in one text file, each under a `#` banner.

    ################################################################################
    # idle :: query (-q)
    # $ nvidia-smi -q
    ################################################################################
    <the command's output>

(the layout of utkuozdemir/nvidia_gpu_exporter's `internal/captures/`). Sections are kept raw by name
("idle :: query (-q)") for the doctor; the idle and load states become one Snapshot each, built from the
`-q` output and completed with the `--query-gpu` CSV and the default table. Pure; standard library only.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field, fields, replace
from typing import Any

from gpuwise.errors import ReplayError
from gpuwise.gpu import smi_csv, smi_table, smi_text
from gpuwise.gpu.sample import NotSupported, ParseProblem, Sample, Snapshot
from gpuwise.locale import _

__all__ = ["Capture", "looks_like_capture", "parse_capture", "split_sections"]

_RULE = re.compile(r"^#{20,}\s*$")
_TITLE = re.compile(r"^#\s+\S.*::\s*\S")


@dataclass
class Capture:
    sections: dict[str, str]
    commands: dict[str, str]  # section name -> the command line from its "# $ …" banner line
    snapshots: list[Snapshot] = field(default_factory=list)
    problems: list[ParseProblem] = field(default_factory=list)


def looks_like_capture(text: str) -> bool:
    lines = text.splitlines()[:400]
    return any(_RULE.match(a) and _TITLE.match(b) for a, b in itertools.pairwise(lines))


def split_sections(text: str) -> tuple[dict[str, str], dict[str, str]]:
    """Section name -> body text, and section name -> command. Text before the first titled banner is
    kept under "header"."""
    lines = text.splitlines()
    sections: dict[str, str] = {}
    commands: dict[str, str] = {}
    name = "header"
    body: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if _RULE.match(line):
            # a banner: '#' lines up to the closing rule (at most a few lines further)
            j = i + 1
            titles: list[str] = []
            while j < len(lines) and j <= i + 6 and lines[j].startswith("#") and not _RULE.match(lines[j]):
                titles.append(lines[j].lstrip("#").strip())
                j += 1
            if j < len(lines) and _RULE.match(lines[j]) and titles and "::" in titles[0]:
                sections[name] = "\n".join(body).strip("\n") + "\n"
                name = titles[0]
                commands[name] = next((t[1:].strip() for t in titles[1:] if t.startswith("$")), "")
                body = []
                i = j + 1
                continue
        body.append(line)
        i += 1
    sections[name] = "\n".join(body).strip("\n") + "\n"
    return sections, commands


def _merge(base: Sample, more: Sample) -> Sample:
    """`base` with every NotSupported reading that `more` has filled in (same GPU)."""
    changes: dict[str, Any] = {}
    for f in fields(Sample):
        if f.name in ("timestamp_s", "index", "lost", "extra"):
            continue
        if isinstance(getattr(base, f.name), NotSupported) and not isinstance(
            getattr(more, f.name), NotSupported
        ):
            changes[f.name] = getattr(more, f.name)
    return replace(base, **changes) if changes else base


def _state_snapshot(
    state: str, sections: dict[str, str], source: str, problems: list[ParseProblem]
) -> Snapshot | None:
    by_kind: dict[str, str] = {}
    for name, body in sections.items():
        if not name.startswith(f"{state} ::"):
            continue
        kind = name.partition("::")[2].strip()
        by_kind[kind] = body
    qtext = next((b for k, b in by_kind.items() if k.startswith("query (-q)")), None)
    csv_text = next((b for k, b in by_kind.items() if k.startswith("query-gpu")), None)
    table = next((b for k, b in by_kind.items() if k.startswith("nvidia-smi")), None)
    parts: list[Snapshot] = []
    where = f"{source} [{state}]"
    if qtext and smi_text.looks_like_query_text(qtext):
        got = smi_text.parse_query_text(qtext, source=f"{where} -q")
        parts.append(got.snapshot)
        problems.extend(got.problems)
    csv_samples: list[Sample] = []
    if csv_text and smi_csv.looks_like_query_csv(csv_text):
        try:
            csv_samples = smi_csv.busiest_per_gpu(
                smi_csv.parse_query_csv(csv_text, source=f"{where} --query-gpu", default_timestamp_s=0.0)
            )
        except ReplayError as exc:  # a damaged section must not hide the others
            problems.append(ParseProblem(f"{where} --query-gpu", exc.render()))
    if table and smi_table.looks_like_table(table):
        got_t = smi_table.parse_table(table, source=f"{where} table")
        parts.append(got_t.snapshot)
        problems.extend(got_t.problems)
    if not parts and not csv_samples:
        return None
    base = parts[0] if parts else Snapshot(samples=tuple(csv_samples))
    samples = list(base.samples)
    ts = samples[0].timestamp_s if samples else 0.0
    if csv_samples and csv_samples[0].timestamp_s:
        ts = csv_samples[0].timestamp_s  # the CSV's clock has milliseconds
    for other in [*parts[1:], Snapshot(samples=tuple(csv_samples))]:
        by_index = {s.index: s for s in other.samples}
        samples = [_merge(s, by_index[s.index]) if s.index in by_index else s for s in samples]
    samples = [replace(s, timestamp_s=ts) for s in samples]
    driver = next(
        (p.driver_version for p in parts if not isinstance(p.driver_version, NotSupported)),
        base.driver_version,
    )
    cuda = next(
        (p.cuda_driver_version for p in parts if not isinstance(p.cuda_driver_version, NotSupported)),
        base.cuda_driver_version,
    )
    return Snapshot(samples=tuple(samples), driver_version=driver, cuda_driver_version=cuda)


def parse_capture(text: str, *, source: str = "<capture>") -> Capture:
    sections, commands = split_sections(text)
    problems: list[ParseProblem] = []
    states: list[str] = []
    for name in sections:
        state = name.partition("::")[0].strip()
        if "::" in name and state not in ("capabilities", *states):
            states.append(state)
    snapshots = []
    for state in states:
        snap = _state_snapshot(state, sections, source, problems)
        if snap is not None:
            snapshots.append(snap)
    if not snapshots:
        problems.append(
            ParseProblem(source, _("no section with GPU readings (table, -q or --query-gpu) found"))
        )
    snapshots.sort(key=lambda s: s.samples[0].timestamp_s if s.samples else 0.0)
    return Capture(sections=sections, commands=commands, snapshots=snapshots, problems=problems)
