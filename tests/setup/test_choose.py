"""The choice behind `gpuwise setup`, held to the doctor's own version rules.

The property: for every (OS, GPU, framework, driver) that setup accepts, the stack its script installs —
the lowest release of the chosen driver branch, the chosen PyTorch build on the GPU — raises no
`cuda.driver_too_old` / `torch.*` finding in the doctor (not even the minor-version-compatibility note). The
machine state is built the way the doctor reads a machine: a GPU snapshot (name, compute capability, driver)
and the framework probe's facts. And every refusal names a nearest choice that, taken, is accepted.
"""

from __future__ import annotations

import re
from functools import cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuwise.catalog.specs import load_gpu_specs
from gpuwise.doctor.facts import Facts, FrameworkFacts, GpuFacts
from gpuwise.doctor.rules.finding import Finding
from gpuwise.doctor.rules.frameworks import check_cuda_driver, check_torch
from gpuwise.doctor.tables import Tables, load_tables
from gpuwise.errors import NotFoundError, UsageError
from gpuwise.gpu.sample import Sample, Snapshot
from gpuwise.setup.choose import (
    Target,
    UnsupportedCombinationError,
    choose_target,
    cuda_base_image,
    gpu_target,
    resolve_system,
)
from gpuwise.setup.tables import SetupTables, load_setup_tables


@cache
def _tables() -> tuple[Tables, SetupTables]:
    return load_tables(), load_setup_tables()


def _nvidia_gpus() -> list[str]:
    """Every NVIDIA GPU of the catalog whose architecture setup knows."""
    _, setup_tables = _tables()
    return [
        name
        for name, spec in load_gpu_specs().items()
        if spec.compute_capability
        and setup_tables.architecture_of(spec.compute_capability)
        and name != "GH200"  # an Arm system: refused (test_unknown_names_…)
    ]


def _one_gpu_per_capability() -> list[str]:
    seen: dict[str, str] = {}
    for name in _nvidia_gpus():
        seen.setdefault(str(load_gpu_specs()[name].compute_capability), name)
    return sorted(seen.values())


def _torch_versions() -> list[str]:
    tables, _ = _tables()
    return sorted({r.version for r in tables.frameworks if r.framework == "pytorch"})


def _choose(os_id: str, gpu: str, version: str | None, driver: int | None, container: bool = False) -> Target:
    tables, setup_tables = _tables()
    return choose_target(
        resolve_system(os_id, setup_tables),
        gpu_target(gpu, None, setup_tables),
        version,
        driver,
        container=container,
        tables=tables,
        setup_tables=setup_tables,
    )


def machine_after(target: Target, *, cuda_version: str | None = None) -> Facts:
    """The machine the script leaves: the branch's lowest release loaded, its GPU, the chosen build."""
    sample = Sample(
        timestamp_s=1_700_000_000.0,
        index=0,
        name=target.gpu.name,
        compute_capability=target.gpu.capability,
    )
    snapshot = Snapshot(
        samples=(sample,),
        driver_version=target.branch.min_version_text,
        cuda_driver_version=".".join(str(p) for p in target.branch.cuda_version),
    )
    build = target.build
    framework = FrameworkFacts(
        name="pytorch",
        version=f"{build.version}.0+{build.variant}",
        cuda_version=cuda_version or build.cuda_version,
        cudnn_version=build.cudnn_version,
        arch_list=build.arch_list,
        cuda_available=True,
        device_count=1,
    )
    return Facts(gpus=GpuFacts("replay:constructed", (snapshot,)), frameworks=(framework,))


def version_findings(facts: Facts) -> list[Finding]:
    """The doctor's version rules, every finding that is not a pass."""
    tables, _ = _tables()
    found = check_cuda_driver(facts, tables) + check_torch(facts, tables)
    return [f for f in found if f.severity != "ok"]


def _assert_doctor_clean(target: Target) -> None:
    assert version_findings(machine_after(target)) == []
    if target.image is not None:  # the container's CUDA runtime on the host's driver
        image_cuda = ".".join(str(p) for p in target.image.cuda_version)
        assert version_findings(machine_after(target, cuda_version=image_cuda)) == []


def test_every_accepted_default_stack_passes_the_doctors_version_rules() -> None:
    """Exhaustive over the tables: every kind of OS (what limits the choice: its newest driver branch and
    oldest CUDA) × every compute capability × every PyTorch release and the default, default branch."""
    _, setup_tables = _tables()
    kinds = {(s.max_driver_branch, s.min_cuda): s for s in setup_tables.systems}
    accepted = refused = 0
    for system in kinds.values():
        for gpu in _one_gpu_per_capability():
            for version in [None, *_torch_versions()]:
                try:
                    target = _choose(system.os, gpu, version, None, container=True)
                except UnsupportedCombinationError:
                    refused += 1
                    continue
                _assert_doctor_clean(target)
                accepted += 1
    assert accepted > 300  # the property is not vacuous
    assert refused > 0  # and some combinations really are impossible (e.g. Blackwell on torch 2.5)


