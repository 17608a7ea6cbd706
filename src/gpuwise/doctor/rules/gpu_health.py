"""GPU health rules, per GPU: lost GPUs, clock slowdowns (throttling), uncorrectable ECC errors, pending
row remapping, degraded PCIe links, persistence mode, failed fans; and Xid events from the kernel log (or
NVML's Xid counter when the log could not be read).

Every per-GPU rule runs through `gpu_rule`: it judges each reading and reports each GPU once, at the worst
severity seen. Must not import anything beyond the standard library and gpuwise's own pure modules.
"""

from __future__ import annotations

from collections.abc import Callable

from gpuwise.doctor.facts import Facts, XidFact
from gpuwise.doctor.rules.finding import SEVERITY_RANK, Finding, ok_finding, tr
from gpuwise.doctor.rules.fixes import FIX, GPU_STATE_TEXT
from gpuwise.doctor.tables import Tables
from gpuwise.gpu import throttle
from gpuwise.gpu.sample import Failed, Sample, has_value
from gpuwise.locale import _

# A GPU this busy is "under load" for the PCIe generation check (links drop to gen 1 at idle to save power).
LOAD_UTIL_PCT = 30.0

# Clock-event reasons that cost performance and have a cause worth fixing (Sample.throttle_reasons ids).
_THROTTLE_SERIOUS = {r.id: r.description for r in throttle.REASONS if r.severity == "warn"}


def gpu_label(sample: Sample) -> str:
    """How a finding names a GPU: its index, model and bus id."""
    name = sample.name if has_value(sample.name) else _("unknown model")
    bus = f", {sample.bus_id}" if has_value(sample.bus_id) else ""
    return f"GPU {sample.index} ({name}{bus})"


def _per_gpu(
    facts: Facts,
    rule_id: str,
    judge: Callable[[Sample], tuple[str, str] | None],
    applicable: Callable[[Sample], bool],
) -> tuple[dict[str, list[tuple[str, Sample]]], int]:
    """Run ``judge`` over every sample of every snapshot; returns {severity: [(evidence, sample) per GPU]}
    (one entry per GPU, the most severe seen) and how many samples the check applied to."""
    gpus = facts.gpus
    if gpus is None:
        return {}, 0
    worst: dict[str, tuple[str, str, Sample]] = {}  # GPU key -> (severity, evidence, sample)
    checked = 0
    for snapshot in gpus.snapshots:
        for sample in snapshot.samples:
            if sample.lost and rule_id != "gpu.lost":
                continue
            if not applicable(sample):
                continue
            checked += 1
            verdict_ = judge(sample)
            if verdict_ is None:
                continue
            key = str(sample.uuid) if has_value(sample.uuid) else f"{sample.index}/{sample.bus_id}"
            if key not in worst or SEVERITY_RANK[verdict_[0]] > SEVERITY_RANK[worst[key][0]]:
                worst[key] = (*verdict_, sample)
    grouped: dict[str, list[tuple[str, Sample]]] = {}
    for severity, evidence, sample in worst.values():
        grouped.setdefault(severity, []).append((evidence, sample))
    return grouped, checked


def gpu_rule(
    facts: Facts,
    rule_id: str,
    judge: Callable[[Sample], tuple[str, str] | None],
    applicable: Callable[[Sample], bool] = lambda _s: True,
) -> list[Finding]:
    """One per-GPU rule: ``judge`` returns (severity, evidence) for a reading that fails, None for one that
    passes; ``applicable`` says whether a reading holds what the rule needs. Its words are
    GPU_STATE_TEXT[rule_id]; the fix names the first affected GPU."""
    title, fix, ok_title = map(tr, GPU_STATE_TEXT[rule_id])
    grouped, checked = _per_gpu(facts, rule_id, judge, applicable)
    if not checked:
        return []
    if not grouped:
        return [ok_finding(rule_id, ok_title, _("{count} reading(s) checked").format(count=checked))]
    found = []
    for severity, items in sorted(grouped.items(), key=lambda kv: -SEVERITY_RANK[kv[0]]):
        first = items[0][1]  # the fix names the first affected GPU
        exact = fix.replace("<index>", str(first.index))
        if isinstance(first.bus_id, str):
            exact = exact.replace("<bus id>", first.bus_id)
        found.append(Finding(rule_id, severity, title, "; ".join(e for e, _sample in items), exact))
    return found


