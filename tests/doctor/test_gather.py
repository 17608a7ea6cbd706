"""The live gatherers on constructed inputs: a fake /proc and /sys, an sshd config tree, ~/.ssh, a kernel log
that needs root, and framework probes (a stub `torch` module seen by the child interpreter)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import textwrap
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from gpuwise.doctor import framework_probe, gather
from gpuwise.doctor.facts import ListeningSocket

HERE = Path(__file__).resolve().parent
FIXTURES = HERE.parent / "fixtures" / "doctor"


# ------------------------------------------------------------------------------------------ driver / PCI


def _pci(sys_root: Path, name: str, vendor: str, klass: str) -> None:
    device = sys_root / "bus" / "pci" / "devices" / name
    device.mkdir(parents=True)
    (device / "vendor").write_text(vendor + "\n")
    (device / "class").write_text(klass + "\n")


def test_driver_version_and_nvidia_gpus_on_pci(tmp_path: Path) -> None:
    proc, sys_root = tmp_path / "proc", tmp_path / "sys"
    (proc / "driver" / "nvidia").mkdir(parents=True)
    (proc / "driver" / "nvidia" / "version").write_text(
        "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.90.07  Release Build  (dvs-builder)\n"
        "GCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04)\n"
    )
    _pci(sys_root, "0000:17:00.0", "0x10de", "0x030200")  # 3D controller: an H100
    _pci(sys_root, "0000:18:00.0", "0x10de", "0x030000")  # VGA
    _pci(sys_root, "0000:19:00.0", "0x10de", "0x068000")  # NVSwitch: not a GPU
    _pci(sys_root, "0000:00:02.0", "0x8086", "0x030000")  # Intel graphics
    facts, unreadable = gather.gather_driver(proc, sys_root)
    assert facts.kernel_module_version == "550.90.07"
    assert facts.proc_version_line is not None and facts.proc_version_line.startswith("NVRM version")
    assert facts.nvidia_pci_devices == 2
    assert unreadable == []


def test_no_driver_and_no_sysfs(tmp_path: Path) -> None:
    facts, unreadable = gather.gather_driver(tmp_path / "proc", tmp_path / "sys")
    assert facts.kernel_module_version is None
    assert facts.nvidia_pci_devices is None  # unknown, not zero
    assert any("cannot tell whether NVIDIA hardware is present" in line for line in unreadable)


# ------------------------------------------------------------------------------------------ kernel log


def test_kernel_log_xids_from_dmesg(smi_fixtures: Path) -> None:
    text = (smi_fixtures / "kernel-log" / "h100__xid-119-gsp-rpc-timeout.dmesg.log").read_text()

    def run(argv: Sequence[str], timeout_s: float) -> tuple[int, str, str]:
        return (0, text, "") if argv[0] == "dmesg" else (1, "", "unexpected")

    xids, unreadable = gather.gather_kernel_xids(run)
    assert xids is not None and [x.xid for x in xids] == [119] * 5
    assert xids[0].pci_bus == "00000000:9B:00.0"
    assert xids[0].line.startswith("[Sun Feb 23 16:24:18 2025] NVRM: Xid (PCI:0000:9b:00): 119, pid=2024380")
    assert unreadable == []


def test_kernel_log_unreadable_without_root_says_so() -> None:
    def run(argv: Sequence[str], timeout_s: float) -> tuple[int, str, str]:
        if argv[0] == "dmesg":
            return 1, "", "dmesg: read kernel buffer failed: Operation not permitted\n"
        return 0, "-- No entries --\n", ""  # journalctl without access to kernel messages

    xids, unreadable = gather.gather_kernel_xids(run)
    assert xids is None  # not checked, rather than "no Xid errors"
    assert "Operation not permitted" in unreadable[0]
    assert "sudo dmesg" in unreadable[0]


def test_run_command_never_raises() -> None:
    assert gather.run_command(["/nonexistent/program"], 1.0)[0] == 127
    code, _, err = gather.run_command([sys.executable, "-c", "import time; time.sleep(5)"], 0.2)
    assert code == 124 and "timed out" in err


# ------------------------------------------------------------------------------------------ container / space


def test_container_without_gpu_devices(tmp_path: Path) -> None:
    (tmp_path / ".dockerenv").write_text("")
    (tmp_path / "proc" / "1").mkdir(parents=True)
    (tmp_path / "proc" / "1" / "cgroup").write_text("0::/kubepods/besteffort/pod1234/abcd\n")
    (tmp_path / "dev").mkdir()
    facts, _ = gather.gather_container(tmp_path, env={"NVIDIA_VISIBLE_DEVICES": "void"}, which=lambda _: None)
    assert facts.in_container
    assert facts.markers == ("/.dockerenv", "cgroup: kubepods")
    assert facts.nvidia_device_nodes == ()
    assert facts.nvidia_visible_devices == "void"


def test_host_with_gpu_devices(tmp_path: Path) -> None:
    (tmp_path / "dev").mkdir()
    for node in ("nvidia0", "nvidiactl", "nvidia-uvm"):
        (tmp_path / "dev" / node).write_text("")
    (tmp_path / "proc" / "1").mkdir(parents=True)
    (tmp_path / "proc" / "1" / "cgroup").write_text("0::/init.scope\n")
    facts, _ = gather.gather_container(
        tmp_path, env={}, which=lambda p: "/usr/bin/nvidia-ctk" if p == "nvidia-ctk" else None
    )
    assert not facts.in_container
    assert facts.nvidia_device_nodes == ("/dev/nvidia-uvm", "/dev/nvidia0", "/dev/nvidiactl")
    assert facts.toolkit == "/usr/bin/nvidia-ctk"


def test_space(tmp_path: Path) -> None:
    space, unreadable = gather.gather_space(tmp_path, "dataset")
    assert space is not None and 0 < space.free_bytes <= space.total_bytes
    missing, unreadable = gather.gather_space(tmp_path / "absent", "dataset")
    assert missing is None and "absent" in unreadable[0]


# ------------------------------------------------------------------------------------------ sockets


def test_listening_sockets_from_proc_net(tmp_path: Path) -> None:
    (tmp_path / "net").mkdir()
    for name in ("tcp", "tcp6"):
        (tmp_path / "net" / name).write_text((FIXTURES / "proc-net" / name).read_text())
    listening, unreadable = gather.gather_listening(tmp_path)
    assert unreadable == []
    assert listening is not None
    got = {(s.address, s.port, s.loopback_only) for s in listening}
    assert got == {
        ("0.0.0.0", 8888, False),
        ("127.0.0.1", 8080, True),
        ("0.0.0.0", 22, False),
        ("10.0.0.5", 6006, False),
        ("::", 6030, False),
        ("::1", 9412, True),
    }


def test_jupyter_token_asked_on_loopback_only() -> None:
    asked: list[str] = []

    def status(url: str, timeout_s: float) -> int | None:
        asked.append(url)
        return 200

    listening = [
        ListeningSocket("0.0.0.0", 8888, False),
        ListeningSocket("10.0.0.5", 8889, False),  # one address, not loopback: never asked
        ListeningSocket("10.0.0.5", 6006, False),
        ListeningSocket("127.0.0.1", 9000, True),  # not a known service
    ]
    services = gather.gather_services(listening, (), status)
    assert asked == ["http://127.0.0.1:8888/api/status"]
    by_port = {s.port: s for s in services}
    assert by_port[8888].auth_required is False and by_port[8888].exposed
    assert by_port[8889].auth_required is None
    assert by_port[6006].kind == "tensorboard"
    assert 9000 not in by_port


def test_jupyter_token_from_runtime_file_is_never_kept(tmp_path: Path) -> None:
    (tmp_path / "jpserver-4242.json").write_text(
        json.dumps({"port": 8888, "token": "s3cr3t-token", "password": False})
    )
    services = gather.gather_services(
        [ListeningSocket("0.0.0.0", 8888, False)], [tmp_path], lambda _u, _t: None
    )
    assert services[0].auth_required is True
    assert "s3cr3t-token" not in repr(services)


def test_jupyter_403_means_token_required() -> None:
    services = gather.gather_services([ListeningSocket("::", 8888, False)], (), lambda _u, _t: 403)
    assert services[0].auth_required is True


def test_http_status_on_a_closed_port_is_none() -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    assert gather.http_status(f"http://127.0.0.1:{port}/api/status", 0.5) is None


def _serve_once(reply: bytes) -> int:
    """A loopback server that answers one connection with ``reply`` (raw bytes) and closes; its port."""
    import socket
    import threading

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    server.settimeout(5)

    def answer() -> None:
        with server:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                conn.recv(4096)
                conn.sendall(reply)

    threading.Thread(target=answer, daemon=True).start()
    return int(server.getsockname()[1])


@pytest.mark.parametrize("status", [200, 403])
def test_http_status_reads_the_answer_of_a_real_server(status: int) -> None:
    body = b'{"started": "2026-01-01T00:00:00Z"}'
    head = f"HTTP/1.1 {status} X\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    port = _serve_once(head.encode() + body)
    assert gather.http_status(f"http://127.0.0.1:{port}/api/status", 2.0) == status


def test_a_service_that_does_not_speak_http_is_no_answer_not_a_crash() -> None:
    """Something else on a Jupyter port (an SSH banner on 8888) made http.client raise BadStatusLine, which
    is no OSError: the live doctor stopped with a traceback instead of saying it could not ask."""
    port = _serve_once(b"SSH-2.0-OpenSSH_9.6\r\n")
    assert gather.http_status(f"http://127.0.0.1:{port}/api/status", 2.0) is None


# ------------------------------------------------------------------------------------------ sshd / keys


def test_sshd_first_value_wins_with_includes_and_match() -> None:
    facts = gather.parse_sshd_config(FIXTURES / "etc-ssh" / "sshd_config")
    assert facts is not None
    assert facts.password_authentication == "yes"  # the drop-in is read first and wins
    assert "50-cloud-init.conf:1: PasswordAuthentication yes" in facts.password_evidence
    assert facts.permit_root_login == "prohibit-password"  # the Match block's "yes" is not global


def test_sshd_defaults_when_unset(tmp_path: Path) -> None:
    (tmp_path / "sshd_config").write_text("Port 22\n")
    facts = gather.parse_sshd_config(tmp_path / "sshd_config")
    assert facts is not None
    assert facts.password_authentication == "yes"
    assert "default" in facts.password_evidence


def test_no_sshd_is_not_checked(tmp_path: Path) -> None:
    facts, unreadable = gather.gather_sshd(tmp_path, which=lambda _: None)
    assert facts is None and unreadable == []


def test_ssh_key_permissions(tmp_path: Path) -> None:
    ssh = tmp_path / ".ssh"
    ssh.mkdir()
    for name, mode, body in (
        ("id_ed25519", 0o644, "-----BEGIN OPENSSH PRIVATE KEY-----\nxx\n"),
        ("id_rsa", 0o600, "-----BEGIN RSA PRIVATE KEY-----\nxx\n"),
        ("id_ed25519.pub", 0o644, "ssh-ed25519 AAAA user@host\n"),
        ("authorized_keys", 0o644, "ssh-ed25519 AAAA user@host\n"),
        ("notes.txt", 0o644, "hello\n"),
    ):
        (ssh / name).write_text(body)
        (ssh / name).chmod(mode)
    keys, unreadable = gather.gather_ssh_keys(tmp_path)
    assert keys is not None and unreadable == []
    assert {(Path(k.path).name, k.mode) for k in keys} == {("id_ed25519", 0o644), ("id_rsa", 0o600)}


# ------------------------------------------------------------------------------------------ frameworks

_STUB_TORCH = """
__version__ = "2.5.1+cu124"
import time, os
if os.environ.get("STUB_TORCH_HANG"):
    time.sleep(60)

