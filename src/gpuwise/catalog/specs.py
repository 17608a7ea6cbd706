"""The GPU spec table: datasheet figures under canonical names (docs/workload.md), with aliases.

Built from three bundled files in ``catalog/data``:

- ``gpu-specs.csv``: the team's datasheet table (rows named as the datasheets name them, e.g. ``H100 SXM``),
  copied unchanged from the project's reference data set;
- ``gpu-specs-added.csv``: GPUs that table lacks (B200, GH200, L40, A40, P100, …), same columns plus FP64/FP4;
- ``gpu-canonical.csv``: canonical name -> datasheet row, aliases, per-GPU memory as nvidia-smi reports it
  (where a recording exists; otherwise the datasheet capacity) and FP64 figures for the first table's rows.

Every figure is a :class:`Figure` with its source; a figure the vendor does not publish is ``None`` with a
source that says so. Tensor figures are dense (no 2:4 sparsity). Reads only package data; must not import
the CLI, pydantic or anything outside the standard library and ``gpuwise.errors``.
"""

from __future__ import annotations

import csv
import io
import re
from functools import cache
from importlib import resources

from gpuwise.catalog.models import Figure, GpuSpec
from gpuwise.errors import NotFoundError, UsageError
from gpuwise.locale import _

TFLOPS_DTYPES = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp4")

# Column in the datasheet tables for each dtype key of GpuSpec.tflops.
_DTYPE_COLUMN = {
    "fp32": "fp32_tflops",
    "tf32": "tf32_dense_tflops",
    "bf16": "bf16_dense_tflops",
    "fp16": "fp16_dense_tflops",
    "fp8": "fp8_dense_tflops",
    "int8": "int8_dense_tops",
    "fp4": "fp4_dense_tflops",
    "fp64": "fp64_tflops",
}
_NOT_PUBLISHED = "not published"
_KEY_STRIP = re.compile(r"[\s_\-]+")
# What nvidia-smi and the vendors put around a card's name, in alias_key's form (lower case, no separators)
_VENDOR_WORD = re.compile(r"^(?:nvidia|amd|intel|tesla|geforce|instinct)(?=.)")
# "RTX PRO 6000 Blackwell Server Edition"; "H100 80GB HBM3" (nvidia-smi's, here without its "NVIDIA").
# Not HBM2e: it tells the 80 GB A100 from the 40 GB one, so it must not be dropped.
_EDITION = re.compile(r"(?:(?:maxq)?(?:server|workstation)edition|hbm3e?)$")
_GEFORCE_NUMBER = re.compile(r"[2-5]0[5-9]0(?:ti|super|s)?")  # 4090, 3090ti: GeForce, never 6000 (3 cards)
_MEMORY_SUFFIX = re.compile(r"(?P<base>.*?\D)[\s_-]*(?P<gb>\d+)\s*GB?", re.IGNORECASE)
_COUNT_FIRST = re.compile(r"(?P<count>\d+)\s*[x×*]\s*(?P<name>\S.*)", re.IGNORECASE)
_COUNT_LAST = re.compile(r"(?P<name>.*\S)\s*[x×*]\s*(?P<count>\d+)", re.IGNORECASE)
_GPU_COUNT = re.compile(r"^\s*(?P<name>[^:]+?)\s*:\s*(?P<count>\d+(?:\.\d+)?)\s*$")


def alias_key(name: str) -> str:
    """The form names are compared in: case-insensitive, blind to spaces, '-' and '_'."""
    return _KEY_STRIP.sub("", name.strip().lower())


def _read_csv(filename: str) -> list[dict[str, str]]:
    text = resources.files("gpuwise.catalog").joinpath("data", filename).read_text(encoding="utf-8")
    return list(csv.DictReader(io.StringIO(text, newline="")))


def _number(text: str | None) -> float | None:
    if text is None:
        return None
    text = text.strip()
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        return None


def _form_factor(raw: str) -> str:
    low = raw.lower()
    if low.startswith("sxm"):
        return "SXM"
    if "pcie" in low:
        return "PCIe"
    if low.startswith("oam"):
        return "OAM"
    return raw


