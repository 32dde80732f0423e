#!/usr/bin/env bash
# Build a test environment on another MindSpore release: a separate virtual
# environment with mindspore==VERSION (CPU), numpy<2, this repository's
# project installed editable with its runtime and test extras, and pytest.
# Its python runs the runtime tests on that release:
#
#   tools/make-mindspore-env.sh VERSION [DIR]   # default DIR: .mindspore-envs/VERSION in the repository
#   .mindspore-envs/2.7.0/bin/python -m pytest -q tests/test_runtime_*.py
#
# tests/runtime/test_mindspore_releases.py runs the runtime tests in the
# environment of the oldest tested release (.mindspore-envs/2.7.0); .ci/run
# builds it.
#
# Safe to run again: an environment that already imports mindspore VERSION,
# numpy<2, pytest and this repository's probe_runtime is left as it is.
# Prints the environment's python on its last line. Exit status 2 on a bad
# command line, 1 when the environment cannot be built (the pip output says
# why: a release the index does not have, no wheel for this python...).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)
usage="usage: tools/make-mindspore-env.sh VERSION [DIR]   (VERSION: a MindSpore release such as 2.7.0)"
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
  echo "$usage" >&2
  exit 2
fi
VERSION=$1
if ! [[ "$VERSION" =~ ^[0-9]+\.[0-9]+\.[0-9]+([.a-z0-9]*)$ ]]; then
  echo "make-mindspore-env: '$VERSION' is not a MindSpore release number such as 2.7.0" >&2
  echo "$usage" >&2
  exit 2
fi
DIR=${2:-.mindspore-envs/$VERSION}
PYTHON=${PYTHON:-python3}

check() {
  "$DIR/bin/python" - "$VERSION" "$REPO" <<'PY' 2>/dev/null
import os, sys
from importlib.metadata import version
want, repo = sys.argv[1], os.path.realpath(sys.argv[2])
import probe_runtime, pytest  # noqa: F401  (both must import)
ok = (version("mindspore") == want and int(version("numpy").split(".")[0]) < 2
      and os.path.realpath(probe_runtime.__file__).startswith(repo + os.sep))
sys.exit(0 if ok else 1)
PY
  # the console script too: an editable install made before an entry point
  # moved still imports the old module
  "$DIR/bin/probe" --version > /dev/null 2>&1
}

if [ -e "$DIR" ] && [ ! -x "$DIR/bin/python" ]; then
  echo "make-mindspore-env: $DIR exists but is not a virtual environment; move it away or name another DIR" >&2
  exit 1
fi
if [ -x "$DIR/bin/python" ] && check; then
  echo "make-mindspore-env: $DIR already has mindspore $VERSION and this repository's project" >&2
else
  if [ ! -x "$DIR/bin/python" ]; then
    mkdir -p "$(dirname "$DIR")"
    "$PYTHON" -m venv "$DIR"
  fi
  if ! { "$DIR/bin/python" -m pip install --quiet --upgrade pip \
         && "$DIR/bin/python" -m pip install --quiet "mindspore==$VERSION" "numpy<2" -e ".[runtime,test]"; }; then
    echo "make-mindspore-env: could not install mindspore $VERSION and the project into $DIR (pip's message above)" >&2
    exit 1
  fi
  if ! check; then
    echo "make-mindspore-env: $DIR does not import mindspore $VERSION, numpy<2, pytest and $REPO's probe_runtime after installing" >&2
    exit 1
  fi
  echo "make-mindspore-env: built $DIR (mindspore $VERSION)" >&2
fi
echo "$(cd "$DIR" && pwd)/bin/python"
