"""Reward presets: pure functions `EvalResult -> float`, selectable by name with parameters.

A missing speedup (timing unavailable: CPU interpreter mode, timing disabled, a failed baseline) earns no
speed credit: every preset uses `missing_speedup` (default 0.0) in place of the speedup in its speed term and
treats the kernel as "not faster" in threshold terms. So on a CPU a correct kernel gets the preset's
correctness-only reward; pass `missing_speedup=1.0` to assume parity with the baseline instead. Timed-out,
crashed, unsupported and format errors are failures like any other non-correct verdict. `hack_detected` always
maps to the preset's minimum (`reward_minimum`).
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from types import MappingProxyType

from kernelrl.plugins import Registry, load_object
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
    parity with Inductor (s=1) earns sigmoid(0.2) = 0.5498 and one with no timing earns sigmoid(-0.8) =
    0.3100. Range (0, 1); minimum 0.
    """
    if not result.correct:
        return 0.0
    s = speedup(result, "inductor", missing_speedup)
    return _sigmoid(1.0 + max(0.0, s) - delta)


def composite(result: EvalResult, alpha: float = 0.1, beta: float = 1.0, gamma: float = 1.0,
              r_max: float = 10.0, missing_speedup: float = 0.0) -> float:
    """Composite: r = alpha*compiled + beta*correct + gamma*min(s_eager, r_max)*correct.

    compiled and correct are 0/1 (`EvalResult.compiled`, `.correct`); s_eager is the speedup over PyTorch
    eager. A hack gets the minimum, 0 (with non-negative weights).
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
class RewardPreset:
    """A reward function and the lowest value it gives for given parameters (what `hack_detected` maps to)."""

    fn: Callable[..., float]
    minimum: Callable[..., float]

    def parameter_names(self) -> tuple[str, ...]:
        params = list(inspect.signature(self.fn).parameters.values())[1:]  # the first is the EvalResult
        return tuple(p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))


class RewardRegistry:
    """Reward presets by name (`kernelrl.plugins.Registry`, entry point group `kernelrl.rewards`): `REWARDS`
    holds the built-ins; `register_reward` or an installed package's entry point adds a user's. A name with a
    colon is a `module:function` spec instead, imported on use (see `resolve`)."""

    def __init__(self, presets: dict[str, RewardPreset] | None = None) -> None:
        self.plugins: Registry[RewardPreset] = Registry(
            "reward", "kernelrl.rewards", presets, adapt=_preset_of,
            name_rule="non-empty, without ':', '=' or ','",
            valid_name=lambda name: bool(name) and not any(c in name for c in ":=,"))

    def register(self, name: str, fn: Callable[..., float], *, minimum: float | Callable[..., float]) -> None:
        """Add (or replace) a user's preset; a built-in's name is refused. `minimum`: a number, or a function
        of the preset's parameters."""
        if not callable(fn):
            raise TypeError(f"reward {name!r} must be callable, not {type(fn).__name__}")
        self.plugins.register(name, RewardPreset(fn, _as_minimum(minimum)))

    def names(self) -> list[str]:
        return self.plugins.names()

    def resolve(self, name: str) -> RewardPreset:
        """A preset by name, or `package.module:function` imported now. A function's minimum comes from its
        `reward_minimum` attribute (a number or a function of the parameters): a hack must map to the reward's
        lowest value, which kernelrl cannot guess."""
        preset = self.plugins.get(name)
        if preset is not None:
            return preset
        if ":" not in name:
            raise ValueError(f"unknown reward {name!r}; choose one of {', '.join(self.names())}, "
                             "register one with kernelrl.rewards.register_reward, or name a "
                             "function as module:function")
        return _preset_of(name, load_object(name, "reward"))


def _preset_of(name: str, value: object) -> RewardPreset:
    """What a spec or an entry point names, as a preset: a RewardPreset, or a function with
    `reward_minimum`."""
    if isinstance(value, RewardPreset):
        return value
    if not callable(value):
        raise ValueError(f"reward {name!r} names a {type(value).__name__}, not a function")
    minimum = getattr(value, "reward_minimum", None)
    if minimum is None:
        function = getattr(value, "__name__", "fn")
        raise ValueError(f"reward {name!r} declares no minimum (what hack_detected maps to): set "
                         f"{function}.reward_minimum = <lowest value>, or register it with "
                         "register_reward(name, fn, minimum=...)")
    return RewardPreset(value, _as_minimum(minimum))


