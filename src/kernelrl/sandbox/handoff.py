"""The hand-off of forward's result to the harness, with no code of the candidate's running.

Once forward returns, the op census is off; anything of the candidate's that runs while the harness reads
the result (a container's `__iter__` or `__len__`, a tensor subclass's `__torch_function__`, an instance
attribute shadowing `detach`, a method patched into `torch.Tensor`, a torch function mode entered at import)
would compute outside every check. So the result must be exactly a `torch.Tensor`, or exactly a `tuple` or
`list` of exactly `torch.Tensor` (type identity), each without instance attributes, with no torch mode of the
candidate's left active and `torch.Tensor`'s attributes as the harness found them; its tensors are copied
through `TensorBase`'s own methods with torch functions disabled. Every name used here, builtins included, is
bound when this module is imported, before the candidate is.
"""

from __future__ import annotations

import sys
import threading

import torch
import torch.utils._device

_TENSOR = torch.Tensor
_TYPE, _TUPLE, _LIST, _ISSUBCLASS, _TYPE_NAME = type, tuple, list, issubclass, type.__repr__
_ENUMERATE, _RANGE, _LEN, _VARS, _SORTED, _ALL = enumerate, range, len, vars, sorted, all
_INSTANCE_DICT = object.__getattribute__  # the tensor's own __dict__, read with no lookup it could redirect
_MISSING = object()
_DETACH, _CLONE = torch._C.TensorBase.detach, torch._C.TensorBase.clone
_CONTIGUOUS = torch.contiguous_format
_NO_TORCH_FUNCTION = torch._C.DisableTorchFunction  # subclasses' overrides and torch function modes alike
_FUNCTION_MODES, _FUNCTION_MODE_AT = torch._C._len_torch_function_stack, torch._C._get_function_stack_at
_DISPATCH_MODES = torch._C._len_torch_dispatch_stack
# torch.set_default_device's mode only fills in factory functions' device (honest code may set it at import)
_DEFAULT_DEVICE_MODE = torch.utils._device.DeviceContext
_GET_PROFILE, _GET_TRACE = sys.getprofile, sys.gettrace
# what installs a hook the interpreter calls on other code's calls, lines or events (the harness's included):
# the harness uses none of them, so the sandbox installs none of the candidate's
HOOK_SETTERS = {"sys": ("setprofile", "settrace"),
                "threading": ("setprofile", "settrace", "setprofile_all_threads", "settrace_all_threads"),
                "sys.monitoring": ("use_tool_id", "register_callback", "set_events", "set_local_events")}


# what the GPU timer takes from torch by name (kernelrl.timing.cuda_timer.TimerOps, the stub's sync and event
# class), read from the modules' own dicts: no attribute lookup the candidate could redirect
_TIMER_NAMES = ((_VARS(torch), "torch.", ("sum", "zeros", "empty")),
                (_VARS(torch.cuda), "torch.cuda.", ("_sleep", "synchronize", "current_stream", "Event")))


class _Snapshot:
    """Some namespaces' entries as they were when it was made: a class's whole dict (`watch`), or some names
    of a module's (`watch_names`). `replaced()` names what was replaced, added to a watched class or removed,
    comparing by identity alone (an equality test would run a replacement's __eq__)."""

    def __init__(self) -> None:
        self._entries: list[tuple[str, dict, tuple, bool]] = []  # (label, live dict, items then, whole)

    def watch(self, label: str, cls: type) -> None:
        names = _VARS(cls)
        self._entries.append((label, names, _TUPLE(names.items()), True))

    def watch_names(self, label: str, names: dict, keys: tuple[str, ...]) -> None:
        self._entries.append((label, names, _TUPLE((k, names.get(k, _MISSING)) for k in keys), False))

    def replaced(self) -> list[str]:
        found = []
        for label, now, before, whole in self._entries:
            same_size = not whole or _LEN(now) == _LEN(before)
            if same_size and _ALL(now.get(k, _MISSING) is v for k, v in before):
                continue
            found += [label + k for k, v in before if now.get(k, _MISSING) is not v]
            if whole:
                kept = {k for k, _ in before}
                found += [label + k for k in now if k not in kept]
        return _SORTED(found)


class HandoffRefused(Exception):
    """forward's result cannot be read without running the candidate's code; `check` is the runtime check
    that names why (rt-torch-mode, rt-tensor-patched, rt-timer-patched, rt-interpreter-hook,
    rt-output-container, rt-tensor-subclass, rt-tensor-override)."""

    def __init__(self, check: str, detail: str) -> None:
        super().__init__(f"{check}: {detail}")
        self.check = check


