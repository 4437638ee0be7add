"""Op families and their seeded sampler: what a generated problem computes, its shapes and its dtype.

A `Spec` is a problem before it is a file: the forward's lines (each rewrites `y`), the inputs as shapes over
named dimensions, the named input sets, METADATA. Every choice comes from the `random.Random` handed in, in a
fixed order, so one seed gives one sequence of specs. Op count is the difficulty (as in CUDA Agent and
DRTriton).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import NamedTuple

# one-input maps: name -> a line over y, with {c} for a constant drawn from the op's list
UNARY: dict[str, tuple[str, tuple[float, ...]]] = {
    "relu": ("y = torch.relu(y)", ()),
    "gelu": ("y = F.gelu(y)", ()),
    "gelu_tanh": ("y = F.gelu(y, approximate='tanh')", ()),
    "silu": ("y = F.silu(y)", ()),
    "sigmoid": ("y = torch.sigmoid(y)", ()),
    "tanh": ("y = torch.tanh(y)", ()),
    "softplus": ("y = F.softplus(y)", ()),
    "elu": ("y = F.elu(y)", ()),
    "hardswish": ("y = F.hardswish(y)", ()),
    "abs": ("y = torch.abs(y)", ()),
    "square": ("y = y * y", ()),
    "leaky_relu": ("y = F.leaky_relu(y, {c})", (0.01, 0.05, 0.1, 0.2)),
    "clamp": ("y = torch.clamp(y, -{c}, {c})", (0.5, 1.0, 2.0, 3.0)),
    "scale": ("y = y * {c}", (0.5, 0.75, 1.5, 2.0, 3.0)),
    "shift": ("y = y + {c}", (-1.0, -0.5, 0.25, 0.5, 1.0)),
}
# maps over y and one more input tensor (named by the sampler)
BINARY: dict[str, str] = {
    "add": "y = y + {t}",
    "sub": "y = y - {t}",
    "mul": "y = y * {t}",
    "maximum": "y = torch.maximum(y, {t})",
    "minimum": "y = torch.minimum(y, {t})",
}
# the extra input's shape in a multi-input chain: the full shape, one row broadcast down, one column across
BROADCAST = {("rows", "cols"): "full", ("cols",): "row", ("rows", "one"): "col"}
# reductions along a dimension, the dimension dropped
REDUCE: dict[str, str] = {
    "sum": "y = torch.sum(y, dim={d})",
    "mean": "y = torch.mean(y, dim={d})",
    "amax": "y = torch.amax(y, dim={d})",
    "amin": "y = torch.amin(y, dim={d})",
    "logsumexp": "y = torch.logsumexp(y, dim={d})",
}
SCAN: dict[str, str] = {"cumsum": "y = torch.cumsum(y, dim={d})"}
# along the last dimension, the shape kept
ROWWISE: dict[str, str] = {
    "softmax": "y = torch.softmax(y, dim=-1)",
    "log_softmax": "y = torch.log_softmax(y, dim=-1)",
    "layer_norm": "y = F.layer_norm(y, (y.shape[-1],))",
    "rms_norm": "y = y * torch.rsqrt(y.pow(2).mean(dim=-1, keepdim=True) + 1e-6)",
    "l2_normalize": "y = F.normalize(y, dim=-1)",
}
# losses of y (the mapped predictions) against the targets t, one per row (the mean over its last dimension):
# a mean over a whole bench set (tens of millions of elements) varies less between draws than any tolerance,
# so a constant would pass it (every such problem was refused by the audit on a GPU)
LOSSES: dict[str, str] = {
    "mse_loss": "y = F.mse_loss(y, t, reduction='none').mean(dim=-1)",
    "l1_loss": "y = F.l1_loss(y, t, reduction='none').mean(dim=-1)",
    "smooth_l1_loss": "y = F.smooth_l1_loss(y, t, reduction='none').mean(dim=-1)",
    "huber_loss": "y = F.huber_loss(y, t, reduction='none', delta=0.5).mean(dim=-1)",
}
FAMILIES = ("gen_map", "gen_map_multi", "gen_reduce", "gen_scan", "gen_rownorm", "gen_gemm_epilogue",
            "gen_bmm_epilogue", "gen_conv_pool", "gen_embedding", "gen_loss")
DTYPES = (("float32", 6), ("float16", 2), ("bfloat16", 1))  # and their weights
TORCH_DTYPE = {"float32": "torch.float32", "float16": "torch.float16", "bfloat16": "torch.bfloat16"}

# bench sets: tens of millions of elements, a 4096^3 fp32 GEMM (0.05-3.2 ms of eager time on an H200 over a
# sample, docs/problems.md: larger tensors would multiply each evaluation's GPU memory); half-precision ones
# twice as many elements along the first dimension (_spec), the same bytes as float32's;
# check and sweep sets: small enough for the CPU's Triton interpreter
MAP_BENCH = ((8192, 8192), (4096, 16384), (16384, 4096), (8192, 12288))
MAP_CHECK = ((8, 128), (16, 224), (32, 64), (16, 256))
MAP_SWEEP = ((7, 131), (29, 257), (47, 1409), (13, 999))
CUBE_BENCH = ((16, 2048, 2048), (32, 1024, 2048), (8, 4096, 2048))
CUBE_CHECK = ((2, 8, 64), (3, 16, 32), (2, 32, 48))
CUBE_SWEEP = ((3, 7, 131), (5, 13, 67), (2, 29, 33))
GEMM_BENCH = ((4096, 4096, 4096), (8192, 2048, 4096), (4096, 1024, 8192), (2048, 4096, 2048))
GEMM_CHECK = ((16, 64, 32), (8, 32, 64), (16, 128, 48))
GEMM_SWEEP = ((13, 67, 45), (7, 129, 33), (21, 33, 97))
BMM_BENCH = ((16, 1024, 1024, 1024), (32, 512, 2048, 512), (8, 2048, 512, 2048))
BMM_CHECK = ((2, 8, 32, 16), (3, 16, 16, 32))
BMM_SWEEP = ((3, 13, 45, 7), (2, 7, 33, 19))
CONV_BENCH = ((16, 64, 128, 128, 128), (32, 32, 64, 128, 128), (8, 128, 128, 64, 64))  # batch, in, out, h, w
CONV_CHECK = ((2, 3, 4, 8, 8), (1, 4, 8, 6, 10))
CONV_SWEEP = ((1, 5, 3, 9, 7), (3, 2, 5, 11, 5))
EMBED_BENCH = ((262144, 32768, 256), (131072, 65536, 512), (524288, 8192, 128))  # rows, vocab, dim
EMBED_CHECK = ((16, 50, 32), (24, 100, 16))
EMBED_SWEEP = ((13, 37, 19), (7, 101, 45))
# a loss per row over short rows: a row's mean of 64-256 terms still varies between draws beyond float16's
# tolerance, which a mean of 16,384 does not
LOSS_BENCH = ((262144, 128), (131072, 256), (524288, 64))
LOSS_CHECK = ((32, 64), (16, 128), (8, 256))
LOSS_SWEEP = ((7, 131), (29, 257), (47, 67))


class Step(NamedTuple):
    """One op of the forward: its name in METADATA, its torch line, the table's op and its argument (a map's
    constant, a binary op's other input, a reduction's or scan's dimension; None where the op takes none)."""

    name: str
    line: str
    op: str
    arg: float | str | int | None = None


