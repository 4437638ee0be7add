"""The stub's poison of the allocator's free blocks before each trial (kernelrl.sandbox.free_blocks): every
free block of the stream is filled, and the device memory reserved (what the GPU memory admission charges)
does not grow. GPU only: the CUDA caching allocator is the thing under test."""

from __future__ import annotations

import pytest
import torch

from kernelrl.sandbox.free_blocks import FreeBlockPoison

pytestmark = pytest.mark.gpu
MiB = 1 << 20


def test_every_free_block_is_poisoned_and_nothing_new_is_reserved():
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    # three free segments of 30 MiB: none holds half of the free bytes, so
    # the old poison's one request for that reserved a new segment; and a
    # small-pool block beside a live one (then the whole free 2 MiB segment)
    freed = [torch.full((30 * MiB // 4,), 2.0, device="cuda") for _ in range(3)]
    held = torch.ones(256, device="cuda")
    small = torch.full((1024,), 3.0, device="cuda")
    del freed, small
    torch.cuda.synchronize()
    reserved = torch.cuda.memory_reserved()
    torch.cuda.reset_peak_memory_stats()
    poisoned = FreeBlockPoison(torch)()
    torch.cuda.synchronize()
    assert torch.cuda.max_memory_reserved() == reserved == torch.cuda.memory_reserved()
    assert poisoned >= 3 * 30 * MiB + 4096
    # the allocator hands the same blocks back: NaN now, not 2.0 or 3.0 (both taken before checking, whose own
    # small results would land in the small block)
    again = [torch.empty(numel, device="cuda") for numel in (1024, 30 * MiB // 4)]
    for tensor in again:
        assert bool(torch.isnan(tensor).all()), tensor.numel()
    del held, again
