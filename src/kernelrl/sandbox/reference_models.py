"""The judge's reference models, built once per problem and constructor arguments and kept for the next
evaluations of that problem, within a byte budget (judge worker; needs torch).

A training run meets thousands of problems and the judge lives as long as the evaluator: keeping every model
it ever built (and its float64 copy, kernelrl.verify.exact) grows its device memory without bound, outside
what the GPU memory admission charges. The least recently used models beyond the budget are dropped from the
cache; an evaluation in flight still holds its own (its trial plan refers to it), so a model is freed only
once nothing uses it, and an evicted problem's next evaluation builds it again the KernelBench way (seed 42:
the same weights)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable

# models kept for reuse beyond those in use: a few of the largest built-in and generated problems' weights
MODEL_CACHE_BYTES = 4 << 30


def model_bytes(model: object) -> int:
    """The bytes of a module's parameters and buffers (0 for anything else)."""
    tensors = [*getattr(model, "parameters", list)(), *getattr(model, "buffers", list)()]
    return sum(t.numel() * t.element_size() for t in tensors)


class ReferenceModels:
    """key -> model, least recently used first; `get` builds a missing one with `build()`."""

    def __init__(self, budget_bytes: int = MODEL_CACHE_BYTES) -> None:
        self.budget_bytes = budget_bytes
        self._models: OrderedDict[tuple, tuple[object, int]] = OrderedDict()
        self.held_bytes = 0
        self.evicted = 0

    def get(self, key: tuple, build: Callable[[], object]) -> object:
        entry = self._models.get(key)
        if entry is not None:
            self._models.move_to_end(key)
            return entry[0]
        model = build()
        size = model_bytes(model)
        self._models[key] = (model, size)
        self.held_bytes += size
        while self.held_bytes > self.budget_bytes and len(self._models) > 1:  # the newest always stays
            _, (_, dropped) = self._models.popitem(last=False)
            self.held_bytes -= dropped
            self.evicted += 1
        return model

    def clear(self) -> None:
        self._models.clear()
        self.held_bytes = 0

    def __contains__(self, key: tuple) -> bool:
        return key in self._models

    def __len__(self) -> int:
        return len(self._models)
