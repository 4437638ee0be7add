"""The `kernelrl` command line: a thin shell over the Python API (`Evaluator`, `load_problem`, `load_suite`).

Commands:
  kernelrl eval PROBLEM_FILE SOLUTION_FILE           evaluate one candidate (a module or an LLM completion)
  kernelrl eval --suite DIR --solutions DIR --out F  evaluate a directory of solutions against a suite
  kernelrl problems [SUITE]                          list a suite's problems ('builtin' by default)
  kernelrl baselines [SUITE] [--only P] [--fresh]    time references on a GPU into the baseline cache
  kernelrl demo                                      evaluate the shipped example candidates
  kernelrl agent PROBLEM... --policy P               optimize problems with an LLM over refinement turns
  kernelrl bench --policy P --split test             benchmark a policy on a suite split (resumable run dir)
  kernelrl report RUN_DIR                            HTML report and summary of a run directory

Exit codes:
  0  every evaluated candidate is correct (demo: every verdict as expected; problems: listed)
  1  at least one candidate is not correct (demo: at least one verdict not as expected)
  2  bad usage or input: unreadable file, not a problem (ProblemError), unknown device, ...
  3  the evaluator itself failed (kernelrl.EvaluatorError): no verdict was reached
  4  the policy failed (agent, bench): server unreachable after retries, replay without a matching completion
"""

from __future__ import annotations

import ast
import dataclasses
import json
import re
import traceback
import warnings
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, NoReturn

import typer
from rich import box
from rich.console import Console
from rich.measure import Measurement
from rich.panel import Panel
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table
from rich.text import Text

from kernelrl import (
    EvalConfig,
    EvalResult,
    Evaluator,
    EvaluatorError,
    Problem,
    ProblemError,
    Status,
    __version__,
    load_problem,
    load_suite,
)
from kernelrl.candidates import extract_code
from kernelrl.candidates.rules import RULES
from kernelrl.demo import DEMO_CASES, DemoCase, run_demo
from kernelrl.pyparse import parse_python
from kernelrl.results import TimingReport, TimingStats
from kernelrl.verify.runtime_checks import RUNTIME_CHECKS

EXIT_OK = 0
EXIT_NOT_CORRECT = 1
EXIT_BAD_INPUT = 2
EXIT_EVALUATOR = 3

_EPILOG = (
    "Exit codes: 0 = every evaluated candidate correct (demo: all verdicts as expected; problems: listed); "
    "1 = at least one candidate not correct; "
    "2 = bad usage or input (unreadable file, not a problem, unknown device); "
    "3 = the evaluator itself failed (EvaluatorError); "
    "4 = the policy failed (agent, bench)."
)

_DEFAULTS = EvalConfig()
_FENCE = re.compile(r"^[ \t]*(```|~~~)", re.M)
_STATUS_STYLE = {
    Status.CORRECT: "bold green",
    Status.WRONG_OUTPUT: "bold red",
    Status.HACK_DETECTED: "bold magenta",
    Status.COMPILE_ERROR: "red",
    Status.RUNTIME_ERROR: "red",
    Status.CRASHED: "red",
    Status.TIMEOUT: "yellow",
    Status.FORMAT_ERROR: "yellow",
    Status.UNSUPPORTED: "cyan",
}

_out = Console()
_err = Console(stderr=True)

