"""A run directory: every attempt (prompt messages, completion, extracted code, EvalResult, reward, turn,
sample) as JSON lines and in SQLite, written as it happens (JSONL appended and flushed, one SQLite commit per
step), so a crash loses nothing already evaluated and a re-run skips what is done.

Layout: `RUN_DIR/trajectories.jsonl`, `RUN_DIR/run.sqlite` (table `steps`), `RUN_DIR/config.json`.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelrl.policies.base import Completion
from kernelrl.results import EvalResult

TRAJECTORIES = "trajectories.jsonl"
DATABASE = "run.sqlite"
CONFIG = "config.json"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS steps (
    problem_id TEXT NOT NULL,
    sample INTEGER NOT NULL,
    turn INTEGER NOT NULL,
    level INTEGER,
    family TEXT,
    status TEXT NOT NULL,
    reward REAL NOT NULL,
    speedup_vs_eager REAL,
    speedup_vs_inductor REAL,
    tokens_in INTEGER NOT NULL,
    tokens_out INTEGER NOT NULL,
    parent TEXT,
    code TEXT,
    messages TEXT NOT NULL,
    completion TEXT NOT NULL,
    result TEXT NOT NULL,
    created REAL NOT NULL,
    PRIMARY KEY (problem_id, sample, turn)
)
"""


@dataclass
class Step:
    """One attempt: sample `sample` of a problem at turn `turn` (1-based)."""

    problem_id: str
    sample: int
    turn: int
    messages: list[dict[str, str]]
    completion: Completion
    code: str | None  # what extraction found (None: format error before any code)
    result: EvalResult
    reward: float
    level: int | None = None
    family: str = ""
    parent: str | None = None  # evolutionary mode: 'sample/turn' of the kernel this one refined
    created: float = field(default_factory=time.time)

    @property
    def key(self) -> tuple[str, int, int]:
        return (self.problem_id, self.sample, self.turn)

    @property
    def speedup_vs_eager(self) -> float | None:
        return self.result.timing.speedup_vs_eager if self.result.timing else None

    @property
    def speedup_vs_inductor(self) -> float | None:
        return self.result.timing.speedup_vs_inductor if self.result.timing else None

    def to_dict(self) -> dict[str, Any]:
        return {"problem_id": self.problem_id, "sample": self.sample, "turn": self.turn, "level": self.level,
                "family": self.family, "parent": self.parent, "reward": self.reward,
                "messages": self.messages, "completion": self.completion.to_dict(), "code": self.code,
                "result": self.result.to_dict(), "created": self.created}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Step:
        return cls(problem_id=data["problem_id"], sample=int(data["sample"]), turn=int(data["turn"]),
                   messages=list(data["messages"]), completion=Completion.from_dict(data["completion"]),
                   code=data.get("code"), result=EvalResult.from_dict(data["result"]),
                   reward=float(data["reward"]), level=data.get("level"), family=data.get("family") or "",
                   parent=data.get("parent"), created=float(data.get("created", 0.0)))


class RunStore:
    """Appends steps to a run directory and reads them back (from SQLite)."""

    def __init__(self, run_dir: str | Path) -> None:
        self.run_dir = Path(run_dir)
        if self.run_dir.exists() and not self.run_dir.is_dir():
            raise ValueError(f"run directory {self.run_dir} is a file")
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.jsonl_path = self.run_dir / TRAJECTORIES
        self.db_path = self.run_dir / DATABASE
        self._lock = threading.Lock()
        with self._connect() as db:
            db.execute(_SCHEMA)

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.db_path, timeout=60)

    def write_config(self, config: dict[str, Any]) -> None:
        """Record the run's settings; on a resumed run, the previous settings are kept under 'previous'."""
        path = self.run_dir / CONFIG
        if path.exists():
            try:
                old = json.loads(path.read_text())
            except json.JSONDecodeError:
                old = None
            if old is not None and {k: v for k, v in old.items() if k != "previous"} != config:
                config = {**config, "previous": old}
        path.write_text(json.dumps(config, indent=2, sort_keys=True, default=str) + "\n")

    def read_config(self) -> dict[str, Any]:
        path = self.run_dir / CONFIG
        return json.loads(path.read_text()) if path.exists() else {}

    def record(self, step: Step) -> None:
        data = step.to_dict()
        line = json.dumps(data, sort_keys=True)
        with self._lock:
            with self.jsonl_path.open("a") as f:
                f.write(line + "\n")
                f.flush()
                os.fsync(f.fileno())
            with self._connect() as db:  # the context manager commits
                db.execute(
                    "INSERT OR REPLACE INTO steps VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (step.problem_id, step.sample, step.turn, step.level, step.family,
                     step.result.status.value, step.reward, step.speedup_vs_eager, step.speedup_vs_inductor,
                     step.completion.tokens_in, step.completion.tokens_out, step.parent, step.code,
                     json.dumps(step.messages), json.dumps(step.completion.to_dict()), step.result.to_json(),
                     step.created))

    def steps(self, problem_id: str | None = None) -> list[Step]:
        query = ("SELECT problem_id, sample, turn, level, family, reward, parent, code, messages, "
                 "completion, result, created FROM steps")
        args: tuple = ()
        if problem_id is not None:
            query += " WHERE problem_id = ?"
            args = (problem_id,)
        with self._connect() as db:
            rows = db.execute(query + " ORDER BY problem_id, turn, sample", args).fetchall()
        return [Step(problem_id=r[0], sample=r[1], turn=r[2], level=r[3], family=r[4] or "", reward=r[5],
                     parent=r[6], code=r[7], messages=json.loads(r[8]),
                     completion=Completion.from_dict(json.loads(r[9])), result=EvalResult.from_json(r[10]),
                     created=r[11]) for r in rows]

    def done(self, problem_id: str) -> dict[tuple[int, int], Step]:
        """(sample, turn) -> step, for a problem's finished attempts."""
        return {(s.sample, s.turn): s for s in self.steps(problem_id)}

    def mark_problem(self, problem_id: str, state: dict[str, Any]) -> None:
        """Per-problem bookkeeping (e.g. stopped early), so a resumed run knows a problem is finished."""
        with self._lock, self._connect() as db:
            db.execute("CREATE TABLE IF NOT EXISTS problems "
                       "(problem_id TEXT PRIMARY KEY, state TEXT NOT NULL)")
            db.execute("INSERT OR REPLACE INTO problems VALUES (?, ?)", (problem_id, json.dumps(state)))

    def problem_state(self, problem_id: str) -> dict[str, Any] | None:
        with self._connect() as db:
            db.execute("CREATE TABLE IF NOT EXISTS problems "
                       "(problem_id TEXT PRIMARY KEY, state TEXT NOT NULL)")
            row = db.execute("SELECT state FROM problems WHERE problem_id = ?", (problem_id,)).fetchone()
        return None if row is None else json.loads(row[0])


def open_run(run_dir: str | Path) -> RunStore:
    """Open an existing run directory (error if it holds no run)."""
    path = Path(run_dir)
    if not (path / DATABASE).is_file():
        raise ValueError(f"{path} is not a kernelrl run directory (no {DATABASE}); create one with kernelrl "
                         "bench or kernelrl agent")
    return RunStore(path)
