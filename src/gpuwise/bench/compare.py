"""`gpuwise bench compare`: results files side by side, and what the work costs on each machine.

Money per unit of work = price per hour / (units per second × 3600): `$ per 1M training tokens` from
train_step_transformer, `$ per 1k images` from train_step_cnn, `$ per unit` from a `bench task` result.
The price is `--price` (one for all files, or one per file in order), else the price the run recorded
(config `[machine] price_usd_per_hour`), else the catalog's lowest on-demand price for the recorded
provider and instance type; otherwise unknown, and the money rows say so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuwise.errors import ConfigError
from gpuwise.locale import N_, _
from gpuwise.locale import _ as _translate  # a text marked with N_() (the extractor refuses _(variable))

_FIX = N_("give files written by `gpuwise bench --out FILE` or `gpuwise bench task --out FILE -- CMD`")
MAX_RESULT_BYTES = 4 * 2**20  # a results file is a few KB; a larger one is not one


@dataclass(frozen=True)
class Loaded:
    path: str
    kind: str  # "suite" | "task"
    data: dict[str, Any]


def parse_result(data: Any, source: str) -> Loaded:
    """A suite or task results document, or bad input saying what is missing."""
    if not isinstance(data, dict) or not isinstance(data.get("machine"), dict):
        raise ConfigError(
            _("{source} is not a gpuwise bench result").format(source=source),
            why=_("it has no 'machine' object"),
            fix=_translate(_FIX),
        )
    results = data.get("results")
    if isinstance(results, list) and all(
        isinstance(r, dict) and isinstance(r.get("task"), str) and isinstance(r.get("unit"), str)
        for r in results
    ):
        return Loaded(source, "suite", data)
    task = data.get("task")
    if isinstance(task, dict) and isinstance(task.get("unit"), str) and "seconds_per_unit" in task:
        return Loaded(source, "task", data)
    raise ConfigError(
        _("{source} is not a gpuwise bench result").format(source=source),
        why=_("it has neither a 'results' list of tasks nor a 'task' object with seconds_per_unit"),
        fix=_translate(_FIX),
    )


def load_result(path: Path) -> Loaded:
    from gpuwise.safe_read import load_json

    return parse_result(
        load_json(path, what=_("Results file"), fix=_translate(_FIX), max_bytes=MAX_RESULT_BYTES), str(path)
    )


def catalog_price(provider: str | None, instance_type: str | None) -> tuple[float, str] | None:
    """The lowest on-demand price the catalog lists for this instance, with its date."""
    if not provider or not instance_type:
        return None
    from gpuwise.catalog.offers import load_catalog

    offers = [
        o
        for o in load_catalog().offers
        if o.provider == provider and o.instance_type == instance_type and o.price_usd_per_hour is not None
    ]
    if not offers:
        return None
    best = min(offers, key=lambda o: o.price_usd_per_hour or 0.0)
    assert best.price_usd_per_hour is not None
    return best.price_usd_per_hour, f"catalog, {best.region}, {best.price_as_of}"


def price_for(loaded: Loaded, given: float | None) -> tuple[float | None, str]:
    machine = loaded.data["machine"]
    if given is not None:
        return given, "--price"
    recorded = machine.get("price_usd_per_hour")
    if isinstance(recorded, int | float) and not isinstance(recorded, bool) and recorded > 0:
        return float(recorded), "recorded with the run"
    found = catalog_price(machine.get("provider"), machine.get("instance_type"))
    if found is not None:
        return found
    return None, "unknown: give --price"


def _value(loaded: Loaded, task: str) -> float | None:
    for r in loaded.data.get("results") or []:
        if r.get("task") == task and isinstance(r.get("value"), int | float) and r["value"] > 0:
            return float(r["value"])
    return None


def _money(price: float | None, per_s: float | None, scale: float) -> float | None:
    if price is None or not per_s:
        return None
    return price / (per_s * 3600.0) * scale


def column(loaded: Loaded, given_price: float | None) -> dict[str, Any]:
    """One file's column: machine, price, the task values, and money per unit of work."""
    machine = loaded.data["machine"]
    price, price_source = price_for(loaded, given_price)
    col: dict[str, Any] = {
        "file": loaded.path,
        "kind": loaded.kind,
        "gpu": machine.get("gpu") or machine.get("gpu_name"),
        "gpus": machine.get("gpus"),
        "provider": machine.get("provider"),
        "instance_type": machine.get("instance_type"),
        "price_usd_per_hour": price,
        "price_source": price_source,
        "values": {},
    }
    if loaded.kind == "suite":
        for r in loaded.data["results"]:
            col["values"][r["task"]] = {
                "value": r.get("value"),
                "unit": r["unit"],
                "fraction_of_peak": r.get("fraction_of_peak"),
            }
        col["usd_per_1m_training_tokens"] = _money(price, _value(loaded, "train_step_transformer"), 1e6)
        col["usd_per_1k_images"] = _money(price, _value(loaded, "train_step_cnn"), 1e3)
    else:
        task = loaded.data["task"]
        spu = task.get("seconds_per_unit")
        per_s = 1.0 / spu if isinstance(spu, int | float) and spu > 0 else None
        col["unit"] = task["unit"]
        col["seconds_per_unit"] = spu
        col["usd_per_unit"] = _money(price, per_s, 1.0)
    return col


def compare(loaded: Sequence[Loaded], prices: Sequence[float]) -> list[dict[str, Any]]:
    """Columns for every file; `prices` is empty, one price for all, or one per file."""
    if prices and len(prices) not in (1, len(loaded)):
        raise ConfigError(
            _("{prices} --price values for {files} files").format(prices=len(prices), files=len(loaded)),
            fix=_("give one --price for all files, or one per file in the same order"),
        )
    per_file = list(prices) * len(loaded) if len(prices) == 1 else list(prices)
    return [column(item, per_file[i] if per_file else None) for i, item in enumerate(loaded)]
