"""kernelrl.sandbox.stub.trusted: the stub's secret draws keep no state a candidate could read."""

from __future__ import annotations

import copy
import os
from collections import Counter

import pytest

from kernelrl.sandbox.stub.trusted import Secret


def test_a_copy_of_the_secret_does_not_predict_its_next_draws():
    """A seeded generator found through gc or a frame predicts every later draw (copy it, draw from the copy);
    the stub's secret has nothing to copy."""
    secret = Secret(os.urandom)
    twin = copy.deepcopy(secret)
    assert [secret.getrandbits(63) for _ in range(4)] != [twin.getrandbits(63) for _ in range(4)]
    assert not hasattr(secret, "getstate") and not hasattr(secret, "__dict__")


def test_secret_draws_are_in_range_and_cover_it():
    secret = Secret(os.urandom)
    assert all(0 <= secret.getrandbits(k) < 2 ** k for k in (1, 7, 8, 9, 63, 64) for _ in range(50))
    counts = Counter(secret.choice("abc") for _ in range(600))
    assert set(counts) == {"a", "b", "c"} and min(counts.values()) > 120  # uniform: ~200 each
    picked = secret.sample(range(10), 4)
    assert len(set(picked)) == 4 and all(0 <= p < 10 for p in picked)
    items = list(range(20))
    secret.shuffle(items)
    assert sorted(items) == list(range(20))
    with pytest.raises(ValueError):
        secret.sample(range(3), 4)