@settings(max_examples=300)
@given(
    os_id=st.sampled_from([s.os for s in load_setup_tables().systems]),
    gpu=st.sampled_from(_nvidia_gpus()),
    version=st.none() | st.sampled_from(_torch_versions()),
    driver=st.none() | st.sampled_from([b.branch for b in load_setup_tables().branches]),
    container=st.booleans(),
)
def test_any_accepted_stack_passes_and_any_refusal_names_a_working_choice(
    os_id: str, gpu: str, version: str | None, driver: int | None, container: bool
) -> None:
    try:
        target = _choose(os_id, gpu, version, driver, container)
    except UnsupportedCombinationError as exc:
        _assert_nearest_choice_works(exc, os_id, gpu, version, driver)
        return
    _assert_doctor_clean(target)
    if driver is not None:
        assert target.branch.branch == driver
    if version is not None:
        assert target.build.version == version


def _assert_nearest_choice_works(
    exc: UnsupportedCombinationError, os_id: str, gpu: str, version: str | None, driver: int | None
) -> None:
    """Each alternative in the fix ("--driver N", "--framework torch==V", or both), taken, is accepted."""
    assert exc.why and exc.fix
    if "choose another" in exc.fix:
        return
    alternatives = exc.fix.removeprefix("use ").split(" or ")
    assert alternatives, exc.fix
    for alternative in alternatives:
        new_driver = re.search(r"--driver (\d+)", alternative)
        new_version = re.search(r"--framework torch==([0-9.]+\d)", alternative)
        assert new_driver or new_version, exc.fix
        target = _choose(
            os_id,
            gpu,
            new_version.group(1) if new_version else version,
            int(new_driver.group(1)) if new_driver else driver,
        )
        _assert_doctor_clean(target)


def test_the_harness_can_fail_on_a_stack_doctor_rejects() -> None:
    """Guards the property test: a build whose CUDA the branch cannot run does raise a finding."""
    target = _choose("ubuntu-22.04", "H100", "2.14", 580)
    assert target.build.variant == "cu130"
    _, setup_tables = _tables()
    old = setup_tables.branch(535)
    assert old is not None
    from dataclasses import replace

    assert version_findings(machine_after(replace(target, branch=old)))  # CUDA 13.0 on driver 535
    v100 = gpu_target("V100", None, setup_tables)
    assert version_findings(machine_after(replace(target, gpu=v100)))  # cu130 has no sm_70


def test_a_blackwell_gpu_on_a_branch_that_predates_it_is_refused_with_the_first_branch() -> None:
    with pytest.raises(UnsupportedCombinationError) as caught:
        _choose("ubuntu-22.04", "B200", None, 550)
    assert "predates Blackwell" in caught.value.why
    assert "--driver 570" in caught.value.fix


def test_volta_on_a_branch_that_dropped_it_is_refused_with_the_last_branch() -> None:
    with pytest.raises(UnsupportedCombinationError) as caught:
        _choose("ubuntu-22.04", "V100", None, 590)
    assert "dropped Volta" in caught.value.why
    assert "--driver 580" in caught.value.fix


def test_a_build_with_no_cuda_the_driver_runs_is_refused_with_both_ways_out() -> None:
    with pytest.raises(UnsupportedCombinationError) as caught:
        _choose("ubuntu-22.04", "H100", "2.11", 535)
    assert "branch 535 ships CUDA 12.2" in caught.value.why
    assert "--driver 560" in caught.value.fix  # the nearest branch that runs 2.11's cu126 build
    assert "--framework torch==2.7" in caught.value.fix  # cu118 runs on 535


def test_a_release_without_kernels_for_the_gpu_is_refused_with_the_nearest_release_that_has_them() -> None:
    with pytest.raises(UnsupportedCombinationError) as caught:
        _choose("ubuntu-22.04", "B200", "2.5", None)
    assert "no build with kernels" in caught.value.message
    assert "--framework torch==2.7" in caught.value.fix


def test_defaults_prefer_the_long_term_branch_and_the_newest_cuda_it_runs() -> None:
    target = _choose("ubuntu-22.04", "H100", None, None)
    assert target.branch.branch == 580 and target.branch.designation == "ltsb"
    assert (target.build.version, target.build.variant) == ("2.14", "cu130")
    volta = _choose("ubuntu-22.04", "V100", None, None)
    assert volta.branch.branch == 580 and volta.build.variant == "cu126"  # the only 2.14 build with sm_70
    assert not volta.open_modules and _choose("ubuntu-22.04", "B200", None, None).open_modules


