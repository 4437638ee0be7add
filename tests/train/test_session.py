"""The training session's scorer (kernelrl.train.session): opened once, its workers started in the background
while the policy loads, so the first step's rewards do not wait for the judge and the sandboxes."""

from __future__ import annotations

import time

from kernelrl.problems import load_suite
from kernelrl.train.config import GRPOConfig
from kernelrl.train.model import placement
from kernelrl.train.session import Session


def test_the_scorer_it_opens_starts_its_workers_before_the_first_evaluation(tmp_path):
    config = GRPOConfig(run_dir=str(tmp_path), eval_device="cpu")
    session = Session(config, load_suite(), prompts=None, problems=[], placement=placement(config),
                      tokenizer=None)
    try:
        session.scorer(None)
        judge = session._owned._judge
        deadline = time.monotonic() + 120
        while not judge.ready() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert judge.ready(), "the judge did not start before any evaluation was asked for"
    finally:
        session.close()


def test_a_session_closed_while_its_scorer_warms_up_leaves_no_judge(tmp_path):
    config = GRPOConfig(run_dir=str(tmp_path), eval_device="cpu")
    session = Session(config, load_suite(), prompts=None, problems=[], placement=placement(config),
                      tokenizer=None)
    session.scorer(None)
    judge = session._owned._judge
    deadline = time.monotonic() + 60
    while not judge.running() and time.monotonic() < deadline:  # the warm-up has started the judge
        time.sleep(0.05)
    assert judge.running()
    session.close()
    time.sleep(3)
    assert not judge.running()


def test_one_evaluator_per_device_starts_in_the_background_too(tmp_path):
    """`--eval-device all`: a MultiDeviceEvaluator (here one CPU evaluator), warmed by ScorerBase's thread."""
    config = GRPOConfig(run_dir=str(tmp_path), eval_device="all")
    session = Session(config, load_suite(), prompts=None, problems=[], placement=placement(config),
                      tokenizer=None)
    try:
        session.scorer(None)
        judges = [ev._judge for ev in session._owned.evaluators]
        deadline = time.monotonic() + 120
        while not all(j.ready() for j in judges) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert judges and all(j.ready() for j in judges), "a judge did not start before any evaluation"
    finally:
        session.close()
