"""Phase 6: the timed calls, under this device's timing token. They rotate through the timing set's inputs,
refilled into the same buffers before each call (never the same inputs twice in a row); with timed_mix each
call gets fresh inputs, every element from variant a or b by a secret mask. A secret subset of calls is
checked, large outputs at secret positions, and every call's result goes through the hand-off."""

from __future__ import annotations

import os
from collections.abc import Callable

from kernelrl.sandbox.protocol import (
    Event,
    OpReport,
    OutputMeta,
    SandboxRequest,
    TimedCheck,
    TimingEvent,
    TimingTokenEvent,
)
from kernelrl.sandbox.share_call import checked_output_metas
from kernelrl.sandbox.stub.candidate import LoadedCandidate
from kernelrl.sandbox.stub.trials import args_for, timed_trials
from kernelrl.sandbox.tensor_files import write_tensor
from kernelrl.sandbox.timed_mix import SEED_BITS
from kernelrl.timing.cuda_timer import HOST_MODE, TimerSettings, time_cuda, time_host, time_paired

TIMED_CHECKS = 4  # timed calls whose outputs go to the judge (one more per batch an adaptive timer adds)
MAX_TIMED_CHECKS = 16  # the verdict process compares at most this many
# larger outputs of timed calls go to the judge as a sample (kernelrl.verify.compare.sample_positions): 4 MiB
# of values instead of 4 GiB of file traffic for four checks of a 1 GiB output
FULL_TIMED_CHECK_BYTES = 8 << 20


def times_here(request: SandboxRequest, gpu: bool) -> bool:
    """CPU mode times only when asked to (timing_mode 'host': the host clock around the interpreter)."""
    return bool(request.timing and timed_trials(request) and (gpu or request.timing_mode == HOST_MODE))


class TimedInputs:
    """The timed calls' model and buffers, and the timing variants (pristine inputs) refilled into them."""

    def __init__(self, request: SandboxRequest, candidate: LoadedCandidate) -> None:
        self.trials = timed_trials(request)
        self.model = candidate.model_for(self.trials[0].set)
        self.variants = [candidate.pristine[t.index] for t in self.trials]
        self.buffers = [t.clone() for t in self.variants[0]]
        self.args = args_for(self.trials[0], self.buffers)


def wait_for_timing_token(send: Callable[[Event], None], control_fd: int | None) -> None:
    """Ask the verdict process for this device's timing token and block until it is granted, so only one
    candidate times on a GPU at a time. Without a control fd (old callers) timing starts at once."""
    if control_fd is None:
        return
    send(TimingTokenEvent())
    while True:
        data = os.read(control_fd, 64)
        # EOF: the verdict process is gone or stopped us; the group is killed anyway
        if not data or b"go" in data:
            return


