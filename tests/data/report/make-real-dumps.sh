#!/usr/bin/env bash
# Regenerate the real dumps under tests/data/report/ (see README.md there):
#   msprobe-l1, msprobe-l0: written by msprobe 8.1.2 itself (mindstudio-probe on
#     MindSpore 2.7.0, CPU), task overflow_check; mint.norm replaced by an
#     ops.norm wrapper (msprobe 8.1.2 has no CPU kernel for it);
#   probe-l0: written by probe_runtime (this project's .venv), level L0.
# All from tools/make_dumps.py: one float16 training step whose ops.exp overflows.
#   tests/data/report/make-real-dumps.sh        # builds .msprobe-env if missing
# MSPROBE_PYTHON=/path/to/python uses another msprobe 8.1.2 environment.
set -euo pipefail
cd "$(dirname "$0")/../../.."
ROOT=$PWD
MSPROBE_PY=${MSPROBE_PYTHON:-$(tools/make-msprobe-env.sh | tail -n 1)}
scratch=$(mktemp -d)
write() {  # python tool level name
  (cd "$scratch" && "$1" "$ROOT/tools/make_dumps.py" --tool "$2" --level "$3" "$scratch/$4") \
    > "$scratch/$4.log" 2>&1 || { cat "$scratch/$4.log" >&2; exit 1; }
  rm -rf "tests/data/report/$4"
  cp -r "$scratch/$4" "tests/data/report/$4"
  echo "wrote tests/data/report/$4 (dump_path was $scratch/$4)"
}
write "$MSPROBE_PY" msprobe L1 msprobe-l1
write "$MSPROBE_PY" msprobe L0 msprobe-l0
write "$ROOT/.venv/bin/python" probe L0 probe-l0