class version:
    cuda = "12.4"

class backends:
    class cudnn:
        @staticmethod
        def version():
            return 90100

class _C:
    @staticmethod
    def _cuda_getArchFlags():
        return "sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90"

class cuda:
    class nccl:
        @staticmethod
        def version():
            return (2, 21, 5)

    @staticmethod
    def is_available():
        import warnings
        warnings.warn("CUDA initialization: The NVIDIA driver on your system is too old (found 11040).")
        return False
"""


@pytest.fixture
def stub_torch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A `torch` module the child interpreter imports instead of a real one (our own probe's interface)."""
    (tmp_path / "torch.py").write_text(textwrap.dedent(_STUB_TORCH))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    return tmp_path


def test_framework_probe_in_a_subprocess(stub_torch: Path) -> None:
    frameworks, unreadable = framework_probe.gather_frameworks(
        sys.executable, 20.0, is_installed=lambda module: module == "torch"
    )
    assert unreadable == []
    (torch,) = frameworks
    assert torch.error is None, torch
    assert (torch.version, torch.cuda_version, torch.cudnn_version, torch.nccl_version) == (
        "2.5.1+cu124",
        "12.4",
        "90100",
        "2.21.5",
    )
    assert torch.arch_list is not None and "sm_90" in torch.arch_list
    assert torch.cuda_available is False
    assert torch.cuda_error is not None and "too old" in torch.cuda_error


