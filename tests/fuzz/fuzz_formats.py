"""Every input format gpuwise reads, for the fuzz suite: its seeds (real recordings and examples), a
hypothesis strategy that damages them, the in-process target (the CLI's own command function, called
directly, output captured) and the command line that reproduces a case in a shell.

A target returns the exit code the CLI would give: 0 or 1 for an answer, 2 for bad input (our
UsageError). Anything else that escapes it is a crash; the runner records it.

No command here runs anything the input names (alert commands, hooks, webhooks are parsed, never
delivered), and nothing reaches beyond the machine.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import shlex
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fuzz_mutations import (
    apply_csv_ops,
    apply_ops,
    apply_tree_ops,
    gzip_bomb,
    gzip_wrap,
    parse_csv,
    random_csv_ops,
    random_ops,
    random_tree_ops,
    to_json,
    to_toml,
    write_csv,
)
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parents[2]
# Third-party recordings live in the repository with their provenance (tests/fixtures/recordings), and the
# providers' catalog files ship as package data: a plain clone seeds every format.
RECORDINGS = REPO / "tests" / "fixtures" / "recordings"
SMI = RECORDINGS / "nvidia-smi"
TRACES = RECORDINGS / "traces"
OFFER_FILES = REPO / "src" / "gpuwise" / "catalog" / "data" / "offers"
FIX = REPO / "tests" / "fixtures"
SEEDS = Path(__file__).resolve().parent / "seeds"

# Seeds longer than this are cut (whole lines) so one input stays in the millisecond range; the
# structure they hold (headers, first sections, first rows) is what the parsers branch on.
_SEED_MAX_LINES = {"csv": 40, "catalog": 30}


@dataclass(frozen=True)
class Case:
    """One generated input. ``kind`` "file" writes ``data`` to ``name``; the others build a path that is
    not a plain file (a FIFO nobody writes, a link to /dev/zero, a folder with such an entry)."""

    name: str
    data: bytes
    kind: str = "file"
    note: str = ""


@dataclass
class Format:
    name: str
    strategy: Callable[[], st.SearchStrategy[Case]]
    target: Callable[[Path, bool], int]  # (input path, render text too) -> exit code
    commands: Callable[[Path], list[str]]  # shell commands that read the input (one gpuwise call each)
    explicit: list[Case] = field(default_factory=list)  # always run, before the generated ones


# ---------------------------------------------------------------- seeds


def _read(path: Path) -> bytes:
    return path.read_bytes()


def _cut(data: bytes, max_lines: int) -> bytes:
    lines = data.splitlines(keepends=True)
    return b"".join(lines[:max_lines])


def _files(*patterns: tuple[Path, str]) -> list[Path]:
    found: list[Path] = []
    for base, pattern in patterns:
        found.extend(sorted(base.glob(pattern)))
    return found


def seeds_for(name: str) -> list[bytes]:
    """The real files a format's inputs start from (the recordings and fixtures in tests/)."""
    if name == "workload":
        paths = _files((REPO / "examples", "*.toml"), (FIX / "plan", "*.toml"))
        return [_read(p) for p in paths]
    if name == "config":
        return [_read(p) for p in _files((SEEDS, "config*.toml"))]
    if name in ("xml", "query-text", "table", "kernel-log"):
        sub = {"xml": "xml", "query-text": "query-text", "table": "table", "kernel-log": "kernel-log"}[name]
        return [_read(p) for p in _files((SMI / sub, "*"))]
    if name == "error":
        return [_read(p) for p in _files((SMI / "errors", "*"))]
    if name == "capture":
        return [_read(p) for p in _files((SMI / "captures", "*"))]
    if name == "csv":
        paths = [
            *_files((FIX / "idle", "*.csv"), (FIX / "monitor", "*.csv")),
            TRACES / "landct_desktop_bursts_1s.csv",
            TRACES / "wandb_gb10_sweep_cpu_tail_15s.nvidia-smi.csv",
        ]
        return [_cut(_read(p), _SEED_MAX_LINES["csv"]) for p in paths]
    if name == "wandb":
        return [_cut(_read(TRACES / "wandb_gb10_sweep_cpu_tail_15s.csv"), _SEED_MAX_LINES["csv"])]
    if name == "catalog":
        paths = [
            *_files((OFFER_FILES, "*.csv")),
            FIX / "catalog" / "own.csv",
            *_files((FIX / "catalog" / "bad", "*.csv")),
        ]
        return [_cut(_read(p), _SEED_MAX_LINES["catalog"]) for p in paths]
    if name == "calibration":
        return [_read(p) for p in _files((FIX / "estimate", "*.json"), (FIX / "plan", "*.json"))]
    if name == "fingerprint":
        return [_read(p) for p in _files((SEEDS, "fingerprint*.json"))]
    if name == "idle-state":
        return [_read(p) for p in _files((SEEDS, "idle-state*.json"))]
    raise KeyError(name)


