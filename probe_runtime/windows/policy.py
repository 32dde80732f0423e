"""Which checked window comes next: the rules of the checks modes, as data.

This module is pure logic: it imports nothing of the runtime, numpy or
MindSpore, so its rules (written out in ``docs/checks.md``) are tested
without MindSpore (``tests/runtime/windows/test_policy.py``).

A *window* is what one ``start()`` ... ``stop()`` checks. Its kind:

* ``exact``: every call (L1) or Cell (L0) is checked, forward and backward;
* ``watched`` (auto checks): only the gradient computations are watched,
  and one that returns inf/nan is run again at once under exact checks;
* ``sentinel``: only what the gradient computations return, until
  something is not finite.

Example::

    policy = WindowPolicy(Checks.AUTO)
    policy.next_kind()                      # Kind.EXACT: the first window is exact
    policy.closed(computed_gradients=True)
    policy.next_kind()                      # Kind.WATCHED
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Optional


class Checks(str, enum.Enum):
    """The checks modes (``PrecisionDebugger(checks=...)``, ``PROBE_CHECKS``).
    A ``str`` subclass: ``Checks.EXACT == "exact"``."""

    EXACT = "exact"
    AUTO = "auto"
    SENTINEL = "sentinel"

    def __str__(self) -> str:
        return self.value


class Kind(str, enum.Enum):
    """The kinds of a checked window (see the module docstring)."""

    EXACT = "exact"
    WATCHED = "watched"
    SENTINEL = "sentinel"

    def __str__(self) -> str:
        return self.value


#: the checks mode when neither the argument nor ``PROBE_CHECKS`` names one.
#: Exact checks: auto checks' first record differs from theirs where an
#: overflow never reaches a gradient computation's result (masked before the
#: loss, code outside the gradient computations, gradient clipping, the
#: optimizer step), so they cannot be the default (SPEC 5: truth before
#: speed; the measurements are in docs/checks.md and the README).
DEFAULT_CHECKS = Checks.EXACT


def parse_checks(value: Optional[str], source: str = "checks") -> Checks:
    """The :class:`Checks` named by ``value`` (None: :data:`DEFAULT_CHECKS`).
    Case and surrounding white space do not matter (``PROBE_CHECKS=Exact``),
    as for ``PROBE_SYNC``.

    Raises:
        ValueError: ``value`` names no mode; the message names ``source``
            (``"checks"`` or ``"PROBE_CHECKS"``) and the allowed values.
    """
    if value is None or not value.strip():
        return DEFAULT_CHECKS
    try:
        return Checks(value.strip().lower())
    except ValueError:
        names = [repr(c.value) for c in (Checks.EXACT, Checks.AUTO, Checks.SENTINEL)]
        allowed = ", ".join(names[:-1]) + " or " + names[-1]
        raise ValueError(f"{source} must be {allowed}, not {value!r}") from None


@dataclass
class WindowPolicy:
    """The state machine that chooses each window's kind.

    Args:
        checks: the mode asked for.
        defaulted: the mode was not asked for (neither argument nor
            environment): :meth:`settle` may then change it.

    Attributes:
        sentinel_armed: sentinel checks run in the coming windows (until
            they find something).
        watch_next: auto checks: the next window watches the gradient
            computations only.
        exact_next: auto checks: a finding asked for exact checks in the
            next window.
    """

    checks: Checks
    defaulted: bool = False
    sentinel_armed: bool = field(init=False)
    watch_next: bool = False
    exact_next: bool = False

    def __post_init__(self) -> None:
        self.checks = Checks(self.checks)
        self.sentinel_armed = self.checks is Checks.SENTINEL

    def settle(self, distributed: bool) -> bool:
        """At the first window: a defaulted auto mode in a job of several
        ranks becomes exact (a replay never issues a collective, so a rank
        that received inf/nan through one would not have that call named).
        Returns True when the mode changed; later calls change nothing."""
        defaulted, self.defaulted = self.defaulted, False
        if defaulted and distributed and self.checks is Checks.AUTO:
            self.checks = Checks.EXACT
            return True
        return False

    def next_kind(self) -> Kind:
        """The kind of the window the next ``start()`` opens: sentinel while
        sentinel checks are armed; watched under auto checks after a window
        that computed gradients, unless a finding asked for exact checks;
        exact otherwise (the first window of every mode, every window of
        exact checks, every window after one without gradients)."""
        if self.checks is Checks.SENTINEL:
            return Kind.SENTINEL if self.sentinel_armed else Kind.EXACT
        if self.checks is Checks.AUTO and self.watch_next and not self.exact_next:
            return Kind.WATCHED
        return Kind.EXACT

    def ask_exact(self) -> None:
        """A finding auto checks could not name asks for exact checks in the
        next window (under other modes: no effect)."""
        if self.checks is Checks.AUTO:
            self.exact_next = True

    def sentinel_found(self) -> None:
        """Sentinel checks found inf/nan: exact checks from the next window on, for good."""
        self.sentinel_armed = False

    def closed(self, computed_gradients: bool) -> None:
        """A window closed. Under auto checks, the next one is watched when
        this one computed gradients and no finding asked for exact checks."""
        if self.checks is Checks.AUTO:
            self.watch_next = computed_gradients and not self.exact_next
            self.exact_next = False
