"""kernelrl.cache: keys, SQLite stores (real files in tmp_path), failure modes, and the Evaluator's use of
them (a few real CPU evaluations with the Triton interpreter)."""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import sqlite3
import subprocess
import sys
import warnings
from contextlib import ExitStack
from pathlib import Path

import pytest
from conftest import example

from kernelrl import EvalResult, Evaluator, Stage, Status, VerdictSettings
from kernelrl.cache import (
    BaselineCache,
    BaselineEntry,
    CacheWarning,
    ResultCache,
    baseline_key,
    canonical_code,
    kernelrl_build,
    result_cacheable,
    result_key,
    timing_set_of,
)
from kernelrl.results import CorrectnessReport, Environment, TimingReport, TimingStats
from kernelrl.sandbox.judge_wire import BaselinesReply, BaselinesRequest
from kernelrl.timing.cuda_timer import METHOD, TimerSettings

ENV = Environment(mode="gpu", device_name="NVIDIA H100 80GB HBM3", torch_version="2.11.0+cu130",
                  triton_version="3.6.0", python_version="3.12.3", kernelrl_version="0.1.0")
CODE = example("relu_triton.py")
# the same program: comments, blank lines, a docstring and different spacing
CODE_REFORMATTED = ('"""A docstring."""\n# a comment\n\n'
                    + CODE.replace("\n\n", "\n\n\n# more\n").replace(" = ", "  =  "))


@pytest.fixture
def result_cache_on(monkeypatch):
    monkeypatch.delenv("KERNELRL_RESULT_CACHE", raising=False)


def _stats(median: float, source: str = "measured") -> TimingStats:
    return TimingStats(median_ms=median, mean_ms=median * 1.01, min_ms=median * 0.98, max_ms=median * 1.1,
                       iqr_ms=median * 0.004, rel_spread=0.004, reps=200, warmup=12, method=METHOD,
                       wall_median_ms=median * 1.02, source=source)


def _result(status: Status, stage: Stage = Stage.DONE, message: str = "m",
            timing: TimingReport | None = None):
    return EvalResult(status=status, stage=stage, problem_id="level0/1_relu", message=message, timing=timing)


# -- keys ----------------------------------------------------------------------------------------------------
def test_canonical_code_ignores_formatting_comments_and_docstrings():
    assert CODE_REFORMATTED != CODE
    assert canonical_code(CODE_REFORMATTED) == canonical_code(CODE)
    docstring_only = "def f():\n    'doc'\n"
    assert canonical_code(docstring_only) == canonical_code("def f():\n    pass\n")
    # any change to the program changes the key: a constant, a name, a string
    assert canonical_code(CODE.replace("n_elements", "n_elems")) != canonical_code(CODE)
    assert canonical_code(CODE.replace("16384", "1024")) != canonical_code(CODE)
    assert canonical_code("x = 'a  b'\n") != canonical_code("x = 'a b'\n")
    assert canonical_code("def f(:\n") == "text:def f(:\n"  # unparseable: the exact text


def test_result_key_changes_with_every_part():
    settings = {"trials": 5, "seed": None}
    key = result_key("p" * 64, CODE, ENV, settings, "build1")
    assert result_key("p" * 64, CODE_REFORMATTED, ENV, settings, "build1") == key
    variants = [
        result_key("q" * 64, CODE, ENV, settings, "build1"),
        result_key("p" * 64, CODE.replace("16384", "1024"), ENV, settings, "build1"),
        result_key("p" * 64, CODE, ENV, {**settings, "trials": 6}, "build1"),
        result_key("p" * 64, CODE, ENV, {**settings, "seed": 7}, "build1"),
        result_key("p" * 64, CODE, ENV, settings, "build2"),
        *(result_key("p" * 64, CODE, dataclasses.replace(ENV, **{f: "other"}), settings, "build1")
          for f in ("mode", "device_name", "torch_version", "triton_version", "python_version",
                    "kernelrl_version")),
    ]
    assert len({key, *variants}) == len(variants) + 1


