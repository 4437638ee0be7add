"""Commands over the evaluator: eval, problems, rules, audit, baselines, demo."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from kernelrl import (
    Candidate,
    EvalResult,
    EvaluatorError,
    Problem,
    ProblemError,
    load_suite,
)
from kernelrl.cli import render
from kernelrl.cli.app import (
    EPILOG,
    EXIT_BAD_INPUT,
    EXIT_NOT_CORRECT,
    EXIT_OK,
    app,
    bad_input,
    evaluating,
    fail,
    given,
    stderr,
    stdout,
    usage_error,
)
from kernelrl.cli.options import (
    Evaluation,
    JsonOpt,
    SuiteArg,
    SuiteOpt,
    check_device,
    eval_options,
    gpu_devices,
    resolve_problems,
    with_options,
)

OnlyOpt = Annotated[str | None, typer.Option("--only", metavar="PREFIX", show_default=False,
                                             help="Only problems whose id starts "
                                                  "with PREFIX (e.g. level1/).")]


# -- eval ----------------------------------------------------------------------------------------------------
@app.command("eval", epilog=EPILOG)
@with_options(evaluation=eval_options("device", "trials", "seed", "run_timeout_s", "compile_timeout_s",
                                      "timing", "result_cache"))
def eval_cmd(
    ctx: typer.Context,
    problem: Annotated[str | None, typer.Argument(
        metavar="PROBLEM", show_default=False,
        help="A problem id of --suite (e.g. level1/1_row_softmax) or a "
             "KernelBench-format problem file.")] = None,
    solution_file: Annotated[Path | None, typer.Argument(
        metavar="SOLUTION_FILE", show_default=False,
        help="A module defining ModelNew, or an LLM completion with a fenced ```python block.")] = None,
    suite: SuiteOpt = "builtin",
    solutions: Annotated[Path | None, typer.Option(
        "--solutions", metavar="DIR", show_default=False,
        help="Batch mode: evaluate each problem of --suite that has a solution here (named like its id: "
             "level1/23_x.py or 23_x.py).")] = None,
    out: Annotated[Path, typer.Option("--out", help="Batch mode: JSON lines "
                                                    "results file (appended to).")] = Path(
        "results.jsonl"),
    jobs: Annotated[int, typer.Option("--jobs", min=1, help="Batch mode: candidates evaluated at once (GPU "
                                                            "timing stays one at a time).")] = 1,
    json_output: JsonOpt = False,
    *,
    evaluation: Evaluation,
) -> None:
    """Evaluate one candidate (PROBLEM SOLUTION_FILE), or every solution in a directory (--solutions DIR)
    against --suite. Exit 0 when every candidate is correct, 1 otherwise."""

    if solutions is not None:
        if problem is not None or solution_file is not None:
            usage_error(ctx, "batch mode (--solutions DIR) takes no PROBLEM or SOLUTION_FILE: it evaluates "
                        "every problem of --suite that has a solution in DIR")
        _eval_batch(suite, solutions, out, jobs, json_output, evaluation)
        return
    if problem is None or solution_file is None:
        usage_error(ctx, "give PROBLEM SOLUTION_FILE (PROBLEM: a problem id of --suite, or a problem file), "
                    "or --solutions DIR to evaluate a directory of solutions")
    for name in ("out", "jobs"):
        if given(ctx, name):
            usage_error(ctx, f"--{name} is for batch mode (--solutions DIR)")
    if given(ctx, "suite") and Path(problem).is_file():
        usage_error(ctx, f"{problem} is a problem file; --suite names the suite of a problem id")
    _eval_one(problem, suite, solution_file, json_output, evaluation)


def _eval_one(spec: str, suite: str, solution_file: Path, json_output: bool, config: Evaluation) -> None:
    [problem] = resolve_problems(suite, [spec])
    with bad_input():
        text = solution_file.read_text()
    with config.open() as scorer, evaluating():
        result = scorer.evaluate_one(problem, text)
    if json_output:
        typer.echo(result.to_json())
    else:
        render.print_result(stdout(), result, solution_file, Candidate.from_text(text).from_completion)
    raise typer.Exit(EXIT_OK if result.correct else EXIT_NOT_CORRECT)


def _find_solution(solutions: Path, problem: Problem) -> Path | None:
    for candidate in (solutions / f"{problem.id}.py", solutions / f"{problem.name}.py"):
        if candidate.is_file():
            return candidate
    return None


def _eval_batch(suite_location: str, solutions: Path, out: Path, jobs: int, json_output: bool,
                config: Evaluation) -> None:
    with bad_input():
        suite = load_suite(suite_location)
        if not solutions.is_dir():
            raise ProblemError(f"solutions {solutions} is not a directory")
        if out.is_dir() or not out.parent.is_dir():
            raise ValueError(f"--out {out} must be a file in an existing directory")
        pairs: list[tuple[Problem, str]] = []
        skipped: list[str] = []
        for problem in suite:
            path = _find_solution(solutions, problem)
            if path is None:
                skipped.append(problem.id)
            else:
                pairs.append((problem, path.read_text()))
    if not pairs:
        fail(f"no solution in {solutions} matches any of the {len(suite)} problems of suite {suite.name} "
             f"(expected files like {solutions / (suite.problems[0].id + '.py')})", EXIT_BAD_INPUT)
    with bad_input():
        sink = out.open("a")  # everything was checked: now the results file may be created
    indexed: list[tuple[int, EvalResult]] = []
    with sink, config.open(max_concurrency=jobs) as scorer, evaluating(), render.progress(stderr()) as bar:
        task = bar.add_task("evaluating", total=len(pairs))
        # streamed as they finish, so a crash loses only the candidates still running
        for index, result in scorer.evaluate_indexed(pairs):
            sink.write(result.to_json() + "\n")
            sink.flush()
            indexed.append((index, result))
            bar.update(task, description=result.problem_id, advance=1)
        bar.update(task, description="done")
    results = [result for _, result in sorted(indexed, key=lambda pair: pair[0])]
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
        console = stdout()
        console.print(render.batch_table(console, suite.name, results))
        console.print(Text("status: ").append_text(render.counts_line(results)))
        if skipped:
            console.print(Text(f"skipped (no solution): {len(skipped)}", style="yellow"))
        console.print(Text(f"results appended to {out}", style="dim"))
    raise typer.Exit(EXIT_OK if all(r.correct for r in results) else EXIT_NOT_CORRECT)


# -- problems, rules -----------------------------------------------------------------------------------------
@app.command("problems")
def problems_cmd(suite: SuiteArg = "builtin", json_output: JsonOpt = False) -> None:
    """List a suite's problems."""
    with bad_input():
        loaded = load_suite(suite)
    if json_output:
        rows = [{"id": p.id, "name": p.name, "level": p.level, "tags": list(p.tags), "family": p.family,
                 "split": p.split, "difficulty": p.difficulty, "sha256": p.sha256, "path": str(p.path),
                 "solution": str(loaded.solution_path(p) or "") or None}
                for p in loaded]
        typer.echo(json.dumps(rows, indent=2))
        return
    console = stdout()
    console.print(render.problems_table(console, loaded))


