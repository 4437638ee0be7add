"""The reward service over real components (uvicorn on loopback, the CPU evaluator, SQLite): the same verdicts
as in-process, and what it refuses, holds, replays and deduplicates."""

from __future__ import annotations

import dataclasses
import pickle
import threading
import time
from collections.abc import Iterator

import httpx
import pytest
from served import serve

from kernelrl import Status, load_suite
from kernelrl.evaluate import ScorerBase
from kernelrl.evaluate.scorer import Indexed, Work
from kernelrl.serve import Client
from kernelrl.serve.journal import Journal
from kernelrl.serve.service import ServiceSettings

SUITE = load_suite()
RELU = SUITE.get("level0/1_relu")
SOLUTION = SUITE.solution_path(RELU).read_text()
WRONG = SOLUTION.replace("tl.maximum(x, 0.0)", "tl.maximum(x, 1.0)")
NO_CODE = "I would write a kernel here, but I did not."


def variant(code: str, k: int) -> str:
    """The same kernel as a new candidate (another content key): one more module-level statement."""
    return f"{code}\n_variant = {k}\n"


class Counting(ScorerBase):
    """The evaluator, counting the items it is handed: what the service evaluated rather than answered."""

    def __init__(self, inner) -> None:
        self.inner, self.verdict, self.items = inner, inner.verdict, 0
        self._lock = threading.Lock()

    def _evaluate_work(self, work: Iterator[Work], verdict) -> Iterator[Indexed]:
        def counted() -> Iterator[Work]:
            for item in work:
                with self._lock:
                    self.items += 1
                yield item

        return self.inner._evaluate_work(counted(), verdict)

    def warm_up(self) -> None:
        self.inner.warm_up()

    def close(self) -> None:
        """The inner evaluator is the session's."""


def body(*texts: str, problem=RELU, **extra) -> dict:
    return {"items": [{"id": k, "problem": {"id": problem.id}, "code": t} for k, t in enumerate(texts)],
            **extra}


def statuses(response: httpx.Response) -> list[str]:
    assert response.status_code == 200, response.text
    return [r["result"]["status"] for r in response.json()["results"]]


