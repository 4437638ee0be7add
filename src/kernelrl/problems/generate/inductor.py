"""Inductor-derived seeds: a generated problem's `Model` compiled by `torch.compile` (Inductor, dynamic
shapes), its output code captured and rewritten as a self-contained `ModelNew`: plain `@triton.jit` kernels
(Inductor's autotuning decorators dropped, the `triton_helpers` it calls copied in, `libdevice` calls mapped
to `tl`), a `forward` that allocates with `torch.empty_strided` and launches every kernel on an explicit grid.
The produced code imports nothing from `torch._inductor`.

A problem where Inductor calls a library kernel (`extern_kernels.mm`, a convolution) or falls back to an ATen
op is skipped with its reason: that seed would be PyTorch compute, not a kernel. Whatever the converter does
not understand is skipped with a reason too; nothing is faked.

Block sizes: on a GPU the config Inductor's autotuner picked at the bench set's shapes; without one (the CPU
path) a rule from the kernel's kind and size hints. On the CPU, Inductor's Triton backend is asked for code
(`cpu_backend = "triton"`) and stopped before it compiles (there is no Triton driver); the converted
`ModelNew` then runs under the Triton interpreter like any candidate.
"""

from __future__ import annotations

import ast
import inspect
import re
import sys
import types
from dataclasses import dataclass, field
from unittest import mock

from kernelrl.problems.input_sets import CHECK_SET, input_sets
from kernelrl.problems.problem import Problem

# libdevice calls Inductor emits, as `tl` (the interpreter has no libdevice; on a GPU they are as accurate as
# the tolerances need); the `_ld_*` ones are helpers written below
LIBDEVICE = {
    "exp": "tl.exp", "exp2": "tl.exp2", "log": "tl.log", "log2": "tl.log2", "sqrt": "tl.sqrt",
    "rsqrt": "tl.math.rsqrt", "abs": "tl.abs", "floor": "tl.floor", "ceil": "tl.ceil", "erf": "tl.math.erf",
    "sin": "tl.sin", "cos": "tl.cos", "fma": "tl.fma", "tanh": "_ld_tanh", "log1p": "_ld_log1p",
    "expm1": "_ld_expm1", "isnan": "_ld_isnan", "isinf": "_ld_isinf",
}
LIBDEVICE_HELPERS = {
    "_ld_tanh": "    return 2.0 / (1.0 + tl.exp(-2.0 * x)) - 1.0\n",
    "_ld_log1p": "    return tl.log(1.0 + x)\n",
    "_ld_expm1": "    return tl.exp(x) - 1.0\n",
    "_ld_isnan": "    return x != x\n",
    "_ld_isinf": "    return tl.abs(x) == float('inf')\n",
}
GRIDS = ("Grid1D", "Grid2D", "Grid3D", "Grid2DWithYZOverflow")
BLOCKS = ("XBLOCK", "YBLOCK", "ZBLOCK", "R0_BLOCK")
MAX_Y_GRID = 65535
# what the call function may do besides launching kernels: allocate, view, describe
ALLOCATORS = ("empty_strided_cuda", "empty_strided_cpu", "empty_strided_xpu", "empty_strided")
DROPPED_CALLS = ("assert_size_stride", "assert_alignment", "set_device", "get_raw_stream", "check_for_nan")
KEPT_METHODS = ("clear", "size", "stride", "storage_offset")


class InductorSkip(Exception):
    """A problem without an Inductor seed, and why (`reason` is short and groups alike problems)."""

    def __init__(self, reason: str, detail: str = ""):
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail


@dataclass
class Capture:
    """Inductor's output code of one problem and how its `call(args)` arguments are built."""

    code: str
    placeholders: list[str]  # per call argument: "t[k]" (the k-th tensor) or "t[k].shape[d]" (a size)
    tensors: list[str]  # the k-th tensor: "self.get_parameter('name')" or an input's name
    # kernel name -> {"kwargs", "num_warps", "num_stages"}
    tuned: dict[str, dict] = field(default_factory=dict)


