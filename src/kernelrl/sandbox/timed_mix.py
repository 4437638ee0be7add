"""Fresh inputs for every timed call: each input tensor's elements taken from one of two pristine variants
(trials of the timing set) by a secret mask, redrawn before every call outside the timed region. No two timed
calls see the same contents, so a memo keyed by an input checksum, a pointer or a few sampled elements pays
nothing; each element still comes from the problem's own input distribution (element-wise i.i.d. problems keep
it exactly).

The mask chooses a variant per block of BLOCK consecutive elements (row-major), not per element: the mix is
then one `where` over the two variants (read both, write the buffer) with a mask of a sixteenth of the
elements. Per element, drawing the float mask and comparing it cost more device memory traffic than the mix
itself, more than a memory-bound timed call (on an H100, 1 GiB of float32: 2.0 ms per refill, 1.3 ms per
block, a copy 0.7 ms). The `where` runs over each block's bytes as 64-bit words where the three tensors are
8-byte aligned (a block of 16 elements is 16 to 128 bytes): a `where` costs per element more than per byte
(1 GiB on an H100: float32 1.32 -> 1.12 ms, float16 2.14 -> 1.19 ms), and the words hold the same bits, so the
result is the same bytes. In a standby sandbox on a GPU the stub mixes with a kernel of its own instead
(`sandbox.warm_kernel.BlockMix`, loaded before the candidate arrives), which reads each block from its variant
only: a copy's traffic, not the `where`'s two reads and a write.

The sandbox stub mixes into its buffers (`Mixer.into`); the judge rebuilds a checked call's inputs from the
same (variant a, variant b, seed) (`Mixer.mixed`) and computes its reference on them. The mask of input k is
`torch.rand(blocks, generator=g) < 0.5` with `g` a generator of the tensor's own device seeded with
`mask_seed(seed, k)`: the same seed, size and device type (and, on a GPU, the same device: CUDA's Philox
kernel's launch shape follows the device's SM count) give the same mask in both processes.

Problems whose inputs have structure an element-wise mix breaks (sorted, symmetric, permutations, one-hot,
unique indices, inputs that must equal each other) opt out with `METADATA["timed_inputs"] = "rotate"`: their
timed calls rotate through the pristine variants as before."""

from __future__ import annotations

from typing import Any

ROTATE = "rotate"  # METADATA["timed_inputs"]: keep the rotation through pristine variants
# pristine variants a mix needs: every call's inputs are a fresh secret mix
# of both, so more variants would add no freshness, only device memory (each
# is a whole timing-set input in the sandbox for the evaluation's life)
MIXED_VARIANTS = 2
_GOLDEN = 0x9E3779B97F4A7C15
SEED_BITS = 63
# elements a mask bit covers: 64 bytes of float32; a memo would still have to tell every block's variant apart
BLOCK = 16


def mask_seed(seed: int, k: int) -> int:
    """Input k's generator seed: one per tensor, so a mask does not depend on the other inputs' shapes."""
    return (seed + (k + 1) * _GOLDEN) % (1 << SEED_BITS)


def mixes(metadata: object) -> bool:
    """Whether a problem's timed calls may get mixed inputs (its METADATA does not opt out)."""
    return not (isinstance(metadata, dict) and metadata.get("timed_inputs") == ROTATE)


def timing_variants(requested: int, mixed: bool) -> int:
    """Pristine variants of the timing set to draw: `requested` for a rotation (>= 3 defeats parity caches),
    at most MIXED_VARIANTS where the timed calls get mixed inputs."""
    return min(requested, MIXED_VARIANTS) if mixed else requested


