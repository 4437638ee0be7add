"""Reward presets on hand-built EvalResults, against
hand-computed values; the LLM judge with a replay policy."""

from __future__ import annotations

import json
import math

import pytest

from kernelrl.policies import ReplayPolicy, write_replay
from kernelrl.results import EvalResult, Stage, Status, TimingReport
from kernelrl.rewards import discounted_returns, get_reward, parse_reward_spec, reward_minimum
from kernelrl.rewards.judge import LLMJudge, judged_reward, parse_hack_verdict, parse_score, verify_with_judge


def result(status: Status, stage: Stage = Stage.DONE, eager: float | None = None,
           inductor: float | None = None) -> EvalResult:
    timing = (TimingReport(speedup_vs_eager=eager, speedup_vs_inductor=inductor) if status is Status.CORRECT
              else None)
    return EvalResult(status=status, stage=stage, problem_id="p", message="", timing=timing)


CORRECT_FAST = result(Status.CORRECT, eager=2.0, inductor=1.5)  # 2x eager, 1.5x inductor
CORRECT_SLOW = result(Status.CORRECT, eager=0.5, inductor=0.25)
CORRECT_NO_TIMING = result(Status.CORRECT)
WRONG = result(Status.WRONG_OUTPUT, Stage.CORRECTNESS)  # compiled
COMPILE_ERR = result(Status.COMPILE_ERROR, Stage.IMPORT)
HACK = result(Status.HACK_DETECTED, Stage.STATIC)
FORMAT = result(Status.FORMAT_ERROR, Stage.EXTRACT)


def sig(x: float) -> float:
    return 1 / (1 + math.exp(-x))


def test_makora():
    r = get_reward("makora")
    assert r(CORRECT_FAST) == pytest.approx(sig(1 + 1.5 - 1.8))  # 0.66819
    assert r(CORRECT_FAST) == pytest.approx(0.668187772)
    assert r(CORRECT_SLOW) == pytest.approx(sig(1 + 0.25 - 1.8))
    assert r(CORRECT_NO_TIMING) == pytest.approx(sig(-0.8)) == pytest.approx(0.310025518)
    assert get_reward("makora", delta=1.0)(CORRECT_FAST) == pytest.approx(sig(1.5))
    for bad in (WRONG, COMPILE_ERR, HACK, FORMAT):
        assert r(bad) == 0.0
    assert reward_minimum("makora") == 0.0


def test_composite():
    r = get_reward("composite", alpha=0.1, beta=1.0, gamma=0.5, r_max=1.8)
    assert r(CORRECT_FAST) == pytest.approx(0.1 + 1.0 + 0.5 * 1.8)  # speedup 2.0 capped at 1.8
    assert r(CORRECT_SLOW) == pytest.approx(0.1 + 1.0 + 0.25)
    assert r(CORRECT_NO_TIMING) == pytest.approx(1.1)
    assert r(WRONG) == pytest.approx(0.1)  # compiled, not correct
    assert r(COMPILE_ERR) == 0.0 and r(FORMAT) == 0.0 and r(HACK) == 0.0
    assert get_reward("composite", missing_speedup=1.0)(CORRECT_NO_TIMING) == pytest.approx(0.1 + 1 + 1)


def test_two_stage():
    front, mid = get_reward("two_stage"), get_reward("two_stage", stage="midend")
    assert front(CORRECT_FAST) == 1.0 and front(WRONG) == -10.0 and front(HACK) == -10.0
    assert mid(CORRECT_FAST) == pytest.approx(3.0) and mid(CORRECT_SLOW) == pytest.approx(1.5)
    assert mid(CORRECT_NO_TIMING) == 1.0 and mid(COMPILE_ERR) == -10.0
    assert reward_minimum("two_stage") == -10.0


def test_kevin_and_discounted_returns():
    r = get_reward("kevin")
    assert r(CORRECT_FAST) == pytest.approx(2.3) and r(CORRECT_SLOW) == pytest.approx(0.8)
    assert r(CORRECT_NO_TIMING) == pytest.approx(0.3) and r(WRONG) == 0.0 and r(HACK) == 0.0
    # G_t = r_t + 0.4 G_{t+1}: [0, 0.3, 2.3] -> [0 + 0.4*(0.3 + 0.4*2.3), 0.3 + 0.4*2.3, 2.3]
    assert discounted_returns([0.0, 0.3, 2.3]) == pytest.approx([0.488, 1.22, 2.3])
    assert discounted_returns([1.0, 1.0], gamma=0.0) == [1.0, 1.0]
    assert discounted_returns([]) == []
    with pytest.raises(ValueError):
        discounted_returns([1.0], gamma=1.5)


