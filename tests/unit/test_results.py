"""The typed result's lossless JSON (kernelrl.results)."""

from __future__ import annotations

from kernelrl import EvalResult, Stage, Status
from kernelrl.results import CorrectnessReport, Environment, Mismatch, TimingReport, TimingStats


def test_result_json_round_trip_with_every_section():
    stats = TimingStats(1.0, 1.1, 0.9, 1.5, 0.1, 0.1, 20, 3, "cuda-events", 1.05)
    result = EvalResult(
        status=Status.CORRECT, stage=Stage.DONE, problem_id="level1/x", message="ok",
        correctness=CorrectnessReport(5, 5, 5, "ab", 1e-4, 1e-4, "float32", input_sets=["check", "sweep_a"],
                                      mismatch=Mismatch(0, 0, "values", "d", 1.0, 2.0, 3, 4, [1, 2], 0.5, 0.7,
                                                        "check")),
        timing=TimingReport(stats, stats, None, 2.0, None, "x"),
        environment=Environment("gpu", "H100", "2.11", "3.6", "3.12", "0.1.0", ["netns"]),
    )
    assert EvalResult.from_json(result.to_json()) == result
    assert result.compiled and result.correct
    # how far the verdict can be trusted follows the mode, also for a result stored before the field existed
    assert result.environment.trust == "full"
    stored = result.to_dict()
    stored["environment"] = {**stored["environment"], "mode": "cpu-interpreter"}
    del stored["environment"]["trust"]
    assert EvalResult.from_dict(stored).environment.trust == "interpreter"
