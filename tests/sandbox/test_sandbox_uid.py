"""The candidate under its own unprivileged uid (EvaluatorSettings.candidate_uid): files only root may
read stay closed to it, and what the interpreter ships stays importable even where Python lives under a
directory only root may enter (/root/.pyenv here: kernelrl.sandbox.isolation.expose_to). Real sandboxes, CPU
mode and (marked gpu) CUDA."""

from __future__ import annotations

import os

import corpus
import pytest
from conftest import example

from kernelrl import Evaluator, EvaluatorSettings, Status, VerdictSettings, load_suite
from kernelrl.sandbox.isolation import pid_namespace_prefix

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not pid_namespace_prefix(),
                                reason="switching the candidate's uid needs root and a PID namespace")
UID = 65534


def _root_only_secret(tmp_path) -> str:
    """A file only root may read; its path."""
    secret = tmp_path / "secret.txt"
    secret.write_text("kernelrl-test-secret-1729")
    secret.chmod(0o600)
    return str(secret)


def _snooping(secret_path: str) -> str:
    """The relu example, printing a root-only file's contents at import, and importing a standard-library
    module that nothing imported before the candidate."""
    probe = (f"import wave  # noqa: F401 - first imported here, after the stub switched uid\n"
             f"try:\n    print('SECRET:', open({secret_path!r}).read())\n"
             f"except OSError as exc:\n    print('SECRET: closed,', type(exc).__name__)\n")
    return probe + example("relu_triton.py")


# the fresh-process case starts its candidate without the zygote: slow-lane
@pytest.mark.parametrize("warm_pool", [True, pytest.param(False, marks=pytest.mark.slow)],
                         ids=["zygote", "fresh-process"])
def test_root_only_files_are_closed_to_the_candidate_and_its_imports_still_work(tmp_path, warm_pool,
                                                                                cpu_evaluator):
    secret = _root_only_secret(tmp_path)
    problem = load_suite().get("level0/1_relu")
    verdict = VerdictSettings(static_checks=False, trials=2)
    seen = {}
    for uid in (UID, None):
        settings = EvaluatorSettings(device="cpu", warm_pool=warm_pool, result_cache=False, candidate_uid=uid)
        if settings == cpu_evaluator.settings:  # the shared evaluator is this one (the default uid, the pool)
            result = cpu_evaluator.evaluate(problem, _snooping(secret), verdict=verdict)
        else:  # the uid and the pool are the evaluator's own settings: one of its own
            with Evaluator(settings, verdict) as ev:
                result = ev.evaluate(problem, _snooping(secret))
        assert result.status is Status.CORRECT, (uid, result.message, result.log[-2000:])
        seen[uid] = ("separate-uid" in result.environment.isolation,
                     [line for line in result.log.splitlines() if line.startswith("SECRET:")])
    assert seen[UID] == (True, ["SECRET: closed, PermissionError"]), seen[UID]
    assert seen[None] == (False, ["SECRET: kernelrl-test-secret-1729"]), seen[None]  # what the uid takes away


def test_candidate_uid_must_be_unprivileged():
    with pytest.raises(ValueError, match="unprivileged uid"):
        EvaluatorSettings(candidate_uid=0)


def test_the_uid_is_on_by_default_and_closes_proc_self_mem(cpu_evaluator):
    """On by default (CPU mode): the process is not dumpable once it switched,
    so its /proc files are root's and a read of its own memory (corpus c14,
    which rt-host-read catches where the uid is off) fails at the open."""
    case = corpus.case("exploits_runtime/c14_proc_self_mem.py")
    assert EvaluatorSettings().candidate_uid == UID
    assert cpu_evaluator.settings.candidate_uid == UID  # the shared evaluator keeps the default
    result = cpu_evaluator.evaluate(load_suite().get(case.problem), case.source(),
                                    verdict=VerdictSettings(static_checks=False))
    assert "separate-uid" in result.environment.isolation
    assert result.status is Status.RUNTIME_ERROR and "PermissionError" in result.message, result.message


@pytest.mark.gpu
def test_on_a_gpu_the_candidate_runs_under_the_uid_and_its_kernels_still_compile_and_time(tmp_path):
    """GPU mode: the stub switches after CUDA start-up, so the context it made stays usable; the candidate's
    Triton kernel compiles into caches handed to the uid, its 1 GiB outputs come back, the timed calls run,
    and a root-only file stays closed."""
    secret = _root_only_secret(tmp_path)
    assert EvaluatorSettings().candidate_uid == UID
    with Evaluator(device="cuda", inductor_baseline=False, result_cache=False) as ev:
        result = ev.evaluate(load_suite().get("level0/1_relu"), _snooping(secret))
    assert result.status is Status.CORRECT, (result.message, result.log[-2000:])
    assert "separate-uid" in result.environment.isolation
    assert [line for line in result.log.splitlines()
            if line.startswith("SECRET:")] == ["SECRET: closed, PermissionError"]
    assert result.timing.candidate.median_ms > 0
