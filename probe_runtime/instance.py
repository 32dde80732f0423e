"""msprobe's one debugger per process, for :class:`~probe_runtime.PrecisionDebugger`.

msprobe's ``PrecisionDebugger`` is a singleton (``BasePrecisionDebugger.__new__``
returns ``cls._instance``; ``__init__`` returns at once when ``initialized``,
mindstudio-probe 8.1.2 and 8.3.3 ``msprobe/core/debugger/precision_debugger.py``)
and its public methods are classmethods acting on that instance
(``start``, ``stop``, ``step`` in ``msprobe/mindspore/debugger/precision_debugger.py``;
``set_init_step``, ``forward_backward_dump_end`` in the base class). The
metaclass :class:`MsprobeSingleton` gives users the same, while one process (the
project's tests) may still build debuggers from different configs.

Example::

    debugger = PrecisionDebugger(config_path="config.json")
    PrecisionDebugger(config_path="config.json") is debugger   # True: the same arguments
    PrecisionDebugger.start()                                   # debugger.start()
"""
from __future__ import annotations

import functools
import inspect
import json
import logging
import os
import threading
import types
from typing import Any, Callable, Optional

from .errors import UsageError
from .state import live_rank_source

LOGGER = logging.getLogger("probe_runtime")
CONFIG_VARIABLE = "PROBE_CONFIG"
CHECKS_VARIABLE = "PROBE_CHECKS"


#: the public methods msprobe defines as classmethods (``BasePrecisionDebugger``:
#: ``forward_backward_dump_end``, ``set_init_step``; the MindSpore ``PrecisionDebugger``:
#: ``start``, ``stop``, ``step``), plus ``finish`` (ours): callable on the class too
CLASS_LEVEL = ("start", "stop", "step", "set_init_step", "forward_backward_dump_end", "finish")
#: msprobe's message for a class-level call before any debugger was built (``MsgConst.NOT_CREATED_INSTANCE``)
NOT_CREATED = "PrecisionDebugger instance is not created."


class _Current:
    """The debugger of this process (msprobe's ``cls._instance``: held, so
    ``PrecisionDebugger(config_path=...)`` with nothing keeping the result
    still serves ``PrecisionDebugger.start()``), and what it was built from."""

    debugger: Any = None
    identity: Optional[tuple] = None


_CURRENT = _Current()
_LOCK = threading.RLock()  # one construction at a time, as msprobe's ThreadSafe around __new__


class _ClassLevel:
    """A method msprobe defines as a classmethod. On a debugger it is the
    plain method (instance calls are what they were); on the class,
    ``PrecisionDebugger.start()`` calls the same method of the current
    debugger, as msprobe's act on ``cls._instance``; with none built yet it
    raises :class:`UsageError` (msprobe: ``Exception("PrecisionDebugger
    instance is not created.")``)."""

    def __init__(self, function: Callable[..., Any]) -> None:
        functools.update_wrapper(self, function)
        self.function = function
        self.name = function.__name__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name  # forward_backward_dump_end = stop: its own name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.function(*args, **kwargs)  # vars(PrecisionDebugger)["stop"](debugger), as the function

    def __get__(self, debugger: Any, owner: Optional[type] = None) -> Any:
        if debugger is not None:
            return types.MethodType(self.function, debugger)
        if owner is None:  # pragma: no cover - Python passes the class
            raise AttributeError(self.name)
        cls, name = owner, self.name

        @functools.wraps(self.function)
        def on_current(*args: Any, **kwargs: Any) -> Any:
            return getattr(current_debugger(cls, name), name)(*args, **kwargs)

        on_current.__name__, on_current.__qualname__ = name, f"{cls.__qualname__}.{name}"
        signature = inspect.signature(self.function)
        on_current.__signature__ = signature.replace(  # type: ignore[attr-defined]
            parameters=list(signature.parameters.values())[1:])
        return on_current


def current_debugger(cls: type, name: str = "start") -> Any:
    """The debugger a class-level ``cls.<name>()`` acts on: the last one
    built in this process (finished or not, as a call on it would be).

    Raises:
        UsageError: none was built yet (or the last was not a ``cls``).
    """
    debugger = _CURRENT.debugger
    if debugger is None or not isinstance(debugger, cls):
        raise UsageError(f"{cls.__name__}.{name}() acts on the debugger of this process, and none was built yet "
                         f"(msprobe: {NOT_CREATED}); build it first: "
                         f"debugger = {cls.__name__}(config_path=\"config.json\")")
    return debugger


