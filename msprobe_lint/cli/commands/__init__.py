"""One module per ``probe`` command besides ``lint`` (``cli/lint.py``):
each has ``main(...) -> int``, the command's argument handling over the
library, typer-free (cli/app.py declares the command line)."""
