"""Live fact gatherers: the doctor's edge. Each reads one thing, never needs root, never hangs, and says
what it could not read instead of failing.

Every gatherer takes its roots and paths as arguments (a fake /proc or /etc in tests) and returns facts plus
a list of "what could not be read" lines. Here: files under /proc, /sys, /etc and ~/.ssh (driver, PCI bus,
container markers, free space, listening sockets, sshd config, key permissions), the short programs behind
them (dmesg/journalctl, sshd -T; always with a timeout) and a loopback HTTP question to Jupyter. The
frameworks (torch, tensorflow, jax) are probed in child processes by `framework_probe`.
Must not import pynvml, torch or any framework.
"""

from __future__ import annotations

import glob
import ipaddress
import json
import os
import platform
import re
import shutil
import stat
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from gpuwise import httpclient
from gpuwise.doctor.facts import (
    ContainerFacts,
    DriverFacts,
    KeyFileFact,
    ListeningSocket,
    SpaceFacts,
    SshdFacts,
    WebService,
    XidFact,
)
from gpuwise.locale import _

Unreadable = list[str]

# ----------------------------------------------------------------------------------------------- driver

_MODULE_VERSION = re.compile(r"Kernel Module(?:\s+for\s+\S+)?\s+(\d+(?:\.\d+)+)")
_NVIDIA_VENDOR = "0x10de"


def gather_driver(
    proc_root: Path = Path("/proc"), sys_root: Path = Path("/sys")
) -> tuple[DriverFacts, Unreadable]:
    """The loaded kernel module (/proc/driver/nvidia/version) and NVIDIA GPUs on the PCI bus (sysfs)."""
    unreadable: Unreadable = []
    line: str | None = None
    version: str | None = None
    path = proc_root / "driver" / "nvidia" / "version"
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
        line = next((ln.strip() for ln in text.splitlines() if ln.strip()), None)
        match = _MODULE_VERSION.search(text)
        version = match.group(1) if match else None
    except FileNotFoundError:
        pass  # no module loaded: a fact, not a failure to read
    except OSError as exc:
        unreadable.append(f"{path}: {exc.strerror}")

    pci: int | None = None
    devices = sys_root / "bus" / "pci" / "devices"
    try:
        count = 0
        for device in devices.iterdir():
            try:
                vendor = (device / "vendor").read_text().strip().lower()
                klass = (device / "class").read_text().strip().lower()
            except OSError:
                continue
            # 0x0300xx VGA, 0x0302xx 3D controller; NVSwitches (0x0680xx) are not GPUs.
            if vendor == _NVIDIA_VENDOR and klass.startswith(("0x0300", "0x0302")):
                count += 1
        pci = count
    except OSError as exc:
        unreadable.append(
            f"{devices}: {exc.strerror or exc} " + _("(cannot tell whether NVIDIA hardware is present)")
        )
    return DriverFacts(
        proc_version_line=line, kernel_module_version=version, nvidia_pci_devices=pci
    ), unreadable


# ----------------------------------------------------------------------------------------------- kernel log

Runner = Callable[[Sequence[str], float], tuple[int, str, str]]


def run_command(argv: Sequence[str], timeout_s: float) -> tuple[int, str, str]:
    """Run a program with a timeout: (exit code, stdout, stderr). A missing program or a timeout is an
    exit code of 127 or 124 with the reason in stderr, never an exception."""
    try:
        done = subprocess.run(
            list(argv),
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
            stdin=subprocess.DEVNULL,
            errors="replace",
        )
    except FileNotFoundError:
        return 127, "", f"{argv[0]}: not installed"
    except subprocess.TimeoutExpired:
        return 124, "", f"{argv[0]}: timed out after {timeout_s:.0f} s"
    except OSError as exc:
        return 126, "", f"{argv[0]}: {exc.strerror}"
    return done.returncode, done.stdout, done.stderr


