"""Speed-of-light floors and the reference's FLOPs (kernelrl.timing.device_limits)."""

from __future__ import annotations

import pytest

from kernelrl import load_suite


def test_speed_of_light_floor_is_the_larger_of_bandwidth_and_flops():
    from kernelrl.evaluate import speed_of_light_ms

    # 3 GB at 2 TB/s (x1.5 margin) = 1.0 ms; 60 TFLOP at 15 TFLOP/s (x4 margin) = 1 s
    assert speed_of_light_ms(3_000_000_000, None, 2e12, None, 1.5, 4.0) == pytest.approx(1.0)
    assert speed_of_light_ms(3_000_000_000, 60e12, 2e12, 15e12, 1.5, 4.0) == pytest.approx(1000.0)
    assert speed_of_light_ms(3_000_000_000, 60e12, None, None, 1.5, 4.0) is None  # CPU: nothing measured


def test_judge_counts_reference_flops_on_the_meta_device():
    from kernelrl.sandbox.judge import Judge

    problem = load_suite().get("level1/2_matmul_square")
    judge = Judge("cpu")
    module, sets = judge._module(str(problem.path), problem.sha256)
    params = sets["check"]
    a, b = judge._inputs(module, params, seed=0)
    m, k = a.shape
    n = b.shape[1]
    args = [{"tensor": 0}, {"tensor": 1}]
    assert judge._flops(problem.sha256, module, params, args, lambda: [a, b]) == 2 * m * k * n
