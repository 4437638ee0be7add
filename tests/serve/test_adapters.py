"""The trainer adapters over the real reward service (uvicorn on loopback, the CPU evaluator, the real
Client): TRL's reward function and tool environment, verl's compute_score."""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
import multiprocessing
import pickle
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor
from types import SimpleNamespace

import pytest

from kernelrl import load_suite
from kernelrl.adapters.trl import KernelReward, KernelToolEnv
from kernelrl.adapters.verl import make_async_compute_score, make_compute_score
from kernelrl.serve import Client

SUITE = load_suite()
RELU = SUITE.get("level0/1_relu")
SOLUTION = SUITE.solution_path(RELU).read_text()
WRONG = SOLUTION.replace("tl.maximum(x, 0.0)", "tl.maximum(x, 1.0)")
NO_CODE = "I would write a kernel here, but I did not."
VERL_KEYS = {"score", "correct", "compiled", "speedup_vs_eager", "no_verdict", "status"}


def fenced(code: str) -> str:
    return f"Here is my kernel.\n\n```python\n{code.strip()}\n```\n"


def variant(code: str, k: int) -> str:
    """The same kernel as a new candidate (another content key, so no stored verdict answers it)."""
    return f"{code}\n_variant = {k}\n"


def trl_call(reward, completions: list[str], problem_id: str = RELU.id, **extra) -> list:
    """One TRL reward call as GRPOTrainer makes it (conversational completions, the dataset's columns)."""
    return asyncio.run(reward(prompts=[[{"role": "user", "content": problem_id}]] * len(completions),
                              completions=[[{"role": "assistant", "content": c}] for c in completions],
                              completion_ids=None, problem_id=[problem_id] * len(completions),
                              trainer_state=SimpleNamespace(global_step=0), **extra))


def score_in_child(blob: bytes, completions: list[str]) -> list:
    """What TRL's AsyncGRPO does with a reward function: unpickle it in a fresh process and call it there."""
    return trl_call(pickle.loads(blob), completions)


COMPLETIONS = [fenced(SOLUTION), fenced(WRONG), NO_CODE]


def test_kernel_reward_over_the_service_gives_the_in_process_rewards(cpu_evaluator, cpu_server, tmp_path):
    local = KernelReward(cpu_evaluator, {p.id: p for p in SUITE}, rollouts=tmp_path / "local.jsonl")
    # problems: the server's
    remote = KernelReward(Client(cpu_server.url), rollouts=tmp_path / "remote.jsonl")
    logged: dict[str, float] = {}
    expected = trl_call(local, COMPLETIONS)
    got = trl_call(remote, COMPLETIONS, log_metric=logged.__setitem__)
    assert got == expected
    assert got[0] > got[1] > got[2] == 0.0  # correct > compiled but wrong > no code (composite)
    assert remote.problems[RELU.id].sha256 == RELU.sha256
    assert logged["kernelrl/correct_rate"] == pytest.approx(1 / 3)
    assert logged["kernelrl/format_error_rate"] == pytest.approx(1 / 3)
    records = [json.loads(line) for line in (tmp_path / "remote.jsonl").read_text().splitlines()]
    assert [r["status"] for r in records] == ["correct", "wrong_output", "format_error"]
    assert [r["reward"] for r in records] == got


def test_kernel_reward_pickles_as_its_client_and_scores_in_a_spawned_process(cpu_evaluator, cpu_server):
    reward = KernelReward(Client(cpu_server.url))
    assert reward.problems  # fetched from the server ...
    blob = pickle.dumps(reward)
    assert RELU.source.encode() not in blob  # ... and not carried: fetched again where it lands
    assert trl_call(pickle.loads(blob), COMPLETIONS[:2]) == trl_call(reward, COMPLETIONS[:2])
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        in_child = pool.submit(score_in_child, blob, COMPLETIONS[:2]).result(timeout=120)
    assert in_child == trl_call(reward, COMPLETIONS[:2])
    # an in-process evaluator cannot cross, and says what to do instead
    with pytest.raises(TypeError, match=r"scorer \(Evaluator\) does not pickle.*kernelrl serve"):
        pickle.dumps(KernelReward(cpu_evaluator, {RELU.id: RELU}))


