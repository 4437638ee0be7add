"""Triton solutions without a teacher model: a `ModelNew` written from a generated problem's spec, for every
family, varied in style (block sizes, warps, one pass or a loop over the row) by a seeded draw. They are
candidates like any other: only those the evaluator judges `correct` without findings are kept
(`kernelrl gen --solutions`).

Every op computes in float32 registers and the result is stored in the problem's dtype; reductions, scans and
row-wise ops move the reduced dimension last (a layout copy) and run one program per row.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from kernelrl.problems.generate.families import BINARY, REDUCE, ROWWISE, SCAN, TORCH_DTYPE, UNARY, Spec, Step

# each map as Triton over `y` (float32); {c}: the op's constant
MAPS = {
    "relu": "y = tl.maximum(y, 0.0)",
    "gelu": "y = 0.5 * y * (1.0 + tl.math.erf(y * 0.7071067811865476))",
    "gelu_tanh": "y = 0.5 * y * (1.0 + _tanh(0.7978845608028654 * (y + 0.044715 * y * y * y)))",
    "silu": "y = y / (1.0 + tl.exp(-y))",
    "sigmoid": "y = 1.0 / (1.0 + tl.exp(-y))",
    "tanh": "y = _tanh(y)",
    "softplus": "y = tl.where(y > 20.0, y, tl.log(1.0 + tl.exp(y)))",
    "elu": "y = tl.where(y > 0.0, y, tl.exp(y) - 1.0)",
    "hardswish": "y = y * tl.minimum(tl.maximum(y + 3.0, 0.0), 6.0) / 6.0",
    "abs": "y = tl.abs(y)",
    "square": "y = y * y",
    "leaky_relu": "y = tl.where(y > 0.0, y, y * {c})",
    "clamp": "y = tl.minimum(tl.maximum(y, -{c}), {c})",
    "scale": "y = y * {c}",
    "shift": "y = y + {c}",
}
COMBINE = {"add": "y = y + {t}", "sub": "y = y - {t}", "mul": "y = y * {t}",
           "maximum": "y = tl.maximum(y, {t})", "minimum": "y = tl.minimum(y, {t})"}
assert set(MAPS) == set(UNARY) and set(COMBINE) == set(BINARY)

HEADER = '''import torch
import torch.nn as nn
import triton
import triton.language as tl
'''
TANH = '''

@triton.jit
def _tanh(x):
    return 2.0 / (1.0 + tl.exp(-2.0 * x)) - 1.0
'''


def _header(spec: Spec) -> str:
    """The imports, and the tanh helper where a map needs it (an unused kernel is a finding of its own)."""
    return HEADER + (TANH if any(s.op in ("tanh", "gelu_tanh") for s in spec.steps) else "")


def _maps(steps: tuple[Step, ...], indent: str) -> str:
    return "".join(f"{indent}{MAPS[s.op].format(c=s.arg)}\n" for s in steps)


# the families with a template (all of them)
TEMPLATE_FAMILIES = ("gen_map", "gen_map_multi", "gen_reduce", "gen_scan", "gen_rownorm", "gen_gemm_epilogue",
                     "gen_bmm_epilogue", "gen_conv_pool", "gen_embedding", "gen_loss")


def synthesize(spec: Spec, seed: int = 0) -> str | None:
    """The Triton `ModelNew` source for `spec` (`seed` picks the style), or None for a family without a
    template."""
    style = random.Random(f"style:{seed}")
    if spec.family in ("gen_map", "gen_map_multi"):
        return _elementwise(spec, style)
    if spec.family == "gen_gemm_epilogue":
        return _gemm(spec, style)
    if spec.family == "gen_bmm_epilogue":
        return _bmm(spec, style)
    if spec.family == "gen_embedding":
        return _embedding(spec, style)
    if spec.family == "gen_loss":
        return _loss(spec, style)
    if spec.family == "gen_conv_pool":
        return _conv(spec, style)
    if spec.family in ("gen_reduce", "gen_scan", "gen_rownorm"):
        return _rows(spec, style)
    return None


def _elementwise(spec: Spec, style: random.Random) -> str:
    block, warps = style.choice((256, 512, 1024, 2048)), style.choice((2, 4, 8))
    others = [i for i in spec.inputs if i.name != "x"]
    params = "".join(f"{i.name}_ptr, " for i in others)
    body = ""
    for step in spec.steps:
        if step.op in COMBINE:
            other = next(i for i in others if i.name == step.arg)
            index = {2: "offs", 1: "col"}[len(other.dims)] if other.dims != ("rows", "one") else "row"
            load = f"tl.load({step.arg}_ptr + {index}, mask=mask, other=0.0)"
            body += f"    {step.arg} = {load}.to(tl.float32)\n    {COMBINE[step.op].format(t=step.arg)}\n"
        else:
            body += _maps((step,), "    ")
    args = "".join(f"{i.name}.contiguous(), " for i in others)
    return _header(spec) + f'''

@triton.jit
def fused_kernel(x_ptr, {params}out_ptr, n, cols, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    row = offs // cols
    col = offs % cols
    y = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
{body}    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, {", ".join(i.name for i in spec.inputs)}):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        grid = (triton.cdiv(n, {block}),)
        fused_kernel[grid](x, {args}out, n, x.shape[-1], BLOCK={block}, num_warps={warps})
        return out
'''


def _row_op(step: Step) -> str:
    """A row-wise op over the row `y` (float32, BLOCK wide, `mask` on the row's length `n`)."""
    return {
        "softmax": "    m = tl.max(tl.where(mask, y, -float('inf')), 0)\n"
                   "    e = tl.where(mask, tl.exp(y - m), 0.0)\n    y = e / tl.sum(e, 0)\n",
        "log_softmax": "    m = tl.max(tl.where(mask, y, -float('inf')), 0)\n"
                       "    e = tl.where(mask, tl.exp(y - m), 0.0)\n    y = y - m - tl.log(tl.sum(e, 0))\n",
        "layer_norm": "    mean = tl.sum(tl.where(mask, y, 0.0), 0) / n\n"
                      "    d = tl.where(mask, y - mean, 0.0)\n"
                      "    y = d * tl.math.rsqrt(tl.sum(d * d, 0) / n + 1e-5)\n",
        "rms_norm": "    y = y * tl.math.rsqrt(tl.sum(tl.where(mask, y * y, 0.0), 0) / n + 1e-6)\n",
        "l2_normalize": "    y = y / tl.maximum(tl.sqrt(tl.sum(tl.where(mask, y * y, 0.0), 0)), 1e-12)\n",
    }[step.op]


def _reduce(step: Step) -> str:
    return {
        "sum": "    r = tl.sum(tl.where(mask, y, 0.0), 0)\n",
        "mean": "    r = tl.sum(tl.where(mask, y, 0.0), 0) / n\n",
        "amax": "    r = tl.max(tl.where(mask, y, -float('inf')), 0)\n",
        "amin": "    r = tl.min(tl.where(mask, y, float('inf')), 0)\n",
        "logsumexp": "    m = tl.max(tl.where(mask, y, -float('inf')), 0)\n"
                     "    r = m + tl.log(tl.sum(tl.where(mask, tl.exp(y - m), 0.0), 0))\n",
    }[step.op]


def _rows(spec: Spec, style: random.Random) -> str:
    """Reductions, scans and row-wise ops: one program per row of the moved-last dimension, the whole row in
    one block."""
    warps = style.choice((1, 2, 4, 8))
    pivot = next(k for k, s in enumerate(spec.steps) if s.op in REDUCE or s.op in SCAN or s.op in ROWWISE)
    step = spec.steps[pivot]
    before, after = _maps(spec.steps[:pivot], "    "), _maps(spec.steps[pivot + 1:], "    ")
    dim = step.arg if step.op in REDUCE or step.op in SCAN else -1
    if step.op in REDUCE:
        middle, store = _reduce(step), "    tl.store(out_ptr + pid, r.to(out_ptr.dtype.element_ty))\n"
        allocate = "out = torch.empty(x.shape[:-1], dtype=x.dtype, device=x.device)"
        back = "out"
    else:
        middle = "    y = tl.cumsum(y, 0)\n" if step.op in SCAN else _row_op(step)
        store = "    tl.store(out_ptr + pid * n + offs, y.to(out_ptr.dtype.element_ty), mask=mask)\n"
        allocate = "out = torch.empty_like(x)"
        back = f"out.movedim(-1, {dim}).contiguous()" if dim != -1 else "out"
    return _header(spec) + f'''

@triton.jit
def row_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    y = tl.load(x_ptr + pid * n + offs, mask=mask, other=0.0).to(tl.float32)
{before}{middle}{after}{store}

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.movedim({dim}, -1).contiguous()
        n = x.shape[-1]
        {allocate}
        row_kernel[(x.numel() // n,)](x, out, n, BLOCK=triton.next_power_of_2(n), num_warps={warps})
        return {back}
'''


def _gemm(spec: Spec, style: random.Random) -> str:
    bm, bn, bk = style.choice(((32, 32, 32), (64, 64, 32), (64, 32, 64), (32, 64, 32), (128, 64, 32)))
    warps = style.choice((4, 8))
    # float32: exact products (no TF32), as the reference computes them
    precision = ', input_precision="ieee"' if spec.dtype == "float32" else ""
    dtype = TORCH_DTYPE[spec.dtype]
    return _header(spec) + f'''

@triton.jit
def linear_kernel(x_ptr, w_ptr, b_ptr, out_ptr, M, N, K,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        rk = k + tl.arange(0, BK)
        a = tl.load(x_ptr + rm[:, None] * K + rk[None, :],
                    mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        w = tl.load(w_ptr + rn[None, :] * K + rk[:, None],
                    mask=(rn[None, :] < N) & (rk[:, None] < K), other=0.0)
        acc += tl.dot(a, w{precision})
    y = acc + tl.load(b_ptr + rn, mask=rn < N, other=0.0).to(tl.float32)[None, :]
{_maps(spec.steps[1:], "    ")}    mask = (rm[:, None] < M) & (rn[None, :] < N)
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], y.to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features, dtype={dtype})

    def forward(self, x):
        x = x.contiguous()
        w = self.linear.weight.contiguous()
        M, K = x.shape
        N = w.shape[0]
        out = torch.empty((M, N), dtype=x.dtype, device=x.device)
        grid = (triton.cdiv(M, {bm}), triton.cdiv(N, {bn}))
        linear_kernel[grid](x, w, self.linear.bias, out, M, N, K,
                            BM={bm}, BN={bn}, BK={bk}, num_warps={warps})
        return out
'''


def _bmm(spec: Spec, style: random.Random) -> str:
    bm, bn, bk = style.choice(((32, 32, 32), (64, 64, 32), (32, 64, 32), (64, 32, 64)))
    warps = style.choice((4, 8))
    precision = ', input_precision="ieee"' if spec.dtype == "float32" else ""  # exact products, no TF32
    return _header(spec) + f'''

@triton.jit
def bmm_kernel(x_ptr, w_ptr, out_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    b = tl.program_id(2)
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    x_ptr += b * M * K
    w_ptr += b * K * N
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        rk = k + tl.arange(0, BK)
        a = tl.load(x_ptr + rm[:, None] * K + rk[None, :],
                    mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        w = tl.load(w_ptr + rk[:, None] * N + rn[None, :],
                    mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, w{precision})
    y = acc
{_maps(spec.steps[1:], "    ")}    mask = (rm[:, None] < M) & (rn[None, :] < N)
    tl.store(out_ptr + b * M * N + rm[:, None] * N + rn[None, :], y.to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, w):
        x = x.contiguous()
        w = w.contiguous()
        B, M, K = x.shape
        N = w.shape[2]
        out = torch.empty((B, M, N), dtype=x.dtype, device=x.device)
        grid = (triton.cdiv(M, {bm}), triton.cdiv(N, {bn}), B)
        bmm_kernel[grid](x, w, out, M, N, K, BM={bm}, BN={bn}, BK={bk}, num_warps={warps})
        return out
'''


def _embedding(spec: Spec, style: random.Random) -> str:
    warps = style.choice((1, 2, 4))
    dtype = TORCH_DTYPE[spec.dtype]
    return _header(spec) + f'''

@triton.jit
def embedding_kernel(idx_ptr, w_ptr, out_ptr, dim, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < dim
    index = tl.load(idx_ptr + row)
    y = tl.load(w_ptr + index * dim + cols, mask=mask, other=0.0).to(tl.float32)
{_maps(spec.steps[1:], "    ")}    out = y.to(out_ptr.dtype.element_ty)
    tl.store(out_ptr + row * dim + cols, out, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, vocab, dim):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim, dtype={dtype})

    def forward(self, x):
        x = x.contiguous()
        w = self.embed.weight.contiguous()
        dim = w.shape[1]
        out = torch.empty((*x.shape, dim), dtype=w.dtype, device=w.device)
        embedding_kernel[(x.numel(),)](x, w, out, dim, BLOCK=triton.next_power_of_2(dim), num_warps={warps})
        return out
'''


# each loss's term of d = prediction - target, as Triton over `d` (float32)
LOSS_TERMS = {
    "mse_loss": "d * d",
    "l1_loss": "tl.abs(d)",
    "smooth_l1_loss": "tl.where(tl.abs(d) < 1.0, 0.5 * d * d, tl.abs(d) - 0.5)",
    "huber_loss": "tl.where(tl.abs(d) < 0.5, 0.5 * d * d, 0.5 * (tl.abs(d) - 0.25))",
}


def _loss(spec: Spec, style: random.Random) -> str:
    """A program per row, or per group of rows (a 2-D block), its terms summed in float32."""
    warps, rows = style.choice((1, 2, 4)), style.choice((1, 4, 16))
    term = LOSS_TERMS[spec.steps[-1].op]
    if rows == 1:
        kernel = f'''
@triton.jit
def loss_kernel(x_ptr, t_ptr, out_ptr, n_rows, n, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    y = tl.load(x_ptr + row * n + offs, mask=mask, other=0.0).to(tl.float32)
{_maps(spec.steps[:-1], "    ")}    t = tl.load(t_ptr + row * n + offs, mask=mask, other=0.0).to(tl.float32)
    d = y - t
    r = tl.sum(tl.where(mask, {term}, 0.0), 0) / n
    tl.store(out_ptr + row, r.to(out_ptr.dtype.element_ty))
'''
    else:
        kernel = f'''
@triton.jit
def loss_kernel(x_ptr, t_ptr, out_ptr, n_rows, n, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n)
    offs = rows[:, None] * n + cols[None, :]
    y = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
{_maps(spec.steps[:-1], "    ")}    d = y - tl.load(t_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    r = tl.sum(tl.where(mask, {term}, 0.0), 1) / n
    tl.store(out_ptr + rows, r.to(out_ptr.dtype.element_ty), mask=rows < n_rows)
'''
    return _header(spec) + f'''
{kernel}

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, t):
        x = x.contiguous()
        t = t.contiguous()
        n = x.shape[-1]
        out = torch.empty(x.shape[:-1], dtype=x.dtype, device=x.device)
        n_rows = out.numel()
        loss_kernel[(triton.cdiv(n_rows, {rows}),)](x, t, out, n_rows, n, ROWS={rows},
                                                   BLOCK=triton.next_power_of_2(n), num_warps={warps})
        return out
'''


def _conv(spec: Spec, style: random.Random) -> str:
    """A direct convolution: a program per (image, output channel) and block of output positions, summing
    channels x taps in float32 with zero padding; the maps on each conv output, then a 2x2 pool of four of
    them where the problem pools. Correct, not fast: cuDNN's implicit GEMMs are far ahead."""
    block, warps = style.choice((64, 128, 256)), style.choice((2, 4))
    conv, *rest = spec.steps
    pool = rest[-1].op if rest and rest[-1].op in ("max_pool2d", "avg_pool2d") else None
    maps = rest[:-1] if pool else rest
    if pool is None:
        body = f"""    y = conv_at(x_ptr, w_ptr, b, oc, C, H, W, oh, ow, mask, SIZE, BLOCK) + bias
{_maps(tuple(maps), "    ")}    r = y
"""
        out_size = "H, W"
    else:
        body = ""
        for k, (dy, dx) in enumerate(((0, 0), (0, 1), (1, 0), (1, 1))):
            body += (f"    y = conv_at(x_ptr, w_ptr, b, oc, C, H, W, 2 * oh + {dy}, 2 * ow + {dx}, mask, "
                     f"SIZE, BLOCK) + bias\n{_maps(tuple(maps), '    ')}")
            if k == 0:
                body += "    r = y\n"
            else:
                body += "    r = tl.maximum(r, y)\n" if pool == "max_pool2d" else "    r += y\n"
        if pool == "avg_pool2d":
            body += "    r = r * 0.25\n"
        out_size = "H // 2, W // 2"
    layer = (f"nn.Conv2d(channels, out_channels, {conv.arg}, padding={conv.arg // 2}, "
             f"dtype={TORCH_DTYPE[spec.dtype]})")
    return _header(spec) + f'''

@triton.jit
def conv_at(x_ptr, w_ptr, b, oc, C, H, W, h, w, mask, SIZE: tl.constexpr, BLOCK: tl.constexpr):
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for c in range(0, C):
        for kh in tl.static_range(SIZE):
            for kw in tl.static_range(SIZE):
                ih = h + kh - SIZE // 2
                iw = w + kw - SIZE // 2
                inside = mask & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
                xv = tl.load(x_ptr + ((b * C + c) * H + ih) * W + iw, mask=inside, other=0.0)
                wv = tl.load(w_ptr + ((oc * C + c) * SIZE + kh) * SIZE + kw)
                acc += xv.to(tl.float32) * wv.to(tl.float32)
    return acc


@triton.jit
def conv_kernel(x_ptr, w_ptr, b_ptr, out_ptr, C, H, W, OC, OH, OW,
                SIZE: tl.constexpr, BLOCK: tl.constexpr):
    image = tl.program_id(1)
    b = image // OC
    oc = image % OC
    p = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = p < OH * OW
    oh = p // OW
    ow = p % OW
    bias = tl.load(b_ptr + oc).to(tl.float32)
{body}    tl.store(out_ptr + image * OH * OW + p, r.to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, channels, out_channels):
        super().__init__()
        self.conv = {layer}

    def forward(self, x):
        x = x.contiguous()
        w = self.conv.weight.contiguous()
        B, C, H, W = x.shape
        OC = w.shape[0]
        OH, OW = {out_size}
        out = torch.empty((B, OC, OH, OW), dtype=x.dtype, device=x.device)
        grid = (triton.cdiv(OH * OW, {block}), B * OC)
        conv_kernel[grid](x, w, self.conv.bias, out, C, H, W, OC, OH, OW, SIZE={conv.arg}, BLOCK={block},
                          num_warps={warps})
        return out
'''


SOLUTION_KINDS = {"template": "", "inductor": "_inductor"}  # kind -> the file name's suffix after the id


UNVERIFIED_DIR = "solutions_unverified"  # bfloat16 problems' solutions, moved there by a run without a GPU


def verify_solutions(out: Path, scorer, device_is_gpu: bool) -> dict:
    """Evaluate every solution under `out` (templates `solutions/<id>.py`, Inductor seeds
    `solutions/<id>_inductor.py`) with `scorer` (every check on); keep only those judged `correct` without
    findings, delete the rest, and write `OUT/solutions.json`: kept per family, each failure with its kind and
    verdict, the bfloat16 ones left unverified without a GPU (the interpreter lacks bfloat16; moved to
    `OUT/solutions_unverified/`), and `kinds`:
    per kind, per family, kept of verified (and the Inductor seeds skipped at generation, by reason)."""
    from kernelrl.problems.suite import load_suite

    suite = load_suite(out)
    chosen, unverified = [], []
    for problem in suite:
        for kind, suffix in SOLUTION_KINDS.items():
            path = out / "solutions" / f"{problem.id}{suffix}.py"
            if not path.is_file():
                continue
            if problem.metadata.get("gpu_only") and not device_is_gpu:
                # out of solutions/ until a GPU verifies it: nothing downstream (SFT data, the dataset) may
                # take an unverified solution for a correct one
                waiting = out / UNVERIFIED_DIR / path.relative_to(out / "solutions")
                waiting.parent.mkdir(parents=True, exist_ok=True)
                path.replace(waiting)
                unverified.append(problem.id if kind == "template" else f"{problem.id} ({kind})")
            else:
                chosen.append((problem, path, kind))
    kinds = {kind: {"verified": {}, "kept": {}} for kind in SOLUTION_KINDS}
    failed = []
    results = scorer.evaluate_many([(problem, path.read_text()) for problem, path, _ in chosen], ordered=True)
    for (problem, path, kind), result in zip(chosen, results, strict=True):
        counts = kinds[kind]
        counts["verified"][problem.family] = counts["verified"].get(problem.family, 0) + 1
        if result.status.value == "correct" and not result.findings:
            counts["kept"][problem.family] = counts["kept"].get(problem.family, 0) + 1
            continue
        failed.append({"id": problem.id, "family": problem.family, "kind": kind,
                       "status": result.status.value, "message": result.message[:300],
                       "findings": [f.rule for f in result.findings]})
        path.unlink()
    report = _solutions_report(out, chosen, kinds, failed, unverified)
    (out / "solutions.json").write_text(json.dumps(report, indent=1, sort_keys=True) + "\n")
    return report


def _solutions_report(out: Path, chosen: list, kinds: dict, failed: list, unverified: list) -> dict:
    kept: dict[str, int] = {}
    for counts in kinds.values():
        for family, number in counts["kept"].items():
            kept[family] = kept.get(family, 0) + number
    manifest = json.loads((out / "manifest.json").read_text())
    skipped: dict[str, dict[str, int]] = {}
    for row in manifest.get("inductor_skipped", []):
        reasons = skipped.setdefault(row["family"], {})
        reasons[row["reason"]] = reasons.get(row["reason"], 0) + 1
    by_kind = {kind: {"verified": sum(c["verified"].values()), "kept": sum(c["kept"].values()),
                      "per_family": {f: {"kept": c["kept"].get(f, 0), "verified": v}
                                     for f, v in sorted(c["verified"].items())}}
               for kind, c in kinds.items()}
    by_kind["inductor"]["skipped_per_family"] = dict(sorted(skipped.items()))
    return {"verified": len(chosen), "kept": sum(kept.values()),
            "kept_per_family": dict(sorted(kept.items())), "failed": failed,
            "not_verified_gpu_only": unverified, "kinds": by_kind}
