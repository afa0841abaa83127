"""The `cudal1` command. Each subcommand lives in its own module and only wires library pieces.

Errors the user can fix (`Cudal1Error`) print as one line on stderr with exit code 2; `--debug`
shows the traceback instead.
"""

from __future__ import annotations

import signal
import sys

import typer

from cudal1 import __version__
from cudal1.cli import tasks as tasks_cmd
from cudal1.cli import train as train_cmd
from cudal1.cli.bench import bench_command, report_command
from cudal1.cli.eval import eval_command
from cudal1.cli.optimize import optimize_command
from cudal1.cli.serve import serve_command
from cudal1.errors import Cudal1Error

app = typer.Typer(
    name="cudal1",
    help="Turn a language model into a CUDA optimizer: tasks, a hack-resistant evaluator, "
    "contrastive search and RL training (CUDA-L1, re-implemented).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(tasks_cmd.app, name="tasks")
app.command("eval")(eval_command)
app.command("optimize")(optimize_command)
app.command("bench")(bench_command)
app.command("report")(report_command)
app.command("serve")(serve_command)
app.add_typer(train_cmd.app, name="train")

_state = {"debug": False}


def _version(value: bool) -> None:
    if value:
        typer.echo(f"cudal1 {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks for errors."),
) -> None:
    _state["debug"] = debug


def _stop(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> None:
    """Entry point. Typer handles usage errors (exit 2); a `Cudal1Error` becomes one line, exit 2.
    Ctrl-C and SIGTERM both stop a run cleanly (its worker processes end with it), also when the
    command was started in the background, where the shell would have SIGINT ignored."""
    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGTERM, _stop)
    try:
        app(args=argv, prog_name="cudal1")
    except Cudal1Error as e:
        if _state["debug"]:
            raise
        print(f"cudal1: error: {e}", file=sys.stderr)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
