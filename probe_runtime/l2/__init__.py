"""L2 (kernel level) on MindSpore's CPU backend: compiled steps checked,
an overflowing one run again under MindSpore's kernel dump.

Modules: :mod:`.private` (MindSpore's private dump switch, the only door
to it), :mod:`.dump_config` (the dump configs: the CPU replay's, and on
Ascend msprobe 8.1.2's), :mod:`.snapshot` (the state a step changes, kept
on the host), :mod:`.graph` (``GraphChecks``: each compiled step checked,
replayed under the dump when it overflows), :mod:`.scan` (naming the
kernels in MindSpore's dump) and :mod:`.records` (writing them in
msprobe's layout). Design and measures: ``docs/l2.md``.
"""
