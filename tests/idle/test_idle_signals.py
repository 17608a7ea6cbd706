"""Signal gatherers on injected system data (and a real Jupyter-shaped server on loopback)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from idle_builders import proc
from idle_fakes import serve

from gpuwise.gpu.sample import NOT_SUPPORTED, Sample, Snapshot
from gpuwise.idle.signals import (
    GpuProcessActivity,
    GpuwiseRunJobs,
    JupyterKernels,
    KeepAliveFile,
    Login,
    ProcCounters,
    SshSessions,
    gather_all,
    read_proc_counters,
)

NOW = 1_777_000_000.0
EMPTY = Snapshot(samples=())


def _snap(*pids: int, kind: str = "compute") -> Snapshot:
    return Snapshot((Sample(NOW, 0, processes=tuple(proc(pid, 1000, kind) for pid in pids)),))


def test_gpu_process_cpu_and_io_activity() -> None:
    counters = {4242: ProcCounters(10.0, 1000)}
    g = GpuProcessActivity(cpu_pct=10, io_kib_per_s=64, read=counters.get)
    assert g.gather(NOW, _snap(4242)).state == "quiet"  # first sight: no delta yet
    counters[4242] = ProcCounters(10.0 + 27.0, 1000)  # 27 CPU-s in 30 s = 90 %
    sig = g.gather(NOW + 30, _snap(4242))
    assert sig.state == "active" and "90% CPU" in sig.detail
    counters[4242] = ProcCounters(37.5, 1000 + 30 * 1024 * 1024)  # 1 MiB/s of I/O, little CPU
    sig = g.gather(NOW + 60, _snap(4242))
    assert sig.state == "active" and "KiB/s" in sig.detail
    counters[4242] = ProcCounters(37.6, 1000 + 30 * 1024 * 1024)
    assert g.gather(NOW + 90, _snap(4242)).state == "quiet"


def test_gpu_process_signal_ignores_graphics_and_hidden_pids() -> None:
    g = GpuProcessActivity(read=lambda _pid: None)
    assert g.gather(NOW, _snap(1, kind="graphics")).detail == "no GPU processes"
    sig = g.gather(NOW, _snap(99))
    assert sig.state == "quiet" and "not visible" in sig.detail
    unknown = Snapshot((Sample(NOW, 0, processes=NOT_SUPPORTED),))
    assert g.gather(NOW, unknown).detail == "GPU process list not reported"


def test_read_proc_counters_of_a_real_busy_child() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", "import time\nt=time.time()\nwhile time.time()-t<3: pass"]
    )
    try:
        first = read_proc_counters(os.getpid())
        time.sleep(0.5)
        second = read_proc_counters(os.getpid())
        assert first is not None and second is not None
        assert second.cpu_s > first.cpu_s  # the child's CPU counts for its parent
    finally:
        child.kill()
        child.wait(timeout=10)
    assert read_proc_counters(2**22 + 12345) is None


def test_ssh_sessions_count_from_last_input() -> None:
    logins = [Login("alice", "pts/0", "10.0.0.5"), Login("bob", "tty1", None)]
    atimes = {"pts/0": NOW - 600}
    g = SshSessions(users=lambda: logins, tty_atime=lambda t: atimes[t])
    sig = g.gather(NOW, EMPTY)
    assert sig.state == "quiet" and sig.last_active_s == NOW - 600
    assert sig.detail == "1 SSH session (alice, last input 10 min ago)"
    assert SshSessions(users=lambda: [logins[1]]).gather(NOW, EMPTY).detail == "no SSH sessions"

    def broken(term: str) -> float:
        raise PermissionError(term)

    assert SshSessions(users=lambda: logins, tty_atime=broken).gather(NOW, EMPTY).state == "unknown"


def test_jupyter_kernels_against_a_local_server() -> None:
    kernels: list[dict[str, Any]] = []
    seen_auth: list[str | None] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # noqa: ARG002 - silence the request log
            return

        def do_GET(self) -> None:
            seen_auth.append(self.headers.get("Authorization"))
            body = json.dumps(kernels).encode() if self.path == "/api/kernels" else b"{}"
            self.send_response(200 if self.path == "/api/kernels" else 404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    with serve(Handler) as base:
        g = JupyterKernels(base, token="s3cret", timeout_s=2)
        assert g.gather(NOW, EMPTY).detail == "no Jupyter kernels"
        kernels.append(
            {"id": "k1", "execution_state": "idle", "last_activity": "2026-05-04T21:00:00.000000Z"}
        )
        sig = g.gather(NOW, EMPTY)
        assert sig.state == "quiet" and sig.last_active_s is not None
        kernels.append({"id": "k2", "execution_state": "busy", "last_activity": "2026-05-04T21:30:00Z"})
        assert g.gather(NOW, EMPTY).state == "active"
    assert seen_auth[0] == "token s3cret"
    dead = JupyterKernels("http://127.0.0.1:9", timeout_s=0.5).gather(NOW, EMPTY)
    assert dead.state == "unknown"


def test_gpuwise_run_pid_files(tmp_path: Path) -> None:
    g = GpuwiseRunJobs(tmp_path / "run")
    assert g.gather(NOW, EMPTY).state == "quiet"
    (tmp_path / "run").mkdir()
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True
    )
    (tmp_path / "run" / "old.pid").write_text(done.stdout, encoding="utf-8")
    assert g.gather(NOW, EMPTY).state == "quiet"  # a stale pid file
    (tmp_path / "run" / "job-7.pid").write_text(f"{os.getpid()}\n", encoding="utf-8")
    sig = g.gather(NOW, EMPTY)
    assert sig.state == "active" and "job-7" in sig.detail
    (tmp_path / "run" / "job-7.pid").unlink()
    (tmp_path / "run" / f"job-8@{os.getpid()}.pid").write_text(f"{os.getpid()}\n", encoding="utf-8")
    sig = g.gather(NOW, EMPTY)  # today's name: the run id, then gpuwise's pid; the job is named by its id
    assert sig.state == "active" and f"job-8 (pid {os.getpid()})" in sig.detail and "@" not in sig.detail
    (tmp_path / "run" / "bad.pid").write_text("garbage", encoding="utf-8")
    assert g.gather(NOW, EMPTY).state == "unknown"


def test_keepalive_mtime(tmp_path: Path) -> None:
    path = tmp_path / "keepalive"
    g = KeepAliveFile(path)
    assert g.gather(NOW, EMPTY).last_active_s is None
    path.touch()
    os.utime(path, (NOW - 120, NOW - 120))
    sig = g.gather(NOW, EMPTY)
    assert sig.last_active_s == NOW - 120 and "2 min ago" in sig.detail


def test_a_raising_gatherer_is_unknown_not_fatal() -> None:
    class Broken:
        name = "broken"

        def gather(self, now: float, snapshot: Snapshot) -> Any:  # noqa: ARG002 - the Gatherer protocol
            raise RuntimeError("boom")

    (sig,) = gather_all([Broken()], NOW, EMPTY)
    assert sig.state == "unknown" and "boom" in sig.detail
