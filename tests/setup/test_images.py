"""One base-image table and one chooser: `setup --container` and `export dockerfile` name the same
nvidia/cuda image for the same GPU and driver, under the stricter driver rule (the image's exact CUDA
release's own driver)."""

from __future__ import annotations

import json
from importlib import resources

import pytest

from gpuwise.cli.main import main
from gpuwise.doctor.tables import load_tables
from gpuwise.errors import UsageError
from gpuwise.export.dockerfile import render_dockerfile
from gpuwise.export.images import choose_image
from gpuwise.export.target import Job, target_from_flags
from gpuwise.setup.choose import choose_target, cuda_base_image, gpu_target, resolve_system
from gpuwise.setup.images import choose_base_image, image_runs_on, load_images, parse_images
from gpuwise.setup.tables import load_setup_tables

GPUS = ["H100", "B200", "A100-80GB", "L4", "T4", "V100", "RTX4090", "RTX5090", "P100"]
TORCH = [None, "2.5", "2.8", "2.14"]


def _from_line(dockerfile: str) -> str:
    return next(line.removeprefix("FROM ") for line in dockerfile.splitlines() if line.startswith("FROM "))


@pytest.mark.parametrize("os_id", ["ubuntu-22.04", "ubuntu-24.04"])
def test_setup_and_export_name_the_same_image_for_every_driver_branch(os_id: str) -> None:
    """For every branch setup knows, a sample of GPUs and PyTorch releases: wherever setup --container
    chooses, export dockerfile on that branch's lowest release writes FROM the same image (and the same
    torch build). Setup may refuse more (the OS, the architecture's last branch): export knows neither."""
    tables, setup_tables = load_tables(), load_setup_tables()
    system = resolve_system(os_id, setup_tables)
    compared = 0
    for gpu in GPUS:
        target_gpu = gpu_target(gpu, None, setup_tables)
        for branch in setup_tables.branches:
            for torch in TORCH:
                try:
                    target = choose_target(
                        system,
                        target_gpu,
                        torch,
                        branch.branch,
                        container=True,
                        tables=tables,
                        setup_tables=setup_tables,
                    )
                except UsageError:
                    continue
                assert target.image is not None
                job = Job(driver=branch.min_version_text, torch=torch)
                dockerfile = render_dockerfile(target_from_flags(f"{gpu}:1"), job)
                where = (os_id, gpu, branch.branch, torch)
                assert _from_line(dockerfile) == target.image.image, where
                choice = choose_image(gpu, driver=branch.min_version_text, torch=torch)
                assert choice.torch_variant == target.build.variant, where
                compared += 1
    assert compared > 150  # the comparison is not vacuous


def test_the_command_lines_agree(capsys: pytest.CaptureFixture[str]) -> None:
    for gpu, branch, release in [("H100", "580", "580.65.06"), ("A100", "550", "550.54.14")]:
        assert (
            main(["setup", "--os", "ubuntu-22.04", "--gpu", gpu, "--driver", branch, "--container", "--json"])
            == 0
        )
        image = json.loads(capsys.readouterr().out)["image"]
        assert main(["export", "dockerfile", "--gpu", f"{gpu}:8", "--driver", release]) == 0
        assert _from_line(capsys.readouterr().out) == image, (gpu, branch)


def test_the_stricter_rule_a_branchs_first_release_does_not_run_a_later_update_image() -> None:
    """CUDA 12.4 Update 1 needs 550.54.15 (CUDA release notes); 550.54.14, branch 550's first release, does
    not meet it. Export once judged images by major.minor (12.4.0's 550.54.14) and chose 12.4.1 here."""
    tables, images = load_tables(), load_images()
    cuda_124 = next(i for i in images if i.cuda == (12, 4))
    assert not image_runs_on(cuda_124, (550, 54, 14), tables)
    assert image_runs_on(cuda_124, (550, 54, 15), tables)
    expected = "nvidia/cuda:12.1.1-runtime-ubuntu22.04"
    assert cuda_base_image("12.4", "550.54.14").image == expected
    choice = choose_image("H100", driver="550.54.14", torch="2.5")
    assert choice.base == expected and choice.torch_variant == "cu124"
    assert (
        choose_image("H100", driver="550.54.15", torch="2.5").base == "nvidia/cuda:12.4.1-runtime-ubuntu22.04"
    )
    text = render_dockerfile(target_from_flags("H100:8"), Job(driver="550.54.14", torch="2.5"))
    assert "brings its own CUDA 12.4 runtime" in text


def test_without_a_driver_the_image_is_the_builds_own_cuda() -> None:
    tables, images = load_tables(), load_images()
    for image in images:
        assert choose_base_image(image.cuda_version, None, tables=tables, images=images) == image
    assert choose_base_image((12, 4), (470, 57, 2), tables=tables, images=images) is None


def test_one_table_every_row_sourced_and_tags_of_their_release() -> None:
    images = load_images()
    assert images == load_setup_tables().images
    assert len({i.cuda for i in images}) == len(images)
    for image in images:
        assert image.source.strip() and image.python.startswith("python3")
        assert image.tag.endswith(f"-ubuntu{image.ubuntu}")
    assert not resources.files("gpuwise.export").joinpath("data", "cuda-images.csv").is_file()
    bad = [
        {
            "cuda_version": "12.4.1",
            "tag": "12.6.3-runtime-ubuntu24.04",
            "ubuntu": "24.04",
            "python": "python3",
        }
    ]
    with pytest.raises(ValueError, match="not of CUDA"):
        parse_images([{**bad[0], "source": "x"}])
