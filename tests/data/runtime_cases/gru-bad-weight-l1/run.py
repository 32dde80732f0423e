"""Runtime case: the gru family, overflow kind 'weight', 2 steps (see tests/runtime_families.py)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
from runtime_families import run_case  # noqa: E402

run_case(sys.argv[1], "gru", "weight", steps=2)
