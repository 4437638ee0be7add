"""The reference is not in the sandbox: by the time candidate code is imported, the stub has taken
what it needs from the problem (inputs, constructor arguments) and dropped the module
(kernelrl.sandbox.problem_data), and the problem file reads empty inside the sandbox (isolation.hide_files).
CPU, real evaluator, real sandbox."""

from __future__ import annotations

import corpus
import pytest
from conftest import example

from kernelrl import Stage, Status, VerdictSettings, load_problem, load_suite
from kernelrl.sandbox.isolation import pid_namespace_prefix

PROBE = corpus.case("exploits_sandbox/p01_reference_hunt.py")


@pytest.fixture(scope="module")
def evaluator(cpu_evaluator):
    return cpu_evaluator.with_verdict(VerdictSettings(static_checks=False, trials=2))


def test_a_candidate_finds_no_route_to_the_reference(evaluator):
    """The probe walks sys.modules, every module's globals, the subclasses of nn.Module and object, gc, the
    frames above __init__ and forward, linecache, open files, the problem's path and the evaluation directory,
    and raises LEAK on the first find: `correct` means it found nothing (it did find the module, Model and the
    file before)."""
    problem = load_suite().get(PROBE.problem)
    result = evaluator.evaluate(problem, PROBE.source())
    assert result.status is Status.CORRECT, (result.message, result.feedback[-1500:])
    if pid_namespace_prefix():  # the file is hidden in the sandbox's own mount namespace, where there is one
        assert {"readonly-fs", "problem-hidden"} <= set(result.environment.isolation)
    assert "def get_init_inputs(" in problem.path.read_text()  # hidden for the sandbox only


def test_a_problem_that_stays_reachable_is_a_problem_error(evaluator, tmp_path):
    """Constructor arguments that hold the problem's own function keep its module alive after the stub dropped
    it: the evaluation stops before the candidate is imported, as a problem error, instead of running it with
    the reference in reach."""
    path = tmp_path / "holds_itself.py"
    path.write_text(
        "import torch\nimport torch.nn as nn\n"
        "def activation(x):\n    return torch.relu(x)\n"
        "class Model(nn.Module):\n    def __init__(self, fn):\n        super().__init__()\n"
        "        self.fn = fn\n"
        "    def forward(self, x):\n        return self.fn(x)\n"
        "def get_inputs():\n    return [torch.randn(64, 32)]\n"
        "def get_init_inputs():\n    return [activation]\n")
    result = evaluator.evaluate(load_problem(path), example("relu_triton.py"))
    assert result.status is Status.RUNTIME_ERROR and result.stage is Stage.REFERENCE, result.message
    assert "stays reachable" in result.feedback and "activation" in result.feedback, result.feedback
