"""What the stub runs after the candidate's import resolves no name by importing it: every module it uses
then binds its names when it is itself imported, before the candidate exists.

Why: an import inside a function runs when the function is called and goes through `sys.modules`, which the
candidate's code shares; an entry it replaced would hand the harness the candidate's own sampling, tensor
writes or profiler. And confinement may hide the package's files by then (the GPU mutants' copies under a
private /tmp failed every control with ModuleNotFoundError until the share phase bound its helpers)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "kernelrl"
# the modules whose functions run once the candidate exists (the census's and op registry's modules import
# lazily only in what they install before it, the confinement and device phases run before it)
AFTER_THE_CANDIDATE = (
    "sandbox/stub/candidate.py", "sandbox/stub/trials.py", "sandbox/stub/share.py", "sandbox/stub/timed.py",
    "sandbox/share_call.py", "sandbox/kernel_share.py", "sandbox/handoff.py", "sandbox/tensor_files.py",
    "sandbox/timed_mix.py", "sandbox/free_blocks.py", "timing/cuda_timer.py", "verify/compare.py",
)


def imports_inside_functions(source: str) -> list[str]:
    """`function: line` of every import statement inside a function (at any depth)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            found += [f"{getattr(node, 'name', 'lambda')}: line {inner.lineno}" for inner in ast.walk(node)
                      if isinstance(inner, (ast.Import, ast.ImportFrom))]
    return found


@pytest.mark.parametrize("module", AFTER_THE_CANDIDATE)
def test_no_import_inside_a_function_the_stub_runs_after_the_candidate(module):
    assert imports_inside_functions((PACKAGE / module).read_text()) == [], (
        f"{module}: bind these at the top of the module (imported before the candidate)")


def test_the_scan_finds_an_import_inside_a_function():
    late = "import os\n\ndef f():\n    from kernelrl.verify.compare import sample_positions\n    return 1\n"
    assert imports_inside_functions(late) == ["f: line 4"]
    assert imports_inside_functions("import os\n\nX = 1\n") == []
