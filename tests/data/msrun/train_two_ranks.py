"""A tiny 2-step job for tests/runtime/test_msrun.py, launched by msrun on CPU.

Each worker joins the job with mindspore.communication.init() (CPU:
MindSpore's own "mccl" collective backend over loopback), then runs two
steps under probe_runtime's PrecisionDebugger, configured from PROBE_CONFIG
(set by `probe run`). Rank 1 overflows in step 0 (exp of 100 in float32),
rank 0 only in step 1: with the config's "rank": [1], only rank1 folders
may appear.
"""
import mindspore as ms
import numpy as np
from mindspore import Tensor, ops
from mindspore.communication import get_group_size, get_rank, init

from probe_runtime import PrecisionDebugger

ms.set_context(mode=ms.PYNATIVE_MODE)
ms.set_device("CPU")
init()
rank, size = get_rank(), get_group_size()
debugger = PrecisionDebugger()  # config from PROBE_CONFIG

for step in range(2):
    debugger.start()
    big = 100.0 if (rank, step) in ((1, 0), (0, 1)) else 1.0
    x = Tensor(np.array([[big, 1.0], [2.0, 3.0]], dtype=np.float32))
    y = ops.exp(x)
    z = y - y
    debugger.stop()
    debugger.step()
print(f"worker rank {rank} of {size} done", flush=True)
