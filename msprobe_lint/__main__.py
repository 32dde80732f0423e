"""``python -m msprobe_lint ARGS``: the ``probe`` command line."""
from .cli import main

if __name__ == "__main__":
    main()