app = typer.Typer(
    name="kernelrl",
    help="Evaluate LLM-written GPU kernels (KernelBench-format problems) in a sandbox.",
    epilog=_EPILOG,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


# -- errors ------------------------------------------------------------------------------------------------
def _fail(message: str, code: int) -> NoReturn:
    """One red line on stderr (more lines only for an evaluator failure's details), then exit."""
    head, _, rest = message.strip().partition("\n")
    _err.print(Text(f"error: {head}", style="bold red"), soft_wrap=True)
    if rest.strip():
        _err.print(Text(rest.rstrip()), soft_wrap=True, highlight=False)
    raise typer.Exit(code)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.filename is not None:
        return f"cannot read {exc.filename}: {exc.strerror or exc}"
    if isinstance(exc, UnicodeDecodeError):
        return f"file is not UTF-8 text: {exc}"
    return str(exc) or type(exc).__name__


@contextmanager
def _bad_input() -> Iterator[None]:
    """Loading problems, solutions and settings: what goes wrong here is the user's input (exit 2)."""
    try:
        yield
    except (ProblemError, OSError, ValueError) as exc:
        _fail(_describe(exc), EXIT_BAD_INPUT)


@contextmanager
def _evaluating() -> Iterator[None]:
    """Running the evaluator: what goes wrong here is the evaluator's failure, not a verdict (exit 3)."""
    try:
        yield
    except EvaluatorError as exc:
        _fail(f"the evaluator failed: {exc}", EXIT_EVALUATOR)
    except (typer.Exit, KeyboardInterrupt):
        raise
    except Exception as exc:  # a bug in kernelrl: show where, but keep the exit code meaningful
        traceback.print_exc()
        _fail(f"the evaluator failed unexpectedly: {type(exc).__name__}: {exc}", EXIT_EVALUATOR)


# -- helpers over the API -----------------------------------------------------------------------------------
def _make_evaluator(device: str, trials: int = _DEFAULTS.trials, seed: int | None = None,
                    run_timeout: float = _DEFAULTS.run_timeout_s,
                    compile_timeout: float = _DEFAULTS.compile_timeout_s, timing: bool = True,
                    cache: bool = True) -> Evaluator:
    with _bad_input():
        config = EvalConfig(device=device, trials=trials, seed=seed, run_timeout_s=run_timeout,
                            compile_timeout_s=compile_timeout, timing=timing, result_cache=cache)
    return Evaluator(config)  # starts nothing yet: the judge starts on the first evaluation


def _is_completion(text: str) -> bool:
    """An LLM completion: no top-level `class ModelNew`, but fenced code blocks."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = parse_python(text)
    except (SyntaxError, ValueError):
        tree = None
    if tree is not None and any(isinstance(n, ast.ClassDef) and n.name == "ModelNew" for n in tree.body):
        return False
    return bool(_FENCE.search(text))


def _evaluate(evaluator: Evaluator, problem: Problem, text: str) -> EvalResult:
    if _is_completion(text):
        return evaluator.evaluate_completion(problem, text)
    return evaluator.evaluate(problem, text)


def _find_solution(solutions: Path, problem: Problem) -> Path | None:
    for candidate in (solutions / f"{problem.id}.py", solutions / f"{problem.name}.py"):
        if candidate.is_file():
            return candidate
    return None


# -- rendering ------------------------------------------------------------------------------------------------
def _status(status: Status | str) -> Text:
    status = Status(status)
    return Text(status.value, style=_STATUS_STYLE.get(status, ""))


def _ms(stats: TimingStats | None) -> str:
    return "" if stats is None else f"{stats.median_ms:.4g}"


def _x(speedup: float | None) -> str:
    return "" if speedup is None else f"{speedup:.2f}x"


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.6g}"


def _has_times(timing: TimingReport | None) -> bool:
    return timing is not None and any(s is not None for s in (timing.candidate, timing.eager, timing.inductor))


def _stats_line(stats: TimingStats) -> str:
    return (f"{stats.median_ms:.4g} ms median (IQR {stats.iqr_ms:.3g} ms, min {stats.min_ms:.4g} ms, "
            f"{stats.reps} reps" + (", from the baseline cache)" if stats.source == "cache" else ")"))


def _print_result(result: EvalResult, solution: Path, as_completion: bool) -> None:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column(overflow="fold")
    grid.add_row("problem", Text(result.problem_id))
    grid.add_row("candidate", Text(f"{solution}" + (" (code extracted from a completion)" if as_completion else "")))
    grid.add_row("status", _status(result.status))
    grid.add_row("stage", result.stage.value)
    grid.add_row("message", Text(result.message))
    c = result.correctness
    if c is not None:
        grid.add_row("trials", f"{c.trials_passed}/{c.trials_planned} passed ({c.trials_run} run)")
        grid.add_row("tolerance", f"atol={c.atol:g} rtol={c.rtol:g} ({c.dtype})")
        m = c.mismatch
        if m is not None:
            parts = [f"trial {m.trial}, output {m.output_index}: {m.reason}"]
            if m.max_abs_error is not None:
                parts.append(f"max abs err {m.max_abs_error:.4g}")
            if m.max_rel_error is not None:
                parts.append(f"max rel err {m.max_rel_error:.4g}")
            if m.mismatched is not None and m.numel:
                parts.append(f"{m.mismatched}/{m.numel} elements ({100 * m.mismatched / m.numel:.3g}%)")
            if m.first_index is not None:
                parts.append(f"first at {m.first_index}: expected {_num(m.expected_value)}, got {_num(m.actual_value)}")
            grid.add_row("mismatch", Text("; ".join(parts)))
    t = result.timing
    if t is not None:
        for label, stats in (("candidate", t.candidate), ("eager", t.eager), ("inductor", t.inductor)):
            if stats is not None:
                grid.add_row(f"time {label}", _stats_line(stats))
        if t.speedup_vs_eager is not None:
            grid.add_row("speedup", f"{_x(t.speedup_vs_eager)} vs eager"
                         + (f", {_x(t.speedup_vs_inductor)} vs inductor" if t.speedup_vs_inductor is not None else ""))
        if t.unavailable_reason:
            grid.add_row("timing", Text(t.unavailable_reason, style="dim"))
    env = result.environment
    if env is not None:
        grid.add_row("environment", Text(f"{env.mode} on {env.device_name} (torch {env.torch_version}, "
                                         f"triton {env.triton_version or '-'}, python {env.python_version})"))
        if env.isolation:
            grid.add_row("isolation", Text(", ".join(env.isolation), style="dim"))
    grid.add_row("wall time", f"{result.wall_time_s:.1f} s" + (" (verdict from the result cache)" if result.cached else ""))
    if result.log:
        grid.add_row("log", Text(f"{len(result.log)} characters captured (see --json)", style="dim"))
    style = "green" if result.correct else "red"
    _out.print(Panel(grid, title="kernelrl eval", title_align="left", border_style=style))
    if result.feedback and not result.correct:
        _out.print(Panel(Text(result.feedback), title="feedback", title_align="left", border_style="dim"))


def _progress() -> Progress:
    return Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), console=_err)


def _counts_line(results: list[EvalResult]) -> Text:
    counts = Counter(r.status for r in results)
    line = Text()
    for i, status in enumerate(s for s in Status if counts[s]):
        if i:
            line.append(", ")
        line.append(f"{status.value} {counts[status]}", style=_STATUS_STYLE.get(status, ""))
    return line


# -- commands ---------------------------------------------------------------------------------------------------
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


DeviceOpt = Annotated[str, typer.Option("--device", help="auto, cpu, cuda or cuda:N (cpu: the Triton interpreter).")]
TrialsOpt = Annotated[int, typer.Option("--trials", min=1, help="Correctness trials (fresh random inputs each).")]


@app.command("eval", epilog=_EPILOG)
def eval_cmd(
    ctx: typer.Context,
    problem_file: Annotated[Path | None, typer.Argument(metavar="PROBLEM_FILE", help="A KernelBench-format problem file.",
                                                        show_default=False)] = None,
    solution_file: Annotated[Path | None, typer.Argument(
        metavar="SOLUTION_FILE", help="A module defining ModelNew, or an LLM completion with fenced code.", show_default=False)] = None,
    suite: Annotated[str | None, typer.Option("--suite", help="Batch mode: a suite directory, or 'builtin'.",
                                              show_default=False)] = None,
    solutions: Annotated[Path | None, typer.Option(
        "--solutions", help="Batch mode: solutions named like the problem ids (level1/23_x.py or 23_x.py).",
        show_default=False)] = None,
    out: Annotated[Path, typer.Option("--out", help="Batch mode: JSON lines results file (appended to).")] = Path(
        "results.jsonl"),
    json_output: Annotated[bool, typer.Option("--json", help="Print JSON on stdout instead of tables.")] = False,
    device: DeviceOpt = _DEFAULTS.device,
    trials: TrialsOpt = _DEFAULTS.trials,
    seed: Annotated[int | None, typer.Option("--seed", help="Master seed (default: a fresh secret one).",
                                             show_default=False)] = None,
    run_timeout: Annotated[float, typer.Option("--run-timeout", help="Seconds for construction, trials and timing.")
                           ] = _DEFAULTS.run_timeout_s,
    compile_timeout: Annotated[float, typer.Option("--compile-timeout", help="Seconds for importing the candidate.")
                               ] = _DEFAULTS.compile_timeout_s,
    no_timing: Annotated[bool, typer.Option("--no-timing", help="Skip timing (GPU only anyway).")] = False,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Evaluate even when the result cache has a verdict "
                                                              "for an identical candidate.")] = False,
    jobs: Annotated[int, typer.Option("--jobs", min=1, help="Batch mode: candidates evaluated at once "
                                                            "(Evaluator.evaluate_many; GPU timing stays one at a "
                                                            "time).")] = 1,
) -> None:
    """Evaluate one candidate (PROBLEM_FILE SOLUTION_FILE), or a suite with --suite/--solutions."""
    pair = problem_file is not None or solution_file is not None
    batch = suite is not None or solutions is not None
    if pair and batch:
        ctx.fail("give either PROBLEM_FILE SOLUTION_FILE or --suite DIR --solutions DIR, not both")
    if batch and (suite is None or solutions is None):
        ctx.fail("batch mode needs both --suite DIR and --solutions DIR")
    if not batch and (problem_file is None or solution_file is None):
        ctx.fail("give PROBLEM_FILE SOLUTION_FILE, or --suite DIR --solutions DIR")
    settings = {"device": device, "trials": trials, "seed": seed, "run_timeout": run_timeout,
                "compile_timeout": compile_timeout, "timing": not no_timing, "cache": not no_cache}
    if batch:
        assert suite is not None and solutions is not None
        _eval_batch(suite, solutions, out, json_output, settings, jobs)
    else:
        assert problem_file is not None and solution_file is not None
        _eval_one(problem_file, solution_file, json_output, settings)


def _eval_one(problem_file: Path, solution_file: Path, json_output: bool, settings: dict) -> None:
    with _bad_input():
        problem = load_problem(problem_file)
        text = solution_file.read_text()
    evaluator = _make_evaluator(**settings)
    with evaluator, _evaluating():
        result = _evaluate(evaluator, problem, text)
    if json_output:
        typer.echo(result.to_json())
    else:
        _print_result(result, solution_file, _is_completion(text))
    raise typer.Exit(EXIT_OK if result.correct else EXIT_NOT_CORRECT)


def _eval_batch(suite_location: str, solutions: Path, out: Path, json_output: bool, settings: dict,
                parallel: int = 1) -> None:
    with _bad_input():
        suite = load_suite(suite_location)
        if not solutions.is_dir():
            raise ProblemError(f"solutions {solutions} is not a directory")
        jobs: list[tuple[Problem, str]] = []
        skipped: list[str] = []
        for problem in suite:
            path = _find_solution(solutions, problem)
            if path is None:
                skipped.append(problem.id)
            else:
                jobs.append((problem, path.read_text()))
    if not jobs:
        _fail(f"no solution in {solutions} matches any of the {len(suite)} problems of suite {suite.name} "
              f"(expected files like {solutions / (suite.problems[0].id + '.py')})", EXIT_BAD_INPUT)
    evaluator = _make_evaluator(**settings)
    with _bad_input():
        sink = out.open("a")
    results: list[EvalResult] = []
    with sink, evaluator, _evaluating(), _progress() as progress:
        task = progress.add_task("evaluating", total=len(jobs))

        def record(result: EvalResult) -> None:
            sink.write(result.to_json() + "\n")
            sink.flush()
            results.append(result)
            progress.update(task, description=result.problem_id)
            progress.advance(task)

        if parallel == 1:
            for problem, text in jobs:
                progress.update(task, description=problem.id)
                record(_evaluate(evaluator, problem, text))
        else:
            sources = []
            for problem, text in jobs:
                extraction = extract_code(text) if _is_completion(text) else None
                if extraction is not None and extraction.code is None:
                    record(evaluator.evaluate_completion(problem, text))  # a format error: nothing to run
                else:
                    sources.append((problem, text if extraction is None else extraction.code))
            for result in evaluator.evaluate_many(sources, max_concurrency=parallel):
                record(result)
            order = {problem.id: i for i, (problem, _) in enumerate(jobs)}
            results.sort(key=lambda r: order.get(r.problem_id, len(order)))
        progress.update(task, description="done")
    if json_output:
        summary = {
            "suite": suite.name, "out": str(out), "evaluated": len(results), "skipped": skipped,
            "counts": dict(Counter(r.status.value for r in results)),
            "cached": sum(r.cached for r in results),  # verdicts served by the result cache
            "results": [{"problem_id": r.problem_id, "status": r.status.value, "message": r.message,
                         "speedup_vs_eager": r.timing.speedup_vs_eager if r.timing else None,
                         "speedup_vs_inductor": r.timing.speedup_vs_inductor if r.timing else None}
                        for r in results],
        }
        typer.echo(json.dumps(summary, indent=2))
    else:
        _print_batch(suite.name, results, skipped, out)
    raise typer.Exit(EXIT_OK if all(r.correct for r in results) else EXIT_NOT_CORRECT)


def _print_batch(suite_name: str, results: list[EvalResult], skipped: list[str], out: Path) -> None:
    speedups = any(r.timing is not None and r.timing.speedup_vs_eager is not None for r in results)
    table = Table(title=f"suite {suite_name}: {len(results)} evaluated", title_justify="left")
    table.add_column("problem", no_wrap=True)
    table.add_column("status", no_wrap=True)
    table.add_column("message", overflow="fold")
    if speedups:
        table.add_column("vs eager", justify="right")
        table.add_column("vs inductor", justify="right")
    for r in results:
        row: list = [Text(r.problem_id), _status(r.status), Text(r.message)]
        if speedups:
            row += [_x(r.timing.speedup_vs_eager if r.timing else None),
                    _x(r.timing.speedup_vs_inductor if r.timing else None)]
        table.add_row(*row)
    _out.print(table)
    _out.print(Text("status: ").append_text(_counts_line(results)))
    if skipped:
        _out.print(Text(f"skipped (no solution): {len(skipped)}", style="yellow"))
    _out.print(Text(f"results appended to {out}", style="dim"))


@app.command("problems", epilog=_EPILOG)
def problems_cmd(
    suite: Annotated[str, typer.Argument(metavar="SUITE", help="A suite directory, a KernelBench checkout, or 'builtin'.")] = "builtin",
    json_output: Annotated[bool, typer.Option("--json", help="Print a JSON list on stdout.")] = False,
) -> None:
    """List a suite's problems."""
    with _bad_input():
        loaded = load_suite(suite)
    if json_output:
        rows = [{"id": p.id, "name": p.name, "level": p.level, "tags": list(p.tags), "family": p.family,
                 "split": p.split, "difficulty": p.difficulty, "sha256": p.sha256, "path": str(p.path),
                 "solution": str(loaded.solution_path(p) or "") or None}
                for p in loaded]
        typer.echo(json.dumps(rows, indent=2))
        return
    table = Table(title=f"suite {loaded.name}: {len(loaded)} problems ({loaded.root})", title_justify="left")
    for column in ("id", "level", "family", "split", "difficulty", "tags", "solution", "sha256"):
        table.add_column(column, no_wrap=column in ("id", "sha256"))
    for p in loaded:
        table.add_row(Text(p.id), "" if p.level is None else str(p.level), Text(p.family), p.split,
                      "" if p.difficulty is None else str(p.difficulty), Text(", ".join(p.tags)),
                      "yes" if loaded.solution_path(p) else "", p.sha256[:12])
    _out.print(table)


@app.command("rules", epilog=_EPILOG)
def rules_cmd(
    json_output: Annotated[bool, typer.Option("--json", help="Print a JSON list on stdout.")] = False,
) -> None:
    """List the checks against reward hacking: static rules (on the source, before running) and runtime
    checks (in the sandbox and the verdict), each with id, default policy and message."""
    runtime = [{"id": c.id, "policy": "reject", "message": c.message, "kind": "runtime",
                "gpu_only": c.gpu_only} for c in RUNTIME_CHECKS.values()]
    if json_output:
        static = [{**dataclasses.asdict(rule), "kind": "static"} for rule in RULES]
        typer.echo(json.dumps(static + runtime, indent=2))
        return
    table = Table(title=f"{len(RULES)} static rules (EvalConfig.rule_policy overrides the policy per id)",
                  title_justify="left", box=box.SIMPLE_HEAD)
    for column in ("id", "policy", "message"):
        table.add_column(column, no_wrap=column != "message")
    for rule in RULES:
        table.add_row(rule.id, Text(rule.policy, style="red" if rule.policy == "reject" else "yellow"),
                      Text(rule.message))
    _out.print(table)
    table = Table(title=f"{len(runtime)} runtime checks (EvalConfig.runtime_policy overrides the policy per id)",
                  title_justify="left", box=box.SIMPLE_HEAD)
    for column in ("id", "policy", "message"):
        table.add_column(column, no_wrap=column != "message")
    for check in runtime:
        table.add_row(check["id"], Text("reject", style="red"),
                      Text(check["message"] + (" (GPU)" if check["gpu_only"] else "")))
    _out.print(table)


@app.command("audit", epilog=_EPILOG)
def audit_cmd(
    suite: Annotated[str, typer.Argument(metavar="SUITE", help="A suite directory, a KernelBench checkout, or 'builtin'.")] = "builtin",
    device: DeviceOpt = _DEFAULTS.device,
    json_output: Annotated[bool, typer.Option("--json", help="Print JSON lines (one per problem) on stdout.")] = False,
) -> None:
    """Flag problems whose reference cannot grade kernels (zeros/constant/other-input answers pass, identity,
    unused weights, nondeterminism, errors; on a GPU also launch-bound and too-large). Exit 1 when any
    problem has an unwaived flag."""
    with _bad_input():
        loaded = load_suite(suite)
    evaluator = _make_evaluator(device=device)
    audits = []
    with evaluator, _evaluating(), _progress() as progress:
        timing = evaluator.environment().mode == "gpu"
        task = progress.add_task("audit", total=len(loaded))
        for problem in loaded:
            progress.update(task, description=problem.id)
            audit = evaluator.audit(problem, timing=timing)
            audits.append(audit)
            if json_output:
                typer.echo(json.dumps(dataclasses.asdict(audit)))
            progress.advance(task)
    flagged = [a for a in audits if a.unwaived]
    if not json_output:
        table = Table(title=f"audit of {loaded.name}: {len(audits)} problems, {len(flagged)} flagged",
                      title_justify="left", box=box.SIMPLE_HEAD)
        for column in ("problem", "flags", "eager ms (bench)"):
            table.add_column(column)
        for a in audits:
            flags = Text("; ".join(f"{f.flag}[{f.input_set}]" + (" (waived)" if f.waived else "") for f in a.flags)
                         or "ok", style="red" if a.unwaived else "green")
            table.add_row(Text(a.problem_id), flags, _num(a.eager_ms.get("bench", a.eager_ms.get("default"))))
        _out.print(table)
        for a in flagged:
            _out.print(Text(f"{a.problem_id}: {a.summary()}", style="red"), soft_wrap=True)
    raise typer.Exit(EXIT_NOT_CORRECT if flagged else EXIT_OK)


@app.command("baselines", epilog=_EPILOG)
def baselines_cmd(
    suite: Annotated[str, typer.Argument(metavar="SUITE", help="A suite directory, a KernelBench checkout, or 'builtin'.")] = "builtin",
    device: Annotated[str, typer.Option("--device", help="cuda or cuda:N (baselines are GPU times).")] = "cuda",
    only: Annotated[str | None, typer.Option("--only", help="Only problems whose id starts with this prefix.",
                                             show_default=False)] = None,
    fresh: Annotated[bool, typer.Option("--fresh", help="Re-time and overwrite cached numbers.")] = False,
    json_output: Annotated[bool, typer.Option("--json", help="Print JSON lines (one per problem) on stdout.")] = False,
) -> None:
    """Time every problem's reference (eager and torch.compile) on a GPU and store the numbers in the
    baseline cache (CACHE_DIR/baselines.sqlite, default ~/.cache/kernelrl) that evaluations reuse. Exit 1 when
    some problem could not be timed, 2 without a GPU."""
    with _bad_input():
        loaded = load_suite(suite)
        problems = [p for p in loaded if only is None or p.id.startswith(only)]
    if not problems:
        _fail(f"no problem of {loaded.name} has an id starting with {only!r}", EXIT_BAD_INPUT)
    evaluator = _make_evaluator(device=device)
    no_gpu = ("baselines are GPU times and this machine has no usable CUDA GPU; nothing was timed or stored "
              "(run `kernelrl baselines` on the GPU machine that will evaluate)")
    with evaluator:
        try:
            mode = evaluator.environment().mode
        except EvaluatorError as exc:
            _fail(f"{no_gpu}\n{exc}", EXIT_BAD_INPUT)
        if mode != "gpu":
            _fail(no_gpu, EXIT_BAD_INPUT)
        reports: list[tuple[Problem, TimingReport]] = []
        with _evaluating(), _progress() as progress:
            task = progress.add_task("baselines", total=len(problems))
            for problem in problems:
                progress.update(task, description=problem.id)
                report = evaluator.time_baselines(problem, fresh=fresh)
                reports.append((problem, report))
                if json_output:
                    typer.echo(json.dumps({"problem_id": problem.id, **dataclasses.asdict(report)}))
                progress.advance(task)
        stats = evaluator.cache_stats()["baselines"]
    failed = [(p, r) for p, r in reports if r.eager is None]
    if not json_output:
        table = Table(title=f"baselines of {loaded.name}: {len(reports)} problems, {stats.hits} from the cache, "
                            f"{stats.stores} timed and stored", title_justify="left", box=box.SIMPLE_HEAD)
        for column in ("problem", "eager ms", "inductor ms", "source", "note"):
            table.add_column(column)
        for p, r in reports:
            source = r.eager.source if r.eager is not None else "-"
            table.add_row(Text(p.id), _ms(r.eager), _ms(r.inductor), source, Text(r.unavailable_reason or ""))
        _out.print(table)
    raise typer.Exit(EXIT_NOT_CORRECT if failed else EXIT_OK)


_TIMING_COLUMNS = ("cand ms", "eager ms", "inductor ms", "vs eager", "vs inductor")


def _demo_table(pairs: list[tuple[DemoCase, EvalResult]], verdicts: bool = True, timings: bool = False) -> Table:
    table = Table(title="kernelrl demo" if verdicts else "timings (median ms, speedup of the candidate)",
                  title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("example", overflow="fold", no_wrap=not verdicts)
    if verdicts:
        table.add_column("problem", overflow="fold")
        table.add_column("expected", no_wrap=True)
        table.add_column("got", no_wrap=True)
        table.add_column("message", min_width=16)
    if timings:
        for column in _TIMING_COLUMNS:
            table.add_column(column, justify="right", no_wrap=True)
    for case, r in pairs:
        row: list = [case.example_file]
        if verdicts:
            ok = r.status is case.expected_status
            got = _status(r.status).append(" ✓" if ok else " ✗ unexpected", style="green" if ok else "bold red")
            row += [case.problem_id, case.expected_status.value, got, Text(r.message)]
        if timings:
            t = r.timing
            row += [""] * len(_TIMING_COLUMNS) if t is None else [
                _ms(t.candidate), _ms(t.eager), _ms(t.inductor), _x(t.speedup_vs_eager), _x(t.speedup_vs_inductor)]
        table.add_row(*row)
    return table


@app.command("demo", epilog=_EPILOG)
def demo_cmd(device: DeviceOpt = _DEFAULTS.device, trials: TrialsOpt = _DEFAULTS.trials) -> None:
    """Evaluate the shipped example candidates on built-in problems; each has a known verdict."""
    evaluator = _make_evaluator(device=device, trials=trials)
    with evaluator, _evaluating(), _progress() as progress:
        task = progress.add_task("demo", total=len(DEMO_CASES))

        def started(case: DemoCase) -> None:
            progress.update(task, description=f"{case.example_file} on {case.problem_id}")

        pairs = run_demo(evaluator, on_start=started, on_result=lambda case, result: progress.advance(task))
        progress.update(task, description="done")
    timed = any(_has_times(r.timing) for _, r in pairs)
    table = _demo_table(pairs, timings=timed)
    if timed and Measurement.get(_out, _out.options.update_width(1 << 16), table).minimum > _out.width:
        # too narrow for one table: the timing columns go to a second one
        _out.print(_demo_table(pairs, timings=False))
        table = _demo_table(pairs, verdicts=False, timings=True)
    matched = sum(r.status is case.expected_status for case, r in pairs)
    _out.print(table)
    env = next((r.environment for _, r in pairs if r.environment is not None), None)
    if env is not None:
        _out.print(Text(f"environment: {env.mode} on {env.device_name} (torch {env.torch_version}, "
                        f"triton {env.triton_version or '-'})", style="dim"))
    reasons = {r.timing.unavailable_reason for _, r in pairs if r.timing and r.timing.unavailable_reason}
    for reason in sorted(reasons):
        _out.print(Text(f"timing: {reason}", style="dim"))
    all_ok = matched == len(pairs)
    _out.print(Text(f"{matched}/{len(pairs)} verdicts as expected", style="bold green" if all_ok else "bold red"))
    raise typer.Exit(EXIT_OK if all_ok else EXIT_NOT_CORRECT)


# -- agent, bench, report (issue 6) -------------------------------------------------------------------------------
EXIT_POLICY = 4  # the policy failed (server unreachable after retries, replay without a matching completion)

PolicyOpt = Annotated[str, typer.Option(
    "--policy", help="replay:FILE.jsonl, openai:MODEL, hf:PATH_OR_HUB_ID, smollm2 (offline default) "
                     "or, for bench, solutions (replay the suite's reference solutions).")]
BaseUrlOpt = Annotated[str | None, typer.Option(
    "--base-url", help="OpenAI-compatible server (default $OPENAI_BASE_URL, else api.openai.com).", show_default=False)]
ApiKeyEnvOpt = Annotated[str, typer.Option("--api-key-env", help="Environment variable holding the API key.")]
TurnsOpt = Annotated[int, typer.Option("--turns", min=1, help="Refinement turns per sample (K).")]
SamplesOpt = Annotated[int, typer.Option("--samples", min=1, help="Parallel samples per problem (N).")]
ModeOpt = Annotated[str, typer.Option("--mode", help="refine (each sample improves its own kernel) or evolve "
                                                     "(population + kernel database).")]
RewardOpt = Annotated[str, typer.Option("--reward", help="Reward preset with parameters, e.g. tiered, makora:delta=1.8, "
                                                         "composite:alpha=0.1,gamma=0.5, two_stage:stage=midend, kevin.")]
TargetOpt = Annotated[float | None, typer.Option("--target-speedup", help="Stop a problem once a correct kernel is "
                                                                            "this much faster than eager.", show_default=False)]
TemperatureOpt = Annotated[float, typer.Option("--temperature", min=0.0, help="Sampling temperature.")]
MaxTokensOpt = Annotated[int, typer.Option("--max-tokens", min=1, help="Completion token limit per sample.")]
BackendOpt = Annotated[str, typer.Option("--backend", help="Prompt for triton or cuda kernels.")]
TemplatesOpt = Annotated[Path | None, typer.Option("--templates", help="Directory of prompt templates overriding the "
                                                                       "packaged ones (kernelrl/prompts/templates).", show_default=False)]
HardwareOpt = Annotated[str | None, typer.Option("--hardware", help="Hardware facts to put in prompts.", show_default=False)]
KernelDbOpt = Annotated[Path | None, typer.Option(
    "--kernel-db", help="Kernel database (SQLite) shared across runs; default $KERNELRL_KERNEL_DB or "
                        "~/.cache/kernelrl/kernels.sqlite.", show_default=False)]
NoKernelDbOpt = Annotated[bool, typer.Option("--no-kernel-db", help="Do not read or fill the kernel database.")]
JudgeOpt = Annotated[str | None, typer.Option(
    "--judge", help="Policy spec of an LLM judge (e.g. openai:MODEL; uses --base-url/--api-key-env for openai).",
    show_default=False)]
JudgeLambdaOpt = Annotated[float, typer.Option("--judge-lambda", min=0.0, help="Reward r + lambda*J (needs --judge).")]
JudgeVerifyOpt = Annotated[str, typer.Option("--judge-verify", help="off, warn (record the judge's hack finding on "
                                                                     "correct kernels) or enforce (hack_detected).")]


def _judge_options(judge: str | None, judge_lambda: float, judge_verify: str, base_url: str | None,
                   api_key_env: str) -> dict:
    from kernelrl.policies import PolicyError, make_policy
    from kernelrl.rewards.judge import LLMJudge
    from kernelrl.runs import default_kernel_db_path

    if judge is None:
        if judge_lambda or judge_verify != "off":
            _fail("--judge-lambda and --judge-verify need --judge SPEC", EXIT_BAD_INPUT)
        return {}
    if judge_verify not in ("off", "warn", "enforce"):
        _fail(f"--judge-verify must be off, warn or enforce, not {judge_verify!r}", EXIT_BAD_INPUT)
    options = {"base_url": base_url, "api_key_env": api_key_env} if judge.startswith("openai:") else {}
    try:
        with _bad_input():
            policy = make_policy(judge, **options)
    except PolicyError as exc:
        _fail(f"the judge could not start: {exc}", EXIT_POLICY)
    cache = default_kernel_db_path().with_name("judge-cache.sqlite")
    return {"judge": LLMJudge(policy, cache_path=cache), "judge_lambda": judge_lambda, "judge_verify": judge_verify}


def _agent_setup(policy: str, base_url: str | None, api_key_env: str, turns: int, samples: int, mode: str,
                 reward: str, target_speedup: float | None, temperature: float, max_tokens: int, backend: str,
                 templates: Path | None, hardware: str | None, kernel_db: Path | None, no_kernel_db: bool):
    from kernelrl.agent import AgentConfig
    from kernelrl.policies import PolicyError, make_policy
    from kernelrl.prompts import Prompts
    from kernelrl.rewards import parse_reward_spec
    from kernelrl.runs import KernelDB, default_kernel_db_path

    with _bad_input():
        name, params = parse_reward_spec(reward)
        config = AgentConfig(turns=turns, samples=samples, mode=mode, reward=name, reward_params=params,
                             target_speedup=target_speedup, temperature=temperature, max_tokens=max_tokens)
        prompts = Prompts(templates, backend=backend, hardware=hardware)
        db = None if no_kernel_db else KernelDB(kernel_db or default_kernel_db_path())
    built = None
    if policy != "solutions":
        options = {}
        if policy.startswith("openai:"):
            options = {"base_url": base_url, "api_key_env": api_key_env}
        try:
            with _bad_input():
                built = make_policy(policy, **options)
        except PolicyError as exc:
            _fail(f"the policy could not start: {exc}", EXIT_POLICY)
    return built, config, prompts, db


@contextmanager
def _running_policy() -> Iterator[None]:
    from kernelrl.policies import PolicyError

    try:
        yield
    except PolicyError as exc:
        _fail(f"the policy failed: {exc} (finished attempts are saved; re-run the same command to resume)",
              EXIT_POLICY)


def _step_line(step) -> Text:
    line = Text(f"{step.problem_id} sample {step.sample} turn {step.turn}: ")
    line.append_text(_status(step.result.status))
    line.append(f"  reward {step.reward:.3g}")
    if step.speedup_vs_eager is not None:
        line.append(f"  {step.speedup_vs_eager:.2f}x eager")
    line.append(f"  {step.result.message[:100]}", style="dim")
    return line


def _print_metrics(metrics: dict, title: str) -> None:
    """Two narrow tables (correctness, then speed and cost) so they fit an 80-column terminal."""
    ks = sorted({k for m in metrics.values() for k in m.pass_at_k}, key=lambda k: int(k.split("@")[1]))

    def pct(v):
        return "-" if v is None else f"{100 * v:.1f}%"

    def table(caption: str, columns: list[str]) -> Table:
        t = Table(title=caption, title_justify="left", box=box.SIMPLE_HEAD, padding=(0, 1), pad_edge=False,
                  collapse_padding=True)
        for column in columns:
            t.add_column(column, justify="left" if column == "level" else "right", no_wrap=True)
        return t

    first = table(title, ["level", "problems", "attempts", "format", "compile", "correct", "solved", *ks])
    second = table("speed (best correct kernel per problem) and cost",
                   ["level", *[f"fast{p:g}" for p in (1.0, 1.5, 2.0)], "ind fast1", "gmean", "ind gmean",
                    "tok/sol", "GPUs/sol"])
    for name, m in metrics.items():
        first.add_row(name, str(m.problems), str(m.attempts), pct(m.format_rate), pct(m.compile_rate),
                      pct(m.correct_rate), f"{m.solved}", *[pct(m.pass_at_k.get(k)) for k in ks])
        second.add_row(name, *[pct(v) for v in m.fast_p_eager.values()], pct(m.fast_p_inductor["fast_1"]),
                       _x(m.geomean_speedup_eager) or "-", _x(m.geomean_speedup_inductor) or "-",
                       _num(m.tokens_per_solved), _num(m.gpu_seconds_per_solved))
    _out.print(first)
    _out.print(second)
    if all(m.timed_correct == 0 for m in metrics.values()):
        _out.print(Text("no measured speedups: fast_p and geomean need a GPU run", style="dim"))


def _resolve_problems(suite_location: str, specs: list[str]) -> list[Problem]:
    with _bad_input():
        found = []
        suite = None
        for spec in specs:
            if Path(spec).is_file():
                found.append(load_problem(spec))
                continue
            suite = suite or load_suite(suite_location)
            try:
                found.append(suite.get(spec))
            except KeyError:
                raise ProblemError(f"{spec} is neither a problem file nor a problem id of suite {suite.name} "
                                   "(see kernelrl problems)") from None
        return found


@app.command("agent", epilog=_EPILOG)
def agent_cmd(
    problems: Annotated[list[str], typer.Argument(metavar="PROBLEM...", help="Problem ids of --suite or problem files.")],
    suite: Annotated[str, typer.Option("--suite", help="Suite the problem ids refer to.")] = "builtin",
    policy: PolicyOpt = "smollm2",
    base_url: BaseUrlOpt = None,
    api_key_env: ApiKeyEnvOpt = "OPENAI_API_KEY",
    turns: TurnsOpt = 3,
    samples: SamplesOpt = 4,
    mode: ModeOpt = "refine",
    reward: RewardOpt = "tiered",
    target_speedup: TargetOpt = None,
    temperature: TemperatureOpt = 0.7,
    max_tokens: MaxTokensOpt = 4096,
    backend: BackendOpt = "triton",
    templates: TemplatesOpt = None,
    hardware: HardwareOpt = None,
    run_dir: Annotated[Path, typer.Option("--run-dir", help="Where trajectories go (JSONL + SQLite); re-running "
                                                            "resumes.")] = Path("runs/agent"),
    kernel_db: KernelDbOpt = None,
    no_kernel_db: NoKernelDbOpt = False,
    judge: JudgeOpt = None,
    judge_lambda: JudgeLambdaOpt = 0.0,
    judge_verify: JudgeVerifyOpt = "off",
    device: DeviceOpt = _DEFAULTS.device,
    trials: TrialsOpt = _DEFAULTS.trials,
    json_output: Annotated[bool, typer.Option("--json", help="Print one JSON summary per problem.")] = False,
) -> None:
    """Optimize problems with an LLM: K refinement turns x N samples, keeping the best correct kernel by reward.
    Exit 0 when every problem was solved, 1 otherwise, 4 when the policy failed."""
    from kernelrl.agent import Agent
    from kernelrl.runs import RunStore

    if policy == "solutions":
        _fail("--policy solutions is for kernelrl bench", EXIT_BAD_INPUT)
    chosen = _resolve_problems(suite, problems)
    built, config, prompts, db = _agent_setup(policy, base_url, api_key_env, turns, samples, mode, reward,
                                              target_speedup, temperature, max_tokens, backend, templates, hardware,
                                              kernel_db, no_kernel_db)
    with _bad_input():
        store = RunStore(run_dir)
    store.write_config({"policy": built.name, "agent": dataclasses.asdict(config), "problems": [p.id for p in chosen]})
    evaluator = _make_evaluator(device=device, trials=trials)
    on_step = None if json_output else (lambda step: _err.print(_step_line(step), soft_wrap=True))
    agent = Agent(built, evaluator, config, prompts=prompts, store=store, kernel_db=db, on_step=on_step,
                  **_judge_options(judge, judge_lambda, judge_verify, base_url, api_key_env))
    outcomes = []
    with evaluator, _evaluating(), _running_policy():
        for problem in chosen:
            outcome = agent.solve(problem)
            outcomes.append(outcome)
            best = outcome.best
            if json_output:
                typer.echo(json.dumps({
                    "problem_id": problem.id, "solved": outcome.solved, "attempts": len(outcome.steps),
                    "stopped_early": outcome.stopped_early,
                    "best": None if best is None else {"sample": best.sample, "turn": best.turn, "reward": best.reward,
                                                       "speedup_vs_eager": best.speedup_vs_eager,
                                                       "speedup_vs_inductor": best.speedup_vs_inductor}}))
            else:
                msg = (f"{problem.id}: solved at turn {best.turn} (sample {best.sample}, reward {best.reward:.3g})"
                       if best else f"{problem.id}: not solved in {len(outcome.steps)} attempts")
                _out.print(Text(msg, style="green" if best else "red"))
    solved = [o for o in outcomes if o.best is not None]
    if solved:
        from kernelrl.report import write_best_kernels

        write_best_kernels(store.run_dir, store.steps())
        if not json_output:
            _out.print(Text(f"best kernels in {store.run_dir / 'kernels'}; trajectories in {store.jsonl_path}",
                            style="dim"))
    raise typer.Exit(EXIT_OK if len(solved) == len(outcomes) else EXIT_NOT_CORRECT)


@app.command("bench", epilog=_EPILOG)
def bench_cmd(
    policy: PolicyOpt = "smollm2",
    suite: Annotated[str, typer.Option("--suite", help="A suite directory, a KernelBench checkout, or 'builtin'.")] = "builtin",
    split: Annotated[str, typer.Option("--split", help="test, train or all.")] = "test",
    level: Annotated[list[int] | None, typer.Option("--level", help="Only these levels (repeatable).",
                                                    show_default=False)] = None,
    problem: Annotated[list[str] | None, typer.Option("--problem", help="Only these problem ids (repeatable).",
                                                      show_default=False)] = None,
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="At most this many problems.",
                                              show_default=False)] = None,
    samples: SamplesOpt = 1,
    turns: TurnsOpt = 1,
    run_dir: Annotated[Path | None, typer.Option("--run-dir", help="Run directory (default runs/<policy>-<suite>-"
                                                                   "<split>); re-running resumes.", show_default=False)] = None,
    base_url: BaseUrlOpt = None,
    api_key_env: ApiKeyEnvOpt = "OPENAI_API_KEY",
    mode: ModeOpt = "refine",
    reward: RewardOpt = "tiered",
    target_speedup: TargetOpt = None,
    temperature: TemperatureOpt = 0.7,
    max_tokens: MaxTokensOpt = 4096,
    backend: BackendOpt = "triton",
    templates: TemplatesOpt = None,
    hardware: HardwareOpt = None,
    kernel_db: KernelDbOpt = None,
    no_kernel_db: NoKernelDbOpt = False,
    judge: JudgeOpt = None,
    judge_lambda: JudgeLambdaOpt = 0.0,
    judge_verify: JudgeVerifyOpt = "off",
    device: DeviceOpt = _DEFAULTS.device,
    trials: TrialsOpt = _DEFAULTS.trials,
    report: Annotated[bool, typer.Option("--report/--no-report", help="Also write RUN_DIR/report.html.")] = True,
    jobs: Annotated[int, typer.Option("--jobs", min=1, help="Problems solved at once (their evaluations share the "
                                                             "evaluator's sandboxes; GPU timing stays one at a "
                                                             "time).")] = 1,
) -> None:
    """Benchmark a policy on a suite split: metrics.json, eval_results.json (KernelBench format) and the
    trajectories in RUN_DIR. Resumable. Exit 0 when the run finished (benchmarks report numbers, they do
    not gate), 2 bad input, 3 evaluator failure, 4 policy failure."""
    import re as _re

    from kernelrl.agent.bench import run_bench, solutions_replay
    from kernelrl.policies import ReplayPolicy
    from kernelrl.report import write_report

    if split not in ("test", "train", "all"):
        _fail(f"--split must be test, train or all, not {split!r}", EXIT_BAD_INPUT)
    with _bad_input():
        loaded = load_suite(suite)
        chosen = list(loaded) if split == "all" else list(loaded.split(split))
        if level:
            chosen = [p for p in chosen if p.level in level]
        if problem:
            unknown = sorted(set(problem) - {p.id for p in loaded})
            if unknown:
                raise ProblemError(f"no problem {', '.join(unknown)} in suite {loaded.name}")
            chosen = [p for p in chosen if p.id in problem]
    if run_dir is None:
        slug = _re.sub(r"[^A-Za-z0-9_.-]+", "_", policy if policy == "solutions" else policy.split("/")[-1])[-60:]
        run_dir = Path("runs") / f"{slug}-{loaded.name}-{split}"
    built, config, prompts, db = _agent_setup(policy, base_url, api_key_env, turns, samples, mode, reward,
                                              target_speedup, temperature, max_tokens, backend, templates, hardware,
                                              kernel_db, no_kernel_db)
    if policy == "solutions":
        with _bad_input():
            run_dir.mkdir(parents=True, exist_ok=True)
            replay_file, covered = solutions_replay(loaded, chosen, run_dir / "solutions_replay.jsonl")
        missing = len(chosen) - len(covered)
        if missing:
            _err.print(Text(f"{missing} problems have no reference solution and are skipped", style="yellow"))
        chosen, built = covered, ReplayPolicy(replay_file)
    if limit:
        chosen = chosen[:limit]
    if not chosen:
        _fail(f"no problems selected from suite {loaded.name} (split {split}, levels {level or 'all'})", EXIT_BAD_INPUT)
    judge_options = _judge_options(judge, judge_lambda, judge_verify, base_url, api_key_env)
    evaluator = _make_evaluator(device=device, trials=trials)
    info = {"judge": judge, "judge_lambda": judge_lambda, "judge_verify": judge_verify, "suite": loaded.name, "suite_root": str(loaded.root), "split": split, "levels": level,
            "policy_spec": policy, "device": device, "trials": trials}
    with evaluator, _evaluating(), _running_policy(), _progress() as progress:
        task = progress.add_task("bench", total=len(chosen))

        def on_problem(p, outcome) -> None:
            if outcome is None:
                progress.update(task, description=p.id)
            else:
                progress.advance(task)

        result = run_bench(built, chosen, run_dir, evaluator, config, prompts=prompts, kernel_db=db, info=info,
                           on_problem=on_problem, problem_concurrency=jobs, **judge_options)
        progress.update(task, description="done")
    _print_metrics(result.metrics, f"kernelrl bench: {built.name} on {loaded.name}/{split}, "
                                   f"{samples} samples x {turns} turns")
    _out.print(Text(f"run directory {run_dir}: metrics.json, eval_results.json, trajectories.jsonl, run.sqlite",
                    style="dim"))
    if report:
        _out.print(Text(f"report: {write_report(run_dir)}", style="dim"))
    raise typer.Exit(EXIT_OK)


