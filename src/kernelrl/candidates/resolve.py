"""What each call reachable from `ModelNew.forward` calls, read from the AST (never executed): the allow-list
layer of the static rules. A call resolves to a known-safe target or becomes a finding whose
detail says what could not be verified and how to write it instead.

Known-safe: a Triton launch in any form whose kernel is traced to the module's `@triton.jit` functions
(`kernel[grid](...)`, a kernel table `TABLE[k][grid](...)`, a bound launcher `launch = kernel[grid]`, a
kernel held in an attribute, passed to a helper as an argument or returned by a factory), a `load_inline`
function, the module's own functions, classes, instances and methods (kernelrl.candidates.reach analyzes
their bodies too), allocation/view/metadata calls (`ALLOWED_TORCH_CALLS`, `TENSOR_METHODS`), Triton's
host helpers, `math`, and Python builtins, the ones that compute on tensors (`max`, `sum`, `float`, ...)
only over values shown to be host values (shapes, ints, constants). PyTorch compute is the torch-compute
rule's and is left to it here. Values are traced through bindings in the enclosing functions, the module,
attributes assigned anywhere (`self.k = kernel`), literal tables, call sites (for parameters),
`functools.partial` and factories' returns."""

from __future__ import annotations

import ast
import builtins
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice

from kernelrl.candidates.reach import ALLOWED_TORCH_CALLS, COMPUTE_METHODS, ModuleIndex, dotted_name

# tensor methods that allocate, view, describe or copy (the runtime op census's allow-list,
# kernelrl.sandbox.opcensus,
# which also decides whether a `.to`/`.float()` changes the dtype)
TENSOR_METHODS = frozenset({
    "contiguous", "view", "view_as", "reshape", "reshape_as", "flatten", "unflatten", "unsqueeze", "squeeze",
    "permute", "transpose", "t", "expand", "expand_as", "narrow", "select", "split", "chunk", "unbind",
    "movedim", "swapaxes", "swapdims", "unfold", "as_strided", "diagonal", "tensor_split", "detach", "size",
    "stride", "numel", "nelement", "dim", "ndimension", "element_size", "data_ptr", "storage_offset",
    "is_contiguous", "is_floating_point", "is_complex", "get_device", "new_empty", "new_zeros", "new_ones",
    "new_full", "new_empty_strided", "new_tensor", "zero_", "fill_", "clone", "copy_", "to", "float", "half",
    "bfloat16", "double", "int", "long", "short", "bool", "type", "type_as", "cuda", "cpu", "requires_grad_",
    "squeeze_", "unsqueeze_", "t_", "transpose_", "resize_", "as_strided_",
})
# methods of Python containers and strings that tensors do not have (a tensor method of the same name, `sort`,
# `add`, is torch-compute's to judge)
PYTHON_METHODS = frozenset({
    "append", "extend", "insert", "pop", "remove", "clear", "items", "keys", "values", "get", "setdefault",
    "update", "copy", "discard", "union", "intersection", "difference", "issubset", "join", "format",
    "startswith", "endswith", "strip", "lower", "upper", "replace", "count", "index", "__init__",
})
# methods of a Triton kernel object: a launch by another spelling, or a hook (whose function reach analyzes)
KERNEL_METHODS = frozenset({"run", "warmup", "add_pre_run_hook"})
# Python-level routes to tensor values (the census counts them at run time as rt-host-read)
HOST_READ_METHODS = frozenset({"tolist", "numpy", "item", "apply_", "map_", "map2_", "__array__",
                               "__dlpack__"})
# builtins that never compute on a tensor's values (iterating
# one yields views; its rows are checked where used)
SAFE_BUILTINS = frozenset({
    "len", "range", "enumerate", "zip", "tuple", "list", "dict", "set", "frozenset", "isinstance",
    "issubclass", "hasattr", "getattr", "type", "super", "iter", "next", "reversed", "slice", "id", "hash",
    "callable", "object", "property", "staticmethod", "classmethod", "map", "filter", "NotImplemented",
})
# builtins that compute on tensors (max(t, 0), sum(rows), float(t), print(t)) and are fine on host values
VALUE_BUILTINS = frozenset({
    "abs", "all", "any", "bool", "complex", "divmod", "float", "int", "max", "min", "pow", "round", "sorted",
    "sum", "str", "repr", "format", "print",
})
# builtins whose result is a host value whatever they are given (a tensor given to float() is a host read,
# which is that call's finding, not its result's)
HOST_RESULT_BUILTINS = frozenset({"len", "int", "float", "bool", "isinstance", "hasattr", "callable", "id",
                                  "hash", "str", "repr", "range", "type"})
