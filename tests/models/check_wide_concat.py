#!/usr/bin/env python3
"""A Concat of 150 inputs (graph inputs and constants) compiles and matches
numpy at -O0 and -O2: split_args turns it into a tree of Concats that fit a
generated function.

usage: check_wide_concat.py SMELT WORK_DIR      (Debian's python3: onnx, numpy)
"""
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

WIDE = 150
N_INPUTS = 5  # the rest are constants


def build(folder):
    rng = np.random.default_rng(7)
    shapes = [(2, 1 + i % 3, 4) for i in range(WIDE)]
    inputs, inits, names, feeds = [], [], [], []
    for i, shape in enumerate(shapes):
        name = f"part{i}"
        data = rng.standard_normal(shape).astype(np.float32)
        if i < N_INPUTS:
            inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, shape))
            feeds.append(data)
        else:
            inits.append(numpy_helper.from_array(data, name))
        names.append((name, data))
    expected = np.concatenate([d for _, d in names], axis=1)
    node = helper.make_node("Concat", [n for n, _ in names], ["y"], name="wide", axis=1)
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, expected.shape)
    graph = helper.make_graph([node], "wide_concat", inputs, [out], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    os.makedirs(os.path.join(folder, "test_data_set_0"), exist_ok=True)
    onnx.save(model, os.path.join(folder, "model.onnx"))
    for i, data in enumerate(feeds):
        with open(os.path.join(folder, "test_data_set_0", f"input_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(data, f"part{i}").SerializeToString())
    with open(os.path.join(folder, "test_data_set_0", "output_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(expected, "y").SerializeToString())


def main():
    smelt, work = sys.argv[1], sys.argv[2]
    folder = os.path.join(work, "wide_concat")
    build(folder)
    failed = 0
    for level in ("-O0", "-O2"):
        r = subprocess.run([smelt, "check", "--compiled", level, folder],
                           capture_output=True, text=True)
        ok = r.returncode == 0
        failed += not ok
        print(f"{'ok' if ok else 'FAIL'} wide_concat {level}")
        if not ok:
            print(r.stdout + r.stderr)
    print(f"{2 - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
