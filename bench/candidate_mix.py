"""The candidates the throughput benchmarks feed an evaluator (bench/throughput.py, bench/scaling.py,
bench/serve_load.py): the fixed mix (correct, wrong, crashing, slow-but-correct), the built-in reference
solutions, fresh copies that miss every cache, and a GRPO-style reward batch of completions."""

from __future__ import annotations

import ast
from pathlib import Path

from kernelrl import load_suite

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "src" / "kernelrl" / "examples"
SOLUTIONS = ROOT / "src" / "kernelrl" / "problems" / "suites" / "builtin" / "solutions"

SLOW_RELU = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, y_ptr, n_elements, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(y_ptr + offsets, tl.maximum(x, 0.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        for _ in range(4):  # the same work four times, with small blocks: correct and slow
            relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        return y
'''


def mix() -> list[tuple[str, str, str]]:
    """(kind, problem id, source)."""
    def ex(name: str) -> str:
        return (EXAMPLES / name).read_text()

    def sol(pid: str) -> str:
        return (SOLUTIONS / f"{pid}.py").read_text()

    return [
        ("correct", "level0/1_relu", ex("relu_triton.py")),
        ("correct", "level0/2_scale_shift", ex("scale_shift_triton.py")),
        ("correct", "level1/1_row_softmax", ex("softmax_triton.py")),
        ("correct", "level0/4_silu", sol("level0/4_silu")),
        ("correct", "level0/3_gelu_tanh", sol("level0/3_gelu_tanh")),
        ("wrong", "level1/1_row_softmax", ex("softmax_off_by_one.py")),
        ("wrong", "level0/1_relu", ex("relu_triton.py").replace("tl.maximum(x, 0.0)", "tl.maximum(x, 0.5)")),
        ("crashing", "level0/1_relu", ex("relu_abort.py")),
        ("slow", "level0/1_relu", SLOW_RELU),
    ]


def solutions(only: str) -> list[tuple[str, str, str]]:
    """(kind, problem id, source) for each built-in reference solution whose problem id starts with `only`."""
    suite = load_suite()
    return [("correct", p.id, path.read_text()) for p in suite
            if p.id.startswith(only) and (path := suite.solution_path(p)) is not None]


def fresh(code: str, tag: str) -> str:
    """`code` made new: a comment with `tag` opening each @triton.jit (or autotuned) function's body changes
    its source, hence Triton's cache key, and a module constant changes the AST, hence the result cache's
    key."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return code + f"\n# fresh candidate {tag}\n"
    lines = code.splitlines()
    bodies = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and any("jit" in ast.unparse(d) or "autotune" in ast.unparse(d)
                                                      for d in node.decorator_list):
            first = node.body[0]
            bodies.append((first.lineno - 1, first.col_offset))
    for line, indent in sorted(bodies, reverse=True):
        lines.insert(line, " " * indent + f"# fresh candidate {tag}")
    return "\n".join(lines) + f"\n\n_FRESH_CANDIDATE = {tag!r}\n"


def as_completion(code: str) -> str:
    return f"Here is the optimized model.\n\n```python\n{code}\n```\n"


def grpo_items(chosen: list[tuple[str, str, str]], size: int) -> list[tuple[str, str, str, str]]:
    """`size` completions of one reward batch, (kind, problem id, completion text, code): a quarter each
    correct (the chosen candidates, cycling), wrong (the mix's wrong kernels), compile error (a chosen
    candidate with a syntax error) and format error (prose, no code block)."""
    wrong = [(pid, code) for kind, pid, code in mix() if kind == "wrong"]
    out = []
    for k in range(size):
        _, pid, code = chosen[(k // 4) % len(chosen)]
        kind = ("correct", "wrong", "compile_error", "format_error")[k % 4]
        if kind == "wrong":
            pid, code = wrong[(k // 4) % len(wrong)]
        elif kind == "compile_error":
            code = code + "\n\ndef broken(:\n    pass\n"
        elif kind == "format_error":
            out.append((kind, pid, "A Triton kernel that tiles the rows would do it; no code this time.", ""))
            continue
        out.append((kind, pid, "", code))
    return out