# ---------------------------------------------------------------- strategies


def _nest_toml(depth: int) -> tuple[bytes, bytes]:
    return b"deep = " + b"[" * depth, b"]" * depth


def _nest_json(depth: int) -> tuple[bytes, bytes]:
    return b'{"deep": ' + b"[" * depth, b"]" * depth + b"}"


def _nest_xml(depth: int) -> tuple[bytes, bytes]:
    return b"<a>" * depth, b"</a>" * depth


# Each input is drawn as five integers: which route (raw bytes, damaged seed, structure-aware), which seed,
# how many mutations (0 shrinks to the undamaged seed), the random seed the mutations come from, and
# whether (and how) the result is gzipped.
_DRAW = st.tuples(
    st.integers(0, 49),
    st.integers(0, 2**16),
    st.integers(0, 4),
    st.integers(0, 2**64 - 1),
    st.integers(0, 19),
)


def _raw(rng: random.Random) -> bytes:
    return rng.randbytes(rng.randrange(513))


# Mutations compound (a 300 KB field, duplicated 50 times): generated inputs are cut at 1 MiB to keep
# each in milliseconds. Bigger inputs are the explicit cases' job (the gzip bomb).
MAX_INPUT = 1 << 20


def _gz(data: bytes, z: int, gzip_ok: bool) -> bytes:
    data = data[:MAX_INPUT]
    return gzip_wrap(data, z) if gzip_ok and z < 5 else data  # a quarter of the replay inputs


def _text_format(
    name: str, suffix: str, nest: Callable[[int], tuple[bytes, bytes]] | None, *, gzip_ok: bool
) -> Callable[[], st.SearchStrategy[Case]]:
    """Seeds damaged byte- and line-wise (plus a share of raw bytes); replay files are also gzipped."""

    def build() -> st.SearchStrategy[Case]:
        seeds = seeds_for(name)

        def case(draw: tuple[int, int, int, int, int]) -> Case:
            route, seed, n, r, z = draw
            rng = random.Random(r)
            if route == 0:
                data = _raw(rng)
            else:
                data = apply_ops(seeds[seed % len(seeds)], random_ops(rng, n), nest=nest)
            return Case(f"input{suffix}", _gz(data, z, gzip_ok))

        return _DRAW.map(case)

    return build


def _tree_format(
    name: str,
    suffix: str,
    parse: Callable[[bytes], Any],
    dump: Callable[[Any], bytes],
    nest: Callable[[int], tuple[bytes, bytes]],
) -> Callable[[], st.SearchStrategy[Case]]:
    """Valid-ish documents: the parsed seeds with keys and values mutated, re-serialised; then, for some,
    byte-level damage on top. Plus damaged seeds and some raw bytes."""

    def build() -> st.SearchStrategy[Case]:
        raw = seeds_for(name)
        trees = [parse(s) for s in raw]

        def case(draw: tuple[int, int, int, int, int]) -> Case:
            route, seed, n, r, z = draw
            rng = random.Random(r)
            if route == 0:
                data = _raw(rng)
            elif route < 15:
                data = apply_ops(raw[seed % len(raw)], random_ops(rng, n), nest=nest)
            else:
                tree = apply_tree_ops(trees[seed % len(trees)], random_tree_ops(rng, n))
                data = apply_ops(dump(tree), random_ops(rng, z % 2), nest=nest)
            return Case(f"input{suffix}", data[:MAX_INPUT])

        return _DRAW.map(case)

    return build


