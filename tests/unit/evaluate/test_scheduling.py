"""Scheduling of one device's sandboxes (kernelrl.evaluate.slots), with real evaluations in CPU mode: compile
slots (cores) that outnumber the timing slot, timing still one at a time (the host-clock timer of
`cpu_timing`, through the real timing token and gate), the memory bound on sandboxes alive at once, and turns
between callers so that a long batch does not starve a single request. Overlaps are read from the results'
own timelines (`EvalResult.timeline`), never from wall-time thresholds."""

from __future__ import annotations

import threading
import time

import pytest
from conftest import example

from kernelrl import Evaluator, Stage, Status, VerdictSettings
from kernelrl.evaluate import DEADLINE_MESSAGE
from kernelrl.evaluate.slots import (
    CUDA_CONTEXT_BYTES,
    NEED_MARGIN,
    DeviceMemory,
    FairSlots,
    GiB,
    HeldSlot,
    first_need,
    plan_device_memory,
    plan_slots,
)
from kernelrl.sandbox.isolation import pid_namespace_prefix
from kernelrl.timing.cuda_timer import TimerSettings

pytestmark = pytest.mark.slow  # sandboxes timed against each other: in `make test`, not `make test-fast`

RELU = example("relu_triton.py")
# a timed run longer than the gap between two sandboxes' timing tokens (their first trials run side by side),
# so their timings would overlap if the gate let them
TIMER = TimerSettings(warmup_ms=5, target_ms=800, min_reps=5, max_reps=5000)
SHORT_TIMER = TimerSettings(warmup_ms=5, target_ms=100, min_reps=5, max_reps=1000)
SLACK_S = 1e-3  # timelines are rounded to microseconds, phase lengths to 0.1 ms


def distinct(n: int) -> list[str]:
    """n sources of the same correct kernel that differ in their AST (as fresh RL candidates do)."""
    return [RELU + f"\n_CANDIDATE = {k}\n" for k in range(n)]


def spans(results, begin: str, end: str) -> list[tuple[float, float]]:
    return [(r.timeline[begin], r.timeline[end]) for r in results
            if begin in r.timeline and end in r.timeline]


def sandbox_span(r) -> tuple[float, float]:
    """From the sandbox's start to its end (the finish phase's end)."""
    return r.timeline["start"], r.timeline["finish"] + r.phases_s["finish"]


def precompile_span(r) -> tuple[float, float]:
    """While the sandbox holds its compile slot: from its start to its timing token (or its end)."""
    end = r.timeline.get("token", r.timeline["finish"] + r.phases_s["finish"])
    return r.timeline["start"], end


def most_at_once(intervals: list[tuple[float, float]]) -> int:
    edges = sorted([(a + SLACK_S, 1) for a, _ in intervals] + [(b, -1) for _, b in intervals],
                   key=lambda e: (e[0], e[1]))
    now = peak = 0
    for _, step in edges:
        now += step
        peak = max(peak, now)
    return peak


def test_plan_slots_cores_and_memory():
    # cores bound the compile slots, memory (0.8 x available / per sandbox, less standbys) the sandboxes alive
    plan = plan_slots(compile_slots=None, max_concurrency=None, sandbox_memory_gb=2, standby_sandboxes=3,
                      cores=16, available_bytes=100 * GiB)
    assert (plan.memory_slots, plan.sandbox_slots, plan.compile_slots, plan.workers) == (37, 37, 16, 32)
    tight = plan_slots(compile_slots=None, max_concurrency=None, sandbox_memory_gb=8, standby_sandboxes=3,
                       cores=16, available_bytes=100 * GiB)
    assert (tight.sandbox_slots, tight.compile_slots, tight.workers) == (7, 7, 7)
    explicit = plan_slots(compile_slots=2, max_concurrency=6, sandbox_memory_gb=0, standby_sandboxes=3,
                          cores=16, available_bytes=100 * GiB)
    assert explicit.memory_slots is None and (explicit.compile_slots, explicit.workers) == (2, 6)
    floor = plan_slots(compile_slots=None, max_concurrency=None, sandbox_memory_gb=1e6, standby_sandboxes=3,
                       cores=16, available_bytes=100 * GiB)
    assert (floor.sandbox_slots, floor.compile_slots) == (1, 1)  # never zero


