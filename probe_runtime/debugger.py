"""The public ``PrecisionDebugger``: msprobe's signature over the runtime's parts.

The constructor runs the lint gate (:mod:`.gate`: a config with errors
raises ``ConfigLintError`` before anything is patched or written), then
wires the parts: the checker (:mod:`.check`), the L1 interceptor
(:mod:`.l1`), the L0 Cell hooks (:mod:`.l0`), the optimizer watch, the
synchronous windows (:mod:`.execution`), the gradient watch and the replay
(:mod:`.grad`), and the checked windows that drive them
(:mod:`.windows`), and registers for interpreter exit and SIGTERM
(:mod:`.lifecycle`). ``start()``, ``stop()`` and ``step()`` open and close
the windows; each is *exact* (every call checked), *watched* (auto checks:
only the gradient computations, a replay under exact checks when one
returns inf/nan) or a *sentinel* window (``docs/checks.md``).

Once the gate passes, dump_path is created (0o750, never through a soft
link), as msprobe does. At exit, when nothing was recorded, one line says
so (:mod:`probe_runtime.windows.summary`). L1 intercepts API calls
(:mod:`probe_runtime.l1`), L0 hooks the Cells of the model given to
``start(model)`` (:mod:`probe_runtime.l0`); calls are queued and resolved
in batches, records on disk before the resolving call returns
(:mod:`probe_runtime.check.queue`). Level L2 (static graph) checks each
compiled step run between ``start()`` and ``stop()`` and, on the CPU
backend, replays an overflowing one under MindSpore's kernel dump; at
L1/L0 on CPU a ``mindspore.jit`` region that returns inf/nan from finite
inputs is replayed so (:mod:`probe_runtime.l2`, ``docs/l2.md``). The
debugger sets MindSpore's dump config: build it before the first graph
compiles.

Example::

    from probe_runtime import PrecisionDebugger

    debugger = PrecisionDebugger(config_path="config.json")   # ConfigLintError on errors
    debugger.start()
    loss = train_step(batch)
    debugger.stop()
    debugger.step()

One debugger per process, as msprobe's (:class:`MsprobeSingleton`): built again
with the same arguments (e.g. in a ``get_debugger()`` helper) it returns
the same debugger, not initialised again; ``PrecisionDebugger.start()``,
``.stop()``, ``.step()``, ``.set_init_step(n)``,
``.forward_backward_dump_end()`` (and ``.finish()``) on the class act on
the last one built.
"""
from __future__ import annotations

import logging
import os
import sys
from typing import Any, Optional

from . import lifecycle
from .errors import ConfigLintError, RuntimeMissing, UsageError
from .gate import ModeWatch, admit, claim_dump_path
from .instance import CHECKS_VARIABLE, CONFIG_VARIABLE, MsprobeSingleton
from .scenario import detect, imported_late
from .state import RunState, expand_ids, live_rank_source
from .windows.policy import DEFAULT_CHECKS, Checks, WindowPolicy, parse_checks

LOGGER = logging.getLogger("probe_runtime")
#: the values of ``checks`` (and ``PROBE_CHECKS``)
CHECKS = tuple(c.value for c in Checks)
__all__ = ["PrecisionDebugger", "CHECKS", "DEFAULT_CHECKS"]


def require_runtime() -> None:
    """Import numpy and MindSpore, what the debugger runs on (the
    ``runtime`` extra).

    Raises:
        RuntimeMissing: one of them cannot be imported (an ``ImportError``
            saying ``install the runtime extra: pip install
            'msprobe-lint[runtime]'``).
    """
    for module in ("numpy", "mindspore"):
        try:
            __import__(module)
        except ImportError as err:
            raise RuntimeMissing(module, str(err) or type(err).__name__) from None


