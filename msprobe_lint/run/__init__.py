"""``probe run``: the guarded launch. ``guarded_run`` lints the config
and runs the command only when it passed; the parts are usable alone:
``launchers`` (what the command is), ``environment`` (the child's
environment), ``process`` (running it, forwarding signals).

Example::

    from msprobe_lint.run import guarded_run
    status = guarded_run("config.json", ["msrun", "--worker_num=2", "train.py"])
"""
from __future__ import annotations

from .guarded import guarded_run

__all__ = ["guarded_run"]