@app.command("rules")
def rules_cmd(json_output: JsonOpt = False) -> None:
    """List the checks against reward hacking: static rules (on the source, before running) and runtime
    checks (in the sandbox and the verdict), each with id, default policy and message."""
    from kernelrl.candidates.rules import RULES
    from kernelrl.verify.runtime_checks import RUNTIME_CHECKS

    runtime = [{"id": c.id, "policy": c.default_policy("cpu"), "gpu_policy": c.default_policy("cuda"),
                "message": c.message, "kind": "runtime", "gpu_only": c.gpu_only}
               for c in RUNTIME_CHECKS.values()]
    if json_output:
        static = [{"id": r.id, "policy": r.policy, "message": r.message, "kind": "static"} for r in RULES]
        typer.echo(json.dumps(static + runtime, indent=2))
        return
    console = stdout()
    console.print(render.rules_table(console, f"{len(RULES)} static rules "
                                              "(VerdictSettings.rule_policy overrides the "
                                              "policy per id)", [(r.id, r.policy, r.message) for r in RULES]))
    console.print(render.rules_table(
        console, f"{len(runtime)} runtime checks (VerdictSettings.runtime_policy "
                 "overrides the policy per id)",
        [(c["id"], c["gpu_policy"] if c["gpu_only"] or c["gpu_policy"] == c["policy"]
          else f"{c['policy']} (GPU: {c['gpu_policy']})", c["message"] + (" (GPU)" if c["gpu_only"] else ""))
         for c in runtime]))