def test_hung_framework_cannot_hang_the_doctor(stub_torch: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STUB_TORCH_HANG", "1")
    started = time.monotonic()
    (torch,), _ = framework_probe.gather_frameworks(
        sys.executable, 1.0, is_installed=lambda module: module == "torch"
    )
    assert time.monotonic() - started < 10
    assert torch.error is not None and "took over 1 s" in torch.error


def test_frameworks_not_installed_are_not_probed() -> None:
    frameworks, unreadable = framework_probe.gather_frameworks(None, 5.0, is_installed=lambda _module: False)
    assert frameworks == () and unreadable == []


def test_another_interpreter_reports_only_what_it_has(stub_torch: Path) -> None:
    """With --python every framework is asked; the ones that interpreter lacks are left out, not failures."""
    frameworks, unreadable = framework_probe.gather_frameworks(sys.executable, 20.0)
    assert [f.name for f in frameworks] == ["pytorch"]
    assert unreadable == []


def test_a_torch_py_in_the_working_directory_never_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Red-team finding: `gpuwise doctor` inside a cloned repository (as root) ran the repository's own
    `torch.py`, and a `json.py` would have run before the probe even chose a framework, because
    `python -c` puts the working directory first on sys.path. `PYTHONPATH=.`, common in ML repos, too."""
    import importlib.util

    real_torch = importlib.util.find_spec("torch") is not None  # CI installs it (the hf-test extra)
    repo = tmp_path / "repo"
    repo.mkdir()
    marker = tmp_path / "pwned"
    payload = f"open({str(marker)!r}, 'a').write(__name__ + '\\n')\n"
    for module in ("torch", "json", "warnings", "importlib", "sitecustomize", "usercustomize"):
        (repo / f"{module}.py").write_text(payload)
    monkeypatch.chdir(repo)
    monkeypatch.setenv("PYTHONPATH", ".")
    frameworks, _ = framework_probe.gather_frameworks(
        sys.executable, 20.0, is_installed=lambda module: module == "torch"
    )
    assert not marker.exists(), marker.read_text()
    if real_torch:  # the probe found the real one, not the impostor (which has no version)
        assert [(f.name, f.error) for f in frameworks] == [("pytorch", None)]
        assert frameworks[0].version
    else:  # not installed: the probe says so rather than run the impostor
        assert frameworks == ()


def test_the_users_pythonpath_still_finds_their_framework(stub_torch: Path, tmp_path: Path) -> None:
    """The isolation must not hide a framework the user's job would import (an absolute PYTHONPATH entry,
    a --user install): `python -I` would have reported PyTorch as missing here."""
    frameworks, _ = framework_probe.gather_frameworks(
        sys.executable, 20.0, is_installed=lambda module: module == "torch"
    )
    assert [f.version for f in frameworks] == ["2.5.1+cu124"]


def test_a_relative_python_is_found_from_where_the_user_stands(
    stub_torch: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--python .venv/bin/python` (as --help suggests) must survive the probe's move to an empty folder."""
    venv_bin = tmp_path / "project" / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    (venv_bin / "python").symlink_to(sys.executable)
    monkeypatch.chdir(tmp_path / "project")
    frameworks, unreadable = framework_probe.gather_frameworks(
        ".venv/bin/python", 20.0, is_installed=lambda module: module == "torch"
    )
    assert unreadable == []
    assert [f.version for f in frameworks] == ["2.5.1+cu124"]


