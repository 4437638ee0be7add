"""Helpers of the Ray pool's tests: slow correct candidates, and a pool call run in a thread, so that a
test can kill actors, remove nodes or close the pool while it is in flight."""

from __future__ import annotations

import threading
from collections import Counter


def slow(code: str, seconds: float) -> str:
    """A correct candidate whose construction sleeps (it is built twice: init and correctness)."""
    return (code.replace("import torch\n", "import time\nimport torch\n", 1)
            .replace("        super().__init__()\n",
                     f"        super().__init__()\n        time.sleep({seconds})\n", 1))


class InBackground:
    """`pool.evaluate_indexed(items, verdict=...)` on a daemon thread: its answers as they come, and what it
    raised."""

    def __init__(self, pool, items: list, verdict) -> None:
        self.items, self.answers, self.failure = items, [], []

        def run() -> None:
            try:
                self.answers.extend(pool.evaluate_indexed(items, verdict=verdict))
            except BaseException as exc:  # noqa: BLE001 - reported by the test
                self.failure.append(exc)

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()

    def join(self, timeout_s: float) -> list:
        """The answers once the call returned; fails if it is still running or raised."""
        self.thread.join(timeout_s)
        assert not self.thread.is_alive() and not self.failure, self.failure
        return self.answers

    def assert_each_answered_once(self) -> None:
        seen = Counter(index for index, _ in self.answers)
        assert sorted(seen) == list(range(len(self.items))) and set(seen.values()) == {1}, seen
