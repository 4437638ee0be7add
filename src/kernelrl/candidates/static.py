"""Static facts about candidate source, read from its AST in the verdict process (never executed here)."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from kernelrl.pyparse import parse_python

CUDA_CPP_MARKERS = ("load_inline", "cpp_extension")


@dataclass(frozen=True)
class StaticReport:
    syntax_error: str | None  # compiler-style message, None when the source parses
    defines_modelnew: bool
    backend: str  # 'triton' or 'cuda-cpp' (torch.utils.cpp_extension)


def analyze(source: str) -> StaticReport:
    try:
        tree = parse_python(source, filename="candidate.py")
    except SyntaxError as exc:
        line = (exc.text or "").rstrip("\n")
        caret = " " * max((exc.offset or 1) - 1, 0) + "^"
        message = (f'  File "candidate.py", line {exc.lineno}\n    {line}\n    '
                   f'{caret}\n{type(exc).__name__}: {exc.msg}')
        return StaticReport(message, False, "triton")
    defines = any(
        (isinstance(n, ast.ClassDef) and n.name == "ModelNew")
        or (isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "ModelNew"
                                              for t in n.targets))
        for n in tree.body
    )
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    names |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.update(node.module.split("."))
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                names.update(alias.name.split("."))
    backend = "cuda-cpp" if any(m in names for m in CUDA_CPP_MARKERS) else "triton"
    return StaticReport(None, defines, backend)