# -- audit, baselines ----------------------------------------------------------------------------------------
def _select(suite_location: str, specs: list[str] | None, only: str | None) -> tuple[str, list[Problem]]:
    """The problems named (ids of the suite or files) plus those whose id starts with `only`; with neither,
    the whole suite. Returns a name for the selection too."""
    chosen = resolve_problems(suite_location, specs or [])
    if specs and only is None:
        return ", ".join(specs) if len(specs) <= 3 else f"{len(specs)} problems", chosen
    with bad_input():
        loaded = load_suite(suite_location)
    if only is not None:
        matched = [p for p in loaded if p.id.startswith(only) and p.id not in {c.id for c in chosen}]
        if not matched:
            fail(f"no problem of suite {loaded.name} has an id starting with {only!r} "
                 "(see kernelrl problems)", EXIT_BAD_INPUT)
        chosen += matched
        return f"{loaded.name} ({len(chosen)} selected)", chosen
    return loaded.name, list(loaded)


@app.command("audit", epilog="Exit codes: 0 = no problem flagged; 1 = at least one problem flagged; 2 = bad "
             "usage or input; 3 = the evaluator itself failed (EvaluatorError).")
@with_options(evaluation=eval_options("device"))
def audit_cmd(
    problems: Annotated[list[str] | None, typer.Argument(
        metavar="[PROBLEM]...", show_default=False,
        help="Problem ids of --suite or problem files (default: every problem of --suite).")] = None,
    suite: SuiteOpt = "builtin",
    only: OnlyOpt = None,
    json_output: Annotated[bool, typer.Option("--json",
                                              help="Print JSON lines (one per problem) on stdout.")] = False,
    *,
    evaluation: Evaluation,
) -> None:
    """Flag problems whose reference cannot grade kernels (zeros/constant/other-input answers pass, identity,
    unused weights, nondeterminism, errors; on a GPU also launch-bound and too-large). Select problems by id
    and/or --only PREFIX; none: the whole suite. Exit 1 when any problem has an unwaived flag."""
    name, chosen = _select(suite, problems, only)
    audits = []
    with evaluation.open() as evaluator, evaluating(), render.progress(stderr()) as bar:
        timing = evaluator.environment().mode == "gpu"
        task = bar.add_task("audit", total=len(chosen))
        for problem in chosen:
            bar.update(task, description=problem.id)
            audit = evaluator.audit(problem, timing=timing)
            audits.append(audit)
            if json_output:
                typer.echo(json.dumps(dataclasses.asdict(audit)))
            bar.advance(task)
    flagged = [a for a in audits if a.unwaived]
    if not json_output:
        console = stdout()
        console.print(render.audit_table(console, f"audit of {name}: {len(audits)} problems, {len(flagged)} "
                                                  "flagged", audits))
        for a in flagged:
            console.print(Text(f"{a.problem_id}: {a.summary()}", style="red"), soft_wrap=True)
    raise typer.Exit(EXIT_NOT_CORRECT if flagged else EXIT_OK)


NO_GPU = ("baselines are GPU times and this machine has no usable CUDA GPU; nothing was timed or stored "
          "(run `kernelrl baselines` on the GPU machine that will evaluate)")


def _check_baselines_device(config: Evaluation) -> None:
    if gpu_devices() == []:
        fail(NO_GPU, EXIT_BAD_INPUT)
    if config.settings.device == "cpu":
        fail("baselines are GPU times: use --device cuda or cuda:N; nothing was timed or stored",
             EXIT_BAD_INPUT)
    check_device(config, "nothing was timed or stored")


