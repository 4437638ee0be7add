"""Benchmark metrics on hand-built steps; bench + report
end to end on a replayed run (real CPU evaluations)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import threading

import pytest
from conftest import example

from kernelrl import Status
from kernelrl.agent import AgentConfig
from kernelrl.agent.bench import run_bench, solutions_replay
from kernelrl.policies import Completion, ReplayPolicy, write_replay
from kernelrl.report import compute_metrics, kernelbench_results, metrics_by_level, pass_at_k, write_report
from kernelrl.results import EvalResult, Stage, TimingReport, TimingStats
from kernelrl.runs import RunStore, Step, export_sft


def step(problem_id: str, sample: int, turn: int, status: Status, eager: float | None = None,
         inductor: float | None = None, level: int = 1, tokens: int = 10, gpu_s: float = 0.0) -> Step:
    stage = {Status.CORRECT: Stage.DONE, Status.WRONG_OUTPUT: Stage.CORRECTNESS,
             Status.FORMAT_ERROR: Stage.EXTRACT, Status.COMPILE_ERROR: Stage.IMPORT,
             Status.UNSUPPORTED: Stage.REFERENCE}[status]
    timing = None
    if status is Status.CORRECT:
        timing = TimingReport(speedup_vs_eager=eager, speedup_vs_inductor=inductor)
        if eager is not None:
            timing.candidate = TimingStats(1.0, 1.1, 0.9, 1.3, 0.1, 0.1, 100, 10, "cuda-events")
    from kernelrl.results import Environment
    env = Environment("gpu" if gpu_s else "cpu-interpreter", "dev", "t", None, "3", "0.1")
    result = EvalResult(status=status, stage=stage, problem_id=problem_id, message=status.value,
                        timing=timing, environment=env, wall_time_s=gpu_s)
    return Step(problem_id=problem_id, sample=sample, turn=turn, messages=[{"role": "user", "content": "x"}],
                completion=Completion("x", tokens_in=tokens, tokens_out=tokens), code="code", result=result,
                reward=1.0 if status is Status.CORRECT else -1.0, level=level)


def test_pass_at_k_unbiased_estimator():
    assert pass_at_k(4, 0, 1) == 0.0 and pass_at_k(4, 4, 2) == 1.0
    assert pass_at_k(4, 1, 1) == pytest.approx(0.25)
    assert pass_at_k(4, 1, 2) == pytest.approx(1 - math.comb(3, 2) / math.comb(4, 2))  # 0.5
    assert pass_at_k(10, 3, 5) == pytest.approx(1 - math.comb(7, 5) / math.comb(10, 5))  # 0.91667
    with pytest.raises(ValueError):
        pass_at_k(2, 1, 3)


def test_metrics_on_hand_built_steps():
    steps = [
        # problem A (level 1): 2 samples; sample 0 correct at
        # turn 2 (2.0x eager, 1.2x inductor), sample 1 wrong
        step("level1/1_a", 0, 1, Status.COMPILE_ERROR, gpu_s=2.0),
        step("level1/1_a", 0, 2, Status.CORRECT, eager=2.0, inductor=1.2, gpu_s=3.0),
        step("level1/1_a", 1, 1, Status.WRONG_OUTPUT, gpu_s=1.0),
        step("level1/1_a", 1, 2, Status.FORMAT_ERROR),
        # problem B (level 2): both samples correct, 0.5x and 1.6x eager; inductor 0.4x / 1.1x
        step("level2/1_b", 0, 1, Status.CORRECT, eager=0.5, inductor=0.4, level=2, gpu_s=2.0),
        step("level2/1_b", 1, 1, Status.CORRECT, eager=1.6, inductor=1.1, level=2, gpu_s=2.0),
        # problem C (level 2): nothing correct
        step("level2/2_c", 0, 1, Status.WRONG_OUTPUT, level=2, gpu_s=1.0),
        step("level2/2_c", 1, 1, Status.FORMAT_ERROR, level=2),
    ]
    m = compute_metrics(steps)
    assert (m.problems, m.attempts, m.solved) == (3, 8, 2)
    assert m.format_rate == pytest.approx(6 / 8) and m.correct_rate == pytest.approx(3 / 8)
    assert m.compile_rate == pytest.approx(5 / 8)  # 3 correct + 2 wrong_output
    # pass@1: A c=1/n=2 -> 0.5, B 2/2 -> 1, C 0 -> mean 0.5; pass@2 (the samples taken): 1, 1, 0; no pass@5
    assert m.pass_at_k == {"pass@1": pytest.approx(0.5), "pass@2": pytest.approx(2 / 3)}
    # best per problem: A 2.0x/1.2x, B 1.6x/1.1x, C none
    assert m.fast_p_eager == {"fast_1": pytest.approx(2 / 3), "fast_1.5": pytest.approx(2 / 3),
                              "fast_2": pytest.approx(0.0)}
    assert m.fast_p_inductor["fast_1"] == pytest.approx(2 / 3) and m.fast_p_inductor["fast_1.5"] == 0.0
    assert m.geomean_speedup_eager == pytest.approx(math.sqrt(2.0 * 1.6))
    assert m.geomean_speedup_inductor == pytest.approx(math.sqrt(1.2 * 1.1))
    assert m.tokens == 8 * 20 and m.tokens_per_solved == pytest.approx(80.0)
    assert m.gpu_seconds == pytest.approx(11.0) and m.gpu_seconds_per_solved == pytest.approx(5.5)
    levels = metrics_by_level(steps)
    assert list(levels) == ["all", "level1", "level2"] and levels["level2"].solved == 1
    # CPU-like: correct without timing -> fast_p and geomean are None, not 0
    assert m.refused_problems == 0
    # a problem the audit refuses: counted, unsolved, and named as refused
    refused = compute_metrics([*steps, step("level2/3_d", 0, 1, Status.UNSUPPORTED, level=2),
                               step("level2/3_d", 1, 1, Status.FORMAT_ERROR, level=2)])
    assert (refused.problems, refused.solved, refused.refused_problems) == (4, 2, 1)
    cpu = compute_metrics([step("level0/1_x", 0, 1, Status.CORRECT)])
    assert cpu.fast_p_eager["fast_1"] is None and cpu.geomean_speedup_eager is None
    assert cpu.gpu_seconds_per_solved is None
    kb = kernelbench_results(steps)
    assert sorted(kb) == [1, 2] and [e["correctness"] for e in kb[1]["1"]] == [True, False]
    assert kb[1]["1"][0]["runtime"] == pytest.approx(1.1) and kb[2]["2"][0]["runtime"] == -1.0


@pytest.fixture(scope="module")
def evaluator(cpu_evaluator):
    return cpu_evaluator.with_verdict(trials=2, run_timeout_s=60, compile_timeout_s=60)


def test_bench_and_report_from_replayed_solutions(tmp_path, suite, evaluator):
    problems = [suite.get("level0/1_relu"), suite.get("level0/2_scale_shift"),
                suite.get("level1/1_row_softmax")]
    replay, covered = solutions_replay(suite, problems, tmp_path / "solutions.jsonl")
    assert covered == problems
    # softmax: a wrong kernel first; two samples for every problem
    records = [json.loads(line) for line in replay.read_text().splitlines() if "row_softmax" not in line]
    records += [{"problem_id": "level1/1_row_softmax", "turn": 1, "sample": 0,
                 "text": f"```python\n{example('softmax_off_by_one.py')}```"},
                {"problem_id": "level1/1_row_softmax", "turn": 1, "sample": 1,
                 "text": f"```python\n{example('softmax_triton.py')}```"}]
    policy = ReplayPolicy(write_replay(tmp_path / "mixed.jsonl", records))
    run_dir = tmp_path / "run"
    result = run_bench(policy, problems, run_dir, evaluator, AgentConfig(turns=1, samples=2, reward="tiered"),
                       info={"suite": "builtin"})
    m = result.metrics["all"]
    assert (m.problems, m.attempts, m.solved) == (3, 6, 3)
    assert (m.correct_rate == pytest.approx(5 / 6)
            and m.pass_at_k["pass@1"] == pytest.approx((1 + 1 + 0.5) / 3))
    assert m.fast_p_eager["fast_1"] is None  # CPU: nothing timed
    assert result.metrics["level1"].pass_at_k["pass@1"] == pytest.approx(0.5)
    saved = json.loads((run_dir / "metrics.json").read_text())
    assert saved["all"]["solved"] == 3 and saved["level0"]["problems"] == 2
    kb = json.loads((run_dir / "eval_results.json").read_text())  # two levels: L{level}P{number} keys
    assert sorted(kb) == ["L0P1", "L0P2", "L1P1"] and len(kb["L1P1"]) == 2
    assert [e["correctness"] for e in kb["L1P1"]] == [False, True]
    assert json.loads(
        (run_dir / "kernelbench" / "level0" / "eval_results.json").read_text())["1"][0]["compiled"]
    # resumable: a second run evaluates nothing new
    lines = (run_dir / "trajectories.jsonl").read_text().splitlines()
    again = run_bench(policy, problems, run_dir, evaluator, AgentConfig(turns=1, samples=2))
    assert (again.metrics["all"].attempts == 6
            and (run_dir / "trajectories.jsonl").read_text().splitlines() == lines)
    # the report: self-contained HTML with the metrics table, plots and links to the best kernels
    page = write_report(run_dir).read_text()
    assert page.startswith("<!DOCTYPE html>") and "<svg" in page and "Metrics per level" in page
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "") and "https://" not in page
    assert 'href="kernels/level1/1_row_softmax.py"' in page and "level0/2_scale_shift" in page
    assert "83.3%" in page  # correct rate 5/6
    best = (run_dir / "kernels" / "level1" / "1_row_softmax.py").read_text()
    assert "sample 1, turn 1, correct" in best
    assert len(RunStore(run_dir).steps()) == 6
    # SFT data: the 5 correct attempts, each prompt + the assistant's completion
    assert export_sft(run_dir, tmp_path / "sft.jsonl") == 5
    record = json.loads((tmp_path / "sft.jsonl").read_text().splitlines()[0])
    assert [m["role"] for m in record["messages"]] == ["system", "user", "assistant"]
    assert "ModelNew" in record["messages"][-1]["content"] and record["status"] == "correct"


def test_bench_solves_problems_concurrently_with_the_same_results(tmp_path, suite, evaluator):
    problems = [suite.get("level0/1_relu"), suite.get("level0/2_scale_shift"),
                suite.get("level1/1_row_softmax")]
    replay, _ = solutions_replay(suite, problems, tmp_path / "solutions.jsonl")
    started = []
    # every problem waits here until all three have started:
    # solved one after another, the first would time out
    all_started = threading.Barrier(len(problems), timeout=120)

    def on_problem(problem, outcome):
        if outcome is None:
            started.append(problem.id)
            all_started.wait()

    result = run_bench(ReplayPolicy(replay), problems, tmp_path / "run", evaluator,
                       AgentConfig(turns=1, samples=1), on_problem=on_problem, problem_concurrency=3)
    # problem order, whatever finished first
    assert [o.problem_id for o in result.outcomes] == [p.id for p in problems]
    assert sorted(started) == sorted(p.id for p in problems)
    assert all(o.solved for o in result.outcomes) and result.metrics["all"].solved == 3
    assert sorted(s.problem_id for s in RunStore(tmp_path / "run").steps()) == sorted(p.id for p in problems)
    with pytest.raises(ValueError, match="problem_concurrency"):
        run_bench(ReplayPolicy(replay), problems, tmp_path / "run2", evaluator, problem_concurrency=0)


def cli(*args, cwd=None, timeout=600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kernelrl.cli", *map(str, args)], capture_output=True,
                          text=True, timeout=timeout, cwd=cwd, env={**os.environ, "COLUMNS": "200"})


@pytest.mark.slow  # two kernelrl processes, each starting its own judge
def test_cli_bench_solutions_then_report(tmp_path):
    run_dir = tmp_path / "run"
    bench = cli("bench", "--policy", "solutions", "--split", "all", "--problem", "level0/1_relu", "--problem",
                "level0/4_silu", "--device", "cpu", "--trials", "2", "--run-dir", run_dir,
                "--kernel-db", tmp_path / "k.sqlite", "--jobs", "2")
    assert bench.returncode == 0, bench.stderr
    assert "pass@1" in bench.stdout and "100.0%" in bench.stdout and (run_dir / "report.html").is_file()
    assert len((run_dir / "solutions_replay.jsonl").read_text().splitlines()) == 2
    report = cli("report", run_dir, "--json")
    assert report.returncode == 0, report.stderr
    assert json.loads(report.stdout)["all"]["solved"] == 2
    table = cli("report", run_dir)
    assert table.returncode == 0 and "level0/4_silu" in table.stdout and "correct" in table.stdout
    missing = cli("report", tmp_path / "nothing")
    assert missing.returncode == 2 and "not a kernelrl run directory" in missing.stderr
    bad = cli("bench", "--policy", "replay:" + str(tmp_path / "none.jsonl"), "--run-dir", run_dir)
    assert bad.returncode == 2 and "cannot read replay file" in bad.stderr
    unknown = cli("bench", "--policy", "solutions", "--problem", "level9/nope", "--run-dir", run_dir)
    assert unknown.returncode == 2 and "level9/nope" in unknown.stderr
