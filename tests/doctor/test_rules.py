"""Every finding id: a rule raises it from constructed facts, and the healthy machine does not raise it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest
from doctor_facts import HEALTHY_TORCH, healthy_facts, healthy_sample, healthy_snapshot
from npu_facts import NPU_BREAKERS

from gpuwise.doctor.facts import (
    DriverFacts,
    Facts,
    FrameworkFacts,
    GpuFacts,
    KeyFileFact,
    ParseProblem,
    SpaceFacts,
    WebService,
    XidFact,
)
from gpuwise.doctor.rules import FINDING_IDS, diagnose, verdict
from gpuwise.doctor.rules.driver import classify_error
from gpuwise.doctor.rules.finding import Finding
from gpuwise.doctor.rules.frameworks import arch_supported
from gpuwise.doctor.tables import Tables, load_tables
from gpuwise.gpu.sample import Failed, Snapshot
from gpuwise.units import MIB

CONTRACT_IDS = (
    "driver.missing",
    "driver.library_mismatch",
    "driver.nvml_error",
    "gpu.none_found",
    "gpu.lost",
    "gpu.throttle",
    "gpu.ecc_uncorrectable",
    "gpu.remap_pending",
    "gpu.xid",
    "gpu.pcie_degraded",
    "gpu.persistence_off",
    "gpu.fan_failure",
    "cuda.driver_too_old",
    "torch.arch_unsupported",
    "container.no_gpu_access",
    "system.shm_small",
    "security.jupyter_exposed",
    "security.ssh_password_auth",
    "security.key_permissions",
)


@pytest.fixture(scope="module")
def tables() -> Tables:
    return load_tables()


def _gpus(*samples: object, **snap: object) -> GpuFacts:
    return GpuFacts("nvml", (healthy_snapshot(samples=tuple(samples), **snap),))


def _one_gpu(**changes: object) -> Callable[[Facts], Facts]:
    return lambda f: replace(f, gpus=_gpus(healthy_sample(0, **changes), healthy_sample(1)))


def _smi_error(text: str) -> Callable[[Facts], Facts]:
    return lambda f: replace(f, gpus=GpuFacts("nvidia-smi", (Snapshot(samples=(), errors=(text,)),)))


def _torch(**changes: object) -> Callable[[Facts], Facts]:
    return lambda f: replace(f, frameworks=(replace(HEALTHY_TORCH, **changes),))


# id -> (how to break the healthy machine, the severity expected, a fragment the evidence must contain)
BREAKERS: dict[str, tuple[Callable[[Facts], Facts], str, str]] = {
    "driver.missing": (
        _smi_error(
            "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
            "Make sure that the "
            "latest NVIDIA driver is installed and running."
        ),
        "error",
        "couldn't communicate",
    ),
    "driver.library_mismatch": (
        _smi_error("Failed to initialize NVML: Driver/library version mismatch"),
        "error",
        "version mismatch",
    ),
    "driver.nvml_error": (_smi_error("Failed to initialize NVML: Unknown Error"), "error", "Unknown Error"),
    "gpu.none_found": (_smi_error("No devices were found"), "error", "No devices"),
    "gpu.lost": (
        _smi_error("Unable to determine the device handle for GPU 0000:0B:00.0: Unknown Error"),
        "error",
        "0000:0B:00.0",
    ),
    "gpu.throttle": (
        _one_gpu(throttle_reasons=("sw_power_cap", "sw_thermal_slowdown")),
        "warn",
        "SW thermal",
    ),
    "gpu.ecc_uncorrectable": (_one_gpu(ecc_uncorrected_volatile=3), "error", "3 uncorrectable"),
    "gpu.remap_pending": (
        _one_gpu(remapped_rows_uncorrectable=4, remapped_rows_pending=True),
        "error",
        "4 row(s)",
    ),
    "gpu.xid": (
        lambda f: replace(
            f,
            xids=(
                XidFact(
                    79,
                    "0000:9b:00",
                    "GPU has fallen off the bus.",
                    "NVRM: Xid (PCI:0000:9b:00): 79, pid=1, GPU has fallen off the bus.",
                ),
            ),
        ),
        "error",
        "Xid (PCI:0000:9b:00): 79",
    ),
    "gpu.pcie_degraded": (_one_gpu(pcie_width_current=8), "warn", "x8 of x16"),
    "gpu.persistence_off": (_one_gpu(persistence_mode=False), "info", "persistence mode Disabled"),
    "gpu.fan_failure": (_one_gpu(fan_speed_pct=Failed("ERR!")), "warn", "ERR!"),
    "cuda.driver_too_old": (
        lambda f: replace(f, gpus=_gpus(healthy_sample(0), driver_version="470.82.01")),
        "error",
        "470.82.01",
    ),
    "torch.arch_unsupported": (
        lambda f: replace(
            f,
            frameworks=(replace(HEALTHY_TORCH, device_capabilities=("10.0",)),),
            gpus=_gpus(healthy_sample(0, name="NVIDIA B200", compute_capability="10.0")),
        ),
        "error",
        "compute capability 10.0",
    ),
    "container.no_gpu_access": (
        lambda f: replace(f, container=replace(f.container, nvidia_device_nodes=())),  # type: ignore[arg-type]
        "error",
        "no /dev/nvidia*",
    ),
    "system.shm_small": (
        lambda f: replace(f, shm=SpaceFacts("/dev/shm", "shm", 64 * MIB, 64 * MIB)),
        "warn",
        "64.0 MiB",
    ),
    "security.jupyter_exposed": (
        lambda f: replace(
            f,
            services=(
                WebService(
                    "jupyter",
                    "0.0.0.0",
                    8888,
                    True,
                    False,
                    "GET http://127.0.0.1:8888/api/status -> 200 without a token",
                ),
            ),
        ),
        "error",
        "0.0.0.0:8888",
    ),
    "security.ssh_password_auth": (
        lambda f: replace(
            f,
            sshd=replace(
                f.sshd,
                password_authentication="yes",  # type: ignore[arg-type]
                password_evidence="sshd_config:58: PasswordAuthentication yes",
            ),
        ),
        "warn",
        "PasswordAuthentication yes",
    ),
    "security.key_permissions": (
        lambda f: replace(f, ssh_keys=(KeyFileFact("/home/u/.ssh/id_rsa", 0o644),)),
        "error",
        "/home/u/.ssh/id_rsa mode 644",
    ),
    "replay.unparsed": (
        lambda f: replace(
            f, replay_path="x.txt", problems=(ParseProblem("x.txt", "line 40: ends mid-section"),)
        ),
        "warn",
        "ends mid-section",
    ),
    "torch.cpu_only": (_torch(cuda_version=None, arch_list=None), "error", "torch.version.cuda is None"),
    "torch.cuda_unavailable": (
        _torch(cuda_available=False, cuda_error="CUDA initialization: driver too old"),
        "error",
        "driver too old",
    ),
    "framework.probe_failed": (_torch(error="importing torch took over 20 s"), "warn", "over 20 s"),
    "system.disk_low": (
        lambda f: replace(f, disks=(SpaceFacts("/data", "dataset", 1000 * 2**30, 2 * 2**30),)),
        "warn",
        "/data",
    ),
    "security.service_exposed": (
        lambda f: replace(f, services=(WebService("tensorboard", "0.0.0.0", 6006, True, None, "by port"),)),
        "warn",
        "0.0.0.0:6006",
    ),
    "security.ssh_root_login": (
        lambda f: replace(
            f,
            sshd=replace(
                f.sshd,
                permit_root_login="yes",  # type: ignore[arg-type]
                root_evidence="sshd_config:3: PermitRootLogin yes",
            ),
        ),
        "warn",
        "PermitRootLogin yes",
    ),
}

BREAKERS.update(NPU_BREAKERS)  # Huawei Ascend (npu-smi): tests/doctor/npu_facts.py


def _raised(findings: list[Finding], rule_id: str) -> list[Finding]:
    return [f for f in findings if f.id == rule_id and f.severity != "ok"]


def test_every_contract_id_is_known() -> None:
    assert set(CONTRACT_IDS) <= set(FINDING_IDS)
    assert set(BREAKERS) == set(FINDING_IDS), "every id needs a test that raises it"


def test_healthy_machine_raises_nothing(tables: Tables) -> None:
    findings = diagnose(healthy_facts(), tables)
    assert [f for f in findings if f.severity != "ok"] == []
    assert verdict(findings) == "OK"


@pytest.mark.parametrize("rule_id", sorted(BREAKERS))
def test_rule_raises_and_healthy_does_not(rule_id: str, tables: Tables) -> None:
    """Raised from the broken facts, with the exact evidence and a fix; absent from the healthy facts."""
    breaker, severity, evidence = BREAKERS[rule_id]
    assert _raised(diagnose(healthy_facts(), tables), rule_id) == []
    found = _raised(diagnose(breaker(healthy_facts()), tables), rule_id)
    assert found, f"{rule_id} not raised"
    assert found[0].severity == severity
    assert evidence in found[0].evidence
    assert found[0].fix
    assert found[0].title


def test_ok_findings_only_for_checks_that_ran(tables: Tables) -> None:
    ok_ids = {f.id for f in diagnose(healthy_facts(), tables) if f.severity == "ok"}
    assert {
        "driver.missing",
        "gpu.throttle",
        "cuda.driver_too_old",
        "torch.arch_unsupported",
        "system.shm_small",
        "security.ssh_password_auth",
        "security.key_permissions",
    } <= ok_ids
    assert diagnose(Facts(), tables) == []  # nothing gathered: nothing claimed


def test_no_driver_and_no_nvidia_hardware_is_none_found(tables: Tables) -> None:
    """A machine without an NVIDIA device on the PCI bus: installing a driver would not help."""
    facts = Facts(
        gpus=GpuFacts("none", (), errors=("NVML Shared Library Not Found",)),
        driver=DriverFacts(None, None, 0),
    )
    ids = {f.id for f in diagnose(facts, tables) if f.severity == "error"}
    assert ids == {"gpu.none_found"}


def test_no_driver_with_nvidia_hardware_is_driver_missing(tables: Tables) -> None:
    facts = Facts(
        gpus=GpuFacts("none", (), errors=("NVML Shared Library Not Found",)),
        driver=DriverFacts(None, None, 4),
    )
    found = [f for f in diagnose(facts, tables) if f.severity == "error"]
    assert [f.id for f in found] == ["driver.missing"]
    assert "4 NVIDIA device(s)" in found[0].evidence
    # the install script gpuwise prints is the first way offered, not only Ubuntu's own packages
    assert "gpuwise setup --gpu <your GPU, e.g. H100> > setup.sh" in found[0].fix


def test_kernel_module_newer_than_library_is_mismatch(tables: Tables) -> None:
    facts = replace(
        healthy_facts(), driver=DriverFacts("NVRM version: … 550.90.07", "550.90.07", 2, "550.54.15")
    )
    found = _raised(diagnose(facts, tables), "driver.library_mismatch")
    assert "550.54.15" in found[0].evidence


def test_cuda_minor_version_compatibility_is_info(tables: Tables) -> None:
    """Driver 535 runs CUDA 12.4 builds through minor-version compatibility (>= 525.60.13), below 550."""
    facts = replace(healthy_facts(), gpus=_gpus(healthy_sample(0), driver_version="535.183.01"))
    found = _raised(diagnose(facts, tables), "cuda.driver_too_old")
    assert [f.severity for f in found] == ["info"]
    assert "550.54.14" in found[0].evidence


def test_driver_too_old_suggests_a_build_it_can_run(tables: Tables) -> None:
    facts = replace(healthy_facts(), gpus=_gpus(healthy_sample(0), driver_version="470.82.01"))
    fix = _raised(diagnose(facts, tables), "cuda.driver_too_old")[0].fix
    assert "download.pytorch.org/whl/cu11" in fix  # driver 470 runs CUDA 11.x builds, not 12.x


@pytest.mark.parametrize(
    ("capability", "package"), [("9.0", "-server "), ("10.0", "-server-open "), ("12.0", "-server-open ")]
)
def test_the_driver_package_named_runs_the_gpu(tables: Tables, capability: str, package: str) -> None:
    """Blackwell runs only on the open kernel modules: the upgrade must name Ubuntu's -open package, or it
    installs a driver that cannot drive the GPU (it named nvidia-driver-580-server for a B200 too)."""
    gpu = healthy_sample(0, compute_capability=capability)
    torch = replace(HEALTHY_TORCH, cuda_version="12.8", device_capabilities=(capability,))
    facts = replace(healthy_facts(), frameworks=(torch,), gpus=_gpus(gpu, driver_version="470.82.01"))
    fix = _raised(diagnose(facts, tables), "cuda.driver_too_old")[0].fix
    assert f"sudo apt install nvidia-driver-570{package}" in fix.replace(",", " ")


@pytest.mark.parametrize(
    ("visible", "hides"),
    [
        ("", True),
        ("-1", True),
        ("5", True),
        ("none", True),
        ("1", False),
        ("0,1", False),
        ("GPU-0000000", False),
    ],
)
def test_cuda_visible_devices_that_hides_every_gpu_is_named(
    tables: Tables, visible: str, hides: bool
) -> None:
    """torch sees no GPU on a 2-GPU machine: when CUDA_VISIBLE_DEVICES names none of them (empty, -1, an
    index past the last, a name CUDA does not know), the finding says so and how to fix it, instead of
    only "check that it is not empty"."""
    torch = replace(HEALTHY_TORCH, cuda_available=False, device_count=0, device_capabilities=())
    facts = replace(healthy_facts(), frameworks=(torch,), system={"cuda_visible_devices": visible})
    (finding,) = _raised(diagnose(facts, tables), "torch.cuda_unavailable")
    assert (f"CUDA_VISIBLE_DEVICES={visible!r}" in finding.evidence) is hides
    assert ("unset CUDA_VISIBLE_DEVICES" in finding.fix and "0 to 1" in finding.fix) is hides


def test_branch_level_minimum(tables: Tables) -> None:
    """CUDA 13.4's own driver is given as branch '615': 610.x is below it, 615.x meets it."""
    torch = replace(HEALTHY_TORCH, cuda_version="13.4")
    for driver, expected in (("610.43.02", "info"), ("615.20", None)):
        facts = replace(
            healthy_facts(), frameworks=(torch,), gpus=_gpus(healthy_sample(0), driver_version=driver)
        )
        found = _raised(diagnose(facts, tables), "cuda.driver_too_old")
        assert [f.severity for f in found] == ([expected] if expected else [])


