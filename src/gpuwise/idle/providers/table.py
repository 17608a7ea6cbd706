"""What each stop action does to the bill and to the disk, how gpuwise finds the instance, and what it needs:
the data behind `gpuwise idle providers`. Every line restates the provider's own documentation, cited in the
provider's module (or in `clis`); "not documented" is said where no source was found. The sentences are
marked with N_(): the JSON keeps them in English, `gpuwise idle providers` shows them in the user's language.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from gpuwise.locale import N_


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


_ID = '[idle] action = "{a}" and [idle] instance_id'

PROVIDER_ACTIONS: tuple[ProviderAction, ...] = (
    ProviderAction(
        "runpod",
        "REST POST /v1/pods/{id}/stop",
        True,
        True,
        N_("GPU billing ends; the volume disk is billed as storage"),
        N_("volume disk kept; container disk reset"),
        N_("RUNPOD_POD_ID (set in every pod)"),
        N_("RUNPOD_API_KEY (set in every pod) or ~/.runpod/config.toml"),
        "runpod",
    ),
    ProviderAction(
        "vast",
        "PUT /api/v0/instances/{id}/ state=stopped",
        True,
        True,
        N_("GPU billing ends; storage stays billed"),
        N_("kept (restart needs the host's GPUs free)"),
        N_("VAST_CONTAINERLABEL (set in every instance), or CONTAINER_ID beside VAST_ variables"),
        N_("VAST_API_KEY, CONTAINER_API_KEY or ~/.config/vastai/vast_api_key"),
        "vast",
    ),
    ProviderAction(
        "lambda",
        N_("POST /api/v1/instance-operations/terminate (no stop exists)"),
        True,
        False,
        N_("billing ends: the instance is TERMINATED"),
        N_("LOST, except a persistent filesystem"),
        _ID.format(a="lambda"),
        N_("allow_terminate = true; LAMBDA_API_KEY or ~/.lambda_cloud/lambda_keys"),
        "lambda",
    ),
    ProviderAction(
        "paperspace",
        "PATCH /v1/machines/{id}/stop",
        True,
        True,
        N_("compute billing ends; storage stays billed"),
        N_("kept"),
        _ID.format(a="paperspace"),
        "PAPERSPACE_API_KEY",
        "paperspace",
    ),
    ProviderAction(
        "jarvislabs",
        "jl pause <id> --yes",
        True,
        True,
        N_("GPU billing ends; storage stays billed"),
        N_("kept"),
        _ID.format(a="jarvislabs"),
        N_("the jl CLI (pip install jarvislabs) with JL_API_KEY or `jl setup`"),
        "jarvislabs",
    ),
    ProviderAction(
        "nebius",
        "nebius compute instance stop --id <id>",
        True,
        True,
        N_("VM billing ends; disks stay billed (a shutdown from inside keeps billing)"),
        N_("kept"),
        _ID.format(a="nebius"),
        N_("the nebius CLI, configured (nebius profile create)"),
        "nebius",
    ),
    ProviderAction(
        "hyperstack",
        "GET /v1/core/virtual-machines/{id}/hibernate",
        True,
        True,
        N_("hibernated: only the saved root disk and public IP are billed (a stopped VM is billed in full)"),
        N_("root disk saved; the ephemeral disk is lost"),
        _ID.format(a="hyperstack"),
        "HYPERSTACK_API_KEY",
        "hyperstack",
    ),
    ProviderAction(
        "tencent",
        "CVM StopInstances, StoppedMode=STOP_CHARGING",
        True,
        True,
        N_("CPU, memory and GPU billing end on pay-as-you-go instances that support it; disks stay billed"),
        N_("kept"),
        N_("the cloud's metadata service (metadata.tencentyun.com)"),
        N_("TENCENTCLOUD_SECRET_ID/TENCENTCLOUD_SECRET_KEY or ~/.tencentcloud/credentials"),
        "tencent",
    ),
    ProviderAction(
        "huawei",
        "ECS batch stop (os-stop, SOFT)",
        True,
        True,
        N_(
            "vCPU and memory billing end for pay-per-use flavors without local disks or FPGAs; "
            "disks stay billed"
        ),
        N_("kept"),
        N_("the cloud's metadata service (OpenStack meta_data.json)"),
        "HUAWEICLOUD_SDK_AK/HUAWEICLOUD_SDK_SK",
        "huawei",
    ),
    ProviderAction(
        "aws",
        "aws ec2 stop-instances",
        True,
        True,
        N_("instance billing ends; EBS stays billed"),
        N_("EBS kept; instance store lost"),
        N_("the cloud's metadata service (IMDSv2)"),
        N_("the aws CLI, configured"),
        "aws",
    ),
    ProviderAction(
        "gcp",
        "gcloud compute instances stop",
        True,
        True,
        N_("VM billing ends; disks stay billed"),
        N_("persistent disks kept; local SSD lost"),
        N_("the cloud's metadata service"),
        N_("the gcloud CLI, configured"),
        "gcp",
    ),
    ProviderAction(
        "azure",
        "az vm deallocate",
        True,
        True,
        N_("compute billing ends (deallocated, not just stopped)"),
        N_("managed disks kept; the temporary disk is lost"),
        N_("the cloud's metadata service (IMDS)"),
        N_("the az CLI, logged in"),
        "azure",
    ),
    ProviderAction(
        "aliyun",
        "aliyun ecs StopInstance --StoppedMode StopCharging",
        True,
        True,
        N_("vCPU, memory and GPU billing end on pay-as-you-go instances that support it; disks stay billed"),
        N_("kept"),
        N_("the cloud's metadata service"),
        N_("the aliyun CLI, configured"),
        "alibaba",
    ),
    ProviderAction(
        "command",
        N_("your own command ([idle] command)"),
        None,
        None,
        N_("whatever your command does"),
        N_("whatever your command does"),
        N_('never (chosen with action = "command")'),
        "[idle] command",
        "command",
    ),
    ProviderAction(
        "shutdown",
        "shutdown -h now",
        None,
        True,
        N_(
            "ends compute billing on AWS and GCP only; keeps billing on Azure, Nebius, Hyperstack; not "
            "documented elsewhere (a warning says so before it runs)"
        ),
        N_("kept"),
        N_("the fallback when no provider is identified"),
        N_("root (or a sudo rule for shutdown)"),
        "shutdown",
    ),
)