def test_evaluator_key_covers_verdict_settings_not_device_or_cache_dir(tmp_path, suite, result_cache_on):
    problem = suite.get("level0/1_relu")
    # constructing an Evaluator starts nothing (no judge, no
    # zygote): only the evaluator settings need their own
    with Evaluator(device="cpu", cache_dir=tmp_path) as ev, \
            Evaluator(device="cuda:1", cache_dir=tmp_path / "elsewhere") as moved, \
            Evaluator(device="cpu", cache_dir=tmp_path, isolate_network=False) as open_network:

        def key(evaluator: Evaluator = ev, **verdict) -> str:
            return evaluator._result_key(problem, CODE, ENV, VerdictSettings(**verdict))

        base = key()
        assert key(moved) == base
        changed = {
            "trials": 3, "input_sets": ("check",), "tolerances": {"float32": (1e-3, 1e-3)},
            "static_checks": False, "rule_policy": {"no-torch-fallback": "warn"},
            "runtime_policy": {"rt-deferred-write": "warn"}, "timer": TimerSettings(min_reps=50), "seed": 3,
            "timing": False, "inductor_baseline": False, "run_timeout_s": 10.0, "memory_limit_gb": 2.0,
            "timing_variants": 3,
        }
        keys = {name: key(**{name: value}) for name, value in changed.items()}
        keys["isolate_network"] = key(open_network)  # an evaluator setting that can change a verdict
        assert base not in keys.values() and len(set(keys.values())) == len(keys), keys
        assert key(seed=None) == base  # the default
        # the evaluator's default verdict settings
        assert ev._result_key(problem, CODE, ENV, ev.verdict) == base
        # another problem source is another key
        assert ev._result_key(suite.get("level0/2_scale_shift"), CODE, ENV, VerdictSettings()) != base


def test_kernelrl_build_changes_with_verdict_code(tmp_path):
    pkg = tmp_path / "suites" / "kernelrl"  # a "suites" folder above the package must not matter
    (pkg / "sandbox").mkdir(parents=True)
    (pkg / "problems" / "suites").mkdir(parents=True)
    (pkg / "evaluate.py").write_text("x = 1\n")
    (pkg / "sandbox" / "child.py").write_text("y = 1\n")
    (pkg / "problems" / "suites" / "p.py").write_text("z = 1\n")
    first = kernelrl_build(pkg)
    (pkg / "problems" / "suites" / "p.py").write_text("z = 2\n")  # problems enter keys by their own hash
    assert kernelrl_build(pkg) == first
    (pkg / "sandbox" / "child.py").write_text("y = 2\n")
    assert kernelrl_build(pkg) != first
    assert len(kernelrl_build()) == 16


def test_which_verdicts_are_cached():
    assert result_cacheable(_result(Status.CORRECT,
                                    timing=TimingReport(unavailable_reason="cpu-interpreter mode")))
    assert result_cacheable(_result(Status.WRONG_OUTPUT, Stage.CORRECTNESS))
    assert result_cacheable(_result(Status.COMPILE_ERROR, Stage.IMPORT))
    assert result_cacheable(_result(Status.FORMAT_ERROR, Stage.STATIC))
    assert result_cacheable(_result(Status.UNSUPPORTED, Stage.REFERENCE))
    assert result_cacheable(_result(Status.HACK_DETECTED, Stage.STATIC))
    assert result_cacheable(_result(Status.HACK_DETECTED, Stage.CORRECTNESS))
    assert result_cacheable(_result(Status.RUNTIME_ERROR, Stage.CORRECTNESS,
                                    "IndexError while running forward"))
    assert not result_cacheable(_result(Status.TIMEOUT, Stage.CORRECTNESS))
    assert not result_cacheable(_result(Status.CRASHED, Stage.CORRECTNESS))
    assert not result_cacheable(_result(Status.HACK_DETECTED, Stage.TIMING))  # measured, noisy
    assert not result_cacheable(_result(Status.RUNTIME_ERROR, Stage.REFERENCE))  # the judge's failure
    assert not result_cacheable(_result(Status.RUNTIME_ERROR, Stage.CORRECTNESS,
                                        "OutOfMemoryError: CUDA out of memory"))
    assert not result_cacheable(_result(Status.CORRECT,
                                        timing=TimingReport(unavailable_reason="baselines failed: x")))


