"""What every cloud's fetch shares: the API interface, the row model, the region loop, GPU names, credentials
and the catalog file the fetch writes.

The file is SkyPilot's vms.csv schema plus two columns ``gpuwise catalog import`` reads: ``Currency`` (the
prices' ISO 4217 code; the Chinese clouds bill China-site accounts in CNY) and ``PriceDate`` (the day the
API was asked, so the imported prices carry their own date instead of the import's).

Pure apart from reading the environment handed in; must not import the CLI.
"""

from __future__ import annotations

import csv
import io
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date
from typing import Any, Protocol

from gpuwise.catalog.specs import canonical_gpu_name
from gpuwise.errors import CatalogError, ConfigError, NotFoundError
from gpuwise.locale import _

CSV_COLUMNS = (
    "InstanceType",
    "AcceleratorName",
    "AcceleratorCount",
    "vCPUs",
    "MemoryGiB",
    "Price",
    "SpotPrice",
    "Region",
    "AvailabilityZone",
    "GpuInfo",
    "Currency",
    "PriceDate",
)


_MESSAGE_CHARS = 300


class ApiError(Exception):
    """One failed API call, translated from the SDK's exception by the adapter.

    ``auth`` marks a rejected credential or a missing permission: no other region would answer either, so
    the fetch stops there (bad input, exit 2) instead of warning once per region.
    """

    def __init__(self, code: str, message: str, *, auth: bool = False) -> None:
        # one line, bounded: an SDK may put a whole response body in its message (a proxy's HTML page
        # behind a non-200 answer), and this text becomes one warning line per region
        message = " ".join(message.split())
        if len(message) > _MESSAGE_CHARS:
            message = message[: _MESSAGE_CHARS - 1] + "…"
        super().__init__(f"{code}: {message}" if code else message)
        self.code = code
        self.auth = auth


class Api(Protocol):
    """One cloud's API as the fetch sees it: an action, the region it is asked in (None: the cloud's default
    endpoint) and its parameters in, the documented JSON response out. Raises :class:`ApiError`."""

    def call(self, action: str, region: str | None, params: Mapping[str, Any]) -> Mapping[str, Any]: ...


@dataclass(frozen=True)
class FetchedRow:
    """One GPU instance type in one region (or zone) with its hourly prices in ``currency``."""

    instance_type: str
    gpu: str  # canonical GPU name
    gpu_count: float
    gpu_memory_gib: float | None  # per GPU, as the API says (None: not said)
    vcpus: float | None
    memory_gib: float | None
    price_per_hour: float | None  # on-demand (pay-as-you-go)
    spot_price_per_hour: float | None
    currency: str
    region: str
    zone: str | None


@dataclass(frozen=True)
class FetchResult:
    """A whole fetch: its rows, the regions that answered and what went wrong elsewhere."""

    provider: str
    price_date: date
    rows: tuple[FetchedRow, ...]
    regions: tuple[str, ...]  # regions that answered
    warnings: tuple[str, ...] = ()
    skipped: dict[str, int] = field(default_factory=dict)  # reason -> instance types left out