@app.command("report", epilog=_EPILOG)
def report_cmd(
    run_dir: Annotated[Path, typer.Argument(metavar="RUN_DIR", help="A run directory of kernelrl bench or agent.")],
    out: Annotated[Path | None, typer.Option("--out", help="HTML file (default RUN_DIR/report.html); kernel links are "
                                                           "relative to RUN_DIR.", show_default=False)] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print the metrics as JSON instead of a table.")] = False,
) -> None:
    """Write a self-contained HTML report of a run (metrics per level, speedup distributions, per-problem rows
    linking to the best kernels) and print a summary."""
    from kernelrl.report import metrics_by_level, problem_summaries, write_report
    from kernelrl.runs import open_run

    with _bad_input():
        store = open_run(run_dir)
        steps = store.steps()
        path = write_report(run_dir, out)
    metrics = metrics_by_level(steps)
    if json_output:
        typer.echo(json.dumps({k: m.to_dict() for k, m in metrics.items()}, indent=2))
        raise typer.Exit(EXIT_OK)
    _print_metrics(metrics, f"run {run_dir}: {len(steps)} attempts")
    table = Table(title="problems", title_justify="left", box=box.SIMPLE_HEAD, padding=(0, 1), pad_edge=False,
                  collapse_padding=True)
    for column in ("problem", "samples", "tries", "best", "reward", "turn", "x eager", "x ind"):
        table.add_column(column, justify="left" if column in ("problem", "best") else "right", no_wrap=True)
    for p in problem_summaries(steps):
        table.add_row(Text(p.problem_id), str(p.samples), str(p.attempts), _status(p.best_status) if p.best_status
                      in Status._value2member_map_ else p.best_status, _num(p.best_reward),
                      "" if p.best_turn is None else str(p.best_turn), _x(p.speedup_vs_eager), _x(p.speedup_vs_inductor))
    _out.print(table)
    _out.print(Text(f"report: {path}", style="dim"))
    raise typer.Exit(EXIT_OK)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
