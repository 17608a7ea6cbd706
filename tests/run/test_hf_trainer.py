"""A real, tiny Hugging Face Trainer job under `gpuwise run --sync`: a plain training script (no gpuwise code
in it) is SIGTERMed, its newest complete `checkpoint-N` is synced, and a relaunch on an empty machine resumes
from it through Trainer's own `get_last_checkpoint`.

Needs torch and transformers (the `hf-test` extra: torch 2.13.0 CPU, about 750 MB installed; CI installs it);
skipped without them, a failure under GPUWISE_REQUIRE_ALL=1."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest
from run_fakes import run_gpuwise, start_gpuwise

from gpuwise.run.manifest import MANIFEST_NAME

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("_hf_stack")]


@pytest.fixture
def _hf_stack(need_module) -> None:  # type: ignore[no-untyped-def]
    """A skip at import time would escape GPUWISE_REQUIRE_ALL; a fixture's skip is turned into a failure."""
    need_module("torch")
    need_module("transformers")


SCRIPT = r"""
import os, sys, time
import torch
from torch.utils.data import Dataset
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainerCallback, TrainingArguments
from transformers.trainer_utils import get_last_checkpoint

out = os.environ.get("GPUWISE_CHECKPOINT_DIR", "out")

class Tokens(Dataset):
    def __len__(self):
        return 100_000
    def __getitem__(self, i):
        ids = torch.randint(0, 32, (8,), generator=torch.Generator().manual_seed(i))
        return {"input_ids": ids, "labels": ids}

class Pace(TrainerCallback):  # a real job's steps take time; this one's take 20 ms
    def on_step_end(self, args, state, control, **kw):
        time.sleep(0.02)

torch.manual_seed(0)
model = GPT2LMHeadModel(GPT2Config(vocab_size=32, n_positions=8, n_embd=16, n_layer=1, n_head=2))
print("PARAMS", sum(p.numel() for p in model.parameters()), flush=True)
args = TrainingArguments(
    output_dir=out, max_steps=int(sys.argv[1]), save_steps=10, per_device_train_batch_size=4,
    report_to=[], use_cpu=True, logging_steps=10_000, dataloader_num_workers=0, disable_tqdm=True,
)
last = get_last_checkpoint(out) if os.path.isdir(out) else None
print("RESUME", last, flush=True)
trainer = Trainer(model=model, args=args, train_dataset=Tokens(), callbacks=[Pace()])
trainer.train(resume_from_checkpoint=last)
print("STEP", trainer.state.global_step, flush=True)
"""


def test_a_trainer_job_is_synced_sigtermed_and_resumed_unchanged(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    vol = tmp_path / "volume"
    vol.mkdir()
    env = dict(os.environ, TOKENIZERS_PARALLELISM="false", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    p = start_gpuwise(
        "run", "--preemption", "off", "--sync", f"file://{vol}", "--run-id", "hf", "--poll-s", "0.2",
        "--grace-s", "5", "--json", "--checkpoint-dir", str(tmp_path / "m1"), "--",
        sys.executable, str(script), "100000", env=env,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 240
        while not list(vol.glob(f"hf/checkpoint-*/{MANIFEST_NAME}")):
            assert time.monotonic() < deadline and p.poll() is None, "no checkpoint was synced"
            time.sleep(0.2)
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    params = int(next(x for x in out.splitlines() if x.startswith("PARAMS")).split()[1])
    assert params < 10_000  # a model built in the test, nothing downloaded
    summary = json.loads(out.strip().splitlines()[-1])
    assert summary["exit_code"] == 128 + signal.SIGTERM and summary["flushed"], err  # Trainer dies on SIGTERM
    synced = sorted(
        (int(m.parent.name.split("-")[1]) for m in vol.glob(f"hf/checkpoint-*/{MANIFEST_NAME}")),
    )
    newest = synced[-1]
    local = sorted(int(d.name.split("-")[1]) for d in (tmp_path / "m1").glob("checkpoint-*"))
    complete_local = [
        n for n in local if (tmp_path / "m1" / f"checkpoint-{n}" / "trainer_state.json").is_file()
    ]
    assert newest == max(complete_local)  # the newest complete one reached the volume before exit

    again = run_gpuwise(
        "run", "--preemption", "off", "--sync", f"file://{vol}", "--run-id", "hf", "--resume",
        "--checkpoint-dir", str(tmp_path / "m2"), "--", sys.executable, str(script), str(newest + 10),
        timeout_s=240, env=env,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr[-3000:]
    assert f"RESUME {tmp_path / 'm2' / f'checkpoint-{newest}'}" in again.stdout
    assert f"STEP {newest + 10}" in again.stdout
