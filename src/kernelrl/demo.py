"""The demo: evaluate the example candidates shipped in `kernelrl/examples/` on built-in problems.

Each example has a known verdict, so the demo doubles as a smoke test of the whole pipeline (sandbox,
judge, verdicts) on whatever machine it runs on.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kernelrl.evaluate import Scorer
from kernelrl.problems import load_suite
from kernelrl.results import EvalResult, Status

EXAMPLES_DIR = Path(__file__).parent / "examples"


@dataclass(frozen=True)
class DemoCase:
    example_file: str  # file name in EXAMPLES_DIR
    problem_id: str  # a built-in problem
    expected_status: Status

    @property
    def path(self) -> Path:
        return EXAMPLES_DIR / self.example_file


DEMO_CASES: tuple[DemoCase, ...] = (
    DemoCase("relu_triton.py", "level0/1_relu", Status.CORRECT),
    DemoCase("scale_shift_triton.py", "level0/2_scale_shift", Status.CORRECT),
    DemoCase("softmax_triton.py", "level1/1_row_softmax", Status.CORRECT),
    DemoCase("softmax_off_by_one.py", "level1/1_row_softmax", Status.WRONG_OUTPUT),
    DemoCase("relu_abort.py", "level0/1_relu", Status.CRASHED),
    DemoCase("relu_allclose_hack.py", "level0/1_relu", Status.HACK_DETECTED),
)


def run_demo(
    scorer: Scorer,
    cases: tuple[DemoCase, ...] = DEMO_CASES,
    on_result: Callable[[DemoCase, EvalResult], None] | None = None,
) -> list[tuple[DemoCase, EvalResult]]:
    """Evaluate every case with `scorer` (concurrently); `on_result` lets a caller show progress as each
    verdict arrives. Returns (case, result) in the order of `cases`."""
    suite = load_suite("builtin")
    items = [(suite.get(case.problem_id), case.path.read_text()) for case in cases]
    results: dict[int, EvalResult] = {}
    for index, result in scorer.evaluate_indexed(items, kind="code"):
        results[index] = result
        if on_result is not None:
            on_result(cases[index], result)
    return [(case, results[k]) for k, case in enumerate(cases)]
