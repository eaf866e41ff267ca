#!/usr/bin/python3
"""Generate models/tiny_cnn/: a tiny CNN checked into the repo.

    /usr/bin/python3 tests/models/gen_tiny_cnn.py            # writes models/tiny_cnn/
    /usr/bin/python3 tests/models/gen_tiny_cnn.py --out DIR

Graph (input 1x3x32x32, opset 13, exported without constant folding so that
BatchNormalization stays a separate node):

    Conv 3->8 3x3 -> BatchNormalization -> Relu -> MaxPool 2x2      (8x16x16)
    -> [Conv 8->8 3x3 -> BatchNormalization -> Relu] + skip (Add)   (8x16x16)
    -> Conv 8->16 3x3 stride 2 -> Relu                              (16x8x8)
    -> GlobalAveragePool -> Flatten -> Gemm 16->10                  (1x10)

Reference output is PyTorch's (eval mode). Deterministic: fixed seeds.
Uses the export helpers of gen_models.py (same folder).
"""

import argparse
import os
import shutil
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_models  # noqa: E402

SEED = 1234
OPSET = 13


class TinyCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.pool = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(8)
        self.conv3 = nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.gap = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = self.pool(torch.relu(self.bn1(self.conv1(x))))
        x = x + torch.relu(self.bn2(self.conv2(x)))
        x = torch.relu(self.conv3(x))
        x = torch.flatten(self.gap(x), 1)
        return self.fc(x)


def main(argv=None):
    here = os.path.dirname(os.path.abspath(__file__))
    default_out = os.path.normpath(os.path.join(here, "..", "..", "models", "tiny_cnn"))
    ap = argparse.ArgumentParser(description="generate the tiny_cnn test model")
    ap.add_argument("--out", default=default_out, help="output folder (default: %(default)s)")
    args = ap.parse_args(argv)

    torch.manual_seed(SEED)
    gen = torch.Generator().manual_seed(SEED)
    model = TinyCNN()
    gen_models.randomize_norm_layers(model, gen, conv_linear_bias=True)
    gen_models.calibrate_batchnorm(model, lambda: torch.randn(4, 3, 32, 32, generator=gen))
    x = torch.randn(1, 3, 32, 32, generator=gen)

    # start from a clean folder so no stale files stay behind
    shutil.rmtree(os.path.join(args.out, "test_data_set_0"), ignore_errors=True)
    summary = gen_models.export_case(
        model, (x,), ["input"], ["output"], OPSET, args.out,
        constant_folding=False, training=torch.onnx.TrainingMode.PRESERVE)
    if "BatchNormalization" not in summary["ops"]:
        raise RuntimeError("BatchNormalization was fused away: %r" % summary["ops"])
    print("wrote %s: opset %d, %d bytes, ops %s"
          % (args.out, summary["opset"], summary["model_bytes"],
             ", ".join("%s:%d" % kv for kv in summary["ops"].items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
