"""The agent loop on the CPU with the replay policy: real evaluations of scripted completions."""

from __future__ import annotations

import json

import pytest
from conftest import example

from kernelrl import Status
from kernelrl.agent import Agent, AgentConfig
from kernelrl.policies import ReplayPolicy, write_replay
from kernelrl.prompts import Prompts
from kernelrl.runs import KernelDB, RunStore

WRONG_RELU = example("relu_triton.py").replace("tl.maximum(x, 0.0)", "tl.where(x > 0, x, 0.1 * x)")


def fenced(code: str) -> str:
    return f"Here is my kernel.\n\n```python\n{code}```\n"


@pytest.fixture(scope="module")
def evaluator(cpu_evaluator):
    return cpu_evaluator.with_verdict(trials=2, run_timeout_s=60, compile_timeout_s=60)


def test_refinement_fixes_wrong_kernel_on_turn_two(tmp_path, suite, evaluator):
    relu = suite.get("level0/1_relu")
    replay = write_replay(tmp_path / "script.jsonl", [
        {"problem_id": relu.id, "turn": 1, "text": fenced(WRONG_RELU), "tokens_in": 100, "tokens_out": 50},
        {"problem_id": relu.id, "turn": 2, "text": fenced(example("relu_triton.py")), "tokens_out": 40},
    ])
    store = RunStore(tmp_path / "run")
    db = KernelDB(tmp_path / "kernels.sqlite")
    agent = Agent(ReplayPolicy(replay), evaluator, AgentConfig(turns=3, samples=1, reward="tiered"),
                  store=store, kernel_db=db)
    outcome = agent.solve(relu)
    # stops: correct, untimed
    assert [s.result.status for s in outcome.steps] == [Status.WRONG_OUTPUT, Status.CORRECT]
    first, second = outcome.steps
    assert outcome.solved and outcome.best is second and second.turn == 2
    assert (first.reward, second.reward) == (-1.0, 1.0)
    # turn 1's feedback is in turn 2's prompt: verdict, mismatch details and the previous kernel
    prompt = second.messages[-1]["content"]
    assert "Verdict: wrong_output" in prompt and first.result.message in prompt
    assert "Mismatch: trial 0" in prompt and "tl.where(x > 0, x, 0.1 * x)" in prompt
    # stored: JSONL and SQLite, round-trip
    lines = [json.loads(x) for x in (tmp_path / "run" / "trajectories.jsonl").read_text().splitlines()]
    assert [(x["turn"], x["result"]["status"]) for x in lines] == [(1, "wrong_output"), (2, "correct")]
    assert lines[0]["completion"]["tokens_in"] == 100 and lines[0]["messages"][0]["role"] == "system"
    assert [s.result.status for s in store.steps(relu.id)] == [Status.WRONG_OUTPUT, Status.CORRECT]
    assert db.count() == 2 and db.best(relu)[0].code == second.code
    # resumed: nothing is generated or evaluated again
    again = Agent(ReplayPolicy(replay), evaluator, AgentConfig(turns=3, samples=1), store=store).solve(relu)
    assert [s.created for s in again.steps] == [s.created for s in outcome.steps]
    assert len((tmp_path / "run" / "trajectories.jsonl").read_text().splitlines()) == 2


def test_samples_of_a_turn_are_evaluated_together_and_recorded_in_sample_order(tmp_path, suite, evaluator):
    """Without a target speedup nothing stops a turn early, so its samples go through one batch call
    (`evaluate_indexed`); every attempt is recorded, steps come back in sample order, and the verdicts are the
    ones a serial run gives."""
    relu = suite.get("level0/1_relu")
    texts = [fenced(WRONG_RELU), "no code here", fenced(example("relu_triton.py")), fenced(WRONG_RELU)]
    replay = write_replay(tmp_path / "script.jsonl",
                          [{"problem_id": relu.id, "turn": 1, "sample": i, "text": t}
                           for i, t in enumerate(texts)])
    batches = []
    original = evaluator.evaluate_indexed

    def counting(items, **kwargs):  # the real evaluate_indexed, with the batch it was given noted
        items = list(items)
        batches.append(len(items))
        return original(items, **kwargs)

    evaluator.evaluate_indexed = counting
    try:
        store = RunStore(tmp_path / "run")
        outcome = Agent(ReplayPolicy(replay), evaluator, AgentConfig(turns=1, samples=4, reward="tiered"),
                        store=store).solve(relu)
    finally:
        del evaluator.evaluate_indexed
    assert batches == [4]  # one call; its format error needs no sandbox (below)
    assert [s.sample for s in outcome.steps] == [0, 1, 2, 3]
    assert [s.result.status for s in outcome.steps] == [Status.WRONG_OUTPUT, Status.FORMAT_ERROR,
                                                        Status.CORRECT, Status.WRONG_OUTPUT]
    assert sorted(s.sample for s in store.steps(relu.id)) == [0, 1, 2, 3]
    assert outcome.best.sample == 2


