"""The JSON Schema of msprobe's config.json: the shipped files and their
loading (``files``), and a quick yes/no validity check that spares
importing jsonschema for a valid config (``fast``).

Not to be confused with the repository's ``schema/`` folder, which holds
the schema files themselves (shipped as ``msprobe_lint/schema/``).
"""
