"""bench/throughput.py with DeviceMemory.observed logged: (key, sandbox peak, judge bytes) per evaluation."""
import json, os, runpy, sys
from kernelrl.evaluate import slots
orig = slots.DeviceMemory.observed
log = open(os.environ["OBSERVED_LOG"], "a")
def observed(self, key, sandbox_peak_bytes, judge_bytes):
    log.write(json.dumps({"key": key, "sandbox_peak_gib": round((sandbox_peak_bytes or 0) / 2**30, 3),
                          "judge_gib": round((judge_bytes or 0) / 2**30, 3)}) + "\n"); log.flush()
    return orig(self, key, sandbox_peak_bytes, judge_bytes)
slots.DeviceMemory.observed = observed
if os.environ.get("NEED_MARGIN"):
    slots.NEED_MARGIN = float(os.environ["NEED_MARGIN"])
if os.environ.get("MEMORY_FRACTION"):
    slots.MEMORY_FRACTION = float(os.environ["MEMORY_FRACTION"])
from kernelrl.sandbox import judge_client as _jc
import threading as _th, time as _time, atexit as _atexit, collections as _col
_busy = _col.defaultdict(lambda: [0, 0.0]); _wait = [0.0]
_orig_request = _jc.JudgeClient._request
def _request(self, message, timeout_s=None):
    t = _time.monotonic()
    if _window[0] and getattr(_tl, "t0", None) is not None:
        w = _waits[getattr(message, "op", "?")]; w[0] += 1; w[1] += t - _tl.t0; w[2] = max(w[2], t - _tl.t0)
    _tl.t0 = None
    try:
        return _orig_request(self, message, timeout_s)
    finally:
        if _window[0]:
            b = _busy[getattr(message, "op", "?")]; b[0] += 1; b[1] += _time.monotonic() - t
_jc.JudgeClient._request = _request
_tl = _th.local(); _waits = _col.defaultdict(lambda: [0, 0.0, 0.0])
for _name in ("call", "request"):
    def _wrap(orig):
        def inner(self, *a, **kw):
            _tl.t0 = _time.monotonic()
            return orig(self, *a, **kw)
        return inner
    setattr(_jc.JudgeClient, _name, _wrap(getattr(_jc.JudgeClient, _name)))
_window = [False]
import kernelrl as _k
_orig_many = _k.Evaluator.evaluate_many
def _many(self, items, *a, **kw):
    items = list(items)
    big = len(items) >= 50
    if big:
        _busy.clear(); _waits.clear(); _window[0] = True; t0 = _time.monotonic()
    try:
        for item in _orig_many(self, items, *a, **kw):
            if big and os.environ.get("TIMING_LOG"):
                r = item[1] if isinstance(item, tuple) else item
                with open(os.environ["TIMING_LOG"], "a") as f:
                    f.write(json.dumps({"result": r.problem_id, "speedup": r.timing.speedup_vs_eager if r.timing else None,
                                        "rse": r.timing.speedup_rse if r.timing else None, "timing_s": r.phases_s.get("timing")}) + "\n")
            yield item
    finally:
        if big:
            _window[0] = False; _report(_time.monotonic() - t0)
_k.Evaluator.evaluate_many = _many
def _report(wall):
    total = sum(v[1] for v in _busy.values())
    print("JUDGE busy during the batch (requests, s by op):", {k: (v[0], round(v[1], 2)) for k, v in sorted(_busy.items())},
          "total", round(total, 2), "of wall", round(wall, 2), flush=True)
    print("JUDGE lock waits during the batch (requests, total s, max s by op):", {k: (v[0], round(v[1], 2), round(v[2], 3)) for k, v in sorted(_waits.items())}, flush=True)
from kernelrl.evaluate import trials as _trials
_orig_on_event = _trials.Trials.on_event
def _on_event(self, event):
    if isinstance(event, dict) and event.get("event") == "timing" and os.environ.get("TIMING_LOG"):
        t = event.get("timer") or {}
        with open(os.environ["TIMING_LOG"], "a") as f:
            f.write(json.dumps({"host_ms": t.get("host_ms"), "warmup": t.get("warmup"), "reps": len(t.get("times_ms") or []),
                                "median_ms": sorted(t.get("times_ms") or [0])[len(t.get("times_ms") or [0]) // 2],
                                "stopped": t.get("stopped"), "marks": event.get("marks"), "calls": event.get("calls")}) + "\n")
    return _orig_on_event(self, event)
_trials.Trials.on_event = _on_event
if os.environ.get("WARMUP_MS"):
    from kernelrl.evaluate.config import EvalConfig as _EC
    from kernelrl.timing.cuda_timer import TimerSettings as _TS
    _orig_training = _EC.training.__func__
    def _training(cls, **overrides):
        overrides.setdefault("timer", _TS(min_reps=10, max_ms=200.0, warmup_ms=float(os.environ["WARMUP_MS"])))
        return _orig_training(cls, **overrides)
    _EC.training = classmethod(_training)
print("admission constants: NEED_MARGIN", slots.NEED_MARGIN, "MEMORY_FRACTION", slots.MEMORY_FRACTION, flush=True)
sys.argv = ["bench/throughput.py"] + sys.argv[1:]
runpy.run_path("bench/throughput.py", run_name="__main__")