def _table_format(
    name: str, suffix: str, units: tuple[str, ...], *, gzip_ok: bool, names: tuple[str, ...] = ()
) -> Callable[[], st.SearchStrategy[Case]]:
    """CSV tables: cells, rows, columns and headers mutated (plus byte damage and raw bytes)."""

    def build() -> st.SearchStrategy[Case]:
        raw = seeds_for(name)
        tables = [parse_csv(s) for s in raw]

        def case(draw: tuple[int, int, int, int, int]) -> Case:
            route, seed, n, r, z = draw
            rng = random.Random(r)
            if route == 0:
                data = _raw(rng)
            elif route < 15:
                data = apply_ops(raw[seed % len(raw)], random_ops(rng, n))
            else:
                rows = apply_csv_ops(tables[seed % len(tables)], random_csv_ops(rng, n), units=units)
                data = apply_ops(write_csv(rows, style=r % 2), random_ops(rng, z % 2))
            file_name = names[(r >> 8) % len(names)] if names else f"input{suffix}"
            return Case(file_name, _gz(data, z, gzip_ok))

        return _DRAW.map(case)

    return build


def _toml(data: bytes) -> Any:
    return tomllib.loads(data.decode("utf-8"))


def _json(data: bytes) -> Any:
    return json.loads(data)


# ---------------------------------------------------------------- running the CLI's commands in-process


class _Captured:
    """stdout and stderr of one in-process command (rich resolves sys.stdout when it prints)."""

    def __init__(self) -> None:
        self.out = io.StringIO()
        self.err = io.StringIO()


def call(command: Callable[..., Any], **kwargs: Any) -> int:
    """Run a CLI command function as `gpuwise.cli.main` would: GpuwiseError → its exit code (after
    rendering its message), typer.Exit → its code. Any other exception propagates: it is a crash."""
    import typer

    from gpuwise.errors import GpuwiseError

    cap = _Captured()
    with contextlib.redirect_stdout(cap.out), contextlib.redirect_stderr(cap.err):
        try:
            command(**kwargs)
        except GpuwiseError as exc:
            exc.render()
            return exc.exit_code
        except typer.Exit as exc:
            return int(exc.exit_code)
    return 0


def _worst(*codes: int) -> int:
    """Several commands read one input: the first that is not a success is what the case reports."""
    return next((c for c in codes if c != 0), 0)


_STATE: dict[str, Any] = {}


def _tiny_trace() -> Path:
    path = Path(os.environ["GPUWISE_FUZZ_WORK"]) / "tiny-trace.csv"
    if not path.exists():
        path.write_bytes(_cut((FIX / "idle" / "eval_phases_h100_30s.csv").read_bytes(), 12))
    return path


def _hot_snapshot() -> Any:
    """A real 8-GPU recording with every reading pushed past the alert thresholds (engine input)."""
    if "hot" not in _STATE:
        from dataclasses import replace

        from gpuwise.gpu.replay import load_recording

        rec = load_recording(SMI / "query-text" / "8x-h100__sw-power-cap-sw-thermal__535.183.01.txt")
        snap = rec.snapshots[-1]
        hot = tuple(
            replace(s, temperature_c=120.0, memory_used_bytes=s.memory_total_bytes) for s in snap.samples
        )
        _STATE["hot"] = replace(snap, samples=hot)
    return _STATE["hot"]


def _plan_offers() -> tuple[list[Any], dict[str, Any]]:
    """One bundled offer of each GPU (24 at most), so the planner runs its whole pipeline in milliseconds."""
    if "offers" not in _STATE:
        from gpuwise.catalog.offers import load_catalog

        catalog = load_catalog(None)
        seen: dict[tuple[str, str], int] = {}
        picked = []
        for offer in catalog.offers:
            key = (offer.gpu, "")
            if seen.get(key, 0) < 1:
                seen[key] = seen.get(key, 0) + 1
                picked.append(offer)
        _STATE["offers"] = (picked[:24], dict(catalog.sources))
    return _STATE["offers"]