def check_lost(facts: Facts, _tables: Tables) -> list[Finding]:
    def judge(s: Sample) -> tuple[str, str] | None:
        if not s.lost:
            return None
        why = next((str(v) for v in vars(s).values() if isinstance(v, Failed)), _("reported as lost"))
        return "error", f"{gpu_label(s)}: {why}"

    return gpu_rule(facts, "gpu.lost", judge)


def check_throttle(facts: Facts, _tables: Tables) -> list[Finding]:
    def judge(s: Sample) -> tuple[str, str] | None:
        reasons = s.throttle_reasons
        if not isinstance(reasons, tuple):
            return None
        serious = [tr(_THROTTLE_SERIOUS[r]) for r in reasons if r in _THROTTLE_SERIOUS]
        if serious:
            return "warn", f"{gpu_label(s)}: " + ", ".join(serious) + _temp_power(s)
        if "sw_power_cap" in reasons and "gpu_idle" not in reasons:
            return "info", f"{gpu_label(s)}: " + _("SW power cap (drawing its power limit)") + _temp_power(s)
        return None

    return gpu_rule(
        facts,
        "gpu.throttle",
        judge,
        lambda s: isinstance(s.throttle_reasons, tuple),
    )


def _temp_power(s: Sample) -> str:
    parts = []
    if isinstance(s.temperature_c, int | float):
        parts.append(f"{s.temperature_c:.0f} °C")
    if isinstance(s.power_draw_watts, int | float):
        draw = f"{s.power_draw_watts:.0f}"
        if isinstance(s.power_limit_watts, int | float):
            parts.append(_("{draw} W of {limit} W").format(draw=draw, limit=f"{s.power_limit_watts:.0f}"))
        else:
            parts.append(f"{draw} W")
    return f" ({', '.join(parts)})" if parts else ""


def check_ecc(facts: Facts, _tables: Tables) -> list[Finding]:
    def judge(s: Sample) -> tuple[str, str] | None:
        volatile = s.ecc_uncorrected_volatile
        aggregate = s.ecc_uncorrected_aggregate
        if isinstance(volatile, int) and volatile > 0:
            return (
                "error",
                f"{gpu_label(s)}: "
                + _("{count} uncorrectable ECC error(s) since the last driver load").format(count=volatile),
            )
        if isinstance(aggregate, int) and aggregate > 0:
            lifetime = _("{count} uncorrectable ECC error(s) over the GPU's lifetime").format(count=aggregate)
            return "warn", f"{gpu_label(s)}: {lifetime}"
        return None

    return gpu_rule(
        facts,
        "gpu.ecc_uncorrectable",
        judge,
        lambda s: has_value(s.ecc_uncorrected_volatile) or has_value(s.ecc_uncorrected_aggregate),
    )


def check_remap(facts: Facts, _tables: Tables) -> list[Finding]:
    def judge(s: Sample) -> tuple[str, str] | None:
        parts = []
        if s.remapped_rows_pending is True:
            rows = s.remapped_rows_uncorrectable
            if isinstance(rows, int) and rows:
                parts.append(_("{rows} row(s) remapped for uncorrectable errors").format(rows=rows))
            parts.append(_("row remapping pending"))
        if s.retired_pages_pending is True:
            parts.append(_("page retirement pending"))
        if s.remapped_rows_failure is True:
            parts.append(_("row remapping FAILED (no spare rows left)"))
        if not parts:
            return None
        return "error", f"{gpu_label(s)}: " + ", ".join(parts)

    return gpu_rule(
        facts,
        "gpu.remap_pending",
        judge,
        lambda s: has_value(s.remapped_rows_pending) or has_value(s.retired_pages_pending),
    )


def check_pcie(facts: Facts, _tables: Tables) -> list[Finding]:
    def judge(s: Sample) -> tuple[str, str] | None:
        problems = []
        width, width_max = s.pcie_width_current, s.pcie_width_max
        if isinstance(width, int) and isinstance(width_max, int) and 0 < width < width_max:
            problems.append(_("link width x{width} of x{width_max}").format(width=width, width_max=width_max))
        gen, gen_max, util = s.pcie_gen_current, s.pcie_gen_max, s.util_gpu_pct
        if (
            isinstance(gen, int)
            and isinstance(gen_max, int)
            and 0 < gen < gen_max
            and isinstance(util, int | float)
            and util >= LOAD_UTIL_PCT
        ):
            problems.append(
                _("PCIe gen {gen} of gen {gen_max} while {util} % busy").format(
                    gen=gen, gen_max=gen_max, util=f"{util:.0f}"
                )
            )
        if not problems:
            return None
        return "warn", f"{gpu_label(s)}: " + ", ".join(problems)

    return gpu_rule(
        facts,
        "gpu.pcie_degraded",
        judge,
        lambda s: has_value(s.pcie_width_current) or has_value(s.pcie_gen_current),
    )