def capture(problem: Problem, device: str = "cpu") -> Capture:
    """Compile `problem`'s Model with Inductor on `device` (dynamic shapes, built from its bench set on a GPU,
    its check set on the CPU) and return its output code; InductorSkip where Inductor cannot compile it."""
    import torch

    from kernelrl.problems.generate.gates import _build

    module = _load(problem)
    sets = input_sets(module)
    params = sets["bench" if device.startswith("cuda") else CHECK_SET]
    model, inputs = _build(module, params, torch)
    model = model.to(device)
    named = [*model.named_parameters(), *model.named_buffers()]
    flat = [t.detach().to(device) for _, t in named] + [t.to(device) for t in inputs]
    names = [n for n, _ in named]

    def program(*t):
        return torch.func.functional_call(model, dict(zip(names, t[:len(names)], strict=True)),
                                          tuple(t[len(names):]))

    placeholders: list[str] = []
    codes: list[str] = []
    try:
        codes = _compile(program, flat, device, placeholders)
    except InductorSkip:
        raise
    except Exception as exc:  # noqa: BLE001 - Inductor's own failure is this problem's skip reason
        raise InductorSkip("inductor failed", f"{type(exc).__name__}: {str(exc)[:200]}") from exc
    if len(codes) != 1:
        raise InductorSkip("graph break", f"{len(codes)} compiled graphs")
    forward = _forward_args(problem)
    getters = [f"self.get_parameter({n!r})" for n, _ in model.named_parameters()]
    getters += [f"self.get_buffer({n!r})" for n, _ in model.named_buffers()]
    tuned = _tuned_configs() if device.startswith("cuda") else {}
    return Capture(codes[0], placeholders, getters + forward, tuned)


def _load(problem: Problem) -> types.ModuleType:
    """The problem file as a module in sys.modules (Dynamo reads a traced function's globals through it); only
    for files this package generated (trusted)."""
    name = f"kernelrl_generated_{problem.sha256[:12]}"
    if name not in sys.modules:
        module = types.ModuleType(name)
        module.__file__ = str(problem.path)
        exec(compile(problem.source, str(problem.path), "exec"), module.__dict__)  # noqa: S102 - trusted
        sys.modules[name] = module
    return sys.modules[name]


def _compile(program, flat: list, device: str, placeholders: list[str]) -> list[str]:
    """Inductor's output code for `program(*flat)`; fills `placeholders` from Dynamo's graph inputs."""
    import torch
    import torch._inductor.config as inductor_config
    from torch._inductor.compile_fx import compile_fx
    from torch._inductor.graph import GraphLowering

    def backend(gm, example_inputs):
        for node in gm.graph.find_nodes(op="placeholder"):
            source = node.meta["grapharg"].source
            name = source.name() if callable(source.name) else source.name
            placeholders.append(_placeholder(name))
        return compile_fx(gm, example_inputs)

    codes: list[str] = []

    class Stop(Exception):
        pass

    def keep_and_stop(self, wrapper_code):
        codes.append(wrapper_code.value)
        raise Stop

    torch._dynamo.reset()
    # equal sizes of different inputs stay separate symbols unless the program makes them equal
    patches = [torch.fx.experimental._config.patch(use_duck_shape=False),
               inductor_config.patch(force_disable_caches=True),
               mock.patch.object(GraphLowering, "save_output_code", codes.append)]
    if not device.startswith("cuda"):  # codegen only: no Triton driver to compile for
        patches += [inductor_config.patch(cpu_backend="triton"),
                    mock.patch("torch.utils._triton.triton_hash_with_backend", lambda: "CPU"),
                    mock.patch.object(GraphLowering, "_compile_to_module_lines", keep_and_stop)]
    compiled = torch.compile(program, dynamic=True, fullgraph=True, backend=backend)
    with torch.no_grad():
        for patch in patches:
            patch.__enter__()
        try:
            compiled(*flat)
        except Exception as exc:  # noqa: BLE001
            if not (codes and _caused_by(exc, Stop)):
                raise
        finally:
            for patch in reversed(patches):
                patch.__exit__(None, None, None)
            torch._dynamo.reset()
    return list(dict.fromkeys(codes))


