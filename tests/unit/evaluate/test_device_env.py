"""The judge's and the sandboxes' CUDA environment (`EvaluatorSettings.device_work_queues`): the same hardware
queues for a candidate and its baselines, and CUDA's default when asked."""

from __future__ import annotations

import pytest

from kernelrl.evaluate import Evaluator, EvaluatorSettings

QUEUES = "CUDA_DEVICE_MAX_CONNECTIONS"


@pytest.mark.parametrize("bad", [0, 33, -1])
def test_work_queues_outside_cudas_range_are_refused(bad):
    with pytest.raises(ValueError, match="device_work_queues"):
        EvaluatorSettings(device_work_queues=bad)


@pytest.mark.parametrize("queues", [1, 4])
def test_the_judge_and_every_sandbox_get_the_same_work_queues(queues, tmp_path, monkeypatch):
    monkeypatch.setenv(QUEUES, "8")  # the caller's own value does not reach them
    evaluator = Evaluator(device="cpu", device_work_queues=queues, cache_dir=tmp_path / "cache")
    try:
        assert evaluator.launcher.child_env("gpu", tmp_path)[QUEUES] == str(queues)
        assert evaluator._judge.extra_env[QUEUES] == str(queues)
    finally:
        evaluator.close()


def test_none_leaves_cudas_default_or_the_callers_value(tmp_path, monkeypatch):
    monkeypatch.delenv(QUEUES, raising=False)
    evaluator = Evaluator(device="cpu", device_work_queues=None, cache_dir=tmp_path / "cache")
    try:
        assert QUEUES not in evaluator.launcher.child_env("gpu", tmp_path)
        assert QUEUES not in evaluator._judge.extra_env
        monkeypatch.setenv(QUEUES, "2")  # allowlisted: a user who sets it keeps it
        assert evaluator.launcher.child_env("gpu", tmp_path)[QUEUES] == "2"
    finally:
        evaluator.close()
