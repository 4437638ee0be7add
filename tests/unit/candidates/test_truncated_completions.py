"""A completion cut off by the token limit (its code block never closed) is a format error that says so, never
a verdict on the partial module: a `forward` cut before its kernel launch would otherwise parse and be judged
`hack_detected` by the static rules (no-custom-kernel)."""

from __future__ import annotations

import pytest

from kernelrl.candidates import Candidate, extract_code
from kernelrl.candidates.rules import analyze_rules
from kernelrl.problems import load_suite
from kernelrl.results import Status

RELU = "level0/1_relu"


@pytest.fixture(scope="module")
def relu():
    suite = load_suite()
    problem = suite.get(RELU)
    return problem, suite.solution_path(problem).read_text()


def completion(code: str) -> str:
    return "Here is a Triton kernel for ReLU.\n\n```python\n" + code


def forward_cuts(solution: str) -> list[str]:
    """The solution cut after every line of its `forward` but the last, and once inside the launch line."""
    start = solution.index("    def forward")
    lines = solution[start:].splitlines(keepends=True)
    cuts = [solution[:start] + "".join(lines[:n]) for n in range(1, len(lines))]
    return [*cuts, solution[:solution.index("(x, y, n, BLOCK")]]


def test_a_completion_cut_inside_forward_is_a_truncation_format_error(relu):
    _, solution = relu
    cuts = forward_cuts(solution)
    # what the cut modules are: several parse, and the static rules reject them (the launch never shows)
    assert any(f.policy == "reject" and f.rule == "no-custom-kernel" for f in analyze_rules(cuts[-1]))
    for code in cuts:
        extraction = extract_code(completion(code))
        assert extraction.code is None and "looks truncated" in extraction.error, code[-80:]
        candidate = Candidate.from_text(completion(code))
        assert candidate.code is None and candidate.from_completion and "never closed" in candidate.error
    # the same answer with its block closed is the solution, as before
    assert extract_code(completion(solution) + "```\nIt masks negative values.").code == solution


def test_the_evaluator_judges_a_truncated_completion_format_error_not_hack_detected(relu, cpu_evaluator):
    problem, solution = relu
    launch = solution.index("        relu_kernel[")
    with cpu_evaluator.with_verdict(timing=False) as evaluator:
        # before the launch; inside
        for code in (solution[:launch], solution[:solution.index("(x, y, n, BLOCK")]):
            result = evaluator.evaluate(problem, Candidate.from_text(completion(code), "completion"))
            assert result.status is Status.FORMAT_ERROR, (result.status, result.message)
            assert "looks truncated" in result.message and "looks truncated" in result.feedback
            assert not result.compiled
            # the module itself, handed in as code, is what the rules reject
            as_code = evaluator.evaluate(problem, Candidate.from_text(code, "code"))
            assert as_code.status is Status.HACK_DETECTED