# -- stores --------------------------------------------------------------------------------------------------
def test_result_cache_round_trip_and_json(tmp_path):
    cache = ResultCache(tmp_path / "results.sqlite")
    result = _result(Status.CORRECT, timing=TimingReport(candidate=_stats(0.5), eager=_stats(1.0, "cache")))
    result.correctness = CorrectnessReport(trials_run=2, trials_passed=2, trials_planned=2, seeds_sha256="s",
                                           atol=1e-4, rtol=1e-4, dtype="float32")
    assert cache.get("k") is None
    assert cache.put("k", result)
    assert not cache.put("t", _result(Status.TIMEOUT))  # not cacheable: not stored
    back = ResultCache(tmp_path / "results.sqlite").get("k")  # another object, same file
    assert back is not None and back.cached and back.timing.eager.source == "cache"
    assert dataclasses.replace(back, cached=False) == result
    assert EvalResult.from_json(back.to_json()) == back
    assert len(cache) == 1 and (cache.stats.hits, cache.stats.misses, cache.stats.stores) == (0, 1, 1)
    mode = sqlite3.connect(tmp_path / "results.sqlite").execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


def test_baseline_cache_round_trip(tmp_path):
    path = tmp_path / "deep" / "baselines.sqlite"  # directories are created
    key = baseline_key("p" * 64, "bench", ENV, METHOD, dataclasses.asdict(TimerSettings()))
    cache = BaselineCache(path)
    assert cache.get(key) is None
    entry = BaselineEntry(eager=_stats(1.25), inductor=_stats(0.8))
    assert cache.put(key, entry)
    back = BaselineCache(path).get(key, need_inductor=True)
    assert back is not None
    assert back.eager.source == back.inductor.source == "cache"
    assert dataclasses.replace(back.eager, source="measured") == entry.eager
    assert dataclasses.replace(back.inductor, source="measured") == entry.inductor
    # timed without Inductor: enough for eager-only requests, a miss when Inductor is wanted
    cache.put(key, BaselineEntry(eager=_stats(1.3)))
    assert cache.get(key) is not None and cache.get(key, need_inductor=True) is None
    cache.put(key, BaselineEntry(eager=_stats(1.3), inductor_error="BackendCompilerFailed"))
    assert cache.get(key, need_inductor=True).inductor_error == "BackendCompilerFailed"
    # every key part matters
    timer = dataclasses.asdict(TimerSettings())
    others = {
        baseline_key("q" * 64, "bench", ENV, METHOD, timer),
        baseline_key("p" * 64, "default", ENV, METHOD, timer),
        baseline_key("p" * 64, "bench", dataclasses.replace(ENV, device_name="NVIDIA H200"), METHOD, timer),
        baseline_key("p" * 64, "bench", dataclasses.replace(ENV, torch_version="2.12.0"), METHOD, timer),
        baseline_key("p" * 64, "bench", dataclasses.replace(ENV, triton_version="3.7.0"), METHOD, timer),
        baseline_key("p" * 64, "bench", ENV, "cuda-graph-replay", timer),
        baseline_key("p" * 64, "bench", ENV, METHOD, dataclasses.asdict(TimerSettings(warmup_ms=50))),
    }
    assert key not in others and len(others) == 7