HOST_ATTRIBUTES = frozenset({"shape", "ndim", "dtype", "device", "is_cuda", "layout", "requires_grad",
                             "itemsize"})
HOST_METHODS = frozenset({"size", "stride", "numel", "nelement", "dim", "ndimension", "element_size",
                          "data_ptr", "storage_offset", "is_contiguous", "is_floating_point", "is_complex",
                          "get_device"})
TRITON_CALLS = ("triton.cdiv", "triton.next_power_of_2", "triton.Config", "triton.autotune",
                "triton.heuristics", "triton.jit", "triton.language.", "triton.runtime.driver.")
TORCH_CUDA_CALLS = frozenset({"current_device", "device_count", "is_available", "get_device_properties",
                              "get_device_name", "get_device_capability", "device"})
# standard-library modules whose calls are host bookkeeping
# (a function they are given is analyzed where named)
HOST_MODULES = frozenset({"math", "functools", "itertools", "dataclasses", "typing", "collections", "enum",
                          "abc", "numbers"})
STRING_DISPATCH = frozenset({"operator.methodcaller", "operator.attrgetter"})
EXCEPTIONS = frozenset(name for name in dir(builtins) if name.endswith(("Error", "Exception", "Warning")))
MAX_DEPTH = 24  # how far values are traced through bindings and call sites


@dataclass(frozen=True)
class Target:
    """What an expression may hold: `kind` is kernel, launcher, function, class, instance, extension,
    container, qualified (an imported name's dotted path), torch-result (what a torch call returned: a tensor,
    an nn layer), builtin, method (a method name on an unresolved object) or unknown (`name` says why)."""

    kind: str
    name: str
    node: ast.AST | None = None


SAFE_KINDS = frozenset({"kernel", "launcher", "function", "class", "instance", "extension"})
FUNCTION = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda


