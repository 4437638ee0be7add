"""SQLite stores behind the caches: WAL mode, one transaction per write, a busy timeout, safe for several
processes sharing one file. Every database failure becomes a `CacheWarning` and a miss."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
import threading
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

from kernelrl.results import EvalResult, Stage, Status, TimingStats
from kernelrl.verify.tolerance import is_marginal


class CacheWarning(RuntimeWarning):
    """A cache could not be used; the evaluation went on without it."""


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0
    stores: int = 0
    errors: int = 0

    @property
    def hit_rate(self) -> float | None:
        lookups = self.hits + self.misses
        return self.hits / lookups if lookups else None


class _Store:
    """One key -> JSON table in one SQLite file, opened lazily."""

    def __init__(self, path: Path, timeout_s: float = 10.0) -> None:
        self.path = Path(path)
        self.timeout_s = timeout_s
        self.stats = CacheStats()
        self._conn: sqlite3.Connection | None = None
        self._disabled: str | None = None  # why this store gave up (a corrupted or unopenable file)
        self._lock = threading.RLock()  # evaluate_many calls get/put from several threads

    @property
    def disabled(self) -> str | None:
        return self._disabled

    def _connect(self) -> sqlite3.Connection:
        if self._conn is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=self.timeout_s, isolation_level=None,
                                   check_same_thread=False)
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
                conn.execute("CREATE TABLE IF NOT EXISTS entries (key TEXT PRIMARY KEY, value TEXT NOT NULL, "
                             "created REAL NOT NULL)")
            except BaseException:
                conn.close()
                raise
            self._conn = conn
        return self._conn

    def _failed(self, action: str, exc: BaseException) -> None:
        self.stats.errors += 1
        transient = isinstance(exc, sqlite3.OperationalError) and any(
            word in str(exc).lower() for word in ("locked", "busy"))
        if not transient:  # corrupted, not a database, unwritable directory: stop trying
            self._disabled = f"{type(exc).__name__}: {exc}"
            self.close()
        warnings.warn(f"kernelrl cache {self.path}: {action} failed ({type(exc).__name__}: {exc}); "
                      f"{'skipped' if transient else 'continuing without this cache'}", CacheWarning,
                      stacklevel=4)

    def get(self, key: str) -> str | None:
        with self._lock:
            return self._get(key)

    def put(self, key: str, value: str) -> bool:
        with self._lock:
            return self._put(key, value)

    def _get(self, key: str) -> str | None:
        if self._disabled:
            return None
        try:
            row = self._connect().execute("SELECT value FROM entries WHERE key = ?", (key,)).fetchone()
        except (sqlite3.Error, OSError) as exc:
            self._failed("read", exc)
            return None
        return row[0] if row else None

    def _put(self, key: str, value: str) -> bool:
        if self._disabled:
            return False
        try:  # one statement in autocommit mode: one transaction per write
            self._connect().execute(
                "INSERT INTO entries (key, value, created) VALUES (?, ?, ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value, created = excluded.created",
                (key, value, time.time()))
        except (sqlite3.Error, OSError) as exc:
            self._failed("write", exc)
            return False
        self.stats.stores += 1
        return True

    def __len__(self) -> int:
        try:
            return int(self._connect().execute("SELECT COUNT(*) FROM entries").fetchone()[0])
        except (sqlite3.Error, OSError):
            return 0

    def close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except sqlite3.Error:
                pass
            self._conn = None


# -- verdicts ------------------------------------------------------------------------------------------------
_TRANSIENT_TIMING = ("baselines failed", "the candidate's timing report is unusable")


def result_cacheable(result: EvalResult) -> bool:
    """Whether a verdict is a property of the code (kept) rather than of this run's machine state (not kept).

    Kept: format/compile errors, unsupported, wrong outputs, runtime errors raised by the candidate,
    static and correctness-stage hacks, correct verdicts. Not kept: timeouts and crashes (a loaded
    machine, the OOM killer or a dying sandbox can cause them), out-of-memory errors, failures of
    the problem's reference (the judge), hacks found by timing checks (measurements with noise),
    correct verdicts whose timing failed for reasons outside the candidate (the judge's baselines),
    and marginal wrong outputs (the worst element within kernelrl.verify.tolerance.MARGINAL_FACTOR
    of its allowance: another draw of the secret inputs may pass)."""
    status = result.status
    if status is Status.WRONG_OUTPUT and result.correctness is not None \
            and result.correctness.mismatch is not None:
        mismatch = result.correctness.mismatch
        return not is_marginal(mismatch.reason, mismatch.tolerance_ratio)
    if status in (Status.TIMEOUT, Status.CRASHED):
        return False
    if status is Status.RUNTIME_ERROR:
        text = f"{result.message}\n{result.feedback}".lower()
        return (result.stage is not Stage.REFERENCE and "out of memory" not in text
                and "memoryerror" not in text)
    if status is Status.HACK_DETECTED:
        return result.stage is not Stage.TIMING
    if status is Status.CORRECT and result.timing is not None and result.timing.unavailable_reason:
        return not result.timing.unavailable_reason.startswith(_TRANSIENT_TIMING)
    return True


class _Cache:
    """A typed cache over one `_Store` file."""

    def __init__(self, path: Path, timeout_s: float = 10.0) -> None:
        self._store = _Store(path, timeout_s)

    @property
    def path(self) -> Path:
        return self._store.path

    @property
    def stats(self) -> CacheStats:
        return self._store.stats

    @property
    def disabled(self) -> str | None:
        return self._store.disabled


class ResultCache(_Cache):
    """Verdicts by `result_key` (see kernelrl.cache.keys), in `results.sqlite`."""

    FILE = "results.sqlite"

    def get(self, key: str) -> EvalResult | None:
        """The stored verdict marked `cached=True`, or None (counted as a miss)."""
        text = self._store.get(key)
        result = None
        if text is not None:
            try:
                result = EvalResult.from_json(text)
            except (ValueError, TypeError, KeyError):  # written by another schema: re-evaluate
                result = None
        if result is None:
            self.stats.misses += 1
            return None
        self.stats.hits += 1
        result.cached = True
        return result

    def put(self, key: str, result: EvalResult) -> bool:
        """Store a verdict if `result_cacheable` allows it; True when stored."""
        if not result_cacheable(result):
            return False
        return self._store.put(key, dataclasses.replace(result, cached=False).to_json())

    def __len__(self) -> int:
        return len(self._store)

    def close(self) -> None:
        self._store.close()


# -- baselines -----------------------------------------------------------------------------------------------
@dataclass
class BaselineEntry:
    eager: TimingStats
    inductor: TimingStats | None = None
    inductor_error: str | None = None  # torch.compile failed on this reference (a fact about it, kept)

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> BaselineEntry:
        data = json.loads(text)
        inductor = data.get("inductor")
        return cls(eager=TimingStats(**data["eager"]),
                   inductor=TimingStats(**inductor) if inductor is not None else None,
                   inductor_error=data.get("inductor_error"))


class BaselineCache(_Cache):
    """Eager and Inductor times by `baseline_key`, in `baselines.sqlite`. Numbers read back carry
    `source="cache"`."""

    FILE = "baselines.sqlite"

    def get(self, key: str, need_inductor: bool = False) -> BaselineEntry | None:
        """The stored times (or None, a miss); with
        `need_inductor`, an entry timed without Inductor misses."""
        text = self._store.get(key)
        entry = None
        if text is not None:
            try:
                entry = BaselineEntry.from_json(text)
            except (ValueError, TypeError, KeyError):
                entry = None
        if entry is not None and need_inductor and entry.inductor is None and entry.inductor_error is None:
            entry = None
        if entry is None:
            self.stats.misses += 1
            return None
        self.stats.hits += 1
        entry.eager = dataclasses.replace(entry.eager, source="cache")
        if entry.inductor is not None:
            entry.inductor = dataclasses.replace(entry.inductor, source="cache")
        return entry

    def put(self, key: str, entry: BaselineEntry) -> bool:
        return self._store.put(key, entry.to_json())

    def __len__(self) -> int:
        return len(self._store)

    def close(self) -> None:
        self._store.close()
