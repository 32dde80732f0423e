"""The environment ``probe run`` starts CMD with.

Example::

    >>> env = child_environment("config.json", {"PATH": "/usr/bin"}, executable="/venv/bin/python",
    ...                         prefix="/venv", base_prefix="/usr")
    >>> env["PATH"], env["VIRTUAL_ENV"], env["PROBE_CONFIG"].endswith("/config.json")
    ('/venv/bin:/usr/bin', '/venv', True)
"""
from __future__ import annotations

import json
import os
import sys
from typing import Mapping, Optional

DUMP_CONFIG = "MINDSPORE_DUMP_CONFIG"
#: the rule selection ``probe run`` linted with, handed to probe_runtime's gate
#: in CMD (a JSON object: ``select``, ``ignore``, ``extend_select`` as the
#: command line gave them, ``config_file`` absolute or null, ``isolated``)
SELECTION = "PROBE_LINT_SELECTION"
#: probe_runtime.l2.dump_config.SCRATCH_PREFIX (the linter never imports the runtime)
SCRATCH_PREFIX = "probe_l2_"


def child_environment(config: str, environ: Optional[Mapping[str, str]] = None, *,
                      executable: Optional[str] = None, prefix: Optional[str] = None,
                      base_prefix: Optional[str] = None, selection: Optional[dict] = None) -> dict[str, str]:
    """The environment CMD runs with: ``environ`` (default os.environ) plus
    ``PROBE_CONFIG`` = the config's absolute path, the running interpreter's
    bin folder first on ``PATH`` (not resolved through symlinks: a venv's
    ``bin/python`` is a link to the base interpreter) and, in a virtual
    environment, ``VIRTUAL_ENV``; ``PROBE_LINT_SELECTION`` (:data:`SELECTION`)
    = ``selection`` as JSON, the rule selection options ``probe run`` was
    given, so the gate in CMD lints with the same selection (a hunt's
    finding: ``probe run --ignore PL401`` passed the config, then the job
    refused it); an inherited one is dropped when ``selection`` is None.

    A ``MINDSPORE_DUMP_CONFIG`` naming the private replay-dump config of a
    probe_runtime process (a file in a ``probe_l2_<pid>_*`` folder: that
    process launched ``probe run``) is left out: MindSpore in every worker
    would read it at its first compile and write its kernels into the other
    process's folder."""
    env = dict(os.environ if environ is None else environ)
    if os.path.basename(os.path.dirname(env.get(DUMP_CONFIG, ""))).startswith(SCRATCH_PREFIX):
        del env[DUMP_CONFIG]
    env["PROBE_CONFIG"] = os.path.abspath(config)
    env.pop(SELECTION, None)
    if selection is not None:
        env[SELECTION] = json.dumps(selection)
    executable = executable if executable is not None else sys.executable
    if executable:
        bindir = os.path.dirname(os.path.abspath(executable))
        parts = [p for p in env.get("PATH", "").split(os.pathsep) if p and os.path.normpath(p) != bindir]
        env["PATH"] = os.pathsep.join([bindir] + parts)
    prefix = sys.prefix if prefix is None else prefix
    base_prefix = getattr(sys, "base_prefix", sys.prefix) if base_prefix is None else base_prefix
    if prefix != base_prefix:
        env["VIRTUAL_ENV"] = prefix
    return env
