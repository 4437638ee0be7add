"""The harness's own Triton kernels, compiled and loaded while a standby sandbox waits for its candidate, off
the evaluation's clock: a tiny copy that starts Triton's runtime (driver utilities, the launcher build, module
loading), and the timed-input mix (`BlockMix`). Their compile cache is the harness's own directory, which
candidates cannot write (read-only file system); once loaded, a launch reads no file."""

from __future__ import annotations

from typing import Any

import triton
import triton.language as tl


@triton.jit
def _copy_kernel(src_ptr, dst_ptr, n_elements, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    tl.store(dst_ptr + offsets, tl.load(src_ptr + offsets, mask=mask), mask=mask)


def launch(torch: Any) -> None:
    src = torch.arange(1024, dtype=torch.float32, device="cuda")
    dst = torch.empty_like(src)
    _copy_kernel[(1,)](src, dst, src.numel(), BLOCK=1024)
    torch.cuda.synchronize()
    if not torch.equal(src, dst):
        raise RuntimeError("the standby's warm-up kernel computed a wrong copy")


# n_blocks unspecialized: a size of another divisibility than the warm-up's would compile a new variant on the
# evaluation's clock, into the candidate's cache directory
@triton.jit(do_not_specialize=["n_blocks"])
def _mix_kernel(a_ptr, b_ptr, from_b_ptr, out_ptr, n_blocks, WORDS: tl.constexpr, BLOCKS: tl.constexpr):
    blocks = tl.program_id(0).to(tl.int64) * BLOCKS + tl.arange(0, BLOCKS)
    valid = blocks < n_blocks
    take_b = (tl.load(from_b_ptr + blocks, mask=valid, other=0) != 0)[:, None]
    offsets = blocks[:, None] * WORDS + tl.arange(0, WORDS)[None, :]
    live = valid[:, None]
    # each block is read from its own variant only (predicated loads): a copy's memory traffic, where a
    # `where` reads both variants
    from_a = tl.load(a_ptr + offsets, mask=live & ~take_b)
    from_b = tl.load(b_ptr + offsets, mask=live & take_b)
    tl.store(out_ptr + offsets, tl.where(take_b, from_b, from_a), mask=live)


class BlockMix:
    """The stub's timed-input mix (kernelrl.sandbox.timed_mix) as one kernel over blocks of 64-bit words:
    out[i] = b[i] where from_b[i] else a[i]. Compiled and loaded for `WORDS` (16 half- or single-precision
    elements a block) when made, i.e. in a standby before any candidate code; other widths and unaligned
    tensors are left to the `where` (`__call__` returns False). Triton's launcher is taken now, before the
    launch census wraps it: the harness's launches are not the candidate's."""

    WORDS = (4, 8)
    ALIGN = 16  # bytes: Triton specializes pointers on 16-byte alignment; the warm-up's tensors have it

    def __init__(self, torch: Any, device: str = "cuda") -> None:
        self._run = type(_mix_kernel).run  # JITFunction's (InterpretedFunction's in CPU mode)
        for words in self.WORDS:
            a = torch.arange(3 * words, dtype=torch.int64, device=device).view(3, words)
            out = torch.empty_like(a)
            from_b = torch.tensor([False, True, False], device=device)
            if not self(a, -a, from_b, out) or not torch.equal(out, torch.where(from_b[:, None], -a, a)):
                raise RuntimeError(f"the timed-input mix kernel ({words} words a block) mixed wrongly")

    def __call__(self, a: Any, b: Any, from_b: Any, out: Any) -> bool:
        """Mix the (blocks, words) int64 tensors `a` and `b` into `out` by the bool `from_b` (one per block);
        False where this kernel does not apply."""
        blocks, words = out.shape
        tensors = (a, b, from_b, out)
        if (words not in self.WORDS
                or any(t.data_ptr() % self.ALIGN or not t.is_contiguous() for t in tensors)
                or a.shape != out.shape or b.shape != out.shape or from_b.shape != (blocks,)):
            return False
        per_program = 512 // words  # 4 KiB of output a program
        self._run(_mix_kernel, a, b, from_b, out, blocks, grid=(triton.cdiv(blocks, per_program),),
                  warmup=False, WORDS=words, BLOCKS=per_program)
        return True
