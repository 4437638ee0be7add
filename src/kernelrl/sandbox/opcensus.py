"""Runtime provenance: which ATen ops a candidate's forward executes, and who wrote its outputs.

Installed by the sandbox stub before the candidate is imported (torch is imported by then; this module is only
ever imported in the sandbox). Every forward the stub runs, correctness trials and timed calls alike, runs
under a `TorchDispatchMode` that sees each ATen op the dispatcher executes, from Python or from inside a C++
extension, whatever name or route reached it (a callable in a container, `getattr` with a built name, an
`operator` function, a grid callable, a launch hook, a kernel body that calls torch). Each op is classified
against an allow-list (`OP_CLASSES`, documented in docs/evaluation.md) of ATen operators registered before the
candidate's import, by namespace, name and overload (any other operator is compute, whatever its name):

- allocation (`empty`, `empty_like`, `zeros`, `full`, `arange`, ...) and constant fills (`zero_`,
  `fill_` with a Python scalar): they create memory, they compute nothing from the inputs;
- views and metadata (`view`, `reshape` as a view, `as_strided`, `t`, `permute`, slices, `detach`, sizes);
- explicitly named layout copies (`clone`/`contiguous`, `copy_`, `_to_copy` to another device or layout), only
  where the dtype stays the same: a dtype conversion is compute, done in the kernel (`tl.load(p).to(...)`);
- the Triton launch machinery: inside a launch of a Triton kernel, the ops Triton itself performs from its own
  frames (the CPU interpreter moves the arguments with `new_empty`/`set_`/`copy_`; the autotuner zeroes and
  restores arguments and allocates its benchmark's cache) do not count. Only Triton's own frames are exempt,
  and only those ops: the candidate's grid callable, hooks, heuristics and kernel body run in the candidate's
  frames and are counted like forward itself.

Anything else is a disallowed op (`rt-aten-op`), `_local_scalar_dense` (`.item()`, `float(t)`, `int(t)`,
`bool(t)`, a storage's elements) is a host read (`rt-host-read`), and so are the routes that bypass ATen
altogether (`tolist`, `numpy`, `__array__`, DLPack, `apply_`/`map_`, pickling, printing a tensor, the Triton
interpreter's raw memory access outside a launch), which are wrapped here before the candidate exists.

Provenance (`rt-output-provenance`): every output's storage must have been written by a kernel the candidate
defines in the same call, and by nothing after it. A launch writes the storages of its tensor arguments (what
the census can see on every device; under the CPU interpreter the stores themselves are seen too, and an
argument the kernel never stored to does not count); a `load_inline` function writes the tensors it returns;
any other op that writes a storage afterwards (a `copy_`, a fill, a disallowed op) takes its provenance away.

Tampering (`rt-census-tampered`): the mode must still be on the dispatch-mode stack, with Python dispatch not
excluded, at every candidate launch and when forward returns.
"""

from __future__ import annotations

import os
import re
import sys
from collections import Counter

from kernelrl.sandbox.op_registry import OpRegistry, carry_into_threads, qualified, run_higher_order