def test_fair_slots_take_turns_between_callers():
    slots = FairSlots(1)
    order: list[str] = []
    batch, single = object(), object()
    slots.acquire(batch)  # the batch holds the only slot; four more of its items wait

    def take(caller, name):
        slots.acquire(caller)
        order.append(name)
        slots.release()

    waiting = [threading.Thread(target=take, args=(batch, f"b{k}")) for k in range(4)]
    def waiting_tickets() -> int:
        with slots._cond:
            return sum(len(q) for q in slots._queues.values())

    def until(count: int) -> None:
        deadline = time.monotonic() + 10
        while waiting_tickets() < count and time.monotonic() < deadline:
            time.sleep(0.001)

    for t in waiting:
        t.start()
    until(4)
    late = threading.Thread(target=take, args=(single, "single"))
    late.start()
    until(5)
    slots.release()
    for t in [*waiting, late]:
        t.join(5)
    assert order.index("single") <= 1, order  # one batch item at most before it, not all four
    assert slots.peak == 1 and slots.held == 0


def test_weighted_slots_keep_the_line_and_the_capacity():
    """Device bytes: a request that does not fit waits, and so does a smaller one behind it from another
    caller (a large evaluation is not starved by small ones); held never exceeds the capacity; an oversized
    request is granted as the whole capacity, alone."""
    slots = FairSlots(10)
    first, big, small = object(), object(), object()
    assert slots.acquire(first, amount=6) is not None
    order: list[str] = []

    def take(caller, amount, name):
        slots.acquire(caller, amount=amount)
        order.append(name)

    waiting = threading.Thread(target=take, args=(big, 6, "big"))
    waiting.start()
    while not slots._queues:
        time.sleep(0.001)
    behind = threading.Thread(target=take, args=(small, 2, "small"))
    behind.start()
    time.sleep(0.2)
    assert order == [] and slots.held == 6  # 2 bytes are free, but the big request is first in line
    slots.release(6)
    waiting.join(5)
    behind.join(5)
    assert sorted(order) == ["big", "small"] and slots.held == 8 and slots.peak == 8  # both in, at once
    slots.release(6)
    slots.release(2)
    with HeldSlot(slots, first, amount=50) as whole:  # more than there is: all of it
        assert whole.held and slots.held == 10
    assert slots.held == 0
    with HeldSlot(None, first, amount=1 << 40) as unbounded:  # no admission: nothing taken, nothing waits
        assert unbounded.held and slots.held == 0


def test_the_judges_float64_runs_are_kept_back_from_the_sandboxes():
    """The judge recomputes a reference in float64 (a value mismatch, rt-low-precision) with device memory of
    its own, one run at a time: the most a run took, with the margin, is kept back from every request, raised
    and never lowered; a request that cannot fit beside it waits for the others and then runs alone, so
    nothing waits forever."""
    memory = DeviceMemory(budget_bytes=10 * GiB, default_bytes=GiB)
    slots = memory.slots
    memory.reserve_for_judge(None)
    memory.reserve_for_judge(2 * GiB)
    reserve = int(NEED_MARGIN * 2 * GiB)
    memory.reserve_for_judge(GiB)  # a smaller run later: the reserve stays
    assert slots.reserved == reserve and memory.snapshot()["judge_reserve_bytes"] == reserve
    first, second, big = object(), object(), object()
    assert slots.acquire(first, amount=4 * GiB) is not None
    got: list[str] = []
    waiting = threading.Thread(target=lambda: (slots.acquire(second, amount=4 * GiB), got.append("second")))
    waiting.start()
    time.sleep(0.2)
    assert got == [] and slots.held == 4 * GiB  # 4 + 4 GiB fit the budget, not beside the judge's 2.5
    slots.release(4 * GiB)
    waiting.join(5)
    assert got == ["second"]
    slots.release(4 * GiB)
    # more than fits beside the reserve: granted once nothing else is held (in a thread: a bug must fail
    # the test, not hang it)
    cancel = threading.Event()
    alone = threading.Thread(target=lambda: got.append(slots.acquire(big, cancel, amount=9 * GiB)))
    alone.start()
    alone.join(5)
    cancel.set()
    slots.wake()
    alone.join(5)
    assert got[-1] is not None and slots.held == 9 * GiB
    slots.release(9 * GiB)


