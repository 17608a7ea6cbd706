"""Rendering for the live view, `--once` and `--since`: data in, rich renderables out (no printing).

Unknown readings are shown as "n/a" (not supported) or "err" (failed), never as 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from gpuwise.gpu.sample import Failed, Sample, Snapshot, value_or_none
from gpuwise.locale import _
from gpuwise.monitor.hints import Hint
from gpuwise.monitor.history import HistorySummary
from gpuwise.monitor.host import HostStats
from gpuwise.units import format_bytes, format_duration

_SPARK = "▁▂▃▄▅▆▇█"


def sparkline(values: Sequence[float | None], *, top: float = 100.0) -> str:
    """One character per value (0..top); a gap (None) is a space."""
    out = []
    for v in values:
        if v is None:
            out.append(" ")
            continue
        frac = max(0.0, min(1.0, v / top)) if top > 0 else 0.0
        out.append(_SPARK[min(len(_SPARK) - 1, int(frac * (len(_SPARK) - 1) + 0.5))])
    return "".join(out)


def bar(fraction: float | None, width: int = 20) -> Text:
    if fraction is None:
        return Text("n/a".ljust(width), style="dim")
    fraction = max(0.0, min(1.0, fraction))
    full = round(fraction * width)
    style = "green" if fraction < 0.7 else "yellow" if fraction < 0.9 else "red"
    return Text("█" * full, style=style) + Text("░" * (width - full), style="dim")


def _r(reading: object, fmt: str = "{:.0f}", unit: str = "") -> str:
    if isinstance(reading, Failed):
        return "err"
    v = value_or_none(reading)
    if v is None:
        return "n/a"
    return fmt.format(v) + unit


def _mem_fraction(s: Sample) -> float | None:
    used, total = value_or_none(s.memory_used_bytes), value_or_none(s.memory_total_bytes)
    return None if used is None or not total else used / total


# Below this many columns a GPU's row no longer fits on one line: the compact layout keeps it to one (an
# 8-GPU machine in an 80x24 terminal folded to 5 lines per GPU, with the throttle heading cut to "throt").
COMPACT_BELOW = 120


class GpuTable:
    """The GPU table, laid out for the width it is given: `gpu_table` in full on a wide terminal, its compact
    form below `COMPACT_BELOW` columns."""

    def __init__(
        self, snapshot: Snapshot, util_history: Mapping[int, Sequence[float | None]] | None = None
    ) -> None:
        self.snapshot, self.util_history = snapshot, util_history

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield gpu_table(self.snapshot, self.util_history, compact=options.max_width < COMPACT_BELOW)


def _compact_memory(s: Sample) -> str:
    """`60/80 GiB`: used and total in one unit, as narrow as it stays honest."""
    used, total = value_or_none(s.memory_used_bytes), value_or_none(s.memory_total_bytes)
    if used is None:
        return "n/a"
    if total is None or total < 2**30:
        return format_bytes(used)
    gib = used / 2**30
    return f"{gib:.1f}/{total / 2**30:.0f} GiB" if gib < 10 else f"{gib:.0f}/{total / 2**30:.0f} GiB"


def gpu_table(
    snapshot: Snapshot,
    util_history: Mapping[int, Sequence[float | None]] | None = None,
    *,
    compact: bool = False,
) -> Table:
    table = Table(expand=True, show_edge=False, pad_edge=False)
    names = {str(value_or_none(s.name) or "?") for s in snapshot.samples if not s.lost}
    # compact: one line per GPU in 80 columns; a model shared by every GPU is named once, above the table
    shared = compact and len(names) == 1
    if shared:
        table.title, table.title_justify = next(iter(names)), "left"
    # The full layout gets one line per GPU from ~190 columns and wraps the name and text columns below that;
    # the compact one keeps one line per GPU in 80 columns (the clocks left to --json and wide terminals).
    table.add_column("GPU", min_width=6, no_wrap=shared)
    table.add_column(_("util"), no_wrap=True, min_width=11 if compact else 17)
    table.add_column(_("memory"), overflow="fold", min_width=14, no_wrap=compact)
    table.add_column(_("recent util"), no_wrap=True, max_width=11 if compact else 30)
    table.add_column(_("power / temp") if compact else _("power / temp / clocks"), overflow="fold")
    table.add_column(_("throttle"), overflow="fold", min_width=8)
    bar_width = 6 if compact else 12
    for s in snapshot.samples:
        name = value_or_none(s.name) or "?"
        head = Text(f"GPU {s.index}" + ("" if shared else " "), style="bold") + Text("" if shared else name)
        if s.lost:
            table.add_row(head, Text(_("LOST"), style="bold red"), "", "", _("GPU does not answer"), "")
            continue
        util = value_or_none(s.util_gpu_pct)
        util_cell = bar(None if util is None else util / 100, bar_width) + Text(
            f" {_r(s.util_gpu_pct, unit='%'):>4}"
        )
        frac = _mem_fraction(s)
        used = value_or_none(s.memory_used_bytes)
        total = value_or_none(s.memory_total_bytes)
        mem_text = (
            "n/a"
            if used is None
            else format_bytes(used) + ("" if total is None else f"/{format_bytes(total)}")
        )
        mem_cell = bar(frac, bar_width) + Text(" " + (_compact_memory(s) if compact else mem_text))
        hist = (util_history or {}).get(s.index, [])
        spark = Text(sparkline(list(hist)[-11 if compact else -30 :]), style="cyan")
        power = f"{_r(s.power_draw_watts)}/{_r(s.power_limit_watts)} W  {_r(s.temperature_c)}°C  "
        if compact:  # the clocks are left to wide terminals and --json; throttling has its own column
            power = f"{_r(s.power_draw_watts)} W {_r(s.temperature_c)}°C"
        else:
            power += _("SM {sm} MHz  mem {mem} MHz").format(sm=_r(s.sm_clock_mhz), mem=_r(s.memory_clock_mhz))
        enc = value_or_none(s.util_encoder_pct)
        dec = value_or_none(s.util_decoder_pct)
        if (enc or 0) > 0 or (dec or 0) > 0:
            power += _("  enc {enc}% dec {dec}%").format(
                enc=_r(s.util_encoder_pct), dec=_r(s.util_decoder_pct)
            )
        reasons = value_or_none(s.throttle_reasons)
        shown = [r for r in (reasons or ()) if r != "gpu_idle"]
        throttle = Text(", ".join(shown) if shown else (_("none") if reasons is not None else "n/a"))
        if shown:
            throttle.stylize("yellow")
        table.add_row(head, util_cell, mem_cell, spark, power, throttle)
    return table


def process_table(snapshot: Snapshot) -> Table | None:
    table = Table(title=_("processes"), expand=True, show_edge=False, pad_edge=False, title_justify="left")
    table.add_column("GPU", justify="right")
    table.add_column("pid", justify="right")
    table.add_column(_("name"))
    table.add_column(_("GPU memory"), justify="right")
    rows = 0
    for s in snapshot.samples:
        procs = value_or_none(s.processes)
        for p in procs or ():
            mem = value_or_none(p.used_memory_bytes)
            table.add_row(str(s.index), str(p.pid), p.name, "n/a" if mem is None else format_bytes(mem))
            rows += 1
    return table if rows else None


def host_line(host: HostStats | None) -> Text:
    if host is None:
        return Text(_("host: n/a"), style="dim")

    def rate(v: float | None) -> str:
        return "n/a" if v is None else format_bytes(v) + "/s"

    parts = [f"CPU {'n/a' if host.cpu_pct is None else f'{host.cpu_pct:.0f}%'}"]
    if host.iowait_pct is not None:
        parts.append(f"iowait {host.iowait_pct:.0f}%")
    if host.memory_used_bytes is not None and host.memory_total_bytes:
        parts.append(
            _("RAM {used}/{total}").format(
                used=format_bytes(host.memory_used_bytes), total=format_bytes(host.memory_total_bytes)
            )
        )
    parts.append(
        _("disk r {read} w {write}").format(
            read=rate(host.disk_read_bytes_per_s), write=rate(host.disk_write_bytes_per_s)
        )
    )
    parts.append(
        _("net rx {rx} tx {tx}").format(rx=rate(host.net_rx_bytes_per_s), tx=rate(host.net_tx_bytes_per_s))
    )
    return Text(_("host: {readings}").format(readings="  ".join(parts)))


def hints_panel(hints: Sequence[Hint]) -> Panel:
    if not hints:
        body: RenderableType = Text(_("no bottleneck seen"), style="green")
    else:
        lines = []
        for h in hints:
            style = "yellow" if h.severity == "warn" else "cyan"
            lines.append(
                Text(f"[{h.id}] ", style=style) + Text(h.message) + Text(f"  ({h.evidence})", style="dim")
            )
        body = Group(*lines)
    return Panel(body, title=_("hints"), title_align="left")


def dashboard(
    snapshot: Snapshot,
    *,
    util_history: Mapping[int, Sequence[float | None]] | None = None,
    host: HostStats | None = None,
    hints: Sequence[Hint] = (),
    alerts: Sequence[str] = (),
    title: str | None = None,
) -> RenderableType:
    parts: list[RenderableType] = []
    when = max((s.timestamp_s for s in snapshot.samples), default=None)
    stamp = "" if when is None else datetime.fromtimestamp(when, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    driver = value_or_none(snapshot.driver_version)
    count = len(snapshot.samples)
    head = Text(title or "gpuwise monitor", style="bold") + Text(
        _("  {n} GPU(s)  {stamp}").format(n=count, stamp=stamp)
    )
    if driver:
        head += Text(_("  driver {version}").format(version=driver))
    parts.append(head)
    for err in snapshot.errors:
        parts.append(Text(err, style="bold red"))
    if snapshot.samples:
        parts.append(GpuTable(snapshot, util_history))
    procs = process_table(snapshot)
    if procs is not None:
        parts.append(procs)
    parts.append(host_line(host))
    if alerts:
        parts.append(
            Panel(Group(*(Text(a, style="red") for a in alerts)), title=_("alerts"), title_align="left")
        )
    parts.append(hints_panel(hints))
    return Group(*parts)


def history_view(summary: HistorySummary) -> RenderableType:
    fmt = "%Y-%m-%d %H:%M"
    since = datetime.fromtimestamp(summary.since_s, UTC).strftime(fmt)
    until = datetime.fromtimestamp(summary.until_s, UTC).strftime(fmt)
    parts: list[RenderableType] = [
        Text(_("history {since} → {until} UTC").format(since=since, until=until), style="bold")
    ]
    if not summary.gpus:
        parts.append(Text(_("no samples in this window (was `gpuwise monitor` or `exporter` running?)")))
        return Group(*parts)
    table = Table(expand=True, show_edge=False)
    for col in ("GPU", _("samples"), _("util mean/max"), _("memory peak"), _("idle")):
        table.add_column(col, no_wrap=True)
    table.add_column(_("util over the window"), no_wrap=False)
    for g in summary.gpus:
        util = "n/a" if g.mean_util_pct is None else f"{g.mean_util_pct:.0f}% / {g.max_util_pct or 0:.0f}%"
        mem = "n/a" if g.memory_peak_bytes is None else format_bytes(g.memory_peak_bytes)
        if g.memory_total_bytes and g.memory_peak_bytes is not None:
            mem += _(" of {total}").format(total=format_bytes(g.memory_total_bytes))
        idle = format_duration(g.idle_seconds) + _(" in {n} stretch(es)").format(n=len(g.idle_stretches))
        table.add_row(
            f"{g.gpu} {g.name or ''}",
            str(g.samples),
            util,
            mem,
            idle,
            Text(sparkline(g.util_sparkline), style="cyan"),
        )
    parts.append(table)
    for g in summary.gpus:
        for hid, n in sorted(g.hints.items()):
            parts.append(
                Text(_("GPU {gpu}: hint {id} seen {n}×").format(gpu=g.gpu, id=hid, n=n), style="yellow")
            )
        for a in g.alerts:
            parts.append(Text(_("GPU {gpu}: alert {alert}").format(gpu=g.gpu, alert=a), style="red"))
    return Group(*parts)
