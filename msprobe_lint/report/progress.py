"""Progress on a terminal while a large dump is read: a rich spinner line
on stderr, shown only when stderr is a terminal and the reading has taken
longer than a moment; never in a pipe or a file."""
from __future__ import annotations

import time
from typing import IO, Any, Optional

from .discover import RankFolder
from .fmt import step_text

#: seconds of reading before the progress line appears
DELAY = 0.5


class Progress:
    """Call it after each folder read; :meth:`close` when done.

    Args:
        stream: where the report's warnings go (stderr); nothing is shown
            unless ``stream.isatty()``.
        delay: seconds before the line appears (short reads show nothing).
    """

    def __init__(self, stream: IO[str], delay: float = DELAY) -> None:
        isatty = getattr(stream, "isatty", None)
        self.enabled = bool(isatty and isatty())
        self.stream = stream
        self.delay = delay
        self.started = time.monotonic()
        self.folders = 0
        self._live: Optional[Any] = None
        self._task: Any = None

    def __call__(self, folder: RankFolder, records: int) -> None:
        self.folders += 1
        if not self.enabled:
            return
        if self._live is None:
            if time.monotonic() - self.started < self.delay:
                return
            from rich.console import Console  # rich comes with typer; loaded only for a terminal
            from rich.progress import Progress as RichProgress, SpinnerColumn, TextColumn, TimeElapsedColumn

            self._live = RichProgress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                                      console=Console(file=self.stream, force_terminal=True), transient=True)
            self._live.start()
            self._task = self._live.add_task("")
        self._live.update(self._task, description=f"probe report: reading {step_text(folder.step)}: "
                                                  f"{self.folders:,} folders, {records:,} records")

    def close(self) -> None:
        """Remove the progress line (it is transient)."""
        if self._live is not None:
            self._live.stop()
            self._live = None
