"""Script family (PL501-PL506): the training script given with --script,
analysed statically with ``ast`` (never run or imported)."""
from __future__ import annotations
