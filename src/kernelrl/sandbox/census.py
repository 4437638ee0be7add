"""Kernel launch census, installed by the sandbox stub before the candidate is imported.

It counts launches of kernels the candidate itself defines: Triton `@triton.jit` functions whose module is the
candidate's (compiled `JITFunction.run` on a GPU, `InterpretedFunction.run` under TRITON_INTERPRET=1), and
calls into extensions the candidate builds with `torch.utils.cpp_extension.load_inline`/`load`. A kernel
imported from a library does not count. The static rules forbid patching triton/torch attributes, so the
candidate cannot take these hooks out again without being rejected first.
"""

from __future__ import annotations

import functools
import re
import sys

_BOUNDS = r"(?:__launch_bounds__\s*\([^)]*\)\s*)?"  # allowed before or after the return type
_GLOBAL_FN = re.compile(r"__global__\s+" + _BOUNDS + r"void\s+" + _BOUNDS + r"(\w+)\s*\(")
# a demangled kernel name at global scope: optional return type, the name, then its template or arguments.
# Namespaced names never match: `void at::native::elementwise_kernel<...>` is PyTorch's, whatever the
# candidate calls its own kernel
_DEMANGLED = re.compile(r"(?:void\s+)?(\w+)\s*[<(]")


class LaunchCensus:
    def __init__(self, candidate_module: str) -> None:
        self.candidate_module = candidate_module
        self.launches = 0
        self.triton_kernels: set[str] = set()  # names of candidate Triton kernels seen launching
        self.cuda_kernels: set[str] = set()  # __global__ function names in candidate CUDA sources
        self.tracer = None  # while set (kernel_share.EventShare), each counted launch is bracketed by events
        self.observer = None  # while set (opcensus.OpCensus), told of every launch and its arguments
        # CPU mode (frontend.GpuFrontend): interpreted kernels must compile for a GPU first
        self.frontend = None

    def install(self) -> None:
        try:
            from triton.runtime.jit import JITFunction
        except ImportError:  # no Triton on this machine: CUDA C++ candidates still count
            JITFunction = None  # noqa: N806
        if JITFunction is not None:
            self._wrap_run(JITFunction)
        try:
            from triton.runtime.interpreter import InterpretedFunction
        except ImportError:
            InterpretedFunction = None  # noqa: N806
        if InterpretedFunction is not None:
            self._wrap_run(InterpretedFunction)
        from torch.utils import cpp_extension

        for name in ("load_inline", "load"):
            setattr(cpp_extension, name, self._wrap_loader(getattr(cpp_extension, name)))

    def _wrap_run(self, cls) -> None:
        original = cls.run
        census = self

        interpreted = cls.__name__ == "InterpretedFunction"

        @functools.wraps(original)
        def run(self, *args, grid, warmup, **kwargs):
            fn = getattr(self, "fn", None)
            mine = not warmup and getattr(fn, "__module__", None) == census.candidate_module
            # a body written in the candidate's file is compiled for a GPU first even when its __module__ was
            # reassigned to disown it (it is then not counted as the candidate's launch, but its body is the
            # candidate's code: unchecked, the interpreter would run numpy in it; corpus f04)
            if (interpreted and census.frontend is not None and not warmup
                    and (mine or census.defined_by_candidate(fn))):
                census.frontend.check(self, args, kwargs)
            observer = census.observer
            if observer is not None and not warmup:
                observer.launch_enter(mine, interpreted)
            try:
                if mine:
                    census.launches += 1
                    census.triton_kernels.add(getattr(fn, "__name__", "?"))
                    return census._traced(getattr(fn, "__name__", "?"), original, self, *args, grid=grid,
                                          warmup=warmup, **kwargs)
                if observer is not None and not warmup:  # a library's kernel, or one disowned
                    module, name = getattr(fn, "__module__", "?"), getattr(fn, "__name__", "?")
                    observer.foreign_launch(f"{module}.{name}")
                return original(self, *args, grid=grid, warmup=warmup, **kwargs)
            finally:
                if observer is not None and not warmup:
                    observer.launch_exit(mine, interpreted, args, kwargs)

        cls.run = run

    def defined_by_candidate(self, fn) -> bool:
        """Whether `fn` was defined in the candidate's module, whatever its `__module__` says: a function's
        `__module__` can be reassigned, its `__globals__` (the namespace its body runs in) cannot."""
        module = sys.modules.get(self.candidate_module)
        return module is not None and getattr(fn, "__globals__", None) is vars(module)

    def _wrap_loader(self, loader):
        census = self

        @functools.wraps(loader)
        def load(*args, **kwargs):
            module = loader(*args, **kwargs)
            # load_inline(name, cpp_sources, cuda_sources, ...) or keywords; load(name, sources) holds paths,
            # which the regex simply finds nothing in
            given = [*args[1:3], *(kwargs.get(k) for k in ("cpp_sources", "cuda_sources", "sources"))]
            for sources in given:
                for text in [sources] if isinstance(sources, str) else sources or []:
                    if isinstance(text, str):
                        census.cuda_kernels.update(_GLOBAL_FN.findall(text))
            for attr in dir(module):
                value = getattr(module, attr)
                if not attr.startswith("_") and callable(value):
                    setattr(module, attr, census._counting(value))
            return module

        return load

    def _counting(self, function):
        census = self

        @functools.wraps(function)
        def call(*args, **kwargs):
            census.launches += 1
            observer = census.observer
            if observer is None:
                return census._traced(getattr(function, "__name__", "?"), function, *args, **kwargs)
            observer.launch_enter(True, False)
            returned = None
            try:
                returned = census._traced(getattr(function, "__name__", "?"), function, *args, **kwargs)
                return returned
            finally:  # an extension's function writes its tensor arguments and the tensors it returns
                observer.launch_exit(True, False, args, kwargs, returned)

        return call

    def _traced(self, name: str, function, *args, **kwargs):
        tracer = self.tracer
        if tracer is None:
            return function(*args, **kwargs)
        span = tracer.begin("mine", name)
        try:
            return function(*args, **kwargs)
        finally:
            tracer.end(span)

    def is_candidate_kernel(self, gpu_kernel_name: str) -> bool:
        """Whether a kernel name from the profiler belongs to the candidate: Triton kernels keep the Python
        function's name; CUDA C++ kernels appear demangled (`void name<T>(float const*, ...)`, as torch's
        profiler shows them), mangled (`_Z<len><name>...`) or as extern "C" names, all at global scope."""
        if gpu_kernel_name in self.triton_kernels or gpu_kernel_name in self.cuda_kernels:
            return True
        demangled = _DEMANGLED.match(gpu_kernel_name)
        if demangled and demangled.group(1) in self.cuda_kernels:
            return True
        # mangled at global scope only (`_Z<len><name>`; a namespace would be `_ZN...`), for the same reason
        return any(gpu_kernel_name.startswith(f"_Z{len(n)}{n}") for n in self.cuda_kernels)


def untimed_autotune() -> None:
    """CPU mode: the interpreter has no driver, and @triton.autotune times its configs through the driver's
    benchmarker (RuntimeError: 0 active drivers). Without a GPU there is nothing to time: every config gets
    the same time, without being run, so the first one (after the candidate's pruning) is the one launched.
    The candidate's own `do_bench=` is not called either."""
    from triton.runtime.autotuner import Autotuner

    Autotuner.do_bench = staticmethod(lambda kernel_call, quantiles: [0.0] * len(quantiles))
