"""Poison the CUDA caching allocator's free blocks before each correctness trial (sandbox stub, GPU mode), so
a candidate that returns uninitialized memory cannot find an earlier call's results there.

Each free block of the current stream is taken by a request of exactly its size, largest first: the allocator
best-fits a request to the smallest cached block that holds it, so every request lands on its own block and
the poison reserves no new device memory. (One request for half the free bytes did whenever no cached block
was that large: a fresh segment, poisoned while the old blocks were not, and the evaluation's peak
reservation, which the GPU memory admission charges, grew with it.) Blocks cached for other streams are left
alone: a request on this stream cannot reach them without reserving new memory."""

from __future__ import annotations

from typing import Any

POISON_BYTE = 0xFF  # NaN in every floating type, -1 in the signed integer ones
# the largest this many: a few launches, even where a candidate left many small blocks behind
MAX_BLOCKS = 256
SMALL_REQUEST = 1 << 20  # the allocator serves requests up to this from its small pool (2 MiB segments)


class FreeBlockPoison:
    """torch's functions the poison needs, taken once: the stub takes them before any candidate code runs, so
    a patched `torch.cuda.memory_snapshot` or `torch.empty` cannot turn it off."""

    def __init__(self, torch: Any) -> None:
        self._snapshot = torch.cuda.memory_snapshot
        self._current_stream = torch.cuda.current_stream
        self._empty = torch.empty
        self._fill = torch.Tensor.fill_
        self._uint8 = torch.uint8

    def free_block_sizes(self) -> list[int]:
        """The requests that take the current stream's free blocks on the current device, largest first."""
        stream = self._current_stream()
        device, handle = stream.device.index, stream.cuda_stream
        sizes = []
        for segment in self._snapshot():
            if (segment.get("device") != device or segment.get("stream") != handle
                    or not _default_pool(segment)):
                continue
            for block in segment["blocks"]:
                if block["state"] == "inactive":
                    sizes += _requests(block["size"], segment.get("segment_type") == "small")
        return sorted(sizes, reverse=True)[:MAX_BLOCKS]

    def __call__(self) -> int:
        """Poison the free blocks; the bytes poisoned. Whatever the allocator does not allow (fragmentation)
        is skipped rather than failing the candidate."""
        held, poisoned = [], 0
        try:
            for size in self.free_block_sizes():
                block = self._empty(size, dtype=self._uint8, device=self._current_stream().device)
                self._fill(block, POISON_BYTE)
                held.append(block)
                poisoned += size
        except RuntimeError:
            pass
        del held
        return poisoned


def _default_pool(segment: dict) -> bool:
    """A segment of the allocator's own pool: a CUDA graph's private pool (or an expandable segment) does not
    serve an ordinary request, which would reserve a new segment instead."""
    return tuple(segment.get("segment_pool_id", (0, 0))) == (0, 0) and not segment.get("is_expandable", False)


def _requests(size: int, small_pool: bool) -> list[int]:
    """Requests that land on a free block of `size`: itself, or where a small-pool block is larger than a
    small request may be (a whole free 2 MiB segment), pieces of it: a larger request would go to the large
    pool."""
    if not small_pool or size <= SMALL_REQUEST:
        return [size]
    return ([SMALL_REQUEST] * (size // SMALL_REQUEST)
            + ([size % SMALL_REQUEST] if size % SMALL_REQUEST else []))
