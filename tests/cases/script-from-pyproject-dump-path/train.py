import torch
from msprobe.pytorch import PrecisionDebugger

model = torch.nn.Linear(8, 8)
debugger = PrecisionDebugger(config_path="/opt/job/msprobe.json", dump_path="/data/job/msprobe_dump")
for step in range(3):
    debugger.start(model)
    model(torch.ones(8))
    debugger.stop()
    debugger.step()