def _plan_core(work: Any, cal: Any) -> None:
    """What `gpuwise plan` does after reading its inputs, over a small slice of the catalog."""
    from datetime import date

    from gpuwise.catalog.specs import resolve_gpu
    from gpuwise.cli.output import print_json
    from gpuwise.plan import inputs
    from gpuwise.plan.models import Settings
    from gpuwise.plan.output import result_to_dict
    from gpuwise.plan.planner import plan as run_plan

    offers, sources = _plan_offers()
    constraints = inputs.constraints_from(work, canonical_gpu=lambda g: resolve_gpu(g).name)
    for prototype in (False, True):
        target = inputs.smoke_workload(work)[0] if prototype else work
        settings = Settings(
            today=date(2026, 12, 1),
            single_gpu_only=prototype,
            service_hours=None if prototype else inputs.service_hours_from(work),
        )
        result = run_plan(
            offers,
            inputs.make_estimator(target, cal),
            constraints=constraints,
            data=inputs.data_needs_from(work, smoke=prototype),
            settings=settings,
            spot_lookup=inputs.aws_spot_advisor_lookup,
            sources=sources,
        )
        with contextlib.redirect_stdout(io.StringIO()):
            print_json(result_to_dict(result, work.model_dump(mode="json"), top=5))


def target_workload(path: Path, text: bool) -> int:
    from gpuwise.cli import estimate as cli_estimate
    from gpuwise.errors import GpuwiseError
    from gpuwise.workload import load_workload

    rc = _worst(
        call(cli_estimate.estimate, workload=path, gpu="H100", as_json=True),
        call(cli_estimate.estimate, workload=path, gpu="RTX4090", count=2, as_json=not text),
    )
    if rc == 0 and text:  # the planner costs 20-70 ms: every `text_every`-th input
        try:
            _plan_core(load_workload(path), None)
        except GpuwiseError as exc:
            return exc.exit_code
    return rc


def target_calibration(path: Path, text: bool) -> int:
    from gpuwise.cli import estimate as cli_estimate
    from gpuwise.errors import GpuwiseError
    from gpuwise.estimate import load_calibration
    from gpuwise.workload import load_workload

    work = FIX / "plan" / "llama3-8b-lora.toml"
    rc = call(cli_estimate.estimate, workload=work, gpu="H100", calibration=path, as_json=not text)
    if rc == 0 and text:
        try:
            _plan_core(load_workload(work), load_calibration(path))
        except GpuwiseError as exc:
            return exc.exit_code
    return rc


def target_config(path: Path, text: bool) -> int:
    from gpuwise.cli import idle as cli_idle
    from gpuwise.cli.output import check_input_file
    from gpuwise.config import load_config
    from gpuwise.errors import GpuwiseError
    from gpuwise.idle.settings import load_settings
    from gpuwise.monitor.alerts import AlertDelivery, AlertEngine, alerts_config
    from gpuwise.monitor.settings import ExporterSettings, MachineSettings, MonitorSettings, section

    try:
        check_input_file(path, "Config file", fix="-", text=True)
        cfg = load_config(path)
        load_settings(cfg.sections)
        section(cfg, "monitor", MonitorSettings)
        section(cfg, "exporter", ExporterSettings)
        section(cfg, "machine", MachineSettings)
        alerts = alerts_config(cfg.section("alerts"), str(path))
        if alerts.enabled:
            engine = AlertEngine.from_config(alerts)
            AlertDelivery(alerts)  # built as monitor builds it; never delivered: it would run commands
            for i in range(3):
                engine.update(_hot_snapshot(), timestamp_s=float(i))
    except GpuwiseError as exc:
        return exc.exit_code
    return _worst(
        call(cli_idle.replay, trace=_tiny_trace(), config=path, json_out=not text),
        call(cli_idle.status, config=path, json_out=not text),
    )


