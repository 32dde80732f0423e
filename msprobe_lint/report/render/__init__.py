"""The report's output formats: text, JSON and one HTML page. Each renderer
gets a read :class:`~msprobe_lint.report.view.Report` and gives the output
in pieces; none reads a file."""
from __future__ import annotations


class RenderUnavailable(RuntimeError):
    """A format needs a library that is not installed (the message says which and how to install it)."""
