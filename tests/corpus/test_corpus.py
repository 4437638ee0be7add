"""The exploit corpus's shape (tests/corpus.py): every directory and file-name prefix is a declared class,
every class and every runtime check has at least one file (a new exploit class without a corpus file is not
done), and the classes that have no other test runner here (wrong values, sandbox forgeries) get their
verdicts checked."""

from __future__ import annotations

import corpus
import pytest

from kernelrl import VerdictSettings, load_suite
from kernelrl.candidates.rules import analyze_rules
from kernelrl.verify.runtime_checks import RUNTIME_CHECKS

CASES = corpus.all_cases()

# runtime checks whose exploit cannot be a corpus file (yet), each with where it is tested instead
RUNTIME_CHECKS_WITHOUT_A_FILE = {
    "rt-output-aliases-input": "needs a problem whose output equals its "
                               "input, which the problem audit refuses; "
                               "test_runtime_exploits.test_output_aliasing_an_input_is_caught_on_cpu "
                               "builds one",
    "rt-timer-inconsistent": "no exploit reaches it (the timer's functions are captured before the import "
                             "and patching them is rejected statically); "
                             "tests/unit/timing/test_cuda_timer.py tests events_exceed_wall",
    "rt-below-speed-of-light": "no exploit reaches it (the timer reads its events through functions taken "
                               "before the import; g03's patched elapsed_time is rt-timer-patched); "
                               "tests/unit/evaluate/test_verdict.py tests the floor on a timing report", }


def test_every_corpus_directory_and_file_belongs_to_a_declared_class():
    declared = {c.directory for c in corpus.CLASSES}
    found = {d.name for d in corpus.directories()}
    assert found == declared, ("corpus directories not declared in tests/corpus.py "
                               f"CLASSES: {found ^ declared}")
    strays = [c.name for c in CASES if not corpus.NAME.fullmatch(c.path.name)
              or (c.path.parent.name, c.path.name[0]) not in corpus.BY_KEY]
    assert not strays, f"files whose directory and prefix are no declared class: {strays}"


@pytest.mark.parametrize("cls", corpus.CLASSES, ids=[f"{c.directory}/{c.prefix}" for c in corpus.CLASSES])
def test_every_class_has_a_corpus_file(cls):
    assert [c for c in CASES if c.cls is cls], f"class {cls.directory}/{cls.prefix}* ({cls.what}) has no file"


def test_every_header_is_complete():
    ids = set(load_suite().ids())
    bad = [c.name for c in CASES if c.problem not in ids or not c.expect or not c.header.get("technique")
           or c.device not in ("cpu", "gpu")]
    assert not bad, f"headers without a known problem, an expect, a technique or a valid device: {bad}"


def test_every_runtime_check_has_a_corpus_file():
    covered = {c.expect for c in CASES if c.cls.directory == "exploits_runtime"}
    missing = sorted(set(RUNTIME_CHECKS) - covered - set(RUNTIME_CHECKS_WITHOUT_A_FILE))
    assert not missing, f"runtime checks without an exploit file in tests/exploits_runtime: {missing}"
    assert not covered & set(RUNTIME_CHECKS_WITHOUT_A_FILE), ("a file exists now: drop the "
                                                              "check from the exceptions")


# -- the classes without another runner: wrong values (static rules on) and sandbox forgeries (static rules
# off) -
VALUES = [c for c in CASES if c.cls.directory == "exploits_values"]
SANDBOX = [c for c in CASES if c.cls.directory == "exploits_sandbox"]


@pytest.fixture(scope="module")
def evaluator(cpu_evaluator):
    return cpu_evaluator.with_verdict(VerdictSettings(static_checks=False))


@pytest.mark.parametrize("case", VALUES + SANDBOX, ids=[c.name for c in VALUES + SANDBOX])
def test_value_and_sandbox_cases_get_their_verdict(evaluator, case):
    if case.cls.static_checks:  # the evaluator's own first step: the value cases pass the static rules
        assert not [f.rule for f in analyze_rules(case.source()) if f.policy == "reject"]
    result = evaluator.evaluate(load_suite().get(case.problem), case.source())
    verdict = {"status": result.status.value, "message": result.message, "rules": []}
    assert corpus.holds(case, verdict), (case.expect, case.header.get("reason"), result.status,
                                         result.message)