def test_unknown_names_are_not_found_errors_with_close_matches() -> None:
    _, setup_tables = _tables()
    with pytest.raises(NotFoundError) as os_error:
        resolve_system("ubuntu-22.4", setup_tables)
    assert "ubuntu-22.04" in os_error.value.matches
    with pytest.raises(NotFoundError):
        gpu_target("H1000", None, setup_tables)
    with pytest.raises(NotFoundError):
        _choose("ubuntu-22.04", "H100", None, 999)
    with pytest.raises(UsageError, match="not an NVIDIA GPU"):
        gpu_target("MI300X", None, setup_tables)
    with pytest.raises(UsageError, match="Arm"):
        gpu_target("GH200", None, setup_tables)


def test_cuda_base_image_needs_a_driver_that_meets_the_images_own_toolkit() -> None:
    """12.6.3's own driver is 560.35.05: a branch-560 machine at 560.28.03 gets the 12.4 image instead."""
    assert cuda_base_image("12.6", "560.35.05").image == "nvidia/cuda:12.6.3-runtime-ubuntu24.04"
    assert cuda_base_image("12.6", "560.28.03").image == "nvidia/cuda:12.4.1-runtime-ubuntu22.04"
    assert cuda_base_image("13.0", "580.65.06").image == "nvidia/cuda:13.0.0-runtime-ubuntu24.04"
    assert cuda_base_image("13.2", (580, 65, 6)).image == "nvidia/cuda:13.0.0-runtime-ubuntu24.04"
    with pytest.raises(UnsupportedCombinationError) as caught:
        cuda_base_image("12.6", "470.57.02")
    assert "upgrade the driver" in caught.value.fix


def test_a_gpu_name_from_a_recording_cannot_inject_shell_into_the_script() -> None:
    _, setup_tables = _tables()
    target = gpu_target('Evil GPU"\n rm -rf / #', "9.0", setup_tables)
    assert "\n" not in target.name and '"' not in target.name
    assert gpu_target("NVIDIA A100-SXM4-80GB", None, setup_tables).name == "A100-80GB"
    assert gpu_target("Tesla T4", "7.5", setup_tables).name == "T4"


def test_every_table_row_names_its_source_and_every_nvidia_gpu_has_an_architecture() -> None:
    _, setup_tables = _tables()
    rows = [*setup_tables.architectures, *setup_tables.branches, *setup_tables.systems, *setup_tables.images]
    assert all(row.source.strip() for row in rows)
    for name, spec in load_gpu_specs().items():
        if spec.vendor == "NVIDIA" and spec.compute_capability:
            assert setup_tables.architecture_of(spec.compute_capability), name


def test_a_branch_row_whose_cuda_belongs_to_another_branch_is_a_data_error() -> None:
    """The branch's lowest release comes from the doctor's cuda-compat table; a row that disagrees with it
    (CUDA 12.8 ships with branch 570, not 580) must not load."""
    from gpuwise.setup.tables import parse_setup_tables

    tables, _ = _tables()
    bad = [{"branch": "580", "cuda_version": "12.8", "designation": "ltsb", "end_of_life": "", "source": "x"}]
    with pytest.raises(ValueError, match="not of branch 580"):
        parse_setup_tables(tables, [], bad, [], [])


def test_the_chosen_pytorch_installs_with_the_distributions_python() -> None:
    """pip finds no wheel for a Python older than the release supports: every OS's default choice needs at
    most the Python its script uses (Debian 11's 3.9 got torch 2.14, which needs 3.10, and failed at the
    last step). A container installs PyTorch in the image, so it keeps the newest."""
    from gpuwise.setup.python import min_python, os_python

    _, setup_tables = _tables()
    for system in setup_tables.systems:
        for gpu in ("A100", "H100", "L4"):
            target = _choose(system.os, gpu, None, None)
            need = min_python(target.build.version)
            assert need is not None and need <= os_python(system.os).version, (system.os, gpu, target.build)
    assert _choose("debian-11", "H100", None, None).build.version == "2.8"
    assert _choose("debian-11", "H100", None, None, container=True).build.version == "2.14"
    assert _choose("rhel-9", "H100", None, None).build.version == "2.14"  # with python3.11, not python3 (3.9)


def test_a_release_too_new_for_the_python_is_refused_with_one_that_installs() -> None:
    with pytest.raises(UnsupportedCombinationError) as caught:
        _choose("debian-11", "H100", "2.14", None)
    assert "needs Python 3.10 or newer" in caught.value.why and "python3 3.9" in caught.value.why
    assert "--framework torch==2.8" in caught.value.fix
    with pytest.raises(UnsupportedCombinationError) as caught:
        _choose("ubuntu-20.04", "B200", None, None)  # every release with Blackwell kernels needs 3.9+
    assert "--container" in caught.value.fix