class Resolver:
    """Traces values in one candidate module: `targets(expr)` (what an expression may hold) and
    `is_host(expr)` (whether it is provably a host value, not a tensor)."""

    def __init__(self, mod: ModuleIndex) -> None:
        self.mod = mod
        self.parents: dict[int, ast.AST] = {}
        for node in ast.walk(mod.tree):
            for child in ast.iter_child_nodes(node):
                self.parents[id(child)] = node
        self.model = mod.classes.get("ModelNew")
        self.held: dict[str, list[ast.expr]] = {}  # attribute name -> values assigned to it anywhere
        for node in ast.walk(mod.tree):
            targets = node.targets if isinstance(node, ast.Assign) else []
            for target in targets:
                if isinstance(target, ast.Attribute):
                    self.held.setdefault(target.attr, []).append(node.value)
                elif isinstance(target, ast.Name) and isinstance(self.parents.get(id(node)), ast.ClassDef):
                    self.held.setdefault(target.id, []).append(node.value)  # a class attribute
        self.methods = {name for cls in mod.classes.values() for name in mod.methods(cls)}
        self._locals: dict[int, dict[str, list[ast.AST]]] = {}
        self._busy: set[tuple[str, int]] = set()

    # -- scopes ---------------------------------------------------------------------------------------------
    def scope(self, node: ast.AST) -> FUNCTION | None:
        """The innermost function or lambda around `node` (None: module level or a class body)."""
        parent = self.parents.get(id(node))
        while parent is not None and not isinstance(parent, FUNCTION):
            parent = self.parents.get(id(parent))
        return parent

    def bindings(self, fn: FUNCTION) -> dict[str, list[ast.AST]]:
        """name -> the nodes that bind it in `fn` (parameters, assignments, loops,
        nested defs, imports), not in the functions nested in it (comprehension
        variables count: they live in fn's frame since Python 3.12)."""
        if id(fn) in self._locals:
            return self._locals[id(fn)]
        found: dict[str, list[ast.AST]] = {}
        args = fn.args
        for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
            if arg is not None:
                found.setdefault(arg.arg, []).append(arg)
        todo = list(fn.body) if isinstance(fn.body, list) else [fn.body]
        while todo:
            node = todo.pop()
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                found.setdefault(node.name, []).append(node)
                continue
            if isinstance(node, ast.Lambda):
                continue
            if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                found.setdefault(node.id, []).append(node)
            elif isinstance(node, ast.alias):
                found.setdefault((node.asname or node.name).split(".")[0], []).append(node)
            todo.extend(ast.iter_child_nodes(node))
        self._locals[id(fn)] = found
        return found

    def lookup(self, name: ast.Name) -> tuple[list[ast.AST], FUNCTION | None] | None:
        """The nodes binding `name` where it is read, and their
        function (None: module level); None if unbound."""
        fn = self.scope(name)
        while fn is not None:
            if name.id in (bound := self.bindings(fn)):
                return bound[name.id], fn
            fn = self.scope(fn)
        return None

    def _enter(self, what: str, node: ast.AST) -> bool:
        key = (what, id(node))
        if key in self._busy or len(self._busy) > MAX_DEPTH:
            return False
        self._busy.add(key)
        return True

    # -- what an expression may hold ------------------------------------------------------------------------
    def targets(self, expr: ast.AST) -> list[Target]:
        if not self._enter("targets", expr):
            return []  # a cycle adds nothing the other bindings do not
        try:
            return self._targets(expr)
        finally:
            self._busy.discard(("targets", id(expr)))

    def _targets(self, expr: ast.AST) -> list[Target]:
        mod = self.mod
        if isinstance(expr, ast.Name):
            local = self.lookup(expr)
            if local is not None:
                return [t for node in local[0] for t in self._binding(node, expr.id)]
            if expr.id in mod.kernels:
                return [Target("kernel", expr.id)]
            if expr.id in mod.functions:
                return [Target("function", expr.id)]
            if expr.id in mod.classes:
                return [Target("class", expr.id, mod.classes[expr.id])]
            if expr.id in mod.extensions:
                return [Target("extension", expr.id)]
            values = [node.value for node in mod.tree.body if isinstance(node, ast.Assign) and
                      any(isinstance(t, ast.Name) and t.id == expr.id for t in node.targets)]
            if values:
                return [t for v in values for t in self.targets(v)]
            if expr.id in mod.aliases:
                return [Target("qualified", mod.aliases[expr.id])]
            if hasattr(builtins, expr.id):
                return [Target("builtin", expr.id)]
            return [Target("unknown", f"{expr.id}, a name the module does not define")]
        if isinstance(expr, ast.Attribute):
            return self._attribute(expr)
        if isinstance(expr, ast.Subscript):
            return self._subscript(expr)
        if isinstance(expr, ast.Call):
            return self._result(expr)
        if isinstance(expr, ast.IfExp):
            return [*self.targets(expr.body), *self.targets(expr.orelse)]
        if isinstance(expr, ast.Lambda):
            return [Target("function", "<lambda>", expr)]
        if isinstance(expr, ast.Dict | ast.List | ast.Tuple | ast.Set):
            return [Target("container", type(expr).__name__, expr)]
        if isinstance(expr, ast.NamedExpr):
            return self.targets(expr.value)
        return [Target("unknown", f"a computed value ({type(expr).__name__})")]

    def _binding(self, node: ast.AST, name: str) -> list[Target]:
        """What `name` holds from one binding node in a function."""
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            return [Target("function", node.name, node)]
        if isinstance(node, ast.ClassDef):
            return [Target("class", node.name, node)]
        if isinstance(node, ast.alias):
            return [Target("qualified", node.name)]
        if isinstance(node, ast.arg):
            return self._argument(node)
        parent = self.parents.get(id(node))
        if isinstance(parent, ast.Assign | ast.AnnAssign | ast.NamedExpr) and parent.value is not None:
            return self.targets(parent.value)
        index = None
        # `for kernel, dst in ((k1, a), ...)`
        if isinstance(parent, ast.Tuple | ast.List) and node in parent.elts:
            index, node, parent = parent.elts.index(node), parent, self.parents.get(id(parent))
        if isinstance(parent, ast.For | ast.comprehension) and parent.target is node:
            items = self.targets(parent.iter)  # a loop over a literal table holds its elements
            if items and all(t.kind == "container" for t in items):
                elements = [e for c in items for e in _elements(c.node)]
                if index is None:
                    return [t for e in elements for t in self.targets(e)]
                if all(isinstance(e, ast.Tuple | ast.List) and len(e.elts) > index for e in elements):
                    return [t for e in elements for t in self.targets(e.elts[index])]
            return [Target("unknown", f"{name}, a loop variable")]
        if isinstance(parent, ast.Assign) and index is not None \
                and isinstance(parent.value, ast.Tuple | ast.List) \
                and len(parent.value.elts) > index:
            return self.targets(parent.value.elts[index])  # `kernel, block = relu_kernel, 1024`
        return [Target("unknown", f"{name}, bound by unpacking or a with/except clause")]

    def _argument(self, arg: ast.arg) -> list[Target]:
        """What a parameter holds: `self`/`cls` of a method, or what every call site in the module passes."""
        fn = self.parents.get(id(arg))
        fn = self.parents.get(id(fn))  # arg -> arguments -> the function
        owner = self.parents.get(id(fn))
        if isinstance(owner, ast.ClassDef) and isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef) and \
                fn.args.args[:1] and fn.args.args[0] is arg:
            is_cls = any(dotted_name(d) == "classmethod" for d in fn.decorator_list)
            if not any(dotted_name(d) == "staticmethod" for d in fn.decorator_list):
                return [Target("class" if is_cls else "instance", owner.name, owner)]
        passed = self.passed(fn, arg) if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef) else None
        if not passed:
            return [Target("unknown", f"{arg.arg}, an argument whose callers the module does not show")]
        return [t for expr in passed for t in self.targets(expr)]

    def passed(self, fn: ast.FunctionDef | ast.AsyncFunctionDef, arg: ast.arg) -> list[ast.expr] | None:
        """The expressions every call of `fn` in the module passes for `arg` (its default where a call omits
        it); None where a call cannot be matched (star arguments) or there is none (forward, grids, hooks)."""
        if self.model is not None and self.parents.get(id(fn)) is self.model:
            return None  # forward's inputs and the constructor's arguments come from the harness
        positional = [*fn.args.posonlyargs, *fn.args.args]
        index = next((i for i, a in enumerate(positional) if a is arg), None)
        defaults = dict(zip([a.arg for a in positional[len(positional) - len(fn.args.defaults):]],
                            fn.args.defaults, strict=True))
        defaults.update({a.arg: d for a, d in zip(fn.args.kwonlyargs, fn.args.kw_defaults, strict=True) if d})
        is_method = isinstance(self.parents.get(id(fn)), ast.ClassDef)
        callees = {id(n.func) for n in ast.walk(self.mod.tree) if isinstance(n, ast.Call)}
        if any(isinstance(n, ast.Name | ast.Attribute) and isinstance(n.ctx, ast.Load)
               and id(n) not in callees and (n.id if isinstance(n, ast.Name) else n.attr) == fn.name
               for n in ast.walk(self.mod.tree)):
            # also used as a value (`f = helper`, `partial(helper, ...)`): callers the module hides
            return None
        found: list[ast.expr] = []
        for call in ast.walk(self.mod.tree):
            if not isinstance(call, ast.Call):
                continue
            name = dotted_name(call.func) or ""
            last = name.split(".")[-1]
            if fn.name == "__init__" and is_method:
                owner = self.parents.get(id(fn))
                calls_it = last == owner.name or (last == "__init__" and "super" in ast.dump(call.func))
                shift = 1
            else:
                calls_it = last == fn.name and (is_method or "." not in name)
                shift = 1 if is_method and "." in name else 0
            if not calls_it:
                continue
            if any(isinstance(a, ast.Starred) for a in call.args) \
                    or any(k.arg is None for k in call.keywords):
                return None
            keyword = next((k.value for k in call.keywords if k.arg == arg.arg), None)
            if keyword is not None:
                found.append(keyword)
            elif index is not None and 0 <= index - shift < len(call.args):
                found.append(call.args[index - shift])
            elif arg.arg in defaults:
                found.append(defaults[arg.arg])
            else:
                return None
        return found or None

    def _attribute(self, expr: ast.Attribute) -> list[Target]:
        owner = expr.value
        if isinstance(owner, ast.Call) and dotted_name(owner.func) == "super":
            return [Target("function", expr.attr)]  # a base class's method (reach analyzes the module's ones)
        bases = self.targets(owner)
        if bases and all(t.kind == "qualified" for t in bases):
            return [Target("qualified", f"{t.name}.{expr.attr}") for t in bases]
        if any(t.kind == "extension" for t in bases):
            return [Target("extension", expr.attr)]
        if bases and all(t.kind == "kernel" for t in bases) and expr.attr in KERNEL_METHODS:
            # kernel.run(...): a launch by another spelling
            return [Target("launcher", t.name) for t in bases]
        if bases and all(t.kind in ("instance", "class") for t in bases):
            cls = [self.mod.lineage(t.node) for t in bases if isinstance(t.node, ast.ClassDef)]
            kernel = self.mod.kernels.get(expr.attr)
            if kernel is not None and any(kernel in c.body for line in cls for c in line):
                return [Target("kernel", expr.attr)]  # a kernel defined in the class body: self.k[grid]
            if any(expr.attr in self.mod.methods(c) for line in cls for c in line):
                return [Target("function", expr.attr)]
        if expr.attr in self.held:
            return [t for v in self.held[expr.attr] for t in self.targets(v)]
        if expr.attr in self.methods and expr.attr not in HOST_READ_METHODS:
            return [Target("function", expr.attr)]  # some module class's method: reach analyzes it
        return [Target("method", expr.attr)]

    def _subscript(self, expr: ast.Subscript) -> list[Target]:
        bases = self.targets(expr.value)
        found: list[Target] = []
        for base in bases:
            if base.kind == "kernel":
                found.append(Target("launcher", base.name))  # kernel[grid]
            elif base.kind == "container" and isinstance(base.node, ast.Dict | ast.List | ast.Tuple):
                found.extend(t for e in _elements(base.node) for t in self.targets(e))
            elif base.kind != "launcher":
                return [Target("unknown", f"{ast.unparse(expr)}, a subscript of something other than a "
                                          "kernel or a literal table of the module")]
        return found or [Target("unknown", f"{ast.unparse(expr)}, a subscript")]

    def _result(self, call: ast.Call) -> list[Target]:
        """What a call returns, as a callable: an instance of a module class, a factory's returned function, a
        partial's function; anything else is unknown."""
        if (built := self.mod.built_class(call)) is not None:
            return [Target("instance", built.name, built)]
        if dotted_name(call.func) == "getattr" and "getattr" not in self.mod.bound and len(call.args) >= 2:
            name = call.args[1]
            if isinstance(name, ast.Constant) and isinstance(name.value, str):  # getattr(obj, "m") is obj.m
                return self._attribute(ast.Attribute(value=call.args[0], attr=name.value, ctx=ast.Load()))
            return [Target("unknown", f"a method named by a string built at run time ({ast.unparse(call)})")]
        funcs = self.targets(call.func)
        found: list[Target] = []
        for func in funcs:
            if func.kind == "class":
                found.append(Target("instance", func.name, func.node))
            elif func.kind == "qualified" and call.args and \
                    func.name in ("functools.partial", "torch.library.wrap_triton"):
                found.extend(self.targets(call.args[0]))  # wrap_triton(kernel)[grid]: the kernel's launch
            elif func.kind == "qualified" and func.name.startswith("torch."):
                # calling an nn layer is torch-compute's finding
                found.append(Target("torch-result", func.name))
            elif func.kind == "function" and isinstance(func.node, ast.FunctionDef | ast.AsyncFunctionDef):
                found.extend(t for r in _returns(func.node) for t in self.targets(r))
            elif func.kind == "function" and func.name in self.mod.functions:
                found.extend(t for r in _returns(self.mod.functions[func.name]) for t in self.targets(r))
            else:
                return [Target("unknown", f"the result of {ast.unparse(call.func)}(...)")]
        return found or [Target("unknown", f"the result of {ast.unparse(call.func)}(...)")]

    # -- host values ----------------------------------------------------------------------------------------
    def is_host(self, expr: ast.AST) -> bool:
        """Whether `expr` is provably a host value (a shape, an int, a constant, a dtype), never a tensor. A
        cycle (`n = n // 2`) is taken as host: the other bindings decide."""
        if not self._enter("host", expr):
            return True
        try:
            return self._is_host(expr)
        finally:
            self._busy.discard(("host", id(expr)))

    def _is_host(self, expr: ast.AST) -> bool:
        if isinstance(expr, ast.Constant | ast.JoinedStr):
            return True
        if isinstance(expr, ast.Tuple | ast.List | ast.Set):
            return all(self.is_host(e) for e in expr.elts)
        if isinstance(expr, ast.BinOp):
            return self.is_host(expr.left) and self.is_host(expr.right)
        if isinstance(expr, ast.UnaryOp):
            return self.is_host(expr.operand)
        if isinstance(expr, ast.BoolOp | ast.Compare):
            parts = expr.values if isinstance(expr, ast.BoolOp) else [expr.left, *expr.comparators]
            return all(self.is_host(p) for p in parts)
        if isinstance(expr, ast.IfExp):
            return self.is_host(expr.body) and self.is_host(expr.orelse)
        if isinstance(expr, ast.Subscript | ast.Starred):
            return self.is_host(expr.value)
        if isinstance(expr, ast.Attribute):
            if expr.attr in HOST_ATTRIBUTES or self.is_host(expr.value):
                return True
            return expr.attr in self.held and all(self.is_host(v) for v in self.held[expr.attr])
        if isinstance(expr, ast.Call):
            return self._host_result(expr)
        if isinstance(expr, ast.Name):
            local = self.lookup(expr)
            if local is None:
                values = [n.value for n in self.mod.tree.body if isinstance(n, ast.Assign) and
                          any(isinstance(t, ast.Name) and t.id == expr.id for t in n.targets)]
                return all(self.is_host(v) for v in values)  # a kernel, function, class, import or constant
            return all(self._host_binding(node) for node in local[0])
        return False

    def _host_result(self, call: ast.Call) -> bool:
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr in HOST_METHODS:
            return True
        args = [*call.args, *(k.value for k in call.keywords)]
        for target in self.targets(func):
            if target.kind == "builtin" and target.name in HOST_RESULT_BUILTINS:
                continue
            host_args = all(self.is_host(a) for a in args)
            if target.kind == "builtin" and target.name in VALUE_BUILTINS and host_args:
                continue
            name = target.name if target.kind == "qualified" else ""
            if name.startswith(("triton.", "math.")) or name in ("torch.finfo", "torch.iinfo",
                                                                 "torch.device") or \
                    (name.split(".")[0] in ("numpy", "operator") and host_args):
                continue
            return False
        return True

    def _host_binding(self, node: ast.AST) -> bool:
        if isinstance(node, ast.arg):
            fn = self.parents.get(id(self.parents.get(id(node))))
            if self.model is not None and isinstance(fn, ast.FunctionDef) and fn.name == "__init__" and \
                    self.parents.get(id(fn)) is self.model:
                return True  # the constructor's arguments: the problem's init inputs, host data
            if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef) and fn.args.args[:1] and \
                    fn.args.args[0] is node and isinstance(self.parents.get(id(fn)), ast.ClassDef):
                return True  # self or cls
            passed = self.passed(fn, node) if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef) else None
            return passed is not None and all(self.is_host(e) for e in passed)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.alias):
            return True
        parent = self.parents.get(id(node))
        if isinstance(parent, ast.Assign | ast.AnnAssign | ast.AugAssign | ast.NamedExpr) \
                and parent.value is not None:
            return self.is_host(parent.value)
        if isinstance(parent, ast.For | ast.comprehension):
            return self.is_host(parent.iter) or isinstance(parent.iter, ast.Call) and \
                dotted_name(parent.iter.func) == "range"
        # unpacking: `M, K = x.shape`, `for i, n in enumerate(dims)`
        if isinstance(parent, ast.Tuple | ast.List):
            while isinstance(parent, ast.Tuple | ast.List | ast.Starred):
                parent = self.parents.get(id(parent))
            if isinstance(parent, ast.Assign | ast.AnnAssign):
                return parent.value is not None and self.is_host(parent.value)
            return isinstance(parent, ast.For | ast.comprehension) and self.is_host(parent.iter)
        return False


