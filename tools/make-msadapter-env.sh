#!/usr/bin/env bash
# Build the MSAdapter test environment: PyTorch-style code on MindSpore.
# A separate virtual environment with MindSpore 2.7.0 (CPU), numpy<2,
# mindnlp 0.5.1 installed without its dependencies (it carries the
# `mindtorch` package: after `import mindtorch`, `import torch` loads it),
# the two packages mindtorch needs besides MindSpore's own dependencies
# (ml-dtypes<0.5, typing-extensions), and this repository's project installed editable
# with its runtime and test extras.
#
#   tools/make-msadapter-env.sh [DIR]   # default DIR: .mindspore-envs/msadapter in the repository
#
# Why these pins: mindtorch from mindnlp 0.5.1 imports only on MindSpore
# 2.7.0 (on 2.8 to 2.10 its import fails with "Generator.__init__() missing 2
# required positional arguments"); the OpenI msadapter 0.1.0 and mindtorch
# 0.4.0 wheels do not import on 2.7.0, and the index has no MindSpore 2.1-2.6.
# tests/runtime/msadapter/ runs its cases with this environment's python, each
# in a subprocess; .ci/run builds it (best effort: without it those tests skip
# and say why).
#
# About 2.5 min to build with a warm pip cache (151 s measured).
#
# Safe to run again: an environment that already imports mindspore 2.7.0,
# numpy<2, mindtorch (torch.tensor is a mindspore.Tensor), pytest and this
# repository's probe_runtime is left as it is. Prints the environment's python
# on its last line. Exit status 1 when the environment cannot be built (pip's
# output says why).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)
if [ $# -gt 1 ]; then
  echo "usage: tools/make-msadapter-env.sh [DIR]" >&2
  exit 2
fi
DIR=${1:-.mindspore-envs/msadapter}
PYTHON=${PYTHON:-python3}
MINDSPORE=2.7.0
MINDNLP=0.5.1
# What `import mindtorch` and `torch.tensor(...)` import beyond MindSpore
# and its own dependencies (found by listing sys.modules after them): only
# these two.
EXTRA=("ml-dtypes<0.5" "typing-extensions")

check() {
  "$DIR/bin/python" - "$MINDSPORE" "$MINDNLP" "$REPO" <<'PY' 2>/dev/null
import os, sys
from importlib.metadata import version
want_ms, want_nlp, repo = sys.argv[1], sys.argv[2], os.path.realpath(sys.argv[3])
import probe_runtime, pytest  # noqa: F401  (both must import)
import mindspore
import mindtorch  # noqa: F401
import torch
ok = (version("mindspore") == want_ms and version("mindnlp") == want_nlp
      and int(version("numpy").split(".")[0]) < 2
      and isinstance(torch.tensor(0.0), mindspore.Tensor)
      and os.path.realpath(probe_runtime.__file__).startswith(repo + os.sep))
sys.exit(0 if ok else 1)
PY
  "$DIR/bin/probe" --version > /dev/null 2>&1
}

if [ -e "$DIR" ] && [ ! -x "$DIR/bin/python" ]; then
  echo "make-msadapter-env: $DIR exists but is not a virtual environment; move it away or name another DIR" >&2
  exit 1
fi
if [ -x "$DIR/bin/python" ] && check; then
  echo "make-msadapter-env: $DIR already has mindspore $MINDSPORE, mindnlp $MINDNLP and this repository's project" >&2
else
  if [ ! -x "$DIR/bin/python" ]; then
    mkdir -p "$(dirname "$DIR")"
    "$PYTHON" -m venv "$DIR"
  fi
  if ! { "$DIR/bin/python" -m pip install --quiet --upgrade pip \
         && "$DIR/bin/python" -m pip install --quiet "mindspore==$MINDSPORE" "numpy<2" "${EXTRA[@]}" -e ".[runtime,test]" \
         && "$DIR/bin/python" -m pip install --quiet --no-deps "mindnlp==$MINDNLP"; }; then
    echo "make-msadapter-env: could not install mindspore $MINDSPORE, mindnlp $MINDNLP and the project into $DIR (pip's message above)" >&2
    exit 1
  fi
  if ! check; then
    echo "make-msadapter-env: $DIR does not import mindspore $MINDSPORE, mindtorch (from mindnlp $MINDNLP), numpy<2, pytest and $REPO's probe_runtime after installing" >&2
    exit 1
  fi
  echo "make-msadapter-env: built $DIR (mindspore $MINDSPORE, mindnlp $MINDNLP)" >&2
fi
echo "$(cd "$DIR" && pwd)/bin/python"
