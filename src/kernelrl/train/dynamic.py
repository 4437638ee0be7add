"""Dynamic sampling (DAPO): a GRPO step generates again the groups whose rewards are all equal.

Such a group has advantage 0 and teaches nothing. With `dynamic_sampling=N`, once TRL has generated and scored
a step's batch, the prompts of those groups go through TRL's `_generate_and_score_completions` again (only
their rows), up to N more rounds; a group that comes back with a spread replaces its first-round rows in the
batch, padded to the batch's width. Groups still equal after N rounds keep their first-round rows (advantage
0). Every round runs the reward function, so every round's rollouts are recorded (with their round, from the
`sampling_round` column) and the curriculum sees each group once per round it was scored.

The cost: each round is another generation and evaluation of the still-equal groups. One process only: under
`accelerate launch` a group's completions may be split between processes, which would all have to take part in
every round.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import torch
from trl.trainer.utils import nanstd

from kernelrl.train.merged import MergedGenerationGRPOTrainer

ROUND_COLUMN = "sampling_round"  # the input column that tells the reward function which round it scores
# the token axis of each tensor of TRL's batch: (side padded, padding value; "pad": the tokenizer's pad id)
PADDED: dict[str, tuple[str, Any]] = {
    "prompt_ids": ("left", "pad"), "prompt_mask": ("left", 0),
    "completion_ids": ("right", "pad"), "completion_mask": ("right", 0), "tool_mask": ("right", 1),
    "old_per_token_logps": ("right", 0.0), "ref_per_token_logps": ("right", 0.0),
    "sampling_per_token_logps": ("right", 0.0),
    # exp(0), the ratio TRL gives a padding token (per-sequence modes are (B, 1) and never widen)
    "importance_sampling_ratio": ("right", 1.0),
}
PER_ROW = {"advantages"}


def weighted_rewards(scored: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """Each completion's reward as TRL sums it (NaN where every reward function gave None)."""
    rewards = (scored * weights.to(scored.device).unsqueeze(0)).nansum(dim=1)
    rewards[torch.isnan(scored).all(dim=1)] = torch.nan
    return rewards


def zero_std_groups(scored: torch.Tensor, weights: torch.Tensor, group_size: int) -> torch.Tensor:
    """One bool per group that teaches nothing: its rewards are all equal (TRL's `frac_reward_zero_std` test),
    or fewer than two of its completions have one (no verdict: TRL gives them all advantage 0)."""
    std = nanstd(weighted_rewards(scored, weights).view(-1, group_size), dim=1)
    return torch.isclose(std, torch.zeros_like(std)) | torch.isnan(std)


def group_rows(groups: Sequence[int], group_size: int) -> list[int]:
    return [g * group_size + i for g in groups for i in range(group_size)]


def _tagged(inputs: list[dict[str, Any]], round_: int) -> list[dict[str, Any]]:
    return [{**row, ROUND_COLUMN: round_} for row in inputs]


def _widen(t: torch.Tensor, width: int, value: Any, side: str) -> torch.Tensor:
    if t.size(1) >= width:
        return t
    pad = t.new_full((t.size(0), width - t.size(1)), value)
    return torch.cat([pad, t] if side == "left" else [t, pad], dim=1)


def splice_groups(batch: dict[str, Any], new: dict[str, Any], moved: Sequence[tuple[int, int]],
                  group_size: int, pad_token_id: int) -> dict[str, Any]:
    """`batch` (TRL's generate-and-score output) with its group g replaced by group j of `new` for each (g, j)
    in `moved`. The two were padded to their own longest prompt and completion: both are padded to the wider
    first. `num_items_in_batch` (the loss's token count) is counted again."""
    if not moved:
        return batch
    unknown = (set(batch) | set(new)) - set(PADDED) - PER_ROW - {"num_items_in_batch"}
    if unknown:  # images and the like: entries that are not one row per completion
        raise ValueError(f"dynamic sampling cannot splice TRL batch entries {sorted(unknown)} (text only)")
    into = torch.tensor(group_rows([g for g, _ in moved], group_size))
    take = torch.tensor(group_rows([j for _, j in moved], group_size))
    out: dict[str, Any] = {}
    for key, old in batch.items():
        if key == "num_items_in_batch":
            continue
        fresh = new[key]
        if key in PADDED:
            side, value = PADDED[key]
            value = pad_token_id if value == "pad" else value
            width = max(old.size(1), fresh.size(1))
            old, fresh = _widen(old, width, value, side), _widen(fresh, width, value, side)
        old = old.clone()
        old[into.to(old.device)] = fresh[take.to(fresh.device)]
        out[key] = old
    mask = out["completion_mask"] * out["tool_mask"] if "tool_mask" in out else out["completion_mask"]
    out["num_items_in_batch"] = mask.sum()
    return out