@pytest.mark.parametrize("escapes", [False, True])
def test_a_probe_whose_child_holds_the_pipes_cannot_hang_the_doctor(tmp_path: Path, escapes: bool) -> None:
    """--timeout-s holds even when the probe started a process that keeps its output open: one in its
    group is killed with it; one that cannot be killed (here: it left the group; on a GPU machine: stuck in
    the driver) is left behind. `kill(); communicate()` waited for it: the doctor hung 20 s, not 1."""
    pid_file = tmp_path / "grandchild.pid"
    interpreter = tmp_path / "python"
    interpreter.write_text(
        f"#!{sys.executable}\n"
        "import subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(20)'],"
        f" start_new_session={escapes})\n"
        f"open({str(pid_file)!r}, 'w').write(str(child.pid))\n"
        "time.sleep(20)\n"
    )
    interpreter.chmod(0o755)
    started = time.monotonic()
    try:
        (torch,), _ = framework_probe.gather_frameworks(
            str(interpreter), 1.0, is_installed=lambda module: module == "torch"
        )
        assert time.monotonic() - started < 10
        assert torch.error is not None and "took over 1 s" in torch.error
    finally:
        if pid_file.exists():  # the process this test started, by its id
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid_file.read_text()), signal.SIGKILL)


def test_a_hung_filesystem_cannot_hang_the_space_check(tmp_path: Path) -> None:
    """statvfs on a stale network mount blocks until its server returns: the check gives up after its
    timeout and says so (a stub statvfs, blocked on an event this test releases)."""
    import threading

    release = threading.Event()

    def hung(_path: Path) -> os.statvfs_result:
        release.wait(30)
        return os.statvfs(tmp_path)

    started = time.monotonic()
    try:
        space, unreadable = gather.gather_space(tmp_path, "dataset", statvfs=hung, timeout_s=0.2)
    finally:
        release.set()
    assert time.monotonic() - started < 5
    assert space is None and "no answer within" in unreadable[0]
    space, unreadable = gather.gather_space(tmp_path, "dataset", statvfs=os.statvfs, timeout_s=5)
    assert space is not None and unreadable == []