@dataclass(frozen=True)
class Input:
    name: str
    dims: tuple[str, ...]  # the shape, as names of the problem's dimensions
    below: str | None = None  # integer indices in [0, this dimension's size) instead of normal floats


@dataclass(frozen=True)
class Module:
    """A layer the Model owns (`self.<attr>`), built in __init__ from dimensions (get_init_inputs)."""

    attr: str
    build: str  # its constructor, over the `dims` names and {dtype}
    dims: tuple[str, ...]


@dataclass(frozen=True)
class Spec:
    family: str
    steps: tuple[Step, ...]  # forward's body, before `return y`
    inputs: tuple[Input, ...]
    dims: tuple[str, ...]  # the dimensions get_inputs takes, in order
    sets: dict[str, tuple[int, ...]]  # input set name -> a size per dimension
    dtype: str
    docstring: str
    module: Module | None = None
    tags: tuple[str, ...] = field(default_factory=tuple)

    @property
    def ops(self) -> tuple[str, ...]:
        return tuple(step.name for step in self.steps)

    @property
    def lines(self) -> tuple[str, ...]:
        return tuple(step.line for step in self.steps)

    @property
    def difficulty(self) -> int:
        return len(self.steps)


def _unary(rng: random.Random) -> Step:
    name = rng.choice(sorted(UNARY))
    line, constants = UNARY[name]
    if not constants:
        return Step(name, line, name)
    constant = rng.choice(constants)
    return Step(name, line.format(c=constant), name, constant)