@pytest.mark.parametrize(
    ("capability", "archs", "expected"),
    [
        ("9.0", ["sm_80", "sm_90"], True),
        ("8.9", ["sm_80", "sm_86"], True),  # sm_86 code runs on 8.9 (same major, higher minor)
        ("8.6", ["sm_80", "sm_89"], True),  # ...and sm_80 on 8.6
        ("7.0", ["sm_75", "sm_80"], False),
        ("10.0", ["sm_80", "sm_90"], False),  # Blackwell on a build without sm_100 or PTX
        ("10.0", ["sm_90", "compute_90"], True),  # PTX JIT to a newer GPU
        ("12.0", ["sm_90", "sm_100", "sm_120"], True),
        ("9.0", ["sm_90a"], True),
        ("10.0", ["sm_90a"], False),  # arch-specific code runs on its own GPU only
    ],
)
def test_arch_supported(capability: str, archs: list[str], expected: bool) -> None:
    assert arch_supported(capability, archs) is expected


def test_fix_names_the_affected_gpu(tables: Tables) -> None:
    facts = replace(
        healthy_facts(), gpus=_gpus(healthy_sample(0), healthy_sample(1, remapped_rows_pending=True))
    )
    assert "nvidia-smi -r -i 1" in _raised(diagnose(facts, tables), "gpu.remap_pending")[0].fix