def test_evolve_mode_prompts_with_prior_kernels_of_similar_problems(tmp_path, suite, evaluator):
    relu, leaky = suite.get("level0/1_relu"), suite.get("level0/5_leaky_relu")
    assert set(relu.tags) & set(leaky.tags)  # similar: shared tags
    db = KernelDB(tmp_path / "kernels.sqlite")
    seed_run = write_replay(tmp_path / "relu.jsonl",
                            [{"problem_id": relu.id, "text": fenced(example("relu_triton.py"))}])
    Agent(ReplayPolicy(seed_run), evaluator, AgentConfig(turns=1, samples=1), kernel_db=db).solve(relu)
    leaky_wrong = example("relu_triton.py")  # plain relu: wrong for leaky relu
    script = write_replay(tmp_path / "leaky.jsonl", [
        {"problem_id": leaky.id, "turn": 1, "text": "I cannot do that."},
        {"problem_id": leaky.id, "turn": 2, "text": fenced(leaky_wrong)},
    ])
    outcome = Agent(ReplayPolicy(script), evaluator,
                    AgentConfig(turns=2, samples=2, mode="evolve", reward="composite"),
                    kernel_db=db).solve(leaky)
    statuses = [s.result.status for s in outcome.steps]
    assert statuses[:2] == [Status.FORMAT_ERROR, Status.FORMAT_ERROR]
    first_prompt = outcome.steps[0].messages[-1]["content"]
    assert "Good kernels for this and similar problems" in first_prompt and relu.id in first_prompt
    turn2 = [s for s in outcome.steps if s.turn == 2]
    assert len(turn2) == 2 and all(s.parent is not None for s in turn2)
    assert "level0/1_relu" in turn2[0].messages[-1]["content"]  # inspiration in the refinement prompt
    # relu's ModelNew lacks leaky relu's constructor argument
    assert turn2[0].result.status is Status.RUNTIME_ERROR
    assert turn2[0].reward == pytest.approx(0.1)  # composite: compiled (imported), not correct


def test_prompt_templates_can_be_overridden(tmp_path, suite):
    (tmp_path / "triton.md").write_text("Custom: $problem_id\n$contract\n")
    messages = Prompts(template_dir=tmp_path).initial(suite.get("level0/1_relu"))
    assert messages[1]["content"].startswith("Custom: level0/1_relu") and "ModelNew" in messages[1]["content"]
    (tmp_path / "triton.md").write_text("Broken: $nope\n")
    with pytest.raises(ValueError, match=r"\$nope"):
        Prompts(template_dir=tmp_path).initial(suite.get("level0/1_relu"))
    with pytest.raises(ValueError, match="does not exist"):
        Prompts(template_dir=tmp_path / "missing")
    cuda = Prompts(backend="cuda").initial(suite.get("level0/1_relu"))[1]["content"]
    assert "load_inline" in cuda


def test_bad_agent_config():
    with pytest.raises(ValueError):
        AgentConfig(turns=0)
    with pytest.raises(ValueError, match="mode"):
        AgentConfig(mode="search")
    with pytest.raises(ValueError, match="unknown reward"):
        AgentConfig(reward="nope")


@pytest.mark.slow  # a kernelrl process that starts its own judge
def test_cli_agent_with_replay(tmp_path):
    import os
    import subprocess
    import sys

    script = write_replay(tmp_path / "script.jsonl", [
        {"problem_id": "level0/1_relu", "turn": 1, "text": fenced(WRONG_RELU)},
        {"problem_id": "level0/1_relu", "turn": 2, "text": fenced(example("relu_triton.py"))},
    ])
    args = [sys.executable, "-m", "kernelrl.cli", "agent", "level0/1_relu", "--policy", f"replay:{script}",
            "--turns", "2", "--samples", "1", "--device", "cpu", "--trials", "2",
            "--run-dir", str(tmp_path / "run"), "--kernel-db", str(tmp_path / "k.sqlite"),
            "--reward", "makora:delta=1.5", "--json"]
    done = subprocess.run(args, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "COLUMNS": "200"})
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["solved"] and summary["best"]["turn"] == 2
    # sigmoid(1 + 0 - 1.5)
    assert summary["best"]["reward"] == pytest.approx(1 / (1 + 2.718281828459045 ** 0.5))
    assert (tmp_path / "run" / "kernels" / "level0" / "1_relu.py").is_file()
    bad = subprocess.run([*args[:3], "level0/nope", "--policy", f"replay:{script}"], capture_output=True,
                         text=True)
    assert bad.returncode == 2 and "level0/nope" in bad.stderr


def test_agent_with_llm_judge_term_and_hack_verification(tmp_path, suite, evaluator):
    relu = suite.get("level0/1_relu")
    script = write_replay(tmp_path / "s.jsonl",
                          [{"problem_id": relu.id, "text": fenced(example("relu_triton.py"))}])
    from kernelrl.rewards.judge import LLMJudge

    warn_judge = LLMJudge(ReplayPolicy(write_replay(tmp_path / "j1.jsonl", [
        {"text": '{"verdict": "honest"}'},
        {"text": '{"correctness": 1, "compilability": 1, "speed": 0.4}'}])))
    warned = Agent(ReplayPolicy(script), evaluator, AgentConfig(turns=1, samples=1, reward="tiered"),
                   judge=warn_judge, judge_lambda=0.5, judge_verify="warn").solve(relu)
    assert warned.steps[0].result.status is Status.CORRECT
    assert warned.steps[0].reward == pytest.approx(1.0 + 0.5 * 0.8)  # tiered 1 + lambda * mean(1, 1, 0.4)
    hack_judge = LLMJudge(ReplayPolicy(write_replay(tmp_path / "j2.jsonl", [
        {"text": '{"verdict": "hack", "kind": "output_caching", "reason": "returns a cached tensor"}'}])))
    enforced = Agent(ReplayPolicy(script), evaluator, AgentConfig(turns=1, samples=1, reward="tiered"),
                     judge=hack_judge, judge_lambda=0.5, judge_verify="enforce").solve(relu)
    step = enforced.steps[0]
    assert step.result.status is Status.HACK_DETECTED and step.reward == -1.0 and not enforced.solved
    assert step.result.findings[-1].rule == "llm-judge/output_caching"
    with pytest.raises(ValueError, match="need a judge"):
        Agent(ReplayPolicy(script), evaluator, judge_verify="warn")
