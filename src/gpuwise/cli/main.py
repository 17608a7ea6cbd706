"""`gpuwise` entry point: registers the command groups and maps errors to messages and exit codes.

Exit codes: 0 success, 1 a fault or a negative answer (a command documents which), 2 bad input.
The traceback is shown only with --debug.
"""

from __future__ import annotations

import importlib
import re
import sys
from typing import Annotated, Any, NamedTuple

import typer

from gpuwise import __version__
from gpuwise.cli import output
from gpuwise.cli.entry import apply_language
from gpuwise.errors import GpuwiseError
from gpuwise.locale import _, language

app = typer.Typer(
    name="gpuwise",
    help=_(
        "Choose, verify, watch and stop rented cloud GPUs.\n\n"
        "plan ranks every offer by the total cost of your workload; estimate says whether it fits and how "
        "long it takes (presets lists the bundled models; any Hugging Face config.json works too); catalog "
        "lists GPUs and dated prices; doctor diagnoses a GPU machine; monitor and "
        "exporter watch it; idle stops it when nobody uses it; bench measures what it delivers against "
        "its datasheet and times your own task; setup prints the script that installs its driver, CUDA and "
        "PyTorch; init writes a training project (train.py, workload, Dockerfile, SkyPilot task) that "
        "resumes; export hands a plan option to SkyPilot, Kubernetes, torchrun or Docker; report looks "
        "back at what was spent, on what, and whether it was worth it."
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
    debug: Annotated[bool, typer.Option("--debug", help=_("Show tracebacks for errors."))] = False,
    version: Annotated[  # noqa: ARG001 - handled by its eager callback
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help=_("Print the version and exit.")),
    ] = False,
    lang: Annotated[  # noqa: ARG001 - applied by main() before any command is imported
        str | None,
        typer.Option(
            "--lang",
            metavar="zh|en",
            help=_(
                "Language of the output: zh (Simplified Chinese) or en. "
                "Default: from LANGUAGE, LC_ALL or LANG."
            ),
        ),
    ] = None,
) -> None:
    global _debug  # noqa: PLW0603 - one process-wide switch read by main()
    _debug = debug


class _Entry(NamedTuple):
    """Where a sub-command lives: imported only when it runs (or when every command must be listed)."""

    module: str
    attribute: str
    group: bool = False  # a typer.Typer with sub-commands of its own, not one function
    context_settings: dict[str, Any] | None = None


# One entry per sub-command, in alphabetical order. `gpuwise plan …` imports the plan command's module and
# nothing else: importing every command's module cost ~80 ms of a ~0.7 s plan (benchmarks/plan_speed.py).
_COMMANDS: dict[str, _Entry] = {
    "bench": _Entry("gpuwise.cli.bench", "app", group=True),
    "catalog": _Entry("gpuwise.cli.catalog", "app", group=True),
    "checkpoints": _Entry("gpuwise.cli.run", "checkpoints_app", group=True),
    "doctor": _Entry("gpuwise.cli.doctor", "doctor"),
    "estimate": _Entry("gpuwise.cli.estimate", "estimate"),
    "export": _Entry("gpuwise.cli.export", "export"),
    "exporter": _Entry("gpuwise.cli.exporter", "exporter"),
    "idle": _Entry("gpuwise.cli.idle", "app", group=True),
    "init": _Entry("gpuwise.cli.init", "init"),
    "ledger": _Entry("gpuwise.cli.run", "ledger"),
    "monitor": _Entry("gpuwise.cli.monitor", "monitor"),
    "plan": _Entry("gpuwise.cli.plan", "plan"),
    "presets": _Entry("gpuwise.cli.presets", "presets"),
    "report": _Entry("gpuwise.cli.report", "report"),
    "run": _Entry("gpuwise.cli.run", "run", context_settings={"allow_interspersed_args": False}),
    "schema": _Entry("gpuwise.cli.schema", "schema"),
    "setup": _Entry("gpuwise.cli.setup", "setup"),
}
# the root options that come before a command name and take no value
_ROOT_FLAGS = frozenset({"--debug", "--version", "--help", "-h", "--install-completion", "--show-completion"})
_ROOT_VALUED = frozenset({"--lang"})  # the root options that take one value
_registered: set[str] = set()