def _identity(cls: type, args: tuple, kwargs: dict) -> Optional[tuple]:
    """What a ``cls(*args, **kwargs)`` call would build from: the config it
    takes effect with (the file, ``PROBE_CONFIG`` when none is named, with
    the keyword overrides laid over it: ``level="L1"`` beside a file that
    says L1 is the same config), ``checks`` (or ``PROBE_CHECKS``),
    ``PROBE_SYNC`` and this process's rank. None when it cannot tell
    (arguments the constructor refuses, a file it cannot read): that call
    builds, and says what is wrong."""
    try:
        values = inspect.signature(cls.__init__).bind(None, *args, **kwargs).arguments  # type: ignore[misc]
        path = values.get("config_path")
        path = os.environ.get(CONFIG_VARIABLE) or None if path is None else path  # as __init__ falls back
        config: Any = {}
        if path is not None:
            from msprobe_lint.project.files import read_bytes

            content, _ = read_bytes(os.path.abspath(path))  # never a pipe or a device: the lint says what it is
            if content is None:
                return None
            try:
                config = json.loads(content)
            except ValueError:  # not JSON: the same bytes are the same config
                config = {"": content.decode("latin-1")}
    except (TypeError, ValueError, OSError):
        return None
    overrides = {name: values[name] for name in ("task", "dump_path", "level", "step") if values.get(name) is not None}
    effective = {**config, **overrides} if isinstance(config, dict) else {"": config, **overrides}
    checks = values.get("checks")
    checks = os.environ.get(CHECKS_VARIABLE) or None if checks is None else checks
    return (json.dumps(effective, sort_keys=True, default=repr), checks, os.environ.get("PROBE_SYNC"),
            live_rank_source()[0])


class MsprobeSingleton(type):
    """msprobe's ``PrecisionDebugger`` is one object per process
    (``BasePrecisionDebugger.__new__`` returns ``cls._instance`` once there
    is one and ``__init__`` returns at once when ``initialized``) and its
    public methods are classmethods acting on it. This metaclass gives
    users the same, while a process (the project's tests) may still hold
    several debuggers built from different configs:

    * ``PrecisionDebugger(...)`` returns the current debugger, untouched,
      when the call would build the same one (:func:`_identity`: the same
      config file, unchanged, and keyword arguments, checks and rank) and
      it was not finished (:meth:`PrecisionDebugger.finish`, what exit
      runs). Any other call builds a new debugger, which becomes the
      current one; msprobe would return the first and ignore the
      arguments, so a warning says so when both write one dump_path.
    * :data:`CLASS_LEVEL` methods work on the class (:class:`_ClassLevel`).
    """

    def __new__(mcs, name: str, bases: tuple, namespace: dict, **kwargs: Any) -> "MsprobeSingleton":
        for method in CLASS_LEVEL:
            if callable(namespace.get(method)):
                namespace[method] = _ClassLevel(namespace[method])
        return super().__new__(mcs, name, bases, namespace, **kwargs)

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        with _LOCK:
            identity, current = _identity(cls, args, kwargs), _CURRENT.debugger
            alive = current is not None and not current._closed
            if alive and identity is not None and identity == _CURRENT.identity and isinstance(current, cls):
                return current  # msprobe: the same instance, not initialised again
            debugger = super().__call__(*args, **kwargs)
            if alive and debugger.dump_path == current.dump_path:
                LOGGER.warning("probe_runtime: %s(...) was called again with other arguments (or config content, "
                               "checks, rank) than the debugger of this process (config %s): a second debugger "
                               "now writes into the same dump_path %s, and %s.start()/stop()/step() act on it. "
                               "msprobe would return the first and ignore them; to share one debugger, build it "
                               "with the same arguments", cls.__name__, current.config_path, current.dump_path,
                               cls.__name__)
            _CURRENT.debugger, _CURRENT.identity = debugger, identity
            return debugger