def test_concurrent_clients_get_the_in_process_verdicts(cpu_evaluator, cpu_server):
    items = [(RELU, SOLUTION), (RELU, WRONG), (RELU, NO_CODE), (RELU, variant(SOLUTION, 1))]
    expected = [r.status for r in cpu_evaluator.evaluate_many(items, ordered=True)]
    assert [s.value for s in expected] == ["correct", "wrong_output", "format_error", "correct"]
    got: dict[int, list] = {}

    def run(k: int) -> None:
        with Client(cpu_server.url) as client:
            got[k] = [r.status for r in client.evaluate_many(items, ordered=True)]

    threads = [threading.Thread(target=run, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == {k: expected for k in range(4)}


def test_streamed_answers_come_as_items_finish(cpu_server):
    with httpx.stream("POST", f"{cpu_server.url}/v1/evaluate", timeout=300,
                      json=body(variant(SOLUTION, 2), NO_CODE, stream=True)) as response:
        lines = [line for line in response.iter_lines() if line]
    import json

    answers = [json.loads(line) for line in lines]
    assert [a["id"] for a in answers] == [1, 0]  # the format error needs no sandbox: it is answered first
    assert answers[1]["result"]["status"] == "correct" and len(answers[1]["item_key"]) == 64


def test_no_token_is_401_and_nothing_is_evaluated(cpu_evaluator):
    counting = Counting(cpu_evaluator)
    with serve(counting, token="t" * 24) as served:
        assert httpx.post(f"{served.url}/v1/evaluate", json=body(SOLUTION)).status_code == 401
        wrong = {"Authorization": "Bearer " + "u" * 24}
        assert httpx.post(f"{served.url}/v1/evaluate", json=body(SOLUTION), headers=wrong).status_code == 401
        assert httpx.get(f"{served.url}/metrics").status_code == 401
        assert httpx.get(f"{served.url}/healthz").status_code == 200  # probes need no token
        assert counting.items == 0
        with Client(served.url, token="t" * 24) as client:
            assert client.evaluate(RELU, SOLUTION).correct
        assert counting.items == 1


@pytest.mark.parametrize(("payload", "status", "says"), [
    (b"{not json", 400, "not JSON"),
    ({"items": []}, 422, "items"),
    ({"items": [{"problem": {"id": RELU.id}}]}, 422, "exactly one of 'code' and 'completion'"),
    ({"items": [{"problem": {"id": RELU.id}, "code": "x", "completion": "y"}]}, 422, "exactly one"),
    ({**body(SOLUTION), "verdict": {"trails": 3}}, 422, "unknown verdict settings ['trails']"),
    ({**body(SOLUTION), "verdict": {"seed": 3}}, 422, "does not take ['seed']"),
    ({**body(SOLUTION), "verdict": {"extra_rules": ["evil:RULE"]}}, 422, "does not take ['extra_rules']"),
    ({**body(SOLUTION), "verdict": {"trials": 0}}, 422, "trials must be at least 1"),
    ({"items": [{"problem": {"id": "level9/none"}, "code": "x"}]}, 422, "unknown problem 'level9/none'"),
    ({"items": [{"problem": {"id": RELU.id, "sha256": "0" * 64}, "code": "x"}]}, 422,
     "differs between client"),
    ({"items": [{"problem": {"id": RELU.id}, "code": "x"}], "surprise": 1}, 422, "surprise"),
    (body(*["x"] * 9), 413, "at most 8"),
    ({"items": [{"problem": {"id": RELU.id}, "code": "#" * 5000}]}, 422,
     "over the server's limit of 4096 bytes"),
    ({"items": [{"problem": {"id": RELU.id}, "code": "#" * 70_000}]}, 413, "request body"),
])
def test_bad_requests_say_what_is_wrong_and_evaluate_nothing(cpu_evaluator, payload, status, says):
    counting = Counting(cpu_evaluator)
    settings = ServiceSettings(max_batch=8, max_code_bytes=4096, max_body_bytes=65_536)
    with serve(counting, settings=settings, ready=False) as served:
        kwargs = {"content": payload} if isinstance(payload, bytes) else {"json": payload}
        response = httpx.post(f"{served.url}/v1/evaluate", **kwargs)
    assert response.status_code == status, response.text
    assert says in response.json()["detail"]
    assert counting.items == 0


def test_problem_sources_and_module_rewards_are_refused_without_trust(cpu_evaluator, tmp_path):
    counting = Counting(cpu_evaluator)
    marker = tmp_path / "ran"
    evil = RELU.source + f"\nimport pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n"
    by_source = {"items": [{"problem": {"id": "mine", "source": evil}, "code": SOLUTION}]}
    settings = ServiceSettings(rewards={"fast": "composite:alpha=0.5"})
    with serve(counting, settings=settings) as served:
        refused = httpx.post(f"{served.url}/v1/evaluate", json=by_source)
        assert refused.status_code == 422 and "--trust-sources" in refused.json()["detail"]
        module = httpx.post(f"{served.url}/v1/reward", json={**body(SOLUTION), "reward": "os:system"})
        assert module.status_code == 422 and "unknown reward 'os:system'" in module.json()["detail"]
        preset = httpx.post(f"{served.url}/v1/reward",
                            json={**body(SOLUTION), "reward": "kernelrl.rewards:tiered"})
        assert preset.status_code == 422
        assert counting.items == 0 and not marker.exists()
        named = httpx.post(f"{served.url}/v1/reward", json={**body(SOLUTION), "reward": "fast"}, timeout=300)
        assert named.status_code == 200 and named.json()["rewards"][0] is not None
    with serve(counting, settings=ServiceSettings(trust_problem_sources=True)) as trusting:
        mine = httpx.post(f"{trusting.url}/v1/evaluate", timeout=300,
                          json={"items": [{"problem": {"id": "mine", "source": RELU.source},
                                           "code": SOLUTION}]})
        assert statuses(mine) == ["correct"]


@pytest.mark.slow  # holds a queue full for seconds
def test_a_flood_gets_429_with_retry_after_and_the_client_recovers(cpu_evaluator):
    settings = ServiceSettings(max_batch=2, max_queued_items=2)
    with serve(cpu_evaluator, settings=settings) as served:
        first = threading.Thread(target=httpx.post, args=(f"{served.url}/v1/evaluate",),
                                 kwargs={"json": body(variant(SOLUTION, 10), variant(SOLUTION, 11)),
                                         "timeout": 300})
        first.start()
        end = time.monotonic() + 30
        while served.service.outstanding < 2 and time.monotonic() < end:
            time.sleep(0.01)
        flooded = httpx.post(f"{served.url}/v1/evaluate", json=body(variant(SOLUTION, 12)))
        assert flooded.status_code == 429, flooded.text
        assert int(flooded.headers["retry-after"]) >= 1 and "queue is full" in flooded.json()["detail"]
        with Client(served.url) as client:  # retries after Retry-After until there is room
            results = list(client.evaluate_many([(RELU, variant(SOLUTION, 13 + k)) for k in range(4)]))
        first.join()
        assert [r.status.value for r in results] == ["correct"] * 4
        assert served.service.outstanding == 0


def test_a_retried_key_is_answered_from_the_journal_and_another_body_is_422(cpu_evaluator):
    counting = Counting(cpu_evaluator)
    with serve(counting) as served:
        url, key = f"{served.url}/v1/evaluate", {"Idempotency-Key": "step-7-rank-0"}
        request = body(variant(SOLUTION, 20), WRONG + "\n_x = 20\n", NO_CODE, deadline_s=0.001)
        first = httpx.post(url, json=request, headers=key, timeout=300)
        assert counting.items == 3
        again = httpx.post(url, json=request, headers=key, timeout=300)
        assert again.json()["results"] == first.json()["results"]  # deadline no-verdicts replayed too
        assert all(r["no_verdict"] for r in first.json()["results"])
        assert counting.items == 3
        other = httpx.post(url, json=body(SOLUTION), headers=key)
        assert other.status_code == 422 and "another request body" in other.json()["detail"]
        # without the key, a no-verdict answer is not reused: the items are evaluated again
        fresh = httpx.post(url, json={**request, "deadline_s": 600}, timeout=300)
        assert statuses(fresh) == ["correct", "wrong_output", "compile_error"] and counting.items == 6


def test_duplicate_completions_of_a_group_are_evaluated_once(cpu_evaluator):
    counting = Counting(cpu_evaluator)
    with serve(counting) as served:
        a, b = variant(SOLUTION, 30), variant(WRONG, 31)
        # the same kernel with other comments and docstrings is the same candidate
        a_again = "# a comment\n" + a.replace("# Reference solution", "# Another comment")
        group = [a, a, b, a_again, b, a]
        answers: list[list[str]] = []

        def post() -> None:
            answers.append(statuses(httpx.post(f"{served.url}/v1/evaluate", json=body(*group), timeout=60)))

        threads = [threading.Thread(target=post) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert answers == [["correct", "correct", "wrong_output", "correct", "wrong_output", "correct"]] * 3
        assert counting.items == 2


def test_verdict_settings_per_request_are_part_of_the_key(cpu_evaluator):
    counting = Counting(cpu_evaluator)
    with serve(counting) as served, Client(served.url) as client:
        two = client.evaluate(RELU, variant(SOLUTION, 40),
                              verdict=dataclasses.replace(client.verdict, trials=2))
        four = client.with_verdict(trials=4).evaluate(RELU, variant(SOLUTION, 40))
        assert (two.correctness.trials_planned, four.correctness.trials_planned) == (2, 4)
        assert counting.items == 2


def test_an_item_past_its_deadline_has_no_verdict_and_no_reward(cpu_server):
    response = httpx.post(f"{cpu_server.url}/v1/reward", timeout=300,
                          json={**body(variant(SOLUTION, 50)), "deadline_s": 0.001})
    [line] = response.json()["results"]
    assert line["no_verdict"] and line["reward"] is None and response.json()["rewards"] == [None]
    with Client(cpu_server.url) as client:
        [result] = client.evaluate_many([(RELU, variant(SOLUTION, 51))], deadline_s=0.001)
    assert result.no_verdict and result.status.value == "timeout"


def test_the_client_without_a_server_answers_no_verdict_in_time():
    from served import free_port

    client = Client(f"http://127.0.0.1:{free_port()}", backoff_cap_s=0.2)
    started = time.monotonic()
    [result] = client.evaluate_many([(RELU, SOLUTION)], deadline_s=2)
    assert result.no_verdict and "did not answer in time" in result.message
    assert time.monotonic() - started < 10


def test_the_client_pickles_as_url_and_token_path(cpu_server, tmp_path):
    token = tmp_path / "token"
    token.write_text("secret-token-of-some-length\n")
    client = Client(cpu_server.url, token_file=token)
    copy = pickle.loads(pickle.dumps(client))
    assert (copy.url, copy.token_file) == (cpu_server.url, str(token))
    assert copy.evaluate(RELU, SOLUTION).correct
    with pytest.raises(TypeError, match="does not pickle"):
        pickle.dumps(Client(cpu_server.url, token="inline-secret"))


def test_probes_problems_and_metrics(cpu_server):
    url = cpu_server.url
    assert httpx.get(f"{url}/healthz").json() == {"status": "ok"}
    assert httpx.get(f"{url}/readyz").json() == {"ready": True}
    listed = httpx.get(f"{url}/v1/problems").json()["problems"]
    assert {p["id"]: p["sha256"] for p in listed}[RELU.id] == RELU.sha256
    assert "source" not in listed[0]
    with Client(url) as client:
        assert client.problem(RELU.id).source == RELU.source
        assert client.evaluate_one(RELU, NO_CODE, kind="completion").status is Status.FORMAT_ERROR
    metrics = httpx.get(f"{url}/metrics").text
    assert 'kernelrl_verdicts_total{status="format_error"}' in metrics
    assert "kernelrl_queue_items 0.0" in metrics


def test_openrlhf_route_answers_its_own_shape(cpu_server):
    prompt = "Write a Triton kernel.\n"
    reply = httpx.post(f"{cpu_server.url}/openrlhf/get_reward", timeout=300, json={
        "query": [prompt + f"```python\n{SOLUTION}\n```", prompt + NO_CODE], "prompts": [prompt, prompt],
        "labels": [RELU.id, RELU.id]}).json()
    assert set(reply) == {"rewards", "scores", "extra_logs"}
    assert reply["scores"] == [1.0, 0.0] and reply["rewards"][0] > reply["rewards"][1]
    assert reply["extra_logs"]["no_verdict"] == [0.0, 0.0]


def test_draining_service_is_not_ready_and_refuses_work(cpu_evaluator):
    import asyncio

    with serve(cpu_evaluator) as served:
        asyncio.run(served.service.drain())
        ready = httpx.get(f"{served.url}/readyz")
        assert ready.status_code == 503 and ready.json()["reason"] == "draining"
        refused = httpx.post(f"{served.url}/v1/evaluate", json=body(SOLUTION))
        assert refused.status_code == 503 and "retry-after" in refused.headers


def test_journal_keeps_answers_across_reopening(tmp_path):
    from kernelrl.results import EvalResult, Stage, Status

    path = tmp_path / "journal.sqlite"
    result = EvalResult(status=Status.CORRECT, stage=Stage.DONE, problem_id=RELU.id, message="ok")
    journal = Journal(path)
    journal.commit("k", result)
    assert journal.claim_request("idem", "body-a") is None
    journal.close()
    reopened = Journal(path)
    assert reopened.get("k").result == result
    assert reopened.claim_request("idem", "body-b") == "body-a"
    reopened.close()
    expired = Journal(path, retention_s=1e-9)
    assert expired.get("k") is None and expired.counts() == {"answers": 0, "requests": 0}
