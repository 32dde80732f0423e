import mindspore as ms
from mindspore import nn, ops
from probe_runtime import PrecisionDebugger

ms.set_context(mode=ms.PYNATIVE_MODE)

@ms.jit
def forward(x):
    return net(x)

debugger = PrecisionDebugger(config_path='/home/cfg/config.json')
for x, y in loader:
    debugger.start(net)
    loss = train_step(x, y)
    debugger.stop()
    debugger.step()