def test_kernel_reward_gives_none_without_a_verdict_or_the_groups_mean_when_asked(cpu_server):
    client = Client(cpu_server.url)
    logged: dict[str, float] = {}
    # the deadline passes before the server judges the new kernels: no verdict, which is not a zero
    hurried = KernelReward(client, deadline_s=1e-3)
    assert trl_call(hurried, [fenced(variant(SOLUTION, 1)), fenced(variant(WRONG, 1))],
                    log_metric=logged.__setitem__) == [None, None]
    assert logged["kernelrl/no_verdict_rate"] == 1.0
    # one kernel already judged (a stored verdict answers at once), one new: the new one has none
    known = trl_call(KernelReward(client), [fenced(SOLUTION)])[0]
    assert trl_call(hurried, [fenced(SOLUTION), fenced(variant(SOLUTION, 2))]) == [known, None]
    neutral = KernelReward(client, deadline_s=1e-3, missing="neutral")
    assert trl_call(neutral, [fenced(SOLUTION), fenced(variant(SOLUTION, 3))]) == [known, known]
    with pytest.raises(ValueError, match="missing must be one of"):
        KernelReward(client, missing="zero")


def test_verl_compute_score_returns_the_documented_dict(cpu_evaluator, cpu_server):
    compute_score = make_compute_score(cpu_server.url)
    kw = {"data_source": "kernelrl", "extra_info": {"index": 0}}
    correct = compute_score(solution_str=fenced(SOLUTION), ground_truth=RELU.id, **kw)
    wrong = compute_score(solution_str=fenced(WRONG), ground_truth=RELU.id, **kw)
    assert correct == {"score": pytest.approx(1.1), "correct": 1, "compiled": 1, "speedup_vs_eager": 0.0,
                       "no_verdict": 0, "status": "correct"}  # no timing on the CPU: no speed credit
    assert wrong == {"score": pytest.approx(0.1), "correct": 0, "compiled": 1, "speedup_vs_eager": 0.0,
                     "no_verdict": 0, "status": "wrong_output"}
    # no verdict within the deadline: the neutral score, flagged (verl has no missing reward)
    hurried = make_compute_score(cpu_server.url, neutral=0.5, deadline_s=1e-3)
    missing = hurried(solution_str=fenced(variant(SOLUTION, 4)), ground_truth=RELU.id, **kw)
    assert missing["score"] == 0.5 and missing["no_verdict"] == 1 and missing["correct"] == 0
    assert set(correct) == set(wrong) == set(missing) == VERL_KEYS  # verl logs every key of every sample
    # verl ships it to its reward workers: it pickles as the URL
    assert pickle.loads(pickle.dumps(compute_score))(solution_str=fenced(SOLUTION), ground_truth=RELU.id,
                                                     **kw) == correct
    # the async form is what verl awaits; it pickles too
    acompute = pickle.loads(pickle.dumps(make_async_compute_score(cpu_server.url)))
    assert inspect.iscoroutinefunction(acompute)
    assert asyncio.run(acompute(solution_str=fenced(WRONG), ground_truth=RELU.id, **kw)) == wrong
    # the legacy batch manager's call; the problem id may come in extra_info
    batch = compute_score(data_sources=["k"] * 3, solution_strs=[fenced(WRONG), NO_CODE, fenced(SOLUTION)],
                          ground_truths=[RELU.id, "", RELU.id], extra_infos=[{}, {"problem_id": RELU.id}, {}])
    assert [b["status"] for b in batch] == ["wrong_output", "format_error", "correct"]
    # any Scorer, with its problems
    local = make_compute_score(cpu_evaluator, problems={RELU.id: RELU})
    assert local(solution_str=fenced(SOLUTION), ground_truth=RELU.id, **kw) == correct
    with pytest.raises(KeyError, match="not one of the reward service's problems"):
        compute_score(solution_str=NO_CODE, ground_truth="level9/none", **kw)


