"""The kernel share's measured calls (kernelrl.sandbox.share_call): fresh inputs (the judge's share trials,
or a fresh mix of two timing variants), outputs compared like a timed call's, and the gate ladder that takes
new inputs instead of measuring the same ones twice. The GPU half (the gate, the events) runs in
tests/gpu/test_gpu.py and the runtime corpus (g08)."""

from __future__ import annotations

import pytest
import torch

from kernelrl.evaluate.trials import Trials
from kernelrl.sandbox.judge_client import JudgeClient
from kernelrl.sandbox.judge_wire import PrepareRequest
from kernelrl.sandbox.protocol import CensusEvent, TrialPlan, parse_event
from kernelrl.sandbox.share_call import SHARE_ATTEMPTS, SHARE_GATES_MS, measure_on_fresh_calls
from kernelrl.sandbox.tensor_files import write_tensor
from kernelrl.sandbox.tensorio import tensor_meta
from kernelrl.sandbox.timed_mix import Mixer
from kernelrl.verify.tolerance import Tolerance

PROBLEM = ("import torch\nimport torch.nn as nn\nclass Model(nn.Module):\n"
           "    def forward(self, x):\n        return x * 2\n"
           "def get_inputs():\n    return [torch.randn(16, 8)]\ndef get_init_inputs():\n    return []\n")


@pytest.fixture(scope="module")
def judge():
    client = JudgeClient("cpu", timeout_s=120)
    client.ensure_started()
    yield client
    client.close()


def _prepare(judge: JudgeClient, tmp_path, share_trials: int, timed_mix: bool = False) -> list[TrialPlan]:
    path = tmp_path / "double.py"
    path.write_text(PROBLEM)
    (tmp_path / "in").mkdir(exist_ok=True)
    name = f"e{share_trials}"
    request = PrepareRequest(eval_id=name, problem_path=str(path), problem_sha256="ab" * 32, master_seed=7,
                             min_trials=2, input_sets=[], in_dir=str(tmp_path / "in"), timing_variants=2,
                             timed_mix=timed_mix, share_trials=share_trials)
    return judge.call(request).trials


def _inputs(trial: TrialPlan) -> torch.Tensor:
    torch.manual_seed(trial.draw.seed)  # the sandbox's draw: the same bytes as the judge's
    return torch.randn(16, 8)


def test_the_judge_plans_fresh_share_trials_after_every_other(judge, tmp_path):
    plain = _prepare(judge, tmp_path, 0)
    trials = _prepare(judge, tmp_path, SHARE_ATTEMPTS)
    assert not any(t.share for t in plain)
    share = [t for t in trials if t.share]
    assert len(share) == SHARE_ATTEMPTS and trials[-SHARE_ATTEMPTS:] == share  # after every other trial
    # the timing set (the problem's one set), unchecked so far
    assert all(t.timed_only and t.set == trials[0].set for t in share)
    seeds = [t.draw.seed for t in trials]
    assert len(set(seeds)) == len(seeds)  # inputs the candidate has not seen on any other call
    # where the timed calls mix, the stub mixes fresh inputs for the share too: no trial to hold
    assert not any(t.share for t in _prepare(judge, tmp_path, SHARE_ATTEMPTS, timed_mix=True))


def _trials(judge: JudgeClient, tmp_path, plan: list[TrialPlan]) -> Trials:
    return Trials(judge, f"e{SHARE_ATTEMPTS}", str(tmp_path / "out"), plan, "gpu",
                  Tolerance(1e-5, 1e-5, "float32"), 1 << 30, {})


def _census(trial: int, out: torch.Tensor, out_dir, n: int = 0, **mix) -> CensusEvent:
    """The stub's census report as the typed wire hands it to the verdict."""
    out_dir.mkdir(exist_ok=True)
    write_tensor(out_dir / f"share{n}_out0.bin", out)
    return parse_event({"event": "census", "fraction": 0.97, "method": "events",
                        "checked": [{"rep": n, "trial": trial, "outputs": [tensor_meta(out)], **mix}]})


