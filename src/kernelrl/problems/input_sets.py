"""Named input sets (`get_input_sets()` in a problem file; see docs/problem-format.md). Stdlib only: the
judge and the sandbox stub both route parameters with these helpers, so they build identical models."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

DEFAULT_SET = "default"  # the one set of a problem without the hook: get_inputs() as written
BENCH_SET = "bench"
CHECK_SET = "check"


class InputSetError(ValueError):
    pass


def input_sets(module: Any) -> dict[str, dict]:
    """The problem's sets, validated; `{"default": {}}` when it has no hook."""
    hook = getattr(module, "get_input_sets", None)
    if hook is None:
        return {DEFAULT_SET: {}}
    sets = hook()
    if not isinstance(sets, dict) or not all(isinstance(k, str) and isinstance(v, dict)
                                             for k, v in sets.items()):
        raise InputSetError("get_input_sets() must return a dict of set name -> dict of parameters")
    missing = {BENCH_SET, CHECK_SET} - set(sets)
    if missing:
        raise InputSetError(f"get_input_sets() must define {' and '.join(sorted(missing))}")
    unknown = [name for name in sets if name not in (BENCH_SET, CHECK_SET) and not name.startswith("sweep")]
    if unknown:
        raise InputSetError(f"unknown input set names {unknown}: use bench, check and sweep*")
    return sets


def call_with(fn: Callable, params: dict) -> Any:
    """Call `fn` with the parameters it declares (all of them if it takes **kwargs)."""
    signature = inspect.signature(fn)
    if any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values()):
        return fn(**params)
    return fn(**{k: v for k, v in params.items() if k in signature.parameters})


def correctness_sets(names: list[str], gpu: bool, requested: list[str] | None = None, bench: bool = True
                     ) -> list[str]:
    """Sets to check, in order: check, sweeps, then bench on a GPU (bench is too big for the interpreter)
    unless `bench` is False."""
    if requested:
        unknown = [n for n in requested if n not in names]
        if unknown:
            raise InputSetError(f"the problem has no input set(s) {unknown}; it has {names}")
        return list(requested)
    if names == [DEFAULT_SET]:
        return names
    sweeps = sorted(n for n in names if n.startswith("sweep"))
    return [CHECK_SET, *sweeps, *([BENCH_SET] if gpu and bench else [])]


def timing_set(names: list[str]) -> str:
    return BENCH_SET if BENCH_SET in names else DEFAULT_SET


def draw_inputs(torch: Any, get_inputs: Callable, params: dict, seed: int, draw_on: str, device: Any) -> list:
    """The problem's `get_inputs` under `seed`, its tensor factories creating on `draw_on` ('cuda' or 'cpu'),
    tensors then moved to `device`. The judge and the sandbox stub both draw through here: the same seed on
    the same device gives bit-identical inputs (the judge checks that per problem before relying on it), so
    bench-sized inputs never travel between the processes. Drawing on the GPU takes milliseconds where the
    host takes seconds."""
    torch.manual_seed(seed)
    with torch.device(draw_on):
        values = list(call_with(get_inputs, params))
    return [v.to(device) if isinstance(v, torch.Tensor) else v for v in values]


PROBE_POINTS = 16  # values per input tensor compared between the judge's and the sandbox's draws


def input_probe(torch: Any, values: list) -> list:
    """A few values of each tensor (evenly spaced, as float64 bit patterns) and the plain values: what the
    sandbox compares with the judge's probe to confirm it drew the same inputs."""
    probe: list = []
    for v in values:
        if isinstance(v, torch.Tensor):
            flat = v.detach().reshape(-1)
            n = flat.numel()
            picks = sorted({(i * (n - 1)) // max(PROBE_POINTS - 1, 1)
                            for i in range(PROBE_POINTS)}) if n else []
            sample = flat[torch.tensor(picks, dtype=torch.long, device=flat.device)] if picks else flat[:0]
            probe.append([str(v.dtype), list(v.shape), sample.to(torch.float64).view(torch.int64).tolist()])
        else:
            probe.append(repr(v))
    return probe
