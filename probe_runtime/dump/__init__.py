"""The dump on disk: msprobe's layout plus ``overflow.json``, written
atomically (:mod:`.writer`). Imports nothing else of ``probe_runtime``."""
