"""probe_runtime: overflow detector for MindSpore PyNative."""
