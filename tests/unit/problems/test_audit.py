"""The problem audit flags degenerate problems with the right reason, and the evaluator refuses them."""

from __future__ import annotations

import textwrap

import pytest
from conftest import example
from torch import nn

from kernelrl import Stage, Status, VerdictSettings, load_problem

HEADER = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"


def problem_file(tmp_path, name: str, body: str):
    path = tmp_path / f"{name}.py"
    path.write_text(HEADER + textwrap.dedent(body))
    return load_problem(path)


DEGENERATE = {
    # softmax over a huge row of rand() inputs (KernelBench style): every value is < 1e-5, below atol=1e-4
    "huge_softmax": ("""
        class Model(nn.Module):
            def forward(self, x):
                return torch.softmax(x, dim=-1)
        def get_inputs():
            return [torch.rand(4, 200_000)]
        def get_init_inputs():
            return []
    """, {"zeros_pass", "input_independent"}),
    # min over a dim, then clamped from below at 0 and above at 0: always zero
    "min_clamp_zero": ("""
        class Model(nn.Module):
            def forward(self, x):
                return torch.clamp(torch.min(x, dim=1).values, min=-0.0, max=0.0)
        def get_inputs():
            return [torch.randn(64, 32)]
        def get_init_inputs():
            return []
    """, {"zeros_pass", "input_independent"}),
    # training-mode dropout: the reference disagrees with itself
    "training_dropout": ("""
        class Model(nn.Module):
            def forward(self, x):
                return F.dropout(x, p=0.5, training=True)
        def get_inputs():
            return [torch.randn(64, 32)]
        def get_init_inputs():
            return []
    """, {"nondeterministic"}),
    # the output is a parameter: it does not depend on the input at all
    "ignores_input": ("""
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.w = nn.Parameter(torch.randn(64, 32))
            def forward(self, x):
                return self.w * 1.0
        def get_inputs():
            return [torch.randn(64, 32)]
        def get_init_inputs():
            return []
    """, {"input_independent"}),
    # an identity: returning the input passes
    "identity": ("""
        class Model(nn.Module):
            def forward(self, x):
                return x.clone()
        def get_inputs():
            return [torch.randn(64, 32)]
        def get_init_inputs():
            return []
    """, {"returns_input"}),
    # the weights are created but never used
    "unused_weights": ("""
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.linear = nn.Linear(32, 32)
            def forward(self, x):
                return torch.tanh(x) * 2
        def get_inputs():
            return [torch.randn(64, 32)]
        def get_init_inputs():
            return []
    """, {"weights_ignored"}),
    # depends on the input, but far below the tolerance: a constant passes
    "near_constant": ("""
        class Model(nn.Module):
            def forward(self, x):
                return 5.0 + 1e-7 * x
        def get_inputs():
            return [torch.randn(64, 32)]
        def get_init_inputs():
            return []
    """, {"constant_pass", "input_independent"}),
    "raises": ("""
        class Model(nn.Module):
            def forward(self, x):
                return x @ x
        def get_inputs():
            return [torch.randn(3, 5)]
        def get_init_inputs():
            return []
    """, {"reference_raises"}),
}


@pytest.fixture(scope="module")
def evaluator(cpu_evaluator):
    return cpu_evaluator.with_verdict(VerdictSettings(trials=2))


@pytest.mark.parametrize("name", sorted(DEGENERATE))
def test_degenerate_problem_is_flagged_with_the_right_reason(evaluator, tmp_path, name):
    body, expected = DEGENERATE[name]
    audit = evaluator.audit(problem_file(tmp_path, name, body))
    assert {f.flag for f in audit.flags} == expected, audit.summary()
    assert audit.refusing


def test_evaluator_refuses_flagged_problem_unless_told_otherwise(evaluator, tmp_path):
    body, _ = DEGENERATE["identity"]
    problem = problem_file(tmp_path, "identity", body)
    identity = ("import torch.nn as nn\nclass ModelNew(nn.Module):\n    def forward(self, x):\n"
                "        return x.clone()\n")
    result = evaluator.evaluate(problem, identity)
    assert result.status is Status.UNSUPPORTED and result.stage is Stage.REFERENCE
    assert "returns_input" in result.message and "refuse_flagged_problems" in result.feedback
    with evaluator.with_verdict(refuse_flagged_problems=False, static_checks=False,
                                runtime_policy={"rt-no-kernel-launched": "off",
                                                "rt-output-provenance": "off"}) as lenient:
        assert lenient.evaluate(problem, identity).status is Status.CORRECT


def test_waived_flag_is_reported_but_not_refused(evaluator, tmp_path):
    body, _ = DEGENERATE["identity"]
    waived = ('METADATA = {"audit_waivers": {"returns_input": "a copy '
              'kernel is the point"}}\n') + textwrap.dedent(body)
    problem = problem_file(tmp_path, "identity_waived", waived)
    audit = evaluator.audit(problem)
    assert [f.flag for f in audit.flags] == ["returns_input"] and audit.flags[0].waived
    assert not audit.refusing


def test_healthy_builtin_problem_has_no_flags(evaluator, suite):
    audit = evaluator.audit(suite.get("level1/1_row_softmax"))
    assert audit.flags == ()
    assert evaluator.evaluate(suite.get("level1/1_row_softmax"), example("softmax_triton.py")).correct


# default initializations do not depend on the seed (a norm layer's ones and
# zeros, a constant buffer): the audit's other-weights model perturbs its
# weights, so these use their weights and are not flagged weights_ignored
DEFAULT_INIT_WEIGHTS = {
    "layernorm": "self.norm = nn.LayerNorm(32)",
    "groupnorm": "self.norm = nn.GroupNorm(4, 32)",
    "batchnorm_eval": "self.norm = nn.BatchNorm1d(32).eval()",
    "rmsnorm": "self.norm = nn.RMSNorm(32)",
    "scale_buffer": "self.register_buffer('scale', torch.full((32,), 2.0))\n"
                    "                self.norm = lambda x: x * self.scale", }


@pytest.mark.parametrize("name", sorted(DEFAULT_INIT_WEIGHTS))
def test_default_initialized_weights_are_not_judged_ignored(evaluator, tmp_path, name):
    body = f"""
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                {DEFAULT_INIT_WEIGHTS[name]}
            def forward(self, x):
                return self.norm(x)
        def get_inputs():
            return [torch.randn(64, 32) * 3 + 1]
        def get_init_inputs():
            return []
    """
    flags = {f.flag for f in evaluator.audit(problem_file(tmp_path, name, body)).flags}
    # (eval-mode BatchNorm with fresh running statistics is x / sqrt(1 + eps): returning the input passes)
    assert flags == ({"returns_input"} if name == "batchnorm_eval" else set())


def test_perturbed_weights_move_every_floating_tensor_and_keep_integers():
    from kernelrl.verify.degeneracy import perturbed

    bn = nn.BatchNorm1d(8)
    before = {k: v.clone() for k, v in bn.state_dict().items()}
    perturbed(bn)
    after = bn.state_dict()
    assert all(not after[k].equal(before[k]) for k in ("weight", "bias", "running_mean", "running_var"))
    assert after["num_batches_tracked"].equal(before["num_batches_tracked"])
    again = nn.BatchNorm1d(8)
    assert perturbed(again).state_dict()["weight"].equal(after["weight"])  # seeded: the same every audit
