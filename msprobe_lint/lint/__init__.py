"""The linter library: everything ``probe lint`` does, without argv or typer.

``api`` has the facades (``lint_paths``, ``lint_text``, ``fix_paths``);
``engine`` the stages of one file; ``rules`` the rule catalogue and its
families; ``reporters`` the output formats. Importing this package loads
nothing: import the module you need.
"""