def parse_xid_lines(text: str) -> tuple[XidFact, ...]:
    """`NVRM: Xid (PCI:0000:9b:00): 119, pid=…, name=…, message` lines of a kernel log (parsed by
    gpuwise.gpu.kernel_log, so live and replayed logs read alike), each with its line as evidence."""
    from gpuwise.gpu.kernel_log import parse_xid_events

    return tuple(XidFact(e.xid, e.pci_bus_id, e.message, e.line) for e in parse_xid_events(text))


def gather_kernel_xids(
    run: Runner = run_command, timeout_s: float = 3.0
) -> tuple[tuple[XidFact, ...] | None, Unreadable]:
    """Xid lines from `dmesg`, else the kernel journal; None (and why) when neither is readable."""
    why: Unreadable = []
    for argv in (["dmesg"], ["journalctl", "-k", "-b", "--no-pager", "-q", "-o", "short"]):
        code, out, err = run(argv, timeout_s)
        # journalctl without access to the kernel's messages exits 0 with nothing (or "-- No entries --").
        if code == 0 and any(line.strip() and not line.startswith("-- ") for line in out.splitlines()):
            return parse_xid_lines(out), []
        reason = (err.strip().splitlines() or [f"exit {code}" if code else _("no output")])[-1]
        why.append(f"{argv[0]}: {reason}")
    return None, [_("kernel log (Xid errors): {why} (try: sudo dmesg | grep Xid)").format(why="; ".join(why))]


# ----------------------------------------------------------------------------------------------- container

_CGROUP_MARKERS = ("docker", "kubepods", "containerd", "libpod", "lxc", "crio")


def gather_container(
    root: Path = Path("/"),
    env: Mapping[str, str] | None = None,
    which: Callable[[str], str | None] = shutil.which,
) -> tuple[ContainerFacts, Unreadable]:
    environ = os.environ if env is None else env
    markers: list[str] = []
    unreadable: Unreadable = []
    for marker in (".dockerenv", "run/.containerenv"):
        if (root / marker).exists():
            markers.append("/" + marker)
    cgroup = root / "proc" / "1" / "cgroup"
    try:
        text = cgroup.read_text(encoding="utf-8", errors="replace")
        found = sorted({m for m in _CGROUP_MARKERS if m in text})
        markers.extend(f"cgroup: {m}" for m in found)
    except OSError as exc:
        unreadable.append(f"{cgroup}: {exc.strerror}")
    if environ.get("KUBERNETES_SERVICE_HOST"):
        markers.append("KUBERNETES_SERVICE_HOST set")
    if environ.get("container"):
        markers.append(f"container={environ['container']}")
    nodes = tuple(sorted("/" + str(p.relative_to(root)) for p in (root / "dev").glob("nvidia*")))
    toolkit = next((path for prog in ("nvidia-container-cli", "nvidia-ctk") if (path := which(prog))), None)
    if toolkit is None and (root / "etc" / "nvidia-container-runtime" / "config.toml").exists():
        toolkit = "/etc/nvidia-container-runtime/config.toml"
    return (
        ContainerFacts(
            in_container=bool(markers),
            markers=tuple(markers),
            nvidia_device_nodes=nodes,
            nvidia_visible_devices=environ.get("NVIDIA_VISIBLE_DEVICES"),
            toolkit=toolkit,
        ),
        unreadable,
    )


# ----------------------------------------------------------------------------------------------- space


def gather_space(
    path: Path,
    role: str,
    *,
    statvfs: Callable[[Path], os.statvfs_result] = os.statvfs,
    timeout_s: float = 5.0,
) -> tuple[SpaceFacts | None, Unreadable]:
    """Free space, given up on after ``timeout_s``: statvfs on a network filesystem whose server is gone
    (a stale NFS mount of a dataset) blocks until the server comes back, and the doctor with it."""
    done, st = within(timeout_s, lambda: statvfs(path))
    if not done:
        return None, [f"{role} {path}: no answer within {timeout_s:.0f} s (a hung network filesystem?)"]
    if not isinstance(st, os.statvfs_result):
        return None, [f"{role} {path}: {st}"]
    return SpaceFacts(str(path), role, st.f_frsize * st.f_blocks, st.f_frsize * st.f_bavail), []


