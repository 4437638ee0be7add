"""Mutation tests of the checker: each mutant in tests/mutants.py (a skipped comparison, a looser
tolerance, a disabled static or runtime check) is applied to a copy of the kernelrl package, the
corpus files declared to kill it are run against the copy in a subprocess (tests/corpus_runner.py,
PYTHONPATH on the copy), and at least one of them must get a verdict its header no longer accepts.
A mutant that survives is a check the corpus does not test. The killers' verdicts on the unmutated
package are the corpus tests' own (test_rules, test_runtime_exploits, test_corpus); a mutant's
controls must keep theirs, so a broken run never passes for a kill."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import corpus
import pytest
from mutants import GPU_MUTANTS, MUTANTS, Mutant, MutationError, apply, mutate

import kernelrl

pytestmark = pytest.mark.slow  # a subprocess (a fresh evaluator) per mutant

PACKAGE = Path(kernelrl.__file__).parent
RUNNER = Path(__file__).parents[1] / "corpus_runner.py"
IDS = [m.id for m in MUTANTS]
GPU_IDS = [m.id for m in GPU_MUTANTS]


def run_corpus(root: Path, names: list[str], device: str = "cpu") -> dict[str, dict]:
    """Verdicts on corpus files from the kernelrl package under `root` (a fresh interpreter)."""
    env = {**os.environ, "PYTHONPATH": str(root), "KERNELRL_RESULT_CACHE": "0"}
    done = subprocess.run([sys.executable, str(RUNNER), "--device", device, *names], capture_output=True,
                          text=True, env=env,
                          timeout=600, cwd=Path(__file__).parents[1])
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert lines, f"the corpus runner printed nothing (exit {done.returncode}):\n{done.stderr[-3000:]}"
    imported = Path(lines[0]["kernelrl"]).parent
    assert imported == root / "kernelrl", f"the runner imported {imported}, not the mutated copy under {root}"
    verdicts = {v["name"]: v for v in lines[1:]}
    assert set(verdicts) == set(names), f"no verdict for {set(names) - set(verdicts)}:\n{done.stderr[-3000:]}"
    return verdicts


def mutated_copy(tmp_path: Path, mutant: Mutant | None) -> Path:
    shutil.copytree(PACKAGE, tmp_path / "kernelrl", ignore=shutil.ignore_patterns("__pycache__"))
    if mutant is not None:
        apply(tmp_path / "kernelrl", mutant)
    return tmp_path


# -- the mutants still fit the code --------------------------------------------------------------------------

@pytest.mark.parametrize("mutant", MUTANTS, ids=IDS)
def test_the_mutant_applies_to_the_current_code(mutant):
    """Its function and anchor exist (exactly once), the edit changes the file and still compiles: a refactor
    that moves the code fails here, loudly, instead of leaving a mutant that silently mutates nothing."""
    source = (PACKAGE / mutant.path).read_text()
    mutated = mutate(source, mutant)
    assert mutated != source
    compile(mutated, mutant.path, "exec")


@pytest.mark.parametrize("mutant", MUTANTS, ids=IDS)
def test_the_mutant_names_corpus_files(mutant):
    for name in (*mutant.killers, *mutant.controls):
        c = corpus.case(name)
        assert c.path.is_file(), f"{mutant.id}: no corpus file {name}"
        assert c.device == "cpu", f"{mutant.id}: {name} runs only on a GPU; CI has none"
        if mutant.layer == "static":
            assert c.cls.layer == "static", (f"{mutant.id} edits the static layer: {name} is "
                                             "evaluated, not analyzed")
    assert mutant.killers, f"{mutant.id} declares no corpus file that kills it"


def test_mutants_are_unique_and_cover_every_layer():
    assert len(set(IDS)) == len(IDS)
    edited = {m.path.split("/")[0] for m in MUTANTS}
    assert {"candidates", "verify", "sandbox", "evaluate"} <= edited, edited


def test_a_mutant_whose_code_moved_raises():
    source = "def check(ctx):\n    '''doc'''\n    return [1]\n"
    gone = Mutant("x", "", "f.py", "check", "return [2]", "return []", ("exploits/x01_decoy_kernel.py",))
    with pytest.raises(MutationError, match="occurs 0 times"):
        mutate(source, gone)
    with pytest.raises(MutationError, match="no other"):
        mutate(source, Mutant("y", "", "f.py", "other", None, "[]", ()))
    early = mutate(source, Mutant("z", "", "f.py", "check", None, "[]", ()))
    namespace: dict = {}
    exec(compile(early, "f.py", "exec"), namespace)  # the docstring stays first, the function returns at once
    assert namespace["check"](None) == [] and namespace["check"].__doc__ == "doc"


# -- the corpus kills every mutant ---------------------------------------------------------------------------

def _run_mutant(mutant: Mutant, root: Path) -> tuple[dict[str, dict], float]:
    started = time.monotonic()
    return (run_corpus(mutated_copy(root, mutant), [*mutant.killers, *mutant.controls]),
            time.monotonic() - started)


@pytest.fixture(scope="module")
def runs(request, tmp_path_factory):
    """Each selected mutant's run, started together (most of a run is its processes importing torch and
    waiting on each other, so a few at once finish sooner than one after another)."""
    selected = [item.callspec.params["mutant"] for item in request.session.items
                if item.originalname == "test_the_corpus_kills_the_mutant"]
    workers = max(1, min(4, (os.cpu_count() or 2) // 2))  # serial on 2 cores: they would only contend
    with ThreadPoolExecutor(workers) as pool:
        yield {m.id: pool.submit(_run_mutant, m, tmp_path_factory.mktemp(m.id)) for m in selected}


@pytest.mark.parametrize("mutant", MUTANTS, ids=IDS)
def test_the_corpus_kills_the_mutant(mutant, runs):
    verdicts, seconds = runs[mutant.id].result()
    broken = [n for n in mutant.controls if not corpus.holds(corpus.case(n), verdicts[n])]
    assert not broken, (f"{mutant.id}: controls changed verdict, the run is unsound: "
                        f"{[verdicts[n] for n in broken]}")
    killed = [n for n in mutant.killers if not corpus.holds(corpus.case(n), verdicts[n])]
    print(f"\n{mutant.id} ({mutant.fault}): killed by {killed or 'NONE'} "
          f"[{', '.join(verdicts[n]['status'] for n in mutant.killers)}] in {seconds:.1f} s")
    assert killed, (f"mutant {mutant.id} survived ({mutant.fault}): every declared corpus file kept its "
                    f"verdict {[verdicts[n] for n in mutant.killers]}")


def test_the_unmutated_copy_keeps_every_static_killers_verdict(tmp_path):
    """The static killers' verdicts from an unmutated copy
    through the same runner: what the mutants change."""
    names = sorted({n for m in MUTANTS if m.layer == "static" for n in (*m.killers, *m.controls)})
    verdicts = run_corpus(mutated_copy(tmp_path, None), names)
    assert [n for n in names if not corpus.holds(corpus.case(n), verdicts[n])] == []


# -- the GPU-only checks' mutants -------------------------------------------------------------------

@pytest.mark.parametrize("mutant", GPU_MUTANTS, ids=GPU_IDS)
def test_a_gpu_mutant_applies_and_names_gpu_corpus_files(mutant):
    """Checked on every machine, so that a refactor cannot leave a GPU mutant that mutates nothing."""
    source = (PACKAGE / mutant.path).read_text()
    mutated = mutate(source, mutant)
    assert mutated != source
    compile(mutated, mutant.path, "exec")
    assert mutant.killers and all(corpus.case(n).device == "gpu" for n in mutant.killers), mutant.killers
    assert all(corpus.case(n).path.is_file() for n in mutant.controls)
    assert not set(GPU_IDS) & set(IDS)


@pytest.mark.gpu
@pytest.mark.parametrize("mutant", GPU_MUTANTS, ids=GPU_IDS)
def test_the_gpu_corpus_kills_the_gpu_mutant(mutant, tmp_path):
    started = time.monotonic()
    verdicts = run_corpus(mutated_copy(tmp_path, mutant), [*mutant.killers, *mutant.controls], device="cuda")
    broken = [n for n in mutant.controls if not corpus.holds(corpus.case(n), verdicts[n])]
    changed = [verdicts[n] for n in broken]
    assert not broken, f"{mutant.id}: controls changed verdict, the run is unsound: {changed}"
    killed = [n for n in mutant.killers if not corpus.holds(corpus.case(n), verdicts[n])]
    statuses = ", ".join(verdicts[n]["status"] for n in mutant.killers)
    print(f"\n{mutant.id} ({mutant.fault}): killed by {killed or 'NONE'} [{statuses}] "
          f"in {time.monotonic() - started:.1f} s")
    assert killed, f"GPU mutant {mutant.id} survived: {[verdicts[n] for n in mutant.killers]}"
