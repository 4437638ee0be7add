"""Cache keys: sha256 of a canonical JSON document of everything that can change the cached value."""

from __future__ import annotations

import ast
import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kernelrl.pyparse import parse_python
from kernelrl.results import Environment

_KEY_VERSION = 1  # bump when the key's layout changes
# the parts of the package whose code decides a verdict
# (problems/suites/ excluded: problems enter by their hash)
_VERDICT_CODE = ("evaluate.py", "results.py", "candidates", "sandbox", "verify", "timing", "problems",
                 "cache")


def _digest(document: Any) -> str:
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _strip_docstrings(tree: ast.AST) -> ast.AST:
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                node.body = body[1:] or [ast.Pass()]
    return tree


def canonical_code(code: str) -> str:
    """The candidate's AST without docstrings, comments, formatting or line numbers (`ast.dump`).

    Not normalized further on purpose: names, string constants (CUDA C++ sources included) and literal
    spellings all reach the compiled program, so renaming or folding them could map two programs with
    different behavior to one key. Code that cannot be parsed keys on its exact text."""
    try:
        tree = parse_python(code)
    except (SyntaxError, ValueError):
        return "text:" + code
    return ast.dump(_strip_docstrings(tree), annotate_fields=True, include_attributes=False)


def near_duplicate_code(code: str) -> str:
    """`canonical_code` with every number and boolean abstracted: programs that differ only in their constants
    (block sizes, warps, literals) share it. For counting copies (a model's completions against known
    solutions), never for a cache key."""
    try:
        tree = _strip_docstrings(parse_python(code))
    except (SyntaxError, ValueError):
        return "text:" + code
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and not isinstance(node.value, str):
            node.value = 0
    return ast.dump(tree, annotate_fields=True, include_attributes=False)


def kernelrl_build(package_dir: Path | None = None) -> str:
    """Hash of the package code that decides verdicts: an editable install keeps its version string while its
    code changes, so the version alone would serve verdicts of older code."""
    root = package_dir or Path(__file__).resolve().parent.parent
    h = hashlib.sha256()
    for part in _VERDICT_CODE:
        path = root / part
        files = [path] if path.is_file() else sorted(
            p for p in path.rglob("*.py") if "suites" not in p.relative_to(root).parts)
        for file in files:
            h.update(str(file.relative_to(root)).encode() + b"\0")
            try:
                h.update(file.read_bytes())
            except OSError:
                pass
    return h.hexdigest()[:16]


def _environment(env: Environment) -> dict[str, Any]:
    return {"mode": env.mode, "device_name": env.device_name, "torch": env.torch_version,
            "triton": env.triton_version, "python": env.python_version, "kernelrl": env.kernelrl_version}


def result_key(problem_sha256: str, code: str, env: Environment, settings: Mapping[str, Any],
               build: str) -> str:
    """Key of a verdict: problem, canonical candidate, device and versions, the verdict-changing settings
    (the VerdictSettings and the verdict-changing EvaluatorSettings, seed included) and the kernelrl build."""
    return _digest({"v": _KEY_VERSION, "kind": "result", "problem": problem_sha256,
                    "code": canonical_code(code), "env": _environment(env), "settings": dict(settings),
                    "build": build})


def timing_set_of(problem_source: str) -> str:
    """The input set baselines are timed on, read from the problem's AST (same rule as
    `kernelrl.problems.input_sets.timing_set`: a problem with `get_input_sets()` must define `bench`)."""
    try:
        tree = parse_python(problem_source)
    except (SyntaxError, ValueError):
        return "default"
    names = {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    return "bench" if "get_input_sets" in names else "default"


def baseline_key(problem_sha256: str, input_set: str, env: Environment, method: str,
                 timer: Mapping[str, Any]) -> str:
    """Key of a problem's baseline times. Dtypes are not a separate part: the reference's dtypes follow from
    its source (hashed) and the torch version, and the CLI fills the cache before any dtype is known."""
    return _digest({"v": _KEY_VERSION, "kind": "baselines", "problem": problem_sha256, "input_set": input_set,
                    "device_name": env.device_name, "mode": env.mode, "torch": env.torch_version,
                    "triton": env.triton_version, "method": method, "timer": dict(timer)})
