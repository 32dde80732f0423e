"""What the gradient computations are watched with, and run again with.

* :mod:`.watch`: the gradient watch (``GradWatch``), every PyNative
  gradient computation judged when it returns, in every checks mode;
* :mod:`.replay`: running computations again under exact checks, changing
  nothing the training sees (auto checks);
* :mod:`.reach`: the Cells and Parameters a computation can reach (what a
  replay puts back, what the state watch copies);
* :mod:`.states`: the state Parameters a computation writes in place
  (auto checks).

The modules import numpy and MindSpore only inside functions; the checked
windows (``probe_runtime.windows``) drive them.
"""
