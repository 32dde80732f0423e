"""The closing summary: one line at exit when nothing was recorded (or what was not checked).

So a run without overflow is told apart from a wrong ``dump_path``, and an
all-clear is never read as more than it is: it says how many steps were
checked, how (exact or watched by auto checks) and, at L0, what that level
does not see.

Example::

    summary = Summary("L1", "/data/dump")
    summary.started(0)
    summary.checked(0, exact=True)
    summary.say(found=0, disabled=False, notes=0, auto=False)
    # stderr: probe_runtime: no overflow found in 1 checked step(s); dump_path: /data/dump
"""
from __future__ import annotations

import logging
import sys
from typing import Callable, Optional

LOGGER = logging.getLogger("probe_runtime")
#: what level L2 on the CPU backend cannot see (said once, in the all-clear)
L2_CPU_LIMITS = ("level L2 on the CPU backend tests what each compiled Cell step returns and the Parameters it "
                 "leaves, and names the kernel, by running the step again under MindSpore's kernel dump, only when "
                 "they hold inf/nan: an overflow masked inside the step is not seen, nor is a compiled step that "
                 "is not a Cell call (a functional mindspore.jit training step); it cannot see saturation mode, "
                 "where an overflow becomes +-max instead of inf (only Ascend's float status sees it), and the "
                 "CPU's kernels and fusion differ from Ascend's, so a float16 overflow there may not happen here")
#: why a level L2 window was not checked (``Summary.not_seen``'s default; ``{steps}``: the steps)
NO_CELL = ("called no Cell between start() and stop() and were not checked (step {steps}): level L2 checks the "
           "compiled steps of Cells (a TrainOneStepCell, the network Model.train runs), not a functional "
           "mindspore.jit training step; call a Cell, or use level L1 in PyNative")


def shown_steps(steps: set) -> str:
    """The first six of ``steps`` in order, ``", ..."`` after them when there are more."""
    return ", ".join(str(step) for step in sorted(steps)[:6]) + (", ..." if len(steps) > 6 else "")


def outside_filter(unchecked: set, steps: Optional[frozenset]) -> str:
    """What the all-clear adds about the steps that ran (``start()`` was
    called) outside the config's step filter: how many, which; "" when
    none did (or there is no step filter)."""
    outside = sorted(step for step in unchecked if steps is not None and step not in steps)
    if not outside:
        return ""
    ranges: list[str] = []
    for step in outside:
        if ranges and ranges[-1].split("-")[-1] == str(step - 1):
            ranges[-1] = f"{ranges[-1].split('-')[0]}-{step}"
        else:
            ranges.append(str(step))
    shown = ", ".join(ranges[:6]) + (", ..." if len(ranges) > 6 else "")
    return (f"; {len(outside)} step(s) ran outside the config's step filter and were not checked "
            f"(step {shown}): an overflow there is not seen")



def _shown(names: set[str]) -> str:
    """The first five of ``names``, sorted, and how many more."""
    ordered = sorted(names)
    return ", ".join(ordered[:5]) + (f" and {len(ordered) - 5} more" if len(ordered) > 5 else "")

