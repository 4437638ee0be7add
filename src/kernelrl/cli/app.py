"""The typer app, exit codes and the error helpers every command uses.

Exit codes:
  0  every evaluated candidate is correct (demo: every verdict as expected; problems, rules, report: done)
  1  at least one candidate is not correct (demo: at least one verdict not as expected)
  2  bad usage or input: unreadable file, not a problem (ProblemError), unknown device, no GPU for --device
  cuda 3  the evaluator itself failed (kernelrl.EvaluatorError): no verdict was reached
  4  the policy failed (agent, bench): server unreachable after retries, replay without a matching completion
  130  train: interrupted (Ctrl-C); the same command resumes from the last checkpoint

The EPILOG below (these codes) ends the help of eval, demo and agent; audit, baselines, bench, gen and the
train commands name their own codes; problems, rules and report exit 0, or 2 on bad input.

Commands validate everything they were given before they create anything (a run directory, a results file,
a kernel database), so a rejected command leaves no files behind.
"""

from __future__ import annotations

import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, NoReturn

import typer
from rich.console import Console
from rich.text import Text

from kernelrl import EvaluatorError, ProblemError, __version__

EXIT_OK = 0
EXIT_NOT_CORRECT = 1
EXIT_BAD_INPUT = 2
EXIT_EVALUATOR = 3
EXIT_POLICY = 4

EPILOG = (
    "Exit codes: 0 = every evaluated candidate correct (demo: all verdicts as expected); "
    "1 = at least one candidate not correct; "
    "2 = bad usage or input (unreadable file, not a problem, unknown device, no GPU for --device cuda); "
    "3 = the evaluator itself failed (EvaluatorError); "
    "4 = the policy failed (agent, bench)."
)

app = typer.Typer(
    name="kernelrl",
    help="Evaluate LLM-written GPU kernels (KernelBench-format problems) in a sandbox.",
    epilog=EPILOG,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


# Consoles are made when needed, not at import: rich reads COLUMNS and whether the stream is a terminal when a
# console is made, and a test runner (or a caller embedding the app) may change both between invocations.
def stdout() -> Console:
    return Console()


def stderr() -> Console:
    return Console(stderr=True)


# -- errors ------------------------------------------------------------------------------------------------
def fail(message: str, code: int) -> NoReturn:
    """One red line on stderr (more lines only for an evaluator failure's details), then exit."""
    head, _, rest = message.strip().partition("\n")
    err = stderr()
    err.print(Text(f"error: {head}", style="bold red"), soft_wrap=True)
    if rest.strip():
        err.print(Text(rest.rstrip()), soft_wrap=True, highlight=False)
    raise typer.Exit(code)


def usage_error(ctx: typer.Context, message: str) -> NoReturn:
    """A command line that cannot mean anything (exit 2), shown with the command's usage like typer's own."""
    ctx.fail(message)


def given(ctx: typer.Context, name: str) -> bool:
    """Whether the parameter `name` was on the command line
    (or in the environment), not left at its default."""
    source = ctx.get_parameter_source(name)
    return source is not None and source.name not in ("DEFAULT", "DEFAULT_MAP")


def describe(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.filename is not None:
        return f"cannot read {exc.filename}: {exc.strerror or exc}"
    if isinstance(exc, UnicodeDecodeError):
        return f"file is not UTF-8 text: {exc}"
    return str(exc) or type(exc).__name__


@contextmanager
def bad_input() -> Iterator[None]:
    """Loading problems, solutions and settings: what goes wrong here is the user's input (exit 2)."""
    try:
        yield
    except (ProblemError, OSError, ValueError) as exc:
        fail(describe(exc), EXIT_BAD_INPUT)


@contextmanager
def evaluating() -> Iterator[None]:
    """Running the evaluator: what goes wrong here is the evaluator's failure, not a verdict (exit 3)."""
    try:
        yield
    except EvaluatorError as exc:
        fail(f"the evaluator failed: {exc}", EXIT_EVALUATOR)
    except (typer.Exit, KeyboardInterrupt):
        raise
    except Exception as exc:  # a bug in kernelrl: show where, but keep the exit code meaningful
        traceback.print_exc()
        fail(f"the evaluator failed unexpectedly: {type(exc).__name__}: {exc}", EXIT_EVALUATOR)


@contextmanager
def running_policy() -> Iterator[None]:
    """Generating with the policy: its failure is exit 4 (finished attempts are saved, the run resumes)."""
    from kernelrl.policies import PolicyError

    try:
        yield
    except PolicyError as exc:
        fail(f"the policy failed: {exc} (finished attempts are saved; re-run the same command to resume)",
             EXIT_POLICY)


# -- root --------------------------------------------------------------------------------------------------
def _version(value: bool) -> None:
    if value:
        typer.echo(f"kernelrl {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    """Evaluate LLM-written GPU kernels (KernelBench-format problems) in a sandbox."""


def main() -> None:
    """The `kernelrl` console script (the commands register when `kernelrl.cli` is imported)."""
    app(prog_name="kernelrl")
