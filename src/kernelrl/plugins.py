"""Plugins: rewards, policies and static rules added from outside kernelrl, in one registry type.

Three ways in, the same for each kind:
- built-in: registered by kernelrl itself, under names nobody can replace;
- `register(name, value)`: at run time, from your own code;
- a Python entry point in the kind's group (`kernelrl.rewards`, `kernelrl.policies`, `kernelrl.rules`),
  declared by an installed package (`[project.entry-points."kernelrl.rewards"]`, `myreward = "pkg.mod:fn"`),
  loaded the first time its name is asked for;
and, where a kind takes specs, `package.module:NAME` imports NAME on use (`load_object`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from importlib.metadata import entry_points
from typing import Any, Generic, TypeVar

T = TypeVar("T")


def load_object(spec: str, what: str) -> Any:
    """The object `package.module:NAME` names (NAME may be dotted: `Class.attr`). ValueError, saying why, when
    the spec is malformed, the module does not import or has no such name."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"{what} {spec!r}: a spec looks like package.module:NAME")
    try:
        value: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"{what} {spec!r}: cannot import module {module_name!r} ({exc})") from None
    for part in attr.split("."):
        if not hasattr(value, part):
            raise ValueError(f"{what} {spec!r}: module {module_name!r} has no {attr!r}") from None
        value = getattr(value, part)
    return value


class Registry(Generic[T]):
    """Named plugins of one kind: the built-ins (never replaced), those registered at run time, and the entry
    points of `group`, each loaded once when first asked for. `adapt(name, obj)` turns what a spec or an entry
    point names into the registry's value (and says what is wrong with it)."""

    def __init__(self, kind: str, group: str, builtins: Mapping[str, T] | None = None, *,
                 adapt: Callable[[str, Any], T] | None = None,
                 valid_name: Callable[[str], bool] | None = None, name_rule: str = "an identifier"):
        self.kind, self.group, self.name_rule = kind, group, name_rule
        self._builtins = dict(builtins or {})
        self._registered: dict[str, T] = {}
        self._adapt = adapt or (lambda name, obj: obj)
        self._valid_name = valid_name or str.isidentifier

    def register(self, name: str, value: T) -> None:
        """Add a plugin (or replace one registered before); a built-in's name is refused."""
        if name in self._builtins:
            raise ValueError(f"{name!r} is a built-in {self.kind}; give yours another name")
        if not self._valid_name(name):
            raise ValueError(f"{name!r} is not a valid {self.kind} name: it must be {self.name_rule}")
        self._registered[name] = value

    def _entry_points(self) -> dict[str, Any]:
        return {ep.name: ep for ep in entry_points(group=self.group)}

    def get(self, name: str) -> T | None:
        """The plugin `name`: a built-in, a registered one, or an entry point of the group (loaded now and
        kept); None when there is none."""
        if name in self._builtins:
            return self._builtins[name]
        if name in self._registered:
            return self._registered[name]
        if not self._valid_name(name):  # a spec (`module:function`), not a plugin's name: no scan of the path
            return None
        point = self._entry_points().get(name)
        if point is None:
            return None
        try:
            obj = point.load()
        except Exception as exc:  # noqa: BLE001 - a broken plugin is the user's to fix: say which and why
            raise ValueError(f"{self.kind} {name!r} (entry point {point.value} in {self.group}) does not "
                             f"load: {type(exc).__name__}: {exc}") from None
        value = self._adapt(name, obj)
        self._registered[name] = value
        return value

    def builtin_names(self) -> list[str]:
        return sorted(self._builtins)

    def names(self) -> list[str]:
        """Every name `get` answers: built-ins, registered ones and the group's entry points."""
        return sorted({*self._builtins, *self._registered, *self._entry_points()})
