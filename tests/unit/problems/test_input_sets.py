"""Named input sets (kernelrl.problems.input_sets)."""

from __future__ import annotations

import pytest


def test_input_set_helpers():
    import types

    from kernelrl.problems.input_sets import (
        InputSetError,
        call_with,
        correctness_sets,
        input_sets,
        timing_set,
    )

    plain = types.SimpleNamespace()
    assert input_sets(plain) == {"default": {}} and timing_set(["default"]) == "default"
    hooked = types.SimpleNamespace(get_input_sets=lambda: {"bench": {"n": 8}, "check": {"n": 1},
                                                           "sweep_b": {}, "sweep_a": {}})
    names = list(input_sets(hooked))
    assert correctness_sets(names, gpu=False) == ["check", "sweep_a", "sweep_b"]
    assert correctness_sets(names, gpu=True)[-1] == "bench" and timing_set(names) == "bench"
    assert correctness_sets(names, gpu=True, bench=False) == ["check", "sweep_a", "sweep_b"]
    for bad in ({"bench": {}}, {"bench": {}, "check": {}, "huge": {}}, {"bench": 1, "check": {}}):
        with pytest.raises(InputSetError):
            input_sets(types.SimpleNamespace(get_input_sets=lambda bad=bad: bad))
    assert call_with(lambda n=1: n, {"n": 5, "m": 2}) == 5
    assert call_with(lambda **kw: sorted(kw), {"n": 5, "m": 2}) == ["m", "n"]
