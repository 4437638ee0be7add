"""Phase 5 (GPU): the kernel share's measured calls, before the timing token (other sandboxes time meanwhile),
each on inputs the candidate has never seen and with its outputs checked (kernelrl.sandbox.share_call)."""

from __future__ import annotations

from collections.abc import Callable

from kernelrl.sandbox.protocol import CensusEvent, Event, OpReport, OutputMeta, SandboxRequest
from kernelrl.sandbox.share_call import checked_output_metas, measure_on_fresh_calls, share_path
from kernelrl.sandbox.stub.candidate import LoadedCandidate
from kernelrl.sandbox.stub.timed import FULL_TIMED_CHECK_BYTES, TimedInputs
from kernelrl.sandbox.stub.trials import args_for
from kernelrl.sandbox.tensor_files import write_tensor
from kernelrl.sandbox.timed_mix import SEED_BITS


def measure_share(request: SandboxRequest, candidate: LoadedCandidate, inputs: TimedInputs,
                  send: Callable[[Event], None]) -> None:
    """Measure the share and send it with the measured calls' checks and census findings."""
    trusted = candidate.trusted
    torch, secret, ops = trusted.torch, trusted.secret, trusted.ops
    share_trials = [t for t in request.trials if t.share]  # fresh inputs for the measured calls

    def call_for(n: int):
        # attempt n's call on inputs never seen: a fresh mix of two timing variants into the timed calls'
        # buffers, or the judge's share trial n where the problem's inputs do not mix
        if share_trials:
            if n >= len(share_trials):
                return None
            trial = share_trials[n]
            call_args = args_for(trial, candidate.pristine.pop(trial.index))  # used once: not copied
            where = {"trial": trial.index}
        elif request.timed_mix and len(inputs.variants) > 1:
            a, b = secret.sample(range(len(inputs.variants)), 2)
            seed = secret.getrandbits(SEED_BITS)
            trusted.mixer.into(inputs.buffers, inputs.variants[a], inputs.variants[b], seed)
            call_args = inputs.args
            where = {"trial": inputs.trials[a].index, "mix_trial": inputs.trials[b].index, "mix_seed": seed}
        else:
            return None
        trusted.poison()

        def forward():
            with torch.no_grad():
                return ops.call(inputs.model, *call_args)
        return forward, where

    def record(result, n: int) -> list[OutputMeta]:
        outs = candidate.handoff.outputs(result)
        metas = checked_output_metas(torch, outs, share_path(request.out_dir, n), FULL_TIMED_CHECK_BYTES,
                                     lambda: secret.getrandbits(63), write_tensor, trusted.host_stage)
        return [OutputMeta(**m) for m in metas]

    ops.report()  # the measured calls' findings start here
    measured, checks = measure_on_fresh_calls(torch, trusted.share, trusted.census, call_for, record)
    method = measured.pop("method")
    if method == "profiler":  # CUPTI's threads are the stub's own (the trials were checked before)
        candidate.native.absorb()
    found = ops.report()
    send(CensusEvent(fraction=measured.pop("fraction"), method=method, details=measured, checked=checks,
                     census=OpReport(**found) if found else None))
