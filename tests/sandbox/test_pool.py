"""The warm pool (zygote) and the batch API on the CPU, with real processes: isolation of forked children, no
state carried from one candidate to the next, failures that cost only their own timeout, zygote restart, the
out-of-memory retry (the device timing token and the run slots: tests/sandbox/test_gate.py). Wall times with
and without the pool are printed, never asserted."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
import time
from pathlib import Path

import candidates as c
import pytest
from conftest import example

from kernelrl import Evaluator, Status, VerdictSettings
from kernelrl.sandbox.isolation import pid_namespace_prefix
from kernelrl.sandbox.runner import run_child

# the pool's timing and failure paths: in the full suite (`make test`), not the edit loop (`make test-fast`)
pytestmark = [pytest.mark.skipif(not pid_namespace_prefix(),
                                 reason="the warm pool needs PID namespaces (unshare)"),
              pytest.mark.slow]

SECRET = "KERNELRL_TEST_SECRET_VALUE_7f3a"

# Raises unless every isolation layer is visible from inside the candidate; otherwise a correct relu.
PROBE = c.relu_candidate("return relu(x)", module_extra=f'''
import resource
import socket
import tempfile

def _probe():
    problems = []
    if os.getpid() == 1 or os.getppid() != 1:
        problems.append(f"pid {{os.getpid()}} ppid {{os.getppid()}}: "
                        "expected a child of the namespace's init")
    pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    if max(pids) > 50:
        problems.append(f"/proc shows host processes: {{sorted(pids)[:10]}}")
    names = [n for _, n in socket.if_nameindex()]
    if names != ["lo"]:
        problems.append(f"network interfaces {{names}}")
    for where in (os.path.dirname(torch.__file__), "/etc", "/usr"):
        try:
            open(os.path.join(where, "kernelrl_pool_probe"), "w").close()
            problems.append(f"{{where}} is writable")
        except OSError:
            pass
    status = open("/proc/self/status").read()
    if "NoNewPrivs:\\t1" not in status:
        problems.append("no_new_privs not set")
    cap_eff = [line for line in status.splitlines() if line.startswith("CapEff")][0]
    if not cap_eff.endswith("0000000000000000"):
        problems.append(cap_eff)
    if resource.getrlimit(resource.RLIMIT_CORE)[0] != 0:
        problems.append("core dumps allowed")
    if resource.getrlimit(resource.RLIMIT_FSIZE)[0] == resource.RLIM_INFINITY:
        problems.append("no file size limit")
    try:  # under the candidate's own uid the process is no longer dumpable: its /proc files are root's
        environ = open("/proc/self/environ", "rb").read().decode(errors="replace")
    except PermissionError:
        environ = ""
    environ += repr(dict(os.environ))
    if "{SECRET}" in environ:
        problems.append("the verdict process's environment leaked")
    home = os.environ.get("HOME", "")
    if not home.startswith("/dev/shm/kernelrl-") and "kernelrl-" not in home:
        problems.append(f"HOME {{home}}")
    if not tempfile.gettempdir() == home or os.environ.get("TMPDIR") != home:
        problems.append(f"TMPDIR {{tempfile.gettempdir()}}")
    triton_dir = os.environ.get("TRITON_CACHE_DIR", "")
    if os.path.dirname(triton_dir).rsplit("/", 1)[-1] != "triton" or len(os.path.basename(triton_dir)) != 24:
        problems.append(f"Triton cache {{triton_dir}} not keyed by this source")
    if os.getcwd() != home:
        problems.append(f"cwd {{os.getcwd()}}")
    if sys.path[0] != home:
        problems.append(f"sys.path[0] {{sys.path[0]}}")
    if os.getpgid(0) == os.getpid():
        problems.append("the candidate leads its own process group (expected the launcher's group)")
    if problems:
        raise RuntimeError("ISOLATION: " + "; ".join(problems))

_probe()
''')

# Monkey-patches torch and leaves globals behind at import, and computes relu correctly anyway.
POLLUTER = c.relu_candidate("return relu(x)", module_extra='''
import builtins
import math
builtins.KERNELRL_POLLUTED = True
torch.KERNELRL_POLLUTED = True
torch.allclose = lambda *a, **k: True
torch.Tensor.sum = lambda self, *a, **k: torch.tensor(0.0)
math.pi = 3.0
os.environ["KERNELRL_POLLUTED"] = "1"
sys.modules["kernelrl_pollution"] = object()
''')

# An honest relu that refuses to run if it sees any of the polluter's traces.
INSPECTOR = c.relu_candidate("return relu(x)", module_extra='''
import builtins
import math
_seen = [name for name, bad in (
    ("builtins", hasattr(builtins, "KERNELRL_POLLUTED")),
    ("torch attribute", hasattr(torch, "KERNELRL_POLLUTED")),
    ("torch.allclose", torch.allclose(torch.zeros(2), torch.ones(2))),
    ("Tensor.sum", float(torch.ones(3).sum()) != 3.0),
    ("math.pi", math.pi == 3.0),
    ("environment", "KERNELRL_POLLUTED" in os.environ),
    ("sys.modules", "kernelrl_pollution" in sys.modules),
    ("earlier candidate module", "kernelrl_candidate" in sys.modules
     and sys.modules["kernelrl_candidate"].__dict__.get("POLLUTER")),
) if bad]
if _seen:
    raise RuntimeError(f"LEAK from an earlier candidate: {_seen}")
''')


@pytest.fixture(scope="module")
def relu(suite):
    return suite.get("level0/1_relu")


TWO_TRIALS = VerdictSettings(trials=2, static_checks=False)


@pytest.fixture(scope="module")
def pooled():
    """This module's warm pool, its own rather than the shared cpu_evaluator: the secret must be in the
    environment before its zygote starts, and the tests below kill its zygote and standbys. Its slots are
    sized here, not from the host's free memory or cores: three sandboxes in flight (and the three standbys),
    each with a compile slot, so a batch goes past a hanging candidate on any host (the memory bound's own
    tests are in unit/evaluate/test_scheduling.py)."""
    # the zygote and its children must never see the verdict process's environment
    os.environ[SECRET] = SECRET
    try:
        with Evaluator(device="cpu", trials=2, run_timeout_s=8, compile_timeout_s=20, memory_limit_gb=4,
                       static_checks=False, warm_pool=True, max_concurrency=3, compile_slots=3,
                       sandbox_memory_gb=0) as ev:
            yield ev
    finally:
        os.environ.pop(SECRET, None)


@pytest.fixture(scope="module")
def fresh():
    """An evaluator without the warm pool (a fresh process
    per candidate): the pool is an evaluator setting."""
    with Evaluator(device="cpu", warm_pool=False, result_cache=False) as ev:
        yield ev


@pytest.fixture(scope="module")
def no_standbys():
    """The warm pool without standbys (each candidate forked when it comes): an evaluator setting."""
    with Evaluator(device="cpu", warm_pool=True, standby_sandboxes=0, result_cache=False) as ev:
        yield ev


def test_zygote_child_has_the_full_isolation_list(pooled, fresh, relu):
    result = pooled.evaluate(relu, PROBE)
    assert result.status is Status.CORRECT, result.feedback
    iso = result.environment.isolation
    assert iso[-1] == "zygote-standby"
    expected = {"process-group", "private-tmpdir", "env-allowlist", "netns", "rlimit-fsize", "no-new-privs",
                "rlimit-as", "readonly-fs", "no-capabilities", "pidns", "seccomp"}
    if os.geteuid() == 0:  # EvaluatorSettings.candidate_uid
        expected.add("separate-uid")
    assert expected <= set(iso), iso
    old = fresh.evaluate(relu, PROBE, verdict=TWO_TRIALS)
    assert old.status is Status.CORRECT, old.feedback
    assert old.environment.isolation[-1] == "fresh-process"
    assert set(old.environment.isolation) - {"fresh-process"} == set(iso) - {"zygote-standby"}


def _ended(standbys, timeout_s: float = 10.0) -> bool:
    """Whether the standbys' process groups are gone (a dead launcher lingers until the zygote reaps it)."""
    deadline = time.monotonic() + timeout_s
    while any(s.alive() for s in standbys) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not any(s.alive() for s in standbys)


