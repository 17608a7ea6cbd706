"""How `gpuwise bench` shows itself: a progress bar per task on stderr, and the result tables on stdout."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.table import Table

from gpuwise.cli.output import console
from gpuwise.locale import N_, _
from gpuwise.locale import _ as _translate  # a text marked with N_() (the extractor refuses _(variable))

if TYPE_CHECKING:
    from rich.console import Console

    from gpuwise.bench.results import TaskResult
    from gpuwise.bench.suite import Task


def _num(value: Any) -> str:
    if not isinstance(value, int | float):
        return "—"
    if value == 0:
        return "0"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}"


def _pct(fraction: Any) -> str:
    return f"{100 * fraction:.1f} %" if isinstance(fraction, int | float) else "—"


class SuiteProgress:
    """A rich progress bar over the tasks on a terminal's stderr; one plain line per result otherwise."""

    def __init__(self, err: Console, total: int) -> None:
        self.err, self.total = err, total
        self.progress: Any = None
        self.bar: Any = None

    def __enter__(self) -> SuiteProgress:
        if self.err.is_terminal:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self.progress = Progress(
                TextColumn("{task.description}", markup=False),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=self.err,
                transient=True,
            )
            self.progress.start()
            self.bar = self.progress.add_task("bench", total=self.total)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.progress is not None:
            self.progress.stop()

    def start(self, task: Task) -> None:
        if self.progress is not None:
            self.progress.update(self.bar, description=" + ".join(task.produces))

    def done(self, task: Task, results: list[TaskResult]) -> None:  # noqa: ARG002 - the runner's callback shape
        if self.progress is not None:
            self.progress.advance(self.bar)
        for r in results:
            if r.value is None:
                line = f"{r.task}: " + _("skipped: {reason}").format(reason=r.reason)
            else:
                peak = _(" ({fraction} of peak)").format(fraction=_pct(r.fraction_of_peak)) if r.peak else ""
                line = f"{r.task}: {_num(r.value)} {r.unit}{peak}"
            self.err.print(line, markup=False, highlight=False, soft_wrap=True)


def print_suite(document: dict[str, Any]) -> None:
    m = document["machine"]
    what = m.get("gpu") or m.get("gpu_name") or m.get("cpu") or _("this machine")
    title = _("gpuwise bench {suite} on {what} ({device})")
    table = Table(title=title.format(suite=document["suite"], what=what, device=document["device"]))
    for name, justify in (
        (_("task"), "left"),
        (_("value"), "right"),
        (_("unit"), "left"),
        (_("peak"), "right"),
        (_("of peak"), "right"),
    ):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]  # rich's literal type
    skipped: list[str] = []
    for r in document["results"]:
        if r["value"] is None:
            table.add_row(r["task"], "—", r["unit"], "", _("skipped"))
            skipped.append(f"{r['task']}: {r.get('reason', _('no reason recorded'))}")
        else:
            table.add_row(
                r["task"], _num(r["value"]), r["unit"], _num(r["peak"]), _pct(r["fraction_of_peak"])
            )
    console.print(table)
    for line in skipped:  # reasons below the table: in a cell they fold into a column of single words
        console.print(_("skipped {line}").format(line=line), markup=False, highlight=False, soft_wrap=True)
    if document["device"] == "cpu":
        console.print(
            _("CPU peaks: cores × clock × FLOPs/cycle; the memory peak is an assumed DDR5 ceiling.")
        )
        if any((r["fraction_of_peak"] or 0) > 1 for r in document["results"]):
            console.print(
                _(
                    "Over 100 %: the CPU ran faster than the clock its kernel reports (a VM reports its base "
                    "clock; boost runs higher), so that peak is not a ceiling here."
                )
            )


def _amount(value: Any, unit: str) -> str:
    """A figure with its unit, or "—" alone when there is none ("— GiB" reads as a broken number)."""
    return f"{_num(value)} {unit}" if isinstance(value, int | float) else "—"


def print_task(document: dict[str, Any]) -> None:
    from gpuwise.bench.usertask import bound_reason_shown

    t = document["task"]
    rows = [
        (_("command"), " ".join(t["command"])),
        (
            _("units"),
            _amount(t["units"], t["unit"]) + (f" ({t['units_source']})" if t["units_source"] else ""),
        ),
        (_("seconds"), _num(t["seconds"])),
        (_("seconds per unit"), _num(t["seconds_per_unit"])),
        (_("peak GPU memory"), _amount(t["peak_memory_gib"], "GiB")),
        (
            _("GPU utilization"),
            _("{util} % (mean of {count} readings)").format(
                util=_num(t["gpu_util_mean_pct"]), count=t["samples"]
            )
            if isinstance(t["gpu_util_mean_pct"], int | float)
            else "—",
        ),
        (_("bound"), f"{t['bound']}: {bound_reason_shown(t)}"),
    ]
    if t["stopped_at_limit"]:
        rows.append((_("stopped"), _("at --max-seconds")))
    table = Table(show_header=False, title="gpuwise bench task")
    table.add_column(_("what"))
    table.add_column(_("value"))
    for row in rows:
        table.add_row(*row)
    console.print(table)


def print_compare(columns: list[dict[str, Any]]) -> None:
    table = Table(title="gpuwise bench compare")
    table.add_column("", overflow="fold", min_width=16)  # names fold; numbers never do
    for i, col in enumerate(columns, 1):
        table.add_column(f"{i}: {col['gpu'] or _('no GPU')}", justify="right", overflow="fold")
    table.add_row(
        _("machine"), *[f"{c['provider'] or '?'} {c['instance_type'] or ''}".strip() for c in columns]
    )
    table.add_row(
        _("$/hour"), *[_money(c["price_usd_per_hour"]) + f" ({c['price_source']})" for c in columns]
    )
    names: list[str] = []
    for c in columns:
        names += [n for n in c["values"] if n not in names]
    for name in names:
        cells = []
        for c in columns:
            v = c["values"].get(name)
            cells.append("—" if v is None or v["value"] is None else f"{_num(v['value'])} {v['unit']}")
        table.add_row(name, *cells)
    if any("seconds_per_unit" in c for c in columns):
        table.add_row(
            _("seconds per unit"),
            *[f"{_num(c['seconds_per_unit'])} s/{c['unit']}" if "unit" in c else "—" for c in columns],
        )
    for key, label in (
        ("usd_per_1m_training_tokens", N_("$ per 1M training tokens")),
        ("usd_per_1k_images", N_("$ per 1k images")),
        ("usd_per_unit", N_("$ per unit")),
    ):
        if any(key in c for c in columns):
            table.add_row(_translate(label), *[_money(c.get(key)) + _per(c, key) for c in columns])
    console.print(table)
    for i, c in enumerate(columns, 1):
        console.print(f"{i}: {c['file']}", markup=False, highlight=False)


def _per(column: dict[str, Any], key: str) -> str:
    """'/frames' after a task's money per unit: tasks in different units (frames, steps) share the row, and
    without it $0.0003 per frame and $0.0014 per step read as one price against another."""
    if key != "usd_per_unit" or not isinstance(column.get(key), int | float) or not column.get("unit"):
        return ""
    return f"/{column['unit']}"


def _money(value: Any) -> str:
    if not isinstance(value, int | float):
        return "—"
    if value >= 1:
        return f"${value:,.2f}"
    small = f"{value:.4g}"  # a per-unit cost keeps its digits; a price has at least cents ($0.50, not $0.5)
    return f"${value:.2f}" if "e" not in small and len(small.partition(".")[2]) < 2 else f"${small}"
