"""Quality gates a generated problem passes before it is kept, each with a reason when it does not: it loads
and its reference runs on every CPU set with finite outputs; it is numerically sane in its own dtype (against
the same model in float64); it is no duplicate of a kept problem (the same program with constants abstracted,
or the same outputs on the same inputs); it does not overlap a held-out test problem (the same sequence of
ATen compute ops, or the same outputs). The audit (zeros, constant, input-independent, ...) runs in the
evaluator's judge: the caller hands it in (`kernelrl gen` does).
"""

from __future__ import annotations

import ast
import hashlib
import types
from dataclasses import dataclass

from kernelrl.problems.input_sets import CHECK_SET, call_with, input_sets
from kernelrl.problems.problem import Problem
from kernelrl.verify.tolerance import tolerance_for

# ops that only move, view or convert data: not part of what a problem computes
LAYOUT_OPS = frozenset({
    "view", "_unsafe_view", "reshape", "t", "transpose", "permute", "expand", "unsqueeze", "squeeze", "clone",
    "detach", "alias", "contiguous", "as_strided", "_to_copy", "copy_", "empty", "empty_like", "lift_fresh",
})
ILL_CONDITIONED_SHARE = 0.01  # more elements than this outside the dtype's tolerance of the float64 answer


class GateRejected(Exception):
    def __init__(self, reason: str, detail: str = ""):
        super().__init__(f"{reason}: {detail}")
        self.reason, self.detail = reason, detail


@dataclass(frozen=True)
class Signature:
    ops: tuple[str, ...]  # ATen compute ops of forward on the check set, in first-seen order
    near_duplicate: str  # the program with constants, docstrings and METADATA abstracted away
    fingerprint: str  # input shapes and outputs on fixed inputs of the check set

    @property
    def op_key(self) -> str:
        return " ".join(self.ops)


def near_duplicate_key(source: str) -> str:
    """Model and get_inputs with every constant abstracted (a renamed file, other constants or other sizes are
    the same problem); METADATA, get_input_sets and docstrings left out."""
    tree = ast.parse(source)
    kept = [n for n in tree.body if isinstance(n, ast.ClassDef)
            or (isinstance(n, ast.FunctionDef) and n.name in ("get_inputs", "get_init_inputs"))]
    for node in kept:
        for child in ast.walk(node):
            body = getattr(child, "body", None)
            if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                    and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
                child.body = body[1:] or [ast.Pass()]
            if isinstance(child, ast.Constant) and not isinstance(child.value, str):
                child.value = 0
            if isinstance(child, ast.arguments):
                child.defaults = [ast.Constant(0) for _ in child.defaults]
    text = "\n".join(ast.dump(n, annotate_fields=False, include_attributes=False) for n in kept)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _module(problem: Problem) -> types.SimpleNamespace:
    """The problem file run in this process: only for files this package generated or ships (trusted)."""
    namespace: dict = {"__name__": f"kernelrl_generated_{problem.sha256[:12]}"}
    exec(compile(problem.source, str(problem.path), "exec"), namespace)  # noqa: S102 - trusted files only
    return types.SimpleNamespace(**namespace)


def _build(module, params: dict, torch, dtype=None):
    torch.manual_seed(0)
    model = module.Model(*call_with(module.get_init_inputs, params))
    inputs = call_with(module.get_inputs, params)
    if dtype is not None:
        model = model.to(dtype)
        inputs = [t.to(dtype) if t.is_floating_point() else t for t in inputs]
    return model.eval(), inputs


def _outputs(result) -> list:
    return list(result) if isinstance(result, tuple | list) else [result]


def _op_trace():
    """A dispatch mode that records the ATen compute ops it sees, first-seen order (`.seen`)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class OpTrace(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.seen: list[str] = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            name = func.overloadpacket.__name__
            if name not in LAYOUT_OPS and name not in self.seen:
                self.seen.append(name)
            return func(*args, **(kwargs or {}))

    return OpTrace()


def _fake_ops(module, params: dict) -> list[str] | None:
    """The ATen compute ops of the reference's forward traced on fake tensors (no memory, no compute): the op
    signature of a problem whose inputs are too large to run here (a KernelBench original). None when it
    cannot be traced."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    trace = _op_trace()
    try:
        with FakeTensorMode(), torch.no_grad():
            torch.manual_seed(0)
            model = module.Model(*call_with(module.get_init_inputs, params))
            inputs = call_with(module.get_inputs, params)
            with trace:
                model(*inputs)
    except Exception:  # noqa: BLE001 - an op without a fake kernel, a problem that needs real values
        return None
    return trace.seen


