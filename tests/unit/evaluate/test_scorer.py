"""The one seam: settings per evaluator and per call, `open_scorer`, `ScorerBase`'s calls over one core, and
evaluators whose workers outlive the threads that call them (CPU mode)."""

from __future__ import annotations

import asyncio
import threading
import warnings

import pytest
from conftest import example

from kernelrl import (
    EvalConfig,
    EvalItem,
    Evaluator,
    EvaluatorSettings,
    MultiDeviceEvaluator,
    Scorer,
    Status,
    VerdictSettings,
    open_scorer,
)
from kernelrl.sandbox.isolation import pid_namespace_prefix

BACKGROUND_THREAD = "exploits_runtime/r02_background_thread.py"  # right answer, a thread left running
HANG = ("import torch.nn as nn\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n"
        "        while True:\n            pass\n")


@pytest.fixture(scope="module")
def relu(suite):
    return suite.get("level0/1_relu")


# -- settings ------------------------------------------------------------------------------------------------

def test_a_runtime_policy_changes_per_call_on_one_evaluator_without_a_new_judge(cpu_evaluator, relu):
    from pathlib import Path

    code = (Path(__file__).parents[2] / BACKGROUND_THREAD).read_text()
    rejected = cpu_evaluator.evaluate(relu, code, verdict=VerdictSettings(trials=2, static_checks=False))
    judge = cpu_evaluator._judge.proc.pid
    allowed = cpu_evaluator.evaluate(relu, code, verdict=VerdictSettings(
        trials=2, static_checks=False, runtime_policy={"rt-thread-left-running": "off"}))
    assert rejected.status is Status.HACK_DETECTED and "rt-thread-left-running" in rejected.message
    assert allowed.status is Status.CORRECT, allowed.message
    assert cpu_evaluator._judge.proc.pid == judge  # the same judge judged both


def test_settings_split_by_field_and_unknown_names_are_refused():
    ev = Evaluator(device="cpu", trials=3, standby_sandboxes=1)  # nothing starts before the first call
    assert (ev.settings.device, ev.settings.standby_sandboxes, ev.verdict.trials) == ("cpu", 1, 3)
    assert ev.with_verdict(trials=1).verdict.trials == 1 and ev.verdict.trials == 3
    with pytest.raises(TypeError, match="unknown evaluation setting"):
        Evaluator(device="cpu", trails=3)
    assert "help" in EvaluatorSettings.__dataclass_fields__["device"].metadata
    assert all("help" in f.metadata for f in VerdictSettings.__dataclass_fields__.values())
    assert all("help" in f.metadata for f in EvaluatorSettings.__dataclass_fields__.values())


def test_eval_config_still_works_and_says_it_is_deprecated():
    with pytest.warns(DeprecationWarning, match="EvalConfig is deprecated"):
        config = EvalConfig(device="cpu", trials=2, runtime_policy={"rt-thread-left-running": "warn"})
    settings, verdict = config.split()
    assert settings == EvaluatorSettings(device="cpu")
    assert verdict == VerdictSettings(trials=2, runtime_policy={"rt-thread-left-running": "warn"})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        ev = Evaluator(config)
        training = EvalConfig.training()
    assert (ev.settings, ev.verdict) == (settings, verdict)
    assert training.split() == (EvaluatorSettings.training(), VerdictSettings.training())


def test_open_scorer_picks_the_scorer_for_the_devices():
    with open_scorer("cpu", trials=2) as one:
        assert isinstance(one, Evaluator) and isinstance(one, Scorer) and one.verdict.trials == 2
    with open_scorer(["cpu", "cpu"]) as several:
        assert isinstance(several, MultiDeviceEvaluator) and len(several.evaluators) == 2
    with open_scorer(["cpu"]) as single:
        assert isinstance(single, Evaluator)
    with pytest.raises(ValueError, match="remote scorer"):
        open_scorer("http://localhost:8000")


# -- deadlines -----------------------------------------------------------------------------------------------