def within(timeout_s: float, call: Callable[[], object]) -> tuple[bool, object]:
    """(True, what ``call`` returned, or the strerror of the OSError it raised), or (False, None) when it
    did not return within ``timeout_s`` (it is left running in a daemon thread: a call blocked in the
    kernel cannot be interrupted)."""
    box: dict[str, object] = {}

    def work() -> None:
        try:
            box["value"] = call()
        except OSError as exc:
            box["value"] = exc.strerror or str(exc)

    thread = threading.Thread(target=work, name="gpuwise-doctor-bounded", daemon=True)
    thread.start()
    thread.join(timeout_s)
    return ("value" in box), box.get("value")


# ----------------------------------------------------------------------------------------------- sockets

_LISTEN = "0A"


def _decode_address(hex_addr: str) -> str:
    raw = bytes.fromhex(hex_addr)
    # /proc/net/tcp{,6} prints each 32-bit word in host (little-endian) byte order.
    fixed = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    return str(ipaddress.ip_address(fixed))


def _is_loopback(address: str) -> bool:
    ip = ipaddress.ip_address(address)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped.is_loopback
    return ip.is_loopback


def parse_proc_net_tcp(text: str) -> list[ListeningSocket]:
    """LISTEN sockets of one /proc/net/tcp or tcp6 table."""
    out = []
    for line in text.splitlines()[1:]:
        fields = line.split()
        if len(fields) < 4 or fields[3] != _LISTEN:
            continue
        try:
            addr_hex, port_hex = fields[1].split(":")
            address = _decode_address(addr_hex)
            port = int(port_hex, 16)
        except ValueError:
            continue
        out.append(ListeningSocket(address, port, _is_loopback(address)))
    return out


def gather_listening(
    proc_root: Path = Path("/proc"),
) -> tuple[tuple[ListeningSocket, ...] | None, Unreadable]:
    sockets: dict[tuple[str, int], ListeningSocket] = {}
    unreadable: Unreadable = []
    read_any = False
    for name in ("tcp", "tcp6"):
        path = proc_root / "net" / name
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            continue  # no IPv6
        except OSError as exc:
            unreadable.append(f"{path}: {exc.strerror}")
            continue
        read_any = True
        for sock in parse_proc_net_tcp(text):
            sockets[(sock.address, sock.port)] = sock
    if not read_any:
        return None, unreadable or [
            _("{path}: not found (listening sockets not checked)").format(path=f"{proc_root}/net/tcp")
        ]
    return tuple(sorted(sockets.values(), key=lambda s: (s.port, s.address))), unreadable


def service_kind(port: int) -> str | None:
    """Well-known ports of the web services people start on GPU machines."""
    if 8888 <= port <= 8899:
        return "jupyter"
    if 6006 <= port <= 6010:
        return "tensorboard"
    return {
        9400: "exporter (dcgm-exporter)",
        9100: "exporter (node-exporter)",
        8265: "ray-dashboard",
        7860: "gradio",
        8501: "streamlit",
    }.get(port)


HttpStatus = Callable[[str, float], int | None]


def http_status(url: str, timeout_s: float) -> int | None:
    """The HTTP status of a GET (None when nothing answers, or what answers does not speak HTTP). Used only
    on loopback URLs. One try through gpuwise.httpclient, ``timeout_s`` for the whole request."""
    try:
        return httpclient.request("GET", url, timeout_s=timeout_s, user_agent="gpuwise-doctor").status
    except httpclient.HttpError:
        return None


def _jupyter_runtime_auth(runtime_dirs: Sequence[Path], port: int) -> tuple[bool | None, str]:
    """Whether a Jupyter server on ``port`` needs a token, from its runtime file (the token is never kept)."""
    for directory in runtime_dirs:
        for path in sorted(directory.glob("*server-*.json")):
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if not isinstance(data, dict) or data.get("port") != port:
                continue
            if data.get("token") or data.get("password"):
                return True, _("runtime file {name}: token or password set").format(name=path.name)
            return False, _("runtime file {name}: empty token and no password").format(name=path.name)
    return None, ""


