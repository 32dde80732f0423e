"""Write a dump of one small float16 training step with msprobe's own
PrecisionDebugger or with probe_runtime's, for the interoperability tests and
tests/data/report/msprobe-*/.

    python tools/make_dumps.py --tool msprobe|probe --level L0|L1 [--task overflow_check|statistics|tensor]
        [--clean] DUMP_PATH

``--tool msprobe`` needs mindstudio-probe 8.1.2 (``tools/make-msprobe-env.sh``
builds that environment: ``.msprobe-env/bin/python tools/make_dumps.py ...``);
``--tool probe`` runs in the project's ``.venv``. DUMP_PATH must be absolute
and must not exist yet.

The model (``Net``): ``block`` (``fc``: Dense 4->4, ``act``: ``Scale``, a Cell
whose construct calls ``ops.exp``) then ``head`` (Dense 4->1), weights cast to
float16 with ``to_float``; loss and gradients with ``value_and_grad``, one SGD
update, one step (step 0). The batch holds a 12.0 (``exp`` of it is past
float16's largest value, 65504) unless ``--clean``: the overflow starts at
the ``ops.exp`` call in ``Scale.construct`` (L1: ``Functional.exp.0.forward``;
L0: ``Cell.block.act.Scale.forward.0``). Weights are fixed (no random
initialisation), so every run computes the same numbers.

msprobe 8.1.2 on CPU stops at its first ``stop()`` with ``The kernel
LinalgVectorNorm unregistered``: as benchmarks/runtime_bench.py does,
``mindspore.mint.norm`` is replaced by a wrapper around ``mindspore.ops.norm``
before msprobe's debugger is built (said on stderr; the benchmark's own
``patch_mint_norm``).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))
from runtime_bench import patch_mint_norm  # (the benchmark's msprobe workaround, shared)


def build(ms):
    from mindspore import nn, ops

    class Scale(nn.Cell):
        def construct(self, x):
            return ops.exp(x)

    class Block(nn.Cell):
        def __init__(self):
            super().__init__()
            self.fc = nn.Dense(4, 4, weight_init=ms.Tensor(np.eye(4, dtype=np.float32) * 0.5),
                               bias_init="zeros")
            self.act = Scale()

        def construct(self, x):
            return self.act(self.fc(x))

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.block = Block()
            self.head = nn.Dense(4, 1, weight_init=ms.Tensor(np.full((1, 4), 0.25, dtype=np.float32)),
                                 bias_init="zeros")

        def construct(self, x):
            return self.head(self.block(x))

    net = Net()
    net.to_float(ms.float16)
    return net


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tool", choices=("msprobe", "probe"), required=True)
    parser.add_argument("--level", choices=("L0", "L1"), required=True)
    parser.add_argument("--task", choices=("overflow_check", "statistics", "tensor"), default="overflow_check")
    parser.add_argument("--clean", action="store_true", help="no outlier: nothing overflows")
    parser.add_argument("dump_path")
    args = parser.parse_args(argv)
    if not os.path.isabs(args.dump_path) or os.path.exists(args.dump_path):
        parser.error("DUMP_PATH must be absolute and must not exist yet")

    import mindspore as ms
    from mindspore import nn

    ms.set_context(mode=ms.PYNATIVE_MODE, device_target="CPU")
    config = {"task": args.task, "dump_path": args.dump_path, "rank": [], "step": [], "level": args.level}
    if args.task == "overflow_check":
        config["overflow_check"] = {"overflow_nums": -1}
    elif args.task == "statistics":
        config["statistics"] = {"scope": [], "list": [], "data_mode": ["all"], "summary_mode": "statistics"}
    else:
        config["tensor"] = {"scope": [], "list": [], "data_mode": ["all"], "file_format": "npy"}
    folder = tempfile.mkdtemp(prefix="make-dumps-")
    config_path = os.path.join(folder, "config.json")
    with open(config_path, "w", encoding="utf-8") as f:
        json.dump(config, f)
    if args.tool == "msprobe":
        if patch_mint_norm():
            print("make_dumps: mindspore.mint.norm replaced by a wrapper around mindspore.ops.norm "
                  "(msprobe 8.1.2 on CPU: 'The kernel LinalgVectorNorm unregistered')", file=sys.stderr)
        from msprobe.mindspore import PrecisionDebugger
    else:
        from probe_runtime import PrecisionDebugger
    debugger = PrecisionDebugger(config_path=config_path)

    net = build(ms)
    loss_fn = nn.MSELoss()
    optimizer = nn.SGD(net.trainable_params(), learning_rate=0.01)

    def forward(x, y):
        return loss_fn(net(x).astype(ms.float32), y)

    grad_fn = ms.value_and_grad(forward, None, optimizer.parameters)
    batch = np.array([[0.5, 1.0, -1.0, 2.0], [1.0, 0.25, 0.5, -0.5]], dtype=np.float32)
    if not args.clean:
        batch[0, 3] = 24.0  # fc halves it: exp(12.0) = 162755 > 65504
    x, y = ms.Tensor(batch), ms.Tensor(np.ones((2, 1), dtype=np.float32))
    debugger.start(net)
    loss, grads = grad_fn(x, y)
    optimizer(grads)
    debugger.stop()
    debugger.step()
    print(f"make_dumps: {args.tool} {args.task} {args.level} {'clean' if args.clean else 'outlier'}: "
          f"loss {float(loss.asnumpy()):.4g}; dump in {args.dump_path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
