#!/usr/bin/env python3
"""A torch model with data-dependent control flow, scripted
(torch.jit.script) and exported by torch.onnx as If and Loop nodes, in the
backend-test layout (OUT/control_torch/model.onnx, test_data_set_0) with
torch's own outputs as the expected values.

The forward runs a recurrent cell `steps` times (a model input, so the
exported Loop's trip count is read at run time), and inside the loop takes
one of two branches depending on the sign of the state's mean (an If in
the Loop body); the branches read the module's weights from the outer
graph.  Run by ctest (models/control_torch_*) with /usr/bin/python3
(Debian's torch).
"""
import argparse
import os

import numpy as np
import onnx
import torch
from onnx import numpy_helper


class LoopIf(torch.nn.Module):
    def __init__(self, n):
        super().__init__()
        self.lin = torch.nn.Linear(n, n)
        self.up = torch.nn.Parameter(torch.randn(n) * 0.5)
        self.down = torch.nn.Parameter(torch.randn(n) * 0.5)

    def forward(self, x, steps: torch.Tensor):
        h = x
        for _ in range(int(steps)):
            h = torch.tanh(self.lin(h))
            if bool(h.mean() > 0):
                h = h * self.up
            else:
                h = h + self.down
        return h


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    out = os.path.join(ap.parse_args().out, "control_torch")
    torch.manual_seed(14)
    model = torch.jit.script(LoopIf(8).eval())
    x = torch.randn(2, 8)
    steps = torch.tensor(6, dtype=torch.int64)
    with torch.no_grad():
        ref = model(x, steps)
    data = os.path.join(out, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    path = os.path.join(out, "model.onnx")
    torch.onnx.export(model, (x, steps), path, opset_version=13, input_names=["x", "steps"],
                      output_names=["h"])
    proto = onnx.load(path)
    ops = {n.op_type for n in proto.graph.node}
    body_ops = {n.op_type for node in proto.graph.node for a in node.attribute if a.g
                for n in a.g.node}
    if "Loop" not in ops or "If" not in body_ops:
        raise RuntimeError("the export has no Loop with an If inside: %s / %s" % (ops, body_ops))
    for i, (name, t) in enumerate([("x", x), ("steps", steps)]):
        with open(os.path.join(data, "input_%d.pb" % i), "wb") as f:
            f.write(numpy_helper.from_array(t.numpy(), name).SerializeToString())
    with open(os.path.join(data, "output_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(ref.numpy(), "h").SerializeToString())


if __name__ == "__main__":
    main()