def _caused_by(exc: BaseException, kind: type) -> bool:
    while exc is not None:
        if isinstance(exc, kind):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def _placeholder(source: str) -> str:
    """Dynamo's source of a graph input (`L['t'][1]`, `L['t'][1].size()[0]`) as an expression over `t`."""
    found = re.fullmatch(r"L\['t'\]\[(\d+)\](?:\.size\(\)\[(\d+)\])?", source)
    if not found:
        raise InductorSkip("unsupported graph input", source)
    index, dim = found.groups()
    return f"t[{index}]" if dim is None else f"t[{index}].shape[{dim}]"


def _forward_args(problem: Problem) -> list[str]:
    forward = _model_method(problem.source, "forward")
    return [a.arg for a in forward.args.args[1:]]


def _model_method(source: str, name: str) -> ast.FunctionDef:
    tree = ast.parse(source)
    model = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Model")
    return next(n for n in model.body if isinstance(n, ast.FunctionDef) and n.name == name)


def _tuned_configs() -> dict[str, dict]:
    """The config each kernel's autotuner kept in the modules Inductor just loaded (GPU runs only)."""
    from torch._inductor.codecache import PyCodeCache

    tuned: dict[str, dict] = {}
    for module in [*PyCodeCache.modules, *PyCodeCache.modules_no_attr.values()]:
        for name, value in vars(module).items():
            launchers = getattr(value, "launchers", None)
            if name.startswith("triton_") and launchers:
                config = launchers[0].config
                tuned[name] = {"kwargs": dict(config.kwargs), "num_warps": config.num_warps,
                               "num_stages": config.num_stages}
    return tuned


@dataclass
class Kernel:
    name: str
    functions: list[ast.FunctionDef]  # the kernel and the helpers its source defines, decorators dropped
    kind: str  # pointwise, reduction, persistent_reduction, ...
    hints: dict  # size hints: {"x": 512, "r0_": 256}
    grid: str
    reduction_hint: str
    params: list[str]  # the kernel's parameters in order
    fixed: dict[str, int]  # block sizes the kernel sets itself (`R0_BLOCK: tl.constexpr = 256`)


def convert(captured: Capture, problem_source: str) -> str:
    """The `ModelNew` source of a captured Inductor output code; InductorSkip for what it cannot convert."""
    tree = ast.parse(captured.code)
    kernels: dict[str, Kernel] = {}
    for node in tree.body:
        call = node.value if isinstance(node, ast.Assign) else None
        if isinstance(call, ast.Call) and _dotted(call.func).startswith("async_compile."):
            if _dotted(call.func) != "async_compile.triton":
                raise InductorSkip("not a Triton kernel", _dotted(call.func))
            name, source = (ast.literal_eval(a) for a in call.args[:2])
            kernels[name] = _kernel(name, source)
    body = _call_body(tree, kernels, captured.tuned)
    used_helpers: set[str] = set()
    functions = [f for k in kernels.values() for f in k.functions]
    renamer = _Renamer(used_helpers)
    for function in functions:
        renamer.visit(function)
    sources = _helper_sources(used_helpers) + [ast.unparse(f) for f in functions]
    return _module_text(sources, body, captured, problem_source, renamer.libdevice)


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else ""
    return ""


def _kernel(name: str, source: str) -> Kernel:
    tree = ast.parse(source)
    functions = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    main = next((f for f in functions if f.name == name), None)
    if main is None:
        raise InductorSkip("kernel source unreadable", name)
    decorator = next((d for d in main.decorator_list if isinstance(d, ast.Call)
                      and _dotted(d.func).startswith("triton_heuristics.")), None)
    if decorator is None:
        raise InductorSkip("kernel without Inductor's heuristics", name)
    kind = _dotted(decorator.func).split(".")[-1]
    options = {k.arg: k.value for k in decorator.keywords}
    meta = _dict_entries(options.get("inductor_meta"))
    hint = options.get("reduction_hint")
    for function in functions:
        function.decorator_list = [ast.parse("triton.jit", mode="eval").body]
    params = [a.arg for a in main.args.args]
    fixed = {}
    for statement in main.body:
        if (isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name)
                and statement.target.id in BLOCKS and isinstance(statement.value, ast.Constant)):
            fixed[statement.target.id] = statement.value.value
    grid = meta.get("grid_type", "Grid1D")
    if grid not in GRIDS:
        raise InductorSkip(f"grid {grid}", name)
    extra = [p for p in params if p.endswith("BLOCK") and p not in BLOCKS]
    if extra or kind not in ("pointwise", "reduction", "persistent_reduction"):
        raise InductorSkip(f"kernel kind {kind}", ", ".join(extra) or name)
    hints = ast.literal_eval(options["size_hints"]) if "size_hints" in options else {}
    return Kernel(name, functions, kind, hints, grid, _dotted(hint).split(".")[-1] if hint else "DEFAULT",
                  params, fixed)


