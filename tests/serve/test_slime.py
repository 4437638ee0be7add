"""The slime route against what slime sends and reads: `--rm-type remote_rm --rm-url .../slime/reward` posts
`{"prompt", "response", "label"}` (slime/rollout/rm_hub `remote_rm`), takes the JSON reply as the sample's
reward and, with `--reward-key score`, trains on `reply["score"]`; a non-2xx reply makes it retry, so a full
queue is held, not refused."""

from __future__ import annotations

import threading
import time

import httpx
import pytest
from served import Gated, serve

from kernelrl import load_suite
from kernelrl.rewards import get_reward
from kernelrl.serve.service import ServiceSettings

SUITE = load_suite()
RELU = SUITE.get("level0/1_relu")
SOLUTION = SUITE.solution_path(RELU).read_text()
PROMPT = "Write a Triton kernel for this PyTorch module:\n" + RELU.source
CORRECT = f"Here is my kernel.\n```python\n{SOLUTION}\n```"
WRONG = CORRECT.replace("tl.maximum(x, 0.0)", "tl.maximum(x, 1.0)")
NO_CODE = "I would write a kernel here, but I did not."


def slime_post(url: str, response: str, prompt=PROMPT, label: str = RELU.id) -> httpx.Response:
    """What slime's remote_rm sends: sample.prompt (text, or chat messages), sample.response, sample.label."""
    return httpx.post(f"{url}/slime/reward", json={"prompt": prompt, "response": response, "label": label},
                      timeout=300)


def test_slime_reads_the_composite_reward_under_its_reward_key(cpu_evaluator, cpu_server):
    composite = get_reward("composite")
    expected = {text: composite(cpu_evaluator.evaluate_one(RELU, text, kind="completion"))
                for text in (CORRECT, WRONG, NO_CODE)}
    replies = {text: slime_post(cpu_server.url, text) for text in expected}
    for text, reply in replies.items():
        assert reply.status_code == 200, reply.text
        body = reply.json()
        assert isinstance(body["score"], float) and body["no_verdict"] is False
        assert body["score"] == pytest.approx(expected[text])
    assert [replies[t].json()["status"] for t in (CORRECT, WRONG, NO_CODE)] == ["correct", "wrong_output",
                                                                                "format_error"]
    assert (replies[CORRECT].json()["score"] > replies[WRONG].json()["score"]
            > replies[NO_CODE].json()["score"])
    assert replies[CORRECT].json()["correct"] is True and replies[WRONG].json()["correct"] is False
    chat = slime_post(cpu_server.url, CORRECT, prompt=[{"role": "user", "content": PROMPT}])  # a chat prompt
    assert chat.status_code == 200 and chat.json()["score"] == pytest.approx(expected[CORRECT])
    unknown = slime_post(cpu_server.url, CORRECT, label="level0/no_such_problem")
    assert unknown.status_code == 422 and "unknown problem" in unknown.json()["detail"]


def test_a_full_queue_holds_slime_then_answers_a_neutral_score_not_429(cpu_evaluator):
    gated = Gated(cpu_evaluator)
    settings = ServiceSettings(max_queued_items=1, max_batch=1, hold_s=2, neutral_score=0.25)
    with serve(gated, settings=settings) as served:
        evaluate = f"{served.url}/v1/evaluate"
        busy: list[httpx.Response] = []  # takes the one slot, with no deadline of its own
        first = threading.Thread(target=lambda: busy.append(httpx.post(
            evaluate, json={"items": [{"problem": {"id": RELU.id}, "completion": CORRECT}]}, timeout=300)))
        first.start()
        try:
            end = time.monotonic() + 30
            while served.service.outstanding < 1:
                assert time.monotonic() < end, "the first request never took the queue's slot"
                time.sleep(0.01)
            refused = httpx.post(evaluate,
                                 json={"items": [{"problem": {"id": RELU.id}, "completion": WRONG}]})
            assert refused.status_code == 429  # the queue is full: kernelrl's own route refuses
            started = time.monotonic()
            held = slime_post(served.url, WRONG)
            waited = time.monotonic() - started
            assert held.status_code == 200, held.text
            # neutral, not a fake zero
            assert held.json()["no_verdict"] is True and held.json()["score"] == 0.25
            assert 1.8 <= waited < 15, waited
        finally:
            gated.gate.set()
        first.join(timeout=120)
        assert busy[0].status_code == 200 and busy[0].json()["results"][0]["result"]["status"] == "correct"
        after = slime_post(served.url, CORRECT)  # room again: a verdict (the one just journaled)
        assert after.json()["no_verdict"] is False and after.json()["status"] == "correct"
