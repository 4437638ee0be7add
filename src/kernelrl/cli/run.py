"""Commands that run a policy and read its runs: agent, bench, report.

Both runs check every option, the problems and the policy before they create the run directory, the kernel
database or the judge's cache.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.text import Text

from kernelrl import Problem, ProblemError, load_suite
from kernelrl.agent.loop import AgentConfig
from kernelrl.cli import render
from kernelrl.cli.app import (
    EPILOG,
    EXIT_BAD_INPUT,
    EXIT_NOT_CORRECT,
    EXIT_OK,
    EXIT_POLICY,
    app,
    bad_input,
    evaluating,
    fail,
    running_policy,
    stderr,
    stdout,
)
from kernelrl.cli.options import (
    AGENT_OPTIONS,
    POLICY_OPTIONS,
    Evaluation,
    PolicyOptions,
    SuiteOpt,
    eval_options,
    resolve_problems,
    with_options,
)

EVAL_OPTIONS = eval_options("device", "trials")


def _make_policy(spec: str, opts: PolicyOptions, what: str = "policy"):
    from kernelrl.policies import PolicyError, make_policy

    options = ({"base_url": opts.base_url, "api_key_env": opts.api_key_env} if spec.startswith("openai:")
               else {})
    try:
        with bad_input():
            return make_policy(spec, **options)
    except PolicyError as exc:
        fail(f"the {what} could not start: {exc}", EXIT_POLICY)


def _prompts(opts: PolicyOptions):
    from kernelrl.prompts import Prompts

    with bad_input():
        return Prompts(opts.templates, backend=opts.backend, hardware=opts.hardware)


def _judge_policy(opts: PolicyOptions):
    return None if opts.judge is None else _make_policy(opts.judge, opts, "judge")


def _stores(opts: PolicyOptions, judge_policy) -> tuple[Any, dict]:
    """The kernel database and the judge (with its answer cache): files, so made after every check."""
    from kernelrl.rewards.judge import LLMJudge
    from kernelrl.runs import KernelDB, default_kernel_db_path

    with bad_input():
        db = None if opts.no_kernel_db else KernelDB(opts.kernel_db or default_kernel_db_path())
        if judge_policy is None:
            return db, {}
        judge = LLMJudge(judge_policy, cache_path=default_kernel_db_path().with_name("judge-cache.sqlite"))
    return db, {"judge": judge, "judge_lambda": opts.judge_lambda, "judge_verify": opts.judge_verify}


# -- agent ---------------------------------------------------------------------------------------------------
@app.command("agent", epilog=EPILOG)
@with_options(agent=AGENT_OPTIONS, run=POLICY_OPTIONS, evaluation=EVAL_OPTIONS)
def agent_cmd(
    problems: Annotated[list[str], typer.Argument(metavar="PROBLEM...",
                                                  help="Problem ids of --suite or problem files.")],
    *,
    run: PolicyOptions,
    suite: SuiteOpt = "builtin",
    run_dir: Annotated[Path, typer.Option("--run-dir", help="Where trajectories go (JSONL + SQLite); "
                                                            "re-running resumes.")] = Path("runs/agent"),
    json_output: Annotated[bool, typer.Option("--json", help="Print one JSON summary per problem.")] = False,
    agent: AgentConfig,
    evaluation: Evaluation,
) -> None:
    """Optimize problems with an LLM: K refinement turns x N samples, keeping the best correct kernel by
    reward. Exit 0 when every problem was solved, 1 otherwise, 4 when the policy failed."""
    from kernelrl.agent import Agent
    from kernelrl.runs import RunStore

    if run.policy == "solutions":
        fail("--policy solutions is for kernelrl bench", EXIT_BAD_INPUT)
    if run_dir.exists() and not run_dir.is_dir():
        fail(f"--run-dir {run_dir} is a file", EXIT_BAD_INPUT)
    chosen = resolve_problems(suite, problems)
    prompts = _prompts(run)
    policy = _make_policy(run.policy, run)
    judge_policy = _judge_policy(run)
    # every check passed: from here on files are made
    db, judge_options = _stores(run, judge_policy)
    with bad_input():
        store = RunStore(run_dir)
    store.write_config({"policy": policy.name, "agent": dataclasses.asdict(agent),
                        "problems": [p.id for p in chosen]})
    err = stderr()
    on_step = None if json_output else (lambda step: err.print(render.step_line(step), soft_wrap=True))
    evaluator = evaluation.open()
    solver = Agent(policy, evaluator, agent, prompts=prompts, store=store, kernel_db=db, on_step=on_step,
                   **judge_options)
    outcomes = []
    console = stdout()
    with evaluator, evaluating(), running_policy():
        for problem in chosen:
            outcome = solver.solve(problem)
            outcomes.append(outcome)
            best = outcome.best
            if json_output:
                typer.echo(json.dumps({
                    "problem_id": problem.id, "solved": outcome.solved, "attempts": len(outcome.steps),
                    "stopped_early": outcome.stopped_early,
                    "best": None if best is None else {"sample": best.sample, "turn": best.turn,
                                                       "reward": best.reward,
                                                       "speedup_vs_eager": best.speedup_vs_eager,
                                                       "speedup_vs_inductor": best.speedup_vs_inductor}}))
            else:
                msg = (f"{problem.id}: solved at turn {best.turn} (sample {best.sample}, "
                       f"reward {best.reward:.3g})"
                       if best else f"{problem.id}: not solved in {len(outcome.steps)} attempts")
                console.print(Text(msg, style="green" if best else "red"))
    solved = [o for o in outcomes if o.best is not None]
    from kernelrl.report import write_best_kernels

    write_best_kernels(store.run_dir, store.steps())  # unsolved problems' best attempts too (attempts/)
    if not json_output:
        console.print(Text(f"correct kernels in {store.run_dir / 'kernels'}, best incorrect "
                           f"attempts in {store.run_dir / 'attempts' / 'best-incorrect'}; "
                           f"trajectories in {store.jsonl_path}", style="dim"))
    raise typer.Exit(EXIT_OK if len(solved) == len(outcomes) else EXIT_NOT_CORRECT)


# -- bench ---------------------------------------------------------------------------------------------------
SPLITS = ("test", "train", "all")


def _bench_problems(suite: str, split: str, level: list[int] | None, problem: list[str] | None,
                    limit: int | None, solutions: bool) -> tuple[Any, list[Problem]]:
    if split not in SPLITS:
        fail(f"--split must be test, train or all, not {split!r}", EXIT_BAD_INPUT)
    with bad_input():
        loaded = load_suite(suite)
        chosen = list(loaded) if split == "all" else list(loaded.split(split))
        if level:
            chosen = [p for p in chosen if p.level in level]
        if problem:
            unknown = sorted(set(problem) - {p.id for p in loaded})
            if unknown:
                raise ProblemError(f"no problem {', '.join(unknown)} in suite {loaded.name}")
            chosen = [p for p in chosen if p.id in problem]
    if solutions:
        covered = [p for p in chosen if loaded.solution_path(p) is not None]
        if len(covered) < len(chosen):
            stderr().print(Text(f"{len(chosen) - len(covered)} problems have no reference "
                                "solution and are skipped", style="yellow"))
        chosen = covered
    if limit:
        chosen = chosen[:limit]
    if not chosen:
        fail(f"no problems selected from suite {loaded.name} (split {split}, levels {level or 'all'}"
             + (", with a reference solution" if solutions else "") + ")", EXIT_BAD_INPUT)
    return loaded, chosen


@app.command("bench", epilog="Exit codes: 0 = the benchmark ran (its verdicts are in its metrics); 2 = bad "
             "usage or input; 3 = the evaluator itself failed (EvaluatorError); 4 = the policy failed "
             "(finished attempts are saved).")
@with_options(agent=AGENT_OPTIONS.with_defaults(samples=1, turns=1), run=POLICY_OPTIONS,
              evaluation=EVAL_OPTIONS)
def bench_cmd(
    *,
    run: PolicyOptions,
    suite: Annotated[str, typer.Option("--suite",
                                       help="A suite directory, a KernelBench checkout, or 'builtin'.")
                     ] = "builtin",
    split: Annotated[str, typer.Option("--split", help="test, train or all.")] = "test",
    level: Annotated[list[int] | None, typer.Option("--level", help="Only these levels (repeatable).",
                                                    show_default=False)] = None,
    problem: Annotated[list[str] | None, typer.Option("--problem", help="Only these problem "
                                                                        "ids (repeatable).",
                                                      show_default=False)] = None,
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="At most this many problems.",
                                              show_default=False)] = None,
    run_dir: Annotated[Path | None, typer.Option("--run-dir", help="Run directory (default "
                                                                   "runs/<policy>-<suite>-<split>); "
                                                                   "re-running resumes.",
                                                 show_default=False)] = None,
    report: Annotated[bool, typer.Option("--report/--no-report",
                                         help="Also write RUN_DIR/report.html.")] = True,
    jobs: Annotated[int, typer.Option("--jobs", min=1, help="Problems solved at once (their evaluations "
                                                             "share the evaluator's sandboxes; GPU "
                                                             "timing stays one at a time).")] = 1,
    agent: AgentConfig,
    evaluation: Evaluation,
) -> None:
    """Benchmark a policy on a suite split: metrics.json, eval_results.json (KernelBench format) and the
    trajectories in RUN_DIR. Resumable. Exit 0 when the run finished (benchmarks report numbers, they do
    not gate), 2 bad input, 3 evaluator failure, 4 policy failure."""
    from kernelrl.agent.bench import run_bench, solutions_replay
    from kernelrl.policies import ReplayPolicy

    replaying = run.policy == "solutions"
    loaded, chosen = _bench_problems(suite, split, level, problem, limit, replaying)
    if run_dir is None:
        slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", run.policy if replaying else run.policy.split("/")[-1])[-60:]
        run_dir = Path("runs") / f"{slug}-{loaded.name}-{split}"
    if run_dir.exists() and not run_dir.is_dir():
        fail(f"--run-dir {run_dir} is a file", EXIT_BAD_INPUT)
    prompts = _prompts(run)
    policy = None if replaying else _make_policy(run.policy, run)
    judge_policy = _judge_policy(run)
    # every check passed: from here on files are made
    if replaying:
        with bad_input():
            run_dir.mkdir(parents=True, exist_ok=True)
            replay_file, chosen = solutions_replay(loaded, chosen, run_dir / "solutions_replay.jsonl")
        policy = ReplayPolicy(replay_file)
    db, judge_options = _stores(run, judge_policy)
    info = {"judge": run.judge, "judge_lambda": run.judge_lambda, "judge_verify": run.judge_verify,
            "suite": loaded.name, "suite_root": str(loaded.root), "split": split, "levels": level,
            "policy_spec": run.policy, "device": evaluation.settings.device,
            "trials": evaluation.verdict.trials}
    with evaluation.open() as evaluator, evaluating(), running_policy(), render.progress(stderr()) as bar:
        task = bar.add_task("bench", total=len(chosen))

        def on_problem(p, outcome) -> None:
            if outcome is None:
                bar.update(task, description=p.id)
            else:
                bar.advance(task)

        result = run_bench(policy, chosen, run_dir, evaluator, agent, prompts=prompts, kernel_db=db,
                           info=info, on_problem=on_problem, problem_concurrency=jobs, **judge_options)
        bar.update(task, description="done")
    console = stdout()
    render.print_metrics(console, result.metrics, f"kernelrl bench: {policy.name} on {loaded.name}/{split}, "
                                                  f"{agent.samples} samples x {agent.turns} turns")
    console.print(Text(f"run directory {run_dir}: metrics.json, eval_results.json, "
                       "trajectories.jsonl, run.sqlite", style="dim"))
    if report:
        from kernelrl.report import write_report

        console.print(Text(f"report: {write_report(run_dir)}", style="dim"))
    raise typer.Exit(EXIT_OK)


# -- report --------------------------------------------------------------------------------------------------
@app.command("report")
def report_cmd(
    run_dir: Annotated[Path, typer.Argument(metavar="RUN_DIR", help="A run directory of kernelrl bench or "
                                                                    "agent, or of kernelrl train.")],
    out: Annotated[Path | None, typer.Option("--out", help="HTML file (default RUN_DIR/report.html); "
                                                           "its links are relative to the "
                                                           "page.", show_default=False)] = None,
    json_output: Annotated[bool, typer.Option("--json",
                                              help="Print the metrics as JSON instead of a table.")] = False,
) -> None:
    """Write a self-contained HTML report of a run (metrics per level, speedup distributions, per-problem rows
    linking to the best kernels) and print a summary. A training run (metrics.jsonl and train_config.json, no
    run.sqlite) gets its training curves instead: loss, reward, reward components, curriculum, held-out
    results."""
    from kernelrl.report import is_training_run, metrics_by_level, problem_summaries, write_report
    from kernelrl.runs import open_run

    if is_training_run(run_dir):
        _training_report(run_dir, out, json_output)
    with bad_input():
        store = open_run(run_dir)
        steps = store.steps()
        path = write_report(run_dir, out)
    metrics = metrics_by_level(steps)
    if json_output:
        typer.echo(json.dumps({k: m.to_dict() for k, m in metrics.items()}, indent=2))
        raise typer.Exit(EXIT_OK)
    console = stdout()
    render.print_metrics(console, metrics, f"run {run_dir}: {len(steps)} attempts")
    console.print(render.run_problems_table(console, problem_summaries(steps)))
    console.print(Text(f"report: {path}", style="dim"))
    raise typer.Exit(EXIT_OK)



def _learning_line(table: dict) -> str:
    """One stage's per-problem learning (kernelrl.report.rollouts.learning_by) as a line of the summary."""
    a, b = table["first"], table["second"]

    def change(key: str) -> str:
        if a[key] is None or b[key] is None:
            return f"{key} –"
        if key == "reward":
            return f"{key} {a[key]:.3f} → {b[key]:.3f}"
        return f"{key} {render.pct(a[key])} → {render.pct(b[key])}"

    (f1, l1), (f2, l2) = table["first_steps"], table["second_steps"]
    stage = f" [{table['stage']}]" if table["stage"] else ""
    return (f"rollouts by problem{stage} (mean over the {table['problems']} problems drawn in both halves), "
            f"steps {f1}–{l1} → {f2}–{l2}: " + ", ".join(change(k)
                                                         for k in ("correct", "compiled", "reward")))


