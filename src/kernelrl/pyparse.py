"""`ast.parse` for code that runs on several threads (`Evaluator.evaluate_many`, the agent's batches).

CPython 3.11 keeps the AST constructor's recursion depth in interpreter-wide state, so two threads parsing at
once can fail with "SystemError: AST constructor recursion depth mismatch" (python/cpython#106905; seen here
in CI with 4 evaluation threads). Parses are serialized: they take milliseconds next to a sandboxed run.
"""

from __future__ import annotations

import ast
import threading

_PARSE_LOCK = threading.Lock()  # process-wide on purpose: the state it guards is the interpreter's


def parse_python(source: str, filename: str = "<unknown>") -> ast.Module:
    with _PARSE_LOCK:
        return ast.parse(source, filename=filename)