def gather_services(
    listening: Sequence[ListeningSocket],
    runtime_dirs: Sequence[Path] = (),
    status: HttpStatus = http_status,
    timeout_s: float = 1.0,
) -> tuple[WebService, ...]:
    """Known services among the listening sockets, and whether Jupyter asks for a token.

    Jupyter's `/api/status` answers 403 without a token when one is required and 200 when not. It is asked
    on 127.0.0.1 only, and only when the server listens on a wildcard or loopback address.
    """
    by_port: dict[int, list[ListeningSocket]] = {}
    for sock in listening:
        if service_kind(sock.port):
            by_port.setdefault(sock.port, []).append(sock)
    services = []
    for port, socks in sorted(by_port.items()):
        kind = service_kind(port) or ""
        exposed_socks = [s for s in socks if not s.loopback_only]
        shown = exposed_socks[0] if exposed_socks else socks[0]
        auth: bool | None = None
        evidence = ""
        if kind == "jupyter":
            auth, evidence = _jupyter_runtime_auth(runtime_dirs, port)
            reachable = any(s.loopback_only or s.address in ("0.0.0.0", "::") for s in socks)
            if auth is None and reachable:
                code = status(f"http://127.0.0.1:{port}/api/status", timeout_s)
                if code in (401, 403):
                    auth, evidence = (
                        True,
                        f"GET http://127.0.0.1:{port}/api/status -> {code} (token required)",
                    )
                elif code == 200:
                    auth, evidence = (
                        False,
                        _("GET http://127.0.0.1:{port}/api/status -> 200 without a token").format(port=port),
                    )
                elif code is not None:
                    evidence = f"GET http://127.0.0.1:{port}/api/status -> {code}"
            if not evidence:
                evidence = _("could not ask the server whether it needs a token")
        else:
            evidence = _("identified by its port number")
        services.append(WebService(kind, shown.address, port, bool(exposed_socks), auth, evidence))
    return tuple(services)


# ----------------------------------------------------------------------------------------------- sshd


def _sshd_lines(path: Path, etc_ssh: Path, seen: set[Path], depth: int = 0) -> list[tuple[str, str, str]]:
    """(keyword, value, "file:line: text") of an sshd config's global part, Includes expanded in place."""
    if depth > 8 or path in seen:
        return []
    seen.add(path)
    out: list[tuple[str, str, str]] = []
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return out
    for number, raw in enumerate(lines, 1):
        text = raw.strip()
        if not text or text.startswith("#"):
            continue
        parts = re.split(r"[\s=]+", text, maxsplit=1)
        keyword = parts[0].lower()
        value = parts[1].strip() if len(parts) > 1 else ""
        if keyword == "match":
            out.append(("match", value, f"{path}:{number}: {text}"))
            break  # settings after Match apply to some connections only; the global part ends here
        if keyword == "include":
            for pattern in value.split():
                full = pattern if pattern.startswith("/") else str(etc_ssh / pattern)
                for included in sorted(glob.glob(full)):  # noqa: PTH207 - an absolute pattern from the file
                    nested = _sshd_lines(Path(included), etc_ssh, seen, depth + 1)
                    if any(k == "match" for k, _, _ in nested):
                        out.extend(x for x in nested if x[0] != "match")
                    else:
                        out.extend(nested)
            continue
        out.append((keyword, value.split()[0].lower() if value else "", f"{path}:{number}: {text}"))
    return out