def test_timing_set_of_problem_source(suite):
    assert timing_set_of("def get_inputs():\n    pass\n") == "default"
    assert timing_set_of("def get_input_sets():\n    return {}\n") == "bench"
    with_sets = [p for p in suite if "def get_input_sets" in p.source]
    assert with_sets and all(timing_set_of(p.source) == "bench" for p in with_sets)


def test_corrupted_database_degrades_with_a_warning(tmp_path):
    path = tmp_path / "results.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    cache = ResultCache(path)
    with pytest.warns(CacheWarning, match="continuing without this cache"):
        assert cache.get("k") is None
    assert cache.disabled
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # one warning, then silence
        assert cache.get("k") is None
        assert not cache.put("k", _result(Status.CORRECT))


def test_locked_database_skips_the_write_with_a_warning(tmp_path):
    path = tmp_path / "results.sqlite"
    cache = ResultCache(path, timeout_s=0.2)
    assert cache.put("a", _result(Status.WRONG_OUTPUT, Stage.CORRECTNESS))
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.warns(CacheWarning, match="write failed.*locked"):
            assert not cache.put("b", _result(Status.CORRECT))
        assert cache.get("a") is not None  # WAL: readers go on
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert not cache.disabled and cache.put("b", _result(Status.CORRECT))  # transient: usable again


def _writer(path: str, start: int) -> None:
    cache = BaselineCache(Path(path))
    for i in range(start, start + 40):
        assert cache.put(f"k{i}", BaselineEntry(eager=_stats(float(i + 1))))


def test_several_processes_share_one_database(tmp_path):
    path = tmp_path / "baselines.sqlite"
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(path), n * 40)) for n in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0, 0]
    cache = BaselineCache(path)
    assert len(cache) == 120 and cache.get("k77").eager.median_ms == 78.0


def test_cache_package_is_torch_free():
    code = "import sys, kernelrl.cache; sys.exit('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


# -- the Evaluator -------------------------------------------------------------------------------------------
@pytest.mark.slow  # two evaluators of its own, each starting a judge
def test_identical_candidate_is_a_hit_shared_across_evaluators(tmp_path, suite, result_cache_on):
    relu = suite.get("level0/1_relu")
    with Evaluator(device="cpu", trials=2, cache_dir=tmp_path) as ev:
        first = ev.evaluate(relu, CODE)
        second = ev.evaluate(relu, CODE_REFORMATTED)
        stats = ev.cache_stats()["results"]
    assert first.status is Status.CORRECT and not first.cached, first.feedback
    assert second.cached and second.status is Status.CORRECT
    assert second.wall_time_s < 1.0 < first.wall_time_s
    assert second.candidate_sha256 != first.candidate_sha256  # the submitted text's hash
    same = {"cached", "wall_time_s", "candidate_sha256"}
    assert {k: v for k, v in second.to_dict().items() if k not in same} == \
           {k: v for k, v in first.to_dict().items() if k not in same}
    assert (stats.hits, stats.misses, stats.stores, stats.hit_rate) == (1, 1, 1, 0.5)
    # another Evaluator (another process would do the same) on the same cache_dir
    with Evaluator(device="cpu", trials=2, cache_dir=tmp_path) as ev:
        assert ev.evaluate(relu, CODE).cached
        # a verdict-changing setting: a miss (format errors are decided before anything runs)
        no_model = "import torch\nclass Other(torch.nn.Module):\n    pass\n"
        assert not ev.evaluate(relu, no_model).cached  # stored with two trials
        hits = ev.cache_stats()["results"].hits
        more_trials = VerdictSettings(trials=3)
        assert not ev.evaluate(relu, no_model, verdict=more_trials).cached
        assert ev.evaluate(relu, no_model, verdict=more_trials).cached
        assert ev.cache_stats()["results"].hits == hits + 1


