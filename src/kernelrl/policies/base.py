"""The policy interface: chat messages in, completions out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol, runtime_checkable

Message = Mapping[str, str]  # {"role": "system" | "user" | "assistant", "content": "..."}


class PolicyError(RuntimeError):
    """A policy could not produce completions (server unreachable after retries, replay exhausted, ...)."""


@dataclass(frozen=True)
class Completion:
    text: str
    tokens_in: int = 0  # prompt tokens (per request; shared by the n completions of one request)
    tokens_out: int = 0  # completion tokens of this completion
    finish_reason: str = "stop"  # 'stop', 'length', 'replay', ...
    latency_s: float = 0.0  # wall time of the request that produced it
    model: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Completion:
        return cls(**{k: data[k] for k in ("text", "tokens_in", "tokens_out", "finish_reason", "latency_s",
                                           "model")
                      if k in data})


@runtime_checkable
class Policy(Protocol):
    """Anything that turns chat messages into `n` completions.

    `tags` are opaque labels of the request (problem_id, turn, samples) that the
    replay policy uses to find its completions; model-backed policies ignore them.
    """

    name: str
    max_concurrency: int

    def generate(self, messages: Sequence[Message], n: int = 1, temperature: float = 0.7,
                 max_tokens: int = 4096, *, tags: Mapping[str, Any] | None = None) -> list[Completion]: ...


def check_messages(messages: Sequence[Message]) -> None:
    if not messages:
        raise ValueError("messages must not be empty")
    for m in messages:
        if m.get("role") not in ("system", "user", "assistant") or not isinstance(m.get("content"), str):
            raise ValueError(f"bad chat message {dict(m)!r}: need role "
                             "system/user/assistant and string content")
