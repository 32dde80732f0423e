"""Fixes: a rule's fix turned into text edits (``edits``), and the
``--fix``/``--diff`` flow over files (``apply``)."""
