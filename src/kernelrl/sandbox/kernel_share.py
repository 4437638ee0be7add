"""Share of one forward's GPU time spent in the candidate's own kernels, measured with CUDA events.

Why not torch.profiler: CUPTI starts up in 5-6 s in each new process (measured on an H100), more than the rest
of an evaluation. Instead the forward runs once behind a *gate*: a spin kernel (`torch.cuda._sleep`) holds the
stream while the forward is enqueued, so once it ends the GPU runs the forward back to back and no interval
contains host time (a slow `grid` callable, Python between launches). Inside the forward:
- each launch of a candidate kernel (the launch census's hooks) is bracketed by an event pair: "mine";
- each PyTorch op (a dispatch mode, which also sees ATen calls made from inside a C++ extension: they go
  through the dispatcher too) by another pair: "other"; views and allocations launch nothing and are skipped;
- except the op census's named layout copies (`opcensus.LAYOUT_COPIES`: `clone`/`contiguous`, `copy_`,
  `_to_copy`, ...) that keep the dtype: "layout". They move bytes and compute nothing, and the op census
  allows them (a transpose made contiguous around the kernel), so their time is neutral: out of the share's
  numerator and out of its denominator. A copy that changes dtype (`.to(torch.float16)`, `copy_` across
  dtypes), or resolves a negated or conjugated view, is compute done by PyTorch: "other", as the op census
  treats it;
- constant fills likewise (`zero_`, `fill_` with a Python scalar, `zeros(_like)`, `full`, `arange`, ...):
  the op census allows them (an accumulator zeroed for atomics) and they compute nothing from the inputs; a
  split-row kernel that accumulates into `torch.zeros` spent about as long in the fill as in itself, and fell
  under the floor. `fill_` with a tensor value is a copy of a computed value: "other";
- the whole forward by a pair on the stream, so work neither of those sees (a CUDA graph replay) still counts.
Nested intervals count once, to the innermost (an extension calling ATen, a custom op launching a
Triton kernel).
Share = mine / max(whole forward - layout, mine + other).

If the gate ended before the forward was fully enqueued (the forward synchronized, or enqueueing took longer
than the gate), intervals may contain host time: `measure` returns None and the caller uses the profiler.
Side streams (static rules reject them) are made to wait for the gate when first seen. The profiler fallback
(`profiled_gpu_fraction`, only when the gate fails) sees kernels, not ops: it still counts layout copies
against the candidate.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# bound before the candidate's import, as every name the stub uses after it (the profiler's too)
import torch
from torch.profiler import ProfilerActivity, profile
from torch.utils._python_dispatch import TorchDispatchMode

from kernelrl.sandbox.opcensus import ALLOCATION, CONSTANT_FILL, LAYOUT_COPIES

# ATen ops that never launch a kernel: timing them would only add event pairs
_UNTIMED = frozenset({
    "empty", "empty_strided", "empty_like", "new_empty", "new_empty_strided", "detach", "alias", "lift_fresh",
    "sym_size", "sym_stride", "sym_numel", "sym_storage_offset", "is_contiguous", "resize_",
})
# read through TensorBase's own descriptors, captured before
# the candidate is imported (it may patch torch.Tensor)
_TENSOR = torch._C.TensorBase
_DTYPE = torch._C.TensorBase.dtype.__get__
_IS_NEG, _IS_CONJ = torch._C.TensorBase.is_neg, torch._C.TensorBase.is_conj


def _span_kind(name: str, args, kwargs) -> str:
    """"layout" for a named layout copy whose tensors (arguments, `out=`, nested lists) share one dtype and
    that asks for no other (`_to_copy`'s `dtype`), else "other". These ops' results take their dtype from
    exactly those (a copy's source or destination, `_to_copy`'s `dtype` or its input), so the inputs decide it
    before the op runs, when its interval opens. A constant fill is neutral too ("layout"), `fill_` with a
    tensor value not."""
    if name in CONSTANT_FILL or name in ALLOCATION:
        return "other" if name == "fill_" and any(isinstance(v, _TENSOR) for v in args[1:]) else "layout"
    if name not in LAYOUT_COPIES:
        return "other"
    dtype = kwargs.get("dtype")
    pending = [*args, *kwargs.values()]
    while pending:
        value = pending.pop()
        if isinstance(value, _TENSOR):
            if _IS_NEG(value) or _IS_CONJ(value):  # the copy negates or conjugates: arithmetic
                return "other"
            if dtype is None:
                dtype = _DTYPE(value)
            elif _DTYPE(value) != dtype:
                return "other"
        elif isinstance(value, list | tuple):
            pending.extend(value)
    return "layout"


@dataclass
class Span:
    """One bracketed interval: `ms` once resolved; `children` are intervals enqueued while it was open."""

    kind: str  # "mine", "other" or "layout"
    name: str
    start: object = None
    end: object = None
    ms: float = 0.0
    children: list[Span] = field(default_factory=list)

    def exclusive_ms(self) -> float:
        return max(0.0, self.ms - sum(c.ms for c in self.children))


def share_of(spans: list[Span], forward_ms: float) -> dict:
    """The candidate's share from resolved spans (any nesting) and the whole forward's time on the stream;
    "layout" time is taken out of the forward and counted nowhere else."""
    totals = {"mine": 0.0, "other": 0.0, "layout": 0.0}
    by_name: dict[str, float] = {}
    pending = list(spans)
    while pending:
        span = pending.pop()
        pending.extend(span.children)
        ms = span.exclusive_ms()
        totals[span.kind] += ms
        key = f"{span.name} [{span.kind}]"
        by_name[key] = by_name.get(key, 0.0) + ms
    denominator = max(forward_ms - totals["layout"], totals["mine"] + totals["other"])
    top = sorted(by_name.items(), key=lambda kv: -kv[1])[:6]
    return {
        "fraction": totals["mine"] / denominator if denominator > 0 else None,
        "total_us": denominator * 1e3,
        "mine_us": totals["mine"] * 1e3,
        "other_us": totals["other"] * 1e3,
        "layout_us": totals["layout"] * 1e3,
        "forward_us": forward_ms * 1e3,
        "top": [[name, ms * 1e3] for name, ms in top],
    }


class _TimedOps(TorchDispatchMode):
    def __init__(self, tracer: EventShare) -> None:
        super().__init__()
        self.tracer = tracer

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # otherwise torch wraps __torch_dispatch__ in dynamo.disable, whose first call imports torch._dynamo
        # (887 modules, seconds) in every sandbox; nothing is compiled inside this mode
        return False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = func.overloadpacket.__name__
        if func.is_view or name in _UNTIMED:
            return func(*args, **kwargs)
        span = self.tracer.begin(_span_kind(name, args, kwargs), name)
        try:
            return func(*args, **kwargs)
        finally:
            self.tracer.end(span)


def warm_up() -> None:
    """Run the dispatch mode once on the host, so a forked sandbox inherits whatever its first use loads."""

    class _Untimed:
        def begin(self, kind: str, name: str) -> None:
            return None

        def end(self, span: None) -> None:
            pass

    with _TimedOps(_Untimed()):
        torch.ones(2).add(1)


class EventShare:
    """Brackets launches while `measure` runs; the census's hooks call `begin`/`end` for candidate kernels."""

    def __init__(self) -> None:
        # made before the candidate is imported: what it later patches on torch.cuda (Event.elapsed_time,
        # synchronize, ...) does not reach these
        self._event = torch.cuda.Event
        self._record, self._elapsed = torch.cuda.Event.record, torch.cuda.Event.elapsed_time
        self._query, self._wait = torch.cuda.Event.query, torch.cuda.Event.wait
        self._synchronize, self._sleep = torch.cuda.synchronize, torch.cuda._sleep
        self._current_stream = torch.cuda.current_stream
        self._roots: list[Span] = []
        self._open: list[Span] = []
        self._streams: dict[int, object] = {}
        self._gated: set[int] = set()
        self._gate_end = None
        self._cycles_per_ms: float | None = None

    def _timed_event(self):
        return self._event(enable_timing=True)

    def begin(self, kind: str, name: str) -> Span:
        stream = self._current_stream()
        if stream.cuda_stream not in self._gated:  # a side stream: hold it behind the gate too
            self._wait(self._gate_end, stream)
            self._gated.add(stream.cuda_stream)
        span = Span(kind, name, start=self._timed_event(), end=self._timed_event())
        self._record(span.start, stream)
        self._streams[id(span)] = stream
        (self._open[-1].children if self._open else self._roots).append(span)
        self._open.append(span)
        return span

    def end(self, span: Span) -> None:
        self._record(span.end, self._streams.pop(id(span)))
        while self._open:  # an exception may have skipped inner ends
            if self._open.pop() is span:
                break

    def _calibrate(self) -> float:
        """Spin-kernel cycles per millisecond on this GPU, kept within 0.2-5 GHz (a bogus reading must not
        turn the gate into a minutes-long spin)."""
        if self._cycles_per_ms is None:
            stream = self._current_stream()
            start, end = self._timed_event(), self._timed_event()
            self._sleep(1000)  # load the kernel
            self._record(start, stream)
            self._sleep(2_000_000)
            self._record(end, stream)
            self._synchronize()
            measured = 2_000_000 / max(self._elapsed(start, end), 1e-6)
            self._cycles_per_ms = min(max(measured, 2e5), 5e6)
        return self._cycles_per_ms

    def measure(self, forward, census, gate_ms: float) -> dict | None:
        """Run `forward()` once behind a gate of `gate_ms`; None if the gate ended before it was enqueued."""
        cycles = int(self._calibrate() * gate_ms)
        stream = self._current_stream()
        self._roots, self._open, self._streams = [], [], {}
        self._gated = {stream.cuda_stream}
        forward_start, forward_end = self._timed_event(), self._timed_event()
        self._gate_end = self._event()
        self._synchronize()
        self._sleep(cycles)
        self._record(self._gate_end, stream)
        self._record(forward_start, stream)
        census.tracer = self
        try:
            with _TimedOps(self):
                forward()
        finally:
            census.tracer = None
        self._record(forward_end, stream)
        held = not self._query(self._gate_end)
        self._synchronize()
        if not held:
            return None
        pending = list(self._roots)
        while pending:
            span = pending.pop()
            pending.extend(span.children)
            span.ms = self._elapsed(span.start, span.end)
        return {**share_of(self._roots, self._elapsed(forward_start, forward_end)), "gate_ms": gate_ms}


def profiled_gpu_fraction(torch, census, forward) -> dict:
    """The candidate's share of one forward's GPU time from torch.profiler (~5 s: CUPTI's start-up), when the
    event-timed share cannot be had (the forward defeats the gate)."""
    try:
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            forward()
            torch.cuda.synchronize()
        total = mine = 0.0
        kernels: dict[str, float] = {}
        for evt in prof.events():
            if str(getattr(evt, "device_type", "")).endswith("CUDA") and evt.time_range.elapsed_us() > 0:
                us = float(evt.time_range.elapsed_us())
                total += us
                kernels[evt.name[:80]] = kernels.get(evt.name[:80], 0.0) + us
                if census.is_candidate_kernel(evt.name):
                    mine += us
    except Exception as exc:  # noqa: BLE001 - no profiler here: the fraction is reported as unavailable
        return {"fraction": None, "error": f"{type(exc).__name__}: {str(exc)[:200]}"}
    top = sorted(kernels.items(), key=lambda kv: -kv[1])[:6]
    return {"fraction": (mine / total) if total > 0 else None, "total_us": total, "top": top}