def _dict_entries(node: ast.AST | None) -> dict:
    """The constant entries of a dict display (others, like DeviceProperties(...), left out)."""
    if not isinstance(node, ast.Dict):
        return {}
    entries = {}
    for key, value in zip(node.keys, node.values, strict=True):
        try:
            entries[ast.literal_eval(key)] = ast.literal_eval(value)
        except ValueError:
            continue
    return entries


class _Renamer(ast.NodeTransformer):
    """triton_helpers.X -> _h_X (copied in), tl_math.X -> tl.math.X, libdevice.X -> its `tl` form."""

    def __init__(self, used: set[str]):
        self.used = used
        self.libdevice: set[str] = set()  # libdevice functions kept as they are (no `tl` form: GPU only)

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        self.generic_visit(node)
        base = _dotted(node.value)
        if base == "triton_helpers":
            self.used.add(node.attr)
            return ast.Name(f"_h_{node.attr}", ast.Load())
        if base == "tl_math":
            return ast.parse(f"tl.math.{node.attr}", mode="eval").body
        if base == "libdevice":
            if node.attr in LIBDEVICE:
                return ast.parse(LIBDEVICE[node.attr], mode="eval").body
            self.libdevice.add(node.attr)
        return node


def _helper_sources(used: set[str]) -> list[str]:
    """The `triton_helpers` functions the kernels call, and the ones those call, renamed `_h_*`."""
    from torch._inductor.runtime import triton_helpers

    jitted = {n for n, v in vars(triton_helpers).items() if hasattr(v, "fn") and callable(v.fn)}
    pending, done, sources = sorted(used), set(), []
    while pending:
        name = pending.pop()
        if name in done:
            continue
        done.add(name)
        if name not in jitted:
            raise InductorSkip("helper not a kernel function", f"triton_helpers.{name}")
        source = inspect.getsource(getattr(triton_helpers, name).fn)
        function = ast.parse(inspect.cleandoc(source)).body[0]
        names = {n.id for n in ast.walk(function) if isinstance(n, ast.Name)}
        for other in sorted((names & jitted) - done):
            pending.append(other)
        modules = ("tl", "math", "triton")
        unknown = {n for n in names if n in vars(triton_helpers) and n not in jitted and n not in modules}
        if unknown or "libdevice" in names:
            raise InductorSkip("helper needs module state", f"{name}: {sorted(unknown) or 'libdevice'}")
        text = re.sub(r"\bmath\.", "tl.math.", ast.unparse(function))
        for other in (names & jitted) | {name}:
            text = re.sub(rf"(?<![\w.]){other}\b", f"_h_{other}", text)
        sources.append(text)
    return sources


