"""Reward presets: pure functions `EvalResult -> float`, selectable by name with parameters.

A missing speedup (timing unavailable: CPU interpreter mode, timing disabled, a failed baseline) earns no speed
credit: every preset uses `missing_speedup` (default 0.0) in place of the speedup in its speed term and treats
the kernel as "not faster" in threshold terms. So on a CPU a correct kernel gets the preset's correctness-only
reward; pass `missing_speedup=1.0` to assume parity with the baseline instead. Timed-out, crashed, unsupported
and format errors are failures like any other non-correct verdict. `hack_detected` always maps to the preset's
minimum (`reward_minimum`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

from kernelrl.results import EvalResult, Status

RewardFn = Callable[[EvalResult], float]


def speedup(result: EvalResult, baseline: str = "eager", missing: float | None = None) -> float | None:
    """The measured speedup of a correct result over 'eager' or 'inductor', else `missing`."""
    if baseline not in ("eager", "inductor"):
        raise ValueError(f"baseline must be 'eager' or 'inductor', not {baseline!r}")
    t = result.timing
    value = None if t is None else (t.speedup_vs_eager if baseline == "eager" else t.speedup_vs_inductor)
    return missing if value is None or not math.isfinite(value) else float(value)


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def makora(result: EvalResult, delta: float = 1.8, missing_speedup: float = 0.0) -> float:
    """Makora: r = 0 if not compiled, wrong or a hack, else sigmoid(1 + max(0, s_inductor) - delta).

    s_inductor is the speedup over torch.compile (Inductor); delta=1.8 by default, so a correct kernel at
    parity with Inductor (s=1) earns sigmoid(0.2) = 0.5498 and one with no timing earns sigmoid(-0.8) = 0.3100.
    Range (0, 1); minimum 0.
    """
    if not result.correct:
        return 0.0
    s = speedup(result, "inductor", missing_speedup)
    return _sigmoid(1.0 + max(0.0, s) - delta)


def composite(result: EvalResult, alpha: float = 0.1, beta: float = 1.0, gamma: float = 1.0, r_max: float = 10.0,
              missing_speedup: float = 0.0) -> float:
    """Composite: r = alpha*compiled + beta*correct + gamma*min(s_eager, r_max)*correct.

    compiled and correct are 0/1 (`EvalResult.compiled`, `.correct`); s_eager is the speedup over PyTorch eager.
    A hack gets the minimum, 0 (with non-negative weights).
    """
    if result.status is Status.HACK_DETECTED:
        return _composite_min(alpha, beta, gamma, r_max)
    correct = 1.0 if result.correct else 0.0
    s = speedup(result, "eager", missing_speedup) if result.correct else 0.0
    return alpha * float(result.compiled) + beta * correct + gamma * min(s, r_max) * correct


def _composite_min(alpha: float, beta: float, gamma: float, r_max: float) -> float:
    return min(0.0, alpha) + min(0.0, beta) + min(0.0, gamma * r_max)


def two_stage(result: EvalResult, stage: str = "frontend", failure: float = -10.0,
              missing_speedup: float = 0.0) -> float:
    """Two-stage: frontend (correctness) r = failure (-10) on any non-correct verdict, +1 if correct;
    mid-end (performance) r = failure on any non-correct verdict, 1 + s_eager if correct. Minimum: failure."""
    if stage not in ("frontend", "midend"):
        raise ValueError(f"two_stage stage must be 'frontend' or 'midend', not {stage!r}")
    if not result.correct:
        return failure
    if stage == "frontend":
        return 1.0
    return 1.0 + speedup(result, "eager", missing_speedup)


def kevin(result: EvalResult, correct_bonus: float = 0.3, missing_speedup: float = 0.0) -> float:
    """Kevin (per turn): r = 0.3*correct + s_eager*correct. Minimum 0. For multi-turn episodes use
    `discounted_returns(per_turn_rewards, gamma=0.4)`."""
    if not result.correct:
        return 0.0
    return correct_bonus + speedup(result, "eager", missing_speedup)


def tiered(result: EvalResult, margin: float = 0.05, missing_speedup: float = 0.0) -> float:
    """Tiered: -1 if not correct (any failure, hacks included); 1 if correct; 2 if also s_eager > 1 + margin
    (>5% faster than eager); 3 if additionally s_inductor > 1 + margin. Minimum -1."""
    if not result.correct:
        return -1.0
    if speedup(result, "eager", missing_speedup) <= 1.0 + margin:
        return 1.0
    if speedup(result, "inductor", missing_speedup) <= 1.0 + margin:
        return 2.0
    return 3.0


def discounted_returns(rewards: Sequence[float], gamma: float = 0.4) -> list[float]:
    """Turn-discounted returns of a multi-turn episode (Kevin): G_t = r_t + gamma * G_{t+1}, G_T = r_T.

    E.g. rewards [0, 0.3, 1.3] with gamma 0.4 -> [0.328, 0.82, 1.3].
    """
    if not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma must be in [0, 1], not {gamma}")
    returns: list[float] = []
    running = 0.0
    for r in reversed(rewards):
        running = float(r) + gamma * running
        returns.append(running)
    return returns[::-1]


@dataclass(frozen=True)
class _Preset:
    fn: Callable[..., float]
    minimum: Callable[..., float]


PRESETS: dict[str, _Preset] = {
    "makora": _Preset(makora, lambda **_: 0.0),
    "composite": _Preset(composite, lambda alpha=0.1, beta=1.0, gamma=1.0, r_max=10.0, **_: _composite_min(
        alpha, beta, gamma, r_max)),
    "two_stage": _Preset(two_stage, lambda failure=-10.0, **_: failure),
    "kevin": _Preset(kevin, lambda **_: 0.0),
    "tiered": _Preset(tiered, lambda **_: -1.0),
}


def _check(name: str, params: dict) -> _Preset:
    if name not in PRESETS:
        raise ValueError(f"unknown reward {name!r}; choose one of {', '.join(sorted(PRESETS))}")
    preset = PRESETS[name]
    names = preset.fn.__code__.co_varnames[1:preset.fn.__code__.co_argcount]
    unknown = sorted(set(params) - set(names))
    if unknown:
        raise ValueError(f"reward {name!r} has no parameter {', '.join(unknown)} (it takes {', '.join(names)})")
    return preset


def get_reward(name: str, **params: float | str) -> RewardFn:
    """The named preset with its parameters bound, e.g. `get_reward("makora", delta=1.8)(result)`."""
    preset = _check(name, params)
    return partial(preset.fn, **params)


def reward_minimum(name: str, **params: float | str) -> float:
    """The lowest value the preset gives (what `hack_detected` maps to)."""
    return _check(name, params).minimum(**params)


def parse_reward_spec(spec: str) -> tuple[str, dict[str, float | str]]:
    """'makora' or 'makora:delta=1.5' or 'composite:alpha=0.2,gamma=0.5' -> (name, params)."""
    name, _, rest = spec.partition(":")
    params: dict[str, float | str] = {}
    for item in filter(None, (p.strip() for p in rest.split(","))):
        key, eq, value = item.partition("=")
        if not eq:
            raise ValueError(f"reward parameter {item!r} must look like name=value")
        try:
            params[key.strip()] = float(value)
        except ValueError:
            params[key.strip()] = value.strip()
    _check(name.strip(), params)
    return name.strip(), params
