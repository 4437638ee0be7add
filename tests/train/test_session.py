"""The training session's scorer (kernelrl.train.session): opened once, its workers started in the background
while the policy loads, so the first step's rewards do not wait for the judge and the sandboxes."""

from __future__ import annotations

import time

from kernelrl.problems import load_suite
from kernelrl.train.config import GRPOConfig
from kernelrl.train.model import placement
from kernelrl.train.session import Session


def session_for(tmp_path, eval_device: str) -> Session:
    config = GRPOConfig(run_dir=str(tmp_path), eval_device=eval_device)
    return Session(config, load_suite(), prompts=None, problems=[], placement=placement(config),
                   tokenizer=None)


def wait_until(condition, timeout_s: float, every_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while not condition() and time.monotonic() < deadline:
        time.sleep(every_s)
    return condition()


def test_the_scorer_it_opens_starts_its_workers_before_the_first_evaluation(tmp_path):
    session = session_for(tmp_path, "cpu")
    try:
        session.scorer(None)
        judge = session._owned._judge
        assert wait_until(judge.ready, 120, 0.2), "the judge did not start before any evaluation"
    finally:
        session.close()


def test_a_session_closed_while_its_scorer_warms_up_leaves_no_judge(tmp_path):
    session = session_for(tmp_path, "cpu")
    session.scorer(None)
    judge = session._owned._judge
    assert wait_until(judge.running, 60, 0.05)  # the warm-up has started the judge
    session.close()
    time.sleep(3)
    assert not judge.running()


def test_one_evaluator_per_device_starts_in_the_background_too(tmp_path):
    """`--eval-device all`: a MultiDeviceEvaluator (here one CPU evaluator), warmed by ScorerBase's thread."""
    session = session_for(tmp_path, "all")
    try:
        session.scorer(None)
        judges = [ev._judge for ev in session._owned.evaluators]
        assert judges and wait_until(lambda: all(j.ready() for j in judges), 120, 0.2), \
            "a judge did not start before any evaluation"
    finally:
        session.close()
