"""The kernel database: every evaluated kernel of every run, in one SQLite file, so later runs can prompt with
the best prior kernels of the same and similar problems (same family, shared tags)."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from pathlib import Path

from kernelrl.problems import Problem
from kernelrl.prompts import Inspiration
from kernelrl.results import EvalResult

_SCHEMA = """
CREATE TABLE IF NOT EXISTS kernels (
    problem_id TEXT NOT NULL,
    problem_sha256 TEXT NOT NULL,
    family TEXT,
    tags TEXT,
    level INTEGER,
    code_sha256 TEXT NOT NULL,
    code TEXT NOT NULL,
    status TEXT NOT NULL,
    reward REAL NOT NULL,
    speedup_vs_eager REAL,
    speedup_vs_inductor REAL,
    source TEXT,
    created REAL NOT NULL,
    PRIMARY KEY (problem_sha256, code_sha256)
)
"""


def default_kernel_db_path() -> Path:
    """$KERNELRL_KERNEL_DB, else ~/.cache/kernelrl/kernels.sqlite (XDG_CACHE_HOME respected)."""
    if os.environ.get("KERNELRL_KERNEL_DB"):
        return Path(os.environ["KERNELRL_KERNEL_DB"])
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return cache / "kernelrl" / "kernels.sqlite"


class KernelDB:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        with self._connect() as db:
            db.execute(_SCHEMA)

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=60)

    def add(self, problem: Problem, code: str, result: EvalResult, reward: float, source: str = "") -> None:
        """Store a kernel (keeps the higher reward when the same code was stored for the problem before)."""
        t = result.timing
        row = (problem.id, problem.sha256, problem.family, json.dumps(sorted(problem.tags)), problem.level,
               hashlib.sha256(code.encode()).hexdigest(), code, result.status.value, reward,
               t.speedup_vs_eager if t else None, t.speedup_vs_inductor if t else None, source, time.time())
        with self._lock, self._connect() as db:
            old = db.execute("SELECT reward FROM kernels WHERE problem_sha256 = ? AND code_sha256 = ?",
                             (row[1], row[5])).fetchone()
            if old is None or old[0] < reward:
                db.execute("INSERT OR REPLACE INTO kernels VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                           row)

    def best(self, problem: Problem, k: int = 2, exclude: set[str] | frozenset[str] = frozenset(),
             similar: bool = True) -> list[Inspiration]:
        """Up to k correct kernels, best reward first: this problem's, then (with `similar`) those of problems
        in the same family or sharing a tag. `exclude` holds code sha256s to leave out."""
        with self._connect() as db:
            rows = db.execute("SELECT problem_id, problem_sha256, family, tags, code_sha256, code, reward, "
                              "speedup_vs_eager FROM kernels WHERE status = 'correct' ORDER BY reward DESC, "
                              "created DESC").fetchall()
        tags = set(problem.tags)
        own, other = [], []
        seen = set(exclude)
        for pid, psha, family, row_tags, csha, code, reward, s_eager in rows:
            if csha in seen:
                continue
            if psha == problem.sha256:
                own.append(Inspiration(pid, code, reward, s_eager))
            elif similar and (family == problem.family or tags & set(json.loads(row_tags or "[]"))):
                other.append(Inspiration(pid, code, reward, s_eager))
            else:
                continue
            seen.add(csha)
        return (own + other)[:k]

    def count(self) -> int:
        with self._connect() as db:
            return int(db.execute("SELECT COUNT(*) FROM kernels").fetchone()[0])
