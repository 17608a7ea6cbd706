"""`gpuwise doctor`: diagnose a GPU machine (driver, CUDA, frameworks, GPU health, container, security).

Prints findings grouped by severity with their fixes and a one-line verdict, or `--json` (docs/json.md).
Exit 0 when nothing is an error, 1 otherwise, 2 for bad input. `--fingerprint` / `--compare` describe and
compare nodes for multi-node jobs. Top-level imports stay cheap: the doctor's modules load inside the command.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from gpuwise.locale import N_, _
from gpuwise.locale import _ as _translate  # a value marked with N_() (the extractor refuses _(variable))

if TYPE_CHECKING:
    from gpuwise.doctor.facts import Facts
    from gpuwise.doctor.fingerprint import Difference
    from gpuwise.doctor.rules.finding import Finding


def doctor(  # noqa: PLR0917 - typer passes each option as a parameter
    replay: Annotated[
        Path | None,
        typer.Option(
            "--replay",
            help=_(
                "Diagnose a recording (nvidia-smi XML/-q/table/error text, kernel log, "
                "capture, CSV, or a folder of them) instead of this machine."
            ),
        ),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help=_("Print findings, GPUs and facts as JSON."))
    ] = False,
    show_all: Annotated[
        bool, typer.Option("--all", help=_("Also list the checks that ran and passed."))
    ] = False,
    path: Annotated[
        list[Path] | None,
        typer.Option(
            "--path",
            metavar="DIR",
            help=_("A dataset or checkpoint directory whose free space to check (repeatable)."),
        ),
    ] = None,
    python: Annotated[
        str | None,
        typer.Option(
            "--python", help=_("Inspect the frameworks of this Python interpreter (default: gpuwise's own).")
        ),
    ] = None,
    timeout_s: Annotated[
        float, typer.Option("--timeout-s", help=_("Seconds each framework may take to import (1 or more)."))
    ] = 20.0,
    fingerprint: Annotated[
        bool,
        typer.Option(
            "--fingerprint",
            help=_(
                "Print this node's fingerprint (driver, CUDA, frameworks, NCCL, GPUs) as JSON, for --compare."
            ),
        ),
    ] = False,
    compare: Annotated[
        tuple[Path, Path] | None,
        typer.Option(
            "--compare",
            metavar="A.json B.json",
            help=_(
                "Compare two fingerprint files (A.json B.json); exit 1 when they differ "
                "in what multi-node jobs need identical."
            ),
        ),
    ] = None,
) -> None:
    """Diagnose this GPU machine: why can't PyTorch see my GPU, and how do I fix it?

    Checks the driver, CUDA and frameworks, GPU health (throttling, ECC, row remapping, Xid errors, PCIe),
    container GPU access, /dev/shm and disk space, and exposed Jupyter/SSH settings. Never needs root: what
    it cannot read, it says. Exit 0 when nothing is an error, 1 otherwise, 2 for bad input.

    Examples:

      gpuwise doctor --path /data

      gpuwise doctor --replay gpu.xml --json

      gpuwise doctor --fingerprint > node1.json && gpuwise doctor --compare node1.json node2.json
    """
    _check_options(replay, path, python, fingerprint=fingerprint, compare=compare, timeout_s=timeout_s)
    if as_json or fingerprint:
        _english_for_json()
    if compare is not None:
        _compare(compare[0], compare[1], as_json)
        return

    from gpuwise.doctor.rules import diagnose
    from gpuwise.doctor.tables import load_tables

    facts = _facts(replay, path, python, timeout_s)
    if fingerprint:
        from gpuwise.cli.output import print_json
        from gpuwise.doctor.fingerprint import fingerprint as make_fingerprint

        print_json(make_fingerprint(facts))
        return
    findings = diagnose(facts, load_tables())
    shown = [f for f in findings if show_all or f.severity != "ok"]
    if as_json:
        from gpuwise.cli.output import print_json

        print_json({"findings": shown, "gpus": _gpus_json(facts), "facts": _facts_json(facts)})
    else:
        _print_report(facts, shown, findings)
    if any(f.severity == "error" for f in findings):
        raise typer.Exit(code=1)


def _check_options(
    replay: Path | None,
    paths: list[Path] | None,
    python: str | None,
    *,
    fingerprint: bool,
    compare: tuple[Path, Path] | None,
    timeout_s: float,
) -> None:
    """Bad input (exit 2) before anything runs: options that contradict each other, a --python that is not
    there, a --path that does not exist, a recording or fingerprint that is a pipe or device."""
    import shutil

    from gpuwise.cli.output import check_at_least, check_input_file
    from gpuwise.errors import UsageError

    check_at_least(timeout_s, 1, "--timeout-s", example="--timeout-s 20")
    if compare is not None:
        clash = [
            o for o, given in (("--fingerprint", fingerprint), ("--replay", replay is not None)) if given
        ]
        if clash:
            raise UsageError(
                _("--compare cannot be combined with {options}").format(options=" and ".join(clash)),
                why=_("--compare only reads two fingerprint files"),
                fix=_(
                    "write each node's fingerprint (gpuwise doctor --fingerprint > node.json), then compare"
                ),
            )
        for one in compare:
            check_input_file(
                one,
                _("Fingerprint"),
                fix=_("give files written by: gpuwise doctor --fingerprint > node.json"),
            )
        return
    if replay is not None:
        check_input_file(
            replay, _("Recording"), fix=_("give a recording file, e.g. nvidia-smi -q -x > gpu.xml")
        )
        return
    if python is not None and shutil.which(python) is None:
        raise UsageError(
            _("--python {python}: no such program").format(python=python),
            why=_("it is not an executable file, nor a name found on PATH"),
            fix=_("give the interpreter your job uses, e.g. --python .venv/bin/python or --python python3"),
        )
    from gpuwise.doctor.gather import within

    for one in paths or ():
        answered, exists = within(5.0, one.exists)  # a stale network mount: the space check says so
        if answered and exists is False:
            raise UsageError(
                _("--path {path} does not exist").format(path=one),
                fix=_("give the dataset or checkpoint directory your job uses"),
            )


def _english_for_json() -> None:
    """JSON is for programs: its findings, facts and differences are the same words in every language, so
    the rules run in English (bad input, checked before this, was reported in the user's language)."""
    from gpuwise.locale import use_language

    use_language("en")


def _facts(replay: Path | None, paths: list[Path] | None, python: str | None, timeout_s: float) -> Facts:
    if replay is not None:
        from gpuwise.doctor.replay import load_replay_facts

        return load_replay_facts(replay)
    from gpuwise.doctor.live import LiveOptions, gather_facts

    return gather_facts(LiveOptions(paths=tuple(paths or ()), python=python, framework_timeout_s=timeout_s))


# ------------------------------------------------------------------------------------------------ JSON


def _gpus_json(facts: Facts) -> list[dict[str, Any]]:
    """The latest snapshot's GPUs in the one sample convention (gpu/jsonview.py: a reading without a value
    is null plus "<field>_status"), and, as before, why a reading failed in `failed`."""
    from gpuwise.gpu.jsonview import sample_to_json
    from gpuwise.gpu.sample import Failed

    latest = facts.gpus.latest if facts.gpus is not None else None
    if latest is None:
        return []
    out = []
    for sample in latest.samples:
        row = sample_to_json(sample)
        row.pop("extra", None)
        row["failed"] = {name: value.why for name, value in vars(sample).items() if isinstance(value, Failed)}
        out.append(row)
    return out


def _facts_json(facts: Facts) -> dict[str, Any]:
    from dataclasses import fields

    from gpuwise.cli.output import to_jsonable

    out: dict[str, Any] = {}
    for f in fields(facts):
        value = getattr(facts, f.name)
        if f.name == "gpus":
            latest = value.latest if value is not None else None
            out["gpu_reader"] = (
                None
                if value is None
                else {
                    "source": value.source,
                    "snapshots": len(value.snapshots),
                    "errors": list(value.all_errors()),
                    "driver_version": to_jsonable(latest.driver_version) if latest else None,
                    "cuda_driver_version": to_jsonable(latest.cuda_driver_version) if latest else None,
                }
            )
            for key in ("driver_version", "cuda_driver_version"):
                if out["gpu_reader"] is not None and not isinstance(out["gpu_reader"][key], str):
                    out["gpu_reader"][key] = None
            continue
        out[f.name] = to_jsonable(value)
    return out


# ------------------------------------------------------------------------------------------------ text

_STYLE = {"error": "bold red", "warn": "yellow", "info": "cyan", "ok": "green"}
_HEADING = {"error": N_("Errors"), "warn": N_("Warnings"), "info": N_("Notes"), "ok": N_("Passed")}


def _print_report(facts: Facts, shown: list[Finding], findings: list[Finding]) -> None:
    from rich.table import Table
    from rich.text import Text

    from gpuwise.cli.output import console
    from gpuwise.doctor.rules import gpu_count, verdict

    where = _("recording {path}").format(path=facts.replay_path) if facts.replay_path else _("this machine")
    gpus = facts.gpus
    reader = (
        _("{count} GPU(s) via {source}").format(count=gpu_count(gpus), source=gpus.source)
        if gpus is not None
        else _("GPUs not read")
    )
    console.print(Text(f"gpuwise doctor: {where} — {reader}", style="bold"))
    for severity in ("error", "warn", "info", "ok"):
        group = [f for f in shown if f.severity == severity]
        if not group:
            continue
        table = Table(
            title=f"{_translate(_HEADING[severity])} ({len(group)})",
            title_style=_STYLE[severity],
            title_justify="left",
            show_lines=True,
            expand=True,
        )
        table.add_column("id", style=_STYLE[severity], no_wrap=True)
        # fold, not rich's default ellipsis: a command, path or device id longer than the cell (and Chinese,
        # which has no spaces to wrap at) is cut with "…" otherwise, and a fix must be copyable whole
        table.add_column(_("finding and evidence"), ratio=3, overflow="fold")
        table.add_column(_("fix"), ratio=3, overflow="fold")
        for f in group:
            body = Text(f.title)
            if f.evidence:
                body.append("\n" + f.evidence, style="dim")
            table.add_row(f.id, body, Text(f.fix))
        console.print(table)
    if facts.unreadable:
        console.print(Text(_("Could not read (these checks did not run):"), style="bold"))
        for line in facts.unreadable:
            console.print(Text(f"  - {line}"), soft_wrap=True)  # whole lines: people copy them
    severities = {f.severity for f in findings}
    style = "bold red" if "error" in severities else ("yellow" if "warn" in severities else "bold green")
    console.print(Text(_("Verdict: {verdict}").format(verdict=verdict(findings)), style=style))


# ------------------------------------------------------------------------------------------------ compare


def _load_fingerprint(path: Path) -> dict[str, Any]:
    from gpuwise.doctor.fingerprint import SCHEMA
    from gpuwise.errors import UsageError
    from gpuwise.safe_read import load_json

    # bounded: size, nesting, no pipes or devices (a fingerprint is a few kB, a few levels deep)
    data = load_json(
        path, what=_("Fingerprint"), fix=_("give files written by: gpuwise doctor --fingerprint > node.json")
    )
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise UsageError(
            _("{path} is not a gpuwise fingerprint").format(path=path),
            why=_('no "schema": "{schema}" in it').format(schema=SCHEMA),
            fix=_("give files written by: gpuwise doctor --fingerprint > node.json"),
        )
    return data


def _compare(a_path: Path, b_path: Path, as_json: bool) -> None:
    from gpuwise.doctor.fingerprint import compare

    a, b = _load_fingerprint(a_path), _load_fingerprint(b_path)
    diffs = compare(a, b)
    blocking = [d for d in diffs if d.must_match]
    if as_json:
        from gpuwise.cli.output import print_json

        print_json(
            {"a": str(a_path), "b": str(b_path), "identical_where_needed": not blocking, "differences": diffs}
        )
    else:
        _print_compare(a_path, b_path, diffs, blocking)
    if blocking:
        raise typer.Exit(code=1)


def _print_compare(a_path: Path, b_path: Path, diffs: list[Difference], blocking: list[Difference]) -> None:
    from rich.table import Table
    from rich.text import Text

    from gpuwise.cli.output import console

    if not diffs:
        console.print(Text(_("{a} and {b}: identical").format(a=a_path, b=b_path), style="bold green"))
        return
    table = Table(title=_("Fingerprint differences"), title_justify="left")
    table.add_column(_("field"), no_wrap=True)
    # A and B, the files named whole below: as headers, two paths cut to the width of a column at 80
    # columns read alike ("/tmp/nodes/no…" twice), and nothing told which node was which
    table.add_column("A", overflow="fold")
    table.add_column("B", overflow="fold")
    table.add_column(_("multi-node jobs need it identical"))
    for d in diffs:
        style = "red" if d.must_match else ""
        table.add_row(Text(d.key, style=style), _show(d.a), _show(d.b), _("yes") if d.must_match else _("no"))
    console.print(table)
    for name, path in (("A", a_path), ("B", b_path)):  # Text: a path with [brackets] is not rich markup
        console.print(Text(f"{name}: {path}"), soft_wrap=True)
    if blocking:
        console.print(
            Text(
                _("Differ in {count} field(s) multi-node jobs need identical: {fields}").format(
                    count=len(blocking), fields=", ".join(d.key for d in blocking)
                ),
                style="bold red",
            )
        )
    else:
        console.print(
            Text(_("Compatible: only fields that may differ between nodes differ"), style="bold green")
        )


def _show(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value) or "—"
    return str(value)