class Summary:
    """Counts the checked steps and says the all-clear once.

    Args:
        level: ``"L0"`` or ``"L1"``.
        dump_path: named in the line.
        steps: the config's step filter (None: every step is checked).
        rank_outside: why this process is outside the config's rank
            filter (``"rank 0 is not in the config's rank [3]"``), or None.
        task: the config's task: only ``overflow_check`` says that
            ``start()`` was never called.

    Attributes:
        start_calls: ``start()`` calls (checked steps or not).
        step_calls: ``step()`` calls.
        run_steps: steps in which ``start()`` was called, checked or not.
        checked_steps: steps in which a window opened.
        exact_steps: those with an exact window.
        start_failed: a ``start()`` said why it could not check.
        said: the line was written (or must not be: set by tests).
    """

    def __init__(self, level: str, dump_path: str, steps: Optional[frozenset] = None,
                 rank_outside: Optional[str] = None, task: str = "overflow_check") -> None:
        self.level = level
        self.dump_path = dump_path
        self.steps = steps
        self.rank_outside = rank_outside
        self.task = task
        self.start_calls = 0
        self.step_calls = 0
        self.run_steps: set[int] = set()
        self.checked_steps: set[int] = set()
        self.exact_steps: set[int] = set()
        self.start_failed = False
        self.said = False
        self.unfinished: set[int] = set()
        #: the steps whose window was not checked, by why (a text with ``{steps}``, as :data:`NO_CELL`)
        self.unseen: dict[str, set[int]] = {}
        #: calls of mindspore.jit regions checked in windows at L1/L0 (``l2.jit.JitRegions``)
        self.jit_calls = 0
        #: L0: Cells whose -inf-only output a checked Cell or the model's own code turned finite (not recorded)
        self.masks: set[str] = set()
        #: L1: mindspore.jit regions whose -inf-only output a checked call turned finite (not recorded)
        self.regions: set[str] = set()
        #: step -> times ``start()`` was called again while that step's window was open (:meth:`restarted`)
        self.restarts: dict[int, int] = {}
        #: called with the all-clear once it is printed (the debugger keeps it in its dump_path marker)
        self.remember: Optional[Callable[[str], None]] = None
        #: L2: the compiled steps taken for ones returning a mask made by design (not recorded), what -> steps
        self.mask_steps: dict[str, set[int]] = {}
        #: L2: records of kind ``outside`` written (no kernel named, not counted in ``found``: :meth:`noted`)
        self.notes = 0

    def started(self, step: int) -> None:
        """``start()`` was called in ``step``."""
        self.start_calls += 1
        self.run_steps.add(step)

    def restarted(self, step: int) -> None:
        """The user's ``start()`` was called in ``step`` while the window
        their earlier ``start()`` opened in it was still open: no ``stop()``
        nor ``step()`` between (an exception the loop caught skipped them)."""
        self.restarts[step] = self.restarts.get(step, 0) + 1

    def checked(self, step: int, exact: bool) -> None:
        """A window opened in ``step``."""
        self.checked_steps.add(step)
        if exact:
            self.exact_steps.add(step)

    def not_seen(self, step: int, why: str = NO_CELL) -> None:
        """The window of ``step`` was not checked: not a checked step, and
        the all-clear says so with ``why`` (a text with ``{steps}``). By
        default level L2's: it ran no compiled Cell step (a functional
        ``mindspore.jit`` step is not seen); the debugger's when the
        execution mode no longer fits the level (``gate.ModeWatch``)."""
        self.checked_steps.discard(step)
        self.exact_steps.discard(step)
        self.unseen.setdefault(why, set()).add(step)

    def took_for_mask(self, step: int, what: str) -> None:
        """L2: the compiled step ``what`` (``the compiled step at
        train.py:40 (output 0)``) of ``step`` returned -inf only, beside
        finite values, with its Parameters finite: taken for a mask made
        by design and not recorded (``l2.graph.GraphChecks.taken_for_mask``);
        the exit line names it (:meth:`mask_parts`)."""
        self.mask_steps.setdefault(what, set()).add(step)

    def noted(self) -> None:
        """L2: a record that names no kernel was written (``outside``: a
        replay whose dump held none, Parameters that held inf/nan before
        the step): no all-clear, but the line after the records is said.
        A helper's finding: such a record set :attr:`said`, so the steps
        taken for a mask (:meth:`mask_parts`) went unsaid in the run's
        last line."""
        self.notes += 1

    def mask_parts(self) -> list[str]:
        """What the exit line says of the L2 steps taken for ones returning
        a mask (:meth:`took_for_mask`), [] when there is none: a hunt's
        finding was that not recording them must not hide them."""
        return [f"{what} returned -inf only, beside finite values, with its Parameters finite, in step "
                f"{shown_steps(steps)}: taken for a mask made by design (invalid actions or padding filled with "
                "-inf), not recorded; an overflow that gives -inf only (-exp of a large value) looks the same at "
                "level L2, level L1 in PyNative mode tells them apart" for what, steps in self.mask_steps.items()]

    def forget(self, step: int) -> None:
        """``step`` was opened by ``step()`` (``start()`` without ``stop()``)
        and saw no training call before it ended: no step of the user's,
        neither run, checked, nor cut short."""
        for steps in (self.run_steps, self.checked_steps, self.exact_steps, self.unfinished,
                      *self.unseen.values()):
            steps.discard(step)
        self.unseen = {why: steps for why, steps in self.unseen.items() if steps}

    def interrupted(self, step: int) -> None:
        """The window of ``step`` was still open at exit: its code never
        reached ``stop()`` (an exception, or no ``stop()`` at all)."""
        if step in self.checked_steps:
            self.unfinished.add(step)

    def line(self, auto: bool) -> str:
        """The all-clear's text."""
        watched = len(self.checked_steps - self.exact_steps)
        how = ""
        if auto and watched:
            how = (f" ({len(self.exact_steps)} with exact checks, {watched} watched by auto checks, which judge "
                   "only what the gradient computations return: an inf/nan that never reaches it, masked on the "
                   "way or made in code outside them such as an evaluation pass, is not seen there)")
        message = (f"probe_runtime: no overflow found in {len(self.checked_steps)} checked step(s){how}; "
                   f"dump_path: {self.dump_path}")
        if self.rank_outside:  # a fresh user's finding: "0 checked step(s)" said nothing of why
            message += f"; {self.rank_outside}, so no step of this process was checked"
        else:
            message += self.outside_part()
        for part in self.unchecked_parts() + self.mask_parts():
            message += "; " + part
        if self.jit_calls and self.level in ("L1", "L0"):  # a fresh user's finding: a clip compiled with @jit
            message += (f"; {self.jit_calls} call(s) of mindspore.jit regions ran in the checked steps: a region is "
                        "judged by what it returns and the Parameters it writes, so an overflow masked inside one "
                        "(its result finite, such as clip_by_global_norm compiled with @jit) is not seen, nor is "
                        "one its backward makes named (it shows in the calls whose gradients it feeds); without "
                        "@jit level L1 names the call")
            message += "".join("; " + part for part in self.region_parts())
        if not self.checked_steps:  # no limit of a check that never ran (nor its advice) to add
            return message
        if self.level == "L2":  # what the CPU's kernel check cannot see
            message += " (" + L2_CPU_LIMITS + ")"
        if self.level == "L0":  # what L0 cannot see, so the all-clear is not read as more than it is
            message += (" (level L0 checks what the Cells take and return: an overflow that starts and ends inside "
                        "one Cell, its outputs finite, is not seen, nor one in code outside the Cells, such as a "
                        "metric computed in the loop, unless a gradient computation returns it; level L1 names "
                        "the call)")
            message += "".join("; " + part for part in self.cell_parts())
        return message

    def region_parts(self) -> list[str]:
        """L1: what the exit line says of the ``mindspore.jit`` regions
        taken for mask makers (:attr:`regions`), [] when there is none: an
        overflow inside a region that gives -inf only looks the same from
        outside it, so not recording one must not hide it."""
        if not self.regions:
            return []
        return [f"{len(self.regions)} mindspore.jit region(s) returned -inf only, beside finite values, which "
                "later code turned finite, and were taken for a mask made by design (not recorded): "
                f"{_shown(self.regions)}; an overflow inside a region that gives -inf only (-exp of a large value) "
                "looks the same from outside it"]

    def cell_parts(self) -> list[str]:
        """L0: the same of the Cells taken for mask makers (:attr:`masks`):
        a fresh review's doubt, an overflow that gives -inf only, consumed
        like a mask, is not recorded."""
        if not self.masks:
            return []
        return [f"{len(self.masks)} Cell(s) returned -inf only, which later code turned finite, and were taken for "
                f"a mask made by design (not recorded): {_shown(self.masks)}; an overflow that gives -inf only "
                "(-exp of a large value) looks the same at L0, level L1 tells them apart"]

    def outside_part(self) -> str:
        """:func:`outside_filter` of the steps that ran and were neither
        checked nor :meth:`not_seen`."""
        return outside_filter(self.run_steps - self.checked_steps - set().union(*self.unseen.values()), self.steps)

    def unchecked_parts(self) -> list[str]:
        """What the exit line says of the steps that ran and were not
        checked, or only in part: those :meth:`not_seen` named, by why, and
        those cut short (:meth:`interrupted`); and a loop of windows that
        never called ``step()``; [] when there is none of these."""
        # fresh users' findings: a functional jit step at L2, and steps run in an execution mode the level does
        # not see (set_context(mode=...) after the debugger was built), were called "checked"
        parts = [f"{len(steps)} step(s) " + why.format(steps=shown_steps(steps)) for why, steps in self.unseen.items()]
        if self.start_calls > 1 and not self.step_calls and len(self.run_steps) == 1:  # a helper's finding
            parts.append(f"start() was called {self.start_calls} times and step() never, so every window counted as "
                         f"step {min(self.run_steps)} (steps are counted by step() calls, as in msprobe: the step "
                         "filter and the dump's step folders see one step); call debugger.step() after each "
                         "training step")
        if self.restarts:
            shown = ", ".join(f"{step} ({count + 1} start() calls)" for step, count in sorted(self.restarts.items()))
            parts.append(f"start() was called again in step {shown} while its window was open, with no stop() or "
                         "step() between (an exception the loop caught skipped them?): those loop iterations were "
                         "checked as one step, so the steps of this run are behind the loop's count from there on")
        if self.unfinished:  # a fresh user's finding: a step cut short by an exception was counted as checked
            shown = ", ".join(str(step) for step in sorted(self.unfinished))
            parts.append(f"step {shown} did not reach stop() (still running at exit: an exception, or no stop()), "
                         "so only its calls up to then were checked")
        return parts

    def say_limit(self, overflow_nums: int) -> None:
        """At exit, once ``overflow_nums`` records were written: the steps
        that ran after the last checked one (within the config's step
        filter) were not checked; one line on stderr (and the logger, at
        INFO), nothing when no step ran after it. A fresh user's finding:
        with msprobe's default of 1, a later real overflow went unseen and
        nothing said detection had stopped. Then, as after any records,
        the steps that ran unchecked or outside the filter
        (:meth:`_say_besides`)."""
        last = max(self.checked_steps, default=None)
        later = {step for step in self.run_steps if last is not None and step > last
                 and (self.steps is None or step in self.steps)}
        if self.said:
            return
        if later:
            self.said = True
            self._print(f"probe_runtime: overflow_nums={overflow_nums} reached in step {last}, so detection stopped "
                        f"there: {len(later)} later step(s) ran and were not checked (step {shown_steps(later)}); "
                        "set overflow_check.overflow_nums higher (-1: no limit) to check them")
        # a helper's finding: with the default of 1 and a step filter, the steps run before the filter (where
        # the overflow may have started) went unsaid, as they are when the limit is not reached
        self._say_besides(force=True)

    def _say_besides(self, *, force: bool = False) -> None:
        """After records were written: the steps that ran unchecked or cut
        short, and those outside the step filter (with the warning that the
        first record may come after where the overflow started when one of
        them ran before a checked step); nothing when there are none.
        ``force``: said even after another exit line."""
        # a review's finding: the regions and Cells taken for a mask went unsaid once another step had a record
        parts = self.unchecked_parts() + self.mask_parts() + self.region_parts() + self.cell_parts()
        outside = self.outside_part()
        if outside:  # a fresh user's finding: step 2 made the NaN, unchecked, and the records began in step 3
            unchecked = self.run_steps - self.checked_steps - set().union(*self.unseen.values())
            earlier = min(unchecked, default=None) is not None and min(unchecked) < max(self.checked_steps,
                                                                                      default=-1)
            parts.insert(0, outside[2:] + (", and the first record may come after where the overflow started"
                                           if earlier else ""))
        if parts and (force or not self.said):
            self.said = True
            self._print(f"probe_runtime: records were written to {self.dump_path}; besides them, "
                        + "; ".join(parts))

    def never_started(self) -> str:
        """The exit line of a run that called ``step()`` but never
        ``start()``: nothing was checked, and why."""
        return (f"probe_runtime: no step was checked: start() was never called ({self.step_calls} step() call(s)); "
                "call debugger.start() before the training step (start(model) at level L0), stop() after it; "
                f"dump_path: {self.dump_path}")

    def say(self, *, found: int, disabled: bool, notes: int, auto: bool) -> None:
        """At exit, after at least one ``start()``: the line on stderr (and
        the logger, at INFO) when no record or note was written and
        detection was not turned off; once. Without any ``start()``, when
        ``step()`` was called (an overflow_check task): that nothing was
        checked (:meth:`never_started`). When records or notes were written,
        no all-clear, but the steps that ran unchecked or cut short
        (:meth:`unchecked_parts`) are still said: a fresh user's finding was
        a run whose step 0 recorded an overflow and whose later steps, run
        in GRAPH_MODE at L1, went unchecked without a word."""
        if self.said or disabled:
            return
        if found or notes or self.notes:  # no all-clear; but steps not checked are said (once only in it)
            self._say_besides()
            return
        if not self.start_calls:  # a fresh user's finding: a script that only called step() heard nothing
            if not self.step_calls or self.task != "overflow_check":
                return
        elif self.start_failed and not self.checked_steps:  # it never checked; start() said why
            return
        self.said = True
        message = self.line(auto) if self.start_calls else self.never_started()
        self._print(message)
        if self.remember is not None:  # kept beside the dump for probe report (live_writers.Claim.note)
            self.remember(message)

    @staticmethod
    def _print(message: str) -> None:
        """``message`` on stderr and to the logger, at INFO."""
        LOGGER.info(message)
        try:
            print(message, file=sys.stderr, flush=True)
        except Exception:  # pragma: no cover - stderr closed at exit
            pass
