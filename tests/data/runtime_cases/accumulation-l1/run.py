"""Runtime case: the accumulation scenario at L1 (see tests/runtime_scenarios.py)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
from runtime_scenarios import run_scenario  # noqa: E402

run_scenario(sys.argv[1], "accumulation")
