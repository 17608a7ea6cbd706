"""The pure checkpoint core: the manifest round-trips, an incomplete checkpoint is never listed, each
trainer's completion marker is recognised (and a half-written one is not), pruning keeps the newest."""

from __future__ import annotations

import string

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpuwise.run.manifest import (
    MANIFEST_NAME,
    Candidate,
    FileEntry,
    Manifest,
    ManifestError,
    complete_kind,
    listed_names,
    missing_or_wrong,
    newest,
    run_id_from,
    step_of,
    to_prune,
)

_name_chars = string.ascii_letters + string.digits + "-_="
names = st.text(_name_chars, min_size=1, max_size=20)
rel_paths = st.lists(names, min_size=1, max_size=3).map("/".join)
digests = st.text("0123456789abcdef", min_size=64, max_size=64)


@st.composite
def manifests(draw: st.DrawFn) -> Manifest:
    is_dir = draw(st.booleans())
    name = draw(names)
    if is_dir:
        paths = draw(
            st.lists(rel_paths.filter(lambda p: p != MANIFEST_NAME), min_size=1, max_size=6, unique=True)
        )
    else:
        name += ".ckpt"
        paths = [name]
    files = tuple(FileEntry(p, draw(st.integers(0, 2**40)), draw(digests)) for p in paths)
    return Manifest(
        run_id=draw(names),
        name=name,
        kind="gpuwise" if is_dir else "lightning",
        is_dir=is_dir,
        step=draw(st.none() | st.integers(0, 10**9)),
        created_at=draw(st.floats(0, 4e9, allow_nan=False)),
        files=files,
    )


@given(manifests())
def test_manifest_round_trips(m: Manifest) -> None:
    assert Manifest.from_json(m.to_json()) == m


@given(
    st.dictionaries(
        names,
        st.tuples(st.lists(names, min_size=1, max_size=4), st.booleans()),
        max_size=8,
    )
)
def test_a_checkpoint_without_its_manifest_is_never_listed(ckpts: dict[str, tuple[list[str], bool]]) -> None:
    """Half-uploaded checkpoints (files but no manifest yet) never appear; finished ones always do."""
    keys = []
    for name, (files, finished) in ckpts.items():
        keys += [f"run1/{name}/{f}" for f in files]
        if finished:
            keys.append(f"run1/{name}/{MANIFEST_NAME}")
    keys.append(f"other/x/{MANIFEST_NAME}")  # another run's checkpoint
    listed = listed_names(keys, "run1")
    assert listed == sorted(n for n, (_f, finished) in ckpts.items() if finished)


def test_a_manifest_that_escapes_its_folder_is_refused() -> None:
    good = Manifest("r", "step-1", "gpuwise", True, 1, 1.0, (FileEntry("a/b", 1, "0" * 64),))
    for bad_path in ("../etc/passwd", "/abs", "a/../../b", "", "a//b"):
        text = good.to_json().replace('"a/b"', f'"{bad_path}"')
        with pytest.raises(ManifestError):
            Manifest.from_json(text)
    with pytest.raises(ManifestError):
        Manifest.from_json(good.to_json().replace('"step-1"', '"../x"'))
    with pytest.raises(ManifestError):
        Manifest.from_json("{not json")


def test_a_file_missing_or_cut_short_at_the_remote_is_reported() -> None:
    m = Manifest(
        "r", "step-1", "gpuwise", True, 1, 1.0, (FileEntry("a", 10, "0" * 64), FileEntry("b", 5, "1" * 64))
    )
    assert missing_or_wrong(m, {"a": 10, "b": 5}) == []
    assert missing_or_wrong(m, {"a": 3}) == ["a is 3 bytes, manifest says 10", "b missing"]


@pytest.mark.parametrize(
    ("name", "is_dir", "files", "state", "kind"),
    [
        ("step-3", True, {"COMPLETE", "w.bin"}, None, "gpuwise"),
        ("step-3", True, {"w.bin"}, None, None),  # not committed yet
        ("checkpoint-500", True, {"model.safetensors", "trainer_state.json"}, '{"global_step": 500}', "hf"),
        # Trainer writes trainer_state.json last, in place: a preemption mid-write leaves a prefix
        ("checkpoint-500", True, {"model.safetensors", "trainer_state.json"}, '{"global_st', None),
        ("checkpoint-500", True, {"model.safetensors", "optimizer.pt"}, None, None),
        ("step_7", True, {".metadata", "__0_0.distcp"}, None, "dcp"),
        ("step_7", True, {".metadata.tmp", "__0_0.distcp"}, None, None),
        ("epoch=1-step=200.ckpt", False, set(), None, "lightning"),
        ("epoch=1-step=200.ckpt.part", False, set(), None, None),
        (".step-3.123.tmp", True, {"COMPLETE"}, None, None),  # gpuwise.checkpoint.save's work in progress
        ("notes.txt", False, set(), None, None),
    ],
)
def test_each_trainers_completion_marker(
    name: str, is_dir: bool, files: set[str], state: str | None, kind: str | None
) -> None:
    assert complete_kind(name, is_dir, files, state) == kind


def test_steps_and_newest() -> None:
    assert step_of("checkpoint-500") == 500
    assert step_of("epoch=2-step=1000.ckpt") == 1000
    assert step_of("last.ckpt") is None
    c = [Candidate("step-9", 9, 5.0, "local"), Candidate("step-10", 10, 1.0, "remote")]
    best = newest(c)
    assert best is not None
    assert best.name == "step-10"  # by step, not by name or time


@given(st.lists(st.tuples(st.integers(0, 50), st.floats(0, 100)), min_size=1, max_size=20), st.integers(1, 5))
def test_pruning_keeps_the_newest_k(items: list[tuple[int, float]], keep: int) -> None:
    cands = [Candidate(f"c{i}", s, t, "remote") for i, (s, t) in enumerate(items)]
    pruned = to_prune(cands, keep)
    kept = [c for c in cands if c not in pruned]
    assert len(kept) == min(keep, len(cands))
    assert newest(cands) in kept


def test_run_id_is_stable_across_relaunches() -> None:
    a = run_id_from({}, ["python", "train.py"], "/ckpt")
    assert a == run_id_from({}, ["python", "train.py"], "/ckpt")
    assert a[1].startswith("hash")
    assert run_id_from({}, ["python", "other.py"], "/ckpt")[0] != a[0]
    assert run_id_from({"SKYPILOT_TASK_ID": "sky-2026/job 7"}, ["x"], "/c") == (
        "sky-2026-job-7",
        "SKYPILOT_TASK_ID",
    )
