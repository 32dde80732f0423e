"""``probe report DUMP_PATH``: hands its arguments to the report
(``msprobe_lint.report.main``), which loads no lint engine."""
from __future__ import annotations

from typing import Optional


def main(dump_path: str, format: str = "text", *, output: Optional[str] = None, force: bool = False,
         show_all: bool = False) -> int:
    """The report's exit status (see msprobe_lint.report)."""
    from ...report import main as report

    return report(dump_path, format, output=output, force=force, show_all=show_all)
