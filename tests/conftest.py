from __future__ import annotations

import os
from pathlib import Path

import pytest

import kernelrl

EXAMPLES = Path(kernelrl.__file__).parent / "examples"

# tests exercise the sandbox: verdicts must come from real runs, not from earlier runs' result cache (the CLI
# tests' subprocesses inherit this); tests of the cache itself remove it with monkeypatch.delenv
os.environ.setdefault("KERNELRL_RESULT_CACHE", "0")

# `make test` runs one xdist worker per core: one torch thread each (the
# worker's and its subprocesses'), or the workers' OpenMP threads spin against
# each other (training tests ran 3-5x slower beside an evaluating worker)
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.setdefault("OMP_NUM_THREADS", "1")


# a prompt template directory for training tests: the problem's source and a line of instructions (~270 tokens
# for level0/1_relu against the compact style's ~530), so CPU training steps and generations stay short
TINY_PROMPTS = str(Path(__file__).parent / "prompts" / "tiny")


def example(name: str) -> str:
    return (EXAMPLES / name).read_text()


def cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


# the longest files (measured with `make test`'s --durations on a 2-core
# machine), run first: the two xdist workers take whole files in collection
# order, so these start at once and the short files fill both workers' tails
LONGEST_FIRST = ("test_train.py", "test_mutants.py", "test_pool.py", "test_train_dynamic.py", "test_cli.py")


def pytest_collection_modifyitems(config, items):
    rank = {name: k for k, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: each file keeps its order
    if cuda_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        # the marker itself: keywords also hold the names of the test's directories (tests/gpu/)
        if item.get_closest_marker("gpu") is not None:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def suite():
    return kernelrl.load_suite()


@pytest.fixture(scope="session")
def cpu_evaluator():
    """One CPU evaluator (judge, zygote, standbys) for every test that varies only verdict settings: a test
    passes its own `VerdictSettings` per call, or takes a view with `cpu_evaluator.with_verdict(...)`; nothing
    restarts. Tests that need other EvaluatorSettings (the pool, isolation, concurrency) build their own."""
    from kernelrl import Evaluator

    with Evaluator(device="cpu", result_cache=False) as ev:
        yield ev


@pytest.fixture(scope="module")
def cpu_server(cpu_evaluator):
    """The reward service over the session's CPU evaluator on loopback: no token, default settings (for the
    tests in tests/serve/, whose helpers are in tests/serve/served.py; one conftest for the whole suite, since
    tests import `conftest` by name)."""
    from served import serve

    with serve(cpu_evaluator) as served:
        yield served

