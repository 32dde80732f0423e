"""Fixes: a rule's fix turned into text edits (``edits``). The
``--fix``/``--diff`` flow over files, which lints, is ``lint.fixing``
(above the engine, which imports ``edits``: no circle)."""