class FetchWarnings:
    """Warnings and skip counts a fetch collects as it goes (one line per distinct warning)."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.skipped: Counter[str] = Counter()

    def warn(self, line: str) -> None:
        if line not in self.lines:
            self.lines.append(line)

    def skip(self, reason: str) -> None:
        self.skipped[reason] += 1


# ---------------------------------------------------------------- credentials


def credentials(env: Mapping[str, str], names: tuple[str, str], *, cloud: str, doc: str) -> tuple[str, str]:
    """The key id and secret from the documented environment variables; bad input when either is unset.
    The values are never put in a message."""
    missing = [n for n in names if not env.get(n, "").strip()]
    if missing:
        message = (
            _("No {cloud} credentials: {names} is not set")
            if len(missing) == 1
            else _("No {cloud} credentials: {names} are not set")
        )
        raise ConfigError(
            message.format(cloud=cloud, names=_(" and ").join(missing)),
            why=_("`gpuwise catalog fetch` asks {cloud}'s API with your own account's access key").format(
                cloud=cloud
            ),
            fix=_("export {first}=… and {second}=… (an access key with read-only access; see {doc})").format(
                first=names[0], second=names[1], doc=doc
            ),
        )
    return env[names[0]].strip(), env[names[1]].strip()


# ---------------------------------------------------------------- regions


def check_regions(asked: Iterable[str], known: Iterable[str], *, cloud: str) -> list[str]:
    """The regions to fetch: all the cloud lists when none is asked, else the asked ones, each of which must
    be a region the cloud lists (an unknown one is bad input with close matches, never an empty fetch)."""
    known_list = sorted({k for k in known if k})
    wanted = [r.strip() for r in asked]  # an empty one is an unknown region, never "every region"
    if not wanted:
        return known_list
    for region in wanted:
        if region not in known_list:
            raise NotFoundError(
                _("region"),
                region,
                known_list,
                why=_("{cloud}'s region list (asked just now with your credentials) does not have it").format(
                    cloud=cloud
                ),
                fix=_("use a region id as the cloud spells it: {names}").format(
                    names=", ".join(known_list[:12]) + (" …" if len(known_list) > 12 else "")
                ),
            )
    return list(dict.fromkeys(wanted))


def for_each_region(
    regions: list[str],
    one: Callable[[str], list[FetchedRow]],
    warnings: FetchWarnings,
    *,
    cloud: str,
    provider: str,
    today: date,
) -> FetchResult:
    """The rows of every region, the regions that answered and the warnings, as `provider`'s result of
    `today`. A region whose calls fail is a warning and the rest go on; a rejected credential stops the fetch
    (bad input); no region answering is an error."""
    rows: list[FetchedRow] = []
    answered: list[str] = []
    for region in regions:
        try:
            rows.extend(one(region))
        except ApiError as exc:
            if exc.auth:
                raise auth_error(cloud, exc) from exc
            warnings.warn(f"{region}: not fetched ({exc})")
            continue
        answered.append(region)
    if not answered:
        raise CatalogError(
            _("No {cloud} region answered; nothing was written").format(cloud=cloud),
            why="; ".join(warnings.lines[:3]) or _("no region to ask"),
            fix=_("check the network and the regions asked (--region), then run the fetch again"),
        )
    return FetchResult(
        provider=provider,
        price_date=today,
        rows=tuple(rows),
        regions=tuple(answered),
        warnings=tuple(warnings.lines),
        skipped=dict(warnings.skipped),
    )


def api_failure(cloud: str, exc: ApiError) -> ConfigError | CatalogError:
    """A call outside the region loop (the region or type list) failed: the whole fetch fails."""
    if exc.auth:
        return auth_error(cloud, exc)
    return CatalogError(
        _("{cloud}'s API failed: {error}; nothing was written").format(cloud=cloud, error=exc),
        fix=_("check the network and run the fetch again (a busy API answers later)"),
    )


def auth_error(cloud: str, exc: ApiError) -> ConfigError:
    return ConfigError(
        _("{cloud} refused the credentials ({code})").format(cloud=cloud, code=exc.code or exc),
        why=_("the access key is wrong, disabled, or lacks read access to the instance and price APIs"),
        fix=_(
            "check the key in the environment and grant it read-only access to {cloud}'s compute API"
        ).format(cloud=cloud),
    )


# ---------------------------------------------------------------- GPU names


_VENDOR_PREFIXES = ("nvidia ", "nvidia_", "nvidia-", "tesla ")


def gpu_from_name(reported: str) -> str | None:
    """The canonical GPU for a name as a cloud writes it (``NVIDIA A10``, ``NVIDIA_A100``, ``Tesla T4``)."""
    name = reported.strip()
    found = canonical_gpu_name(name)
    lowered = name.lower()
    while found is None and lowered.startswith(_VENDOR_PREFIXES):
        for prefix in _VENDOR_PREFIXES:
            if lowered.startswith(prefix):
                name = name[len(prefix) :].strip()
                lowered = name.lower()
        found = canonical_gpu_name(name)
    return found


def with_memory_variant(gpu: str, per_gpu_gib: float | None) -> str:
    """An A100 row whose API says 80 GB per GPU is the 80 GB card (the 40 GB one is ``A100``)."""
    if gpu == "A100" and per_gpu_gib is not None and per_gpu_gib >= 70:
        return "A100-80GB"
    if gpu == "V100" and per_gpu_gib is not None and per_gpu_gib >= 30:
        return "V100-32GB"
    return gpu


# ---------------------------------------------------------------- the file


def _num(value: float | None) -> str:
    if value is None:
        return ""
    return f"{value:g}" if value == int(value) else f"{value:.6g}"


def _gpu_info(row: FetchedRow) -> str:
    """SkyPilot's GpuInfo cell, so the import reads the per-GPU memory the API gave."""
    if row.gpu_memory_gib is None:
        return ""
    mib = round(row.gpu_memory_gib * 1024)
    return (
        f"{{'Gpus': [{{'Name': '{row.gpu}', 'Count': {_num(row.gpu_count)}, "
        f"'MemoryInfo': {{'SizeInMiB': {mib}}}}}], 'TotalGpuMemoryInMiB': {round(mib * row.gpu_count)}}}"
    )


def to_csv(result: FetchResult) -> str:
    """The catalog file: one row per instance type and place, sorted for stable diffs."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for row in sorted(result.rows, key=lambda r: (r.region, r.zone or "", r.instance_type)):
        writer.writerow(
            [
                row.instance_type,
                row.gpu,
                _num(row.gpu_count),
                _num(row.vcpus),
                _num(row.memory_gib),
                _num(row.price_per_hour),
                _num(row.spot_price_per_hour),
                row.region,
                row.zone or "",
                _gpu_info(row),
                row.currency,
                result.price_date.isoformat(),
            ]
        )
    return out.getvalue()


def number(value: Any) -> float | None:
    """A JSON number (or numeric string) as a float; None for anything else, booleans included."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def items(value: Any, *path: str) -> list[Mapping[str, Any]]:
    """The list at ``path`` inside a JSON object (the clouds wrap lists: ``{"Regions": {"Region": [...]}}``);
    an absent or malformed level is an empty list."""
    for key in path:
        value = value.get(key) if isinstance(value, Mapping) else None
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []
