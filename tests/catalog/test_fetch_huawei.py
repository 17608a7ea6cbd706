"""`catalog fetch huawei` against recorded IAM, ECS and BSS responses (tests/fixtures/cn_clouds/huawei,
PROVENANCE.md): GPU flavors on sale per zone, priced by the on-demand inquiry."""

from __future__ import annotations

from datetime import date
from typing import ClassVar

import pytest
from fetch_fakes import RecordedApi

from gpuwise.catalog.fetch import huawei
from gpuwise.catalog.fetch.common import ApiError
from gpuwise.errors import ConfigError, NotFoundError

TODAY = date(2026, 12, 2)


def test_gpu_flavors_on_sale_per_zone_with_their_inquired_price() -> None:
    api = RecordedApi("huawei")
    result = huawei.fetch(api, ["cn-north-4"], today=TODAY)
    rows = {(r.instance_type, r.zone): r for r in result.rows}
    # p2v is abandoned, g6 sold out, cn-north-4b sold out for pi2, s6 has no GPU
    assert sorted(rows) == [
        ("p2s.2xlarge.8", "cn-north-4a"),
        ("pi2.2xlarge.4", "cn-north-4a"),
        ("pi2.2xlarge.4", "cn-north-4c"),
    ]
    t4 = rows[("pi2.2xlarge.4", "cn-north-4a")]
    assert (t4.gpu, t4.gpu_count, t4.gpu_memory_gib, t4.vcpus, t4.memory_gib) == ("T4", 1, 16, 8, 32)
    assert (t4.price_per_hour, t4.spot_price_per_hour, t4.currency) == (6.68, None, "CNY")
    assert rows[("p2s.2xlarge.8", "cn-north-4a")].gpu == "V100-32GB"
    assert rows[("p2s.2xlarge.8", "cn-north-4a")].price_per_hour == 17.47
    [(reason, n)] = result.skipped.items()
    assert n == 1 and "Kunlun-XPU" in reason  # never guessed


def test_the_inquiry_names_each_flavor_as_a_linux_vm_for_one_hour_in_the_regions_project() -> None:
    api = RecordedApi("huawei")
    huawei.fetch(api, ["cn-north-4"], today=TODAY)
    [params] = [p for a, _, p in api.calls if a == "ListOnDemandResourceRatings"]
    assert params["project_id"] == "06a0e8b5a900f4b22f0cc00d6e3c****"
    assert [p["resource_spec"] for p in params["product_infos"]] == [
        "pi2.2xlarge.4.linux",
        "p2s.2xlarge.8.linux",
    ]
    assert {(p["usage_value"], p["usage_measure_id"], p["region"]) for p in params["product_infos"]} == {
        (1, 4, "cn-north-4")
    }


def test_regions_are_the_projects_named_after_regions() -> None:
    with pytest.raises(NotFoundError, match="Did you mean 'cn-north-4'") as info:
        huawei.fetch(RecordedApi("huawei"), ["cn-north-9"], today=TODAY)
    assert "cn-north-4_dev" not in str(info.value.matches)


def test_a_region_without_answers_is_a_warning() -> None:
    result = huawei.fetch(RecordedApi("huawei"), ["cn-north-4", "cn-east-3"], today=TODAY)
    assert result.regions == ("cn-north-4",)
    assert result.warnings[0].startswith("cn-east-3: not fetched")


def test_a_refused_signature_is_bad_input() -> None:
    api = RecordedApi(
        "huawei",
        fail={("KeystoneListAuthProjects", None): ApiError("APIGW.0301", "Incorrect IAM authentication")},
    )
    with pytest.raises(ConfigError, match="refused the credentials"):
        huawei.fetch(api, [], today=TODAY)


def test_sdk_models_become_the_apis_json_keys() -> None:
    class Spec:
        openapi_types: ClassVar[dict[str, str]] = {"ecsperformancetype": "str"}
        attribute_map: ClassVar[dict[str, str]] = {"ecsperformancetype": "ecs:performancetype"}
        ecsperformancetype = "gpu"

    class Flavor:
        openapi_types: ClassVar[dict[str, str]] = {"name": "str", "os_extra_specs": "FlavorExtraSpec"}
        attribute_map: ClassVar[dict[str, str]] = {"name": "name", "os_extra_specs": "os_extra_specs"}
        name = "pi2.2xlarge.4"
        os_extra_specs = Spec()

    assert huawei._json_keys({"flavors": [Flavor()]}) == {
        "flavors": [{"name": "pi2.2xlarge.4", "os_extra_specs": {"ecs:performancetype": "gpu"}}]
    }
