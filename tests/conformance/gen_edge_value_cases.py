#!/usr/bin/env python3
"""Node tests of ops at edge values, in the ONNX backend-test layout, with
expected outputs from onnx's reference implementation (ReferenceEvaluator):

- Resize of integer tensors (linear ties at .5, cubic overshooting the
  dtype's range, antialiasing, int64): numpy_helper.saturate_cast rounds
  half to even and saturates; smelt rounded half away from zero and
  wrapped, so a cubic undershoot in uint8 gave 255;
- ArgMax/ArgMin over NaNs (a NaN is the best for both, first or last
  index): compiled code returned the past-the-end index (4 of 4, or -1);
- TopK over NaNs, signed zeros and ties (NaN above everything): compiled
  ranks collided and an index of 6 came out along an axis of 4.

Run by ctest (conformance/edge_value_cases_*) with the pyenv python3 (onnx
from scripts/setup.sh).
"""
import argparse

import numpy as np
from onnx import helper

from gen_quant_cases import write_case

# rows with steps that put linear taps on .5 and a cubic kernel over a jump
IMAGE = [[0, 1, 2, 3, 4], [5, 7, 9, 11, 13], [100, 3, 120, 0, 60], [1, 1, 2, 2, 9]]


def resize_case(out, name, dtype, mode, scales, **attrs):
    x = np.array([[IMAGE]], dtype)
    sc = np.array(scales, np.float32)
    write_case(out, name, 19, helper.make_node("Resize", ["x", "", "sc"], ["y"], mode=mode, **attrs),
               [("x", x), ("sc", sc)], consts=("sc",))


def arg_cases(out):
    """Rows of all NaNs, NaNs among numbers, ties, infinities and signed
    zeros, along the last axis and along axis 0, first and last index."""
    nan, inf = np.nan, np.inf
    rows = np.array([[nan, nan, nan, nan], [1, nan, 3, nan], [nan, 2, nan, 2],
                     [-inf, -inf, -inf, -inf], [inf, nan, inf, 1], [-0.0, 0.0, -1, 0.0],
                     [3, 1, 3, 1]], np.float32)
    for op in ("ArgMax", "ArgMin"):
        for last in (0, 1):
            for axis in (1, 0):
                for dt in (np.float32, np.float16):
                    name = "%s_nan_axis%d_%s%s" % (op.lower(), axis, dt.__name__, "_last" if last else "")
                    write_case(out, name, 13, helper.make_node(op, ["x"], ["y"], axis=axis,
                                                               select_last_index=last),
                               [("x", rows.astype(dt))])


def topk_cases(out):
    """The arg_cases rows, largest and smallest, k of 1, 2 and 4, both axes."""
    nan, inf = np.nan, np.inf
    rows = np.array([[nan, 1, 2, 3], [1, nan, 3, nan], [5, 4, nan, 2], [nan, nan, nan, nan],
                     [-inf, nan, inf, 0], [-0.0, 0.0, -1, 0.0], [3, 1, 3, 1]], np.float32)
    for largest in (1, 0):
        for k in (1, 2, 4):
            for axis in (1, 0):
                for dt in (np.float32, np.float16):
                    name = "topk_nan_%s_k%d_axis%d_%s" % ("largest" if largest else "smallest", k, axis,
                                                          dt.__name__)
                    write_case(out, name, 13, helper.make_node("TopK", ["x", "k"], ["v", "i"],
                                                               largest=largest, axis=axis),
                               [("x", rows.astype(dt)), ("k", np.array([k], np.int64))], consts=("k",))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True)
    a = p.parse_args()
    for dt in (np.uint8, np.int8, np.int32, np.int64):
        n = dt.__name__
        resize_case(a.out, "resize_linear_ties_" + n, dt, "linear", [1, 1, 1.5, 1.75])
        resize_case(a.out, "resize_cubic_overshoot_" + n, dt, "cubic", [1, 1, 1.5, 1.75])
        resize_case(a.out, "resize_linear_antialias_" + n, dt, "linear", [1, 1, 0.6, 0.6], antialias=1)
    resize_case(a.out, "resize_cubic_half_pixel_uint8", np.uint8, "cubic", [1, 1, 2.5, 2.0],
                coordinate_transformation_mode="half_pixel", cubic_coeff_a=-0.5)
    arg_cases(a.out)
    topk_cases(a.out)
    print("gen_edge_value_cases: wrote the cases to %s" % a.out)


if __name__ == "__main__":
    main()
