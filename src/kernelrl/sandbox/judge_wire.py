"""The typed wire between the verdict process and the judge: one JSON line each way, `{"op": op, **fields}`
(`parse_judge_request`), answered by `{"ok": true, **fields}` or
`{"ok": false, "error": ..., "traceback": ...}` (`parse_judge_reply`). Messages validate as the child's do
(kernelrl.sandbox.protocol); stdlib only."""

from __future__ import annotations

from typing import ClassVar

from kernelrl.sandbox.protocol import TrialPlan
from kernelrl.sandbox.wire import (
    _STR,
    Message,
    ProtocolError,
    _bool,
    _dict,
    _field,
    _int,
    _list,
    _loads,
    _map,
    _message,
    _message_type,
    _number,
    _optional,
    _type,
)

# -- the judge's replies -------------------------------------------------------------------------------------


@_message_type
class JudgeReply(Message):
    _envelope = ("ok", True)


@_message_type
class JudgeFailure(Message):
    """The judge's answer to a request that failed (or, on start-up, to no request at all)."""

    _envelope = ("ok", False)
    error: str = _field(_STR)
    traceback: str | None = _field(_optional(_STR), default=None, omit_none=True)


@_message_type
class JudgeHello(JudgeReply):
    """The judge's first line: what it runs on."""

    mode: str = _field(_STR)  # "gpu" or "cpu-interpreter"
    device_name: str = _field(_STR)
    torch_version: str = _field(_STR)
    triton_version: str | None = _field(_optional(_STR))
    python_version: str = _field(_STR)
    # GPU: the device's free and total memory when the judge started (torch.cuda.mem_get_info)
    memory_free_bytes: int | None = _field(_optional(_int), default=None, omit_none=True)
    memory_total_bytes: int | None = _field(_optional(_int), default=None, omit_none=True)


@_message_type
class PrepareReply(JudgeReply):
    timing_flops: int | None = _field(_optional(_int))  # the timed call's matmul/conv FLOPs
    trials: list[TrialPlan] = _field(_list(_message(TrialPlan)))
    sets: list[str] = _field(_list(_STR))  # the correctness input sets
    timing_set: str = _field(_STR)
    seeds_sha256: str = _field(_STR)
    output_dtypes: list[str] = _field(_list(_STR))
    input_dtypes: list[str] = _field(_list(_STR))
    outputs: list[dict] = _field(_list(_dict))  # headers of the first trial's reference outputs
    # GPU: device memory the judge holds for this evaluation until its release (inputs, references, buffers)
    device_bytes: int | None = _field(_optional(_int), default=None, omit_none=True)
    timed_mix: bool = _field(_bool, default=True)  # False: METADATA["timed_inputs"] == "rotate"


@_message_type
class CompareReply(JudgeReply):
    # kernelrl.results.Mismatch's fields but trial, input_set
    mismatch: dict | None = _field(_optional(_dict))
    # True: the outputs matched only within the float64 reference's allowance (kernelrl.verify.tolerance)
    widened: bool | None = _field(_optional(_bool), default=None, omit_none=True)
    # kernelrl.verify.precision's evidence
    precision: dict | None = _field(_optional(_dict), default=None, omit_none=True)


@_message_type
class ReleaseReply(JudgeReply):
    # GPU: the most device memory one float64 recomputation of a reference has added to the judge so far
    float64_bytes: int | None = _field(_optional(_int), default=None, omit_none=True)


@_message_type
class BandwidthReply(JudgeReply):
    bytes_per_s: float | None = _field(_optional(_number))  # None on a CPU


@_message_type
class PeakFlopsReply(JudgeReply):
    flops_per_s: float | None = _field(_optional(_number))


@_message_type
class BaselinesReply(JudgeReply):
    """Raw timer dicts of the reference (eager, torch.compile), or why there are none."""

    eager: dict | None = _field(_optional(_dict), default=None, omit_none=True)
    inductor: dict | None = _field(_optional(_dict), default=None, omit_none=True)
    inductor_compile_s: float | None = _field(_optional(_number), default=None, omit_none=True)
    inductor_error: str | None = _field(_optional(_STR), default=None, omit_none=True)
    unavailable: str | None = _field(_optional(_STR), default=None, omit_none=True)


@_message_type
class AuditFlag(Message):
    flag: str = _field(_STR)
    input_set: str | None = _field(_optional(_STR))
    detail: str = _field(_STR)


@_message_type
class AuditReply(JudgeReply):
    flags: list[AuditFlag] = _field(_list(_message(AuditFlag)))
    eager_ms: dict[str, float] | None = _field(_optional(_map(_number)), default=None, omit_none=True)
    # one call's inputs and outputs
    timing_set_bytes: int | None = _field(_optional(_int), default=None, omit_none=True)


# -- the judge's requests ------------------------------------------------------------------------------------

JUDGE_OPS: dict[str, type[JudgeRequest]] = {}  # op -> its request dataclass


@_message_type
class JudgeRequest(Message):
    op: ClassVar[str] = ""
    reply: ClassVar[type[JudgeReply]] = JudgeReply

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        cls._envelope = ("op", cls.op)
        JUDGE_OPS[cls.op] = cls

    @classmethod
    def _label(cls) -> str:
        return f"judge op {cls.op}"


