"""The typed wire (kernelrl.sandbox.protocol and judge_wire): every message's dataclass round-trips the exact
dict shape the processes exchange, malformed or unknown messages raise ProtocolError, the modules need no
torch, and the real child and judge speak it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from kernelrl.sandbox import judge_wire as j
from kernelrl.sandbox import protocol as p
from kernelrl.sandbox.judge_wire import parse_judge_reply, parse_judge_request
from kernelrl.sandbox.protocol import ProtocolError, parse_event
from kernelrl.sandbox.share_call import SHARE_ATTEMPTS

META = {"dtype": "float32", "shape": [8, 4], "device": "cpu"}
TRIAL_OUTPUT = {**META, "aliases_input": False, "reuses_buffer": False,
                "changed_after_sync": True, "ipc": True}
TIMED_OUTPUT = {**META, "device": "cuda", "sampled": 1 << 20, "sample_seed": 12345}
PLANNED = {"index": 0, "set": "check", "inputs": [META],
           "args": [{"tensor": 0}, {"value": 3}, {"value": None}], "timed_only": False,
           "draw": {"seed": 99, "on": "cpu", "probe": [["torch.float32", [8, 4], [1, 2]], "3"]},
           "ipc": [None, {"handle": "ab" * 64, "dtype": "float32", "shape": [8, 4]}], "share": False}
PLANNED_FILES = {"index": 1, "set": "bench", "inputs": [META], "args": [{"tensor": 0}], "timed_only": True,
                 "share": True}
SETTINGS = {"mode": "cpu-interpreter", "isolate_network": True, "max_file_bytes": 1 << 30}
REQUEST = {
    **SETTINGS, "problem_path": "/p/problem.py", "candidate_path": "/w/candidate.py", "in_dir": "/w/in",
    "out_dir": "/w/out", "trials": [PLANNED, PLANNED_FILES], "timing_set": "bench", "timing": True,
    "timer": {"warmup_ms": 50.0, "target_ms": 100.0, "rse_target": None}, "timing_mode": "events",
    "paired_baseline": False, "kernel_share": True, "timed_mix": True, "memory_limit_bytes": 16 << 30,
    "readonly_fs": True, "writable_paths": ["/w", "/cache/triton/abc"],
}

# one sample per event kind, as the child (and the runner, for timing_granted) sends it today
EVENTS = {
    "standby": {"event": "standby"},
    "baseline": {"event": "baseline", "pid": 2, "tasks": [2, 3, 4]},
    "native_thread_seen": {"event": "native_thread_seen", "detail": "1 thread(s) new since the baseline"},
    "ready": {"event": "ready", "isolation": ["process-group", "rlimit-fsize", "pidns"],
              "marks": {"stub": 0.0, "imports": 1.25, "ready": 1.5}},
    "imported": {"event": "imported", "marks": {"start": 0.0, "problem": 0.01, "inputs": 0.02}},
    "initialized": {"event": "initialized"},
    "inputs_unavailable": {"event": "inputs_unavailable",
                           "detail": "the inputs differ from the judge's: ..."},
    "trial": {"event": "trial", "index": 0, "outputs": [TRIAL_OUTPUT, META], "launches": 2, "threads": [],
              "changed_inputs": [1]},
    "census": {"event": "census", "fraction": 0.93, "total_us": 41.0, "mine_us": 38.0, "other_us": 3.0,
               "forward_us": 41.0, "top": [["copy_kernel [candidate]", 38.0]], "gate_ms": 5.0,
               "method": "events", "checked": [{"rep": 0, "trial": 4, "outputs": [META]}]},
    "timing_token": {"event": "timing_token"},
    "timing_granted": {"event": "timing_granted"},
    "timing": {"event": "timing", "times_ms": [0.02, 0.021], "wall_ms": [0.03, 0.03], "warmup": {"reps": 3},
               "method": "cuda-events", "mode": "events", "stopped": "count", "rse": 0.01,
               "host_ms": {"reps": 1.0}, "cover_us": {"prefix": 10.0},
               "paired_reference": {"times_ms": [0.03]},
               "checked": [{"rep": 4, "trial": 1, "outputs": [TIMED_OUTPUT]}], "calls": 12, "launches": 12,
               "threads": ["140000"], "marks": {"timed": 0.5, "checks": 0.01}},
    "error": {"event": "error", "stage": "correctness", "exc_type": "builtins.RuntimeError",
              "message": "boom", "traceback": "Traceback ...\nRuntimeError: boom\n"},
    "exit": {"event": "exit", "stage": "init", "code": "3"},
    "done": {"event": "done", "gpu_peak_bytes": 3 << 30},
    "terminated": {"event": "terminated", "signal": 9},
}

# one request per judge op, as the verdict process sends it today
JUDGE_REQUESTS = {
    "prepare": {"op": "prepare", "eval_id": "e1", "problem_path": "/p.py", "problem_sha256": "a" * 64,
                "master_seed": 2**61 + 5, "min_trials": 3, "input_sets": [], "bench_correctness": False,
                "in_dir": "/w/in", "timing_variants": 4, "timed_mix": False, "share_trials": 4},
    "compare": {"op": "compare", "eval_id": "e1", "trial": 0, "out_dir": "/w/out",
                "outputs": [META, {**META, "ipc": True}], "atol": 1e-5, "rtol": 1e-5, "prefix": None,
                "changed_inputs": [0]},
    "release": {"op": "release", "eval_id": "e1"},
    "baselines": {"op": "baselines", "problem_path": "/p.py", "problem_sha256": "a" * 64, "seed": 7,
                  "timer": {"warmup_ms": 50.0}, "mode": "cuda-graph", "inductor": True, "fresh": False},
    "bandwidth": {"op": "bandwidth"},
    "peak_flops": {"op": "peak_flops"},
    "audit": {"op": "audit", "problem_path": "/p.py", "problem_sha256": "a" * 64, "timing": True,
              "tolerances": {"float32": [1e-4, 1e-4]}, "input_sets": []},
}

# the judge's answers, as it sends them today
JUDGE_REPLIES = {
    "prepare": {"ok": True, "timing_flops": None, "trials": [PLANNED, PLANNED_FILES], "sets": ["check"],
                "timing_set": "bench", "seeds_sha256": "b" * 64, "output_dtypes": ["float32"],
                "input_dtypes": ["float32"], "outputs": [META], "device_bytes": 1 << 28, "timed_mix": True},
    "compare": {"ok": True,
                "mismatch": {"reason": "values", "output_index": 0, "detail": "max abs diff 1.0"}},
    "release": {"ok": True},
    "baselines": {"ok": True, "eager": {"times_ms": [1.0]}, "inductor": {"times_ms": [0.9]},
                  "inductor_compile_s": 3.5},
    "bandwidth": {"ok": True, "bytes_per_s": 3.1e12},
    "peak_flops": {"ok": True, "flops_per_s": None},
    "audit": {"ok": True,
              "flags": [{"flag": "launch_bound", "input_set": "bench", "detail": "eager takes 20 us"}],
              "eager_ms": {"bench": 0.02}, "timing_set_bytes": 2048},
}


def _same_wire(message: p.Message, sample: dict) -> None:
    assert message.to_dict() == sample
    assert json.loads(message.to_json()) == sample
    assert type(message).from_json(message.to_json()) == message


def test_every_event_kind_round_trips_its_wire_dict():
    assert set(EVENTS) == set(p.EVENTS)  # a new kind needs a sample here
    for kind, sample in EVENTS.items():
        event = parse_event(json.dumps(sample))
        assert type(event) is p.EVENTS[kind] and event.kind == kind
        _same_wire(event, sample)
        assert parse_event(sample) == event == parse_event(json.dumps(sample).encode())


def test_typed_fields_of_events():
    trial = parse_event(EVENTS["trial"])
    assert trial.outputs[0].ipc is True and trial.outputs[0].changed_after_sync is True
    assert trial.outputs[1] == p.OutputMeta(dtype="float32", shape=[8, 4], device="cpu")
    assert trial.outputs[1].to_dict() == META  # facts not reported stay off the wire
    timing = parse_event(EVENTS["timing"])
    assert timing.timer["times_ms"] == [0.02, 0.021] and "checked" not in timing.timer
    assert timing.checked[0].outputs[0].sampled == 1 << 20 and timing.calls == 12
    assert timing.raw() == EVENTS["timing"]
    census = parse_event(EVENTS["census"])
    assert (census.fraction, census.method, census.details["gate_ms"]) == (0.93, "events", 5.0)
    assert census.checked[0].trial == 4 and "checked" not in census.details  # the measured call's outputs
    assert (parse_event({"event": "terminated", "exit_code": 0}).to_dict()
            == {"event": "terminated", "exit_code": 0})
    # built in Python as the child builds them
    assert p.TerminatedEvent(signal=9).to_dict() == EVENTS["terminated"]
    assert p.TimingEvent(timer={"times_ms": [1.0]}, checked=[], calls=1, launches=1, threads=[], marks={}
                         ).to_dict() == {"event": "timing", "times_ms": [1.0], "checked": [], "calls": 1,
                                         "launches": 1, "threads": [], "marks": {}}


def test_requests_round_trip():
    request = p.parse_request(json.dumps(REQUEST))
    assert type(request) is p.SandboxRequest
    _same_wire(request, REQUEST)
    assert request.trials[0].draw.seed == 99 and request.trials[0].ipc[1].handle == "ab" * 64
    assert request.trials[1].draw is None and "draw" not in request.trials[1].to_dict()
    assert not request.gpu and request.settings() == p.SandboxSettings(**SETTINGS)
    built = p.SandboxRequest.create(p.SandboxSettings(**SETTINGS), **{k: v for k, v in REQUEST.items()
                                                                      if k not in SETTINGS and k != "trials"},
                                    trials=[p.TrialPlan.from_dict(t) for t in REQUEST["trials"]])
    assert built == request
    standby = p.parse_request({**SETTINGS, "standby": True})
    assert type(standby) is p.StandbyRequest
    _same_wire(standby, {**SETTINGS, "standby": True})
    assignment = {"request": REQUEST, "env": {"TRITON_CACHE_DIR": "/cache/triton/abc"}}
    _same_wire(p.StandbyAssignment.from_dict(assignment), assignment)


def test_every_judge_op_and_reply_round_trips():
    assert set(JUDGE_REQUESTS) == set(JUDGE_REPLIES) == set(j.JUDGE_OPS)
    for op, sample in JUDGE_REQUESTS.items():
        request = parse_judge_request(json.dumps(sample))
        assert type(request) is j.JUDGE_OPS[op] and request.op == op
        _same_wire(request, sample)
        assert request.fields() == {k: v for k, v in sample.items() if k != "op"}
        reply = parse_judge_reply(op, json.dumps(JUDGE_REPLIES[op]))
        assert type(reply) is request.reply
        _same_wire(reply, JUDGE_REPLIES[op])
    # fields the judge has always treated as optional get its defaults
    compare = j.CompareRequest.from_dict({k: v for k, v in JUDGE_REQUESTS["compare"].items()
                                          if k not in ("op", "prefix", "changed_inputs")})
    assert (compare.prefix, compare.changed_inputs) == (None, [])
    failure = parse_judge_reply("prepare", {"ok": False, "error": "ValueError: x", "traceback": "..."})
    assert failure == j.JudgeFailure(error="ValueError: x", traceback="...")
    hello = {"ok": True, "mode": "cpu-interpreter", "device_name": "x86_64", "torch_version": "2.11.0",
             "triton_version": None, "python_version": "3.12.3"}
    _same_wire(j.JudgeHello.from_dict(hello), hello)  # a CPU judge: no memory fields on the wire
    gpu_hello = {**hello, "mode": "gpu", "memory_free_bytes": 80 << 30, "memory_total_bytes": 81 << 30}
    _same_wire(j.JudgeHello.from_dict(gpu_hello), gpu_hello)
    assert p.DoneEvent().to_dict() == {"event": "done"}  # CPU mode: no peak reported


@pytest.mark.parametrize(("message", "says"), [
    ("{not json", "malformed JSON"),
    ("[1, 2]", "an event is an object"),
    ({"index": 0}, "'event' string"),
    ({"event": 3}, "'event' string"),
    ({"event": "launch_missiles"}, "unknown event kind 'launch_missiles'"),
    ({"event": "trial", "index": 0, "outputs": [], "launches": 1, "threads": []},
     "missing key 'changed_inputs'"),
    ({**EVENTS["trial"], "index": True}, "trial event.index: expected an integer, got bool"),
    ({**EVENTS["trial"], "index": "0"}, "expected an integer, got str"),
    ({**EVENTS["trial"], "launches": 1.0}, "expected an integer, got float"),
    ({**EVENTS["trial"], "outputs": {"dtype": "float32"}}, "expected a list"),
    ({**EVENTS["trial"], "outputs": [{**META, "shape": [8, True]}]},
     "outputs[0].shape[1]: expected an integer"),
    ({**EVENTS["trial"], "outputs": [{**META, "ipc": 1}]}, "expected true or false, got int"),
    ({**EVENTS["trial"], "outputs": [{**META, "extra": 1}]}, "unknown key(s) 'extra'"),
    ({**EVENTS["trial"], "verdict": "correct"}, "unknown key(s) 'verdict'"),
    ({**EVENTS["timing"], "checked": [{"rep": 0, "trial": None, "outputs": []}]}, "checked[0].trial"),
    ({**EVENTS["timing"], "calls": False}, "timing event.calls"),
    ({**EVENTS["census"], "fraction": "0.9"}, "census event.fraction: expected a number"),
    ({**EVENTS["error"], "message": None}, "expected a string, got NoneType"),
    ({"event": "terminated"}, "exactly one of signal and exit_code"),
    ({"event": "terminated", "signal": 9, "exit_code": 0}, "exactly one of signal and exit_code"),
    ({**EVENTS["ready"], "marks": {"stub": "soon"}}, "ready event.marks.stub: expected a number"),
])
def test_malformed_events_raise_protocol_error(message, says):
    with pytest.raises(ProtocolError) as caught:
        parse_event(message if isinstance(message, str) else json.dumps(message))
    assert says in str(caught.value)
    assert isinstance(caught.value, ValueError)


def test_event_parsing_bounds_what_the_sandbox_sends():
    with pytest.raises(ProtocolError, match="longer than"):
        parse_event(json.dumps({"event": "inputs_unavailable", "detail": "x" * p.MAX_LINE_BYTES}))
    assert parse_event({"event": "inputs_unavailable", "detail": "x" * 5000}).detail == "x" * 500
    error = parse_event({**EVENTS["error"], "message": "m" * 9000, "traceback": "a" * 5000 + "b" * 5000,
                         "exc_type": "T" * 900})
    assert (error.message == "m" * 2000 and error.traceback == "a" * 1000 + "b" * 5000
            and len(error.exc_type) == 200)
    assert parse_event({**EVENTS["exit"], "code": "9" * 999}).code == "9" * 200
    assert parse_event({**EVENTS["ready"], "isolation": ["n" * 100]}).isolation == ["n" * 32]
    assert (parse_event({**EVENTS["trial"], "changed_inputs": list(range(1000))}).changed_inputs
            == list(range(64)))
    timing = parse_event({**EVENTS["timing"], "checked": EVENTS["timing"]["checked"] * 40})
    assert len(timing.checked) == 16
    # strings stay strings: nothing in a message is ever evaluated
    evil = "__import__('os').system('touch /tmp/pwned')"
    assert parse_event({**EVENTS["exit"], "code": evil}).code == evil


@pytest.mark.parametrize(("message", "says"), [
    ({"op": "format_disk"}, "unknown judge op 'format_disk'"),
    ({"eval_id": "e1"}, "needs an 'op' string"),
    ({"op": "release"}, "missing key 'eval_id'"),
    ({"op": "release", "eval_id": "e1", "force": True}, "unknown key(s) 'force'"),
    ({**JUDGE_REQUESTS["prepare"], "master_seed": True}, "judge op prepare.master_seed: expected an integer"),
    ({**JUDGE_REQUESTS["compare"], "outputs": [3]}, "outputs[0]: expected an object"),
    ({**JUDGE_REQUESTS["baselines"], "inductor": "yes"}, "expected true or false"),
    ("nope", "malformed JSON"),
])
def test_malformed_judge_requests_raise_protocol_error(message, says):
    with pytest.raises(ProtocolError) as caught:
        parse_judge_request(message if isinstance(message, str) else json.dumps(message))
    assert says in str(caught.value)


def test_malformed_replies_and_plans_raise_protocol_error():
    with pytest.raises(ProtocolError, match="unknown judge op"):
        parse_judge_reply("nope", {"ok": True})
    with pytest.raises(ProtocolError, match="'ok' must be"):
        parse_judge_reply("release", {})
    with pytest.raises(ProtocolError, match="missing key 'mismatch'"):
        parse_judge_reply("compare", {"ok": True})
    with pytest.raises(ProtocolError, match="ok is"):
        j.CompareReply.from_dict({"ok": 1, "mismatch": None})  # 1 is not true
    for args in ([{"tensor": True}], [{"value": [1]}], [{"tensor": 0, "value": 1}], [{}]):
        with pytest.raises(ProtocolError, match="args"):
            p.TrialPlan.from_dict({**PLANNED_FILES, "args": args})
    with pytest.raises(ProtocolError, match="SandboxRequest: missing key 'trials'"):
        p.parse_request({k: v for k, v in REQUEST.items() if k != "trials"})
    with pytest.raises(ProtocolError, match="unknown key"):
        p.parse_request({**REQUEST, "standby": False})


def test_protocol_imports_without_torch():
    code = ("import kernelrl.sandbox.protocol, kernelrl.sandbox.judge_wire, sys; "
            "assert 'torch' not in sys.modules, 'torch imported'")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]


# -- the real processes --------------------------------------------------------------------------------------

PROBLEM = textwrap.dedent('''
    import torch
    import torch.nn as nn

    class Model(nn.Module):
        def forward(self, x):
            return x * 2

    def get_inputs():
        return [torch.randn(16, 8)]

    def get_init_inputs():
        return []
''')

CANDIDATE = textwrap.dedent('''
    import torch.nn as nn

    class ModelNew(nn.Module):
        def forward(self, x):
            {body}
''')


@pytest.fixture(scope="module")
def judge():
    from kernelrl.sandbox.judge_client import JudgeClient

    client = JudgeClient("cpu", timeout_s=120)
    yield client
    client.close()


def test_judge_serves_typed_ops_and_answers_unknown_ones_with_an_error(judge, tmp_path):
    from kernelrl.sandbox.judge_client import JudgeError

    judge.ensure_started()
    assert judge.hello == j.JudgeHello.from_dict({"ok": True, **judge.info})
    # the judge itself: an unknown op (or a malformed line) is answered with an error, and it keeps serving
    for line in (b'{"op": "format_disk"}\n', b'{"op": "release"}\n', b"{oops\n"):
        judge.proc.stdin.write(line)
        judge.proc.stdin.flush()
        reply = parse_judge_reply("release", judge._read(30))
        assert isinstance(reply, j.JudgeFailure) and "ProtocolError" in reply.error, reply
    assert judge.call(j.BandwidthRequest()) == j.BandwidthReply(bytes_per_s=None)  # CPU: no bandwidth
    with pytest.raises(JudgeError, match="unknown judge op"):  # the client refuses it before sending
        judge.request("format_disk")
    with pytest.raises(JudgeError, match="prepare.min_trials: expected an integer"):
        fields = {k: v for k, v in JUDGE_REQUESTS["prepare"].items() if k != "op"}
        judge.request("prepare", **{**fields, "min_trials": "3"})
    problem = tmp_path / "problem.py"
    problem.write_text(PROBLEM)
    (tmp_path / "in").mkdir()
    prepared = judge.call(j.PrepareRequest(eval_id="t", problem_path=str(problem), problem_sha256="c" * 64,
                                           master_seed=7, min_trials=2, in_dir=str(tmp_path / "in")))
    assert type(prepared) is j.PrepareReply and len(prepared.trials) == 2
    assert prepared.trials[0].draw is not None and prepared.trials[0].args == [{"tensor": 0}]
    # the untyped request still works, and its reply is the same wire dict
    again = judge.request("prepare", eval_id="u", problem_path=str(problem), problem_sha256="c" * 64,
                          master_seed=7, min_trials=2, input_sets=[], in_dir=str(tmp_path / "in"),
                          timing_variants=0)
    assert j.PrepareReply.from_dict(again).trials == prepared.trials
    assert judge.call(j.ReleaseRequest(eval_id="t")) == j.ReleaseReply()
    assert judge.call(j.ReleaseRequest(eval_id="u")) == j.ReleaseReply()


def _run_child(tmp_path, judge, body: str, standby: bool, problem_code: str = PROBLEM,
               **fields) -> list[dict]:
    """The real stub (a fresh process, no PID namespace) on a request built from the judge's plan; its
    events."""
    from kernelrl.sandbox.judge_client import python_env
    from kernelrl.sandbox.runner import spawn_child, watch_child

    for name in ("in", "out", "home"):
        (tmp_path / name).mkdir()
    problem, candidate = tmp_path / "problem.py", tmp_path / "candidate.py"
    problem.write_text(problem_code)
    candidate.write_text(CANDIDATE.format(body=body))
    gpu = judge.ensure_started()["mode"] == "gpu"
    prepared = judge.call(j.PrepareRequest(eval_id=tmp_path.name, problem_path=str(problem),
                                           problem_sha256="d" * 64, master_seed=11, min_trials=2,
                                           in_dir=str(tmp_path / "in"), timing_variants=3 if gpu else 0,
                                           share_trials=SHARE_ATTEMPTS if fields.get("kernel_share") else 0))
    settings = p.SandboxSettings(mode="gpu" if gpu else "cpu-interpreter", isolate_network=False,
                                 max_file_bytes=1 << 30)
    request = p.SandboxRequest.create(settings, **{
        "problem_path": str(problem), "candidate_path": str(candidate), "in_dir": str(tmp_path / "in"),
        "out_dir": str(tmp_path / "out"), "trials": prepared.trials, "timing_set": prepared.timing_set,
        "timing": False, "timer": {}, "timing_mode": "events", "paired_baseline": False,
        "kernel_share": False,
        # as the evaluator does: the timed calls mix where the judge planned for it (else it planned
        # share trials)
        "timed_mix": prepared.timed_mix, "memory_limit_bytes": 0, "readonly_fs": False,
        "writable_paths": [str(tmp_path)], **fields})
    first = p.StandbyRequest(**settings.to_dict()) if standby else request
    (tmp_path / "request.json").write_text(first.to_json())
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": python_env()["PYTHONPATH"],
           "HOME": str(tmp_path / "home"), "TMPDIR": str(tmp_path / "home"),
           **({} if gpu else {"TRITON_INTERPRET": "1"})}
    child = spawn_child([sys.executable, "-m", "kernelrl.sandbox.child", str(tmp_path / "request.json")],
                        env=env, cwd=str(tmp_path / "home"))
    if standby:
        child.send((p.StandbyAssignment(request=request, env={"KERNELRL_TEST": "1"}).to_json()
                    + "\n").encode())
    events: list[dict] = []
    outcome = watch_child(child, timeouts={"start": 120, "import": 60, "run": 60}, memory_limit_bytes=0,
                          log_limit_bytes=1 << 16, on_event=lambda e: events.append(e) or True)
    judge.call(j.ReleaseRequest(eval_id=tmp_path.name))
    assert outcome.protocol_error is None and outcome.timed_out_phase is None, outcome.log
    assert not (tmp_path / "request.json").exists()  # deleted once read: it holds the seeds
    return events


@pytest.mark.parametrize(("body", "standby", "kinds"), [
    ("return x * 2", True, ["ready", "baseline", "imported", "initialized", "trial", "trial", "done"]),
    ("raise RuntimeError('boom')", False, ["ready", "baseline", "imported", "initialized", "error"]),
])
def test_the_real_child_reads_its_typed_request_and_sends_typed_events(tmp_path, judge, body, standby, kinds):
    events = _run_child(tmp_path, judge, body, standby)
    assert [e["event"] for e in events] == kinds
    for sent in events:  # the wire form of every event the stub sent is exactly its dataclass's
        assert parse_event(json.dumps(sent)).to_dict() == sent
    if kinds[-1] == "done":
        trial = parse_event(events[4])
        assert trial.index == 0 and trial.outputs[0].dtype == "float32"
        assert trial.outputs[0].aliases_input is False
    else:
        error = parse_event(events[-1])
        assert ((error.stage, error.exc_type, error.message)
                == ("correctness", "builtins.RuntimeError", "boom"))


@pytest.mark.parametrize("kinds", [
    ["ready", "baseline", "imported", "initialized", "trial", "trial", "census", "timing_token", "timing",
     "done"],  # GPU
    ["ready", "baseline", "imported", "initialized", "trial", "trial", "done"],  # CPU: no census, no timing
    ["ready", "imported", "initialized", "trial", "error", "terminated"],
    ["ready", "inputs_unavailable", "terminated"],
    ["ready", "baseline", "imported", "exit", "terminated"],
    ["ready", "imported", "exit", "terminated"],
    ["error", "terminated"],  # the stub failed before it was ready
    ["terminated"],
])
def test_the_stubs_message_orders_are_accepted(kinds):
    from kernelrl.sandbox.runner import EventOrder

    order = EventOrder()
    assert [order.check(kind) for kind in kinds] == [None] * len(kinds)


@pytest.mark.parametrize(("kinds", "says"), [
    (["ready", "imported", "initialized", "trial", "initialized"], "out of order"),  # forged from forward
    (["ready", "imported", "initialized", "trial", "census", "census"], "out of order"),  # a second census
    (["ready", "imported", "initialized", "trial", "census", "trial"], "out of order"),
    (["ready", "imported", "initialized", "trial", "timing"], "without the timing token"),
    (["ready", "imported", "initialized", "trial", "timing_token", "timing", "timing"], "out of order"),
    (["ready", "imported", "initialized", "trial", "done", "trial"], "after 'done'"),
    (["ready", "imported", "error", "done"], "after 'error'"),
    (["ready", "ready"], "out of order"),
    (["imported"], "out of order"),
    (["ready", "imported", "inputs_unavailable"], "out of order"),
    (["ready", "timing_granted"], "not a message the stub sends"),  # the runner's own, never the child's
    (["ready", "baseline", "native_thread_seen"], "not a message the stub sends"),  # likewise
    (["ready", "baseline", "baseline"], "out of order"),  # a second baseline, sent at import
    (["ready", "baseline", "imported", "baseline"], "out of order"),
    (["terminated", "ready"], "after 'terminated'"),
])
def test_messages_out_of_the_stubs_order_are_refused(kinds, says):
    from kernelrl.sandbox.runner import EventOrder

    order = EventOrder()
    found = [order.check(kind) for kind in kinds]
    assert found[:-1] == [None] * (len(kinds) - 1) and says in found[-1]


# 16 MiB: shared buffers, samples
BIG_PROBLEM = PROBLEM.replace("torch.randn(16, 8)", "torch.randn(4096, 1024)")


@pytest.mark.gpu
def test_the_real_child_times_on_a_gpu_through_typed_events(tmp_path):
    """The GPU-only events and fields: shared-buffer outputs, the census, the timing report with sampled
    checks and the paired reference, every one exactly its dataclass's wire form."""
    from kernelrl.sandbox.judge_client import JudgeClient

    judge = JudgeClient("cuda", timeout_s=300)
    try:
        events = _run_child(tmp_path, judge, "return x * 2", False, BIG_PROBLEM, timing=True,
                            kernel_share=True, paired_baseline=True,
                            timer={"warmup_ms": 5.0, "target_ms": 20.0})
    finally:
        judge.close()
    kinds = [e["event"] for e in events]
    # the stub asks for the timing token (timing_token) after its census; the runner answers (timing_granted)
    assert kinds[:4] == ["ready", "baseline", "imported", "initialized"], kinds
    assert kinds[-5:] == ["census", "timing_token", "timing_granted", "timing", "done"], kinds
    for sent in events:
        assert parse_event(json.dumps(sent)).to_dict() == sent
    trials = [parse_event(e) for e in events if e["event"] == "trial"]
    # large correctness outputs: shared buffers
    assert trials and all(t.outputs[0].ipc is True for t in trials)
    census = parse_event(events[-5])
    assert census.method in ("events", "profiler") and census.details
    # measured on fresh inputs (the problem's inputs mix: two timing variants mixed), its output sampled
    measured = census.checked[0]
    assert measured.mix_trial is not None and measured.mix_seed is not None and measured.outputs[0].sampled
    timing = parse_event(events[-2])
    assert timing.timer["times_ms"] and timing.paired_reference["times_ms"] and timing.calls > 0
    assert timing.checked and all(c.outputs[0].sampled for c in timing.checked)  # over 8 MiB: sampled
