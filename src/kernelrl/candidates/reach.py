"""The candidate module's index and what runs from `ModelNew.forward`, read from its AST (never executed): the
facts the static rules (kernelrl.candidates.rules) check. Reachability starts at forward and follows calls and
references through module-level functions, methods, module-defined helper classes, kernels' decorators and
what called module-level names and attributes were bound to (over-approximating: a method name reaches every
method of that name)."""

from __future__ import annotations

import ast

# torch.* / F.* calls that only allocate, reshape or describe tensors; every other torch call is compute
ALLOWED_TORCH_CALLS = frozenset({
    "empty", "empty_like", "empty_strided", "zeros", "zeros_like", "ones", "ones_like", "full", "full_like",
    "arange", "tensor", "as_tensor", "as_strided", "from_numpy", "device", "dtype", "finfo", "iinfo", "Size",
    "is_tensor", "is_floating_point", "no_grad", "inference_mode", "get_device", "current_device",
    "device_count", "is_available", "get_device_properties", "numel", "result_type", "promote_types",
    # the function forms of views (their method forms are no compute either); a view that copies is a layout
    # copy, which the runtime census sees
    "reshape", "flatten", "unflatten", "split", "tensor_split", "hsplit", "vsplit", "dsplit", "chunk",
    "unbind", "narrow", "select", "squeeze", "unsqueeze", "transpose", "swapaxes", "swapdims", "permute",
    "movedim", "t", "diagonal", "view_as_real", "view_as_complex",
})
# PyTorch's documented ways to ship a kernel as an operator: no compute themselves; the decorated function's
# body is reachable like any other, and the runtime census runs it in the operator's place
# (sandbox.op_registry)
TORCH_LIBRARY_WRAPPERS = frozenset({"torch.library.triton_op", "torch.library.custom_op",
                                    "torch.library.wrap_triton"})
# tensor methods that compute (a method call with one of these names is treated as PyTorch compute)
COMPUTE_METHODS = frozenset({
    "sum", "mean", "max", "min", "amax", "amin", "argmax", "argmin", "prod", "cumsum", "cumprod", "softmax",
    "log_softmax", "matmul", "mm", "bmm", "addmm", "baddbmm", "addmv", "mv", "dot", "einsum", "relu", "relu_",
    "gelu", "silu", "sigmoid", "tanh", "exp", "exp_", "log", "log1p", "sqrt", "rsqrt", "pow", "norm", "var",
    "std", "topk", "sort", "clamp", "clamp_", "clip", "abs", "sin", "cos", "erf", "add", "add_", "sub",
    "sub_", "mul", "mul_", "div", "div_", "addcmul", "maximum", "minimum", "logsumexp", "layer_norm",
    "conv1d", "conv2d", "linear", "masked_fill", "masked_fill_", "where", "lerp", "square", "reciprocal",
    "neg", "cross_entropy", "mse_loss", "gather", "scatter", "scatter_add", "index_select", "embedding",
    "baddbmm_", "logical_and", "logical_or", "eq", "ne", "gt", "lt", "ge", "le", "all", "any",
    "count_nonzero", "group_norm", "batch_norm", "avg_pool2d", "max_pool2d", "adaptive_avg_pool2d",
    "scaled_dot_product_attention", "clamp_min", "clamp_min_", "clamp_max", "clamp_max_", "softplus",
    "hardtanh", "elu", "leaky_relu", "sigmoid_", "tanh_", "floor", "ceil", "round", "sign", "trunc", "frac",
    "fmod", "remainder",
})
# triton's decorators that make a kernel
TRITON_JIT = frozenset({"triton.jit", "triton.language.jit", "triton.autotune", "triton.heuristics"})
# nn layers whose call runs PyTorch compute (nn.Parameter and containers are fine)
NN_CONTAINERS = frozenset({"Parameter", "ParameterList", "ParameterDict", "ModuleList", "ModuleDict",
                           "Identity"})


