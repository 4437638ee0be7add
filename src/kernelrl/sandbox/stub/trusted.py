"""Phase 2: the harness's own functions and state, captured after confinement and before any candidate code
exists, so that nothing the candidate patches later reaches them (its census, the timer's operations, the
copies that refill and mix the timed inputs, the free-block poison, the CUDA events of the kernel share)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# imported with this module, after torch and before the device starts, as every phase's modules are
from kernelrl.sandbox.census import LaunchCensus, untimed_autotune
from kernelrl.sandbox.cuda_ipc import CudaIpc, CudaIpcError
from kernelrl.sandbox.free_blocks import FreeBlockPoison
from kernelrl.sandbox.frontend import GpuFrontend
from kernelrl.sandbox.kernel_share import EventShare
from kernelrl.sandbox.opcensus import OpCensus
from kernelrl.sandbox.tensor_files import HostStage
from kernelrl.sandbox.timed_mix import Mixer
from kernelrl.timing.cuda_timer import TimerOps

CANDIDATE_MODULE = "kernelrl_candidate"  # the candidate's module: the census counts its kernels' launches


class Secret:
    """The stub's secret draws (which timed calls are checked, the mixes' seeds, the paired timer's order),
    each from the kernel's random source through `os.urandom` as captured before the candidate exists. Nothing
    here has a state: a seeded generator's state, found through the garbage collector or a frame, would tell a
    candidate every later draw, so it could compute honestly on the checked calls only."""

    __slots__ = ("_urandom",)

    def __init__(self, urandom: Callable[[int], bytes]) -> None:
        self._urandom = urandom

    def getrandbits(self, k: int) -> int:
        size = (k + 7) // 8
        return int.from_bytes(self._urandom(size), "little") >> (8 * size - k)

    def below(self, n: int) -> int:
        """Uniform in [0, n), by rejection."""
        if n <= 0:
            raise ValueError("below() needs n > 0")
        while True:
            r = self.getrandbits(n.bit_length())
            if r < n:
                return r

    def choice(self, seq):
        return seq[self.below(len(seq))]

    def sample(self, population, k: int) -> list:
        pool = list(population)
        if not 0 <= k <= len(pool):
            raise ValueError("sample larger than population")
        return [pool.pop(self.below(len(pool))) for _ in range(k)]

    def shuffle(self, x: list) -> None:
        for i in range(len(x) - 1, 0, -1):
            j = self.below(i + 1)
            x[i], x[j] = x[j], x[i]


@dataclass
class Trusted:
    torch: Any
    gpu: bool
    device: Any
    census: Any  # LaunchCensus: which kernels the candidate launched
    ops: Any  # OpCensus: every forward runs under it (which ATen ops ran, who wrote the outputs)
    share: Any  # EventShare (GPU): the kernel share's CUDA functions
    secret: Secret  # which timed calls are checked, the timed inputs' mixes
    current_frames: Callable[[], dict]
    tensor_copy: Callable  # refills the timed calls' inputs
    mixer: Any  # fresh timed inputs (sandbox.timed_mix)
    poison: Any  # FreeBlockPoison before each trial (GPU)
    timer_ops: Any  # the timer's flush and launch cover (GPU)
    ipc: Any  # the judge's shared buffers for large correctness outputs (GPU)
    peak_reserved: Callable[[], int] | None  # the evaluator's GPU memory admission learns from it
    host_stage: Any  # large GPU tensors to and from files through pinned memory
    sync: Callable[[], None] | None
    event_cls: Any


def capture(torch, gpu: bool, block_mix) -> Trusted:
    """Install the census and take every function the later phases call."""
    host_stage = HostStage()
    census = LaunchCensus(CANDIDATE_MODULE)
    census.install()
    if not gpu:
        untimed_autotune()
        census.frontend = GpuFrontend()
        GpuFrontend.scope_device_calls()
    ops = OpCensus(census)
    ops.install()
    return Trusted(
        torch=torch, gpu=gpu, device=torch.device("cuda" if gpu else "cpu"), census=census, ops=ops,
        share=EventShare() if gpu else None,
        secret=Secret(os.urandom),
        current_frames=sys._current_frames, tensor_copy=torch.Tensor.copy_, mixer=Mixer(torch, block_mix),
        poison=FreeBlockPoison(torch) if gpu else None, timer_ops=TimerOps.capture(torch) if gpu else None,
        ipc=_shared_buffers() if gpu else None,
        peak_reserved=torch.cuda.max_memory_reserved if gpu else None, host_stage=host_stage,
        sync=torch.cuda.synchronize if gpu else None, event_cls=torch.cuda.Event if gpu else None)


def _shared_buffers():
    try:
        return CudaIpc()
    except CudaIpcError:
        return None
