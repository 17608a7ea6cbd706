"""`export dockerfile` adopts setup's architecture check: never a container no driver that drives the GPU can
run (a CUDA build or base image newer than the architecture's last driver branch allows)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuwise.catalog.specs import load_gpu_specs
from gpuwise.cli.main import main
from gpuwise.doctor.tables import load_tables
from gpuwise.errors import UsageError
from gpuwise.export.dockerfile import render_dockerfile
from gpuwise.export.images import ImageChoice, choose_image
from gpuwise.export.target import Job, target_from_flags
from gpuwise.setup.choose import branch_problem, build_runs_on
from gpuwise.setup.images import image_runs_on
from gpuwise.setup.tables import load_setup_tables

_NVIDIA = sorted(name for name, spec in load_gpu_specs().items() if spec.compute_capability is not None)
# the choice depends on the GPU only through its compute capability: one GPU of each is enough
_ONE_PER_CAPABILITY = sorted({load_gpu_specs()[g].compute_capability: g for g in _NVIDIA}.values())
_TORCH: list[str | None] = [None, *sorted({r.version for r in load_tables().frameworks})]
# none (the widest range), and one far newer than every branch (it cannot lift an architecture's ceiling)
_DRIVERS: list[str | None] = [None, "999.1"]


def _setup_accepts(choice: ImageChoice) -> bool:
    """Some branch setup installs drives the GPU (branch_problem) and runs both the build (build_runs_on)
    and the image on every release; and the image's Ubuntu carries the build's CUDA (setup's OS rule)."""
    tables, setup_tables = load_tables(), load_setup_tables()
    architecture = setup_tables.architecture_of(choice.compute_capability or "")
    assert architecture is not None, choice.gpu
    build = tables.framework_build("pytorch", choice.torch_version, choice.torch_variant)
    assert build is not None, choice
    system = setup_tables.system(f"ubuntu-{choice.image.ubuntu}")
    assert system is not None, choice.image
    return system.carries_cuda(build.cuda_version) and any(
        branch_problem(b.branch, architecture) is None
        and build_runs_on(build, b, tables)
        and image_runs_on(choice.image, b.min_version, tables)
        for b in setup_tables.branches
    )


def test_every_bundled_gpu_gets_a_container_setup_accepts_or_exit_2() -> None:
    chosen = refused = 0
    setup_tables = load_setup_tables()
    for gpu in _ONE_PER_CAPABILITY:
        capability = load_gpu_specs()[gpu].compute_capability
        if setup_tables.architecture_of(capability or "") is None:
            continue  # setup has no facts for it: nothing to hold export to
        for torch in _TORCH:
            for driver in _DRIVERS:
                try:
                    choice = choose_image(gpu, driver=driver, torch=torch)
                except UsageError as exc:
                    assert exc.exit_code == 2 and exc.fix, (gpu, torch, driver)
                    refused += 1
                    continue
                chosen += 1
                assert _setup_accepts(choice), (gpu, torch, driver, choice.base, choice.torch_variant)
    assert chosen > 100 and refused > 5  # both sides of the property were exercised


@pytest.mark.parametrize(
    "architecture", [a for a in load_setup_tables().architectures if a.last_driver_branch]
)
def test_the_container_runs_on_the_architectures_last_driver_branch(architecture: object) -> None:
    """Kepler (last branch 470), Maxwell, Pascal and Volta (580): the driver the container needs is of that
    branch or older, or export refuses."""
    from gpuwise.setup.tables import Architecture

    assert isinstance(architecture, Architecture)
    gpus = [g for g in _NVIDIA if load_gpu_specs()[g].compute_capability in architecture.capabilities]
    assert gpus, f"no bundled GPU of {architecture.name}"
    for gpu in gpus:
        try:
            choice = choose_image(gpu)
        except UsageError:
            assert architecture.name == "Kepler"  # the only one with no branch setup installs
            continue
        assert architecture.last_driver_branch is not None
        assert choice.min_driver[0] <= architecture.last_driver_branch, (gpu, choice.base, choice.min_driver)


@pytest.mark.parametrize("driver", [None, "470.82.01", "535.54.03"])
def test_a_kepler_gpu_is_refused_with_what_why_and_fix(driver: str | None) -> None:
    """CUDA 11.8 (the oldest base image) needs driver 520.61.05; Kepler's last branch is 470. Upgrading
    the driver, the old advice, cannot help: no newer branch drives a K80."""
    with pytest.raises(UsageError) as err:
        choose_image("K80", driver=driver)
    assert err.value.exit_code == 2
    assert "K80" in err.value.message and "on a driver that drives it" in err.value.message
    assert "Kepler's last driver branch is 470" in (err.value.why or "")
    assert "520.61.05" in (err.value.why or "")
    assert "choose a newer GPU" in err.value.fix and "upgrade the driver" not in err.value.fix


def test_the_cli_exits_2_and_writes_no_dockerfile_for_a_kepler_gpu(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "Dockerfile"
    assert main(["export", "dockerfile", "--gpu", "K80:1", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "Kepler's last driver branch is 470" in err and "To fix:" in err
    assert "Traceback" not in err
    assert not out.exists()


def test_maxwell_to_volta_still_get_a_container() -> None:
    """The check refuses only what no driver can run: a V100, P100 or M60 keeps a CUDA 12.6 build."""
    for gpu in ("V100", "P100", "M60"):
        choice = choose_image(gpu)
        assert choice.torch_variant == "cu126" and choice.min_driver[0] <= 580, (gpu, choice)


@pytest.mark.parametrize("torch", ["1.13", "2.0"])
def test_a_build_older_than_every_image_goes_into_an_image_whose_ubuntu_carries_its_cuda(torch: str) -> None:
    """torch 2.0's stable build is CUDA 11.7, older than every image: it once landed in a CUDA 13
    Ubuntu 24.04 image, whose NVIDIA repository starts at CUDA 12.5 and whose Python 3.12 no torch 2.0
    wheel supports. It goes into an Ubuntu 22.04 image (Python 3.11) now."""
    choice = choose_image("A100", torch=torch)
    assert choice.torch_cuda < (11, 8) and choice.image.ubuntu == "22.04", choice.base


def test_a_driver_past_the_last_branch_gets_a_note_and_an_image_the_last_branch_runs() -> None:
    """--driver 590 on a V100: no 590 driver drives Volta (last branch 580). The Dockerfile says so, and its
    image and build still run on a 580 driver."""
    text = render_dockerfile(target_from_flags("V100:1"), Job(driver="590.44.01"))
    assert "# Note: driver branch 590 no longer drives Volta GPUs (the last branch that does is 580)" in text
    assert choose_image("V100", driver="590.44.01").min_driver[0] <= 580
    assert "Note:" not in render_dockerfile(target_from_flags("V100:1"), Job(driver="580.95.05"))
