"""Chinese clouds' GPU instance families -> the GPU they carry (``data/cn-instance-families.csv``).

The price APIs of Alibaba Cloud (aliyun), Tencent Cloud, Huawei Cloud and Baidu AI Cloud list instance types
(``ecs.gn7i-c8g1.2xlarge``, ``GN7.2XLARGE32``, ``pi2.2xlarge.4``), not GPUs. This table, one row per family
with its source, says which GPU a family carries so that imported prices map to the GPU spec table. A row
whose ``gpu`` is empty is a family we know of but whose GPU could not be confirmed (or has no spec row): its
offers stay unmapped, with the row's note as the reason, rather than guessed.

Matching: the family is the type's first dot-separated token (after Alibaba's ``ecs.`` product prefix), with
Alibaba's vCPU:GPU ratio suffix (``-c8g1``, ``-8x``) removed; compared case-insensitively and exactly (``gn7``
is not ``gn7i``). The GPU count is the price API's own per-type figure (``gpu_count_rule`` = ``api``).

Reads only package data; standard library and ``gpuwise.errors`` only.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources

from gpuwise.errors import UsageError
from gpuwise.locale import _

PROVIDERS = ("aliyun", "tencent", "huawei", "baidu")
# Alibaba writes the vCPU:GPU ratio or a GPU-count marker after a dash: gn7i-c8g1, gn8is-8x, gn7e-c16g1
_RATIO_SUFFIX = re.compile(r"-[a-z0-9]+$")


@dataclass(frozen=True)
class Family:
    """One instance family and its GPU (None: not confirmed, offers left unmapped; ``notes`` says why)."""

    provider: str
    family: str
    gpu: str | None
    gpu_count_rule: str
    notes: str
    source: str


@cache
def families() -> tuple[Family, ...]:
    """Every row of the bundled table, in file order."""
    text = (
        resources.files("gpuwise.catalog")
        .joinpath("data", "cn-instance-families.csv")
        .read_text(encoding="utf-8")
    )
    rows = csv.DictReader(io.StringIO(text, newline=""))
    return tuple(
        Family(
            provider=row["provider"].strip(),
            family=row["family_or_type_prefix"].strip(),
            gpu=row["gpu"].strip() or None,
            gpu_count_rule=row["gpu_count_rule"].strip(),
            notes=row["notes"].strip(),
            source=row["source"].strip(),
        )
        for row in rows
    )


def family_token(provider: str, instance_type: str) -> str:
    """The family part of an instance type, lower-cased: 'ecs.gn7i-c8g1.2xlarge' -> 'gn7i'."""
    name = instance_type.strip().lower()
    if provider == "aliyun" and name.startswith("ecs."):
        name = name[4:]
    head = name.split(".", 1)[0]
    if provider == "aliyun":
        head = _RATIO_SUFFIX.sub("", head)
    return head


@cache
def _index() -> dict[tuple[str, str], Family]:
    return {(f.provider, f.family.lower()): f for f in families()}


def family_for(provider: str, instance_type: str) -> Family | None:
    """The table's row for this instance type (None: the family is not in the table)."""
    if provider not in PROVIDERS:
        raise UsageError(
            _("unknown Chinese cloud {name}").format(name=repr(provider)),
            why=_("the instance-family table covers only these providers"),
            fix=_("use one of: {names}").format(names=", ".join(PROVIDERS)),
        )
    return _index().get((provider, family_token(provider, instance_type)))


def gpu_for(provider: str, instance_type: str) -> tuple[str | None, str]:
    """(canonical GPU or None, why/where from): the reason is shown with an unmapped offer."""
    row = family_for(provider, instance_type)
    if row is None:
        token = family_token(provider, instance_type)
        return None, f"{provider} family {token!r} is not in gpuwise's instance-family table"
    if row.gpu is None:
        return None, f"{provider} {row.family}: {row.notes}"
    return row.gpu, f"{provider} {row.family} = {row.gpu} ({row.source})"
