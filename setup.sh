#!/usr/bin/env bash
# Set up a fresh machine for this project: a virtual environment in .venv
# with the project (editable), the runtime extra (MindSpore CPU, numpy<2)
# and the test tools. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")"
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e ".[runtime,test]"
echo "setup.sh: ready (.venv/bin/probe, .venv/bin/python)"
