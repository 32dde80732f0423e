"""``probe server``: the language server (LSP over stdio) for editors,
in ``lsp``. pygls is imported only when the server starts."""
