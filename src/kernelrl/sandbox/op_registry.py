"""What the op census trusts, taken before the candidate's import (sandbox only; torch is imported by then):
the operators and overloads registered then, and the kernels of the allowed ones; and threads that carry the
census's dispatch mode (a mode is per thread).

An operator the candidate defines (`torch.library`), in its own namespace under an allowed name or as a new
overload of one, is not on the allow-list whatever its name; an allowed operator whose kernels changed (a
`torch.library` "IMPL" registration) is tampering. Both run their kernels with the census's mode off, so only
the operator itself shows. An operator the candidate defined in Python through `torch.library.custom_op` or
`triton_op` (PyTorch's documented way to ship a Triton kernel as an operator) is opened instead: its Python
implementation runs in the operator's place under the census, so its body is judged as forward's own; so does
`wrap_triton`'s launch, which reaches the census as a higher-order operator on a GPU.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable, Iterable


def qualified(func) -> str:
    """An operator overload as the dispatcher names it: "aten::clone", "aten::add.out", "mylib::op"."""
    overload = func._overloadname
    return func._schema.name if overload in ("default", "") else f"{func._schema.name}.{overload}"


class OpRegistry:
    """The operators registered when it is made, and the kernels of the ATen operators named `allowed`."""

    def __init__(self, torch, allowed: frozenset[str]) -> None:
        self._names = frozenset(torch._C._dispatch_get_all_op_names())  # "aten::clone", "aten::add.out", ...
        self._dump = torch._C._dispatch_dump
        from torch._library.custom_ops import OPDEFS

        self._python_ops = OPDEFS  # torch.library's Python operators by name, as torch keeps them
        self._tensor_type = torch.Tensor
        self._kernels = {op: self._dump(op) for op in self._names
                         if op.startswith("aten::") and op[len("aten::"):].split(".")[0] in allowed}

    def is_aten(self, func) -> bool:
        """An ATen operator and overload that existed before the candidate's import."""
        return func._schema.name.startswith("aten::") and qualified(func) in self._names

    def python_body(self, func, args) -> Callable | None:
        """The Python implementation of an operator registered since this registry was made, for a device
        type (`custom_op`/`triton_op`; `register_kernel` per device), or None. Whatever function this returns
        runs instead of the operator, under the census: it need not be the one the dispatcher would call."""
        if qualified(func) in self._names:
            return None
        opdef = self._python_ops.get(func._schema.name)
        if opdef is None:
            return None
        bodies = getattr(opdef, "_backend_fns", None)
        if not isinstance(bodies, dict):
            return None
        tensor = next((a for a in args if isinstance(a, self._tensor_type)), None)
        body = (tensor is not None and bodies.get(tensor.device.type)) or bodies.get(None)
        return body if callable(body) else None

    def replaced(self, funcs: Iterable) -> list[str]:
        """Those of `funcs` whose kernels differ from the ones registered before the import."""
        ran = {qualified(func) for func in funcs}
        return sorted(op for op in ran if op in self._kernels and self._dump(op) != self._kernels[op])


def run_higher_order(mode, func, args, kwargs, ops: Counter):
    """A higher-order operator reaching the census's `mode`. wrap_triton's launch
    (triton_kernel_wrapper_mutation) runs its dense implementation under the mode, so the launch is the
    candidate's like any other; any other is compute, counted in `ops`. Whatever torch's module holds under
    those names is what runs, watched (it is not imported here: a third of a second per candidate)."""
    wrap = sys.modules.get("torch._higher_order_ops.triton_kernel_wrap")
    if wrap is not None and func is getattr(wrap, "triton_kernel_wrapper_mutation", None):
        with mode:
            return wrap.triton_kernel_wrapper_mutation_dense(*args, **kwargs)
    ops[f"{func.name()} (higher-order operator)"] += 1
    return func(*args, **kwargs)


def carry_into_threads(active: Callable[[], bool], mode) -> None:
    """A thread started while `active()` (a forward runs: a standard-library pool, a timer) runs its function
    under `mode` too, so work moved to another thread is seen."""
    import _thread
    import threading

    def under_mode(function):
        def run(*args, **kwargs):
            mode.__enter__()
            try:
                return function(*args, **kwargs)
            finally:
                mode.__exit__(None, None, None)

        return run

    def carrying(start):
        def start_thread(function, *args, **kwargs):
            return start(under_mode(function) if active() else function, *args, **kwargs)

        start_thread.__name__ = getattr(start, "__name__", "start_new_thread")
        return start_thread

    # threading keeps its own references to _thread's functions
    for owner, name in ((_thread, "start_new_thread"), (_thread, "start_joinable_thread"),
                        (threading, "_start_new_thread"), (threading, "_start_joinable_thread")):
        original = getattr(owner, name, None)
        if original is not None:
            setattr(owner, name, carrying(original))