def _register(names: list[str]) -> None:
    """Add these sub-commands to the app (once each), importing their modules now."""
    for name in names:
        if name in _registered:
            continue
        entry = _COMMANDS[name]
        target = getattr(importlib.import_module(entry.module), entry.attribute)
        if entry.group:
            app.add_typer(target, name=name)
        else:
            app.command(name, context_settings=entry.context_settings)(target)
        _registered.add(name)
    from gpuwise.cli.localize import translate_docstrings

    translate_docstrings(app)  # docstrings are the help's msgids: inspect.cleandoc(docstring) exactly


def _first_past_root(args: list[str]) -> str | None:
    """The first argument that is not a root option or its value (the command name, usually)."""
    skip = False
    for arg in args:
        if skip or arg in _ROOT_FLAGS or arg.split("=")[0] in _ROOT_VALUED:
            skip = arg in _ROOT_VALUED
            continue
        return arg
    return None


def _command_named(args: list[str]) -> str | None:
    """The sub-command these arguments run, when it is a known one and only root flags precede it."""
    first = _first_past_root(args)
    return first if first in _COMMANDS else None


def _settings_only(args: list[str]) -> bool:
    """Only root settings (--lang, --debug) and no command: `gpuwise --lang zh` is `gpuwise` alone, the
    help in that language, not an error about a missing command."""
    asks = {"--help", "-h", "--version", "--install-completion", "--show-completion"}
    return bool(args) and _first_past_root(args) is None and not asks.intersection(args)


def full_app() -> typer.Typer:
    """The app with every sub-command registered (help, completion, unknown commands and tests)."""
    _register(sorted(_COMMANDS))
    return app


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
    # typer appends its suggestion to click's sentence ("No such command 'offer'. Did you mean 'offers'?"):
    # kept apart so the full stop before "To fix" does not follow a question mark, and the sentence before
    # it is translated on its own
    suggested = re.fullmatch(r"(.*?)\.? Did you mean (.+)\?", message, re.DOTALL)
    if suggested is not None:
        message, names = suggested.groups()
    if language() != "en":
        from gpuwise.cli.localize import translate_usage_message

        message = translate_usage_message(message)
    fields = {"message": message.rstrip(".。"), "command": where}
    if suggested is None:
        text = _("{message}. To fix: see `{command} --help` for the options.").format(**fields)
    else:
        text = _("{message}. Did you mean {names}? To fix: see `{command} --help` for the options.").format(
            names=names, **fields
        )
    output.print_error(text)
    return 2


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; return the exit code (the console script passes it to sys.exit)."""
    args = sys.argv[1:] if argv is None else argv
    debug = "--debug" in args
    output.ensure_std_streams()
    # before any command module is imported: their option help is translated when it is defined
    bad_language = apply_language(args)
    if bad_language is not None:
        return bad_language
    only = _command_named(args)
    _register([only] if only is not None else sorted(_COMMANDS))
    try:
        # not standalone: parsing errors come back here and are printed like every other bad input
        command = typer.main.get_command(app)  # what app(...) runs, built here to translate click's words
        from gpuwise.cli.localize import localize_command, reflow_help

        reflow_help(command)  # help wraps where the terminal does, not where a docstring was wrapped
        if language() != "en":
            localize_command(command)
        run_args = [] if _settings_only(args) else args  # --lang was applied above; --debug has no command
        result = command.main(args=run_args, prog_name="gpuwise", standalone_mode=False)
        sys.stdout.flush()  # a pipe closed by its reader fails here, not in the interpreter's exit
    except SystemExit as exc:
        if output.closed_pipe(exc):  # typer (and rich, for help) exit 1 when stdout's reader went away
            output.reader_gone()
            return 0
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    except _UsageError as exc:
        return _usage_error(exc)
    except GpuwiseError as exc:
        if debug or _debug:
            output.err_console.print_exception()
        output.print_error(exc.render())
        return exc.exit_code
    except (KeyboardInterrupt, typer.Abort):
        return 130
    except BrokenPipeError:
        # `gpuwise … | head` closed the pipe: the reader had what it wanted; no message, exit 0
        output.reader_gone()
        return 0
    except OSError as exc:
        refused = output.write_refused(exc)  # a full disk; any other OSError here is a defect to see whole
        if refused is None:
            raise
        if debug or _debug:
            output.err_console.print_exception()
        if output.stdout_failed():
            output.reader_gone()  # so the interpreter's flush at exit does not fail again
        output.print_error(refused.render())
        return refused.exit_code
    # a typer.Exit(code) raised by a command comes back as its code outside standalone mode
    return result if isinstance(result, int) else 0


def run() -> None:  # pragma: no cover - the console script's shim, kept for old installs that name it
    from gpuwise.cli.entry import run as run_entry

    run_entry()
