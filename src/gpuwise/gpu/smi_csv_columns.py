"""What the columns of a `nvidia-smi --query-gpu` CSV header mean, computed once per file.

The header names each `--query-gpu` field with its unit in brackets (`memory.used [MiB]`); `FIELD_MAP`
says which `Sample` field each one feeds and which of two columns wins (power.draw over
power.draw.instant). Per-reason throttle columns, under both names nvidia-smi has used, and the bit mask
column are recognised; anything else is kept as text in `Sample.extra`. A Weights & Biases GPU export is
translated to nvidia-smi's columns here, so one parser reads both.

Pure; standard library only.
"""

from __future__ import annotations

from gpuwise.gpu import _values as v

__all__ = [
    "FIELD_MAP",
    "WANDB_REQUIRED",
    "ColumnPlan",
    "first_line",
    "header_names",
    "split_header",
    "wandb_to_query_csv",
]

# `--query-gpu` field (lowercase, without its "[unit]") → (Sample field, converter, priority).
# A higher priority wins when two columns feed one field (power.draw over power.draw.instant).
FIELD_MAP: dict[str, tuple[str, v.Converter, int]] = {
    "uuid": ("uuid", v.to_str, 1),
    "name": ("name", v.to_str, 1),
    "pci.bus_id": ("bus_id", v.to_str, 1),
    "utilization.gpu": ("util_gpu_pct", v.to_float, 1),
    "utilization.memory": ("util_memory_pct", v.to_float, 1),
    "utilization.encoder": ("util_encoder_pct", v.to_float, 1),
    "utilization.decoder": ("util_decoder_pct", v.to_float, 1),
    "memory.used": ("memory_used_bytes", v.to_bytes, 1),
    "memory.total": ("memory_total_bytes", v.to_bytes, 1),
    "memory.reserved": ("memory_reserved_bytes", v.to_bytes, 1),
    "power.draw": ("power_draw_watts", v.to_float, 3),
    "power.draw.instant": ("power_draw_watts", v.to_float, 2),
    "power.draw.average": ("power_draw_watts", v.to_float, 1),
    "power.limit": ("power_limit_watts", v.to_float, 2),
    "enforced.power.limit": ("power_limit_watts", v.to_float, 1),
    "power.default_limit": ("power_default_limit_watts", v.to_float, 1),
    "temperature.gpu": ("temperature_c", v.to_float, 1),
    "temperature.memory": ("memory_temperature_c", v.to_float, 1),
    "fan.speed": ("fan_speed_pct", v.to_float, 1),
    "clocks.sm": ("sm_clock_mhz", v.to_float, 1),
    "clocks.current.sm": ("sm_clock_mhz", v.to_float, 1),
    "clocks.mem": ("memory_clock_mhz", v.to_float, 1),
    "clocks.current.memory": ("memory_clock_mhz", v.to_float, 1),
    "clocks.max.sm": ("sm_clock_max_mhz", v.to_float, 1),
    "clocks.max.memory": ("memory_clock_max_mhz", v.to_float, 1),
    "clocks.max.mem": ("memory_clock_max_mhz", v.to_float, 1),
    "pcie.link.gen.current": ("pcie_gen_current", v.to_int, 2),
    "pcie.link.gen.gpucurrent": ("pcie_gen_current", v.to_int, 1),
    "pcie.link.gen.max": ("pcie_gen_max", v.to_int, 2),
    "pcie.link.gen.gpumax": ("pcie_gen_max", v.to_int, 1),
    "pcie.link.width.current": ("pcie_width_current", v.to_int, 1),
    "pcie.link.width.max": ("pcie_width_max", v.to_int, 1),
    "ecc.mode.current": ("ecc_mode_enabled", v.to_bool, 1),
    "ecc.errors.corrected.volatile.total": ("ecc_corrected_volatile", v.to_int, 1),
    "ecc.errors.corrected.aggregate.total": ("ecc_corrected_aggregate", v.to_int, 1),
    "ecc.errors.uncorrected.volatile.total": ("ecc_uncorrected_volatile", v.to_int, 1),
    "ecc.errors.uncorrected.aggregate.total": ("ecc_uncorrected_aggregate", v.to_int, 1),
    "retired_pages.pending": ("retired_pages_pending", v.to_bool, 1),
    "retired_pages.single_bit_ecc.count": ("retired_pages_single_bit", v.to_int, 1),
    "retired_pages.sbe": ("retired_pages_single_bit", v.to_int, 1),
    "retired_pages.double_bit.count": ("retired_pages_double_bit", v.to_int, 1),
    "retired_pages.dbe": ("retired_pages_double_bit", v.to_int, 1),
    "remapped_rows.correctable": ("remapped_rows_correctable", v.to_int, 1),
    "remapped_rows.uncorrectable": ("remapped_rows_uncorrectable", v.to_int, 1),
    "remapped_rows.pending": ("remapped_rows_pending", v.to_bool, 1),
    "remapped_rows.failure": ("remapped_rows_failure", v.to_bool, 1),
    "persistence_mode": ("persistence_mode", v.to_bool, 1),
    "mig.mode.current": ("mig_mode", v.to_bool, 1),
    "compute_cap": ("compute_capability", v.to_str, 1),
    "pstate": ("pstate", v.to_str, 1),
    "compute_mode": ("compute_mode", v.to_str, 1),
    "display_active": ("display_active", v.to_bool, 1),
}

