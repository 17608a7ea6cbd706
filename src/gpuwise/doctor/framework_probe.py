"""The Python-framework probe: which of PyTorch, TensorFlow and JAX are installed, their CUDA builds and
what they see, read from child interpreters so a hung driver cannot hang the doctor.

Each framework is imported only in a child process (one per framework, all at once, under one deadline);
the child prints one JSON object. Must not import torch or any framework itself.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from gpuwise.doctor.facts import FrameworkFacts
from gpuwise.doctor.gather import Unreadable
from gpuwise.locale import _

FRAMEWORKS = {"pytorch": "torch", "tensorflow": "tensorflow", "jax": "jax"}
_REAP_S = 2.0  # how long a killed probe may take to go away before the doctor stops waiting for it

# Runs in a child interpreter: imports one framework and prints one JSON object. Warnings are captured so
# "CUDA initialization: …" explanations reach the doctor. Its first line drops the working directory from
# sys.path (`-c` puts it first) before anything else is imported: see _probe_argv.
_PROBE = r"""
import os, sys
sys.path[:] = [p for p in sys.path if p and os.path.abspath(p) != os.getcwd()]
import json, warnings
name = sys.argv[1]
out = {"name": name}
import importlib.util
if importlib.util.find_spec({"pytorch": "torch"}.get(name, name)) is None:
    print(json.dumps({"name": name, "absent": True}))
    sys.exit(0)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    try:
        if name == "pytorch":
            import torch
            out["version"] = torch.__version__
            out["cuda_version"] = torch.version.cuda
            try:
                out["cudnn_version"] = str(torch.backends.cudnn.version())
            except Exception:
                pass
            try:
                out["arch_list"] = list(torch._C._cuda_getArchFlags().split()) if torch.version.cuda else None
            except Exception:
                out["arch_list"] = None
            try:
                v = torch.cuda.nccl.version()
                out["nccl_version"] = ".".join(map(str, v)) if isinstance(v, tuple) else str(v)
            except Exception:
                pass
            out["cuda_available"] = bool(torch.cuda.is_available())
            if out["cuda_available"]:
                n = torch.cuda.device_count()
                out["device_count"] = n
                out["device_capabilities"] = ["%d.%d" % torch.cuda.get_device_capability(i) for i in range(n)]
                if not out.get("arch_list"):
                    out["arch_list"] = torch.cuda.get_arch_list()
        elif name == "tensorflow":
            import tensorflow as tf
            out["version"] = tf.__version__
            info = tf.sysconfig.get_build_info()
            out["cuda_version"] = info.get("cuda_version")
            out["cudnn_version"] = info.get("cudnn_version")
            gpus = tf.config.list_physical_devices("GPU")
            out["device_count"] = len(gpus)
            out["cuda_available"] = bool(gpus) if info.get("is_cuda_build") else None
        elif name == "jax":
            import jax
            out["version"] = jax.__version__
            try:
                devices = jax.devices("gpu")
                out["device_count"] = len(devices)
                out["cuda_available"] = True
                out["device_capabilities"] = [
                    d.compute_capability for d in devices if hasattr(d, "compute_capability")
                ]
            except Exception as exc:
                out["cuda_available"] = False
                out["cuda_error"] = str(exc).splitlines()[0][:300]
            from importlib import metadata
            for major in ("13", "12"):
                try:
                    metadata.version("jax-cuda%s-plugin" % major)
                    out["cuda_version"] = major
                    break
                except Exception:
                    pass
    except Exception as exc:
        out["error"] = "%s: %s" % (type(exc).__name__, str(exc).splitlines()[0][:300] if str(exc) else "")
texts = [str(w.message).splitlines()[0][:300] for w in caught if "CUDA" in str(w.message)]
if texts and "cuda_error" not in out:
    out["cuda_error"] = texts[0]
