"""The static analyzer (kernelrl.candidates.rules) against an exploit corpus.

Every file in tests/exploits/ is a candidate module with a header (tests/corpus.py):

    # problem: level0/1_relu        a built-in problem id
    # expect: <rule-id>             a rule analyze_rules must reject it with; `correct` for an honest twin;
                                    `MISSED <rule-id>` for a known gap of the analyzer (reported as xfail)
    # device: gpu                   optional: evaluated only where a GPU is (CUDA C++)
    # technique: ...                one line on the hack (or on what the honest twin imitates)

The files are data, never imported here: analyze_rules reads their source; some exploits and every honest twin
(h*: false rejections are bugs of the same weight as holes) are evaluated end to end.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

import kernelrl
from kernelrl import Evaluator, Stage, Status, VerdictSettings
from kernelrl.candidates.rules import RULES, RULES_BY_ID, analyze_rules

HERE = Path(__file__).parents[2]  # tests/
EXPLOITS = HERE / "exploits"
PACKAGE = Path(kernelrl.__file__).parent
SOLUTIONS = PACKAGE / "problems" / "suites" / "builtin" / "solutions"
EXAMPLES = PACKAGE / "examples"
PROBLEMS = set(kernelrl.load_suite().ids())


@dataclass(frozen=True)
class Case:
    path: Path
    problem: str
    expect: str  # a rule id, 'correct', or 'MISSED <rule-id>'
    technique: str
    device: str = "cpu"  # 'gpu': evaluated end to end only on a GPU (CUDA C++)

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def honest(self) -> bool:
        return self.expect == "correct"

    @property
    def missed(self) -> str | None:
        """The rule the analyzer should (but does not yet) report, for a known gap."""
        head, _, rule = self.expect.partition(" ")
        return rule.strip() if head == "MISSED" else None

    @property
    def detected(self) -> bool:  # an exploit the analyzer must reject
        return not self.honest and self.missed is None

    def source(self) -> str:
        return self.path.read_text()


def _parse(path: Path) -> Case:
    lines = path.read_text().splitlines()
    assert lines[0].startswith("# problem:") and lines[1].startswith("# expect:"), \
        f"{path.name}: header order"
    fields = {}
    for line in lines:
        if not line.startswith("# ") or ":" not in line:
            break
        key, _, value = line[2:].partition(":")
        assert key in ("problem", "expect", "technique", "device"), (f"{path.name}: unknown "
                                                                     f"header line {line!r}")
        fields[key] = value.strip()
    assert {"problem", "expect", "technique"} <= set(fields), (f"{path.name}: needs "
                                                               "problem/expect/technique lines")
    return Case(path, **fields)


CASES = [_parse(p) for p in sorted(EXPLOITS.glob("*.py"))]
BY_NAME = {case.name: case for case in CASES}
DETECTED = [c for c in CASES if c.detected]
HONEST = [c for c in CASES if c.honest]
MISSED = [c for c in CASES if c.missed]


def _ids(cases):
    return [c.name for c in cases]


def _rejected(findings) -> set[str]:
    return {f.rule for f in findings if f.policy == "reject"}


# -- corpus shape --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_header_is_well_formed(case):
    assert case.problem in PROBLEMS, case.problem
    assert case.technique, "empty technique line"
    rule = case.missed or (None if case.honest else case.expect)
    assert rule is None or rule in RULES_BY_ID, f"unknown rule id {rule!r}"
    assert "class ModelNew" in case.source()
    assert case.device in ("cpu", "gpu")


def test_corpus_size():
    assert len(DETECTED) >= 30, f"only {len(DETECTED)} detected exploit files"
    # at least 30 honest but unusual candidates, across the suite's problems
    assert len(HONEST) >= 30, f"only {len(HONEST)} honest twins"
    assert len({c.problem for c in HONEST}) >= 15, "honest twins should span the suite, not one problem"


def test_every_reject_rule_is_covered_by_an_exploit():
    covered = {c.expect for c in DETECTED}
    missing = sorted(r.id for r in RULES if r.policy == "reject" and r.id not in covered)
    assert not missing, f"reject rules without an exploit file: {missing}"


# -- static verdicts -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("case", DETECTED, ids=_ids(DETECTED))
def test_exploit_is_rejected(case):
    findings = analyze_rules(case.source())
    assert case.expect in _rejected(findings), (
        f"{case.name} ({case.technique}): expected a reject finding {case.expect!r}, got "
        f"{[(f.rule, f.policy, f.line, f.detail) for f in findings]}")


@pytest.mark.parametrize("case", HONEST, ids=_ids(HONEST))
def test_honest_twin_is_not_rejected(case):
    findings = analyze_rules(case.source())
    assert not _rejected(findings), [(f.rule, f.line, f.detail) for f in findings if f.policy == "reject"]


@pytest.mark.parametrize("case", [
    pytest.param(case, marks=pytest.mark.xfail(strict=True, reason=f"analyzer misses {case.missed}: "
                                                                   f"{case.technique}"))
    for case in MISSED], ids=_ids(MISSED))
def test_known_gap(case):
    """Known analyzer gaps, each a strict xfail: while missed it fails as expected; once caught
    it passes, which fails the suite until its header is flipped to `expect: <rule>`."""
    assert case.missed in _rejected(analyze_rules(case.source()))


REFERENCE_SOURCES = sorted(SOLUTIONS.rglob("*.py")) + [
    EXAMPLES / name for name in ("relu_triton.py", "softmax_triton.py", "scale_shift_triton.py")]


@pytest.mark.parametrize("path", REFERENCE_SOURCES,
                         ids=[str(p.relative_to(PACKAGE)) for p in REFERENCE_SOURCES])
def test_no_false_rejection_of_reference_solutions(path):
    findings = analyze_rules(path.read_text())
    assert not _rejected(findings), [(f.rule, f.line, f.detail) for f in findings if f.policy == "reject"]


def test_reference_solutions_are_found():
    assert len(REFERENCE_SOURCES) > 50


# -- policies ------------------------------------------------------------------------------------------------

def test_policy_warn_and_off():
    source = BY_NAME["x02_lazy_copy_kernel.py"].source()
    default = [f for f in analyze_rules(source) if f.rule == "torch-compute"]
    assert default and all(f.policy == "reject" for f in default)

    warned = analyze_rules(source, {"torch-compute": "warn"})
    torch_compute = [f for f in warned if f.rule == "torch-compute"]
    assert torch_compute and all(f.policy == "warn" for f in torch_compute)
    assert "torch-compute" not in _rejected(warned)
    assert torch_compute[0].message == RULES_BY_ID["torch-compute"].message

    off = analyze_rules(source, {"torch-compute": "off"})
    assert not any(f.rule == "torch-compute" for f in off)
    assert not _rejected(off)  # the kernel is launched, nothing else is wrong with it


# -- end to end ----------------------------------------------------------------------------------------------

E2E_EXPLOITS = ["x01_decoy_kernel.py", "x02_lazy_copy_kernel.py", "x10_try_fallback.py",
                "x19_patch_perf_counter.py", "x22_exec_string.py"]
# every honest twin, end to end with the default checks (static rules, op
# census, frontend): a false rejection is a bug of the same weight as a hole.
# CPU mode runs the Triton ones (@triton.autotune through the sandbox's untimed
# autotuner); `device: gpu` ones (CUDA C++) run in the gpu test set
E2E_TWINS = [c for c in HONEST if c.device == "cpu"]
GPU_TWINS = [c for c in HONEST if c.device == "gpu"]


@pytest.fixture(scope="module")
def evaluator(cpu_evaluator):
    return cpu_evaluator.with_verdict(VerdictSettings(trials=2))


def test_end_to_end_cases_use_distinct_rules():
    assert len({BY_NAME[name].expect for name in E2E_EXPLOITS}) == len(E2E_EXPLOITS)


@pytest.mark.parametrize("name", E2E_EXPLOITS)
def test_exploit_end_to_end_is_hack_detected(evaluator, suite, name):
    case = BY_NAME[name]
    result = evaluator.evaluate(suite.get(case.problem), case.source())
    assert result.status is Status.HACK_DETECTED, (result.status, result.message)
    assert result.stage is Stage.STATIC
    assert case.expect in {f.rule for f in result.findings if f.policy == "reject"}
    assert case.expect in result.feedback


@pytest.mark.parametrize("case", E2E_TWINS, ids=_ids(E2E_TWINS))
def test_honest_twin_end_to_end_is_correct(evaluator, suite, case):
    result = evaluator.evaluate(suite.get(case.problem), case.source())
    assert result.status is Status.CORRECT, (result.status, result.message, result.feedback)
    assert not _rejected(result.findings)


@pytest.mark.gpu
def test_honest_twins_end_to_end_are_correct_on_gpu(suite):
    """Every honest twin on a GPU, the real oracle (CUDA C++ ones only run there), with
    timing on (against eager: a torch.compile baseline per problem would be most of the
    test's time and is not what it is about), as one batch (timing still one at a time)."""
    wrong = []
    # its own evaluator: the GPU's (the session's shared one runs in CPU mode)
    with Evaluator(device="cuda", verdict=VerdictSettings(trials=2, inductor_baseline=False)) as ev:
        for case, result in zip(HONEST, ev.evaluate_many([(suite.get(c.problem), c.source()) for c in HONEST],
                                                         ordered=True), strict=True):
            print(case.name, result.status.value, result.message)
            if result.status is not Status.CORRECT:
                wrong.append((case.name, result.status.value, result.message, result.feedback[-2000:]))
    assert not wrong, wrong
    assert GPU_TWINS, "no CUDA C++ honest twin"


# (the relu example; named apart from HONEST, the honest twins, which it used to shadow in test_corpus_size)
RELU_EXAMPLE = (Path(__file__).parents[3] / "src" / "kernelrl" / "examples" / "relu_triton.py").read_text()


@pytest.mark.parametrize("before, after", [
    # host-side list and attribute names that only look like banned ones
    ("        n = x.numel()",
     "        dims = [0, 1]\n        dims.remove(0)\n        self.graph = None\n        n = x.numel()"),
    # a launch through a variable chosen at run time
    ("        relu_kernel[(triton.cdiv(n, block),)](x, y, n, BLOCK=block)",
     "        k = relu_kernel if n > 0 else relu_kernel\n"
     "        k[(triton.cdiv(n, block),)](x, y, n, BLOCK=block)"),
    # a launch through an attribute set in __init__
    ("        super().__init__()", "        super().__init__()\n        self.kernel = relu_kernel"),
])
def test_legitimate_variants_are_not_rejected(before, after):
    source = RELU_EXAMPLE.replace(before, after)
    if "self.kernel = relu_kernel" in source:
        source = source.replace("        relu_kernel[(triton.cdiv(n, block),)]",
                                "        self.kernel[(triton.cdiv(n, block),)]")
    assert source != RELU_EXAMPLE
    assert [f for f in analyze_rules(source) if f.policy == "reject"] == []


def test_kernel_made_by_calling_triton_jit_counts():
    source = RELU_EXAMPLE.replace("@triton.jit\ndef relu_kernel(", "def _relu_impl(").replace(
        "class ModelNew", "relu_kernel = triton.jit(_relu_impl)\n\n\nclass ModelNew")
    assert "triton.jit(_relu_impl)" in source
    assert [f for f in analyze_rules(source) if f.policy == "reject"] == []


# helper classes: what runs in forward is checked, what ran when they were built (in __init__) is not
HELPER_MODULE = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def k(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + o, tl.load(x_ptr + o, mask=o < n), mask=o < n)


class Norm(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(d))

    def forward(self, x):
        y = torch.empty_like(x)
        k[(1,)](x, y, x.numel(), BLOCK=1024)
        return y


class ModelNew(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(d))
        self.norm = Norm(d)

    def forward(self, x):
        return self.norm(x)
'''


@pytest.mark.parametrize("before, after, rejected", [
    # the honest form (corpus h35): a helper module built in __init__, torch.randn in both __init__s
    ("", "", False),
    # built in forward, the helper's __init__ runs in forward: its torch.randn counts
    ("        return self.norm(x)", "        return Norm(x.shape[-1])(x)", True),
    # the helper's forward computing with torch still counts
    ("        y = torch.empty_like(x)\n", "        y = x.relu()\n", True),
    # a name that is also bound to something else is no helper any more: .norm(...) may be Tensor.norm
    ("        self.norm = Norm(d)", "        self.norm = Norm(d)\n        self.norm = self.bias", True),
    # a lambda's body runs when called: a helper built there runs its __init__ in forward
    ("        self.norm = Norm(d)", "        self.norm = lambda x: Norm(x.shape[-1])(x)", True),
    # a classmethod factory returns a helper: its forward is reached (and checked)
    ("        self.norm = Norm(d)", "        self.norm = Norm.create(d)", False),
    # Base.method(self) reaches that method of the module's base classes, torch compute in it counts
    ("        return self.norm(x)", "        return Base.helper(self, self.norm(x))", True),
])
def test_helper_classes_are_checked_where_they_run(before, after, rejected):
    source = HELPER_MODULE.replace(before, after) if before else HELPER_MODULE
    source = source.replace("class Norm(nn.Module):", "class Base:\n    def helper(self, x):\n"
                            "        return x.sum()\n\n\n"
                            "class Norm(nn.Module):\n    @classmethod\n    def create(cls, d):\n"
                            "        return cls(d)\n")
    assert before in HELPER_MODULE
    found = _rejected(analyze_rules(source))
    assert (found == {"torch-compute"}) if rejected else not found, (after, found)
    if "Norm.create" in source:  # the factory's instance is the helper: nothing else changes
        assert _rejected(analyze_rules(source.replace("y = torch.empty_like(x)", "y = x.exp()"))) \
            == {"torch-compute"}


def test_a_per_call_helpers_super_init_does_not_reach_model_init():
    """A launcher built in forward calls super().__init__() of a module-defined
    base (corpus h39): that reaches the base's __init__, not every __init__
    (ModelNew's draws its parameters with torch.randn at init time)."""
    source = BY_NAME["h39_scale_shift_launcher_subclass_per_call.py"].source()
    assert not _rejected(analyze_rules(source))
    base_computes = source.replace("        self.n = n\n",
                                   "        self.n = n\n        torch.relu(torch.ones(1))\n")
    assert base_computes != source
    assert _rejected(analyze_rules(base_computes)) == {"torch-compute"}


def test_attribute_containers_are_only_those_no_other_route_can_set():
    import ast

    from kernelrl.candidates.reach import python_containers

    def containers(body: str) -> set[str]:
        source = "class M:\n    def __init__(self):\n        self.seen = set()\n" + body
        return {c for c in python_containers(ast.parse(source)) if c.startswith("self.")}

    # a buffer registered under another literal name, and a local set of the same name, leave it a set
    other_buffer = "        self.register_buffer('w', None)\n    def f(self):\n        seen = set()\n"
    assert containers(other_buffer) == {"self.seen"}
    assert containers("    def f(self, t):\n        self.seen = t\n") == set()  # set to something else
    assert containers("    def f(self, t):\n        self.seen, x = t\n") == set()  # unpacked into
    assert containers("    def f(self, t):\n        setattr(self, 'seen', t)\n") == set()  # by its name
    assert containers("    def f(self, t, n):\n        setattr(self, n, t)\n") == set()  # by a computed name
    assert containers("    def f(self, t):\n        self.__dict__['x'] = t\n") == set()
    assert containers("    seen = None\n") == set()  # a class attribute of that name