# Per-reason throttle columns, under both names nvidia-smi has used (clocks_throttle_reasons.* before
# driver 535, clocks_event_reasons.* since).
_REASON_PREFIXES = ("clocks_event_reasons.", "clocks_throttle_reasons.")
_REASON_MASK_NAMES = frozenset(p + "active" for p in _REASON_PREFIXES)


def split_header(cell: str) -> tuple[str, str]:
    """'memory.used [MiB]' -> ('memory.used', 'MiB')."""
    cell = cell.strip().lstrip("\ufeff")
    # hand-written headers in front of `noheader` data often drop the space: "memory.used[MiB]"
    if cell.endswith("]") and "[" in cell:
        name, _, unit = cell[:-1].rpartition("[")
        return name.strip().lower(), unit.strip()
    return cell.lower(), ""


def first_line(text: str) -> str:
    """The first line that is neither blank nor a `#` comment (logging scripts often write one on top)."""
    return next((ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")), "")


def header_names(text: str) -> set[str]:
    return {split_header(c)[0] for c in first_line(text).split(",")}


# A Weights & Biases system-metrics export (one row per GPU per sample; the shared traces README shows
# one) holds the same readings under other names. It is translated to nvidia-smi's columns and read by the
# same parser, so users can replay the GPU history their training runs already logged.
WANDB_REQUIRED = frozenset({"timestamp_utc", "gpu_util_pct"})
_WANDB_COLUMNS = {
    "timestamp_utc": "timestamp",
    "gpu_index": "index",
    "gpu_util_pct": "utilization.gpu [%]",
    "gpu_mem_util_pct": "utilization.memory [%]",
    "gpu_mem_allocated_bytes": "memory.used [MiB]",
    "power_w": "power.draw [W]",
    "temp_c": "temperature.gpu",
}


def wandb_to_query_csv(rows: list[list[str]]) -> str:
    """Rows of a W&B GPU export -> the text nvidia-smi --query-gpu --format=csv,nounits would have written
    (empty cells become [N/A]; bytes become MiB; ISO UTC times become nvidia-smi's clock text)."""
    header = [cell.strip() for cell in rows[0]]
    keep = [(i, _WANDB_COLUMNS[name]) for i, name in enumerate(header) if name in _WANDB_COLUMNS]
    out = [", ".join(target for _, target in keep)]
    for row in rows[1:]:
        cells = []
        for i, target in keep:
            cell = row[i].strip() if i < len(row) else ""
            if not cell:
                cells.append("[N/A]")
            elif target == "timestamp":
                cells.append(cell.rstrip("Z").replace("T", " ").replace("-", "/"))
            elif target == "memory.used [MiB]":
                try:
                    cells.append(f"{float(cell) / 2**20:.0f}")
                except ValueError:
                    cells.append("[N/A]")
            else:
                cells.append(cell)
        out.append(", ".join(cells))
    return "\n".join(out) + "\n"


class ColumnPlan:
    """What to do with each column of one header, computed once per file (rows are many)."""

    def __init__(self, header: list[str]) -> None:
        self.names: list[str] = []
        self.units: list[str] = []
        self.raw = [cell.strip().lstrip("\ufeff") for cell in header]
        for cell in header:
            name, unit = split_header(cell)
            self.names.append(name)
            self.units.append(unit)
        self.timestamp_col = self._find("timestamp")
        self.index_col = self._find("index")
        self.util_col = self._find("utilization.gpu")
        # (column, field, converter, unit) sorted so that higher priorities are applied last and win
        fields = []
        self.reason_cols: list[tuple[int, str]] = []
        self.mask_col: int | None = None
        self.extra_cols: list[tuple[int, str]] = []
        for i, name in enumerate(self.names):
            if name in ("timestamp", "index"):
                continue
            mapped = FIELD_MAP.get(name)
            if mapped is not None:
                field, conv, prio = mapped
                fields.append((prio, i, field, conv, self.units[i]))
                continue
            if name in _REASON_MASK_NAMES:
                self.mask_col = i
            elif name.startswith(_REASON_PREFIXES) and not name.endswith(".supported"):
                reason = name.partition(".")[2]
                if reason in v.THROTTLE_IDS:
                    self.reason_cols.append((i, reason))
                    continue
            self.extra_cols.append((i, self.raw[i]))
        fields.sort(key=lambda f: f[0])
        self.fields = [(i, field, conv, unit) for _, i, field, conv, unit in fields]

    def _find(self, name: str) -> int | None:
        try:
            return self.names.index(name)
        except ValueError:
            return None
