"""A call that never returns is stopped at the pace the candidate's own earlier calls set
(kernelrl.evaluate.pace), whatever keeps it waiting, instead of at the run timeout."""

from __future__ import annotations

import candidates as c
import pytest

from kernelrl import Status, VerdictSettings, load_suite
from kernelrl.evaluate.pace import PACE_FACTOR, PACE_FLOOR_S, TIMED_FACTOR, TIMED_FLOOR_S, CallPace, call_key

# no thread, no stream: the call on inputs of a shape it has already answered sleeps for an hour (on a GPU, a
# kernel spinning on a flag nobody sets, then a wait for it, looks the same from outside)
REPEAT = """if list(x.shape) in SEEN:
            {stall}
        SEEN.append(list(x.shape))
        return relu(x)"""
STALLS_ON_A_REPEAT = c.relu_candidate(REPEAT.format(stall="time.sleep(3600)"), "\nimport time\n\nSEEN = []\n")


def test_the_pace_bounds_a_call_once_an_earlier_one_on_its_inputs_returned():
    calls = [("check", "c"), ("sweep", "s"), ("check", "c"), ("sweep", "s"), ("sweep", "s2")]
    pace = CallPace(calls, "bench", min_timed_calls=23, adaptive_s=5.0)
    assert pace.limit() is None  # the first call compiles: the run timeout
    pace.reported("trial", 4.0)  # the first check call, compiling
    assert pace.limit() is None  # the first sweep call: new shapes, it may compile again
    pace.reported("trial", 2.0)
    assert pace.limit()[0] == PACE_FLOOR_S + PACE_FACTOR * 4.0
    assert "trial 2, on the 'check' inputs" in pace.limit()[1]
    pace.reported("trial", 0.5)  # faster without the compile: the fastest call sets the pace
    assert pace.limit()[0] == PACE_FLOOR_S + PACE_FACTOR * 2.0
    pace.reported("trial", 0.25)
    assert pace.limit() is None  # a sweep draw of other shapes: it may compile again
    pace.reported("trial", 3.0)
    assert pace.limit() is None  # the share's calls and the wait for the token: the run timeout
    pace.reported("timing_granted", 30.0)
    assert pace.limit() is None  # no call on the timing set yet (CPU mode without host timing)
    timed = CallPace([("bench", "b"), ("check", "c")], "bench", min_timed_calls=23)
    timed.reported("trial", 0.1)
    timed.reported("trial", 0.2)
    timed.reported("census", 3.0)
    timed.reported("timing_granted", 9.0)
    assert timed.limit()[0] == pytest.approx(TIMED_FLOOR_S + TIMED_FACTOR * 23 * 0.1)
    timed.reported("timing", 1.0)
    assert timed.limit() is None


def test_a_call_key_tells_shapes_and_plain_arguments_apart():
    from kernelrl.sandbox.protocol import TrialPlan

    def plan(shape, value=1, name="sweep"):
        return TrialPlan(index=0, set=name, inputs=[{"dtype": "float32", "shape": shape}],
                         args=[{"tensor": 0}, {"value": value}], timed_only=False)

    assert call_key(plan([4, 8])) == call_key(plan([4, 8]))
    others = (plan([4, 8]), plan([4, 9]), plan([4, 8], 2), plan([4, 8], name="check"))
    assert len({call_key(p) for p in others}) == 4


def test_a_call_that_ran_while_the_judge_compared_keeps_its_own_time():
    """The stub runs a trial's call while the verdict process still compares the one before: the report is
    then waiting at once, and the pace takes the stub's time for the call instead of that instant."""
    from kernelrl.evaluate.trials import Trials
    from kernelrl.sandbox.protocol import TrialEvent

    pace = CallPace([("check", "c"), ("check", "c")], None, min_timed_calls=23)
    trials = Trials(None, "e", "/nonexistent", [], "cpu", None, 0, {}, pace=pace)
    trials.on_event(TrialEvent(index=9, outputs=[], launches=1, threads=[], changed_inputs=[], call_s=7.5))
    assert pace.fastest == {"c": 7.5}
    assert pace.limit()[0] == PACE_FLOOR_S + PACE_FACTOR * 7.5


def test_a_call_that_never_returns_times_out_at_the_pace_of_the_earlier_ones(cpu_evaluator):
    """Trial 2 repeats trial 0's inputs and sleeps: the evaluation times out on the pace of trial 0's call
    (a few seconds), not at the two-minute run timeout, and says which call did not return."""
    result = cpu_evaluator.evaluate(load_suite().get("level0/1_relu"), STALLS_ON_A_REPEAT,
                                    verdict=VerdictSettings(trials=5))
    assert result.status is Status.TIMEOUT, result.message
    assert "trial 2, on the 'check' inputs" in result.message and "did not return within" in result.message
    bound = float(result.message.rsplit("within ", 1)[1].split(" s")[0])
    assert bound < VerdictSettings().run_timeout_s / 2, result.message
    assert result.correctness.trials_passed == 2


def test_a_timed_call_that_never_returns_times_out_at_the_timed_pace(cpu_evaluator):
    """Every trial returns; the calls after them (the timed calls, on the host clock in CPU mode) sleep: the
    evaluation times out on the timed calls' pace, not at the run timeout."""
    from corpus import timed_config

    code = c.relu_candidate("CALLS.append(1)\n        if len(CALLS) > 3:\n            time.sleep(3600)\n"
                            "        return relu(x)", "\nimport time\n\nCALLS = []\n")
    result = cpu_evaluator.evaluate(load_suite().get("level0/1_relu"), code, verdict=timed_config())
    assert result.status is Status.TIMEOUT, result.message
    assert "the timed calls" in result.message and "did not return within" in result.message
    assert result.correctness.trials_passed == 3


# a kernel spinning on a flag nobody sets, on a stream of the candidate's own, and a wait for that stream
SPINS_ON_ITS_OWN_STREAM = c.relu_candidate(
    REPEAT.format(stall="flag = torch.zeros(1, dtype=torch.int32, device=x.device)\n"
                        "            stream = torch.cuda.Stream()\n"
                        "            with torch.cuda.stream(stream):\n"
                        "                spin_kernel[(1,)](flag)\n"
                        "            stream.synchronize()"),
    """
SEEN = []


@triton.jit
def spin_kernel(flag_ptr):
    while tl.load(flag_ptr, volatile=True) == 0:
        pass
""")


@pytest.mark.gpu
@pytest.mark.parametrize("code", [STALLS_ON_A_REPEAT, SPINS_ON_ITS_OWN_STREAM], ids=["sleep", "own-stream"])
def test_on_a_gpu_a_call_that_never_returns_times_out_at_the_pace(code):
    """On a GPU the first call of each input set compiles; a later call that never returns (a sleep, or a
    wait for a kernel spinning on the candidate's own stream) is a timeout well before the run timeout."""
    from kernelrl import Evaluator

    with Evaluator(device="cuda", verdict=VerdictSettings(static_checks=False, timing=False)) as ev:
        result = ev.evaluate(load_suite().get("level0/1_relu"), code)
    print("pace on a GPU:", result.status.value, result.message, f"{result.wall_time_s:.1f} s", flush=True)
    assert result.status is Status.TIMEOUT and "did not return within" in result.message, result.message
    bound = float(result.message.rsplit("within ", 1)[1].split(" s")[0])
    assert bound < VerdictSettings().run_timeout_s / 2, result.message
