"""Without torch (the `bench` extra), `gpuwise bench` says how to install it and exits 2; `bench task` and
`compare` do not need it. torch is hidden the way Python itself does for a missing module: an entry of None
in sys.modules makes `import torch` raise ImportError."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HIDE_TORCH = (
    "import sys; sys.modules['torch'] = None; from gpuwise.cli.main import main; sys.exit(main(sys.argv[1:]))"
)


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", HIDE_TORCH, *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
        check=False,
    )


def test_suite_without_torch_says_how_to_install(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    done = _run("bench", "--device", "cpu", "--json", "--out", str(out), "--no-metadata", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "pip install 'gpuwise[bench]'" in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == "" and not out.exists()


def test_task_runs_without_torch(tmp_path: Path) -> None:
    done = _run(
        "bench",
        "task",
        "--units",
        "2",
        "--no-metadata",
        "--json",
        "--",
        sys.executable,
        "-c",
        "pass",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert '"units": 2.0' in done.stdout