print(json.dumps(out))
"""


def _nccl_from_wheels() -> str | None:
    """NCCL as installed by pip (nvidia-nccl-cu12/-cu13): cheap, no import."""
    from importlib import metadata

    for name in ("nvidia-nccl-cu13", "nvidia-nccl-cu12", "nvidia-nccl-cu11"):
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return None


def gather_frameworks(
    python: str | None = None,
    timeout_s: float = 20.0,
    is_installed: Callable[[str], bool] | None = None,
) -> tuple[tuple[FrameworkFacts, ...], Unreadable]:
    """Probe each installed framework in its own child interpreter, all at once, under one deadline.

    ``python`` defaults to this interpreter (then `importlib.util.find_spec` decides cheaply what is
    installed); another interpreter is asked about every framework.
    """
    import importlib.util

    # Absolute before the child moves to its empty folder: `--python .venv/bin/python` names a path
    # relative to where the user stands, and a bare `python3` is looked up on this PATH, from here.
    # absolute(), not resolve(): a venv's python is a symlink, and following it would leave the venv.
    interpreter = str(Path(shutil.which(python) or python).absolute()) if python else sys.executable
    if is_installed is None:
        if python is None:

            def is_installed(module: str) -> bool:
                return importlib.util.find_spec(module) is not None
        else:

            def is_installed(_module: str) -> bool:
                return True

    names = [name for name, module in FRAMEWORKS.items() if is_installed(module)]
    procs: dict[str, subprocess.Popen[str]] = {}
    unreadable: Unreadable = []
    with tempfile.TemporaryDirectory(prefix="gpuwise-doctor-") as neutral_dir:
        for name in names:
            try:
                procs[name] = subprocess.Popen(
                    _probe_argv(interpreter, name),
                    cwd=neutral_dir,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    stdin=subprocess.DEVNULL,
                    text=True,
                    errors="replace",
                    env={**os.environ, "PYTHONWARNINGS": "ignore", "TF_CPP_MIN_LOG_LEVEL": "3"},
                    start_new_session=True,  # its own process group: a timeout stops what it started too
                )
            except OSError as exc:
                unreadable.append(f"{name}: cannot start {interpreter}: {exc.strerror}")
        nccl_wheel = _nccl_from_wheels() if python is None else None
        try:
            return _collect(procs, timeout_s, nccl_wheel=nccl_wheel), unreadable
        finally:  # Ctrl-C too: the probes' own session does not get the terminal's SIGINT
            for proc in procs.values():
                if proc.poll() is None:
                    _stop(proc)


def _probe_argv(interpreter: str, name: str) -> list[str]:
    """The child's command line. The doctor is run as root inside cloned repositories, and `python -c`
    puts the working directory first on sys.path: a `torch.py` (or `json.py`) there would run as root.
    The child therefore starts in a fresh empty directory of ours (so '' and any relative PYTHONPATH
    entry such as `PYTHONPATH=.` point at nothing) and its first line drops that directory from sys.path.

    Not `-I`: isolated mode also ignores PYTHONPATH and the user site-packages, and a framework installed
    with `pip install --user` or reached through PYTHONPATH (HPC modules, some containers) is exactly what
    the user's own job imports, so the doctor must see it too. Not `-P` either: another interpreter given
    with --python may predate Python 3.11, which added it. The user's interpreter (this one, or --python)
    is kept for the same reason: a venv's frameworks are found from its own pyvenv.cfg, not from the
    environment."""
    return [interpreter, "-c", _PROBE, name]


def _collect(
    procs: dict[str, subprocess.Popen[str]], timeout_s: float, *, nccl_wheel: str | None
) -> tuple[FrameworkFacts, ...]:
    """Wait for every probe under one deadline; a probe that overruns is killed and reported."""
    results: list[FrameworkFacts] = []
    deadline = time.monotonic() + timeout_s
    for name, proc in procs.items():
        try:
            out, err = proc.communicate(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            _stop(proc)
            results.append(
                FrameworkFacts(
                    name,
                    None,
                    error=_(
                        "importing {module} and initialising CUDA took over {seconds} s "
                        "(a hung driver or a very slow import)"
                    ).format(module=FRAMEWORKS[name], seconds=f"{timeout_s:.0f}"),
                )
            )
            continue
        if '"absent": true' in out:
            continue  # not installed in that interpreter
        fact = _framework_from_json(name, out, err, proc.returncode)
        if name == "pytorch" and fact.nccl_version is None and nccl_wheel:
            fact = FrameworkFacts(**{**vars(fact), "nccl_version": nccl_wheel})
        results.append(fact)
    return tuple(results)


def _stop(proc: subprocess.Popen[str]) -> None:
    """Kill a probe and whatever it started, without waiting long: a process stuck in the driver
    (uninterruptible sleep, the hung-driver case this deadline is for) does not die at SIGKILL, and a child
    it started keeps the pipes open; waiting for their end (as `kill(); communicate()` did) hung the doctor
    past --timeout-s. Such a process is left behind, its pipes closed."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    try:
        proc.communicate(timeout=_REAP_S)
    except subprocess.TimeoutExpired:
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()


def _framework_from_json(name: str, out: str, err: str, code: int | None) -> FrameworkFacts:
    last = next((ln for ln in reversed(out.splitlines()) if ln.startswith("{")), None)
    if last is None:
        tail = (err.strip().splitlines() or [f"exit code {code}"])[-1]
        return FrameworkFacts(name, None, error=_("probe printed nothing: {tail}").format(tail=tail[:300]))
    try:
        data = json.loads(last)
    except json.JSONDecodeError:
        return FrameworkFacts(name, None, error=_("probe output was not JSON"))

    def text(key: str) -> str | None:
        value = data.get(key)
        return None if value in (None, "", "None") else str(value)

    arch = data.get("arch_list")
    caps = data.get("device_capabilities") or []
    available = data.get("cuda_available")
    count = data.get("device_count")
    return FrameworkFacts(
        name=name,
        version=text("version"),
        cuda_version=text("cuda_version"),
        cudnn_version=text("cudnn_version"),
        nccl_version=text("nccl_version"),
        arch_list=tuple(str(a) for a in arch) if isinstance(arch, list) and arch else None,
        cuda_available=available if isinstance(available, bool) else None,
        device_count=count if isinstance(count, int) else None,
        device_capabilities=tuple(str(c) for c in caps),
        cuda_error=text("cuda_error"),
        error=text("error"),
    )
