"""``probe server``: the language server over stdio (server/lsp.py)."""
from __future__ import annotations


def main() -> int:
    """Serve until the client says exit; a usage error without pygls."""
    from ...server.lsp import main as serve

    return serve()