def test_pcie_gen_drop_at_idle_is_power_saving(tables: Tables) -> None:
    idle = replace(healthy_facts(), gpus=_gpus(healthy_sample(0, pcie_gen_current=1, util_gpu_pct=0.0)))
    assert _raised(diagnose(idle, tables), "gpu.pcie_degraded") == []
    busy = replace(healthy_facts(), gpus=_gpus(healthy_sample(0, pcie_gen_current=3, util_gpu_pct=90.0)))
    assert "gen 3 of gen 5" in _raised(diagnose(busy, tables), "gpu.pcie_degraded")[0].evidence


def test_sw_power_cap_alone_is_info(tables: Tables) -> None:
    facts = replace(healthy_facts(), gpus=_gpus(healthy_sample(0, throttle_reasons=("sw_power_cap",))))
    assert [f.severity for f in _raised(diagnose(facts, tables), "gpu.throttle")] == ["info"]


def test_xid_severity_follows_the_table(tables: Tables) -> None:
    facts = replace(
        healthy_facts(),
        xids=(
            XidFact(13, None, "Graphics Exception", "NVRM: Xid (0000:01:00): 13, …"),
            XidFact(63, None, "row remap", "NVRM: Xid (0000:01:00): 63, …"),
        ),
    )
    found = {f.title.split()[1]: f for f in _raised(diagnose(facts, tables), "gpu.xid")}
    assert found["13"].severity == "warn"  # app_bug
    assert found["63"].severity == "info"  # informational
    assert "RESTART_APP" in found["13"].fix


