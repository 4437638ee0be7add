"""Problem loading (kernelrl.problems): the built-in suite, KernelBench checkouts, flat directories, clear
errors, hashes."""

from __future__ import annotations

import shutil
import textwrap

import pytest

from kernelrl import ProblemError, load_problem, load_suite
from kernelrl.problems import BUILTIN_DIR

PROBLEM = textwrap.dedent('''
    import torch
    import torch.nn as nn

    class Model(nn.Module):
        def forward(self, x):
            return x * 2

    def get_inputs():
        return [torch.randn(8)]

    def get_init_inputs():
        return []
''')


def test_builtin_suite_loads_with_levels_tags_and_hashes():
    suite = load_suite()
    assert suite.name == "builtin" and len(suite) >= 5
    relu = suite.get("level0/1_relu")
    assert relu.level == 0 and relu.name == "1_relu" and "elementwise" in relu.tags
    assert len(relu.sha256) == 64 and relu.path.is_file()
    assert suite.ids() == sorted(suite.ids(), key=lambda i: (int(i[5]), int(i.split("/")[1].split("_")[0])))


def test_kernelbench_checkout_layout(tmp_path):
    for level, names in ((1, ["1_A.py", "10_B.py", "2_C.py"]), (2, ["1_D.py"])):
        d = tmp_path / "KernelBench" / f"level{level}"
        d.mkdir(parents=True)
        for name in names:
            (d / name).write_text(PROBLEM)
    suite = load_suite(tmp_path)  # the repository root, as a user would pass it
    assert suite.ids() == ["level1/1_A", "level1/2_C", "level1/10_B", "level2/1_D"]
    assert suite.get("level1/10_B").level == 1


def test_flat_directory_and_unmodified_files(tmp_path):
    (tmp_path / "double.py").write_text(PROBLEM)
    (tmp_path / "_helper.py").write_text("x = 1\n")
    suite = load_suite(tmp_path)
    assert suite.ids() == ["double"]
    assert suite.get("double").source == PROBLEM  # loaded as-is


def test_problem_errors_are_clear(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import torch\nclass Model: pass\n")
    with pytest.raises(ProblemError, match="get_inputs, get_init_inputs"):
        load_problem(bad)
    with pytest.raises(ProblemError, match="cannot read"):
        load_problem(tmp_path / "missing.py")
    (tmp_path / "syntax.py").write_text("def (:\n")
    with pytest.raises(ProblemError, match="syntax error"):
        load_problem(tmp_path / "syntax.py")
    with pytest.raises(ProblemError, match="not a directory"):
        load_suite(tmp_path / "nowhere")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ProblemError, match="no problem files"):
        load_suite(empty)


def test_copied_builtin_file_keeps_its_hash(tmp_path):
    src = BUILTIN_DIR / "level0" / "1_relu.py"
    shutil.copy(src, tmp_path / "1_relu.py")
    assert load_problem(tmp_path / "1_relu.py").sha256 == load_problem(src).sha256
