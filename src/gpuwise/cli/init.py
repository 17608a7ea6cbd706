"""`gpuwise init DIR`: write a project template (train.py, workload.toml, Dockerfile, skypilot.yaml, README).

Top-level imports stay cheap: the template room is imported inside the command.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from gpuwise.cli.output import console, print_json
from gpuwise.errors import StorageError
from gpuwise.locale import _


def init(
    directory: Annotated[
        Path,
        typer.Argument(
            metavar="DIR", help=_("Folder to create the project in (new or empty)."), show_default=False
        ),
    ],
    force: Annotated[
        bool,
        typer.Option(
            "--force", help=_("Write into a folder that is not empty; files already there are kept.")
        ),
    ] = False,
    name: Annotated[
        str | None,
        typer.Option("--name", help=_("Project name for the image, task and workload; default: DIR's name.")),
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help=_("Print JSON."))] = False,
) -> None:
    """Write a training project: train.py, workload.toml, Dockerfile, skypilot.yaml and README.md.

    train.py is PyTorch with AMP, DDP through torchrun, checkpoints that `gpuwise run` syncs, resume,
    and a final checkpoint on SIGTERM.
    `python train.py --smoke` trains, evaluates, saves and loads on the CPU in seconds.
    A folder that is not empty needs --force; existing files are never overwritten.

    Example: gpuwise init my-project && cd my-project && python train.py --smoke
    """
    from gpuwise.init.template import write_project

    try:
        result = write_project(directory, name=name, force=force)
    except OSError as exc:
        raise StorageError(
            _("cannot write the project into {directory}: {error}").format(
                directory=directory, error=exc.strerror or exc
            ),
            why=_("the folder or a file in it could not be created (permissions, a full or read-only disk)"),
            fix=_("choose a folder you can write to"),
        ) from exc
    if json_out:
        print_json(
            {
                "directory": str(result.directory),
                "name": result.name,
                "written": result.written,
                "kept": result.kept,
            }
        )
        return
    for written in result.written:
        console.print(_("wrote {path}").format(path=escape(str(directory / written))), soft_wrap=True)
    for kept in result.kept:
        console.print(
            _("kept  {path} (already there; not overwritten)").format(path=escape(str(directory / kept))),
            soft_wrap=True,
        )
    from gpuwise.init.template import DEFAULT_NAME

    if name is None and result.name == DEFAULT_NAME and result.directory.resolve().name != DEFAULT_NAME:
        console.print(
            _(
                "Note: the folder's name gives no valid project name (lowercase letters, digits and '-', "
                "starting with a letter), so the image, task and workload are named {name}; --name sets it."
            ).format(name=DEFAULT_NAME),
            soft_wrap=True,
        )
    here = result.directory.resolve() == Path.cwd().resolve()  # `gpuwise init .`: no `cd .` to type
    console.print(
        "\n"
        + (
            _("Next: python train.py --smoke")
            if here
            else _("Next: cd {directory} && python train.py --smoke").format(
                directory=escape(shlex.quote(str(directory)))
            )
        )
        + "\n"
        + _("README.md has the steps after that."),
        soft_wrap=True,
    )
