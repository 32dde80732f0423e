"""What the workspace says: ``[tool.probe-lint]`` settings (``settings``),
which files a folder yields (``discovery``) and whether a JSON file is an
msprobe config at all (``sniff``). These modules speak the linter's terms
(rule codes, context facts, severities) and never run a lint.
"""