# ATen overload packets by class; anything not named here is a disallowed op
ALLOCATION = frozenset({
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "zeros", "zeros_like",
    "new_zeros", "ones", "ones_like", "new_ones", "full", "full_like", "new_full", "arange", "scalar_tensor",
    "lift_fresh", "lift_fresh_copy", "resize_", "empty_permuted",
})
CONSTANT_FILL = frozenset({"zero_", "fill_"})  # fill_ with a Python scalar only (fill_.Tensor copies a value)
VIEWS = frozenset({
    "view", "_unsafe_view", "_reshape_alias", "reshape", "as_strided", "as_strided_", "t", "transpose",
    "permute", "expand", "squeeze", "unsqueeze", "slice", "select", "narrow", "split", "split_with_sizes",
    "chunk", "unbind", "diagonal", "alias", "detach", "view_as", "view_as_real", "view_as_complex", "unfold",
    "movedim", "expand_as", "flatten", "unflatten", "contiguous", "numpy_T", "matrix_H", "mT", "mH",
    "swapaxes", "swapdims", "squeeze_", "unsqueeze_", "t_", "transpose_", "tensor_split", "hsplit", "vsplit",
    "dsplit",
})
METADATA = frozenset({
    "sym_size", "sym_stride", "sym_numel", "sym_storage_offset", "size", "stride", "numel", "dim",
    "is_contiguous", "is_same_size", "is_complex", "is_floating_point", "is_nonzero_shape", "storage_offset",
    "_has_compatible_shallow_copy_type", "is_non_overlapping_and_dense", "record_stream",
})
LAYOUT_COPIES = frozenset({"clone", "copy_", "_to_copy", "_copy_from", "_copy_from_and_resize"})
HOST_READS = frozenset({"_local_scalar_dense"})
# what Triton's own frames may run inside a launch (interpreter argument moves, autotuner resets and restores,
# the benchmark's L2 cache)
LAUNCH_MACHINERY = frozenset({
    "new_empty", "empty", "empty_strided", "set_", "copy_", "zero_", "clone", "fill_", "_to_copy",
    "_copy_from",
})
OP_CLASSES = {"allocation": ALLOCATION, "constant fill": CONSTANT_FILL, "view": VIEWS, "metadata": METADATA,
              "layout copy": LAYOUT_COPIES}

# Python-level routes to a tensor's values that run no ATen op (or only a view): counted during forward
# (iterating a tensor is not one: its rows are views, and what is done with them is seen op by op)
TENSOR_HOST_ROUTES = ("tolist", "numpy", "__array__", "__dlpack__", "apply_", "map_", "map2_",
                      "__reduce_ex__", "__repr__", "__format__")
STORAGE_HOST_ROUTES = ("tolist", "_write_file", "__reduce__", "_share_filename_cpu_", "_share_fd_cpu_",
                       "share_memory_", "__getitem__", "byteswap", "_byteswap")

# what turns a dispatch mode off or routes around it: called from the candidate's own frames during forward,
# each is tampering (torch calls some of them itself, e.g. to print a tensor: a call from torch's frames is
# not counted)
DISPATCH_ESCAPES = {
    "torch._C": ("_DisableTorchDispatch", "_pop_torch_dispatch_stack", "_unset_dispatch_mode",
                 "_set_dispatch_mode", "_ExcludeDispatchKeyGuard", "_IncludeDispatchKeyGuard",
                 "_ForceDispatchKeyGuard", "_PreserveDispatchKeyGuard", "_DisablePythonDispatcher",
                 "_RestorePythonTLSSnapshot", "_dispatch_tls_set_dispatch_key_excluded",
                 "_dispatch_tls_set_dispatch_key_included", "_push_on_torch_dispatch_stack",
                 "_AutoDispatchBelowAutograd", "_AutoDispatchBelowADInplaceOrView"),
    "torch.utils._python_dispatch": ("_pop_mode", "_pop_mode_temporarily", "_disable_current_modes",
                                     "_push_mode"),
    "torch._ops.OpOverload": ("redispatch",),
}

# the process's own memory as a file: a tensor's bytes at its data_ptr, read without any tensor method
_PROC_MEM = re.compile(r"^/proc/(?:self|thread-self|\d+)(?:/task/\d+)?/mem$")

_OK, _WRITE, _ALLOC, _LAYOUT, _MACHINERY, _HOST, _OTHER = range(7)
_HERE = os.path.abspath(__file__)
_MAX_NAMES = 16  # distinct op names kept per report


def _storage_key(t) -> int:
    try:
        return t.untyped_storage().data_ptr()
    except Exception:  # noqa: BLE001 - meta, sparse, or not a tensor at all
        return 0


