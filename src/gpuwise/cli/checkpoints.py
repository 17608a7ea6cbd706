"""`gpuwise checkpoints list|verify|pull`: what `gpuwise run --sync` uploaded, read back.

Top-level imports stay cheap (typer and the standard library); the run room and fsspec are imported inside
the commands. The storage options are shared with `gpuwise run`.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from gpuwise.locale import _

if TYPE_CHECKING:
    from gpuwise.run.manifest import Manifest

EndpointOpt = Annotated[
    str | None,
    typer.Option(
        "--endpoint-url",
        help=_(
            "S3-compatible endpoint (MinIO, R2, OSS, COS); default $AWS_ENDPOINT_URL or AWS itself; for "
            "oss:// and cos:// the one of --region."
        ),
    ),
]
RegionOpt = Annotated[
    str | None,
    typer.Option(
        "--region",
        help=_(
            "The bucket's region: oss:// uses s3.oss-REGION.aliyuncs.com, cos:// cos.REGION.myqcloud.com "
            "(default $OSS_REGION / $COS_REGION)."
        ),
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help=_("Print JSON."))]

checkpoints_app = typer.Typer(
    help=_("List, verify and download the checkpoints `gpuwise run --sync` uploaded."), no_args_is_help=True
)


def _store(url: str, endpoint_url: str | None, region: str | None) -> Any:
    from gpuwise.run.store import CheckpointStore

    return CheckpointStore(url, endpoint_url=endpoint_url, region=region)


def _pick(manifests: list[Manifest], run_id: str | None, name: str | None, url: str) -> list[Manifest]:
    from gpuwise.errors import NotFoundError, StorageError

    if run_id is not None:
        manifests = [m for m in manifests if m.run_id == run_id]
    if name is not None:
        chosen = [m for m in manifests if m.name == name]
        if not chosen:
            raise NotFoundError(
                _("checkpoint"),
                name,
                [m.name for m in manifests],
                fix=_("see `gpuwise checkpoints list {url}`").format(url=url),
            )
        return chosen
    if not manifests:
        raise StorageError(
            (
                _("No complete checkpoint at {url} for run {run_id}")
                if run_id
                else _("No complete checkpoint at {url}")
            ).format(url=url, run_id=run_id),
            fix=_("check the URL and --run-id (an upload that did not finish is never listed)"),
        )
    return manifests


@checkpoints_app.command("list")
def checkpoints_list(
    url: Annotated[str, typer.Argument(help=_("The --sync URL."))],
    run_id: Annotated[str | None, typer.Option("--run-id", help=_("Only this run."))] = None,
    endpoint_url: EndpointOpt = None,
    region: RegionOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """List the complete checkpoints at URL (oldest first); half-finished uploads are never listed."""
    from gpuwise.cli.output import console, print_json
    from gpuwise.run.manifest import format_for_listing
    from gpuwise.units import format_bytes

    manifests = _store(url, endpoint_url, region).checkpoints(run_id)
    if json_out:
        print_json({"url": url, "checkpoints": [format_for_listing(m) for m in manifests]})
        return
    if not manifests:
        console.print(_("No complete checkpoint at {url}.").format(url=url))
        return
    for m in manifests:
        when = time.strftime("%Y-%m-%d %H:%M", time.gmtime(m.created_at))
        console.print(
            _("{run_id}  {name}  step {step}  {kind}  {files} files  {size}  {when} UTC").format(
                run_id=m.run_id,
                name=m.name,
                step=m.step if m.step is not None else "-",
                kind=m.kind,
                files=len(m.files),
                size=format_bytes(m.total_bytes),
                when=when,
            ),
            soft_wrap=True,
        )


@checkpoints_app.command("verify")
def checkpoints_verify(  # noqa: PLR0917 - typer passes each option as a parameter
    url: Annotated[str, typer.Argument(help=_("The --sync URL."))],
    run_id: Annotated[str | None, typer.Option("--run-id", help=_("Only this run."))] = None,
    name: Annotated[str | None, typer.Option("--name", help=_("Only this checkpoint."))] = None,
    endpoint_url: EndpointOpt = None,
    region: RegionOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Read every file back and compare its SHA-256 with the manifest. Exit 1 when any differs."""
    from gpuwise.cli.output import console, print_json

    store = _store(url, endpoint_url, region)
    chosen = _pick(store.checkpoints(run_id), run_id, name, url)
    results = [{"run_id": m.run_id, "name": m.name, "problems": store.verify(m)} for m in chosen]
    bad = [r for r in results if r["problems"]]
    if json_out:
        print_json({"url": url, "checkpoints": results, "ok": not bad})
    else:
        for r in results:
            status = _("ok") if not r["problems"] else _("BAD: ") + "; ".join(r["problems"])
            console.print(f"{r['run_id']}  {r['name']}  {status}", soft_wrap=True)
    if bad:
        raise typer.Exit(1)


@checkpoints_app.command("pull")
def checkpoints_pull(  # noqa: PLR0917 - typer passes each option as a parameter
    url: Annotated[str, typer.Argument(help=_("The --sync URL."))],
    run_id: Annotated[str | None, typer.Option("--run-id", help=_("Only this run."))] = None,
    name: Annotated[
        str | None, typer.Option("--name", help=_("This checkpoint (default: the newest)."))
    ] = None,
    to: Annotated[Path, typer.Option("--to", help=_("Download into this folder."))] = Path("checkpoints"),
    endpoint_url: EndpointOpt = None,
    region: RegionOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Download a complete checkpoint (the newest by default), verified file by file."""
    from gpuwise.cli.output import console, print_json

    store = _store(url, endpoint_url, region)
    m = _pick(store.checkpoints(run_id), run_id, name, url)[-1]
    path = store.download(m, to)
    if json_out:
        print_json({"run_id": m.run_id, "name": m.name, "path": str(path), "bytes": m.total_bytes})
    else:
        console.print(
            _("Downloaded {run_id}/{name} to {path}.").format(run_id=m.run_id, name=m.name, path=path),
            soft_wrap=True,
        )