def dotted_name(node: ast.AST) -> str | None:
    """'torch.nn.functional.relu' for the expression `torch.nn.functional.relu` (None if not a name chain)."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def is_jit(fn: ast.FunctionDef) -> bool:
    for deco in fn.decorator_list:
        target = deco.func if isinstance(deco, ast.Call) else deco
        name = dotted_name(target) or ""
        if name.split(".")[-1] in ("jit", "autotune", "heuristics") and ("triton" in name or name == "jit"):
            return True
    return False


def python_containers(tree: ast.Module) -> set[str]:
    """Names only ever bound to a new Python set, list or dict (`seen = set()`), anywhere in the module: their
    .add(...) or .sort() is no tensor method. A name bound any other way anywhere (a parameter, a loop, an
    import, a tensor, `del`) does not count, nor does any once `set`, `list` or `dict` themselves are rebound.
    Attributes count as `self.NAME` under the same rule (`container_attributes`)."""
    bindings = name_bindings(tree)
    bound = {name for name, _ in bindings}
    if "*" in bound:
        return set()
    builders = _container_targets(tree, bound)
    names = bound - {name for name, node in bindings if id(node) not in builders}
    return names | container_attributes(tree, builders, bound, names)


def _new_container(value: ast.expr | None, bound: set[str]) -> bool:
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
        return value.func.id in ("set", "list", "dict") and value.func.id not in bound
    return isinstance(value, ast.Set | ast.List | ast.Dict | ast.SetComp | ast.ListComp | ast.DictComp)


def _container_targets(tree: ast.Module, bound: set[str]) -> set[int]:
    """ids of the assignment targets (names and attributes) whose value is a new set, list or dict."""
    return {id(target) for node in ast.walk(tree) if isinstance(node, ast.Assign | ast.AnnAssign)
            and _new_container(node.value, bound)
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target])}


# calls that set an attribute by its name as a string
# (`setattr(self, "seen", t)`, `register_buffer("seen", t)`)
NAMED_SETTERS = frozenset({"setattr", "__setattr__", "register_buffer", "register_parameter", "add_module",
                           "register_module"})


def container_attributes(tree: ast.Module, builders: set[int], bound: set[str], names: set[str]) -> set[str]:
    """`self.X` for the attributes X only ever set to a new set, list or dict (`self.seen = set()`),
    anywhere in the module. Any other way X could be set disqualifies it: another assignment, unpacking,
    augmented assignment or `del` of any `.X`; a plain name X bound otherwise (a class attribute, a method, a
    property); the string "X" anywhere (setattr, register_buffer, `__dict__["X"]`). A setter whose name is
    not a string literal, or any `__dict__` or `vars(...)`, disqualifies every attribute."""
    stored: set[str] = set()
    other: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            if node.attr == "__dict__":
                return set()
            if not isinstance(node.ctx, ast.Load):
                (stored if id(node) in builders else other).add(node.attr)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            other.add(node.value)
        elif isinstance(node, ast.Call):
            called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if called == "vars":
                return set()
            if called in NAMED_SETTERS:
                if not any(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in node.args[:2]):
                    return set()
    return {f"self.{x}" for x in stored - other if x not in bound or x in names}


def name_bindings(tree: ast.Module) -> list[tuple[str, ast.AST]]:
    """(name, the node that binds it) for every binding of a plain name in the module, at any depth."""
    bindings: list[tuple[str, ast.AST]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bindings.append((node.id, node))
        elif isinstance(node, ast.arg):
            bindings.append((node.arg, node))
        elif isinstance(node, ast.alias):
            bindings.append(((node.asname or node.name).split(".")[0], node))  # `*` binds unknown names
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bindings.append((node.name, node))
        elif isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar | ast.MatchMapping):
            name = node.rest if isinstance(node, ast.MatchMapping) else node.name
            if name:
                bindings.append((name, node))
    return bindings


class ModuleIndex:
    """Index of the candidate module: functions, classes, kernels, imports, extension handles."""

    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.functions: dict[str, ast.FunctionDef] = {}
        self.classes: dict[str, ast.ClassDef] = {}
        self.kernels: dict[str, ast.FunctionDef] = {}
        self.aliases: dict[str, str] = {}  # local name -> imported module path
        self.extensions: set[str] = set()  # names bound to load_inline / load results
        # names and self.X only ever bound to a new set, list or dict
        self.containers = python_containers(tree)
        counts: dict[str, int] = {}
        for name, _ in name_bindings(tree):
            counts[name] = counts.get(name, 0) + 1
        self.bound = set(counts)  # every plain name bound anywhere in the module
        self.bound_once = {name for name, n in counts.items() if n == 1}  # e.g. a class name never rebound
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                (self.kernels if is_jit(node) else self.functions)[node.name] = node
            elif isinstance(node, ast.ClassDef):
                self.classes[node.name] = node
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    local = alias.asname or alias.name.split(".")[0]
                    self.aliases[local] = alias.name if alias.asname else alias.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom) and node.module:
                for alias in node.names:
                    self.aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        for node in tree.body:  # module-level bindings: extension handles, jit(...) kernels, aliases
            if not isinstance(node, ast.Assign):
                continue
            names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            if isinstance(node.value, ast.Call):
                called = self.resolve(dotted_name(node.value.func) or "")
                if called.startswith("torch.utils.cpp_extension.") \
                        and called.split(".")[-1] in ("load_inline", "load"):
                    self.extensions.update(names)
                elif called in ("triton.jit", "triton.language.jit") and node.value.args:
                    impl = dotted_name(node.value.args[0])
                    for name in names:
                        self.kernels[name] = self.functions.pop(impl, None) or self.kernels.get(impl) or node
            elif (dotted := dotted_name(node.value)) is not None:
                for name in names:  # `_act = torch.relu`, `cuda = torch.cuda`
                    if name not in self.aliases:
                        self.aliases[name] = self.resolve(dotted)
        # kernels defined in a class body (`@staticmethod @triton.jit def k(...)`, launched as self.k[grid]):
        # only a decorator that resolves to triton's own counts here, not a module's own `jit`
        for cls in self.classes.values():
            for stmt in cls.body:
                if isinstance(stmt, ast.FunctionDef) and stmt.name not in self.kernels and any(
                        self._decorator(d) in TRITON_JIT for d in stmt.decorator_list):
                    self.kernels[stmt.name] = stmt

    def _decorator(self, decorator: ast.expr) -> str:
        """The full name a decorator resolves to (`triton.jit` for `@jit` after `from triton import jit`)."""
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        return self.resolve(dotted_name(target) or "")

    def built_class(self, value: ast.expr | None) -> ast.ClassDef | None:
        """The module-defined class an expression builds: `Helper(...)`, or a factory on it,
        `Helper.create(...)` (a classmethod or staticmethod is taken to return an instance of its class)."""
        func = value.func if isinstance(value, ast.Call) else None
        if isinstance(func, ast.Attribute):
            func = func.value
        return self.classes.get(func.id) if isinstance(func, ast.Name) else None

    def helper_attributes(self) -> set[str]:
        """Attribute names only ever bound (`x.attr = value`, anywhere) to an instance of a module-defined
        class: `self.norm(x)` with `self.norm = TritonRMSNorm(d)` calls that helper, not the tensor method
        `.norm`. An attribute also bound any other way (unpacking, a loop, another value, a class-level name)
        does not count."""
        good: set[str] = set()
        bad: set[str] = set()
        direct = {id(t) for n in ast.walk(self.tree) if isinstance(n, ast.Assign) and
                  (built := self.built_class(n.value)) is not None and built.name in self.bound_once
                  for t in n.targets if isinstance(t, ast.Attribute)}
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Load):
                (good if id(node) in direct else bad).add(node.attr)
            elif isinstance(node, ast.ClassDef):  # class-level names are attributes of its instances too
                for stmt in node.body:
                    if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                        bad.add(stmt.name)
                    else:
                        bad.update(t.id for t in ast.walk(stmt) if isinstance(t, ast.Name) and
                                   not isinstance(t.ctx, ast.Load))
        return good - bad

    def lineage(self, cls: ast.ClassDef) -> list[ast.ClassDef]:
        """The class and its module-defined base classes, recursively."""
        found, todo = [], [cls]
        while todo:
            c = todo.pop()
            if all(c is not f for f in found):
                found.append(c)
                todo.extend(self.classes[b.id] for b in c.bases
                            if isinstance(b, ast.Name) and b.id in self.classes)
        return found

    def resolve(self, dotted: str) -> str:
        head, _, rest = dotted.partition(".")
        full = self.aliases.get(head, head)
        return f"{full}.{rest}" if rest else full

    def methods(self, cls: ast.ClassDef) -> dict[str, ast.FunctionDef]:
        """The class's own methods, without the kernels defined in its body (no host code)."""
        return {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
                and self.kernels.get(n.name) is not n}

    def nn_layers(self, cls: ast.ClassDef) -> dict[str, str]:
        """self.<attr> = nn.<Layer>(...) or = <torch function> in the class: attr -> what runs when called."""
        layers = {}
        for node in ast.walk(cls):
            if not isinstance(node, ast.Assign):
                continue
            if isinstance(node.value, ast.Call):
                full = self.resolve(dotted_name(node.value.func) or "")
                if not (full.startswith("torch.nn.") and full.split(".")[-1] not in NN_CONTAINERS and
                        not full.startswith("torch.nn.functional")):
                    continue
            else:  # self.act = F.softmax
                full = self.resolve(dotted_name(node.value) or "")
                if not full.startswith("torch.") or full.split(".")[-1] in ALLOWED_TORCH_CALLS:
                    continue
            for target in node.targets:
                if isinstance(target, ast.Attribute):
                    layers[target.attr] = full.removeprefix("torch.")
        return layers


