"""One JSON convention for samples, whichever command prints them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuwise.cli.main import main
from gpuwise.gpu.jsonview import sample_to_json
from gpuwise.gpu.sample import Failed, MigDevice, NotSupported, Sample


def test_nested_mig_devices_follow_the_null_plus_status_rule() -> None:
    """monitor --json wrote a MIG device's unsupported readings as {} (a bare dataclass dump)."""
    mig = MigDevice(index=0, memory_used_bytes=5, profile=Failed("cut off"))
    sample = Sample(timestamp_s=0.0, index=0, mig_devices=(mig,))
    row = sample_to_json(sample)
    (device,) = row["mig_devices"]
    assert device["memory_used_bytes"] == 5
    assert device["gpu_instance_id"] is None
    assert device["gpu_instance_id_status"] == "not supported"
    assert device["profile_status"] == "failed: cut off"
    assert {} not in device.values()
    assert isinstance(sample.util_gpu_pct, NotSupported)
    assert row["util_gpu_pct"] is None


def test_doctor_and_monitor_print_the_same_gpu_fields(
    smi_fixtures: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capture = smi_fixtures / "captures" / "linux-x86_64__nvidia-h100-mig__590.48.01.txt"
    assert main(["monitor", "--once", "--json", "--replay", str(capture)]) == 0
    monitor_gpu = json.loads(capsys.readouterr().out)["gpus"][0]
    main(["doctor", "--json", "--replay", str(capture)])
    doctor_gpu = json.loads(capsys.readouterr().out)["gpus"][0]
    doctor_gpu.pop("failed")
    monitor_gpu.pop("extra", None)
    assert doctor_gpu.keys() == monitor_gpu.keys()
    # (the capture holds an idle and a load state; the commands may show different ones: same shape)
    assert [m.keys() for m in doctor_gpu["mig_devices"]] == [m.keys() for m in monitor_gpu["mig_devices"]]
    assert all({} not in m.values() for m in monitor_gpu["mig_devices"])