def test_device_memory_learns_each_problems_need():
    memory = DeviceMemory(budget_bytes=40 * GiB, default_bytes=3 * GiB)
    assert memory.need("p") == 3 * GiB  # not seen yet: the default
    memory.observed("p", sandbox_peak_bytes=1 * GiB, judge_bytes=GiB // 2)
    learned = int(NEED_MARGIN * (CUDA_CONTEXT_BYTES + 1.5 * GiB))
    assert memory.need("p") == learned < 3 * GiB  # small problems pack tighter than the default
    memory.observed("p", sandbox_peak_bytes=GiB // 4, judge_bytes=None)
    assert memory.need("p") == learned  # never lowered by a smaller run
    # no report (the sandbox failed): nothing learned
    memory.observed("p", sandbox_peak_bytes=None, judge_bytes=GiB)
    assert memory.need("p") == learned
    memory.ran_out("p")
    assert memory.need("p") == 2 * learned
    for _ in range(10):
        memory.ran_out("q")
    assert memory.need("q") == 40 * GiB  # capped at the budget: such an evaluation runs alone
    assert memory.need("other") == 3 * GiB
    assert memory.snapshot() == {"budget_bytes": 40 * GiB, "default_bytes": 3 * GiB, "judge_reserve_bytes": 0,
                                 "need_bytes": {"p": 2 * learned, "q": 40 * GiB}}
    # before its first evaluation finishes, a problem known to be heavy is charged its estimate, never less
    # than the default; what its evaluations then use replaces the estimate, and running out doubles it
    heavy = first_need(2 * GiB, 4)
    assert heavy == int(NEED_MARGIN * (CUDA_CONTEXT_BYTES + 8 * 2 * GiB))
    assert memory.need("h", heavy) == heavy and memory.need("h", GiB) == memory.need("h") == 3 * GiB
    assert memory.need("h", 100 * GiB) == 40 * GiB and first_need(None, 4) is None
    memory.ran_out("h", heavy)
    assert memory.need("h", heavy) == 40 * GiB  # 2 x 20.7 GiB, capped
    memory.observed("s", sandbox_peak_bytes=GiB, judge_bytes=0)
    assert memory.need("s", heavy) == int(NEED_MARGIN * (CUDA_CONTEXT_BYTES + GiB))
    assert plan_device_memory(None, 3.0) is None and plan_device_memory(80 * GiB, 0) is None
    planned = plan_device_memory(80 * GiB, 2.0)
    assert planned.budget_bytes == int(0.8 * 80 * GiB) and planned.need("x") == 2 * GiB
    # beside a trainer
    assert plan_device_memory(80 * GiB, 2.0, budget_gb=25.6).budget_bytes == int(25.6 * GiB)
    # never above what is free
    assert plan_device_memory(10 * GiB, 2.0, budget_gb=25.6).budget_bytes == 8 * GiB
    with pytest.raises(ValueError):
        DeviceMemory(0, GiB)


pool = pytest.mark.skipif(not pid_namespace_prefix(), reason="the warm pool needs PID namespaces (unshare)")


def missed_deadline(result) -> bool:
    """Stopped by the call's deadline: no verdict on the code."""
    return result.no_verdict and result.message.startswith(DEADLINE_MESSAGE)


# Slots are an evaluator's own settings (EvaluatorSettings): a test of a slot plan needs an evaluator with
# that plan, with no memory bound unless the bound is what it tests (so the plan does not depend on this
# host's free memory). Tests of the same plan share one and bring their verdict settings per call.
@pytest.fixture(scope="module")
def one_compile_slot():
    with Evaluator(device="cpu", result_cache=False, compile_slots=1, max_concurrency=8,
                   sandbox_memory_gb=0) as ev:
        yield ev


@pool
def test_compile_slots_outnumber_timing_slot_and_timing_stays_exclusive(suite):
    problem = suite.get("level0/1_relu")
    with Evaluator(device="cpu", result_cache=False, compile_slots=2, max_concurrency=6,
                   sandbox_memory_gb=0) as ev:
        assert (ev.slots.compile_slots, ev.slots.workers) == (2, 6)
        results = list(ev.evaluate_many([(problem, code) for code in distinct(4)],
                                        verdict=VerdictSettings(trials=2, cpu_timing=True, timer=TIMER)))
        peak = ev._compile_slots.peak
    assert [r.status for r in results] == [Status.CORRECT] * 4, [r.message for r in results]
    for r in results:  # timed for real: the host-clock timer behind the timing token
        assert r.timing.candidate is not None and r.timing.candidate.mode == "host", r.timing
        assert {"checks", "queue", "first_trial", "token", "timing"} <= set(r.phases_s)
        # the sandbox's own start-up steps, on the evaluator's clock: a standby started before its candidate
        # came, took it in the start phase and was confined before the import
        t = r.timeline
        assert t["sandbox_stub"] <= t["sandbox_standby"] <= t["sandbox_assigned"], t
        assert t["sandbox_assigned"] <= t["sandbox_readonly_fs"], t
        assert t["start"] - SLACK_S <= t["sandbox_assigned"] <= t["sandbox_capabilities"] <= t["import"], t
    timing = spans(results, "timing", "finish")
    assert len(timing) == 4
    timing.sort()
    for (_, end), (begin, _) in zip(timing, timing[1:], strict=False):
        assert begin >= end - SLACK_S, f"two timed runs overlapped: {timing}"
    # two sandboxes compiled/checked at once (more than the one timing slot), never more than the two slots
    assert most_at_once([precompile_span(r) for r in results]) == 2
    assert peak == 2


@pool
def test_compile_slot_given_back_at_the_timing_token(suite, one_compile_slot):
    problem = suite.get("level0/1_relu")
    # all three in flight
    assert one_compile_slot.slots.compile_slots == 1 and one_compile_slot.slots.workers >= 3
    results = list(one_compile_slot.evaluate_many([(problem, code) for code in distinct(3)],
                                                  verdict=VerdictSettings(trials=2, cpu_timing=True,
                                                                          timer=SHORT_TIMER)))
    assert [r.status for r in results] == [Status.CORRECT] * 3
    # with one compile slot, a candidate began (took the slot) while another waited for or held the timing
    # token: the slot went back when that one asked for the token, not when it ended
    waiting_or_timing = [(r.timeline["token"], r.timeline["finish"]) for r in results]
    began = [r.timeline["prepare"] for r in results]
    assert any(a < t < b for a, b in waiting_or_timing for t in began), (waiting_or_timing, began)
    assert most_at_once([precompile_span(r) for r in results]) == 1


@pool
def test_memory_bound_limits_sandboxes_alive(suite):
    problem = suite.get("level0/1_relu")
    # a per-sandbox estimate larger than the host: one sandbox at a time, whatever the batch asks for
    with Evaluator(device="cpu", trials=2, result_cache=False, sandbox_memory_gb=1e6, compile_slots=4,
                   max_concurrency=4) as ev:  # its own: the memory bound is the evaluator's
        assert ev.slots.sandbox_slots == 1 and ev.slots.compile_slots == 1
        results = list(ev.evaluate_many([(problem, code) for code in distinct(4)]))
    assert [r.status for r in results] == [Status.CORRECT] * 4
    assert most_at_once([sandbox_span(r) for r in results]) == 1
    assert max(r.phases_s["queue"] for r in results) > 0  # the others waited for the one slot


@pool
def test_single_request_is_not_starved_by_a_batch(suite, one_compile_slot):
    problem = suite.get("level0/1_relu")
    ev = one_compile_slot.with_verdict(trials=2)
    assert ev.slots.compile_slots == 1 and ev.slots.workers == 8
    ev.warm_up()
    batch: list = []
    first = threading.Event()

    def run_batch():
        for result in ev.evaluate_many([(problem, code) for code in distinct(8)]):
            batch.append(result)
            first.set()

    runner = threading.Thread(target=run_batch)
    runner.start()
    first.wait(60)  # the batch's other items are queued for the one compile slot by now
    single = ev.evaluate(problem, RELU + "\n_SINGLE = 1\n")
    runner.join(120)
    assert single.status is Status.CORRECT and len(batch) == 8
    asked, granted = single.timeline["queue"], single.timeline["prepare"]
    # batch items that were already waiting when the single request came, and got their slot after it did
    overtaken = [r for r in batch if r.timeline["queue"] < asked and r.timeline["prepare"] > granted]
    served_between = [r for r in batch if asked < r.timeline["prepare"] < granted]
    # at most the batch's turn already in line when it asked (+1 for a slot handed over as it asked); in one
    # line with the batch (FIFO) it would wait for all the batch's waiting items
    assert len(served_between) <= 2, (asked, granted, sorted(r.timeline["prepare"] for r in batch))
    assert len(overtaken) >= 3


@pool
def test_batch_deadline_returns_every_item_in_time(suite):
    from candidates import INFINITE_LOOP

    problem = suite.get("level0/1_relu")
    codes = [RELU + "\n_CANDIDATE = 0\n", INFINITE_LOOP, *distinct(6)[1:]]
    # static checks off: the hanging candidate must reach its sandbox; its own evaluator: two in flight, so
    # the first two items are the ones that run
    with Evaluator(device="cpu", trials=2, result_cache=False, compile_slots=2, max_concurrency=2,
                   sandbox_memory_gb=0, run_timeout_s=60, static_checks=False) as ev:
        ev.warm_up()
        started = time.monotonic()
        results = list(ev.evaluate_many([(problem, code) for code in codes], ordered=True, deadline_s=4))
        wall = time.monotonic() - started
    # the deadline (4 s), not the hanging candidate's 60 s
    assert len(results) == len(codes) and wall < 30, wall
    assert results[0].status is Status.CORRECT
    hung = results[1]  # stopped by the deadline: no verdict on its code
    assert missed_deadline(hung) and hung.stage is Stage.CORRECTNESS, (hung.status, hung.stage, hung.message)
    assert not missed_deadline(results[0])
    assert all(r.status is Status.CORRECT or missed_deadline(r) for r in results)


@pool
@pytest.mark.slow  # two evaluators and a deadline
def test_multi_device_batch_deadline(suite):
    from candidates import INFINITE_LOOP

    from kernelrl import MultiDeviceEvaluator

    problem = suite.get("level0/1_relu")
    codes = [INFINITE_LOOP, INFINITE_LOOP, *distinct(3)]
    # its own: one sandbox in flight per device, so that both devices hold a hanging candidate
    with MultiDeviceEvaluator(["cpu", "cpu"], trials=2, max_concurrency=1, sandbox_memory_gb=0,
                              run_timeout_s=60, static_checks=False, result_cache=False) as multi:
        multi.warm_up()
        started = time.monotonic()
        results = list(multi.evaluate_many([(problem, code) for code in codes], ordered=True, deadline_s=4))
        wall = time.monotonic() - started
    # both devices held a hanging candidate: the three good ones never started, and nothing waited 60 s
    assert len(results) == 5 and wall < 30, wall
    assert all(missed_deadline(r) for r in results), [r.message for r in results]
    assert [r.stage for r in results[2:]] == [Stage.STATIC] * 3  # not started: no sandbox ran


def test_a_group_of_completions_for_a_new_problem_audits_it_once(suite):
    """RL sends a problem's completions together: the problem is audited once, not once per completion."""
    problem = suite.get("level0/1_relu")
    with Evaluator(device="cpu", result_cache=False, max_concurrency=4, sandbox_memory_gb=0) as ev:
        audited = []
        audit = ev._audit

        def counted(*args, **kwargs):
            audited.append(args[0].id)
            time.sleep(0.5)  # a slow judge: the other completions arrive while the first audit runs
            return audit(*args, **kwargs)

        ev._audit = counted
        results = list(ev.evaluate_many([(problem, code) for code in distinct(4)],
                                        verdict=VerdictSettings(trials=1, timing=False)))
    assert [r.status for r in results] == [Status.CORRECT] * 4, [r.message for r in results]
    assert audited == ["level0/1_relu"]