def _build_spec(canonical: dict[str, str], row: dict[str, str]) -> GpuSpec:
    source = row["source"].strip()
    sparse_halved = row.get("vendor_headline_includes_sparsity", "").strip().lower().startswith("yes")
    tflops: dict[str, Figure] = {}
    for dtype in TFLOPS_DTYPES:
        value = _number(row.get(_DTYPE_COLUMN[dtype]))
        fig_source = source
        if dtype == "fp64" and value is None and canonical.get("fp64_tflops"):
            value = _number(canonical["fp64_tflops"])
            fig_source = canonical["fp64_source"]
        elif value is not None and sparse_halved and dtype not in ("fp32", "fp64"):
            fig_source = f"{source}; dense = datasheet sparse figure / 2"
        if value is None:
            fig_source = f"{_NOT_PUBLISHED} ({source})"
        tflops[dtype] = Figure(value, fig_source)
    bandwidth = _number(row["memory_bw_gbs"])
    nvlink = _number(row["nvlink_bidir_gbs"])
    tdp = _number(row["tdp_w"])
    vendor = row["vendor"].strip()
    cc = row["compute_capability"].strip()
    compute_capability = cc if vendor == "NVIDIA" and re.fullmatch(r"\d+\.\d+", cc) else None
    pcie = _number(row["pcie_gen"])
    notes = [row.get("notes", "").strip()]
    if vendor != "NVIDIA" and cc and cc != "n/a":
        notes.append(f"ISA {cc}")
    notes.append(f"memory: {canonical['memory_source']}")
    return GpuSpec(
        name=canonical["canonical"],
        vendor=vendor,
        architecture=row["architecture"].strip(),
        memory_gib=float(canonical["memory_gib"]),
        memory_bandwidth_gbs=Figure(
            bandwidth, source if bandwidth is not None else f"{_NOT_PUBLISHED} ({source})"
        ),
        tflops=tflops,
        nvlink_bidir_gbs=Figure(nvlink, source if nvlink is not None else f"no GPU-to-GPU NVLink ({source})"),
        pcie_gen=int(pcie) if pcie is not None else None,
        tdp_watts=Figure(tdp, source if tdp is not None else f"{_NOT_PUBLISHED} ({source})"),
        compute_capability=compute_capability,
        form_factor=_form_factor(row["form_factor"].strip()),
        aliases=tuple(a.strip() for a in canonical["aliases"].split("|") if a.strip()),
        notes="; ".join(n for n in notes if n),
    )


@cache
def load_gpu_specs() -> dict[str, GpuSpec]:
    """Canonical GPU name -> spec, in table order. Cached: the table is package data."""
    rows = {r["gpu"]: r for r in _read_csv("gpu-specs.csv")}
    rows.update({r["gpu"]: r for r in _read_csv("gpu-specs-added.csv")})
    specs: dict[str, GpuSpec] = {}
    for canonical in _read_csv("gpu-canonical.csv"):
        row = rows[canonical["datasheet_row"]]
        specs[canonical["canonical"]] = _build_spec(canonical, row)
    return specs


@cache
def _alias_index() -> dict[str, str]:
    index: dict[str, str] = {}
    for name, spec in load_gpu_specs().items():
        for alias in (name, *spec.aliases):
            key = alias_key(alias)
            if index.get(key, name) != name:
                raise AssertionError(f"GPU alias {alias!r} names both {index[key]} and {name}")
            index[key] = name
    return index


def canonical_gpu_names() -> list[str]:
    """Every canonical GPU name of the spec table, in table order."""
    return list(load_gpu_specs())


def canonical_gpu_name(name: str) -> str | None:
    """The canonical name for ``name`` or one of its aliases (case-insensitive); None when unknown.

    Also takes a name as ``nvidia-smi`` prints it (``NVIDIA A100-SXM4-80GB``, ``NVIDIA GeForce RTX 4090``,
    ``Tesla V100-SXM2-16GB``, ``AMD Instinct MI300X``), a bare GeForce number (``4090``, ``3090 Ti``) and a
    name with the card's own memory after it (``RTX 4090 24GB``): people copy these from their machine."""
    index = _alias_index()
    key = alias_key(name)
    found = index.get(key)
    while found is None and (shorter := _VENDOR_WORD.sub("", key, count=1)) != key:
        key = shorter  # nvidia-smi's vendor and brand words, one at a time
        found = index.get(key)
    if found is None:
        found = index.get(_EDITION.sub("", key))
    if found is None and _GEFORCE_NUMBER.fullmatch(key):
        found = index.get("rtx" + key)
    if found is None and (sized := _MEMORY_SUFFIX.fullmatch(name.strip())) is not None:
        # only the card's own memory: 'A100 80GB' is an alias of its own, never the 40 GB A100
        base = canonical_gpu_name(sized["base"])
        gib = load_gpu_specs()[base].memory_gib if base is not None else None
        found = base if gib is not None and abs(gib - float(sized["gb"])) <= 0.1 * gib else None
    return found


@cache
def _no_estimate_cards() -> dict[str, tuple[str, str]]:
    """Alias key -> (name, why) for cards gpuwise knows but cannot estimate (``gpu-no-estimate.csv``)."""
    out: dict[str, tuple[str, str]] = {}
    for row in _read_csv("gpu-no-estimate.csv"):
        for alias in (row["name"], *row["aliases"].split("|")):
            if alias.strip():
                out[alias_key(alias)] = (row["name"], f"{row['why']} (sources: {row['source']})")
    return out


