"""What each stop action does to the bill and to the disk, how gpuwise finds the instance, and what it needs:
the data behind `gpuwise idle providers`. Every line restates the provider's own documentation, cited in the
provider's module (or in `clis`); "not documented" is said where no source was found.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class ProviderAction:
    provider: str  # the catalog's provider id, or "command" / "shutdown"
    action: str  # what gpuwise calls
    stops_billing: bool | None  # the compute (GPU) billing; None: depends on the provider
    keeps_disk: bool | None
    bill: str
    disk: str
    detected_by: str
    needs: str
    config_action: str  # the `[idle] action` value that picks it

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


_META = "the cloud's metadata service"
_ID = '[idle] action = "{a}" and [idle] instance_id'

PROVIDER_ACTIONS: tuple[ProviderAction, ...] = (
    ProviderAction(
        "runpod",
        "REST POST /v1/pods/{id}/stop",
        True,
        True,
        "GPU billing ends; the volume disk is billed as storage",
        "volume disk kept; container disk reset",
        "RUNPOD_POD_ID (set in every pod)",
        "RUNPOD_API_KEY (set in every pod) or ~/.runpod/config.toml",
        "runpod",
    ),
    ProviderAction(
        "vast",
        "PUT /api/v0/instances/{id}/ state=stopped",
        True,
        True,
        "GPU billing ends; storage stays billed",
        "kept (restart needs the host's GPUs free)",
        "VAST_CONTAINERLABEL (set in every instance), or CONTAINER_ID beside VAST_ variables",
        "VAST_API_KEY, CONTAINER_API_KEY or ~/.config/vastai/vast_api_key",
        "vast",
    ),
    ProviderAction(
        "lambda",
        "POST /api/v1/instance-operations/terminate (no stop exists)",
        True,
        False,
        "billing ends: the instance is TERMINATED",
        "LOST, except a persistent filesystem",
        _ID.format(a="lambda"),
        "allow_terminate = true; LAMBDA_API_KEY or ~/.lambda_cloud/lambda_keys",
        "lambda",
    ),
    ProviderAction(
        "paperspace",
        "PATCH /v1/machines/{id}/stop",
        True,
        True,
        "compute billing ends; storage stays billed",
        "kept",
        _ID.format(a="paperspace"),
        "PAPERSPACE_API_KEY",
        "paperspace",
    ),
    ProviderAction(
        "jarvislabs",
        "jl pause <id> --yes",
        True,
        True,
        "GPU billing ends; storage stays billed",
        "kept",
        _ID.format(a="jarvislabs"),
        "the jl CLI (pip install jarvislabs) with JL_API_KEY or `jl setup`",
        "jarvislabs",
    ),
    ProviderAction(
        "nebius",
        "nebius compute instance stop --id <id>",
        True,
        True,
        "VM billing ends; disks stay billed (a shutdown from inside keeps billing)",
        "kept",
        _ID.format(a="nebius"),
        "the nebius CLI, configured (nebius profile create)",
        "nebius",
    ),
    ProviderAction(
        "hyperstack",
        "GET /v1/core/virtual-machines/{id}/hibernate",
        True,
        True,
        "hibernated: only the saved root disk and public IP are billed (a stopped VM is billed in full)",
        "root disk saved; the ephemeral disk is lost",
        _ID.format(a="hyperstack"),
        "HYPERSTACK_API_KEY",
        "hyperstack",
    ),
    ProviderAction(
        "tencent",
        "CVM StopInstances, StoppedMode=STOP_CHARGING",
        True,
        True,
        "CPU, memory and GPU billing end on pay-as-you-go instances that support it; disks stay billed",
        "kept",
        _META + " (metadata.tencentyun.com)",
        "TENCENTCLOUD_SECRET_ID/TENCENTCLOUD_SECRET_KEY or ~/.tencentcloud/credentials",
        "tencent",
    ),
    ProviderAction(
        "huawei",
        "ECS batch stop (os-stop, SOFT)",
        True,
        True,
        "vCPU and memory billing end for pay-per-use flavors without local disks or FPGAs; disks stay billed",
        "kept",
        _META + " (OpenStack meta_data.json)",
        "HUAWEICLOUD_SDK_AK/HUAWEICLOUD_SDK_SK",
        "huawei",
    ),
    ProviderAction(
        "aws",
        "aws ec2 stop-instances",
        True,
        True,
        "instance billing ends; EBS stays billed",
        "EBS kept; instance store lost",
        _META + " (IMDSv2)",
        "the aws CLI, configured",
        "aws",
    ),
    ProviderAction(
        "gcp",
        "gcloud compute instances stop",
        True,
        True,
        "VM billing ends; disks stay billed",
        "persistent disks kept; local SSD lost",
        _META,
        "the gcloud CLI, configured",
        "gcp",
    ),
    ProviderAction(
        "azure",
        "az vm deallocate",
        True,
        True,
        "compute billing ends (deallocated, not just stopped)",
        "managed disks kept; the temporary disk is lost",
        _META + " (IMDS)",
        "the az CLI, logged in",
        "azure",
    ),
    ProviderAction(
        "aliyun",
        "aliyun ecs StopInstance --StoppedMode StopCharging",
        True,
        True,
        "vCPU, memory and GPU billing end on pay-as-you-go instances that support it; disks stay billed",
        "kept",
        _META,
        "the aliyun CLI, configured",
        "alibaba",
    ),
    ProviderAction(
        "command",
        "your own command ([idle] command)",
        None,
        None,
        "whatever your command does",
        "whatever your command does",
        'never (chosen with action = "command")',
        "[idle] command",
        "command",
    ),
    ProviderAction(
        "shutdown",
        "shutdown -h now",
        None,
        True,
        "ends compute billing on AWS and GCP only; keeps billing on Azure, Nebius, Hyperstack; not "
        "documented elsewhere (a warning says so before it runs)",
        "kept",
        "the fallback when no provider is identified",
        "root (or a sudo rule for shutdown)",
        "shutdown",
    ),
)