def _elements(node: ast.AST | None) -> list[ast.expr]:
    if isinstance(node, ast.Dict):
        return [v for v in node.values if v is not None]
    return list(node.elts) if isinstance(node, ast.List | ast.Tuple | ast.Set) else []


def _returns(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.expr]:
    """The expressions `fn` itself returns (not its nested functions')."""
    found, todo = [], list(fn.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Return) and node.value is not None:
            found.append(node.value)
        elif not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            todo.extend(ast.iter_child_nodes(node))
    return found


@dataclass
class CallReport:
    findings: list[tuple[str, int, str]]  # (rule id, line, detail), at most one per call
    # kernels that calls resolved as launches launch (a factory's launcher, a kernel argument)
    launched: set[str]


def resolve_calls(mod: ModuleIndex, bodies: list[ast.AST]) -> CallReport:
    """Every call in the reachable bodies: the ones that do not resolve to a
    known-safe target (and getattr with a name built at run time on anything
    but self/cls) as findings, the launches it traced as launched kernels."""
    resolver = Resolver(mod)
    report = CallReport([], set())
    seen: set[int] = set()
    for body in bodies:
        for node in ast.walk(body):
            if not isinstance(node, ast.Call) or id(node) in seen:
                continue
            seen.add(id(node))
            targets = resolver.targets(node.func)
            report.launched.update(t.name for t in targets if t.kind == "launcher")
            report.findings.extend((rule, node.lineno, detail) for rule, detail in
                                   islice(_check_call(resolver, node, targets), 1))
    return report