class PrecisionDebugger(metaclass=MsprobeSingleton):
    """msprobe-compatible overflow detector for MindSpore: PyNative (L0, L1), static graph (L2).

    The facade only wires the parts; what each window checks lives in
    :mod:`probe_runtime.windows`. One per process, as msprobe's (the same
    arguments return it; its methods work on the class: :class:`MsprobeSingleton`).

    Args:
        config_path: msprobe config.json; None: the ``PROBE_CONFIG``
            environment variable, then no file (keyword arguments alone).
        task, dump_path, level, step: override the file's values
            (``step``: list of ints >= 0 or ``"a-b"`` strings).
        checks: ``"exact"`` (the default: every call of every checked
            step), ``"auto"`` (gradient computations watched, one that
            returns inf/nan run again under exact checks: faster, but blind
            to an overflow that never reaches their result) or ``"sentinel"``;
            None: ``PROBE_CHECKS``, then :data:`DEFAULT_CHECKS`. Not an
            msprobe argument; what each sees and costs: ``docs/checks.md``.

    Raises:
        RuntimeMissing: no numpy or MindSpore (an ``ImportError``).
        ValueError: ``checks`` (or ``PROBE_CHECKS``) is not one of
            :data:`CHECKS`, or ``PROBE_SYNC`` not ``0``, ``1`` or ``auto``.
        ConfigLintError: ``config_path`` or ``dump_path`` given but not a
            ``str`` (a ``pathlib.Path``: msprobe refuses it too), or the
            lint found errors in this live context (bad config, task not
            overflow_check, L2 on GPU, L0/L1 in graph mode, a dump_path relative,
            a soft link, not writable or holding an earlier run's dump of this
            rank ...); nothing patched or written.
        L2Unavailable: L2 on CPU, no private dump switch in this MindSpore or a ``.`` in TMPDIR (ValueError)
    """

    def __init__(self, config_path: Optional[str] = None, task: Optional[str] = None,
                 dump_path: Optional[str] = None, level: Optional[str] = None,
                 step: Optional[list] = None, *, checks: Optional[str] = None) -> None:
        require_runtime()  # RuntimeMissing without numpy or MindSpore, before anything else
        lifecycle.install_excepthook()  # a refusal reads as a message, after mindspore.communication.init() too
        config_path = config_path if config_path is not None else os.environ.get(CONFIG_VARIABLE) or None
        _refuse_non_strings(config_path=config_path, dump_path=dump_path)  # ConfigLintError, as msprobe refuses
        named = checks if checks is not None else os.environ.get(CHECKS_VARIABLE) or None
        mode = parse_checks(named, "checks" if checks is not None else CHECKS_VARIABLE)  # ValueError
        from .execution import check_sync_mode
        check_sync_mode()  # ValueError for PROBE_SYNC=maybe, as for PROBE_CHECKS=foo
        given = dict(task=task, dump_path=dump_path, level=level, step=step)
        overrides = {k: v for k, v in given.items() if v is not None}
        config = admit(config_path, overrides, rank := live_rank_source())
        self._writer_claim = claim_dump_path(config_path, overrides, rank, config)  # one writer per rank folder
        self.config, self.config_path = config, config_path
        self.task, self.level = config.get("task", "statistics"), config.get("level", "L1")
        self.dump_path = os.path.abspath(config["dump_path"])
        section = config.get("overflow_check") or {}
        self.state = RunState(steps=expand_ids(config.get("step")), ranks=expand_ids(config.get("rank")),
                              rank=rank[0], overflow_nums=int(section.get("overflow_nums", 1)))
        self._build_parts(WindowPolicy(mode, defaulted=named is None), config)  # L2Unavailable (l2.parts)
        self._started = self._closed = False  # _closed: finish() ran; built again, a new debugger (MsprobeSingleton)
        lifecycle.register(self)

    def _build_parts(self, policy: WindowPolicy, config: dict) -> None:
        """Build the parts, each handed its collaborators, and the windows
        over them. Imported here: they need numpy and MindSpore (the
        ``runtime`` extra), which a config the gate refuses never costs."""
        from .check.queue import Checker
        from .execution import SyncWindows
        from .grad.replay import Replayer, capture_state
        from .grad.states import StateWatch
        from .grad.watch import GradWatch
        from .hooks.collectives import communication_ready
        from .hooks.frames import library_roots
        from .l0.cell_hooks import CellHooks
        from .l1.interceptor import ApiInterceptor
        from .l1.optimizer import OptimizerWatch
        from .l2.parts import compiled_parts
        from .windows.controller import Windows
        from .windows.exact import ExactChecks

        scenario = detect()  # the gate let it through: plain MindSpore, or a layer checked at this level
        self._torch_unseen = not scenario.adapter and "torch" not in sys.modules  # start() looks again once one is
        self.checker = Checker(self.state, dump_path=self.dump_path, task=self.task, level=self.level, carry_batch=True,
                               on_exhausted=self._unpatch, framework=scenario.dump_framework,
                               library_roots=library_roots(scenario.roots))
        grads = GradWatch(self.checker.on_error, on_device=_device_target() not in ("CPU", None),
                          capture=capture_state if policy.checks is Checks.AUTO else None)
        nested = lambda: grads.depth > 1  # noqa: E731 - grad of grad: no backward hooks (l1/wrappers.py)
        cells = CellHooks(self.checker, nested_gradient=nested, modules=scenario.adapter)
        interceptor = ApiInterceptor(self.checker, nested_gradient=nested, torch=scenario.adapter)
        # L0 sees the collective calls too (only those): a Cell's inf/nan may come from another rank
        collectives = ApiInterceptor(self.checker, namespaces=("Collective",), nested_gradient=nested,
                                     enclosing=cells.current_call)
        exact = ExactChecks(self.level, interceptor=interceptor, cells=cells, collectives=collectives,
                            sync=SyncWindows(), checker=self.checker, distributed=communication_ready)
        self.windows = windows = Windows(policy, exact, checker=self.checker, state=self.state, grads=grads,
                                         states=StateWatch(grads.judge), optimizers=None, replayer=Replayer,
                                         level=self.level, dump_path=self.dump_path)
        windows.optimizers = OptimizerWatch(self.checker, on_update=windows.parameters_may_change,
                                            before_step=windows.before_step, after_step=windows.after_step)
        grads.on_computation, grads.on_forward = windows.on_computation, windows.on_forward
        claim = self._writer_claim  # the all-clear, and why detection stopped: kept for probe report
        windows.summary.remember, self.checker.on_turned_off = (getattr(claim, "note", None),
                                                                getattr(claim, "turned_off", None))
        self.grads, self.cells, self.interceptor = grads, cells, interceptor
        self._mode = ModeWatch(self.level, windows.summary)  # the mode the gate judged, checked at each start()
        self.compiled = windows.compiled = compiled_parts(self.level, config, self.state, self.dump_path, self.checker,
                                       on_exhausted=self._unpatch, summary=windows.summary)  # L2, mindspore.jit

    @property
    def checks(self) -> str:
        """The checks mode in force (``"exact"``, ``"auto"`` or ``"sentinel"``)."""
        return self.windows.policy.checks.value

    @property
    def window(self) -> Optional[str]:
        """The open window's kind (``"exact"``, ``"watched"``, ``"sentinel"``), None between windows."""
        return self.windows.kind.value if self.windows.kind is not None else None

    # -- public API (msprobe's) ---------------------------------------------------
    def start(self, model: Any = None) -> None:
        """Start checking the calls that follow.

        ``model``: level L0: the network whose Cells are hooked (a Cell, a ``torch.nn.Module`` for
        PyTorch code on MindSpore, or a list/tuple of them); L1 ignores it (msprobe's). Does nothing
        when the step or rank is not selected, ``overflow_nums`` is reached or the execution mode no
        longer fits the level (:class:`.gate.ModeWatch`). Never raises because of the tool.

        Raises:
            UsageError: L0 without a model or with a non-Cell (non-Module), or torch on MindSpore
                imported after the debugger was built (a ``ValueError``); even in unchecked steps.
        """
        self._torch_unseen = self._torch_unseen and ("torch" not in sys.modules or _refuse_late_layer())
        if self.level == "L0":
            self.cells.check_model(model)  # raises UsageError for no model or a non-Cell
        if self._started and self.windows.replaced_by(self.state.step, model):
            self._end()  # the window step() opened (another model, or calls seen): the user's opens instead
        self.windows.started(self.state.step, model)  # and step() opens the next step's window with it until stop()
        if not self._mode.fits(self.state):  # set_context(mode=...) since the gate: nothing installed
            return self.windows.exact.unpark()  # nor left in place by the last stop()
        if self._started or self.level == "L2":  # L2: compiled steps checked (probe_runtime.l2)
            self._started = self._started or self.compiled.open()
            return
        try:
            if not self.checker.begin():
                return self.windows.exact.unpark()  # a step or rank not checked: nothing left in place
            self.windows.open(model)
            self.compiled.open()  # mindspore.jit regions
            self._started = True
        except Exception as err:
            self.windows.abandon()
            self.checker.on_error("in start()", err)
            self.windows.summary.start_failed = True
            self._unpatch()

    def stop(self) -> None:
        """Stop checking, resolve every pending check (records on disk after); see ``Windows.uninstall``."""
        self.windows.resume = None  # step() opens no window until the next start()
        self._end()

    def _end(self, by_step: bool = False) -> None:
        """End the open window (``stop()``; ``step()``: ``by_step``, the window is never dropped as unused)."""
        self.compiled.close()
        self._unpatch(park=self._started)  # L1's stay, inert, for the next window; a stop() with none open removes all
        self._started = False
        try:
            self.checker.end()
            self.windows.close(by_step=by_step)
        except Exception as err:  # pragma: no cover
            self.checker.on_error("in stop()", err)

    def step(self) -> None:
        """End the current step (resolving what is pending), count one more (call indices from 0 again);
        after a ``start()`` with no ``stop()``, check the next one too, as msprobe (``Windows.stepped``)."""
        resume, self.windows.resume = self.windows.resume, None
        self._end(by_step=True) if self._started else self.checker.flush(final=True)
        self.state.next_step()
        self.cells.new_step()
        self.compiled.new_step()
        self.windows.stepped(self.start, resume)

    def set_init_step(self, step: int) -> None:
        """Set the number of the current step (e.g. when resuming). Raises ValueError unless an int >= 0."""
        self.state.set_step(step)

    forward_backward_dump_end = stop  # msprobe's older name of stop() (8.1.2 docs: "will be removed")

    def finish(self) -> None:
        """What interpreter exit and SIGTERM do (:mod:`.lifecycle`): remove every patch, resolve
        everything pending (records written), close the window and, when nothing was found, say
        so once. The debugger counts as stopped afterwards."""
        try:
            self._unpatch()
            self.checker.live = False
            self.checker.flush(final=True)
            self.windows.close(at_exit=True)
            self.windows.say_nothing_found()
        finally:
            self._started, self._closed = False, True

    def _unpatch(self, park: bool = False) -> None:
        """Remove every installed part (also when ``overflow_nums`` is reached); ``park``: see ``Windows.uninstall``."""
        self.compiled.uninstall()
        self.windows.uninstall(park=park)


