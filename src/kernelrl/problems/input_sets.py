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
    if not isinstance(sets, dict) or not all(isinstance(k, str) and isinstance(v, dict) for k, v in sets.items()):
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


def correctness_sets(names: list[str], gpu: bool, requested: list[str] | None = None) -> list[str]:
    """Sets to check, in order: check, sweeps, then bench on a GPU (bench is too big for the interpreter)."""
    if requested:
        unknown = [n for n in requested if n not in names]
        if unknown:
            raise InputSetError(f"the problem has no input set(s) {unknown}; it has {names}")
        return list(requested)
    if names == [DEFAULT_SET]:
        return names
    sweeps = sorted(n for n in names if n.startswith("sweep"))
    return [CHECK_SET, *sweeps, *([BENCH_SET] if gpu else [])]


def timing_set(names: list[str]) -> str:
    return BENCH_SET if BENCH_SET in names else DEFAULT_SET