def test_an_items_own_deadline_stops_only_that_item(cpu_evaluator, relu):
    items = [EvalItem(relu, HANG, deadline_s=3.0), (relu, example("relu_triton.py"))]
    hung, fine = cpu_evaluator.evaluate_many(items, kind="code", ordered=True,
                                             verdict=VerdictSettings(trials=2, static_checks=False))
    assert hung.status is Status.TIMEOUT and hung.no_verdict and "deadline" in hung.message
    assert fine.status is Status.CORRECT and not fine.no_verdict


# -- workers outlive their callers' threads ------------------------------------------------------------------

needs_pool = pytest.mark.skipif(not pid_namespace_prefix(),
                                reason="the warm pool needs PID namespaces (unshare)")
# six evaluations on a fresh evaluator each: in the full suite, not the edit loop


def _calls_from_short_lived_threads(scorer, relu) -> list[tuple[int, int]]:
    """(judge pid, zygote pid) after each of three async calls and three calls from three threads; the first
    call starts the workers from a thread that ends right after it."""
    evaluators = getattr(scorer, "evaluators", [scorer])
    code = example("relu_triton.py")
    seen = []

    async def one_async() -> None:
        async for result in scorer.aevaluate_many([(relu, code)]):
            assert result.status is Status.CORRECT, result.message

    def pids() -> tuple[int, int]:
        ev = evaluators[0]
        assert ev._judge.running() and ev.launcher.zygote.running()
        return ev._judge.proc.pid, ev.launcher.zygote.pid

    for _ in range(3):
        asyncio.run(one_async())
        seen.append(pids())
    for _ in range(3):
        worker = threading.Thread(target=lambda: scorer.evaluate_one(relu, code))
        worker.start()
        worker.join()
        seen.append(pids())
    return seen


@pytest.mark.slow
@needs_pool
def test_an_evaluators_workers_outlive_the_threads_that_call_it(relu):
    with Evaluator(device="cpu", result_cache=False, standby_sandboxes=0, trials=1) as ev:
        seen = _calls_from_short_lived_threads(ev, relu)
    assert len(set(seen)) == 1, seen  # one judge and one zygote for all six calls


@pytest.mark.slow
@needs_pool
def test_a_multi_device_evaluators_workers_outlive_the_threads_that_call_it(relu):
    with MultiDeviceEvaluator(["cpu"], result_cache=False, standby_sandboxes=0, trials=1) as ev:
        seen = _calls_from_short_lived_threads(ev, relu)
    assert len(set(seen)) == 1, seen


# -- answers that need no worker -----------------------------------------------------------------------------

def test_cached_verdicts_and_prose_are_answered_without_waiting_for_the_judge(tmp_path, relu, monkeypatch):
    monkeypatch.delenv("KERNELRL_RESULT_CACHE", raising=False)
    code = example("relu_triton.py")
    with Evaluator(device="cpu", cache_dir=tmp_path, standby_sandboxes=0, trials=1) as first:
        assert first.evaluate(relu, code).status is Status.CORRECT  # stored, and the environment remembered
    with Evaluator(device="cpu", cache_dir=tmp_path, standby_sandboxes=0, trials=1) as second:
        released = threading.Event()
        start = second._judge.ensure_started
        monkeypatch.setattr(second._judge, "ensure_started", lambda: (released.wait(120), start())[1])
        answers: list = []
        caller = threading.Thread(target=lambda: answers.extend(second.evaluate_many(
            [(relu, code), (relu, "I cannot write this kernel.")], ordered=True)))
        caller.start()
        caller.join(60)
        try:
            assert not caller.is_alive(), "the call waited for the judge"
            cached, prose = answers
            assert cached.cached and cached.status is Status.CORRECT
            assert prose.status is Status.FORMAT_ERROR and prose.environment.mode == "cpu-interpreter"
            assert not second._judge.ready()
        finally:
            released.set()
            caller.join(120)
