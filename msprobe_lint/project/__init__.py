"""What the workspace holds: which files a folder yields (``discovery``),
whether a JSON file is an msprobe config at all (``sniff``) and how a
config file is read (``files``). It imports nothing of the linter, which
builds on it (the ``[tool.probe-lint]`` settings, which speak the linter's
terms, rule codes and severities, are ``lint.settings``): no package circle.
"""