class OpCensus:
    """One per sandbox: `install()` before the candidate is imported, then `call(fn, *args)` for every
    forward; `report()` gives (and resets) what the calls since the last report did."""

    def __init__(self, launches) -> None:
        import torch
        import triton  # noqa: F401 - only its directory is read

        self._torch = torch
        self._tensor_type = torch.Tensor
        self._higher_order_type = torch._ops.HigherOrderOperator
        # kernelrl.sandbox.census.LaunchCensus: its hooks tell this census of launches
        self.launches = launches
        self._torch_dir = os.path.dirname(torch.__file__) + os.sep
        self._triton_dir = os.path.dirname(sys.modules["triton"].__file__) + os.sep
        self._kinds: dict = {}  # OpOverload -> class
        # the allow-list holds ATen operators registered before the candidate's import, with their kernels
        allowed = frozenset().union(*OP_CLASSES.values(), HOST_READS, LAUNCH_MACHINERY)
        self._registry = OpRegistry(torch, allowed)
        self._writes: dict = {}  # OpOverload -> indices of the arguments it writes
        self._labels: dict = {}  # OpOverload -> its name in reports
        self.active = False
        self.depth = 0  # nesting of Triton launch machinery (a launch, an autotuner or heuristics run)
        self._launch_writes: list[dict] | None = None  # per open interpreted launch: storage key -> stored to
        self._reset()
        # the checks' own functions, taken before any candidate code exists
        self._stack_len = torch._C._len_torch_dispatch_stack
        self._stack_at = torch._C._get_dispatch_stack_at
        self._excluded = torch._C._dispatch_tls_is_dispatch_key_excluded
        self._python_key = torch._C.DispatchKey.Python
        self._getframe = sys._getframe
        self._mode = self._make_mode()

    def _reset(self) -> None:
        self.ops: Counter = Counter()  # disallowed op -> count
        self.host: Counter = Counter()  # host read route -> count
        self.provenance: list[str] = []
        self.tampered: list[str] = []
        self.foreign: Counter = Counter()  # Triton kernels launched that the candidate's file does not define
        self.calls = 0

    # -- installation --------------------------------------------------------------------------------------

    def install(self) -> None:
        self.launches.observer = self
        carry_into_threads(lambda: self.active, self._mode)
        torch = self._torch
        for name in TENSOR_HOST_ROUTES:
            original = getattr(torch.Tensor, name, None)
            if original is not None:
                setattr(torch.Tensor, name, self._guard(f"Tensor.{name}", original))
        for cls in (torch.UntypedStorage, torch.TypedStorage):
            for name in STORAGE_HOST_ROUTES:
                original = getattr(cls, name, None)
                if original is not None:
                    setattr(cls, name, self._guard(f"{cls.__name__}.{name}", original))
        import torch.utils.dlpack as dlpack

        for owner, name in ((torch, "to_dlpack"), (dlpack, "to_dlpack"), (torch._C, "_to_dlpack"),
                            (torch, "save"), (torch.serialization, "save"),
                            # tensors over memory the host can read without a tensor method: numpy's, a
                            # buffer's, another library's (DLPack), a file's mapping
                            (torch, "from_numpy"), (torch, "frombuffer"), (torch, "from_dlpack"),
                            (dlpack, "from_dlpack"), (torch, "from_file"),
                            (torch.UntypedStorage, "from_file"), (torch.UntypedStorage, "from_buffer")):
            original = getattr(owner, name, None)
            if original is not None:
                setattr(owner, name, self._guard(name.strip("_"), original))
        for name in ("asarray", "as_tensor"):  # over a numpy array or a buffer (not over Python numbers)
            original = getattr(torch, name, None)
            if original is not None:
                setattr(torch, name, self._guard(name, original, shares=True))
        # a CUDA graph captured outside forward (in __init__) replays ATen work that no dispatch mode sees
        graph = getattr(torch.cuda, "CUDAGraph", None)
        replay = getattr(graph, "replay", None)
        if replay is not None:
            graph.replay = self._replay(replay)
        self._install_triton()
        self._install_tripwires()
        self._install_file_guards()

    def _install_file_guards(self) -> None:
        """Opening /proc/self/mem (any time after this, import included: a descriptor opened at import can be
        read in forward) is a host read."""
        import _io
        import builtins
        import io
        import posix

        census = self
        io_open, os_open = io.open, os.open

        def guarded_open(file, *args, **kwargs):
            census._check_path(file, None)
            return io_open(file, *args, **kwargs)

        def guarded_os_open(path, *args, dir_fd=None, **kwargs):
            census._check_path(path, dir_fd)
            return os_open(path, *args, dir_fd=dir_fd, **kwargs)

        for module in (builtins, io, _io):
            module.open = guarded_open
        os.open = posix.open = guarded_os_open

    def _check_path(self, file, dir_fd) -> None:
        if isinstance(file, int):
            return
        try:
            path = os.fsdecode(os.fspath(file))
            if dir_fd is not None and not os.path.isabs(path):
                path = os.path.join(os.readlink(f"/proc/self/fd/{dir_fd}"), path)
            real = os.path.realpath(path)
        except Exception:  # noqa: BLE001 - not a path: open() itself says so
            return
        if _PROC_MEM.match(real) or _PROC_MEM.match(path):
            self.host["open(/proc/self/mem)"] += 1

    def _install_tripwires(self) -> None:
        import torch._ops
        import torch.utils._python_dispatch

        owners = {"torch._C": self._torch._C, "torch.utils._python_dispatch": torch.utils._python_dispatch,
                  "torch._ops.OpOverload": torch._ops.OpOverload}
        for owner_name, names in DISPATCH_ESCAPES.items():
            owner = owners[owner_name]
            for name in names:
                original = getattr(owner, name, None)
                if original is not None:
                    setattr(owner, name, self._tripwire(f"{owner_name}.{name}", original))

    def _tripwire(self, label: str, original):
        census = self

        def tripwire(*args, **kwargs):
            if census.active and census._called_by_candidate():
                census.tampered.append(f"{label} called during forward")
            return original(*args, **kwargs)

        tripwire.__name__ = getattr(original, "__name__", label)
        return tripwire

    def _called_by_candidate(self) -> bool:
        frame = self._getframe(2)
        while frame is not None and frame.f_code.co_filename == _HERE:
            frame = frame.f_back
        if frame is None:
            return False
        path = frame.f_code.co_filename
        return not (path.startswith(self._torch_dir) or path.startswith(self._triton_dir))

    def _install_triton(self) -> None:
        try:
            from triton.runtime.autotuner import Autotuner, Heuristics
        except ImportError:
            return
        for cls in (Autotuner, Heuristics):
            cls.run = self._machinery(cls.run)
        try:  # the CPU interpreter's raw memory access: only a launch may use it, and its stores are seen
            from triton._C.libtriton import interpreter as raw
        except ImportError:
            return
        for name in ("load", "store", "atomic_rmw", "atomic_cas"):
            original = getattr(raw, name, None)
            if original is not None:
                setattr(raw, name, self._raw_memory(name, original))

    def _machinery(self, run):
        census = self

        def machinery(*args, **kwargs):
            census.depth += 1
            try:
                return run(*args, **kwargs)
            finally:
                census.depth -= 1

        machinery.__name__ = getattr(run, "__name__", "run")
        return machinery

    def _raw_memory(self, name: str, original):
        census = self
        # store(ptrs, value, mask), atomic_rmw(op, ptrs, value, mask, sem), atomic_cas(ptrs, cmp, value, sem)
        pointer_arg, mask_arg = {"store": (0, 2), "atomic_rmw": (1, 3),
                                 "atomic_cas": (0, None)}.get(name, (0, None))
        writes = name != "load"

        def access(*args, **kwargs):
            if census.active:
                if census._launch_writes is None:
                    census.host[f"triton interpreter {name} outside a launch"] += 1
                elif writes:
                    mask = args[mask_arg] if mask_arg is not None and len(args) > mask_arg else None
                    census._stored(args[pointer_arg], mask)
            return original(*args, **kwargs)

        return access

    def _guard(self, label: str, original, shares: bool = False):
        census = self
        plain = (self._tensor_type, list, tuple, int, float, bool, complex)

        def guarded(*args, **kwargs):
            if census.active and not (shares and (not args or isinstance(args[0], plain))) and \
                    not census._from_launch_machinery():
                census.host[label] += 1
            return original(*args, **kwargs)

        guarded.__name__ = getattr(original, "__name__", label)
        guarded.__doc__ = getattr(original, "__doc__", None)
        return guarded

    def _replay(self, original):
        census = self

        def replay(*args, **kwargs):
            if census.active and not census._from_launch_machinery():
                census.ops["CUDAGraph.replay"] += 1
            return original(*args, **kwargs)

        replay.__name__ = "replay"
        return replay

    def _make_mode(self):
        from torch.utils._python_dispatch import TorchDispatchMode

        census = self

        class _Census(TorchDispatchMode):
            supports_higher_order_operators = True  # wrap_triton's launches come as one (on a GPU)

            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                kwargs = kwargs or {}
                if isinstance(func, census._higher_order_type):
                    return run_higher_order(self, func, args, kwargs, census.ops)
                kind = census._kinds.get(func)
                if kind is None:
                    kind = census._classify(func)
                if kind == _OK:
                    return func(*args, **kwargs)
                if kind == _OTHER:  # the candidate's own Python operator: its body runs here, under this mode
                    body = census._registry.python_body(func, args)
                    if body is not None:
                        with self:
                            return body(*args, **kwargs)
                return census._op(func, kind, args, kwargs)

        return _Census()

    # -- classification ------------------------------------------------------------------------------------

    def _classify(self, func) -> int:
        name = func._schema.name.rpartition("::")[2]
        overload = func._overloadname
        written = [i for i, a in enumerate(func._schema.arguments) if a.alias_info is not None
                   and a.alias_info.is_write]
        if not self._registry.is_aten(func):
            kind = _OTHER
        elif name in VIEWS or name in METADATA:  # in-place views (t_, squeeze_) change metadata, not data
            kind = _OK
        elif name in ALLOCATION:
            kind = _ALLOC
        elif name in CONSTANT_FILL and (name == "zero_" or overload.startswith("Scalar")):
            kind = _WRITE
        elif name in LAYOUT_COPIES:
            kind = _LAYOUT
        elif name in HOST_READS:
            kind = _HOST
        elif name in LAUNCH_MACHINERY:
            kind = _MACHINERY
        else:
            kind = _OTHER
        self._kinds[func] = kind
        self._writes[func] = written
        return kind

    def _label(self, func) -> str:
        label = self._labels.get(func)
        if label is None:  # ATen's by name ("clone", "add.out"), any other by its qualified name
            name = qualified(func)
            label = self._labels[func] = name[len("aten::"):] if name.startswith("aten::") else name
        return label

    def _from_launch_machinery(self) -> bool:
        """Inside a Triton launch, and the nearest frame outside torch (and this module) is Triton's own."""
        if self.depth == 0:
            return False
        frame = self._getframe(2)
        torch_dir = self._torch_dir
        while frame is not None:
            path = frame.f_code.co_filename
            if not (path.startswith(torch_dir) or path == _HERE):
                break
            frame = frame.f_back
        if frame is None:
            return False
        module = frame.f_globals.get("__name__", "")
        return frame.f_code.co_filename.startswith(self._triton_dir) and (module == "triton" or
                                                                          module.startswith("triton."))

    def _op(self, func, kind: int, args, kwargs):
        label = None
        if kind == _LAYOUT and self._casts(func, args, kwargs):
            label = f"{self._label(func)} (dtype cast)"
        elif kind == _HOST:
            if not self._from_launch_machinery():
                self.host["item (" + self._label(func) + ")"] += 1
            return func(*args, **kwargs)
        elif kind in (_MACHINERY, _OTHER):
            label = self._label(func)
        if label is not None or kind == _WRITE or kind == _LAYOUT:
            exempt = kind != _OTHER and self._from_launch_machinery() and \
                func._schema.name.split("::")[-1] in LAUNCH_MACHINERY
            if exempt:  # Triton moving or resetting the launch's arguments: the launch itself writes them
                return func(*args, **kwargs)
            if label is not None:
                self.ops[label] += 1
        out = func(*args, **kwargs)
        self._wrote(func, args, kwargs, out, label or self._label(func), kind)
        return out

    def _casts(self, func, args, kwargs) -> bool:
        name = func._schema.name
        src = args[0] if args else None
        if name.endswith("copy_") and len(args) > 1 and isinstance(args[1], self._tensor_type):
            return args[0].dtype != args[1].dtype
        dtype = kwargs.get("dtype")
        return dtype is not None and isinstance(src, self._tensor_type) and dtype != src.dtype

    def _wrote(self, func, args, kwargs, out, label: str, kind: int) -> None:
        """Who last wrote each storage this op wrote: its in-place targets, and its fresh outputs."""
        writer = "allocation" if kind == _ALLOC else label
        # a same-dtype layout copy keeps its source's provenance
        if kind == _LAYOUT and label == self._label(func):
            source = (args[1] if func._schema.name.endswith("copy_") and len(args) > 1
                      else args[0] if args else None)
            if isinstance(source, self._tensor_type) and self._writer.get(_storage_key(source)) == "kernel":
                writer = "kernel"
        written = [args[i] for i in self._writes.get(func, ()) if i < len(args)]
        written += [v for k, v in kwargs.items() if k == "out"]
        if not self._writes.get(func):
            written += list(out) if isinstance(out, tuple | list) else [out]
        for t in written:
            key = _storage_key(t) if isinstance(t, self._tensor_type) else 0
            if key:
                self._writer[key] = writer

    # -- launches (called by LaunchCensus's hooks) ---------------------------------------------------------

    def launch_enter(self, candidate: bool, interpreted: bool) -> None:
        self.depth += 1
        if self.active and candidate:
            self._check_mode("at a kernel launch")
        if self.active and interpreted:
            if self._launch_writes is None:
                self._launch_writes = [{}]
            else:
                self._launch_writes.append({})

    def foreign_launch(self, kernel: str) -> None:
        """A Triton kernel launched that the candidate does not define (a library's, or its own disowned):
        during forward, work that is not the candidate's, whoever then copies its result to the output."""
        if self.active:
            self.foreign[kernel[:120]] += 1

    def launch_exit(self, candidate: bool, interpreted: bool, args, kwargs, returned=None) -> None:
        self.depth -= 1
        if not self.active:
            if interpreted and self._launch_writes:
                self._launch_writes.pop()
                if not self._launch_writes:
                    self._launch_writes = None
            return
        stored = None
        if interpreted and self._launch_writes:
            stored = self._launch_writes.pop()
            if not self._launch_writes:
                self._launch_writes = None
        writer = "kernel" if candidate else "a kernel the candidate does not define"
        tensors: list = []
        self._tensors(args, tensors)
        self._tensors(kwargs, tensors)
        self._tensors(returned, tensors)
        for t in tensors:
            key = _storage_key(t)
            if not key:
                continue
            if stored is not None and t is not returned and not self._stored_into(stored, key, t):
                continue  # passed to the kernel, never stored to: read only
            self._writer[key] = writer

    def _tensors(self, value, into: list, depth: int = 0) -> None:
        if isinstance(value, self._tensor_type):
            into.append(value)
        elif depth < 3 and isinstance(value, tuple | list):
            for v in value:
                self._tensors(v, into, depth + 1)
        elif depth < 3 and isinstance(value, dict):
            for v in value.values():
                self._tensors(v, into, depth + 1)
        elif type(value).__name__ in ("TensorDescriptor", "TensorWrapper"):  # Triton's own wrappers
            base = getattr(value, "base", None)
            if isinstance(base, self._tensor_type):
                into.append(base)

    def _stored(self, pointers, mask) -> None:
        """A store of the open interpreted launch: the lowest and highest address it wrote."""
        try:
            import numpy as np

            ptrs = pointers if mask is None else pointers[np.broadcast_to(mask, pointers.shape)]
            if ptrs.size == 0:
                return
            low, high = int(ptrs.min()), int(ptrs.max())
        except Exception:  # noqa: BLE001 - an unusual store: counted as writing everything it was given
            low, high = 0, 1 << 64
        spans = self._launch_writes[-1]
        lo, hi = spans.get("span", (low, high))
        spans["span"] = (min(lo, low), max(hi, high))
        spans.setdefault("stores", []).append((low, high))

    @staticmethod
    def _stored_into(stored: dict, key: int, t) -> bool:
        try:
            end = key + t.untyped_storage().nbytes()
        except Exception:  # noqa: BLE001
            return True
        return any(low < end and high >= key for low, high in stored.get("stores", ()))

    def _check_mode(self, where: str) -> None:
        try:
            present = any(self._stack_at(i) is self._mode for i in range(self._stack_len()))
            excluded = self._excluded(self._python_key)
        except Exception as exc:  # noqa: BLE001
            self.tampered.append(f"{where}: the dispatch-mode stack could not be read ({type(exc).__name__})")
            return
        if not present:
            self.tampered.append(f"{where}: the census's dispatch mode was removed")
        elif excluded:
            self.tampered.append(f"{where}: Python dispatch was disabled")

    # -- calls ---------------------------------------------------------------------------------------------

    def call(self, fn, *args):
        """fn(*args) under the census; the outputs' provenance is checked when it returns."""
        self._writer: dict[int, str] = {}
        self.calls += 1
        mode = self._mode
        mode.__enter__()
        self.active = True
        try:
            out = fn(*args)
            self._check_mode("when forward returned")
        finally:
            self.active = False
            self._launch_writes = None
            self.depth = 0
            try:
                mode.__exit__(None, None, None)
            except Exception as exc:  # noqa: BLE001 - the candidate took the mode off the stack itself
                self.tampered.append(f"the census's dispatch mode could not be popped ({type(exc).__name__})")
        self._check_outputs(out)
        return out

    def _check_outputs(self, out) -> None:
        # exact types only: a container subclass's own methods would run here (the hand-off refuses it)
        kind = type(out)
        outputs = [out] if kind is self._tensor_type else list(out) if kind is tuple or kind is list else []
        for k, t in enumerate(outputs):
            if not isinstance(t, self._tensor_type) or t.numel() == 0 or len(self.provenance) >= 8:
                continue
            writer = self._writer.get(_storage_key(t))
            if writer != "kernel":
                what = "never written by a candidate kernel" if writer in (None, "allocation") else \
                    f"last written by {writer}"
                self.provenance.append(f"output {k}: {what}")

    def report(self) -> dict | None:
        """What the calls since the last report did (None when nothing was found), and reset."""
        allowed = [func for func, kind in self._kinds.items() if kind != _OTHER]
        self.tampered += [f"{op}: its kernels were changed after the harness started"
                          for op in self._registry.replaced(allowed)]
        found = {"ops": dict(self.ops.most_common(_MAX_NAMES)),
                 "host": dict(self.host.most_common(_MAX_NAMES)),
                 "provenance": self.provenance[:8], "tampered": self.tampered[:8],
                 "foreign": dict(self.foreign.most_common(_MAX_NAMES))}
        self._reset()
        return found if any(found.values()) else None
