"""The service journal (SQLite): every answered item, committed before it is answered, and every idempotency
key with the hash of its request's body. A server killed and restarted still answers what it had answered.

Not the result cache: the journal keeps every answer (timeouts, crashes, no-verdicts included) for replays of
the same request, and serves fresh requests only verdicts; the result cache keeps only verdicts it may reuse,
and can be off.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from kernelrl.results import EvalResult

_SCHEMA = """
CREATE TABLE IF NOT EXISTS answers (item_key TEXT PRIMARY KEY, result TEXT NOT NULL,
                                    no_verdict INTEGER NOT NULL, answered_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS requests (idempotency_key TEXT PRIMARY KEY, body_sha256 TEXT NOT NULL,
                                     created_at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS answers_by_time ON answers (answered_at);
CREATE INDEX IF NOT EXISTS requests_by_time ON requests (created_at);
"""


@dataclass(frozen=True)
class Stored:
    result: EvalResult
    answered_at: float


class Journal:
    """`path`: the SQLite file (':memory:' keeps nothing across restarts). `retention_s`: how long answers and
    idempotency keys are kept (pruned at start and every `prune_every` commits)."""

    def __init__(self, path: str | Path = ":memory:", retention_s: float = 7 * 86400.0,
                 prune_every: int = 1000) -> None:
        if not retention_s > 0:
            raise ValueError("retention_s must be positive")
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self.retention_s = retention_s
        self._prune_every = prune_every
        self._commits = 0
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        # WAL: a committed answer survives the process being killed; NORMAL sync is enough for that
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)
        self.prune()

    def get(self, item_key: str) -> Stored | None:
        with self._lock:
            row = self._db.execute("SELECT result, answered_at FROM answers WHERE item_key "
                                   "= ? AND answered_at > ?",
                                   (item_key, time.time() - self.retention_s)).fetchone()
        return Stored(EvalResult.from_json(row[0]), row[1]) if row else None

    def commit(self, item_key: str, result: EvalResult) -> None:
        """Store an answer (replacing an older one for the key); durable when this returns."""
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO answers VALUES (?, ?, ?, ?)",
                             (item_key, result.to_json(), int(result.no_verdict), time.time()))
            self._commits += 1
            due = self._commits % self._prune_every == 0
        if due:
            self.prune()

    def claim_request(self, idempotency_key: str, body_sha256: str) -> str | None:
        """Record a request's key; returns the body hash already recorded under it (None when new). A caller
        that gets another hash than its own has reused the key for another request."""
        with self._lock:
            row = self._db.execute("SELECT body_sha256 FROM requests WHERE "
                                   "idempotency_key = ? AND created_at > ?",
                                   (idempotency_key, time.time() - self.retention_s)).fetchone()
            if row is not None:
                return row[0]
            self._db.execute("INSERT OR REPLACE INTO requests VALUES (?, ?, ?)",
                             (idempotency_key, body_sha256, time.time()))
        return None

    def prune(self) -> None:
        cutoff = time.time() - self.retention_s
        with self._lock:
            self._db.execute("DELETE FROM answers WHERE answered_at <= ?", (cutoff,))
            self._db.execute("DELETE FROM requests WHERE created_at <= ?", (cutoff,))

    def counts(self) -> dict[str, int]:
        with self._lock:
            answers = self._db.execute("SELECT COUNT(*) FROM answers").fetchone()[0]
            requests = self._db.execute("SELECT COUNT(*) FROM requests").fetchone()[0]
        return {"answers": answers, "requests": requests}

    def writable(self) -> bool:
        try:
            with self._lock:
                self._db.execute("BEGIN IMMEDIATE")
                self._db.execute("ROLLBACK")
            return True
        except sqlite3.Error:
            return False

    def close(self) -> None:
        with self._lock:
            self._db.close()
