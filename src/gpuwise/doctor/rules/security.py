"""Security rules for a machine on a public IP: Jupyter and other web services open to the network,
sshd accepting passwords or root logins, private SSH keys readable by others.

Must not import anything beyond the standard library and gpuwise's own pure modules.
"""

from __future__ import annotations

from gpuwise.doctor.facts import Facts
from gpuwise.doctor.rules.finding import Finding, ok_finding, tr
from gpuwise.doctor.rules.fixes import FIX
from gpuwise.doctor.tables import Tables
from gpuwise.locale import _


def check_jupyter(facts: Facts, _tables: Tables) -> list[Finding]:
    if facts.services is None:
        return []
    found: list[Finding] = []
    for svc in facts.services:
        if not svc.exposed:
            continue
        evidence = _("{service} listening on {address}:{port}").format(
            service=svc.kind, address=svc.address, port=svc.port
        )
        evidence += f"; {svc.auth_evidence}"
        if svc.kind == "jupyter":
            severity = {False: "error", None: "warn", True: "info"}[svc.auth_required]
            title = {
                "error": _("Jupyter is open to the network WITHOUT a token or password"),
                "warn": _("Jupyter is open to the network (could not tell whether it needs a token)"),
                "info": _("Jupyter is reachable from the network (token-protected)"),
            }[severity]
            found.append(
                Finding(
                    "security.jupyter_exposed",
                    severity,
                    title,
                    evidence,
                    tr(FIX["security.jupyter_exposed"]).format(port=svc.port),
                )
            )
        else:
            found.append(
                Finding(
                    "security.service_exposed",
                    "warn" if svc.kind == "tensorboard" else "info",
                    _("{service} is reachable from the network").format(service=svc.kind)
                    + (_(" (TensorBoard has no authentication)") if svc.kind == "tensorboard" else ""),
                    evidence,
                    tr(FIX["security.service_exposed"]).format(port=svc.port),
                )
            )
    if not any(f.id == "security.jupyter_exposed" for f in found):
        found.append(
            ok_finding(
                "security.jupyter_exposed",
                _("No Jupyter server open to the network"),
                _("{count} listening TCP socket(s) checked").format(count=len(facts.listening or ())),
            )
        )
    return found


def check_sshd(facts: Facts, _tables: Tables) -> list[Finding]:
    sshd = facts.sshd
    if sshd is None:
        return []
    found: list[Finding] = []
    reload = tr(FIX["security.ssh/reload"])
    if sshd.password_authentication == "yes":
        found.append(
            Finding(
                "security.ssh_password_auth",
                "warn",
                _("SSH accepts passwords (brute-force target on a public IP)"),
                f"{sshd.source}: {sshd.password_evidence}",
                tr(FIX["security.ssh_password_auth"]).format(reload=reload),
            )
        )
    else:
        found.append(
            ok_finding(
                "security.ssh_password_auth",
                _("SSH password login is off"),
                f"{sshd.source}: {sshd.password_evidence}",
            )
        )
    if sshd.permit_root_login == "yes":
        found.append(
            Finding(
                "security.ssh_root_login",
                "warn",
                _("SSH allows root to log in with a password"),
                f"{sshd.source}: {sshd.root_evidence}",
                tr(FIX["security.ssh_root_login"]).format(reload=reload),
            )
        )
    return found


def check_keys(facts: Facts, _tables: Tables) -> list[Finding]:
    if facts.ssh_keys is None:
        return []
    loose = [k for k in facts.ssh_keys if k.mode & 0o077]
    if not loose:
        return [
            ok_finding(
                "security.key_permissions",
                _("Private keys are private"),
                _("{count} private key file(s) checked").format(count=len(facts.ssh_keys)),
            )
        ]
    severity = "error" if any(k.mode & 0o004 for k in loose) else "warn"
    return [
        Finding(
            "security.key_permissions",
            severity,
            _("Private SSH keys are readable by other users (and ssh refuses to use them)"),
            "; ".join(_("{path} mode {mode}").format(path=k.path, mode=f"{k.mode:03o}") for k in loose),
            "chmod 600 " + " ".join(k.path for k in loose),
        )
    ]
