"""Code extraction from completions and the static facts of a candidate (kernelrl.candidates)."""

from __future__ import annotations

from kernelrl.candidates import analyze, extract_code


def test_extraction_picks_the_modelnew_block_not_the_first():
    text = ("```python\nimport torch\n```\n```cuda\nclass ModelNew {}\n```\n"
            "```python\nclass ModelNew:\n    v = 1\n```\n```python\nclass ModelNew:\n    v = 2\n```")
    got = extract_code(text)
    assert got.error is None and "v = 2" in got.code and got.blocks_found == 4


def test_extraction_handles_truncated_fence_and_raw_code_and_failure():
    truncated = extract_code("```python\nclass ModelNew:\n    pass\n")  # never closed: cut off, not code
    assert truncated.code is None and "looks truncated" in truncated.error
    assert extract_code("class ModelNew:\n    pass\n").code.startswith("class ModelNew")
    broken = extract_code("```python\nclass ModelNew(nn.Module:\n```")
    assert broken.code is not None  # kept so the syntax error becomes the feedback
    none = extract_code("```python\nprint(1)\n```")
    assert none.code is None and "ModelNew" in none.error
    assert extract_code("just prose").error.startswith("no code block")


def test_static_analysis_syntax_backend_and_modelnew():
    report = analyze("def f(:\n")
    assert "line 1" in report.syntax_error and "SyntaxError" in report.syntax_error
    assert analyze("class ModelNew: pass\n").defines_modelnew
    assert not analyze("class Model: pass\n").defines_modelnew
    assert analyze("from torch.utils.cpp_extension import load_inline\n"
                   "class ModelNew: pass\n").backend == "cuda-cpp"
    assert analyze("import triton\nclass ModelNew: pass\n").backend == "triton"
