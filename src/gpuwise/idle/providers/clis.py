"""Providers stopped through their own CLI (credentials from that CLI's own config; the binary is looked up
on the runner's PATH, so tests put recording stubs first): the big clouds' (`gpuwise.idle.actions.stop_argv`),
Jarvislabs and Nebius, plus `shutdown -h now` and the user's own command.

* Jarvislabs: `jl pause <machine_id> --yes` (the `jarvislabs` package's CLI; https://docs.jarvislabs.ai/cli).
  A paused instance is not billed for its GPU; its storage is.
* Nebius AI Cloud: `nebius compute instance stop --id <id>` (https://docs.nebius.com/compute/virtual-machines/stop-start).
  A stopped VM is not charged; its disks are (https://docs.nebius.com/legal/specific-terms/compute). A
  shutdown from inside is treated as a failure: the VM is restarted and billed (same page as the CLI).
"""

from __future__ import annotations

from collections.abc import Mapping

from gpuwise.idle.actions import SHUTDOWN_ARGV, stop_argv
from gpuwise.idle.providers.base import StopContext, StopStep, cli_step
from gpuwise.locale import _

# Whether `shutdown -h now` from inside the guest ends the compute billing, where a source says so.
# AWS: instance-initiated shutdown stops an EBS-backed instance by default (EC2 user guide, "Change the
# instance initiated shutdown behavior"); GCP: a guest shutdown moves the VM to TERMINATED, which is not
# billed (Compute Engine docs, "Stop and start a VM"); Azure: the VM stays allocated and billed (Azure docs,
# "States and billing status of Azure Virtual Machines"); Nebius and Hyperstack: see their modules.
SHUTDOWN_STOPS_BILLING: dict[str, bool] = {
    "aws": True,
    "gcp": True,
    "azure": False,
    "nebius": False,
    "hyperstack": False,
}


def big_cloud_step(provider: str, ident: Mapping[str, str], ctx: StopContext) -> StopStep:
    return cli_step(provider, stop_argv(provider, ident), ctx)


def jarvislabs_step(ident: Mapping[str, str], ctx: StopContext) -> StopStep:
    return cli_step("jarvislabs", ["jl", "pause", ident["instance_id"], "--yes"], ctx)


def nebius_step(ident: Mapping[str, str], ctx: StopContext) -> StopStep:
    return cli_step("nebius", ["nebius", "compute", "instance", "stop", "--id", ident["instance_id"]], ctx)


def shutdown_step(ctx: StopContext, provider: str | None) -> StopStep:
    """`shutdown -h now`, with a loud warning unless a source says it ends the billing on `provider`."""
    stops = SHUTDOWN_STOPS_BILLING.get(provider or "")
    where = (
        _("on {provider}").format(provider=provider)
        if provider
        else _("on a machine whose provider was not identified")
    )
    warning = ""
    if stops is False:
        warning = _("shutdown -h now does NOT end the billing {where}: the machine stays allocated").format(
            where=where
        )
    elif stops is None:
        warning = _(
            "shutdown -h now is not known to end the billing {where}; check the provider's console"
        ).format(where=where)
    step = cli_step("shutdown", list(SHUTDOWN_ARGV), ctx)
    step.stops_billing, step.warning = stops, warning
    return step


def command_step(command: str, ctx: StopContext) -> StopStep:
    """The user's own stop command through /bin/sh; named, never shown (it may carry credentials)."""
    step = cli_step("command", ["/bin/sh", "-c", command], ctx, shown="the configured stop command")
    step.stops_billing = None
    return step