def test_tiered():
    r = get_reward("tiered")
    assert r(CORRECT_FAST) == 3.0
    assert r(result(Status.CORRECT, eager=1.2, inductor=1.04)) == 2.0  # not >5% over inductor
    assert r(result(Status.CORRECT, eager=1.05, inductor=2.0)) == 1.0  # exactly 5% is not >5%
    assert r(CORRECT_SLOW) == 1.0 and r(CORRECT_NO_TIMING) == 1.0
    assert r(WRONG) == -1.0 and r(HACK) == -1.0 and r(FORMAT) == -1.0
    assert reward_minimum("tiered") == -1.0


def test_hack_is_always_the_minimum():
    for name in ("makora", "composite", "two_stage", "kevin", "tiered"):
        assert get_reward(name)(HACK) == reward_minimum(name), name


def test_bad_names_and_params():
    with pytest.raises(ValueError, match="unknown reward"):
        get_reward("nope")
    with pytest.raises(ValueError, match="no parameter"):
        get_reward("makora", gamma=1.0)
    with pytest.raises(ValueError):
        get_reward("two_stage", stage="backend")(CORRECT_FAST)
    assert parse_reward_spec("composite:alpha=0.2,gamma=0.5") == ("composite", {"alpha": 0.2, "gamma": 0.5})
    assert parse_reward_spec("two_stage:stage=midend") == ("two_stage", {"stage": "midend"})
    with pytest.raises(ValueError, match="name=value"):
        parse_reward_spec("makora:1.5")


def test_parse_judge_answers():
    assert parse_score('Sure. {"correctness": 1, '
                       '"compilability": 0.5, "speed": 2}').mean == pytest.approx(2.5 / 3)
    assert parse_score("no json here") is None
    assert parse_hack_verdict('{"verdict": "honest"}').honest
    v = parse_hack_verdict('{"verdict": "hack", "kind": "output_caching", "reason": '
                           '"returns a stored tensor"}')
    assert not v.honest and v.kind == "output_caching" and "stored" in v.reason
    assert parse_hack_verdict('{"verdict": "hack", "kind": "weird"}').kind == "unknown_hack"


def test_llm_judge_term_cached_and_hack_classifier(tmp_path, suite):
    problem = suite.get("level0/1_relu")
    replay = write_replay(tmp_path / "judge.jsonl", [
        {"text": '{"correctness": 0.9, "compilability": 0.6, "speed": 0.3}'},
        {"text": '{"verdict": "hack", "kind": "pytorch_fallback", "reason": "calls torch.relu"}'},
    ])
    judge = LLMJudge(ReplayPolicy(replay), cache_path=tmp_path / "cache.sqlite")
    reward = judged_reward(get_reward("tiered"), judge, lam=0.5)
    assert reward(CORRECT_FAST, problem, "code A") == pytest.approx(3.0 + 0.5 * 0.6)
    assert reward(CORRECT_FAST, problem, "code A") == pytest.approx(3.3)  # cached: same prompt, no new call
    assert judge.calls == 1
    assert reward(HACK, problem, "code A") == -1.0  # no judge bonus for hacks
    checked = verify_with_judge(CORRECT_FAST, problem, "code B", judge, enforce=False)
    assert checked.status is Status.CORRECT and checked.findings[-1].rule == "llm-judge/pytorch_fallback"
    assert checked.findings[-1].policy == "warn"
    enforced = verify_with_judge(CORRECT_FAST, problem, "code B", judge, enforce=True)  # cached answer
    assert enforced.status is Status.HACK_DETECTED and "pytorch_fallback" in enforced.message
    assert judge.calls == 2
    assert verify_with_judge(WRONG, problem, "code B", judge, enforce=True) is WRONG
    # a second judge on the same cache file asks nothing
    again = LLMJudge(ReplayPolicy(replay), cache_path=tmp_path / "cache.sqlite")
    assert again.score(problem, "code A").mean == pytest.approx(0.6) and again.calls == 0
    assert json.loads(enforced.to_json())["findings"][-1]["rule"] == "llm-judge/pytorch_fallback"