@app.command("baselines", epilog="Exit codes: 0 = every reference timed; 1 = at least one could not be "
             "timed; 2 = bad usage or input, or no GPU; 3 = the evaluator itself failed (EvaluatorError).")
@with_options(evaluation=dataclasses.replace(
    eval_options("device", device="cuda"), help={"device": "cuda or cuda:N (baselines are GPU times)."},
    check=_check_baselines_device))
def baselines_cmd(
    suite: SuiteArg = "builtin",
    only: OnlyOpt = None,
    fresh: Annotated[bool, typer.Option("--fresh", help="Re-time and overwrite cached numbers.")] = False,
    json_output: Annotated[bool, typer.Option("--json",
                                              help="Print JSON lines (one per problem) on stdout.")] = False,
    *,
    evaluation: Evaluation,
) -> None:
    """Time every problem's reference (eager and torch.compile) on a GPU and store the numbers in the
    baseline cache (CACHE_DIR/baselines.sqlite, default ~/.cache/kernelrl) that evaluations reuse. Exit 1 when
    some problem could not be timed, 2 without a GPU."""
    name, problems = _select(suite, None, only)
    reports = []
    with evaluation.open() as evaluator:
        try:
            mode = evaluator.environment().mode
        except EvaluatorError as exc:
            fail(f"{NO_GPU}\n{exc}", EXIT_BAD_INPUT)
        if mode != "gpu":
            fail(NO_GPU, EXIT_BAD_INPUT)
        with evaluating(), render.progress(stderr()) as bar:
            task = bar.add_task("baselines", total=len(problems))
            for problem in problems:
                bar.update(task, description=problem.id)
                report = evaluator.time_baselines(problem, fresh=fresh)
                reports.append((problem, report))
                if json_output:
                    typer.echo(json.dumps({"problem_id": problem.id, **dataclasses.asdict(report)}))
                bar.advance(task)
        stats = evaluator.cache_stats()["baselines"]
    failed = [(p, r) for p, r in reports if r.eager is None]
    if not json_output:
        console = stdout()
        console.print(render.baselines_table(
            console, f"baselines of {name}: {len(reports)} problems, {stats.hits} from the cache, "
                     f"{stats.stores} timed and stored", reports))
    raise typer.Exit(EXIT_NOT_CORRECT if failed else EXIT_OK)


# -- demo ----------------------------------------------------------------------------------------------------
@app.command("demo", epilog=EPILOG)
@with_options(evaluation=eval_options("device", "trials"))
def demo_cmd(*, evaluation: Evaluation) -> None:
    """Evaluate the shipped example candidates on built-in problems; each has a known verdict."""
    from kernelrl.demo import DEMO_CASES, DemoCase, run_demo

    with evaluation.open() as scorer, evaluating(), render.progress(stderr()) as bar:
        task = bar.add_task("demo", total=len(DEMO_CASES))

        def finished(case: DemoCase, result: EvalResult) -> None:
            bar.update(task, description=f"{case.example_file} on {case.problem_id}", advance=1)

        pairs = run_demo(scorer, on_result=finished)
        bar.update(task, description="done")
    console = stdout()
    for table in render.demo_tables(console, pairs):
        console.print(table)
    env = next((r.environment for _, r in pairs if r.environment is not None), None)
    if env is not None:
        console.print(Text(f"environment: {env.mode} on {env.device_name} (torch {env.torch_version}, "
                           f"triton {env.triton_version or '-'})", style="dim"))
    for reason in sorted({r.timing.unavailable_reason
                          for _, r in pairs if r.timing and r.timing.unavailable_reason}):
        console.print(Text(f"timing: {reason}", style="dim"))
    matched = sum(r.status is case.expected_status for case, r in pairs)
    all_ok = matched == len(pairs)
    console.print(Text(f"{matched}/{len(pairs)} verdicts as expected",
                       style="bold green" if all_ok else "bold red"))
    raise typer.Exit(EXIT_OK if all_ok else EXIT_NOT_CORRECT)
