"""The checked windows: what each ``start()`` ... ``stop()`` checks.

* :mod:`.policy`: the checks modes and window kinds, and which window
  comes next (pure: tested without MindSpore);
* :mod:`.exact`: the exact-checks switch;
* :mod:`.controller`: opening and closing windows, and what is judged
  around each optimizer step, in every window;
* :mod:`.watched`: auto checks' watched window and the replay it starts;
* :mod:`.notes`: the records that name no call;
* :mod:`.summary`: the all-clear at exit.

``probe_runtime.debugger.PrecisionDebugger`` wires these parts; the rules
are written out in ``docs/checks.md``.
"""