class DynamicSamplingGRPOTrainer(MergedGenerationGRPOTrainer):
    """GRPOTrainer that regenerates a step's zero-std groups
    up to `dynamic_sampling` more rounds (0: never)."""

    def __init__(self, *args: Any, dynamic_sampling: int = 0, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if dynamic_sampling and self.accelerator.num_processes > 1:
            raise ValueError("dynamic sampling runs in one process only (a group's completions may be split "
                             "between processes); drop --dynamic-sampling under accelerate launch")
        self.dynamic_sampling = dynamic_sampling
        self._scored: torch.Tensor | None = None

    def _generate_single_turn(self, *args: Any, **kwargs: Any) -> Any:
        # TRL reports its own timing to wandb/mlflow only: a step's generation seconds next to
        # kernelrl/eval_seconds in metrics.jsonl say which of the two holds a step up
        started = time.monotonic()
        try:
            return super()._generate_single_turn(*args, **kwargs)
        finally:
            self._log_metric("kernelrl/generation_seconds", time.monotonic() - started)

    def _calculate_rewards(self, *args: Any, **kwargs: Any) -> torch.Tensor:
        # each round's (completions x reward functions) rewards: which groups are still equal
        self._scored = super()._calculate_rewards(*args, **kwargs)
        return self._scored

    def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        if not self.dynamic_sampling or not self.model.training:
            return super()._generate_and_score_completions(inputs)
        size, weights = self.num_generations, self.reward_weights
        logged = {key: len(values) for key, values in self._metrics["train"].items()}
        batch = super()._generate_and_score_completions(_tagged(inputs, 1))
        scored = self._scored
        pending = zero_std_groups(scored, weights, size).nonzero().flatten().tolist()
        groups, resampled, rounds = len(inputs) // size, len(pending), 1
        before = len(pending) / groups
        while pending and rounds <= self.dynamic_sampling:
            rounds += 1
            again = super()._generate_and_score_completions(
                _tagged([inputs[r] for r in group_rows(pending, size)], rounds))
            equal = zero_std_groups(self._scored, weights, size).tolist()
            moved = [(g, j) for j, g in enumerate(pending) if not equal[j]]
            batch = splice_groups(batch, again, moved, size, self._tokenizer.pad_token_id)
            scored = scored.clone()
            scored[group_rows([g for g, _ in moved], size)] = \
                self._scored[group_rows([j for _, j in moved], size)]
            pending = [g for j, g in enumerate(pending) if equal[j]]
        self._log_rounds(scored, logged, {"dynamic_sampling/groups_resampled": resampled,
                                          "dynamic_sampling/rounds": rounds,
                                          "dynamic_sampling/zero_std_before": before,
                                          "dynamic_sampling/zero_std_after": len(pending) / groups})
        return batch

    def _log_rounds(self, scored: torch.Tensor, logged: dict[str, int], extra: dict[str, float]) -> None:
        """TRL's reward metrics of this step's rounds, replaced by those of
        the batch the step trains on (each round appended its own); the other
        per-round metrics (lengths, kernelrl/*) stay means over the rounds."""
        metrics = self._metrics["train"]
        rewards = weighted_rewards(scored, self.reward_weights)
        values = {"reward": torch.nanmean(rewards).item(), "reward_std": nanstd(rewards).item(),
                  "frac_reward_zero_std": extra["dynamic_sampling/zero_std_after"]}
        for i, name in enumerate(self.reward_func_names):
            values[f"rewards/{name}/mean"] = torch.nanmean(scored[:, i]).item()
            values[f"rewards/{name}/std"] = nanstd(scored[:, i]).item()
        for key, value in values.items():
            del metrics[key][logged.get(key, 0):]
            metrics[key].append(value)
        for key, value in extra.items():
            metrics[key].append(float(value))

