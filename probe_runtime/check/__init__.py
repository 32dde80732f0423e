"""The checker: entries queued, judged, traced to their origin and recorded.

Hooks (L1 wrappers, L0 Cell hooks) hand entries to :class:`~.queue.Checker`,
which holds references to their tensors (never copies) and resolves them in
batches at the resolution points; each entry gets a verdict (overflow,
origin), its provenance is settled, and an overflowing one is written
before the call that resolved the batch returns.

Modules: :mod:`.queue` (``Checker``: the pending queue and its resolution
points), :mod:`.verdict` (finiteness, origin, statistics, host copies),
:mod:`.provenance` (origin or carried, and where an overflow came in),
:mod:`.probes` (Parameter probes) and :mod:`.records` (records handed to
the writer). When each check runs and what it holds: ``docs/checks.md``;
the rules and the reasons: ``docs/runtime-design.md``.
"""