def _tables() -> Any:
    if "tables" not in _STATE:
        from gpuwise.doctor.tables import load_tables

        _STATE["tables"] = load_tables()
    return _STATE["tables"]


def _replay_core(path: Path) -> None:
    """What `doctor --replay --json`, `--fingerprint` and `monitor --replay --once --json` do with a
    recording, reading it once (the command functions themselves run on every `text_every`-th input)."""
    from gpuwise.cli import doctor as cli_doctor
    from gpuwise.cli.output import check_input_file, print_json, to_jsonable
    from gpuwise.doctor.fingerprint import fingerprint
    from gpuwise.doctor.replay import facts_from_recording
    from gpuwise.doctor.rules import diagnose
    from gpuwise.gpu.probe import ReplayProbe
    from gpuwise.gpu.replay import load_recording
    from gpuwise.monitor.alerts import AlertEngine, AlertsConfig
    from gpuwise.monitor.hints import HintThresholds

    try:
        from gpuwise.gpu.jsonview import snapshot_to_json
    except ImportError:  # before it moved from the monitor room to gpu/ (one JSON view for every command)
        from gpuwise.gpu.jsonview import snapshot_to_json  # type: ignore[no-redef]
    from gpuwise.monitor.sampler import Sampler

    check_input_file(path, "Recording", fix="-")
    recording = load_recording(path)
    facts = facts_from_recording(recording, str(path))
    findings = diagnose(facts, _tables())
    sampler = Sampler(
        ReplayProbe(recording, clock=lambda: 0.0),
        thresholds=HintThresholds(min_samples=1),
        alerts=AlertEngine.from_config(AlertsConfig(for_samples=1)),
    )
    tick = sampler.tick()
    with contextlib.redirect_stdout(io.StringIO()):
        print_json(
            {
                "findings": findings,
                "gpus": cli_doctor._gpus_json(facts),
                "facts": cli_doctor._facts_json(facts),
            }
        )
        print_json(fingerprint(facts))
        out = snapshot_to_json(tick.snapshot)
        out["hints"] = to_jsonable(tick.hints)
        out["alerts"] = to_jsonable(tick.events)
        print_json(out)


def target_replay(path: Path, text: bool) -> int:
    from gpuwise.cli import doctor as cli_doctor
    from gpuwise.cli import monitor as cli_monitor
    from gpuwise.errors import GpuwiseError

    if text:  # the commands themselves, JSON and rich text
        return _worst(
            call(cli_doctor.doctor, replay=path, as_json=True),
            call(cli_doctor.doctor, replay=path),
            call(cli_monitor.monitor, replay=path, json_out=True),
            call(cli_monitor.monitor, replay=path, once=True),
        )
    try:
        _replay_core(path)
    except GpuwiseError as exc:
        return exc.exit_code
    return 0


def target_trace(path: Path, text: bool) -> int:
    """A time series is read by doctor and monitor (as a recording) and by `idle replay`."""
    from gpuwise.cli import idle as cli_idle

    return _worst(target_replay(path, text), call(cli_idle.replay, trace=path, json_out=not text))


def target_catalog(path: Path, text: bool) -> int:
    from gpuwise.cli import catalog as cli_catalog

    catalog_dir = Path(os.environ["GPUWISE_FUZZ_WORK"]) / "user-catalog"
    rc = call(cli_catalog.import_, path=path, json_out=not text, catalog_dir=catalog_dir)
    if rc == 0 and text:  # what every later command then reads (the merged catalog)
        rc = call(cli_catalog.stats, json_out=True, catalog_dir=catalog_dir)
    return rc


def _real_fingerprint() -> Path:
    return SEEDS / "fingerprint-node-8xh100.json"


def target_fingerprint(path: Path, text: bool) -> int:
    from gpuwise.cli import doctor as cli_doctor

    return _worst(
        call(cli_doctor.doctor, compare=[_real_fingerprint(), path], as_json=not text),
        call(cli_doctor.doctor, compare=[path, path], as_json=True),
    )