def _dynamic_getattr(node: ast.AST) -> bool:
    """getattr(obj, <a name computed at run time>) on anything but self/cls (where a submodule looked up by a
    built name, `getattr(self, f"layer{i}")`, is plausibly honest and its call only unresolved)."""
    return isinstance(node, ast.Call) and dotted_name(node.func) == "getattr" and len(node.args) >= 2 and \
        not isinstance(node.args[1], ast.Constant) and dotted_name(node.args[0]) not in ("self", "cls")


def _check_call(r: Resolver, call: ast.Call, targets: list[Target]) -> Iterator[tuple[str, str]]:
    text = ast.unparse(call.func)
    args = [*call.args, *(k.value for k in call.keywords)]
    if _dynamic_getattr(call):
        yield "dynamic-attribute", f"getattr({ast.unparse(call.args[0])}, {ast.unparse(call.args[1])})"
    if _dynamic_getattr(call.func):
        return  # the getattr's own finding says it
    for target in targets:
        kind, name = target.kind, target.name
        if kind in SAFE_KINDS or kind in ("container", "torch-result"):
            continue
        if kind == "unknown":
            yield "unresolved-call", f"{text}(...) calls {name}"
        elif kind == "builtin":
            if name in VALUE_BUILTINS and not all(r.is_host(a) for a in args):
                yield "unknown-call", f"{text}(...) over values that may be tensors"
            elif name not in SAFE_BUILTINS | VALUE_BUILTINS | EXCEPTIONS:
                yield "unknown-call", f"{text}(...), a builtin not on the allow-list"
        elif kind == "method":
            if name in HOST_READ_METHODS:
                yield "host-read", f".{name}(...)"
            # compute: torch-compute's finding
            elif name not in TENSOR_METHODS | PYTHON_METHODS | COMPUTE_METHODS:
                yield "unknown-call", f".{name}(...) is no known allocation, view or metadata method"
        elif kind == "qualified":
            yield from _check_qualified(r, name, text, args)


def _check_qualified(r: Resolver, name: str, text: str, args: list[ast.expr]) -> Iterator[tuple[str, str]]:
    root, last = name.split(".")[0], name.split(".")[-1]
    if name in STRING_DISPATCH:
        yield "dynamic-attribute", f"{text}(...) names a method by a string"
    elif root == "torch":
        if name.startswith("torch.cuda.") and last not in TORCH_CUDA_CALLS:
            yield "unknown-call", f"{text}(...) ({name}) is not on the allow-list"
        # other torch calls: allowed (ALLOWED_TORCH_CALLS) or the torch-compute rule's finding
    elif root == "triton":
        if not name.startswith(TRITON_CALLS):
            yield "unknown-call", f"{text}(...) ({name}) is not one of Triton's host helpers"
    elif root in ("numpy", "operator"):
        if not all(r.is_host(a) for a in args):
            yield "unknown-call", f"{text}(...) ({name}) over values that may be tensors"
    elif root not in HOST_MODULES and last not in ALLOWED_TORCH_CALLS:
        yield "unknown-call", f"{text}(...) ({name}) is a library call the analyzer cannot verify"
