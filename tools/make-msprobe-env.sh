#!/usr/bin/env bash
# Build the reference environment of msprobe itself: a separate virtual
# environment with mindstudio-probe 8.1.2 on MindSpore 2.7.0 (CPU) and
# numpy<2, the last msprobe release line with MindSpore's overflow_check task.
# Used by the interoperability tests (tests/runtime/test_msprobe_interop.py: msprobe's
# compare and graph tools on probe_runtime's dumps), by
# tools/make-msprobe-dumps.py (the msprobe-written dumps in tests/data/) and by
# benchmarks/runtime_bench.py --msprobe-python.
#
#   tools/make-msprobe-env.sh [DIR]      # default DIR: .msprobe-env in the repository
#
# Safe to run again: an environment that already imports the pinned versions
# is left as it is. Prints the environment's python on its last line.
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${1:-${MSPROBE_ENV:-.msprobe-env}}
PYTHON=${PYTHON:-python3}
MINDSPORE=2.7.0
MSPROBE=8.1.2

check() {
  "$DIR/bin/python" - "$MINDSPORE" "$MSPROBE" <<'PY' 2>/dev/null
import sys
from importlib.metadata import version
want_ms, want_probe = sys.argv[1], sys.argv[2]
ok = (version("mindspore") == want_ms and version("mindstudio-probe") == want_probe
      and int(version("numpy").split(".")[0]) < 2)
sys.exit(0 if ok else 1)
PY
}

if [ -x "$DIR/bin/python" ] && [ -x "$DIR/bin/msprobe" ] && check; then
  echo "make-msprobe-env: $DIR already has mindspore $MINDSPORE and mindstudio-probe $MSPROBE" >&2
else
  if [ ! -x "$DIR/bin/python" ]; then
    "$PYTHON" -m venv "$DIR"
  fi
  "$DIR/bin/python" -m pip install --quiet --upgrade pip
  "$DIR/bin/python" -m pip install --quiet "mindspore==$MINDSPORE" "numpy<2" "mindstudio-probe==$MSPROBE"
  if ! check; then
    echo "make-msprobe-env: $DIR does not have the pinned versions after installing" >&2
    exit 1
  fi
  echo "make-msprobe-env: built $DIR (mindspore $MINDSPORE, mindstudio-probe $MSPROBE)" >&2
fi
echo "$(cd "$DIR" && pwd)/bin/python"