class Mixer:
    """torch's functions the mix needs, taken once: the stub takes them before any candidate code runs, so a
    patched torch.rand or torch.where cannot steer the masks."""

    def __init__(self, torch: Any, blocks: Any = None) -> None:
        self._blocks = blocks  # the stub's mix kernel (sandbox.warm_kernel.BlockMix) where one was loaded
        self._generator = torch.Generator
        self._rand = torch.rand
        self._where = torch.where
        self._copy = torch.Tensor.copy_
        self._empty = torch.empty
        self._word = torch.int64

    def mask(self, blocks: int, device: Any, seed: int, k: int) -> Any:
        """Input k's block mask: True where the block comes from variant b."""
        g = self._generator(device=device)
        g.manual_seed(mask_seed(seed, k))
        return self._rand((blocks,), generator=g, device=device) < 0.5

    def _kernel(self, a: Any, b: Any, from_b: Any, out: Any) -> bool:
        if self._blocks is None:
            return False
        try:
            return self._blocks(a, b, from_b, out)
        except Exception:  # noqa: BLE001 - the `where` writes the same bytes: a failed launch costs time only
            self._blocks = None
            return False

    def _one(self, a: Any, b: Any, seed: int, k: int, out: Any = None) -> Any:
        if a.shape != b.shape or a.dtype != b.dtype or a.device != b.device:
            raise ValueError(f"timed input {k}: variants differ in shape, dtype or device "
                             f"({tuple(a.shape)} {a.dtype} {a.device} vs "
                             f"{tuple(b.shape)} {b.dtype} {b.device})")
        n = a.numel()
        full = n - n % BLOCK
        mask = self.mask(-(-n // BLOCK), a.device, seed, k)
        if out is None:
            out = self._empty(tuple(a.shape), dtype=a.dtype, device=a.device)
        flat, x, y = out.view(-1), a.reshape(-1), b.reshape(-1)
        if full:  # the mask broadcast over each block's elements: no mask of the input's size
            blocks = [t[:full].view(-1, BLOCK) for t in (flat, x, y)]
            word = self._word.itemsize
            if a.element_size() != word and all(t.data_ptr() % word == 0 for t in blocks):
                blocks = [t.view(self._word) for t in blocks]  # the same bytes, fewer elements
            dst, from_a, from_b = blocks
            if not (dst.dtype == self._word and self._kernel(from_a, from_b, mask[:full // BLOCK], dst)):
                self._where(mask[:full // BLOCK, None], from_b, from_a, out=dst)
        if full < n:
            self._where(mask[-1], y[full:], x[full:], out=flat[full:])
        return out

    def into(self, buffers: list, a: list, b: list, seed: int) -> None:
        """Fill `buffers` (same shapes as the variants) with the mix of variants `a` and `b` under `seed`:
        written in place where the buffer is contiguous and alike (no temporary of the input's size, before
        every timed call), else through a copy."""
        for k, (dst, x, y) in enumerate(zip(buffers, a, b, strict=True)):
            alike = dst.shape == x.shape and dst.dtype == x.dtype and dst.device == x.device
            if alike and dst.is_contiguous():
                self._one(x, y, seed, k, out=dst)
            else:
                self._copy(dst, self._one(x, y, seed, k))

    def mixed(self, a: list, b: list, seed: int) -> list:
        """The mix of variants `a` and `b` under `seed`, as new tensors (the judge's rebuild)."""
        return [self._one(x, y, seed, k) for k, (x, y) in enumerate(zip(a, b, strict=True))]


def mixed_reference(torch: Any, state: dict, a: int, b: int, seed: int, reference: Any, errors: Any
                    ) -> tuple[list, Any]:
    """The judge's reference outputs for a timed call whose inputs mixed trials `a` and `b` under `seed`, and
    its float64 errors' function (`FloatReferences.errors` over a one-call view of the evaluation's state)."""
    inputs = Mixer(torch).mixed(state["inputs"](a), state["inputs"](b), seed)
    model, args = state["calls"][a]
    refs = reference(model, args, inputs)
    view = {"errors": {}, "calls": {0: (model, args)}, "refs": {0: refs}, "inputs": lambda _: inputs}
    return refs, lambda *rest: errors(view, 0, *rest)