def no_estimate_reason(name: str) -> str | None:
    """Why a known card has no estimator support (e.g. Ascend 910B: figures not confirmed); None otherwise."""
    found = _no_estimate_cards().get(alias_key(name))
    return (
        None
        if found is None
        else _("{gpu} has no estimator support: {why}").format(gpu=found[0], why=found[1])
    )


def resolve_gpu(name: str) -> GpuSpec:
    """The spec for a canonical name or alias ("h100-sxm", "A100 80GB"); NotFoundError with close matches."""
    canonical = canonical_gpu_name(name)
    if canonical is None:
        reason = no_estimate_reason(name)
        if reason is not None:
            raise UsageError(
                reason,
                fix=_("pick a card from `gpuwise catalog gpus`, or time the job on this card yourself"),
            )
        raise NotFoundError(
            "GPU",
            name,
            _suggestion_names(),
            fix=_(
                "use a name from `gpuwise catalog gpus` (aliases such as 'h100-sxm' or 'A100 80GB' work too)"
            ),
        )
    return load_gpu_specs()[canonical]


def _suggestion_names() -> list[str]:
    names = canonical_gpu_names()
    for spec in load_gpu_specs().values():
        names.extend(spec.aliases)
    return names


def parse_gpu_request(text: str) -> tuple[str, int | None]:
    """'H100:8' -> ('H100', 8); 'H100' -> ('H100', None); '8x H100' and 'H100x8' -> ('H100', 8). The name
    is returned as given (not resolved)."""
    match = _GPU_COUNT.match(text)
    if match is None:
        if ":" in text:
            raise UsageError(
                _("GPU request {text} is not NAME or NAME:COUNT").format(text=repr(text)),
                fix=_("write e.g. --gpu H100:8 for eight H100s per instance"),
            )
        return _count_written_with_x(text.strip())
    count = float(match.group("count"))
    if count <= 0 or count != int(count):
        raise UsageError(
            _("GPU count in {text} must be a whole number above 0").format(text=repr(text)),
            fix=_("write e.g. --gpu H100:8"),
        )
    return match.group("name"), int(count)


def _count_written_with_x(text: str) -> tuple[str, int | None]:
    """'8x H100' / '8xH100' / 'H100x8' (as providers name instances) -> ('H100', 8), but only when the
    text is no GPU name itself and the rest is one ('RTX4090' stays a name, never 'RT' times 4090)."""
    if canonical_gpu_name(text) is None:
        for pattern in (_COUNT_FIRST, _COUNT_LAST):
            found = pattern.fullmatch(text)
            if found and int(found["count"]) > 0 and canonical_gpu_name(found["name"]) is not None:
                return found["name"], int(found["count"])
    return text, None


@cache
def _instance_networks() -> dict[tuple[str, str], tuple[float, str]]:
    out: dict[tuple[str, str], tuple[float, str]] = {}
    for row in _read_csv("instance-network.csv"):
        gbps = _number(row.get("network_gbps"))
        if gbps is not None and gbps > 0:
            out[(row["provider"].strip().lower(), row["instance_type"].strip())] = (
                gbps,
                row["network_as_listed"],
            )
    return out


def instance_network_gbps(provider: str, instance_type: str) -> tuple[float, str] | None:
    """An instance's network bandwidth (Gb/s, all NICs) and the text it is listed as ("3200 Gbps EFAv2",
    "Up to 25 Gigabit": a burst ceiling), from ``instance-network.csv``; None where the catalog does not say.

    For `estimate(..., network_gbps=...)` when the instance is known (plan's offers)."""
    return _instance_networks().get((provider.strip().lower(), instance_type.strip()))


def canonical_gpu_name_from_driver(product: str) -> str | None:
    """The canonical name of a GPU as its driver names it (nvidia-smi, NVML, torch.cuda.get_device_name),
    or None: 'NVIDIA A100-SXM4-80GB' -> 'A100-80GB', 'NVIDIA GeForce RTX 4090' -> 'RTX4090', 'Tesla T4' ->
    'T4'. Where the name itself is no alias, the vendor and brand words and the form factor are dropped
    first (the words the aliases use); `bench` and `setup` name the GPU a machine has this way."""
    return canonical_gpu_name(product) or canonical_gpu_name(_short_product_name(product))


def _short_product_name(product: str) -> str:
    """'NVIDIA A100-SXM4-80GB' -> 'A100 80GB', 'Tesla T4' -> 'T4'."""
    text = re.sub(r"^(NVIDIA\s+)?(Tesla\s+|GeForce\s+|Quadro\s+)?", "", product.strip(), flags=re.I)
    return re.sub(r"-(SXM\d?|PCIE)-?", " ", text, flags=re.I).replace("-", " ")