def _maps(rng: random.Random, low: int, high: int) -> list[Step]:
    return [_unary(rng) for _ in range(rng.randint(low, high))]


def _dtype(rng: random.Random) -> str:
    names, weights = zip(*DTYPES, strict=True)
    return rng.choices(names, weights=weights)[0]


def _sets(rng: random.Random, bench, check, sweep) -> dict[str, tuple[int, ...]]:
    return {"bench": rng.choice(bench), "check": rng.choice(check), "sweep_odd": rng.choice(sweep)}


XY = Input("x", ("rows", "cols"))


def _map(rng: random.Random, family: str, dtype: str) -> Spec:
    sets = _sets(rng, MAP_BENCH, MAP_CHECK, MAP_SWEEP)
    return _spec(family, _maps(rng, 1, 6), (XY,), ("rows", "cols"), sets, dtype, "an element-wise chain",
                 ("elementwise",))


def _map_multi(rng: random.Random, family: str, dtype: str) -> Spec:
    extra: list[Input] = []
    ops = _maps(rng, 0, 2)
    for _ in range(rng.randint(1, 2)):
        name = "abc"[len(extra)]
        dims = rng.choice((("rows", "cols"), ("cols",), ("rows", "one")))  # full, row or column broadcast
        extra.append(Input(name, dims))
        op = rng.choice(sorted(BINARY))
        step = Step(f"{op}_{BROADCAST[dims]}", BINARY[op].format(t=name), op, name)
        ops.insert(rng.randint(0, len(ops)), step)
    ops += _maps(rng, 0, 2)
    return _spec(family, ops, (XY, *extra), ("rows", "cols"), _sets(rng, MAP_BENCH, MAP_CHECK, MAP_SWEEP),
                 dtype, "an element-wise chain over several inputs with broadcasting",
                 ("elementwise", "broadcast"))


def _reduce_or_scan(rng: random.Random, family: str, dtype: str) -> Spec:
    cube = rng.random() < 0.5
    dims = ("batch", "rows", "cols") if cube else ("rows", "cols")
    dim = rng.randrange(len(dims))
    reduce = family == "gen_reduce"
    ops = _maps(rng, 0, 3 if reduce else 2)
    table = REDUCE if reduce else SCAN
    op = rng.choice(sorted(table))
    ops.append(Step(f"{op}_dim{dim}", table[op].format(d=dim), op, dim))
    if not reduce:
        ops += _maps(rng, 0, 1)
    sizes = (CUBE_BENCH, CUBE_CHECK, CUBE_SWEEP) if cube else (MAP_BENCH, MAP_CHECK, MAP_SWEEP)
    what = "a reduction" if reduce else "a scan"
    return _spec(family, ops, (Input("x", dims),), dims, _sets(rng, *sizes), dtype,
                 f"{what} along dimension {dim}", ("reduction",) if reduce else ("scan",))


def _rownorm(rng: random.Random, family: str, dtype: str) -> Spec:
    op = rng.choice(sorted(ROWWISE))
    ops = [*_maps(rng, 0, 2), Step(op, ROWWISE[op], op), *_maps(rng, 0, 2)]
    sets = _sets(rng, MAP_BENCH, MAP_CHECK, MAP_SWEEP)
    # a few rows as wide as the bench set's: a row's values scale with its width (a softmax's are 1/cols), so
    # a chain that leaves them all below the tolerance on the bench set does on these rows too, where the
    # audit on the CPU and every correctness check see it
    sets["sweep_wide"] = (4, sets["bench"][1])
    return _spec(family, ops, (XY,), ("rows", "cols"), sets, dtype,
                 "a row-wise normalization in an element-wise chain", ("rowwise", "reduction"))


def _gemm_epilogue(rng: random.Random, family: str, dtype: str) -> Spec:
    ops = [Step("linear", "y = self.linear(y)", "linear"), *_maps(rng, 1, 4)]
    return _spec(family, ops, (Input("x", ("rows", "in_features")),), ("rows", "in_features", "out_features"),
                 _sets(rng, GEMM_BENCH, GEMM_CHECK, GEMM_SWEEP), dtype,
                 "a linear layer with an element-wise epilogue", ("gemm", "epilogue"),
                 module=Module("linear", "nn.Linear(in_features, out_features, dtype={dtype})",
                               ("in_features", "out_features")))