def _call_function(tree: ast.Module) -> ast.FunctionDef:
    """`call(args)`: a module-level function, or a method of the Runner class newer versions write."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "call":
            return node
        if isinstance(node, ast.ClassDef):
            method = next((m for m in node.body if isinstance(m, ast.FunctionDef) and m.name == "call"), None)
            if method is not None:
                return method
    raise InductorSkip("no call function in the output code")


def _call_body(tree: ast.Module, kernels: dict[str, Kernel], tuned: dict) -> list[str]:
    """The call function's statements, rewritten: device guards and asserts gone, allocations on `_device`,
    every `kernel.run(...)` a launch on an explicit grid; InductorSkip at any other call."""
    function = _call_function(tree)
    lines: list[str] = []
    returns = [n for n in ast.walk(function) if isinstance(n, ast.Return)]
    if len(returns) != 1 or not isinstance(returns[0].value, ast.Tuple) or len(returns[0].value.elts) != 1:
        raise InductorSkip("not one output")
    for statement in _flatten(function.body):
        _check_calls(statement, kernels)
        if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
            call = statement.value
            if _dotted(call.func).endswith(".run") and _dotted(call.func)[:-4] in kernels:
                lines.append(_launch(kernels[_dotted(call.func)[:-4]], call, tuned))
                continue
            if _dotted(call.func).split(".")[-1] in DROPPED_CALLS:
                continue
        if (isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Call)
                and _dotted(statement.value.func) == "get_raw_stream"):
            continue
        lines.append(ast.unparse(_Allocations().visit(statement)))
    return lines


def _flatten(statements: list[ast.stmt]) -> list[ast.stmt]:
    """Statements with `with torch.cuda._DeviceGuard(i):` blocks spliced in (the launch names its device)."""
    flat: list[ast.stmt] = []
    for statement in statements:
        if isinstance(statement, ast.With) and all(
                "DeviceGuard" in _dotted(item.context_expr.func) for item in statement.items
                if isinstance(item.context_expr, ast.Call)):
            flat += _flatten(statement.body)
        elif isinstance(statement, ast.With | ast.For | ast.While | ast.If | ast.Try):
            raise InductorSkip("control flow in call", type(statement).__name__)
        else:
            flat.append(statement)
    return flat


def _check_calls(statement: ast.stmt, kernels: dict[str, Kernel]) -> None:
    """Skip where the call function computes anything but through the captured kernels."""
    for node in ast.walk(statement):
        if not isinstance(node, ast.Call):
            continue
        name = _dotted(node.func)
        if name.startswith("extern_kernels."):
            raise InductorSkip(f"extern kernel: {name.split('.', 1)[1]}")
        if name.startswith(("torch.ops.", "aten.")):
            raise InductorSkip(f"fallback op: {name.removeprefix('torch.ops.')}")
        last = name.split(".")[-1]
        if name.endswith(".run") and name[:-4] in kernels:
            continue
        if last in DROPPED_CALLS or last in ALLOCATORS or name == "reinterpret_tensor":
            continue
        if isinstance(node.func, ast.Attribute) and last in KEPT_METHODS:
            continue
        raise InductorSkip("unsupported call", ast.unparse(node)[:120])


class _Allocations(ast.NodeTransformer):
    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        name = _dotted(node.func)
        if name in ALLOCATORS:
            size, stride, dtype = node.args[:3]
            return ast.parse(f"torch.empty_strided({ast.unparse(size)}, {ast.unparse(stride)}, "
                             f"dtype={ast.unparse(dtype)}, device=_device)", mode="eval").body
        if name == "reinterpret_tensor":
            node.func = ast.Name("_reinterpret", ast.Load())
        return node


def _pow2(n: int) -> int:
    return 1 << max(0, int(n) - 1).bit_length()


def _blocks(kernel: Kernel, tuned: dict) -> tuple[dict[str, int], int, int]:
    """The launch's block sizes (those the kernel takes), warps and stages: Inductor's tuned config where
    there is one, else a rule from the kernel's kind and size hints."""
    takes = [b for b in BLOCKS if b in kernel.params]
    config = tuned.get(kernel.name)
    if config and all(b in config["kwargs"] for b in takes):
        return {b: config["kwargs"][b] for b in takes}, config["num_warps"], config["num_stages"]
    x, y = kernel.hints.get("x", 1), kernel.hints.get("y", 1)
    r = kernel.hints.get("r0_", 1)
    if kernel.kind == "pointwise":
        rule = {"XBLOCK": min(1024, _pow2(x)), "YBLOCK": 1, "ZBLOCK": 1}
        if "YBLOCK" in takes:
            z = kernel.hints.get("z", 1)
            rule.update(XBLOCK=min(32, _pow2(x)), YBLOCK=min(32, _pow2(y)), ZBLOCK=min(4, _pow2(z)))
        warps = 4
    elif kernel.reduction_hint == "OUTER":
        rule, warps = {"XBLOCK": min(64, _pow2(x)), "R0_BLOCK": min(16, _pow2(r))}, 8
    else:  # one row per program, the row in blocks of up to 1024 (persistent: the kernel fixes R0_BLOCK)
        rule, warps = {"XBLOCK": 1, "R0_BLOCK": min(1024, _pow2(r))}, 4
    return {b: rule[b] for b in takes}, warps, 1


