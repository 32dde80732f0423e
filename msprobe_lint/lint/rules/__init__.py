"""Rule families, one module each; see registry.py."""