def launchers(body: ast.AST) -> dict[str, ast.expr]:
    """`launch = kernel[grid]` in body: name -> the subscript it is bound to (a call of it is a launch)."""
    return {t.id: n.value for n in ast.walk(body)
            if isinstance(n, ast.Assign) and isinstance(n.value, ast.Subscript)
            for t in n.targets if isinstance(t, ast.Name)}


def called(call: ast.Call, bound: dict[str, ast.expr]) -> ast.expr:
    """What `call` calls, through the launchers bound in its body; a subscript is a launch (kernel[grid](...),
    TABLE[k][grid](...), launch(...) with launch = kernel[grid])."""
    return bound.get(call.func.id, call.func) if isinstance(call.func, ast.Name) else call.func


def reachable(mod: ModuleIndex) -> tuple[list[ast.AST], set[str]]:
    """Function/method bodies reachable from ModelNew.forward, and the kernels they launch."""
    model = mod.classes.get("ModelNew")
    if model is None:
        return [], set()
    starts = _entry_points(mod, model)
    if not starts:
        return [], set()
    walk = _Reach(mod)
    # a kernel's decorators run candidate code at launch (autotune hooks and pruners, heuristics' lambdas),
    # and so does a hook registered on it (`kernel.add_pre_run_hook(fn)`, wherever that call is)
    hooks = [n for n in ast.walk(mod.tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
             and n.func.attr == "add_pre_run_hook"]
    decorators = [d for k in mod.kernels.values() for d in getattr(k, "decorator_list", [])]
    walk.queue = [*starts, *hooks, *decorators]
    while walk.queue:
        fn = walk.queue.pop()
        if id(fn) not in walk.seen:
            walk.visit(fn)
    # `k = a_kernel if c else b_kernel; k[grid](...)`: the kernels it can hold count
    if walk.subscript_launch:
        walk.launched |= _kernels_referenced(mod, [*walk.bodies, model])
    return walk.bodies, walk.launched


def _entry_points(mod: ModuleIndex, model: ast.ClassDef) -> list[ast.FunctionDef]:
    """ModelNew's forward and __call__, and a method assigned to either (`self.forward = self._fast_path`)."""
    methods = mod.methods(model)
    starts = [methods[n] for n in ("forward", "__call__") if n in methods]
    for node in ast.walk(model):
        if isinstance(node, ast.Assign) \
                and any(isinstance(t, ast.Attribute) and t.attr in ("forward", "__call__")
                        for t in node.targets):
            target = dotted_name(node.value) or ""
            if target.split(".")[-1] in methods:
                starts.append(methods[target.split(".")[-1]])
    return starts


def _kernels_referenced(mod: ModuleIndex, bodies: list[ast.AST]) -> set[str]:
    """The kernels a launch through a subscript can hold: every kernel named in the reached bodies, and in
    what the module-level names they use hold (`TABLE = {"relu": relu_kernel}`; TABLE[k][grid](...))."""
    referenced = {n.id for body in bodies for n in ast.walk(body) if isinstance(n, ast.Name)}
    referenced |= {n.id for node in mod.tree.body if isinstance(node, ast.Assign) and any(
        isinstance(t, ast.Name) and t.id in referenced for t in node.targets)
        for n in ast.walk(node.value) if isinstance(n, ast.Name)}
    return referenced & set(mod.kernels)


class _Reach:
    """The worklist's state: the module's methods by name, what names and attributes hold, the bodies reached
    and the kernels launched."""

    def __init__(self, mod: ModuleIndex) -> None:
        self.mod = mod
        self.all_methods: dict[str, list[ast.FunctionDef]] = {}
        for cls in mod.classes.values():
            for name, fn in mod.methods(cls).items():
                self.all_methods.setdefault(name, []).append(fn)
        self.instances: dict[str, ast.ClassDef] = {}  # attribute name -> module-defined class it holds
        self.held = self._held()
        self.held_values = {id(v) for values in self.held.values() for v in values}
        # super().method / Base.method(self) reach that method of the module's base classes only, never every
        # method of that name (a helper's super().__init__() would otherwise reach ModelNew.__init__, whose
        # init-time torch.randn is no forward compute)
        self.bases = [b for c in mod.classes.values() for b in mod.lineage(c)[1:]]
        self.queue: list[ast.AST] = []
        self.seen: set[int] = set()
        self.bodies: list[ast.AST] = []
        self.launched: set[str] = set()
        self.subscript_launch = False

    def _held(self) -> dict[str, list[ast.expr]]:
        """What a name bound at module level (`fast`) or an attribute (`.fast`: a class attribute,
        self.fast = ...) holds: calling it runs what built it (`torch.compile(helper)`,
        `functools.partial(helper)`), so that is reached. Fills `instances` on the way."""
        mod, held = self.mod, {}
        for scope, prefix in [(mod.tree.body, ""), *((cls.body, ".") for cls in mod.classes.values())]:
            for node in scope:
                for target in node.targets if isinstance(node, ast.Assign) else []:
                    if isinstance(target, ast.Name):
                        held.setdefault(prefix + target.id, []).append(node.value)
        for node in ast.walk(mod.tree):
            for target in node.targets if isinstance(node, ast.Assign) else []:
                if isinstance(target, ast.Attribute):
                    held.setdefault(f".{target.attr}", []).append(node.value)
            if isinstance(node, ast.Assign) and (built := mod.built_class(node.value)) is not None:
                for target in node.targets:
                    if isinstance(target, ast.Attribute):
                        self.instances[target.attr] = built
        return held

    def visit(self, fn: ast.AST) -> None:
        self.seen.add(id(fn))
        self.bodies.append(fn)
        bound = launchers(fn)
        # what a called attribute or name holds was built outside forward (`self.norm = Helper(d)` in
        # __init__): calling it runs the helper's forward/__call__ (below), not its __init__ again; a lambda's
        # body in it runs when called, so a class built there does run its __init__
        built_elsewhere: set[int] = set()
        if id(fn) in self.held_values:
            deferred = {id(n) for lam in ast.walk(fn) if isinstance(lam, ast.Lambda)
                        for n in ast.walk(lam.body)}
            built_elsewhere = {id(n) for n in ast.walk(fn)} - deferred
        for node in ast.walk(fn):
            self._named(node)
            if isinstance(node, ast.Call):
                self._call(node, called(node, bound), id(node) in built_elsewhere)

    def _named(self, node: ast.AST) -> None:
        """A function or method named, called or not (`helper(x)`, `f = helper`, `map(helper, ...)`), may run;
        obj.method reaches any method of that name."""
        mod = self.mod
        if isinstance(node, ast.Name) and node.id in mod.functions:
            self.queue.append(mod.functions[node.id])
        elif isinstance(node, ast.Attribute):
            owner = node.value
            if isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name) and owner.func.id == "super" \
                    and "super" not in mod.bound:
                self.queue.extend(m for c in self.bases for name, m in mod.methods(c).items()
                                  if name == node.attr)
            elif isinstance(owner, ast.Name) and owner.id in mod.classes and owner.id in mod.bound_once:
                self.queue.extend(m for c in mod.lineage(mod.classes[owner.id])
                                  for name, m in mod.methods(c).items() if name == node.attr)
            else:
                self.queue.extend(self.all_methods.get(node.attr, []))

    def _call(self, node: ast.Call, func: ast.expr, built_elsewhere: bool) -> None:
        mod = self.mod
        if isinstance(func, ast.Subscript):  # kernel[grid](...), also through a variable or attribute
            name = dotted_name(func.value)
            if name and name.split(".")[-1] in mod.kernels:
                self.launched.add(name.split(".")[-1])
            else:
                self.subscript_launch = True
            return
        if isinstance(func, ast.Name | ast.Attribute):
            self.queue.extend(self.held.get(func.id if isinstance(func, ast.Name) else f".{func.attr}", []))
        if isinstance(func, ast.Name) and func.id in mod.classes:
            self.queue.extend(m for name, m in mod.methods(mod.classes[func.id]).items()
                              if not (built_elsewhere and name == "__init__"))
        elif isinstance(func, ast.Attribute):
            base = dotted_name(func.value)
            if base in mod.extensions:
                self.launched.add(f"{base}.{func.attr}")
            helper = self.instances.get(func.attr)  # self.helper(...) with self.helper = Helper(...)
            if helper is not None:
                self.queue.extend(fn for name, fn in mod.methods(helper).items()
                                  if name in ("forward", "__call__"))
