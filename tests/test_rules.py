"""The static analyzer (kernelrl.candidates.rules) against an exploit corpus.

Every file in tests/exploits/ is a candidate module with a three-line header:

    # problem: level0/1_relu        a built-in problem id
    # expect: <rule-id>             a rule analyze_rules must reject it with; `correct` for an honest twin;
                                    `MISSED <rule-id>` for a known gap of the analyzer (reported as xfail)
    # technique: ...                one line on the hack (or on what the honest twin imitates)

The files are data, never imported here: analyze_rules reads their source; a few are evaluated end to end.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

import kernelrl
from kernelrl import Evaluator, Stage, Status
from kernelrl.candidates.rules import RULES, RULES_BY_ID, analyze_rules

HERE = Path(__file__).parent
EXPLOITS = HERE / "exploits"
PACKAGE = Path(kernelrl.__file__).parent
SOLUTIONS = PACKAGE / "problems" / "suites" / "builtin" / "solutions"
EXAMPLES = PACKAGE / "examples"
PROBLEMS = ("level0/1_relu", "level1/1_row_softmax", "level0/2_scale_shift")


@dataclass(frozen=True)
class Case:
    path: Path
    problem: str
    expect: str  # a rule id, 'correct', or 'MISSED <rule-id>'
    technique: str

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
    lines = path.read_text().splitlines()[:3]
    fields = {}
    for key, line in zip(("problem", "expect", "technique"), lines, strict=False):
        prefix = f"# {key}:"
        assert line.startswith(prefix), f"{path.name}: header line should start with {prefix!r}: {line!r}"
        fields[key] = line[len(prefix):].strip()
    assert len(fields) == 3, f"{path.name}: needs the three header lines problem/expect/technique"
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


# -- corpus shape ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_header_is_well_formed(case):
    assert case.problem in PROBLEMS, case.problem
    assert case.technique, "empty technique line"
    rule = case.missed or (None if case.honest else case.expect)
    assert rule is None or rule in RULES_BY_ID, f"unknown rule id {rule!r}"
    assert "class ModelNew" in case.source()


def test_corpus_size():
    assert len(DETECTED) >= 30, f"only {len(DETECTED)} detected exploit files"
    assert len(HONEST) >= 5, f"only {len(HONEST)} honest twins"


def test_every_reject_rule_is_covered_by_an_exploit():
    covered = {c.expect for c in DETECTED}
    missing = sorted(r.id for r in RULES if r.policy == "reject" and r.id not in covered)
    assert not missing, f"reject rules without an exploit file: {missing}"


# -- static verdicts ------------------------------------------------------------------------------------------

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


@pytest.mark.parametrize("case", MISSED, ids=_ids(MISSED))
def test_known_gap(case):
    """Known analyzer gaps: reported as xfail while missed; once caught, flip the header to `expect: <rule>`."""
    rejected = _rejected(analyze_rules(case.source()))
    if case.missed not in rejected:
        print(f"MISSED {case.missed}: {case.name}: {case.technique}")
        pytest.xfail(f"analyzer misses {case.missed}: {case.technique}")


REFERENCE_SOURCES = sorted(SOLUTIONS.rglob("*.py")) + [
    EXAMPLES / name for name in ("relu_triton.py", "softmax_triton.py", "scale_shift_triton.py")]


@pytest.mark.parametrize("path", REFERENCE_SOURCES, ids=[str(p.relative_to(PACKAGE)) for p in REFERENCE_SOURCES])
def test_no_false_rejection_of_reference_solutions(path):
    findings = analyze_rules(path.read_text())
    assert not _rejected(findings), [(f.rule, f.line, f.detail) for f in findings if f.policy == "reject"]


def test_reference_solutions_are_found():
    assert len(REFERENCE_SOURCES) > 50


# -- policies -------------------------------------------------------------------------------------------------

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


# -- end to end -----------------------------------------------------------------------------------------------

E2E_EXPLOITS = ["x01_decoy_kernel.py", "x02_lazy_copy_kernel.py", "x10_try_fallback.py",
                "x19_patch_perf_counter.py", "x22_exec_string.py"]
# h12: @triton.autotune needs the sandbox's untimed autotuner in CPU mode (no driver to benchmark with)
E2E_TWINS = ["h01_relu_helper_function.py", "h12_relu_autotune.py", "h13_relu_heuristics.py",
              # the op census's honest twins (metadata in hooks and grids, layout copies, atomics, views, clones)
              "h16_relu_grid_class_hook.py", "h17_relu_transposed_layout.py", "h18_relu_zeros_atomic.py",
              "h19_relu_per_row_views.py", "h20_relu_scratch_clone.py"]


@pytest.fixture(scope="module")
def evaluator():
    with Evaluator(device="cpu", trials=2) as ev:
        yield ev


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


@pytest.mark.parametrize("name", E2E_TWINS)
def test_honest_twin_end_to_end_is_correct(evaluator, suite, name):
    case = BY_NAME[name]
    result = evaluator.evaluate(suite.get(case.problem), case.source())
    assert result.status is Status.CORRECT, (result.status, result.message, result.feedback)
    assert not _rejected(result.findings)


HONEST = (Path(__file__).parents[1] / "src" / "kernelrl" / "examples" / "relu_triton.py").read_text()


@pytest.mark.parametrize("before, after", [
    # host-side list and attribute names that only look like banned ones
    ("        n = x.numel()", "        dims = [0, 1]\n        dims.remove(0)\n        self.graph = None\n        n = x.numel()"),
    # a launch through a variable chosen at run time
    ("        relu_kernel[(triton.cdiv(n, block),)](x, y, n, BLOCK=block)",
     "        k = relu_kernel if n > 0 else relu_kernel\n        k[(triton.cdiv(n, block),)](x, y, n, BLOCK=block)"),
    # a launch through an attribute set in __init__
    ("        super().__init__()", "        super().__init__()\n        self.kernel = relu_kernel"),
])
def test_legitimate_variants_are_not_rejected(before, after):
    source = HONEST.replace(before, after)
    if "self.kernel = relu_kernel" in source:
        source = source.replace("        relu_kernel[(triton.cdiv(n, block),)]", "        self.kernel[(triton.cdiv(n, block),)]")
    assert source != HONEST
    assert [f for f in analyze_rules(source) if f.policy == "reject"] == []


def test_kernel_made_by_calling_triton_jit_counts():
    source = HONEST.replace("@triton.jit\ndef relu_kernel(", "def _relu_impl(").replace(
        "class ModelNew", "relu_kernel = triton.jit(_relu_impl)\n\n\nclass ModelNew")
    assert "triton.jit(_relu_impl)" in source
    assert [f for f in analyze_rules(source) if f.policy == "reject"] == []
