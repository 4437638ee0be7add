"""OpenAI-compatible chat-completions policy (hosted APIs, vLLM, SGLang), through the `openai` SDK.

Needs the `llm` extra (`pip install kernelrl[llm]`).
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

from kernelrl.policies.base import Completion, Message, PolicyError, check_messages

DEFAULT_BASE_URL = "https://api.openai.com/v1"


@dataclass
class Usage:
    """Token accounting over the policy's lifetime."""

    requests: int = 0
    retries: int = 0
    tokens_in: int = 0
    tokens_out: int = 0


def _is_local(base_url: str) -> bool:
    return (urlparse(base_url).hostname or "") in ("127.0.0.1", "localhost", "::1", "0.0.0.0")


class OpenAIPolicy:
    """Chat completions from an OpenAI-compatible server.

    base_url: default `$OPENAI_BASE_URL`, else api.openai.com. The API key is read from the environment
    variable `api_key_env` (default OPENAI_API_KEY); servers on localhost get "EMPTY" when it is unset.
    Retries: up to `max_retries` after a 429, a 5xx, a timeout or a connection error, with exponential backoff
    from `backoff_s` (doubling, capped at 30 s, jittered; a Retry-After header up to 60 s wins).
    `max_concurrency` caps requests in flight across threads. When a server returns fewer than `n` choices
    (some ignore `n`), further requests fill up the rest.
    """

    def __init__(self, model: str, base_url: str | None = None, api_key_env: str = "OPENAI_API_KEY",
                 max_retries: int = 4, backoff_s: float = 1.0, timeout_s: float = 600.0,
                 max_concurrency: int = 8, extra_body: Mapping[str, Any] | None = None) -> None:
        try:
            import openai
        except ImportError:
            raise PolicyError("the OpenAI-compatible policy needs the openai package: pip "
                              "install 'kernelrl[llm]'"
                              ) from None
        if max_concurrency < 1 or max_retries < 0:
            raise ValueError("max_concurrency must be >= 1 and max_retries >= 0")
        self.model = model
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
        key = os.environ.get(api_key_env)
        if not key:
            if not _is_local(self.base_url):
                raise PolicyError("no API key: set the environment variable "
                                  f"{api_key_env} for {self.base_url}")
            key = "EMPTY"
        self.name = f"openai:{model}"
        self.max_concurrency = max_concurrency
        self.max_retries, self.backoff_s = max_retries, backoff_s
        self.extra_body = dict(extra_body or {})
        self.usage = Usage()
        self._openai = openai
        self._client = openai.OpenAI(base_url=self.base_url, api_key=key, max_retries=0, timeout=timeout_s)
        self._slots = threading.Semaphore(max_concurrency)
        self._lock = threading.Lock()

    def _retry_delay(self, attempt: int, exc: Exception) -> float:
        response = getattr(exc, "response", None)
        header = response.headers.get("retry-after") if response is not None else None
        if header is not None:
            try:
                return min(max(float(header), 0.0), 60.0)
            except ValueError:
                pass
        return min(self.backoff_s * 2 ** attempt, 30.0) * (1 - 0.25 * random.random())

    def _request(self, messages: list[dict], n: int, temperature: float, max_tokens: int):
        o = self._openai
        retriable = (o.RateLimitError, o.InternalServerError, o.APIConnectionError, o.APITimeoutError)
        for attempt in range(self.max_retries + 1):
            try:
                with self._slots:
                    started = time.monotonic()
                    response = self._client.chat.completions.create(
                        model=self.model, messages=messages, n=n, temperature=temperature,
                        max_tokens=max_tokens, extra_body=self.extra_body or None)
                    return response, time.monotonic() - started
            except retriable as exc:
                if attempt == self.max_retries:
                    raise PolicyError(f"{self.base_url}: {type(exc).__name__} after {attempt + 1} attempts: "
                                      f"{str(exc)[:300]}") from None
                with self._lock:
                    self.usage.retries += 1
                time.sleep(self._retry_delay(attempt, exc))
            except o.APIStatusError as exc:  # 4xx other than 429: the request itself is wrong
                raise PolicyError(f"{self.base_url}: HTTP {exc.status_code}: {str(exc)[:300]}") from None
        raise AssertionError("unreachable")

    def generate(self, messages: Sequence[Message], n: int = 1, temperature: float = 0.7,
                 max_tokens: int = 4096, *, tags: Mapping[str, Any] | None = None) -> list[Completion]:
        check_messages(messages)
        if n < 1:
            raise ValueError("n must be >= 1")
        payload = [dict(m) for m in messages]
        out: list[Completion] = []
        while len(out) < n:
            response, latency = self._request(payload, n - len(out), temperature, max_tokens)
            choices = list(response.choices or [])
            if not choices:
                raise PolicyError(f"{self.base_url}: the response has no choices")
            usage = response.usage
            tokens_in = int(getattr(usage, "prompt_tokens", 0) or 0)
            total_out = int(getattr(usage, "completion_tokens", 0) or 0)
            with self._lock:
                self.usage.requests += 1
                self.usage.tokens_in += tokens_in
                self.usage.tokens_out += total_out
            share = total_out // len(choices)
            for k, choice in enumerate(choices[: n - len(out)]):
                # usage counts all choices together: split it, the remainder to the first
                tokens = share + (total_out - share * len(choices) if k == 0 else 0)
                out.append(Completion(text=choice.message.content or "", tokens_in=tokens_in,
                                      tokens_out=tokens, finish_reason=str(choice.finish_reason or "stop"),
                                      latency_s=round(latency, 4), model=str(response.model or self.model)))
        return out