def target_idle_state(path: Path, text: bool) -> int:
    from gpuwise import paths
    from gpuwise.cli import idle as cli_idle
    from gpuwise.idle.state import state_path

    state = state_path(paths.data_dir())
    state.parent.mkdir(parents=True, exist_ok=True)
    state.write_bytes(path.read_bytes())  # where the daemon keeps it: not a path the user names
    return call(cli_idle.status, json_out=not text)


# ---------------------------------------------------------------- the command lines (reproducers, CLI sample)
# Shell commands, each one gpuwise invocation (after any set-up): printed with every crash, and run as
# they are by the CLI sample. `gpuwise` is the installed command.


def _q(p: Path | str) -> str:
    return shlex.quote(str(p))


def _cmd_replay(p: Path) -> list[str]:
    return [f"gpuwise doctor --replay {_q(p)} --json", f"gpuwise monitor --replay {_q(p)} --once"]


def _cmd_trace(p: Path) -> list[str]:
    return [*_cmd_replay(p), f"gpuwise idle replay {_q(p)}"]


def _cmd_workload(p: Path) -> list[str]:
    return [f"gpuwise estimate {_q(p)} --gpu H100", f"gpuwise plan {_q(p)} --json --top 3"]


def _cmd_calibration(p: Path) -> list[str]:
    work = _q(FIX / "plan" / "llama3-8b-lora.toml")
    return [
        f"gpuwise estimate {work} --gpu H100 --calibration {_q(p)}",
        f"gpuwise plan {work} --top 3 --calibration {_q(p)}",
    ]


def _cmd_config(p: Path) -> list[str]:
    trace = _q(FIX / "idle" / "eval_phases_h100_30s.csv")
    return [f"gpuwise idle replay {trace} --config {_q(p)}", f"gpuwise idle status --config {_q(p)} --json"]


def _cmd_catalog(p: Path) -> list[str]:
    return [f'gpuwise catalog import {_q(p)} --catalog-dir "$(mktemp -d)/catalog"']


def _cmd_fingerprint(p: Path) -> list[str]:
    return [f"gpuwise doctor --compare {_q(SEEDS / 'fingerprint-node-8xh100.json')} {_q(p)}"]


def _cmd_idle_state(p: Path) -> list[str]:
    return [
        f'd="$(mktemp -d)" && mkdir "$d/idle" && cp {_q(p)} "$d/idle/state.json" && '
        'GPUWISE_DATA_DIR="$d" gpuwise idle status'
    ]


# ---------------------------------------------------------------- explicit cases (always run)


_CSV_LINE = b"2026/05/04 21:00:00.009, 0, 97 %, 71221 MiB\n"
_CSV_HEAD = b"timestamp, index, utilization.gpu [%], memory.used [MiB]\n"


def _special(suffix: str) -> list[Case]:
    """Paths that are not plain files: each must be refused, never waited on or read forever."""
    return [Case(f"input{suffix}", b"", "fifo"), Case(f"input{suffix}", b"", "devzero")]


def _replay_explicit(suffix: str) -> list[Case]:
    # a recording that inflates to 2 GiB: bounded memory means refused, not read
    return [
        *_special(suffix),
        Case(f"input{suffix}.gz", _CSV_HEAD + gzip_bomb(_CSV_LINE, 2048), note="gzip bomb (2 GiB inflated)"),
    ]