def parse_sshd_config(config: Path) -> SshdFacts | None:
    """Effective PasswordAuthentication / PermitRootLogin of an sshd config tree (first value wins, as sshd
    reads it). None when the file does not exist."""
    if not config.exists():
        return None
    lines = _sshd_lines(config, config.parent, set())
    values: dict[str, tuple[str, str]] = {}
    for keyword, value, where in lines:
        values.setdefault(keyword, (value, where))
    password = values.get("passwordauthentication", ("yes", _("not set: OpenSSH's default is yes")))
    root = values.get(
        "permitrootlogin", ("prohibit-password", _("not set: OpenSSH's default is prohibit-password"))
    )
    return SshdFacts(str(config), password[0], root[0], password[1], root[1])


def gather_sshd(
    etc_ssh: Path = Path("/etc/ssh"),
    run: Runner = run_command,
    which: Callable[[str], str | None] = shutil.which,
    listening: Sequence[ListeningSocket] | None = None,
) -> tuple[SshdFacts | None, Unreadable]:
    """`sshd -T` when it runs (it usually needs root), else the config files."""
    listens = None if listening is None else any(s.port == 22 and not s.loopback_only for s in listening)
    sshd = which("sshd") or (
        str(p) if (p := Path("/usr/sbin/sshd")).exists() and etc_ssh == Path("/etc/ssh") else None
    )
    if sshd is not None and etc_ssh == Path("/etc/ssh"):
        code, out, _ = run([sshd, "-T"], 3.0)
        if code == 0 and out:
            effective = {
                parts[0].lower(): parts[1].lower()
                for line in out.splitlines()
                if len(parts := line.split(None, 1)) == 2
            }
            if "passwordauthentication" in effective:
                pw = effective["passwordauthentication"]
                root = effective.get("permitrootlogin", "prohibit-password")
                return SshdFacts(
                    "sshd -T", pw, root, f"passwordauthentication {pw}", f"permitrootlogin {root}", listens
                ), []
    config = etc_ssh / "sshd_config"
    try:
        facts = parse_sshd_config(config)
    except OSError as exc:
        return None, [f"{config}: {exc.strerror}"]
    if facts is None:
        return None, []  # no SSH server installed: nothing to check
    return SshdFacts(**{**vars(facts), "listening": listens}), []


# ----------------------------------------------------------------------------------------------- ssh keys

_SKIP_KEYS = {
    "known_hosts",
    "known_hosts.old",
    "authorized_keys",
    "authorized_keys2",
    "config",
    "environment",
}


def gather_ssh_keys(home: Path) -> tuple[tuple[KeyFileFact, ...] | None, Unreadable]:
    """Private key files under ~/.ssh with their permission bits (the key text itself is never kept)."""
    ssh = home / ".ssh"
    if not ssh.is_dir():
        return (), []
    keys: list[KeyFileFact] = []
    try:
        entries = sorted(ssh.iterdir())
    except OSError as exc:
        return None, [f"{ssh}: {exc.strerror}"]
    for path in entries:
        if path.name in _SKIP_KEYS or path.suffix == ".pub":
            continue
        try:
            st = path.lstat()
            if not stat.S_ISREG(st.st_mode):
                continue
            with path.open("rb") as handle:
                head = handle.read(128)
        except OSError:
            continue
        if b"PRIVATE KEY-----" in head:
            keys.append(KeyFileFact(str(path), stat.S_IMODE(st.st_mode)))
    return tuple(keys), []


# ----------------------------------------------------------------------------------------------- system


def gather_system(etc: Path = Path("/etc")) -> dict[str, str]:
    info = {"kernel": platform.release(), "machine": platform.machine(), "python": platform.python_version()}
    try:
        for line in (etc / "os-release").read_text(encoding="utf-8").splitlines():
            if line.startswith("PRETTY_NAME="):
                info["os"] = line.split("=", 1)[1].strip().strip('"')
    except OSError:
        info["os"] = platform.system()
    return info


def in_parallel(tasks: Mapping[str, Callable[[], object]], workers: int = 8) -> dict[str, object]:
    """Run independent gatherers at once (each bounds its own time)."""
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = {name: pool.submit(task) for name, task in tasks.items()}
        return {name: future.result() for name, future in futures.items()}