def reference_gates(problem: Problem) -> Signature:
    """Run the reference on every CPU set (raises GateRejected), and return its signature."""
    import torch

    try:
        module = _module(problem)
        sets = input_sets(module)
    except Exception as exc:  # noqa: BLE001 - any failure to load is the gate's verdict
        raise GateRejected("load", f"{type(exc).__name__}: {exc}") from None
    fingerprint, ops = hashlib.sha256(), _op_trace()
    for name, params in sets.items():
        if name == "bench":
            continue
        try:
            with torch.no_grad():
                model, inputs = _build(module, params, torch)
                if name == CHECK_SET:
                    with ops:
                        outputs = _outputs(model(*inputs))
                else:
                    outputs = _outputs(model(*inputs))
                model64, inputs64 = _build(module, params, torch, torch.float64)
                exact = _outputs(model64(*inputs64))
        except Exception as exc:  # noqa: BLE001
            detail = f"{name}: {type(exc).__name__}: {str(exc)[:200]}"
            raise GateRejected("reference_raises", detail) from None
        for out, ref in zip(outputs, exact, strict=True):
            if not torch.isfinite(out).all():
                raise GateRejected("non_finite", f"{name}: the reference's output has inf or nan")
            tol = tolerance_for([str(out.dtype).removeprefix("torch.")])
            off = (out.double() - ref).abs() > tol.atol + tol.rtol * ref.abs()
            if off.double().mean().item() > ILL_CONDITIONED_SHARE:
                share = off.double().mean().item()
                raise GateRejected("ill_conditioned", f"{name}: {share:.1%} of the output is outside "
                                   f"{out.dtype}'s tolerance of the float64 answer")
            if name == CHECK_SET:
                fingerprint.update(repr([tuple(t.shape) for t in inputs]).encode())
                fingerprint.update(repr(tuple(out.shape)).encode())
                fingerprint.update(out.double().mul(1e3).round().numpy().tobytes())
    source = problem.path.read_text()
    return Signature(tuple(ops.seen), near_duplicate_key(source), fingerprint.hexdigest()[:16])


def heldout_signatures(problems) -> dict[str, dict[str, str]]:
    """Op sequences and fingerprints of held-out problems: {"ops": {op key: id}, "fingerprint": {fingerprint:
    id}, "signature_only": {id: why}, "unread": {id: why}}. A problem without a check set (a KernelBench
    original, its fixed inputs possibly GB-sized) gets its op sequence from fake tensors and no fingerprint;
    one that cannot be read or traced is listed as unread."""
    found: dict[str, dict[str, str]] = {"ops": {}, "fingerprint": {}, "signature_only": {}, "unread": {}}
    for problem in problems:
        try:
            module = _module(problem)
            sets = input_sets(module)
        except Exception as exc:  # noqa: BLE001
            found["unread"][problem.id] = f"{type(exc).__name__}: {str(exc)[:100]}"
            continue
        if CHECK_SET not in sets:
            ops = _fake_ops(module, next(iter(sets.values())))
            if not ops:
                found["unread"][problem.id] = "its forward could not be traced on fake tensors"
                continue
            found["ops"].setdefault(" ".join(ops), problem.id)
            found["signature_only"][problem.id] = "no check set: op sequence only, no output fingerprint"
            continue
        try:
            signature = reference_gates(problem)
        except GateRejected as rejected:
            found["unread"][problem.id] = f"{rejected.reason}: {rejected.detail[:100]}"
            continue
        found["ops"].setdefault(signature.op_key, problem.id)
        found["fingerprint"].setdefault(signature.fingerprint, problem.id)
    return found


def new_seen() -> dict[str, dict[str, str]]:
    """The kept problems' keys (near-duplicate key, fingerprint -> id), filled by `remember`."""
    return {"near_duplicate": {}, "fingerprint": {}}


def remember(seen: dict[str, dict[str, str]], signature: Signature, problem_id: str) -> None:
    seen["near_duplicate"][signature.near_duplicate] = problem_id
    seen["fingerprint"][signature.fingerprint] = problem_id


def gate(problem: Problem, heldout: dict[str, dict[str, str]], seen: dict[str, dict[str, str]],
         auditor=None) -> Signature:
    """Every gate in turn (raises GateRejected with the first that fails): the reference run and numerical
    sanity, no duplicate of a kept problem (`seen`), no overlap with a held-out one (`heldout_signatures`),
    and the audit when an auditor (anything with `audit(problem)`: an evaluator, a Scorer) is given."""
    signature = reference_gates(problem)
    for table, value, what in (("near_duplicate", signature.near_duplicate, "the same program as"),
                               ("fingerprint", signature.fingerprint, "the same outputs as")):
        if value in seen[table]:
            raise GateRejected("duplicate", f"{what} {seen[table][value]}")
    for table, value, what in (("ops", signature.op_key, "the ATen op sequence of"),
                               ("fingerprint", signature.fingerprint, "the outputs of")):
        if value in heldout[table]:
            raise GateRejected("overlaps_heldout", f"{what} {heldout[table][value]}")
    if auditor is not None:
        audit = auditor.audit(problem)
        if audit.refusing:
            raise GateRejected("audit", audit.summary())
    return signature
