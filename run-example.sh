#!/usr/bin/env bash
# The main job, from a fresh machine: set up, lint the bundled configs (one
# clean, one with mistakes), then a guarded overflow-detection run of the
# bundled float16 training example, and the report of what it found.
set -uo pipefail
cd "$(dirname "$0")"
./setup.sh || exit 1
PROBE=.venv/bin/probe

echo "== 1. probe lint on a config with mistakes (expected: errors, exit 1)"
$PROBE lint examples/lint/mistakes.json --isolated
echo "   exit status: $?"
echo
echo "== 1b. what probe lint --fix would change in it (--diff writes nothing; the rest is for you)"
$PROBE lint examples/lint/mistakes.json --isolated --diff
echo
echo "== 2. probe lint on a clean config (expected: exit 0)"
$PROBE lint examples/lint/clean.json --isolated --mode pynative --framework mindspore || exit 1
echo
DUMP=$(.venv/bin/python -c "import json; print(json.load(open('examples/config_l1.json'))['dump_path'])")
if [ -e "$DUMP" ]; then
  echo "== $DUMP exists from an earlier run; moving it aside to $DUMP.old.$$ (nothing is deleted)"
  mv "$DUMP" "$DUMP.old.$$"
fi
echo "== 3. guarded launch: probe run lints config + script, then trains under the detector"
$PROBE run examples/config_l1.json -- .venv/bin/python examples/train_overflow.py || exit 1
echo
echo "== 4. probe report: where the overflow started"
$PROBE report "$DUMP"
