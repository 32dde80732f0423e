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
# The example's dump goes into this clone (example-dump/, gitignored), not a
# folder shared by every clone and user of the host: its configs are written
# there from examples/config_l*.json with this clone's absolute path (msprobe
# wants an absolute dump_path, PL401).
OUT="$PWD/example-dump"
mkdir -p "$OUT" || exit 1
for level in l0 l1; do
  .venv/bin/python - "examples/config_$level.json" "$OUT/config_$level.json" "$OUT/$level" <<'PY' || exit 1
import json, os, sys
config = json.load(open(sys.argv[1]))
config["dump_path"] = sys.argv[3]
with open(sys.argv[2], "w") as f:
    json.dump(config, f, indent=4)
    f.write("\n")
os.chmod(sys.argv[2], 0o640)
PY
done
DUMP="$OUT/l1"
if [ -e "$DUMP" ]; then
  OLD="$DUMP.old.$(date +%Y%m%d-%H%M%S)"
  echo "== $DUMP exists from an earlier run; moving it aside to $OLD (nothing is deleted)"
  mv -n "$DUMP" "$OLD" || exit 1
fi
echo "== 3. guarded launch: probe run lints config + script, then trains under the detector"
$PROBE run example-dump/config_l1.json -- .venv/bin/python examples/train_overflow.py || exit 1
echo
echo "== 4. probe report: where the overflow started"
$PROBE report "$DUMP"
