"""The weight blob carries what the compiled code reads, not a constant twice:
`smelt compile --stats` reports at most 1.05x the model's initializer bytes
(folding and packing add a few constants) for models whose ops read only
compile-time copies of some weights (an LSTM's transposed W and R: the originals
stayed in the blob, 1.54x the model's weights, until unread parameters were
bound to no slot).

usage: check_weight_bytes.py SMELT MODEL_DIR...
"""
import re
import subprocess
import sys

import onnx
from onnx import numpy_helper


def initializer_bytes(path):
    m = onnx.load(path)
    return sum(numpy_helper.to_array(t).nbytes for t in m.graph.initializer), len(m.graph.initializer)


def main():
    smelt, dirs = sys.argv[1], sys.argv[2:]
    fails = 0
    for d in dirs:
        model = d + "/model.onnx"
        out = subprocess.run([smelt, "compile", model, "--stats"], capture_output=True, text=True)
        m = re.search(r"weight bytes: (\d+)", out.stdout + out.stderr)
        if out.returncode or not m:
            print(f"FAIL {d}: compile --stats gave no weight bytes\n{out.stdout}{out.stderr}")
            fails += 1
            continue
        have, (want, n) = int(m.group(1)), initializer_bytes(model)
        limit = int(1.05 * want) + 64 * n
        ok = have <= limit
        fails += not ok
        print(f"{'PASS' if ok else 'FAIL'} {d}: weight blob {have} bytes, initializers {want} "
              f"({n} tensors; limit {limit})")
    print(f"{len(dirs) - fails} passed, {fails} failed")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
