import mindspore as ms
from mindspore import nn, ops
from probe_runtime import PrecisionDebugger

ms.set_context(mode=ms.PYNATIVE_MODE)

debugger = PrecisionDebugger(config_path='/home/cfg/config.json')
for x, y in loader:
    loss = train_step(x, y)