FORMATS: dict[str, Format] = {
    "workload": Format(
        "workload",
        _tree_format("workload", ".toml", _toml, to_toml, _nest_toml),
        target_workload,
        _cmd_workload,
        _special(".toml"),
    ),
    "config": Format(
        "config",
        _tree_format("config", ".toml", _toml, to_toml, _nest_toml),
        target_config,
        _cmd_config,
        _special(".toml"),
    ),
    "xml": Format(
        "xml",
        _text_format("xml", ".xml", _nest_xml, gzip_ok=True),
        target_replay,
        _cmd_replay,
        _replay_explicit(".xml"),
    ),
    "query-text": Format(
        "query-text",
        _text_format("query-text", ".txt", None, gzip_ok=True),
        target_replay,
        _cmd_replay,
        _special(".txt"),
    ),
    "table": Format(
        "table",
        _text_format("table", ".txt", None, gzip_ok=True),
        target_replay,
        _cmd_replay,
        _special(".txt"),
    ),
    "error": Format(
        "error",
        _text_format("error", ".txt", None, gzip_ok=True),
        target_replay,
        _cmd_replay,
        _special(".txt"),
    ),
    "kernel-log": Format(
        "kernel-log",
        _text_format("kernel-log", ".log", None, gzip_ok=True),
        target_replay,
        _cmd_replay,
        _special(".log"),
    ),
    "capture": Format(
        "capture",
        _text_format("capture", ".txt", _nest_xml, gzip_ok=True),
        target_replay,
        _cmd_replay,
        _special(".txt"),
    ),
    "csv": Format(
        "csv",
        _table_format("csv", ".csv", ("%", "MiB", "W", "MHz"), gzip_ok=True),
        target_trace,
        _cmd_trace,
        _replay_explicit(".csv"),
    ),
    "wandb": Format(
        "wandb",
        _table_format("wandb", ".csv", (), gzip_ok=True),
        target_trace,
        _cmd_trace,
        _special(".csv"),
    ),
    "catalog": Format(
        "catalog",
        _table_format(
            "catalog",
            ".csv",
            (),
            gzip_ok=False,
            names=("lambda.csv", "own.csv", "vms.csv", "gcp.csv", "x y.csv"),
        ),
        target_catalog,
        _cmd_catalog,
        [
            *_special(".csv"),
            Case("lambda.csv", b"", "dir-with-fifo"),
            Case("lambda.csv", b"", "dir-with-devzero"),
        ],
    ),
    "calibration": Format(
        "calibration",
        _tree_format("calibration", ".json", _json, to_json, _nest_json),
        target_calibration,
        _cmd_calibration,
        _special(".json"),
    ),
    "fingerprint": Format(
        "fingerprint",
        _tree_format("fingerprint", ".json", _json, to_json, _nest_json),
        target_fingerprint,
        _cmd_fingerprint,
        _special(".json"),
    ),
    "idle-state": Format(
        "idle-state",
        _tree_format("idle-state", ".json", _json, to_json, _nest_json),
        target_idle_state,
        _cmd_idle_state,
    ),
}


# ---------------------------------------------------------------- self-tests: formats whose "product" breaks
# They prove the harness can fail: a crash, a hang the alarm interrupts, a hang in C code only the
# parent's watchdog can end, a memory blow-up, an exit code outside 0/1/2.


def _selftest(target: Callable[[Path, bool], int]) -> Format:
    return Format("selftest", _text_format("error", ".txt", None, gzip_ok=False), target, _cmd_replay)


def _st_crash(path: Path, text: bool) -> int:
    if len(path.read_bytes()) % 3 == 0:
        raise ValueError("deliberate crash")
    return 0


def _st_hang(path: Path, text: bool) -> int:
    if len(path.read_bytes()) % 3 == 0:
        while True:
            pass
    return 0


def _st_stuck(path: Path, text: bool) -> int:
    import signal

    # what a hang inside C code looks like from Python: neither time bound is ever handled
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGALRM, signal.SIGPROF])
    while True:
        pass


def _st_blocked(path: Path, text: bool) -> int:
    import time

    time.sleep(3600)  # waiting, not computing: what opening a FIFO nobody writes looks like
    return 0


def _st_memory(path: Path, text: bool) -> int:
    return len(b"x" * (2 << 30))


def _st_exit(path: Path, text: bool) -> int:
    return 3


SELFTESTS: dict[str, Format] = {
    "selftest-crash": _selftest(_st_crash),
    "selftest-hang": _selftest(_st_hang),
    "selftest-stuck": _selftest(_st_stuck),
    "selftest-blocked": _selftest(_st_blocked),
    "selftest-memory": _selftest(_st_memory),
    "selftest-exit": _selftest(_st_exit),
}
for _name, _fmt in SELFTESTS.items():
    _fmt.name = _name