class _TimedCalls:
    """The timer's callbacks: `refill` before each call, `call` itself, `check` after it."""

    def __init__(self, request: SandboxRequest, candidate: LoadedCandidate, inputs: TimedInputs,
                 clock: Callable[[], float]) -> None:
        self.request, self.candidate, self.inputs, self.clock = request, candidate, inputs, clock
        self.trusted = candidate.trusted
        self.variant, self.mix = 0, (None, None)
        self.planned, self.checks, self.check_s = 0, set(), 0.0
        self.threads: set[str] = set()
        self.native: list = []
        self.checked: list[TimedCheck] = []
        self.calls = 0

    def refill(self) -> None:
        variants, secret = self.inputs.variants, self.trusted.secret
        if len(variants) > 1:
            self.variant = secret.choice([v for v in range(len(variants)) if v != self.variant])
        if self.request.timed_mix and len(variants) > 1:  # outside the timed region, like the copy
            other = secret.choice([v for v in range(len(variants)) if v != self.variant])
            self.mix = (self.inputs.trials[other].index, secret.getrandbits(SEED_BITS))
            self.trusted.mixer.into(self.inputs.buffers, variants[self.variant], variants[other], self.mix[1])
            return
        for dst, src in zip(self.inputs.buffers, variants[self.variant], strict=True):
            self.trusted.tensor_copy(dst, src)

    def call(self):  # counted: a CUDA graph's replays run no Python, so its calls are the captures
        self.calls += 1
        with self.trusted.torch.no_grad():
            return self.trusted.ops.call(self.inputs.model, *self.inputs.args)

    def check(self, i, reps, result) -> None:
        # after every call, not only once the timing ends: a thread that lives for some of the timed
        # calls could launch work while the launch cover holds the GPU, outside the timed region
        self.threads.update(self.candidate.stray_threads())
        self.native = self.native or self.candidate.native.stray()
        # every call's result, checked or not: only exact types, whose reading and dropping run no
        # code of the candidate's (a container's finalizer would work outside the timed region)
        outs = self.candidate.handoff.outputs(result)
        secret = self.trusted.secret
        if i is not None and reps > self.planned:
            # which timed calls are checked: secret, drawn once the rep count is known, and again from
            # each batch an adaptive timer adds (a candidate must not behave for the first batch only)
            count = TIMED_CHECKS if self.planned == 0 else 1
            self.checks |= set(secret.sample(range(self.planned, reps), min(count, reps - self.planned)))
            self.planned = reps
        if i is None or i not in self.checks or len(self.checked) >= MAX_TIMED_CHECKS:
            return
        began = self.clock()
        metas = checked_output_metas(self.trusted.torch, outs,
                                     os.path.join(self.request.out_dir, f"timed{len(self.checked)}"),
                                     FULL_TIMED_CHECK_BYTES, lambda: secret.getrandbits(63), write_tensor,
                                     self.trusted.host_stage)
        self.checked.append(TimedCheck(rep=i, trial=self.inputs.trials[self.variant].index,
                                       mix_trial=self.mix[0], mix_seed=self.mix[1],
                                       outputs=[OutputMeta(**m) for m in metas]))
        self.check_s += self.clock() - began


def time_calls(request: SandboxRequest, candidate: LoadedCandidate, inputs: TimedInputs,
               send: Callable[[Event], None], control_fd: int | None, clock: Callable[[], float]) -> None:
    """Wait for the timing token, time the calls (paired with the problem's own Model where asked) and send
    the raw times with the checked calls' outputs and the census's findings."""
    trusted = candidate.trusted
    wait_for_timing_token(send, control_fd)
    granted = clock()
    calls = _TimedCalls(request, candidate, inputs, clock)
    launches = trusted.census.launches
    trusted.ops.report()  # the timed calls' findings start here
    settings = TimerSettings(**request.timer)
    paired_reference = None
    if not trusted.gpu:
        raw = time_host(calls.call, clock=clock, settings=settings, prepare=calls.refill, inspect=calls.check)
    else:
        timer = dict(torch=trusted.torch, synchronize=trusted.sync, event_cls=trusted.event_cls, clock=clock,
                     settings=settings, prepare=calls.refill, inspect=calls.check, mode=request.timing_mode,
                     ops=trusted.timer_ops)
        # paired: the problem's own Model, built as the judge builds it: the one mode that keeps the reference
        # in this process (problem_data), cross-checked with the judge's eager time
        if request.paired_baseline:
            paired = time_paired(calls.call, _reference_call(candidate, inputs), rng=trusted.secret, **timer)
            raw, paired_reference = paired["a"], paired["b"]
        else:
            raw = time_cuda(calls.call, **timer)
    marks = {"timed": round(clock() - granted, 4), "checks": round(calls.check_s, 4)}
    found = trusted.ops.report()
    send(TimingEvent(timer=raw, paired_reference=paired_reference, checked=calls.checked, calls=calls.calls,
                     launches=trusted.census.launches - launches,
                     threads=sorted(calls.threads.union(candidate.stray_threads()))[:8],
                     native_threads=calls.native or candidate.native.stray() or None, marks=marks,
                     census=OpReport(**found) if found else None))


def _reference_call(candidate: LoadedCandidate, inputs: TimedInputs) -> Callable[[], object]:
    torch = candidate.trusted.torch
    torch.manual_seed(42)
    torch.cuda.manual_seed(42)
    reference_cls, reference_args = candidate.drawn.reference
    reference = reference_cls(*reference_args).to(candidate.trusted.device)

    def reference_call():
        with torch.no_grad():
            return reference(*inputs.args)
    return reference_call