def _as_minimum(minimum: float | Callable[..., float]) -> Callable[..., float]:
    if callable(minimum):
        return minimum
    value = float(minimum)
    return lambda **_: value


REWARDS = RewardRegistry({
    "makora": RewardPreset(makora, lambda **_: 0.0),
    "composite": RewardPreset(composite, lambda alpha=0.1, beta=1.0, gamma=1.0, r_max=10.0, **_:
                              _composite_min(alpha, beta, gamma, r_max)),
    "two_stage": RewardPreset(two_stage, lambda failure=-10.0, **_: failure),
    "kevin": RewardPreset(kevin, lambda **_: 0.0),
    "tiered": RewardPreset(tiered, lambda **_: -1.0),
})
# the built-ins, read-only
PRESETS = MappingProxyType({name: REWARDS.resolve(name) for name in REWARDS.plugins.builtin_names()})


def register_reward(name: str, fn: Callable[..., float], *, minimum: float | Callable[..., float]) -> None:
    """Make `fn(result, **params) -> float` available by name (agent, CLI `--reward`, trainers)."""
    REWARDS.register(name, fn, minimum=minimum)


def _check(name: str, params: dict) -> RewardPreset:
    preset = REWARDS.resolve(name)
    names = preset.parameter_names()
    unknown = sorted(set(params) - set(names))
    if unknown:
        raise ValueError(f"reward {name!r} has no parameter {', '.join(unknown)} (it "
                         f"takes {', '.join(names)})")
    return preset


def get_reward(name: str, **params: float | str) -> RewardFn:
    """The named preset (or `module:function`) with its parameters bound, e.g.
    `get_reward("makora", delta=1.8)(result)`."""
    preset = _check(name, params)
    return partial(preset.fn, **params)


def reward_minimum(name: str, **params: float | str) -> float:
    """The lowest value the preset gives (what `hack_detected` maps to)."""
    return float(_check(name, params).minimum(**params))


def parse_reward_spec(spec: str) -> tuple[str, dict[str, float | str]]:
    """'makora', 'makora:delta=1.5', 'composite:alpha=0.2,gamma=0.5', or a user function 'pkg.mod:fn' /
    'pkg.mod:fn:scale=2' -> (name, params). Unless the part before the first colon is a registered name, an
    identifier after it is the function of a module."""
    head, _, rest = spec.partition(":")
    name = head.strip()
    function, sep, after = rest.partition(":")
    if name not in REWARDS.names() and function.strip().isidentifier():  # module:function[:params]
        name, rest = f"{name}:{function.strip()}", after if sep else ""
    params: dict[str, float | str] = {}
    for item in filter(None, (p.strip() for p in rest.split(","))):
        key, eq, value = item.partition("=")
        if not eq:
            raise ValueError(f"reward parameter {item!r} must look like name=value")
        try:
            params[key.strip()] = float(value)
        except ValueError:
            params[key.strip()] = value.strip()
    _check(name, params)
    return name, params


class BoundReward:
    """A reward spec ('composite', 'two_stage:stage=frontend', 'module:function') bound to its function:
    `reward(result)` is the reward of a verdict, a hack's being the preset's minimum. Pickles as its spec."""

    def __init__(self, spec: str) -> None:
        self.spec = spec
        self._bind()

    def _bind(self) -> None:
        name, params = parse_reward_spec(self.spec)
        self.fn = get_reward(name, **params)
        self.minimum = reward_minimum(name, **params)

    def __call__(self, result: EvalResult) -> float:
        if result.status is Status.HACK_DETECTED:
            return self.minimum
        return float(self.fn(result))

    def __getstate__(self) -> dict:
        return {"spec": self.spec}

    def __setstate__(self, state: dict) -> None:
        self.spec = state["spec"]
        self._bind()
