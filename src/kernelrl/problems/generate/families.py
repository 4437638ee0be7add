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
FAMILIES = ("gen_map", "gen_map_multi", "gen_reduce", "gen_scan", "gen_rownorm", "gen_gemm_epilogue")
DTYPES = (("float32", 6), ("float16", 2), ("bfloat16", 1))  # and their weights
TORCH_DTYPE = {"float32": "torch.float32", "float16": "torch.float16", "bfloat16": "torch.bfloat16"}

# bench sets: sized for 0.5-50 ms of eager time on an H100 (tens of millions of elements; a 4096^3 fp32 GEMM);
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


@dataclass(frozen=True)
class Spec:
    family: str
    steps: tuple[Step, ...]  # forward's body, before `return y`
    inputs: tuple[Input, ...]
    dims: tuple[str, ...]  # the dimensions get_inputs takes, in order
    sets: dict[str, tuple[int, ...]]  # input set name -> a size per dimension
    dtype: str
    docstring: str
    linear: tuple[str, str] | None = None  # (in, out) dimension names of an nn.Linear, for the GEMM family
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


def sample(rng: random.Random, family: str) -> Spec:
    """One spec of `family`, every choice drawn from `rng`."""
    dtype = _dtype(rng)
    x = Input("x", ("rows", "cols"))
    if family == "gen_map":
        ops = _maps(rng, 1, 6)
        return _spec(family, ops, (x,), ("rows", "cols"), _sets(rng, MAP_BENCH, MAP_CHECK, MAP_SWEEP), dtype,
                     "an element-wise chain", ("elementwise",))
    if family == "gen_map_multi":
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
        return _spec(family, ops, (x, *extra), ("rows", "cols"), _sets(rng, MAP_BENCH, MAP_CHECK, MAP_SWEEP),
                     dtype, "an element-wise chain over several inputs with broadcasting",
                     ("elementwise", "broadcast"))
    if family in ("gen_reduce", "gen_scan"):
        cube = rng.random() < 0.5
        dims = ("batch", "rows", "cols") if cube else ("rows", "cols")
        dim = rng.randrange(len(dims))
        ops = _maps(rng, 0, 3 if family == "gen_reduce" else 2)
        table = REDUCE if family == "gen_reduce" else SCAN
        op = rng.choice(sorted(table))
        ops.append(Step(f"{op}_dim{dim}", table[op].format(d=dim), op, dim))
        if family == "gen_scan":
            ops += _maps(rng, 0, 1)
        sizes = (CUBE_BENCH, CUBE_CHECK, CUBE_SWEEP) if cube else (MAP_BENCH, MAP_CHECK, MAP_SWEEP)
        sets = _sets(rng, *sizes)
        what = "a reduction" if family == "gen_reduce" else "a scan"
        return _spec(family, ops, (Input("x", dims),), dims, sets, dtype, f"{what} along dimension {dim}",
                     ("reduction",) if family == "gen_reduce" else ("scan",))
    if family == "gen_rownorm":
        op = rng.choice(sorted(ROWWISE))
        ops = [*_maps(rng, 0, 2), Step(op, ROWWISE[op], op), *_maps(rng, 0, 2)]
        return _spec(family, ops, (x,), ("rows", "cols"), _sets(rng, MAP_BENCH, MAP_CHECK, MAP_SWEEP), dtype,
                     "a row-wise normalization in an element-wise chain", ("rowwise", "reduction"))
    if family == "gen_gemm_epilogue":
        ops = [Step("linear", "y = self.linear(y)", "linear"), *_maps(rng, 1, 4)]
        return _spec(family, ops, (Input("x", ("rows", "in_features")),),
                     ("rows", "in_features", "out_features"),
                     _sets(rng, GEMM_BENCH, GEMM_CHECK, GEMM_SWEEP), dtype,
                     "a linear layer with an element-wise epilogue", ("gemm", "epilogue"),
                     linear=("in_features", "out_features"))
    raise ValueError(f"unknown family {family!r}; families: {', '.join(FAMILIES)}")


def _spec(family, ops, inputs, dims, sets, dtype, what, tags, linear=None) -> Spec:
    doc = f"Generated: {what}: {' -> '.join(step.name for step in ops)} ({dtype})."
    return Spec(family=family, steps=tuple(ops), inputs=tuple(inputs), dims=dims, sets=sets, dtype=dtype,
                docstring=doc, linear=linear, tags=(*tags, dtype))