@_message_type
class PrepareRequest(JudgeRequest):
    """Draw every trial's inputs from the secret seed, keep the reference outputs, plan the trials."""

    op = "prepare"
    reply = PrepareReply
    eval_id: str = _field(_STR)
    problem_path: str = _field(_STR)
    problem_sha256: str = _field(_STR)
    master_seed: int = _field(_int)
    min_trials: int = _field(_int)
    input_sets: list[str] = _field(_list(_STR), factory=list)  # empty: the problem's default sets
    # default sets on a GPU: the bench set among them (False: check and sweeps; timed calls still use bench)
    bench_correctness: bool = _field(_bool, default=True)
    in_dir: str = _field(_STR)
    timing_variants: int = _field(_int, default=0)
    timed_mix: bool = _field(_bool, default=True)  # fresh inputs per timed call where the problem allows them
    # fresh inputs of the timing set for the kernel share's measured calls, whose outputs are checked like a
    # timed call's (kernelrl.sandbox.share_call); 0 when the share is not measured
    share_trials: int = _field(_int, default=0)


@_message_type
class CompareRequest(JudgeRequest):
    """Compare one trial's (or one timed call's, `prefix` "timed{n}") output files with the references."""

    op = "compare"
    reply = CompareReply
    eval_id: str = _field(_STR)
    trial: int = _field(_int)
    out_dir: str = _field(_STR)
    outputs: list[dict] = _field(_list(_dict))  # validated headers (+ ipc, sampled, sample_seed)
    atol: float = _field(_number)
    rtol: float = _field(_number)
    prefix: str | None = _field(_optional(_STR), default=None)
    changed_inputs: list[int] = _field(_list(_int), factory=list)
    # k of the float64-reference allowance for a value mismatch (kernelrl.verify.tolerance); None or 0:
    # allclose only
    ref_error_k: float | None = _field(_optional(_number), default=None, omit_none=True)
    # a timed call's mixed inputs
    mix_trial: int | None = _field(_optional(_int), default=None, omit_none=True)
    mix_seed: int | None = _field(_optional(_int), default=None, omit_none=True)
    precision_check: bool | None = _field(_optional(_bool), default=None, omit_none=True)  # rt-low-precision


@_message_type
class ReleaseRequest(JudgeRequest):
    op = "release"
    reply = ReleaseReply
    eval_id: str = _field(_STR)


@_message_type
class BaselinesRequest(JudgeRequest):
    op = "baselines"
    reply = BaselinesReply
    problem_path: str = _field(_STR)
    problem_sha256: str = _field(_STR)
    seed: int = _field(_int)
    timer: dict = _field(_dict)  # TimerSettings' fields
    mode: str = _field(_STR, default="events")
    inductor: bool = _field(_bool)
    fresh: bool = _field(_bool, default=False)


@_message_type
class BandwidthRequest(JudgeRequest):
    op = "bandwidth"
    reply = BandwidthReply


@_message_type
class PeakFlopsRequest(JudgeRequest):
    op = "peak_flops"
    reply = PeakFlopsReply


@_message_type
class AuditRequest(JudgeRequest):
    op = "audit"
    reply = AuditReply
    problem_path: str = _field(_STR)
    problem_sha256: str = _field(_STR)
    timing: bool = _field(_bool, default=False)
    tolerances: dict = _field(_dict, factory=dict)  # dtype -> [atol, rtol] overrides
    input_sets: list[str] = _field(_list(_STR), factory=list)
    # as CompareRequest's
    ref_error_k: float | None = _field(_optional(_number), default=None, omit_none=True)


def parse_judge_request(message: str | bytes | dict) -> JudgeRequest:
    """A judge request (a JSON line or its dict) as its dataclass; ProtocolError for an unknown op."""
    if isinstance(message, str | bytes):
        message = _loads(message)
    if type(message) is not dict:
        raise ProtocolError(f"a judge request is an object, got {_type(message)}")
    op = message.get("op")
    if type(op) is not str:
        raise ProtocolError("a judge request needs an 'op' string")
    cls = JUDGE_OPS.get(op) if op else None
    if cls is None:
        raise ProtocolError(f"unknown judge op {op[:40]!r}")
    return cls.from_dict(message)


def parse_judge_reply(op: str, message: str | bytes | dict) -> JudgeReply | JudgeFailure:
    """The judge's answer to `op`: its reply dataclass, or a JudgeFailure when it says ok: false."""
    if op not in JUDGE_OPS:
        raise ProtocolError(f"unknown judge op {str(op)[:40]!r}")
    if isinstance(message, str | bytes):
        message = _loads(message)
    ok = _dict(message, f"reply to {op}").get("ok")
    if ok is False:
        return JudgeFailure.from_dict(message, f"reply to {op}")
    if ok is not True:
        raise ProtocolError(f"reply to {op}: 'ok' must be true or false")
    return JUDGE_OPS[op].reply.from_dict(message, f"reply to {op}")