def test_the_measured_call_is_compared_with_the_reference_for_its_fresh_inputs(judge, tmp_path):
    plan = _prepare(judge, tmp_path, SHARE_ATTEMPTS)
    first = next(t for t in plan if t.share)
    right = _inputs(first) * 2
    trials = _trials(judge, tmp_path, plan)
    assert trials.on_event(_census(first.index, right, tmp_path / "out"))
    assert trials.findings == [] and trials.problem is None and trials.census.fraction == 0.97

    # the answer of an earlier call (a copy kernel's stale result): the share's own call is wrong
    stale = _inputs(plan[0]) * 2
    trials = _trials(judge, tmp_path, plan)
    assert not trials.on_event(_census(first.index, stale, tmp_path / "out"))
    assert [f.rule for f in trials.findings] == ["rt-timed-output-mismatch"]
    assert "kernel share's measured call" in trials.findings[0].detail


def test_a_measured_call_on_a_fresh_mix_is_compared_with_the_mixs_reference(judge, tmp_path):
    plan = _prepare(judge, tmp_path, SHARE_ATTEMPTS)
    a, b = [t for t in plan if not t.share][:2]
    seed = 12345
    mixed = Mixer(torch).mixed([_inputs(a)], [_inputs(b)], seed)[0]  # as the stub mixes them
    trials = _trials(judge, tmp_path, plan)
    census = _census(a.index, mixed * 2, tmp_path / "out", mix_trial=b.index, mix_seed=seed)
    assert trials.on_event(census)
    assert trials.findings == [] and trials.problem is None
    trials = _trials(judge, tmp_path, plan)  # variant a's own answer: not the mix's
    assert not trials.on_event(_census(a.index, _inputs(a) * 2, tmp_path / "out", mix_trial=b.index,
                                       mix_seed=seed))
    assert [f.rule for f in trials.findings] == ["rt-timed-output-mismatch"]


def test_a_share_measured_elsewhere_or_unchecked_is_refused(judge, tmp_path):
    plan = _prepare(judge, tmp_path, SHARE_ATTEMPTS)
    seen = plan[0]  # a correctness trial: inputs the candidate saw before
    trials = _trials(judge, tmp_path, plan)
    assert not trials.on_event(_census(seen.index, _inputs(seen) * 2, tmp_path / "out"))
    assert trials.problem == "the kernel share was measured on inputs other than its own"
    trials = _trials(judge, tmp_path, plan)
    assert not trials.on_event(parse_event({"event": "census", "fraction": 0.97, "method": "events",
                                            "checked": []}))
    assert trials.problem == "the kernel share names no checked call"


class _Gate:
    """The event share's interface (kernelrl.sandbox.kernel_share.EventShare needs CUDA): holds from the
    attempt `holds_from` on, calling the forward as the real one does."""

    def __init__(self, holds_from: int) -> None:
        self.holds_from, self.gates = holds_from, []

    def measure(self, forward, census, gate_ms: float):
        forward()
        self.gates.append(gate_ms)
        return {"fraction": 0.9} if len(self.gates) > self.holds_from else None


def test_each_attempt_takes_new_inputs_and_every_call_is_checked():
    gate, called, recorded = _Gate(holds_from=1), [], []

    def call_for(n):
        return (lambda: called.append(n) or f"out{n}"), {"trial": 10 + n}

    def record(result, n):
        recorded.append((n, result))
        return []

    measured, checks = measure_on_fresh_calls(torch, gate, None, call_for, record)
    assert measured["fraction"] == 0.9 and measured["method"] == "events" and measured["attempts"] == 2
    assert gate.gates == list(SHARE_GATES_MS[:2])  # a longer gate on the second attempt
    assert called == [0, 1]  # each attempt readied its own inputs
    assert recorded == [(0, "out0"), (1, "out1")] and [c.trial for c in checks] == [10, 11]


def test_without_fresh_inputs_nothing_is_measured_and_a_raising_call_fails_there():
    measured, checks = measure_on_fresh_calls(torch, _Gate(holds_from=0), None, lambda n: None,
                                              lambda result, n: [])
    assert measured["fraction"] is None and checks == [] and "no fresh inputs" in measured["error"]

    def call_for(n):
        def forward():
            raise RuntimeError("only when measured")
        return forward, {"trial": 10 + n}

    with pytest.raises(RuntimeError, match="only when measured"):
        measure_on_fresh_calls(torch, _Gate(holds_from=0), None, call_for, lambda result, n: [])
