"""The kernel share's measured calls: the candidate's share of GPU time (`rt-kernel-gpu-fraction`) is
measured on calls whose outputs are checked, with inputs it has never seen.

Why: a share measured on a call whose output nobody reads lets a candidate compute honestly there only (or do
nothing but a copy there) and hand the real work to PyTorch or a replayed CUDA graph on every checked and
timed call; a share measured on inputs the candidate saw before lets it answer from a cache it filled on a
checked call. So each measured call has inputs never seen before, runs under the op census like a trial, and
its outputs go to the judge as a timed call's do (`TimedCheck`, prefix `share{n}`). Where the problem's inputs
mix (kernelrl.sandbox.timed_mix), each call's inputs are a fresh secret mix of two timing variants written
into the timed calls' buffers, so the device holds nothing more; else each takes one of the judge's fresh
trials (`TrialPlan.share`, planned after every other trial). A call whose gate the forward defeats is not
measured; the next attempt takes new inputs with a longer gate, the last one the profiler. The GPU-only parts
run in the stub (`measure_on_fresh_calls`); the judge and the verdict process need only the constants, which
live in kernelrl.sandbox.protocol (this module imports torch).
"""

from __future__ import annotations

import os
from collections.abc import Callable

# bound here, before the candidate's import, as everything the stub runs after it is: a name resolved when
# called would go through `sys.modules`, which the candidate's code can reach (and which confinement may have
# hidden the package's files from)
from kernelrl.sandbox.kernel_share import profiled_gpu_fraction
from kernelrl.sandbox.protocol import SHARE_ATTEMPTS, SHARE_GATES_MS, SHARE_PREFIX, TimedCheck
from kernelrl.sandbox.tensorio import ITEMSIZE, tensor_meta
from kernelrl.verify.compare import sample_positions

__all__ = ["SHARE_ATTEMPTS", "SHARE_GATES_MS", "SHARE_PREFIX", "checked_output_metas",
           "measure_on_fresh_calls", "share_path"]


def checked_output_metas(torch, outs: list, path_prefix: str, full_bytes: int, draw_seed: Callable[[], int],
                         write_tensor, host_stage) -> list[dict]:
    """Write a checked call's outputs for the judge (`{path_prefix}_out{k}.bin`): whole up to `full_bytes`,
    else a sample at positions drawn from `draw_seed()` after the call returned."""
    metas = []
    for k, t in enumerate(outs):
        meta = tensor_meta(t)
        if meta["dtype"] in ITEMSIZE:
            path = f"{path_prefix}_out{k}.bin"
            if t.numel() * ITEMSIZE[meta["dtype"]] > full_bytes:
                seed = draw_seed()
                positions = sample_positions(t.numel(), seed, t.device)
                write_tensor(path, t.detach().reshape(-1)[positions], host_stage)
                meta["sampled"], meta["sample_seed"] = positions.numel(), seed
            else:
                write_tensor(path, t, host_stage)
        metas.append(meta)
    return metas


class _Forward:
    """One measured call: the candidate's exception is kept, not raised inside the measurement (the measuring
    code must not take it for its own failure), and raised once the measurement is over."""

    def __init__(self, call: Callable[[], object]) -> None:
        self.call, self.result, self.error, self.ran = call, None, None, False

    def __call__(self) -> None:
        self.ran = True
        try:
            self.result = self.call()
        except BaseException as exc:  # noqa: BLE001 - re-raised by `settle`
            self.error = exc

    def settle(self) -> object:
        if self.error is not None:
            raise self.error
        return self.result


def measure_on_fresh_calls(torch, share, census, call_for: Callable, record: Callable
                           ) -> tuple[dict, list[TimedCheck]]:
    """The share from the first attempt whose gate held, each on inputs of its own: `call_for(n)` readies
    attempt n's inputs and returns the call to measure (it returns forward's raw result) and where its inputs
    came from (`TimedCheck`'s trial, mix_trial, mix_seed), or None when no fresh inputs are left;
    `record(result, n)` hands the result off, writes its outputs and returns their metas. Returns the
    measurement (with "method": "events" or "profiler") and the checks; an attempt that raised raises."""
    checks: list[TimedCheck] = []
    reason = "no fresh inputs for the measured call"
    for n in range(SHARE_ATTEMPTS):
        ready = call_for(n)
        if ready is None:
            break
        forward, where = _Forward(ready[0]), ready[1]
        measured, method = None, "events"
        if n < len(SHARE_GATES_MS) and share is not None:
            try:
                measured = share.measure(forward, census, SHARE_GATES_MS[n])
            except Exception as exc:  # noqa: BLE001 - the harness's own failure: the next attempt measures
                reason = f"{type(exc).__name__}: {str(exc)[:200]}"
            else:
                reason = f"the gate ({SHARE_GATES_MS[n]:.0f} ms) ended before the forward was enqueued"
        else:  # the last attempt: the profiler measures whatever the forward does
            measured, method = profiled_gpu_fraction(torch, census, forward), "profiler"
        if forward.ran:  # else the measuring failed before the call: nothing to check
            checks.append(TimedCheck(rep=n, outputs=record(forward.settle(), n), **where))
        if measured is not None:
            extra = {"fallback": reason} if method == "profiler" and n else {}
            return {**measured, "method": method, "attempts": n + 1, **extra}, checks
    return {"fraction": None, "error": reason, "method": None}, checks


def share_path(out_dir: str, n: int) -> str:
    return os.path.join(out_dir, f"{SHARE_PREFIX}{n}")
