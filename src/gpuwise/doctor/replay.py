"""Facts from a recording (`gpuwise doctor --replay PATH`, docs/replay.md): the same rules, recorded input.

A path that is no recording raises ReplayError (exit 2, from gpuwise.gpu.replay); a damaged one gives
facts plus `problems`, which the rules turn into `replay.unparsed` findings. Reads the file through
gpuwise.gpu.replay; nothing else here touches the system.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from gpuwise.doctor.facts import Facts, GpuFacts, ParseProblem, XidFact

if TYPE_CHECKING:
    from gpuwise.gpu.replay import Recording


def facts_from_recording(recording: Recording, path: str) -> Facts:
    """Only what the recording holds: GPU snapshots, nvidia-smi's error texts, Xid lines, parse problems.
    Everything else (frameworks, container, security) stays None: those checks did not run."""
    events = recording.xid_events
    has_kernel_log = bool(events) or any("kernel-log" in name for name in recording.sections)
    xids: tuple[XidFact, ...] | None = None
    if has_kernel_log:
        xids = tuple(XidFact(e.xid, e.pci_bus_id, e.message, e.line) for e in events)
    gpus = None
    if recording.snapshots:
        gpus = GpuFacts(source=f"replay:{recording.format}", snapshots=tuple(recording.snapshots))
    return Facts(
        gpus=gpus,
        xids=xids,
        problems=tuple(ParseProblem(p.source, p.message) for p in recording.problems),
        replay_path=path,
    )


def load_replay_facts(path: Path) -> Facts:
    """Read a recording and turn it into facts. Raises ReplayError for a path that is no recording."""
    from gpuwise.doctor.npu_live import read_npu_recording
    from gpuwise.gpu.replay import load_recording

    npu = read_npu_recording(path)  # an Ascend machine's `npu-smi info`: the NPU rules, no GPU ones
    if npu is not None:
        problems = [ParseProblem(str(path), p) for p in npu.problems]
        if not npu.chips:
            problems.append(
                ParseProblem(str(path), "npu-smi output without any NPU chip row that could be read")
            )
        return Facts(npu=npu, problems=tuple(problems), replay_path=str(path))
    return facts_from_recording(load_recording(path), str(path))
