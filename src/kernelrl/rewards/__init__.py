"""Rewards: pure functions `EvalResult -> float` by name (`get_reward("makora", delta=1.8)`), turn-discounted
returns, and an optional LLM-judge term and hack classifier (`kernelrl.rewards.judge`)."""

from kernelrl.rewards.presets import (
    PRESETS,
    REWARDS,
    BoundReward,
    RewardFn,
    RewardPreset,
    RewardRegistry,
    composite,
    discounted_returns,
    get_reward,
    kevin,
    makora,
    parse_reward_spec,
    register_reward,
    reward_minimum,
    speedup,
    tiered,
    two_stage,
)

__all__ = [
    "PRESETS",
    "BoundReward",
    "REWARDS",
    "RewardFn",
    "RewardPreset",
    "RewardRegistry",
    "composite",
    "discounted_returns",
    "get_reward",
    "kevin",
    "makora",
    "parse_reward_spec",
    "register_reward",
    "reward_minimum",
    "speedup",
    "tiered",
    "two_stage",
]
