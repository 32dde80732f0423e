"""Environment family (PL601): what the installed packages can do."""
from __future__ import annotations

from ..config_view import ConfigView
from ..context import Context
from ..diagnostic import Finding
from .base import rule

TYPE_CHECKING = False  # typing is imported only by type checkers (start-up)
if TYPE_CHECKING:
    from typing import Iterator

FIRST_RELEASE_WITHOUT_MS_OVERFLOW = "26.1.0"


@rule("PL601", "msprobe-without-overflow-check", "warning",
      "Installed mindstudio-probe has no MindSpore overflow_check task (26.1 and later)",
      # the 26.x schema's findings on the task and its section: PL601 says it once, precisely
      supersedes=(("PL103", "/task"), ("PL101", "/overflow_check")))
def msprobe_without_overflow(config: ConfigView, context: Context) -> Iterator[Finding]:
    """
    mindstudio-probe 26.1 and later have no overflow_check task (26.0 kept
    it for MindSpore static graph at L2 only; that limit is PL201's): a
    MindSpore job that constructs msprobe's PrecisionDebugger with this
    config would not detect overflow. Only judged from the installed package
    (live environment, never under --isolated). The installed release is
    then also the target the config is judged by; this is the precise
    diagnosis, reported instead of the 26.x schema's PL103 on the task and
    PL101 on the overflow_check section. probe_runtime's PrecisionDebugger
    runs the task whatever msprobe is installed.

    Bad:
        mindstudio-probe 26.2.0 installed, from msprobe.mindspore import PrecisionDebugger
    Good:
        from probe_runtime import PrecisionDebugger   (or mindstudio-probe 8.3.x)
    """
    # The raw value: judged as 26.x, the task overflow_check fails the schema.
    if config.data.get("task") != "overflow_check" or context.framework in ("msadapter", "pytorch") or context.runtime:
        return
    fact = context.fact("msprobe_version")
    if fact is None or not fact.source.startswith("installed"):
        return
    from packaging.version import Version

    if fact.value >= Version(FIRST_RELEASE_WITHOUT_MS_OVERFLOW):
        yield Finding("PL601", f"the installed mindstudio-probe {fact.value} has no MindSpore overflow_check task",
                      pointer="/task", hint="use probe_runtime's PrecisionDebugger, or mindstudio-probe 8.3.x")
