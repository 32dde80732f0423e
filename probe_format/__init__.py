"""The overflow dump format, shared by the writer (probe_runtime) and the
reader (``probe report``, msprobe_lint.report): a neutral leaf that imports
nothing of either package, nor anything beyond the standard library.

* :mod:`.layout`: folder and file names, the keys of ``overflow.json``
  records and their kinds, dump.json's keys;
* :mod:`.collectives`: the ``collective`` object and the one table of what
  each collective does;
* :mod:`.records`: the format's version and the constructors of each
  record kind (the runtime writes with them).

docs/report-format.md describes the format for people.
"""