def _bmm_epilogue(rng: random.Random, family: str, dtype: str) -> Spec:
    ops = [Step("bmm", "y = torch.bmm(y, w)", "bmm"), *_maps(rng, 0, 3)]
    operands = (Input("x", ("batch", "rows", "inner")), Input("w", ("batch", "inner", "cols")))
    return _spec(family, ops, operands, ("batch", "rows", "inner", "cols"),
                 _sets(rng, BMM_BENCH, BMM_CHECK, BMM_SWEEP), dtype,
                 "a batched matrix product with an element-wise epilogue", ("bmm", "epilogue"))


def _conv_pool(rng: random.Random, family: str, dtype: str) -> Spec:
    size = rng.choice((1, 3, 5))
    ops = [Step(f"conv2d_{size}x{size}", "y = self.conv(y)", "conv2d", size), *_maps(rng, 0, 2)]
    if rng.random() < 0.6:
        pool = rng.choice(("max_pool2d", "avg_pool2d"))
        ops.append(Step(pool, f"y = F.{pool}(y, 2)", pool, 2))
    return _spec(family, ops, (Input("x", ("batch", "channels", "height", "width")),),
                 ("batch", "channels", "out_channels", "height", "width"),
                 _sets(rng, CONV_BENCH, CONV_CHECK, CONV_SWEEP), dtype,
                 "a 2-D convolution with an activation and pooling", ("conv", "conv2d"),
                 module=Module("conv", f"nn.Conv2d(channels, out_channels, {size}, padding={size // 2}, "
                               "dtype={dtype})", ("channels", "out_channels")))


def _embedding(rng: random.Random, family: str, dtype: str) -> Spec:
    ops = [Step("embedding", "y = self.embed(y)", "embedding"), *_maps(rng, 0, 3)]
    return _spec(family, ops, (Input("x", ("rows",), below="vocab"),), ("rows", "vocab", "dim"),
                 _sets(rng, EMBED_BENCH, EMBED_CHECK, EMBED_SWEEP), dtype,
                 "an embedding lookup with an element-wise epilogue", ("gather", "embedding"),
                 module=Module("embed", "nn.Embedding(vocab, dim, dtype={dtype})", ("vocab", "dim")))


def _loss(rng: random.Random, family: str, dtype: str) -> Spec:
    loss = rng.choice(sorted(LOSSES))
    ops = [*_maps(rng, 0, 2), Step(loss, LOSSES[loss], loss)]
    return _spec(family, ops, (XY, Input("t", ("rows", "cols"))), ("rows", "cols"),
                 _sets(rng, LOSS_BENCH, LOSS_CHECK, LOSS_SWEEP), dtype,
                 "a loss per row (the mean over its last dimension) of mapped predictions against targets",
                 ("loss",))


SAMPLERS = {"gen_map": _map, "gen_map_multi": _map_multi, "gen_reduce": _reduce_or_scan,
            "gen_scan": _reduce_or_scan, "gen_rownorm": _rownorm, "gen_gemm_epilogue": _gemm_epilogue,
            "gen_bmm_epilogue": _bmm_epilogue, "gen_conv_pool": _conv_pool, "gen_embedding": _embedding,
            "gen_loss": _loss}
assert tuple(SAMPLERS) == FAMILIES


def sample(rng: random.Random, family: str) -> Spec:
    """One spec of `family`, every choice drawn from `rng` (its dtype first)."""
    if family not in SAMPLERS:
        raise ValueError(f"unknown family {family!r}; families: {', '.join(FAMILIES)}")
    return SAMPLERS[family](rng, family, _dtype(rng))


def _spec(family, ops, inputs, dims, sets, dtype, what, tags, module=None) -> Spec:
    doc = f"Generated: {what}: {' -> '.join(step.name for step in ops)} ({dtype})."
    if dtype != "float32":  # half the bytes per element: twice the elements, as long to read as float32's
        first, *rest = sets["bench"]
        sets = {**sets, "bench": (2 * first, *rest)}
    return Spec(family=family, steps=tuple(ops), inputs=tuple(inputs), dims=dims, sets=sets, dtype=dtype,
                docstring=doc, module=module, tags=(*tags, dtype))
