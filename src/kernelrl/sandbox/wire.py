"""Typed JSON messages: the base of kernelrl.sandbox.protocol (stdlib only).

A message is a frozen, keyword-only dataclass; each field carries a check (`_field(check)`) that validates and
bounds its value on the way in. `to_dict()` gives the wire form, `from_dict()` checks one: a missing or
unknown key or a value of the wrong type raises `ProtocolError`. The checks look at JSON values only: nothing
in a message is ever imported, called or evaluated.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any, ClassVar

MAX_LINE_BYTES = 1 << 20  # one event line at most (the runner cuts the pipe there too)


class ProtocolError(ValueError):
    """A message that is not what the protocol says: bad JSON, a missing or unknown key, a value of the wrong
    type, an unknown event kind or judge op."""


Check = Callable[[Any, str], Any]  # (value, where) -> the value to keep; raises ProtocolError


def _error(where: str, what: str) -> ProtocolError:
    return ProtocolError(f"{where}: {what}")


def _type(value: object) -> str:
    return type(value).__name__


def _int(value: Any, where: str) -> int:
    if type(value) is not int:  # a bool is an int to isinstance, not here
        raise _error(where, f"expected an integer, got {_type(value)}")
    return value


def _number(value: Any, where: str) -> int | float:
    if type(value) not in (int, float):
        raise _error(where, f"expected a number, got {_type(value)}")
    return value


def _bool(value: Any, where: str) -> bool:
    if type(value) is not bool:
        raise _error(where, f"expected true or false, got {_type(value)}")
    return value


def _str(limit: int | None = None, *, tail: bool = False) -> Check:
    """A string, cut to `limit` characters (its end when `tail`)."""

    def check(value: Any, where: str) -> str:
        if type(value) is not str:
            raise _error(where, f"expected a string, got {_type(value)}")
        if limit is not None and len(value) > limit:
            return value[-limit:] if tail else value[:limit]
        return value

    return check


_STR = _str()


def _json(value: Any, where: str) -> Any:
    """Any JSON value, kept as it is (an opaque part of the message)."""
    return value


def _dict(value: Any, where: str) -> dict:
    if type(value) is not dict:
        raise _error(where, f"expected an object, got {_type(value)}")
    return value


def _optional(check: Check) -> Check:
    return lambda value, where: None if value is None else check(value, where)


def _list(check: Check, limit: int | None = None) -> Check:
    """A list of items that pass `check`, only its first `limit` kept."""

    def run(value: Any, where: str) -> list:
        if type(value) not in (list, tuple):
            raise _error(where, f"expected a list, got {_type(value)}")
        items = value if limit is None else value[:limit]
        return [check(item, f"{where}[{i}]") for i, item in enumerate(items)]

    return run


def _map(check: Check) -> Check:
    """An object whose values pass `check`."""

    def run(value: Any, where: str) -> dict:
        return {str(k): check(v, f"{where}.{str(k)[:40]}") for k, v in _dict(value, where).items()}

    return run


def _message(cls: type[Message]) -> Check:
    return lambda value, where: cls.from_dict(value, where)


def _field(check: Check, *, default: Any = dataclasses.MISSING, factory: Any = dataclasses.MISSING,
           omit_none: bool = False) -> Any:
    """A message field: `check` validates it on the way in; `omit_none` leaves it off the wire when None."""
    return dataclasses.field(default=default, default_factory=factory,
                             metadata={"check": check, "omit_none": omit_none})


def _wire(value: Any) -> Any:
    if isinstance(value, Message):
        return value.to_dict()
    if isinstance(value, list | tuple):
        return [_wire(v) for v in value]
    if isinstance(value, dict):
        return {k: _wire(v) for k, v in value.items()}
    return value


def _loads(text: str | bytes) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        raise ProtocolError(f"malformed JSON: {str(exc)[:200]}") from None


_message_type = dataclasses.dataclass(frozen=True, kw_only=True)


@_message_type
class Message:
    """Base of every message: `to_dict`/`to_json` give the wire form, `from_dict`/`from_json` validate it."""

    _envelope: ClassVar[tuple[str, Any] | None] = None  # (key, value) every wire form carries: event, op, ok
    # the field that keeps the keys this type does not name (else: refused)
    _rest: ClassVar[str | None] = None

    def fields(self) -> dict:
        """The wire form without the envelope key."""
        out: dict = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name == self._rest:
                out.update(_wire(value))
            elif value is not None or not f.metadata["omit_none"]:
                out[f.name] = _wire(value)
        return out

    def to_dict(self) -> dict:
        if self._envelope is None:
            return self.fields()
        key, tag = self._envelope
        return {key: tag, **self.fields()}

    def to_json(self) -> str:
        return json.dumps(self.to_dict())

    @classmethod
    def _label(cls) -> str:
        return cls.__name__

    @classmethod
    def from_dict(cls, data: Any, where: str | None = None):
        where = where or cls._label()
        data = dict(_dict(data, where))
        if cls._envelope is not None and cls._envelope[0] in data:  # optional here; parse_* require it
            key, tag = cls._envelope
            value = data.pop(key)
            if type(value) is not type(tag) or value != tag:
                raise _error(where, f"{key} is {str(value)[:40]!r}, expected {tag!r}")
        kwargs: dict = {}
        for f in dataclasses.fields(cls):
            if f.name == cls._rest:
                continue
            if f.name in data:
                kwargs[f.name] = f.metadata["check"](data.pop(f.name), f"{where}.{f.name}")
            elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise _error(where, f"missing key {f.name!r}")
        if cls._rest is not None:
            kwargs[cls._rest] = data
        elif data:
            raise _error(where, "unknown key(s) " + ", ".join(repr(str(k)[:40]) for k in list(data)[:5]))
        try:
            return cls(**kwargs)
        except ValueError as exc:  # __post_init__'s own checks
            raise _error(where, str(exc)) from None

    @classmethod
    def from_json(cls, text: str | bytes):
        return cls.from_dict(_loads(text))

    @classmethod
    def coerce(cls, value: Any):
        """`value` itself when it is one already, else parsed from its dict."""
        return value if isinstance(value, cls) else cls.from_dict(value)
