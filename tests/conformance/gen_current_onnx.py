#!/usr/bin/env python3
"""Write the node tests of the installed onnx package in the ONNX backend-test
layout (<out>/<test name>/model.onnx, test_data_set_N/input_J.pb, output_J.pb),
the way onnx's `backend-test-tools generate-data` does, but only the node
tests (onnx.backend.test.case.node), and without network access.

The PyPI onnx wheel does not ship the node test data, only the generators
(the expected outputs come from onnx's own numpy implementations), so ctest's
conformance/current_onnx_* tests run this first (tests/tests.cmake) with the
python3 that has the current onnx (scripts/setup.sh installs it; the Debian
python3 has onnx 1.12, whose data libonnx-testdata already ships).

Inputs and outputs that are sequences, maps or optionals are written as onnx
writes them (SequenceProto, OptionalProto: smelt reads the first two; maps it
refuses as unsupported).  `--list` prints the
test names and writes nothing.

With --shards N the tests go round-robin (sorted by name) into
<out>/shard0 .. shard<N-1>, so the compiled path, which builds C for every
test, can run as N ctest entries side by side (`smelt check` finds tests in
subfolders, so <out> itself still holds them all).

A stamp file <out>/.onnx_version holds the onnx version the data came from;
an existing folder with the same version is left as it is (generation takes a
minute), unless --force.
"""
import argparse
import os
import shutil
import sys


def write_value(f, vtype, value, name):
    from onnx import TensorProto, numpy_helper
    if vtype.HasField("map_type"):
        f.write(numpy_helper.from_dict(value, name).SerializeToString())
    elif vtype.HasField("sequence_type"):
        f.write(numpy_helper.from_list(value, name).SerializeToString())
    elif vtype.HasField("optional_type"):
        f.write(numpy_helper.from_optional(value, name).SerializeToString())
    elif isinstance(value, TensorProto):
        f.write(value.SerializeToString())
    else:
        f.write(numpy_helper.from_array(value, name).SerializeToString())


def write_case(out, case):
    d = os.path.join(out, case.name)
    if os.path.exists(d):
        shutil.rmtree(d)
    os.makedirs(d)
    with open(os.path.join(d, "model.onnx"), "wb") as f:
        f.write(case.model.SerializeToString())
    g = case.model.graph
    for i, (inputs, outputs) in enumerate(case.data_sets):
        ds = os.path.join(d, "test_data_set_%d" % i)
        os.makedirs(ds)
        for j, v in enumerate(inputs):
            with open(os.path.join(ds, "input_%d.pb" % j), "wb") as f:
                write_value(f, g.input[j].type, v, g.input[j].name)
        for j, v in enumerate(outputs):
            with open(os.path.join(ds, "output_%d.pb" % j), "wb") as f:
                write_value(f, g.output[j].type, v, g.output[j].name)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--force", action="store_true")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--shards", type=int, default=1)
    ap.add_argument("--expect-version",
                    help="fail unless onnx is this version (the expected-failure list is "
                         "made for one release)")
    args = ap.parse_args()

    import warnings
    warnings.filterwarnings("ignore")
    import numpy as np
    import onnx
    from onnx.backend.test.case import node

    if args.expect_version and onnx.__version__ != args.expect_version:
        print("gen_current_onnx: this python3 (%s) has onnx %s, but "
              "tests/conformance/expected_failures_current.txt is made for onnx %s: "
              "install that version (python3 -m pip install onnx==%s) or regenerate the "
              "data, check it and update the list and this version in tests/tests.cmake"
              % (sys.executable, onnx.__version__, args.expect_version, args.expect_version),
              file=sys.stderr)
        return 1
    stamp = os.path.join(args.out, ".onnx_version")
    if not args.list and not args.force and os.path.exists(stamp):
        with open(stamp) as f:
            if f.read().strip() == "%s shards=%d" % (onnx.__version__, args.shards):
                print("gen_current_onnx: %s already holds onnx %s's node tests"
                      % (args.out, onnx.__version__))
                return 0
    np.random.seed(0)  # a few generators draw their inputs from numpy's global state
    cases = node.collect_testcases()
    names = sorted(c.name for c in cases)
    if len(set(names)) != len(names):
        print("gen_current_onnx: duplicate test names", file=sys.stderr)
        return 1
    if args.list:
        print("\n".join(names))
        return 0
    if os.path.exists(args.out):
        shutil.rmtree(args.out)
    os.makedirs(args.out)
    order = {name: i for i, name in enumerate(names)}
    for case in cases:
        shard = order[case.name] % args.shards
        write_case(os.path.join(args.out, "shard%d" % shard) if args.shards > 1 else args.out,
                   case)
    with open(stamp, "w") as f:
        f.write("%s shards=%d\n" % (onnx.__version__, args.shards))
    print("gen_current_onnx: wrote %d node tests of onnx %s to %s"
          % (len(cases), onnx.__version__, args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
