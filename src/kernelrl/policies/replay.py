"""Replay: completions read from a JSONL file, for tests, demos and re-evaluating stored outputs."""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kernelrl.policies.base import Completion, Message, PolicyError


class ReplayPolicy:
    """Serves completions from a JSONL file, one object per line:

    `{"text": "...", "problem_id": "level0/1_relu", "turn": 1, "sample": 0}` (plus optional `tokens_in`,
    `tokens_out`, `finish_reason`, `latency_s`, `model`). `problem_id`, `turn` and `sample` are optional:

    - for a request tagged with problem_id P, turn T and sample S, the record for (P, T, S) is served; else
      the record for (P, T) without a sample; when no record has turn T, the latest turn before T is used (so
      a one-turn file serves any number of turns);
    - records without `problem_id` are served, in file order and cyclically, to requests that match nothing.

    A request that matches no record raises `PolicyError`.
    """

    max_concurrency = 1

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.name = f"replay:{self.path}"
        try:
            lines = self.path.read_text().splitlines()
        except OSError as exc:
            raise ValueError(f"cannot read replay file {self.path}: {exc.strerror}") from None
        self._keyed: dict[tuple[str, int, int | None], dict] = {}
        self._generic: list[dict] = []
        for i, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{self.path}:{i}: not JSON ({exc.msg})") from None
            if not isinstance(record, dict) or not isinstance(record.get("text"), str):
                raise ValueError(f"{self.path}:{i}: each line must be an object with a string 'text'")
            if record.get("problem_id") is None:
                self._generic.append(record)
            else:
                sample = record.get("sample")
                key = (str(record["problem_id"]), int(record.get("turn", 1)),
                       None if sample is None else int(sample))
                self._keyed[key] = record
        if not self._keyed and not self._generic:
            raise ValueError(f"replay file {self.path} holds no completions")
        self._next_generic = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._keyed) + len(self._generic)

    def _find(self, problem_id: str | None, turn: int, sample: int | None) -> dict:
        if problem_id is not None:
            turns = sorted({t for (p, t, _) in self._keyed if p == problem_id and t <= turn}, reverse=True)
            for t in turns:
                for key in ((problem_id, t, sample), (problem_id, t, None)):
                    if key in self._keyed:
                        return self._keyed[key]
        if self._generic:
            with self._lock:
                record = self._generic[self._next_generic % len(self._generic)]
                self._next_generic += 1
            return record
        raise PolicyError(f"replay file {self.path} has no completion for problem {problem_id!r}, turn "
                          f"{turn}, sample {sample}")

    def generate(self, messages: Sequence[Message], n: int = 1, temperature: float = 0.7,
                 max_tokens: int = 4096, *, tags: Mapping[str, Any] | None = None) -> list[Completion]:
        tags = tags or {}
        problem_id = tags.get("problem_id")
        turn = int(tags.get("turn", 1))
        samples = list(tags.get("samples") or [None] * n)
        if len(samples) != n:
            raise ValueError(f"tags['samples'] names {len(samples)} samples but n={n}")
        out = []
        for sample in samples:
            record = self._find(problem_id, turn, sample)
            out.append(Completion(
                text=record["text"], tokens_in=int(record.get("tokens_in", 0)),
                tokens_out=int(record.get("tokens_out", 0)),
                finish_reason=str(record.get("finish_reason", "replay")),
                latency_s=float(record.get("latency_s", 0.0)), model=str(record.get("model", "replay"))))
        return out


def write_replay(path: str | Path, records: Sequence[Mapping[str, Any]]) -> Path:
    """Write replay records (dicts with at least 'text') as JSONL."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as f:
        for record in records:
            if not isinstance(record.get("text"), str):
                raise ValueError("every replay record needs a string 'text'")
            f.write(json.dumps(dict(record)) + "\n")
    return path
