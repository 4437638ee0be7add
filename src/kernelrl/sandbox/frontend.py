"""CPU mode compiles what a GPU would: each candidate kernel the Triton interpreter is about to run is first
lowered to Triton IR (TTIR) by Triton's own frontend for a CUDA target, so a kernel body that is not Triton
(numpy, Python builtins over data, imports, calls into plain functions) fails as a `CompilationError`, as it
would on a GPU, instead of running as plain Python in the interpreter. Only the frontend runs: no driver, no
ptxas.

The signature is derived from the launch's arguments the way Triton's JIT specializes them (tensors are
pointers to their dtype, Python ints i32/i64, floats fp32, bools i1, constexpr parameters by value). Each
(kernel, signature) is compiled once per sandbox. An argument a GPU launch refuses (a list, a dict, a string,
an object) is refused here too; one it takes that this does not type (tuples, other pointer-likes, tensor
descriptors) leaves the launch unchecked rather than rejecting an honest kernel.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any

_TORCH_TO_TRITON = {
    "float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "float64": "fp64", "int8": "i8", "int16": "i16",
    "int32": "i32", "int64": "i64", "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
    "bool": "i1", "float8_e4m3fn": "fp8e4nv", "float8_e5m2": "fp8e5",
}


class _Untypable(Exception):
    """An argument the frontend check cannot type: the launch stays unchecked (never a false rejection)."""


class GpuFrontend:
    def __init__(self) -> None:
        from triton.backends.compiler import GPUTarget
        from triton.backends.nvidia.compiler import CUDABackend

        self.target = GPUTarget("cuda", 90, 32)  # an H100: the frontend's checks do not depend on the arch
        self.backend = CUDABackend(self.target)
        self.options = self.backend.parse_options({})
        self._done: set[tuple] = set()
        self._jit: dict[Any, Any] = {}  # Python function -> its JITFunction

    @staticmethod
    def scope_device_calls() -> None:
        """Triton's interpreter patches triton.language for a device-function call (a @triton.jit helper
        called from a kernel) and never restores it (triton 3.9), which leaves the frontend seeing the
        interpreter's stand-ins after a kernel has called a helper: restore the patches when the call returns,
        as a launch does. Where the interpreter differs from the code below, it is left alone."""
        from triton.runtime import interpreter

        call = vars(interpreter.InterpretedFunction).get("__call__")
        if getattr(interpreter, "_patch_lang", None) is None or getattr(call, "__code__", None) is None or \
                call.__code__.co_names[:3] != ("_patch_lang", "fn", "rewrite"):
            return

        def scoped_call(self: Any, *args: Any, **kwargs: Any) -> Any:
            patches = interpreter._patch_lang(self.fn)
            try:
                return self.rewrite()(*args, **kwargs)
            except Exception as e:
                raise interpreter.InterpreterError(repr(e)) from e
            finally:
                patches.restore()

        interpreter.InterpretedFunction.__call__ = scoped_call

    def check(self, interpreted: Any, args: tuple, kwargs: dict) -> None:
        """Raise Triton's CompilationError when the kernel would not compile for a GPU with these
        arguments."""
        from triton._C.libtriton import ir
        from triton.compiler import ASTSource

        jit = self._jit_of(interpreted.fn)
        try:
            signature, constexprs = self._signature(jit, args, kwargs)
        except _Untypable:
            return
        key = (interpreted.fn, tuple(sorted(signature.items())),
               tuple(sorted((k, repr(v)) for k, v in constexprs.items())))
        if key in self._done:
            return
        context = ir.context()
        ir.load_dialects(context)
        self.backend.load_dialects(context)
        source = ASTSource(jit, signature, constexprs)
        with self._compiled_kernels_visible(interpreted.fn.__module__):
            source.make_ir(self.target, self.options, self.backend.get_codegen_implementation(self.options),
                           self.backend.get_module_map(), context)
        self._done.add(key)

    def _jit_of(self, fn: Any) -> Any:
        if fn not in self._jit:
            from triton.runtime.jit import JITFunction

            self._jit[fn] = JITFunction(fn)
        return self._jit[fn]

    @contextlib.contextmanager
    def _compiled_kernels_visible(self, candidate_module: str) -> Iterator[None]:
        """Under TRITON_INTERPRET=1 every @triton.jit function, Triton's own (tl.max, tl.sum...) and the
        candidate's helpers, is an InterpretedFunction, which the code generator cannot call: while it runs,
        the modules name JITFunctions over the same Python functions instead."""
        from triton.runtime.interpreter import InterpretedFunction

        swapped = []
        for name, module in list(sys.modules.items()):
            if module is None or not (name == candidate_module or name.startswith("triton.language")):
                continue
            scope = vars(module)
            for attr, value in list(scope.items()):
                if isinstance(value, InterpretedFunction):
                    swapped.append((scope, attr, value))
                    scope[attr] = self._jit_of(value.fn)
        try:
            yield
        finally:
            for scope, attr, value in swapped:
                scope[attr] = value

    @staticmethod
    def _signature(jit: Any, args: tuple, kwargs: dict) -> tuple[dict[str, str], dict[str, Any]]:
        import torch
        import triton.language as tl

        signature: dict[str, str] = {}
        constexprs: dict[str, Any] = {}
        for index, param in enumerate(jit.params):
            name = param.name
            if index < len(args):
                value = args[index]
            elif name in kwargs:
                value = kwargs[name]
            elif param.has_default:
                value = param.default
            else:
                raise _Untypable(name)
            if isinstance(value, tl.constexpr):
                value = value.value
            if param.is_constexpr or value is None:
                signature[name] = "constexpr"
                constexprs[name] = value
            elif isinstance(value, torch.Tensor):
                dtype = _TORCH_TO_TRITON.get(str(value.dtype).removeprefix("torch."))
                if dtype is None:
                    raise _Untypable(name)
                signature[name] = f"*{dtype}"
            elif isinstance(value, bool):
                signature[name] = "i1"
            elif isinstance(value, int):
                signature[name] = "i32" if -2**31 <= value < 2**31 else "i64"
            elif isinstance(value, float):
                signature[name] = "fp32"
            elif (isinstance(value, tuple) or hasattr(value, "data_ptr")
                  or "Descriptor" in type(value).__name__):
                raise _Untypable(name)  # a GPU launch takes these (tuples, pointer-likes, tensor descriptors)
            else:  # a GPU launch refuses it; the interpreter would hand it to the body as a Python object
                raise TypeError(f"kernel argument {name!r} is a {type(value).__name__}, which a Triton "
                                "kernel does not take on a GPU (tensors, ints, floats, bools, None and "
                                "constexprs)")
        return signature, constexprs