def _launch(kernel: Kernel, call: ast.Call, tuned: dict) -> str:
    blocks, warps, stages = _blocks(kernel, tuned)
    sizes = {**kernel.fixed, **blocks}
    runtime = [p for p in kernel.params if p not in BLOCKS]
    if len(call.args) != len(runtime):
        raise InductorSkip("launch arguments", f"{kernel.name}: {len(call.args)} for {len(runtime)}")
    given = dict(zip(runtime, (ast.unparse(a) for a in call.args), strict=True))
    numel = [given.get(f"{axis}numel", "1") for axis in "xyz"]
    block = [str(sizes.get(f"{axis}BLOCK", 1)) for axis in "XYZ"]
    overflow = kernel.grid == "Grid2DWithYZOverflow"
    grid = f"_grid(({', '.join(numel)}), ({', '.join(block)}), {overflow})"
    keywords = "".join(f", {b}={v}" for b, v in blocks.items())
    return (f"{kernel.name}[{grid}]({', '.join(given.values())}{keywords}, num_warps={warps}, "
            f"num_stages={stages})")


RUNTIME = f'''

def _cdiv(a, b):
    return -(-a // b)


def _grid(numel, block, overflow):
    """Inductor's launch grid: one program per block along x, y and z; with `overflow`, y blocks past the
    hardware's limit spill into z."""
    x, y, z = (_cdiv(n, b) for n, b in zip(numel, block))
    if overflow:
        split = _cdiv(y, {MAX_Y_GRID})
        return (x, 0 if split == 0 else _cdiv(y, split), split)
    return (x, y, z)


def _reinterpret(t, size, stride, offset):
    return t.as_strided(size, stride, t.storage_offset() + offset)
'''


def _module_text(kernels: list[str], body: list[str], captured: Capture, problem_source: str,
                 libdevice: set[str]) -> str:
    header = "import torch\nimport torch.nn as nn\nimport triton\nimport triton.language as tl\n"
    if libdevice:  # no `tl` form: the GPU's libdevice (the interpreter lacks it)
        header += "from triton.language.extra import libdevice\n"
    text = "\n".join(kernels)
    helpers = [f"@triton.jit\ndef {n}(x):\n{src}" for n, src in LIBDEVICE_HELPERS.items()
               if re.search(rf"\b{n}\(", text)]
    init = ast.get_source_segment(problem_source, _model_method(problem_source, "__init__"), padded=True)
    forward = _forward_args_text(captured)
    call = "\n".join(f"    {line}".replace("\n", "\n    ") for line in body)
    parts = [header, *helpers, *kernels]
    return "\n\n".join(p.rstrip("\n") + "\n" for p in parts) + RUNTIME + f'''

def _call(args, _device):
{call}


class ModelNew(nn.Module):
{init.rstrip()}

{forward}'''


def _forward_args_text(captured: Capture) -> str:
    inputs = [t for t in captured.tensors if not t.startswith("self.")]
    tensors = ", ".join(captured.tensors)
    args = ", ".join(captured.placeholders)
    return f'''    def forward(self, {", ".join(inputs)}):
        t = [v.contiguous() for v in ({tensors},)]
        return _call([{args}], t[0].device)[0]
'''


def inductor_solution(problem: Problem, device: str = "cpu") -> str:
    """The Inductor-derived `ModelNew` source of `problem`, compiled on `device`; InductorSkip with the
    reason where there is none."""
    captured = capture(problem, device)
    try:
        return convert(captured, problem.source)
    except InductorSkip:
        raise
    except Exception as exc:  # noqa: BLE001 - a converter gap is this problem's skip reason, never a crash
        raise InductorSkip("conversion failed", f"{type(exc).__name__}: {str(exc)[:200]}") from exc
