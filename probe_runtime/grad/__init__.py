"""What the gradient computations are watched with, and run again with.

* :mod:`.watch`: the gradient watch (``GradWatch``), every PyNative
  gradient computation judged when it returns, in every checks mode;
* :mod:`.replay`: running computations again under exact checks, changing
  nothing the training sees (auto checks);
* :mod:`.states`: the state Parameters a computation writes in place
  (auto checks).

The modules import numpy and MindSpore only inside functions; the checked
windows (``probe_runtime.windows``) drive them.
"""