def _refuse_late_layer() -> bool:
    """False once a ``torch`` loaded after the debugger was built proved not
    to be a torch-on-MindSpore layer (``scenario.imported_late``).

    Raises:
        UsageError: it is one: the message says to import it first.
    """
    late = imported_late()
    if late:
        raise UsageError(late)
    return False


def _device_target() -> Optional[str]:
    """``mindspore.get_context("device_target")``, or None when unknown."""
    try:
        import mindspore

        return str(mindspore.get_context("device_target"))
    except Exception:  # pragma: no cover
        return None


def _refuse_non_strings(**given: Any) -> None:
    """msprobe's PrecisionDebugger refuses a ``config_path`` or ``dump_path``
    that is not a ``str`` ("must be a string", its ``_check_input_params``,
    8.1.2); so does the drop-in, saying what to pass, before the lint reads
    anything (a ``pathlib.Path`` gave the path rules internal errors).

    Raises:
        ConfigLintError: one of ``given`` is neither None nor a ``str``.
    """
    for name, value in given.items():
        if value is not None and not isinstance(value, str):
            raise ConfigLintError([], f"probe_runtime refuses to start: {name} must be a string, as msprobe's "
                                      f"PrecisionDebugger requires, not a {type(value).__name__} ({value!r}); "
                                      f"pass {name}=str(...)")