def check_persistence(facts: Facts, _tables: Tables) -> list[Finding]:
    def judge(s: Sample) -> tuple[str, str] | None:
        if s.persistence_mode is False:
            return "info", f"{gpu_label(s)}: " + _("persistence mode Disabled")
        return None

    return gpu_rule(
        facts,
        "gpu.persistence_off",
        judge,
        lambda s: has_value(s.persistence_mode),
    )


def check_fan(facts: Facts, _tables: Tables) -> list[Finding]:
    def judge(s: Sample) -> tuple[str, str] | None:
        fan = s.fan_speed_pct
        if isinstance(fan, Failed):
            failed = _("fan reading failed ({why})").format(why=fan.why)
            return "warn", f"{gpu_label(s)}: {failed}" + _temp_power(s)
        return None

    return gpu_rule(
        facts,
        "gpu.fan_failure",
        judge,
        lambda s: has_value(s.fan_speed_pct) or isinstance(s.fan_speed_pct, Failed),
    )


# ---------------------------------------------------------------------------------------------- Xid


def _xid_severity(action_class: str | None) -> str:
    if action_class is None:
        return "warn"
    if action_class == "informational":
        return "info"
    if action_class in {"app_bug", "restart_app"}:
        return "warn"
    return "error"  # reset_gpu, reboot, rma_candidate, check_hardware


def check_xid(facts: Facts, tables: Tables) -> list[Finding]:
    """Xid events of the kernel log, one finding per code; NVML's Xid counter when the log held none."""
    found = _xids_from_log(facts.xids, tables) if facts.xids is not None else []
    if not found and facts.gpus is not None:
        found = _xids_from_counter(facts, tables)
    if found:
        return found
    if facts.xids is not None:
        lines = _("{count} Xid line(s)").format(count=len(facts.xids))
        return [ok_finding("gpu.xid", _("No Xid errors in the kernel log"), lines)]
    return []


def _xids_from_log(xids: tuple[XidFact, ...], tables: Tables) -> list[Finding]:
    found: list[Finding] = []
    by_code: dict[int, list[XidFact]] = {}
    for event in xids:
        by_code.setdefault(event.xid, []).append(event)
    for code, events in sorted(by_code.items()):
        info = tables.xids.get(code)
        buses = sorted({e.pci_bus for e in events if e.pci_bus})
        times = _xid_times(len(events), buses)
        title = f"Xid {code}" + (f" {info.mnemonic}: {info.meaning}" if info else _(": not in the Xid table"))
        fix = (
            _("{action} (NVIDIA action: {nvidia_action})").format(
                action=info.recommended_action, nvidia_action=info.immediate_action
            )
            if info
            else tr(FIX["gpu.xid/unknown"])
        )
        found.append(
            Finding(
                "gpu.xid",
                _xid_severity(info.action_class if info else None),
                title,
                events[0].line.strip() + times,
                fix,
            )
        )
    return found


def _xid_times(count: int, buses: list[str]) -> str:
    """ " (3 times on 0000:3B:00.0)", " (on 0000:3B:00.0)" or "" after a Xid line."""
    where = ", ".join(buses)
    if count > 1:
        if where:
            return " " + _("({count} times on {buses})").format(count=count, buses=where)
        return " " + _("({count} times)").format(count=count)
    return " " + _("(on {buses})").format(buses=where) if where else ""


def _xids_from_counter(facts: Facts, tables: Tables) -> list[Finding]:
    """NVML's own Xid counter, for when the kernel log could not be read."""
    found: list[Finding] = []
    snapshots = facts.gpus.snapshots[-1:] if facts.gpus is not None else ()
    for snapshot in snapshots:
        for s in snapshot.samples:
            if not (isinstance(s.xid_errors, int) and s.xid_errors > 0):
                continue
            last = s.xid_last if isinstance(s.xid_last, int) else None
            info = tables.xids.get(last) if last is not None else None
            found.append(
                Finding(
                    "gpu.xid",
                    _xid_severity(info.action_class if info else None),
                    f"Xid {last}" + (f" {info.mnemonic}: {info.meaning}" if info else "")
                    if last
                    else _("Xid errors reported"),
                    f"{gpu_label(s)}: "
                    + _("{count} Xid event(s), last Xid {last}").format(count=s.xid_errors, last=last),
                    info.recommended_action if info else tr(FIX["gpu.xid/counter"]),
                )
            )
    return found