class Handoff:
    """Made right before the candidate's import: `torch.Tensor`'s attributes as the harness left them then
    (the op census has put its guards there; TensorBase, a C type, cannot be changed). A method replaced or
    added after that runs whenever anyone, the harness included, calls it on any tensor."""

    def __init__(self) -> None:
        self._tensor_class = _Snapshot()
        self._tensor_class.watch("", _TENSOR)
        # the timer holds the objects it took before the candidate's import, so a replacement changes nothing
        # it measures: it is refused as the attempt it is
        self._timer_tools = _Snapshot()
        for names, label, keys in _TIMER_NAMES:
            self._timer_tools.watch_names(label, names, keys)
        self._timer_tools.watch("torch.cuda.Event.", torch.cuda.Event)
        self.hooks_asked: list[str] = []  # hook setters the candidate called (none was installed)
        owners = {"sys": sys, "threading": threading, "sys.monitoring": getattr(sys, "monitoring", None)}
        for owner_name, names in HOOK_SETTERS.items():
            for name in names:
                if owners[owner_name] is not None and hasattr(owners[owner_name], name):
                    setattr(owners[owner_name], name, self._refused_setter(f"{owner_name}.{name}"))

    def _refused_setter(self, name: str):
        asked = self.hooks_asked

        def refused(*args, **kwargs) -> None:
            asked.append(name)

        refused.__name__ = name.rsplit(".", 1)[-1]
        return refused

    def outputs(self, result: object) -> list:
        """forward's result as the list of its tensors. Raises `HandoffRefused` for a subclass of tuple, list
        or Tensor, a patched Tensor class or a mode left active; `TypeError` for anything else that is not a
        tensor or a tuple or list of tensors."""
        _no_modes_left()
        self._tensor_class_unchanged()
        self._timer_tools_unchanged()
        if self.hooks_asked or _GET_PROFILE() is not None or _GET_TRACE() is not None:
            asked = _SORTED(set(self.hooks_asked)) or ["a hook installed another way"]
            raise HandoffRefused("rt-interpreter-hook", f"{', '.join(asked[:4])}")
        kind = _TYPE(result)
        if kind is _TENSOR:
            items = [result]
        elif kind is _TUPLE or kind is _LIST:
            items = _LIST(result)  # the builtin types' own iteration
        elif _ISSUBCLASS(kind, _TUPLE) or _ISSUBCLASS(kind, _LIST):
            raise HandoffRefused("rt-output-container",
                                 f"forward returned {_TYPE_NAME(kind)}, a subclass of tuple or list whose "
                                 "methods would run as the harness reads it")
        elif _ISSUBCLASS(kind, _TENSOR):
            raise HandoffRefused("rt-tensor-subclass", f"forward returned {_TYPE_NAME(kind)}")
        else:
            raise TypeError(f"forward must return a tensor or a tuple of tensors, got {_TYPE_NAME(kind)}")
        for k, item in _ENUMERATE(items):
            item_kind = _TYPE(item)
            if item_kind is _TENSOR:
                attributes = _INSTANCE_DICT(item, "__dict__")
                if attributes:  # they shadow Tensor's methods for every reader of the object
                    raise HandoffRefused("rt-tensor-override", f"output {k} has instance attributes "
                                                               f"{_SORTED(attributes)[:8]}")
                continue
            if _ISSUBCLASS(item_kind, _TENSOR):
                raise HandoffRefused("rt-tensor-subclass", f"output {k} is {_TYPE_NAME(item_kind)}")
            raise TypeError(f"forward must return a tensor or a tuple of tensors; output {k} is "
                            f"{_TYPE_NAME(item_kind)}")
        return items

    def _tensor_class_unchanged(self) -> None:
        """torch.Tensor's attributes are the objects they were before the candidate's import, none added."""
        replaced = self._tensor_class.replaced()
        if replaced:
            raise HandoffRefused("rt-tensor-patched",
                                 f"torch.Tensor attributes replaced or added: {replaced[:8]}")

    def _timer_tools_unchanged(self) -> None:
        """The timer's torch functions and torch.cuda.Event's attributes are the objects they were before the
        candidate's import, none added to the class."""
        replaced = self._timer_tools.replaced()
        if replaced:
            raise HandoffRefused("rt-timer-patched", "torch's timing functions or torch.cuda.Event's "
                                                     f"attributes replaced, added or removed: {replaced[:8]}")

    @staticmethod
    def copy(tensor: torch.Tensor) -> torch.Tensor:
        """A copy of an owned output's values on its own device, ordered after the current stream's work
        only."""
        with _NO_TORCH_FUNCTION():
            return _CLONE(_DETACH(tensor), memory_format=_CONTIGUOUS)


def _no_modes_left() -> None:
    """No torch function or dispatch mode of the candidate's is active once forward returned (the census's own
    dispatch mode is gone by then): it would run as the harness reads, copies and writes the outputs."""
    modes = [_TYPE(_FUNCTION_MODE_AT(k)) for k in _RANGE(_FUNCTION_MODES())]
    left = [_TYPE_NAME(mode) for mode in modes if mode is not _DEFAULT_DEVICE_MODE]
    dispatch_modes = _DISPATCH_MODES()
    if dispatch_modes:
        left.append(f"{dispatch_modes} dispatch mode(s)")
    if left:
        raise HandoffRefused("rt-torch-mode", f"active after forward returned: {', '.join(left[:3])}")