def test_the_zygote_has_imported_what_a_first_trial_would_import():
    """What every sandbox paid on its first trial (the first op under the op census's dispatch mode imports
    torch._dynamo, 2.3 s of a 2.55 s first trial here) is done once, in the zygote, which a child inherits."""
    import subprocess

    probe = ("import sys\nfrom kernelrl.sandbox import zygote\nzygote._warm_imports()\n"
             "print(sorted(m for m in ('torch._dynamo', 'triton.compiler.code_generator', "
             "'kernelrl.sandbox.opcensus',"
             " 'kernelrl.sandbox.frontend') if m not in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout


def test_standby_is_started_ahead_and_replaced_once_taken(pooled, relu):
    pooled.warm_up()
    waiting = list(pooled.launcher.standbys)
    standbys = pooled.settings.standby_sandboxes
    assert len(waiting) == standbys == 3 and all(s.alive() for s in waiting)  # EvaluatorSettings' default
    result = pooled.evaluate(relu, example("relu_triton.py"))
    assert result.status is Status.CORRECT, result.feedback
    assert result.environment.isolation[-1] == "zygote-standby"
    assert _ended(waiting[:1]) and not waiting[0].workdir.exists()  # used once, then gone with its directory
    now = [s.child.pgid for s in pooled.launcher.standbys]
    assert len(now) == standbys and now[:-1] == [s.child.pgid for s in waiting[1:]]  # oldest first
    assert now[-1] not in {s.child.pgid for s in waiting}


def test_standby_that_died_waiting_costs_nothing_but_its_slot(pooled, relu, monkeypatch):
    pooled.warm_up()
    dead = pooled.launcher.standbys[0]
    os.killpg(dead.child.pgid, signal.SIGKILL)
    assert _ended([dead])
    result = pooled.evaluate(relu, example("relu_triton.py"))  # seen dead when taken: a new one serves
    assert result.status is Status.CORRECT and result.environment.isolation[-1] == "zygote-standby"
    # one that dies after it was taken (before it read its assignment) leaves the usual zygote path to run
    victim = pooled.launcher.standbys[0]
    os.killpg(victim.child.pgid, signal.SIGKILL)
    monkeypatch.setattr(type(victim), "alive", lambda self: True)
    result = pooled.evaluate(relu, example("relu_triton.py"))
    assert result.status is Status.CORRECT, result.feedback
    assert result.environment.isolation[-1] == "zygote"


def test_standbys_end_with_their_evaluator(relu):
    # its own: what is checked is its closing
    ev = Evaluator(device="cpu", trials=2, static_checks=False, warm_pool=True, standby_sandboxes=2)
    ev.warm_up()
    standbys = list(ev.launcher.standbys)
    assert len(standbys) == 2 and all(s.alive() for s in standbys)
    ev.close()
    assert _ended(standbys) and not any(s.workdir.exists() for s in standbys)


def test_without_standbys_each_candidate_is_forked_on_demand(no_standbys, relu):
    result = no_standbys.evaluate(relu, example("relu_triton.py"), verdict=TWO_TRIALS)
    assert no_standbys.launcher.standbys == []
    assert result.status is Status.CORRECT and result.environment.isolation[-1] == "zygote"


def test_the_address_space_cap_is_what_the_candidate_may_add_to_the_sandbox(no_standbys, fresh, relu):
    """On the CPU, memory_limit_gb caps the address space on top of what the sandbox has mapped when the
    candidate starts: a CUDA build of torch maps ~4 GB before any candidate code (H100 host), where an
    absolute 4 GiB cap failed every CPU-mode import (no thread could start). The candidate sees a cap above
    the limit by what torch maps (here ~0.9 GB), and a reservation of more than the limit is still refused
    (untouched pages: no RSS for the watchdog)."""
    limit = 4 << 30
    probe = c.relu_candidate("return relu(x)", module_extra=f"""
import resource
_CAP = resource.getrlimit(resource.RLIMIT_AS)[0]
if _CAP <= {limit} + (512 << 20):
    raise ValueError(f"address-space cap {{_CAP}} leaves the candidate less than its limit")
""")
    greedy = c.relu_candidate("return relu(x)",
                              module_extra=f"\nimport mmap\n_ROOM = mmap.mmap(-1, {limit + (2 << 30)})\n")
    verdict = VerdictSettings(trials=2, static_checks=False, memory_limit_gb=limit / (1 << 30))
    for pooled, ev in ((True, no_standbys), (False, fresh)):
        assert ev.settings.warm_pool is pooled
        fits, too_much = ev.evaluate(relu, probe, verdict=verdict), ev.evaluate(relu, greedy, verdict=verdict)
        assert fits.status is Status.CORRECT, (pooled, fits.message, fits.log[-2000:])
        assert "rlimit-as" in fits.environment.isolation
        assert too_much.status is not Status.CORRECT and "Cannot allocate memory" in too_much.message, (
            pooled, too_much.message)


def test_zygote_stays_cuda_free_and_warm(pooled, relu):
    pooled.evaluate(relu, example("relu_triton.py"))
    zygote = pooled.launcher.zygote
    pid = zygote.pid
    info = zygote.ping()
    assert info["ok"] and info["cuda_initialized"] is False
    pooled.evaluate(relu, example("relu_triton.py"))
    assert zygote.pid == pid  # the same warm zygote served both


def test_no_state_leaks_between_consecutive_candidates(pooled, relu):
    polluted = pooled.evaluate(relu, POLLUTER)
    assert polluted.environment.isolation[-1] == "zygote-standby"
    # its import polluted its own process; the hand-off refuses its patched Tensor.sum
    assert polluted.status is Status.HACK_DETECTED, polluted.message
    assert "rt-tensor-patched" in polluted.message, polluted.message
    honest = pooled.evaluate(relu, INSPECTOR)
    assert honest.status is Status.CORRECT, honest.feedback
    assert honest.environment.isolation[-1] == "zygote-standby"
    # and concurrently: the inspector next to polluters in one batch
    items = [(relu, POLLUTER), (relu, INSPECTOR)] * 2
    results = list(pooled.evaluate_many(items, ordered=True))
    assert [r.status for r in results] == [Status.HACK_DETECTED, Status.CORRECT] * 2, \
        [r.feedback for r in results]


def test_crashing_and_hanging_candidates_do_not_block_the_batch(pooled, relu):
    good = example("relu_triton.py")
    items = [(relu, c.INFINITE_LOOP), (relu, c.ABORT), (relu, good), (relu, c.RAISE_IN_FORWARD), (relu, good),
             (relu, good)]
    order, started = [], time.monotonic()
    # room to go past the hang: the fixture's own sizing, whatever the host's free memory and cores
    assert min(pooled.slots.sandbox_slots, pooled.slots.compile_slots, pooled.slots.workers) >= 3, \
        pooled.slots
    for index, result in pooled.evaluate_indexed(items):
        order.append((index, result.status, round(time.monotonic() - started, 2)))
    print("\nbatch order (index, status, seconds since start):", order)
    statuses = dict((i, s) for i, s, _ in order)
    assert sorted(statuses) == list(range(len(items)))
    assert statuses[0] is Status.TIMEOUT
    assert statuses[1] is Status.CRASHED
    assert statuses[3] is Status.RUNTIME_ERROR
    assert statuses[2] is statuses[4] is statuses[5] is Status.CORRECT
    # everything else went past the hanging candidate: each finished before it, or (a slow machine running
    # them right up to its 8 s timeout) within a second of it; one that waited for its slot would finish a
    # whole evaluation (~2 s) after it
    hang = next(t for i, _, t in order if i == 0)
    assert all(t <= hang + 1.0 for i, _, t in order if i != 0), order
    assert hang < 8 + 20  # its own run timeout plus start-up, not the others' time


OUT_OF_MEMORY = c.relu_candidate('raise torch.cuda.OutOfMemoryError("CUDA out of memory. '
                                 'Tried to allocate 4.00 GiB")')
SLOW_RELU = c.relu_candidate("time.sleep(0.4)\n        return relu(x)", module_extra="\nimport time\n")


def test_out_of_memory_next_to_other_evaluations_is_retried_alone(pooled, relu):
    items = [(relu, SLOW_RELU), (relu, OUT_OF_MEMORY), (relu, SLOW_RELU)]
    results = dict(pooled.evaluate_indexed(items))
    assert results[0].status is results[2].status is Status.CORRECT
    oom = results[1]
    # it ran out next to the others, then alone: the verdict alone stands (this candidate always runs out)
    assert oom.status is Status.RUNTIME_ERROR and "OutOfMemoryError" in oom.message, oom.message
    assert oom.phases_s["oom_retry"] > 0
    alone = pooled.evaluate(relu, OUT_OF_MEMORY)
    assert alone.status is Status.RUNTIME_ERROR and "oom_retry" not in alone.phases_s  # nobody else ran


def test_an_evaluation_waiting_in_the_queue_is_not_beside_one_that_runs(pooled, relu):
    """Out of memory with nothing else running is the verdict, with no retry, even while others wait in the
    queue: they hold nothing on the device. (Counted as beside it, a retry alone waited for the whole queue
    to drain: with the training profile's sixty evaluations in flight a GPU sat idle for seconds.)"""
    blocker = object()
    for _ in range(pooled.slots.compile_slots):  # every compile slot taken: the batch's items queue
        pooled._compile_slots.acquire(blocker)
    items = [(relu, OUT_OF_MEMORY + f"\n# copy {k}\n") for k in range(2)]
    answers: list = []
    batch = threading.Thread(target=lambda: answers.extend(pooled.evaluate_indexed(items)))
    batch.start()
    try:
        while sum(len(q) for q in pooled._compile_slots._queues.values()) < 2:  # both wait for a slot
            time.sleep(0.01)
    finally:
        pooled._compile_slots.release()  # one at a time: each runs with the other still queued
    batch.join(120)
    for _ in range(pooled.slots.compile_slots - 1):
        pooled._compile_slots.release()
    assert len(answers) == 2
    for _, result in answers:
        assert result.status is Status.RUNTIME_ERROR and "OutOfMemoryError" in result.message, result.message
        assert "oom_retry" not in result.phases_s, [r.phases_s for _, r in answers]


def test_zygote_killed_mid_batch_is_restarted_and_the_batch_completes(pooled, relu):
    pooled.warm_up()
    zygote = pooled.launcher.zygote
    first_pid, starts = zygote.pid, zygote.starts
    items = [(relu, example("relu_triton.py"))] * 6
    results = []
    assert pooled.slots.workers < len(items)  # items still to start when the zygote dies
    for n, result in enumerate(pooled.evaluate_many(items)):
        results.append(result)
        if n == 0:
            os.kill(first_pid, signal.SIGKILL)
    assert [r.status for r in results] == [Status.CORRECT] * 6, [r.message for r in results]
    assert zygote.starts > starts and zygote.pid != first_pid
    assert results[-1].environment.isolation[-1] == "zygote-standby"


def test_async_batch_streams_results(pooled, relu):
    async def collect():
        out = [r async for r in pooled.aevaluate_many([(relu, example("relu_triton.py")),
                                                       (relu, c.WRONG_SHAPE)])]
        single = await pooled.aevaluate(relu, example("relu_triton.py"))
        return out, single

    out, single = asyncio.run(collect())
    assert sorted(r.status.value for r in out) == ["correct", "wrong_output"]
    assert single.status is Status.CORRECT


def test_wall_time_with_and_without_the_pool(cpu_evaluator, fresh, relu):
    code = example("relu_triton.py")
    times = {}
    for pool, ev in ((True, cpu_evaluator), (False, fresh)):
        assert ev.settings.warm_pool is pool
        ev.warm_up()
        walls = []
        for _ in range(3):
            result = ev.evaluate(relu, code, verdict=VerdictSettings(trials=2))
            assert result.status is Status.CORRECT, result.feedback
            walls.append(result.wall_time_s)
            # the path that ran: with the pool no evaluation starts a Python process of its own
            assert result.environment.isolation[-1] == ("zygote-standby" if pool else "fresh-process")
        times["pool" if pool else "fresh"] = walls
    print(f"\nper-evaluation wall time (s), relu, 2 trials, CPU: warm pool {times['pool']}, "
          f"fresh process {times['fresh']}")
    # the pool skips the sandbox's torch import (~2 s here against ~0.2 s): a margin no scheduler noise closes
    assert sorted(times["pool"])[1] < sorted(times["fresh"])[1]


@pytest.mark.gpu
def test_gpu_batch_through_the_pool_is_timed_and_the_zygote_stays_cuda_free(suite):
    problem = suite.get("level0/1_relu")
    items = [(problem, example("relu_triton.py")), (problem, c.WRONG_SHAPE),
             (problem, example("relu_triton.py")), (problem, c.ABORT)]
    with Evaluator(device="cuda", run_timeout_s=60, memory_limit_gb=8, static_checks=False, max_concurrency=4,
                   warm_pool=True) as ev:
        started = time.monotonic()
        results = dict(ev.evaluate_indexed(items))
        batch_s = time.monotonic() - started
        info = ev.launcher.zygote.ping()
    print(f"\nGPU batch of {len(items)}: {batch_s:.1f} s; walls "
          f"{[results[i].wall_time_s for i in range(len(items))]}")
    assert info["cuda_initialized"] is False
    assert [results[i].status for i in range(4)] == [Status.CORRECT, Status.WRONG_OUTPUT, Status.CORRECT,
                                                     Status.CRASHED]
    for i in (0, 2):
        assert results[i].environment.isolation[-1] == "zygote-standby"
        assert results[i].timing.candidate.median_ms > 0 and results[i].timing.eager.median_ms > 0
        assert "no-capabilities" in results[i].environment.isolation


@pytest.fixture(scope="module")
def multi():
    """Two CPU "devices": each has its own judge, zygote and timing token."""
    from kernelrl import MultiDeviceEvaluator

    with MultiDeviceEvaluator(["cpu", "cpu"], trials=2, max_concurrency=2, static_checks=False,
                              result_cache=False) as multi:
        yield multi


def test_multi_device_evaluator_spreads_one_stream_over_devices(multi, relu):
    good = example("relu_triton.py")
    items = [(relu, good), (relu, c.WRONG_SHAPE), (relu, good), (relu, good), (relu, c.ABORT), (relu, good)]
    before = list(multi.counts)
    results = dict(multi.evaluate_indexed(iter(items)))
    counts = [n - m for n, m in zip(multi.counts, before, strict=True)]  # this call's
    assert sorted(results) == list(range(len(items)))
    assert results[1].status is Status.WRONG_OUTPUT and results[4].status is Status.CRASHED
    assert all(results[i].status is Status.CORRECT for i in (0, 2, 3, 5))
    assert sum(counts) == len(items) and all(n > 0 for n in counts), counts


def test_multi_device_evaluator_is_a_scorer_over_completions_in_input_order(multi, relu):
    """The same seam as one Evaluator: completions, prose and code mixed, verdicts in input order, sync and
    async."""
    from kernelrl import Scorer

    good = example("relu_triton.py")
    items = [(relu, "```python\n" + good + "```"), (relu, "sorry, no kernel today"), (relu, c.WRONG_SHAPE),
             (relu, good)]
    expected = [Status.CORRECT, Status.FORMAT_ERROR, Status.WRONG_OUTPUT, Status.CORRECT]
    assert isinstance(multi, Scorer)
    assert [r.status for r in multi.evaluate_many(items, ordered=True)] == expected

    async def collect():
        return [r async for r in multi.aevaluate_many(items, ordered=True)]

    assert [r.status for r in asyncio.run(collect())] == expected


@pytest.mark.slow  # waits out a zygote that cannot start
def test_a_zygote_that_cannot_start_falls_back_to_fresh_processes(fresh, relu):
    from kernelrl.sandbox.zygote_client import ZygoteClient

    # its own evaluator: its zygote is replaced by one that never starts
    with Evaluator(device="cpu", trials=2, static_checks=False) as ev:
        # never answers in time
        ev.launcher._zygote = ZygoteClient({"PATH": os.environ.get("PATH", "")}, start_timeout_s=0.01)
        results = [ev.evaluate(relu, example("relu_triton.py")) for _ in range(3)]
        tries = ev.launcher.zygote.starts
        results.append(ev.evaluate(relu, example("relu_triton.py")))
        assert [r.status for r in results] == [Status.CORRECT] * 4, [r.feedback for r in results]
        assert [r.environment.isolation[-1] for r in results] == ["fresh-process"] * 4
        assert ev.launcher.zygote.starts == tries  # given up after three failed evaluations in a row
    assert fresh.evaluate(relu, example("relu_triton.py"), verdict=TWO_TRIALS).environment.isolation[-1] == \
        "fresh-process"


def test_one_candidate_cannot_write_another_candidates_compile_cache(pooled, relu):
    # the shipped relu's Triton cache lives
    other = Path(pooled.launcher.candidate_caches(example("relu_triton.py"))["TRITON_CACHE_DIR"])
    own = "\nassert True\n"  # any different source gets a different cache directory
    writer = c.relu_candidate("return relu(x)", module_extra=f'''
try:
    open({str(other / "poisoned.json")!r}, "w").write("{{}}")
except OSError:
    pass
else:
    raise RuntimeError("POISONED another candidate's Triton cache")
''' + own)
    result = pooled.evaluate(relu, writer)
    assert result.status is Status.CORRECT, result.feedback
    assert not (other / "poisoned.json").exists()


def test_a_launcher_that_cannot_set_up_says_why_and_reports_no_event(pooled):
    from kernelrl.sandbox.launcher import POOL_SETUP_FAILED

    zygote = pooled.launcher.pool("cpu")
    message = {"op": "fork", "env": {"PATH": "/usr/bin"}, "cwd": "/nonexistent-kernelrl-dir",
               "request_path": "/x"}
    outcome = run_child([], env={}, cwd="/", timeouts={"start": 30, "import": 30, "run": 30},
                        memory_limit_bytes=0, log_limit_bytes=4096, on_event=lambda e: True,
                        spawn=lambda *fds: zygote.spawn(message, list(fds)))
    assert outcome.events == []
    assert outcome.log.startswith(POOL_SETUP_FAILED), outcome.log


def test_a_forged_early_timing_request_is_a_protocol_violation(pooled, relu):
    forger = c.relu_candidate("return relu(x)", module_extra='''
for fd in map(int, os.listdir("/proc/self/fd")):
    try:
        target = os.readlink(f"/proc/self/fd/{fd}")
        if target.startswith("pipe:") and fd > 2 and os.get_blocking(fd) and os.fstat(fd).st_mode:
            os.write(fd, b'{"event": "timing_token"}\\n')
    except OSError:
        pass
''')
    result = pooled.evaluate(relu, forger)
    assert result.status is Status.CRASHED, result.message
    assert "out of turn" in result.message


def test_a_fork_killed_before_the_candidate_ran_is_rerun_fresh(pooled, relu, monkeypatch):
    """A forked sandbox that ends before its stub reports ready (host load, the OOM killer) never ran
    candidate code: the launcher reruns it in a fresh process, and the verdict is the code's own."""
    launcher = pooled.launcher
    zygote = launcher.pool("cpu")
    killed: list[int] = []

    class KillsItsFirstFork:
        def __getattr__(self, name):  # the zygote's other methods (warm-up) as they are
            return getattr(zygote, name)

        def spawn(self, message, fds):
            pid = zygote.spawn(message, fds)
            if not killed:
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            return pid

    monkeypatch.setattr(launcher, "take_standby", lambda mode: None)
    # no standbys: the only forks are the evaluation's
    monkeypatch.setattr(launcher, "_fill_standbys", lambda mode, key: None)
    monkeypatch.setattr(launcher, "pool", lambda mode: KillsItsFirstFork())
    result = pooled.evaluate(relu, example("relu_triton.py"), verdict=TWO_TRIALS)
    assert killed, "the evaluation never forked from the zygote"
    assert result.status is Status.CORRECT and not result.no_verdict, (result.status, result.message)
    assert result.environment.isolation[-1] == "fresh-process", result.environment


def test_a_sandbox_that_never_reported_ready_is_no_verdict():
    from kernelrl.evaluate.trials import Trials
    from kernelrl.evaluate.verdict import sandbox_verdict
    from kernelrl.sandbox.protocol import ReadyEvent, TrialPlan
    from kernelrl.sandbox.runner import ChildOutcome

    base = {"problem_id": "p"}
    # two trials planned, none arrived
    plan = [TrialPlan(index=k, set="check", inputs=[], args=[], timed_only=False) for k in range(2)]
    trials = Trials(None, "e", "/nonexistent", plan, "cpu", None, 0, {})
    for outcome in (ChildOutcome(returncode=-9), ChildOutcome(timed_out_phase="start", timeout_s=30.0),
                    ChildOutcome(returncode=0, memory_exceeded_bytes=5 << 30)):
        result = sandbox_verdict(outcome, trials, base, 4.0)
        assert result.status is Status.CRASHED and result.no_verdict, result
        assert "before the candidate ran" in result.message, result.message
    ready = ChildOutcome(events=[ReadyEvent(isolation=[], marks={})], returncode=-9)
    result = sandbox_verdict(ready, trials, base, 4.0)
    assert result.status is Status.CRASHED and not result.no_verdict  # the candidate's code had started
