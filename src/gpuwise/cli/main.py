"""`gpuwise` entry point: registers the command groups and maps errors to messages and exit codes.

Exit codes: 0 success, 1 a fault or a negative answer (a command documents which), 2 bad input.
The traceback is shown only with --debug.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer
from rich.markup import escape

from gpuwise import __version__
from gpuwise.cli import catalog, doctor, estimate, exporter, idle, monitor, plan, schema
from gpuwise.cli import run as run_cli
from gpuwise.cli.output import err_console
from gpuwise.errors import GpuwiseError

app = typer.Typer(
    name="gpuwise",
    help=(
        "Choose, verify, watch and stop rented cloud GPUs.\n\n"
        "plan ranks every offer by the total cost of your workload; estimate says whether it fits and how "
        "long it takes; catalog lists GPUs and dated prices; doctor diagnoses a GPU machine; monitor and "
        "exporter watch it; idle stops it when nobody uses it."
    ),
    no_args_is_help=True,
    add_completion=True,  # --install-completion / --show-completion for bash, zsh, fish, PowerShell
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

_debug = False


def _version(value: bool) -> None:
    if value:
        typer.echo(f"gpuwise {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks for errors.")] = False,
    version: Annotated[  # noqa: ARG001 - handled by its eager callback
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    global _debug  # noqa: PLW0603 - one process-wide switch read by main()
    _debug = debug


app.add_typer(catalog.app, name="catalog")
app.command("estimate")(estimate.estimate)
app.command("plan")(plan.plan)
app.command("doctor")(doctor.doctor)
app.command("monitor")(monitor.monitor)
app.command("exporter")(exporter.exporter)
app.add_typer(idle.app, name="idle")
app.command("schema")(schema.schema)
app.command("run", context_settings={"allow_interspersed_args": False})(run_cli.run)
app.add_typer(run_cli.checkpoints_app, name="checkpoints")
app.command("ledger")(run_cli.ledger)


# typer vendors click; every command-line parsing error (missing option, bad number, unknown option or
# command) derives from its UsageError, reached through the public BadParameter.
_UsageError: type[Exception] = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "UsageError")


def _usage_error(exc: Exception) -> int:
    """A parsing error in the shape of every other bad input: one paragraph on stderr with what and
    "To fix:", exit 2. (`gpuwise GROUP` alone has printed its help already.)"""
    message: str = exc.format_message()  # type: ignore[attr-defined]  # click UsageError API
    if type(exc).__name__ == "NoArgsIsHelpError":
        if message:  # typer's rich help printed itself and left the message empty
            typer.echo(message)
        return 2
    ctx = getattr(exc, "ctx", None)
    where = ctx.command_path if ctx is not None else "gpuwise"
    fix = f"To fix: see `{escape(where)} --help` for the options."
    err_console.print(f"[bold red]Error:[/] {escape(message.rstrip('.'))}. {fix}", soft_wrap=True)
    return 2


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; return the exit code (the console script passes it to sys.exit)."""
    args = sys.argv[1:] if argv is None else argv
    debug = "--debug" in args
    try:
        # not standalone: parsing errors come back here and are printed like every other bad input
        result = app(args=args, prog_name="gpuwise", standalone_mode=False)
    except SystemExit as exc:
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    except _UsageError as exc:
        return _usage_error(exc)
    except GpuwiseError as exc:
        if debug or _debug:
            err_console.print_exception()
        err_console.print(f"[bold red]Error:[/] {escape(exc.render())}", soft_wrap=True)
        return exc.exit_code
    except (KeyboardInterrupt, typer.Abort):
        return 130
    except BrokenPipeError:
        # `gpuwise … | head` closed the pipe: not an error worth a traceback.
        return 0
    # a typer.Exit(code) raised by a command comes back as its code outside standalone mode
    return result if isinstance(result, int) else 0


def run() -> None:  # pragma: no cover - console script shim
    sys.exit(main())