def test_result_cache_opt_out(tmp_path, suite, monkeypatch):
    relu = suite.get("level0/1_relu")
    no_model = "class Other:\n    pass\n"
    monkeypatch.delenv("KERNELRL_RESULT_CACHE", raising=False)
    with Evaluator(device="cpu", cache_dir=tmp_path, result_cache=False) as ev:
        assert not ev.evaluate(relu, no_model).cached and not ev.evaluate(relu, no_model).cached
        assert "results" not in ev.cache_stats()
    monkeypatch.setenv("KERNELRL_RESULT_CACHE", "0")
    with Evaluator(device="cpu", cache_dir=tmp_path) as ev:  # the variable is read when an evaluator starts
        assert "results" not in ev.cache_stats()
    assert not (tmp_path / "results.sqlite").exists()


@pytest.mark.slow  # evaluators of its own, each starting a judge
def test_corrupted_cache_does_not_fail_evaluations(tmp_path, suite, result_cache_on):
    (tmp_path / "results.sqlite").write_bytes(os.urandom(4096))
    with Evaluator(device="cpu", trials=2, cache_dir=tmp_path) as ev:
        with pytest.warns(CacheWarning):
            result = ev.evaluate(suite.get("level0/1_relu"), CODE)
        assert result.status is Status.CORRECT and not result.cached, result.feedback
        assert ev.cache_stats()["results"].errors == 1


def test_baselines_cli_without_gpu_exits_nonzero_and_says_why():
    for args in ([], ["--device", "cpu", "--only", "level0"]):
        run = subprocess.run([sys.executable, "-m", "kernelrl.cli", "baselines", *args], capture_output=True,
                             text=True, timeout=300, env={**os.environ, "COLUMNS": "200"})
        assert run.returncode == 2, run.stderr
        assert "baselines are GPU times" in run.stderr and "no usable CUDA GPU" in run.stderr
        assert "nothing was timed or stored" in run.stderr


def test_evaluator_baselines_use_the_cache_and_fresh_retimes(tmp_path, suite):
    """The Evaluator's baseline path with a stand-in judge (no GPU here): the judge times once, a second
    Evaluator on the same cache_dir reads the numbers back, fresh=True re-times and overwrites."""
    problem = suite.get("level1/1_row_softmax")
    calls = []

    def fake_judge(message, timeout_s=None):
        assert isinstance(message, BaselinesRequest)
        calls.append(message.fresh)
        base = 1.0 + len(calls)
        return BaselinesReply(
            eager={"times_ms": [base] * 20, "wall_ms": [base] * 20, "warmup": 3, "method": METHOD},
            inductor={"times_ms": [base / 2] * 20, "warmup": 3, "method": METHOD})

    def evaluator(stack: ExitStack) -> Evaluator:
        ev = stack.enter_context(Evaluator(device="cpu", cache_dir=tmp_path))  # its judge never starts
        ev.environment = lambda: ENV  # type: ignore[method-assign]
        ev._judge_info = lambda: {"mode": "gpu"}  # type: ignore[method-assign]
        ev._judge.call = fake_judge  # type: ignore[method-assign]
        return ev

    with ExitStack() as stack:
        timed_first = evaluator(stack)
        first = timed_first.time_baselines(problem)
        assert first.eager.median_ms == 2.0 and first.eager.source == first.inductor.source == "measured"
        again = evaluator(stack).time_baselines(problem)
        assert calls == [False] and again.eager.source == again.inductor.source == "cache"
        assert (again.eager.median_ms, again.inductor.median_ms) == (2.0, 1.0)
        ev = evaluator(stack)
        fresh = ev.time_baselines(problem, fresh=True)
        assert calls == [False, True] and fresh.eager.median_ms == 3.0 and fresh.eager.source == "measured"
        # overwritten on disk: the first evaluator, which timed and stored 2.0 itself, now reads 3.0 back
        assert timed_first.time_baselines(problem).eager.median_ms == 3.0
        assert ev.cache_stats()["baselines"].stores == 1
