"""A 2-worker CPU job for tests/runtime/test_msrun.py: the differentiated
function itself calls a collective (an AllReduce in the forward pass, as
tensor parallelism does), under auto checks (PROBE_CHECKS=auto).

In step 1 rank 0's input makes exp overflow, so after the AllReduce both
ranks' loss and gradients are inf: each watched window would run the
computation again, but a replay never issues a collective (the other
rank would wait for it for ever): it stops before the AllReduce, each rank
writes the sentinel record saying why, and the job ends.
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
debugger = PrecisionDebugger()  # config from PROBE_CONFIG, checks from PROBE_CHECKS
all_reduce = ops.AllReduce()
w = ms.Parameter(Tensor(np.ones(4, np.float32)), name="w")
grad_fn = ms.value_and_grad(lambda x: ops.exp(all_reduce(x * w)).sum(), None, [w])

for step in range(3):
    debugger.start()
    big = 100.0 if (rank, step) == (0, 1) else 0.1
    loss, grads = grad_fn(Tensor(np.full(4, big, np.float32)))
    debugger.stop()
    debugger.step()
    print(f"rank {rank} step {step}: loss {loss.asnumpy()}", flush=True)
print(f"worker rank {rank} of {size} done", flush=True)