def _family_table(console, table: dict):
    """One stage's learning per op family (kernelrl.report.rollouts.learning_by) as a table: each family's
    first half of steps against its second, and the mean over the families drawn in both."""
    def change(a: dict, b: dict, key: str) -> str:
        if key == "reward":
            return "–" if a[key] is None or b[key] is None else f"{a[key]:.3f} → {b[key]:.3f}"
        return f"{render.pct(a[key])} → {render.pct(b[key])}"

    (f1, l1), (f2, l2) = table["first_steps"], table["second_steps"]
    rows = [[str(name), f"{a['attempts']} → {b['attempts']}",
             *(change(a, b, key) for key in ("correct", "reward", "reward_spread"))]
            for name, a, b in [(f["name"], f["first"], f["second"]) for f in table["families"]]
            + [(f"mean over {len(table['families'])}", table["first"], table["second"])]]
    cols = [render.Col("family"), render.Col("completions", drop=2, right=True),
            render.Col("correct", right=True), render.Col("reward", drop=1, right=True),
            render.Col("groups with a reward spread", right=True)]
    stage = f" [{table['stage']}]" if table["stage"] else ""
    return render.fit_table(console, f"rollouts by family{stage}, steps {f1}–{l1} → {f2}–{l2}", cols, rows)


def _training_report(run_dir: Path, out: Path | None, json_output: bool) -> None:
    from kernelrl.report import load_training_run, training_summary, write_training_report

    with bad_input():
        run = load_training_run(run_dir)
        path = write_training_report(run_dir, out, run=run)
    summary = training_summary(run)
    if json_output:
        typer.echo(json.dumps(summary, indent=2, default=str))
        raise typer.Exit(EXIT_OK)
    console = stdout()
    phases = ", ".join(f"{phase}: {n}" for phase, n in summary["records"].items()) or "no records"
    console.print(Text(f"training run {run_dir} ({summary['command']}, {summary['model']}): {phases}"
                       + (f", up to step {summary['last_step']}" if summary["last_step"] is not None
                          else "")))
    if run.skipped:
        console.print(Text(f"{run.skipped} malformed metrics line(s) skipped", style="yellow"))
    heldout = summary["heldout"]
    if heldout:
        ks = sorted({k for r in heldout for k in r if k.startswith("pass@") and k[5:].isdigit()},
                    key=lambda k: int(k[5:]))
        stages = any(r.get("stage") for r in heldout)
        suites = any(r.get("suite") for r in heldout)  # other suites' test splits beside the training suite's
        cols = [render.Col("step", right=True), *([render.Col("stage", drop=3)] if stages else []),
                render.Col("model"), render.Col("label"), *([render.Col("suite")] if suites else []),
                render.Col("compile", drop=2, right=True),
                render.Col("correct", right=True), *[render.Col(k, drop=1, right=True) for k in ks],
                render.Col("fast_1", drop=2, right=True)]

        def pct(value: object) -> str:
            number = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
            return render.pct(float(value) if number else None)

        rows = [[str(r["step"]), *([str(r.get("stage") or "")] if stages else []),
                 str(r.get("model_label", "")), str(r.get("label", "")),
                 *([str(r.get("suite") or "")] if suites else []), pct(r.get("compile_rate")),
                 pct(r.get("correct_rate")), *[pct(r.get(k)) for k in ks],
                 pct(r.get("fast_1"))] for r in heldout]
        console.print(render.fit_table(console, "held-out evaluations", cols, rows))
    for table in summary["learning_by_family"]:
        console.print(_family_table(console, table))
    for table in summary["learning_by_problem"]:
        console.print(Text(_learning_line(table)))
    console.print(Text(f"report: {path}", style="dim"))
    raise typer.Exit(EXIT_OK)
