"""The Chinese clouds' instance-family table maps instance types to GPUs of the spec table, with sources."""

from __future__ import annotations

import pytest

from gpuwise.catalog.cn_families import PROVIDERS, families, family_token, gpu_for
from gpuwise.catalog.specs import canonical_gpu_names
from gpuwise.errors import UsageError


def test_every_row_names_a_known_gpu_or_says_why_not() -> None:
    known = set(canonical_gpu_names())
    for row in families():
        assert row.provider in PROVIDERS
        assert row.source, row
        assert row.gpu_count_rule == "api", row
        if row.gpu is None:
            assert "unmapped" in row.notes or "not confirmed" in row.notes, row
        else:
            assert row.gpu in known, row


def test_families_are_unique_per_provider() -> None:
    keys = [(f.provider, f.family.lower()) for f in families()]
    assert len(keys) == len(set(keys))


@pytest.mark.parametrize(
    ("provider", "instance_type", "token", "gpu"),
    [
        ("aliyun", "ecs.gn7i-c8g1.2xlarge", "gn7i", "A10"),
        ("aliyun", "ecs.gn7e-c16g1.4xlarge", "gn7e", "A100-80GB"),
        ("aliyun", "ecs.gn7-c12g1.3xlarge", "gn7", "A100"),
        ("aliyun", "ecs.gn8is-8x.32xlarge", "gn8is", "L20"),
        ("aliyun", "ecs.ebmgn7ix.32xlarge", "ebmgn7ix", "A10"),
        ("aliyun", "ecs.gn6i-c4g1.xlarge", "gn6i", "T4"),
        ("tencent", "GN7.2XLARGE32", "gn7", "T4"),
        ("tencent", "GT4.41XLARGE948", "gt4", "A100"),
        ("tencent", "GNV4.4XLARGE60", "gnv4", "A10"),
        ("huawei", "pi2.2xlarge.4", "pi2", "T4"),
        ("huawei", "p2v.2xlarge.8", "p2v", "V100"),
    ],
)
def test_instance_types_map_to_their_gpu(provider: str, instance_type: str, token: str, gpu: str) -> None:
    assert family_token(provider, instance_type) == token
    found, why = gpu_for(provider, instance_type)
    assert found == gpu
    assert gpu in why


def test_an_unconfirmed_family_stays_unmapped_with_its_reason() -> None:
    found, why = gpu_for("aliyun", "ecs.gn8v.4xlarge")
    assert found is None
    assert "not confirmed" in why


def test_an_unknown_family_says_so() -> None:
    found, why = gpu_for("aliyun", "ecs.g7.large")
    assert found is None
    assert "'g7' is not in" in why


def test_an_unknown_provider_is_refused() -> None:
    with pytest.raises(UsageError, match="unknown Chinese cloud"):
        gpu_for("aws", "p4d.24xlarge")