def test_one_lost_gpu_does_not_hide_the_others(tables: Tables) -> None:
    """gpustat's lesson: a lost GPU is reported, and the other GPU's problems still are."""
    facts = replace(
        healthy_facts(),
        gpus=_gpus(
            healthy_sample(0, lost=True, util_gpu_pct=Failed("GPU is lost")),
            healthy_sample(1, ecc_uncorrected_volatile=2),
        ),
    )
    ids = {f.id for f in diagnose(facts, tables) if f.severity == "error"}
    assert {"gpu.lost", "gpu.ecc_uncorrectable"} <= ids


def test_jupyter_with_token_on_network_is_info(tables: Tables) -> None:
    facts = replace(healthy_facts(), services=(WebService("jupyter", "0.0.0.0", 8888, True, True, "403"),))
    assert [f.severity for f in _raised(diagnose(facts, tables), "security.jupyter_exposed")] == ["info"]


@pytest.mark.parametrize(
    ("text", "rule_id"),
    [
        ("Failed to initialize NVML: Driver/library version mismatch", "driver.library_mismatch"),
        ("NVML library version: 550.54", "driver.nvml_error"),
        ("No devices were found", "gpu.none_found"),
        ("No NVIDIA driver found (Is this a GPU machine?)", "driver.missing"),
        ("NVML and the loaded NVIDIA kernel module are different versions", "driver.library_mismatch"),
        ("Unable to determine the device handle for GPU0000:07:00.0: Unknown Error", "gpu.lost"),
        ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver", "driver.missing"),
    ],
)
def test_classify_error(text: str, rule_id: str) -> None:
    assert classify_error(text) == rule_id


def test_findings_sorted_most_severe_first(tables: Tables) -> None:
    facts = replace(
        healthy_facts(),
        shm=SpaceFacts("/dev/shm", "shm", 64 * MIB, 64 * MIB),
        frameworks=(FrameworkFacts("pytorch", "2.5.1", error="boom"),),
        gpus=_gpus(healthy_sample(0, ecc_uncorrected_volatile=1)),
    )
    ranks = [("ok", "info", "warn", "error").index(f.severity) for f in diagnose(facts, tables)]
    assert ranks == sorted(ranks, reverse=True)