def test_kernel_tool_env_resets_takes_submissions_and_rewards_the_best(cpu_server):
    factory = pickle.loads(pickle.dumps(functools.partial(KernelToolEnv, url=cpu_server.url)))
    env = factory()  # TRL builds its environments with no arguments
    # TRL makes every public method but reset and get_reward a tool, described by its docstring
    tools = [name for name, _ in inspect.getmembers(KernelToolEnv, inspect.isfunction)
             if not name.startswith("_") and name not in ("reset", "get_reward")]
    assert tools == ["submit_kernel"]
    from transformers.utils import get_json_schema

    schema = get_json_schema(env.submit_kernel)["function"]
    assert schema["name"] == "submit_kernel" and schema["parameters"]["required"] == ["code"]
    assert "ModelNew" in schema["parameters"]["properties"]["code"]["description"]

    statement = env.reset(problem_id=RELU.id, prompt=[{"role": "user", "content": "Write a kernel."}])
    assert RELU.source.strip() in statement and "submit_kernel" in statement
    assert env.get_reward() == 0.0  # nothing submitted: a completion without code
    feedback = env.submit_kernel(WRONG)
    assert "Verdict: wrong_output" in feedback and "Mismatch" in feedback and "Reward: 0.1" in feedback
    assert "Verdict: correct" in env.submit_kernel(fenced(SOLUTION))  # fenced or not
    env.submit_kernel(NO_CODE)
    assert env.get_reward() == pytest.approx(1.1)  # the best submission
    assert [r.status.value for r in env.results] == ["wrong_output", "correct", "format_error"]
    env.reset(problem_id=RELU.id)  # a new rollout starts clean
    assert env.results == [] and env.get_reward() == 0.0

    last = KernelToolEnv(url=cpu_server.url, keep="last", statement=False)
    assert last.reset(problem_id=RELU.id) is None
    last.submit_kernel(SOLUTION)
    last.submit_kernel(WRONG)
    assert last.get_reward() == pytest.approx(0.1)
    hurried = KernelToolEnv(url=cpu_server.url, deadline_s=1e-3)
    hurried.reset(problem_id=RELU.id)
    assert "No verdict" in hurried.submit_kernel(variant(SOLUTION, 5)) and hurried.get_reward() is None


def test_adapters_import_no_trainer_library():
    code = ("import sys, kernelrl.adapters.trl, kernelrl.adapters.verl; "
            "print(sorted({'trl', 'verl', 'torch', 'transformers', 'fastapi'} & set(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_kernel_reward_leaves_refused_problems_out_of_the_groups(cpu_evaluator, tmp_path):
    """A problem the audit refuses (here a ReLU of -|x|: all zeros pass) grades no completion: its results
    go to `on_refused`, not into the groups the curriculum reads as how hard the problem is."""
    from kernelrl import load_problem

    path = tmp_path / "zeros.py"
    path.write_text(RELU.source.replace("return torch.relu(x)", "return torch.relu(-torch.abs(x))"))
    zeros = load_problem(path, problem_id="planted/zeros")
    groups, refused = [], []
    reward = KernelReward(cpu_evaluator, {RELU.id: RELU, zeros.id: zeros}, on_groups=groups.append,
                          on_refused=refused.append)
    ids = [RELU.id, RELU.id, zeros.id, zeros.id]
    rewards = asyncio.run(reward(prompts=[[{"role": "user", "content": pid}] for pid in ids],
                                 completions=[[{"role": "assistant", "content": fenced(SOLUTION)}]] * 4,
                                 completion_ids=None, problem_id=ids,
                                 trainer_state=SimpleNamespace(global_step=0)))
    assert refused == [{zeros.id}]
    assert groups == [{RELU.id: [True, True]}]
    assert rewards[0] == rewards[1] > rewards[2] == rewards[3]
