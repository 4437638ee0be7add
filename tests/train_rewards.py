"""Reward functions for tests/train/test_train.py, named by `module:function` reward specs."""

from __future__ import annotations


def text_hash(result):
    """A reward in [0, 1) from the hash of the candidate's text: completions that differ get different rewards
    whatever their verdict (format errors included), so a GRPO group's rewards have a spread."""
    return int(result.candidate_sha256[:8], 16) / 2**32


text_hash.reward_minimum = 0.0
