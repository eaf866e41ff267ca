#!/usr/bin/env python3
"""`smelt quantize` (static post-training quantization, QDQ form) on the
float models of gen_quant_models.py (the small CNN: conv+relu, maxpool,
strided conv, residual add, global pool, gemm; the attention + MLP block:
MatMuls with constant and computed B), calibrated on 8 random inputs given
as .npy files (--calib) with --reduce-range (7-bit weights: see
gen_quant_models.py on why ONNX Runtime is no oracle with 8-bit weights on
CPUs without VNNI).  Checks:

  1. the model passes onnx.checker (full check);
  2. it is the QDQ form onnxruntime.quantization.quantize_static writes for
     the same calibration data (the Relus after the CNN's convs removed) (QDQ, per_channel, QUInt8 activations, QInt8
     weights, reduce_range): every quantized weight and bias, its scale and
     zero point, equal to quantize_static's (biases within one step: they
     divide by the activation scale, whose float32 calibration range may
     differ in the last bit between the engines), and every activation scale
     and zero point smelt writes for a tensor quantize_static also quantizes
     within 1e-6 relative;
  3. ONNX Runtime (graph optimizations off: each op as ONNX defines it) and
     smelt (compiled, -O2: fuse_qdq's integer kernels, and the reference
     executor) agree within one quantization step of the output on inputs
     not seen in calibration;
  4. against the float model (ONNX Runtime): the largest difference is
     within TOLERANCE of the float output's largest magnitude, and the CNN's
     top-1 class agrees on at least TOP1_MIN of 32 inputs;
  5. the CNN compiles to smelt's int8 convolution kernel;
  6. bad options and inputs give clear errors.

usage: check_smelt_quantize.py SMELT WORKDIR
"""
import os
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper, numpy_helper
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_quant_models as gq  # noqa: E402

TOLERANCE = {"cnn": 0.10, "mlp": 0.10}  # of max |float output|
TOP1_MIN = 0.90
FAILED = []


def fail(msg):
    print("FAIL: " + msg, flush=True)
    FAILED.append(msg)


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


class Reader(CalibrationDataReader):
    def __init__(self, name, arrays):
        self.it = iter([{name: a} for a in arrays])

    def get_next(self):
        return next(self.it, None)


def ort_run(path, x):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    return s.run(None, {s.get_inputs()[0].name: x})[0]


def smelt_run(smelt, path, x, work, extra):
    np.save(os.path.join(work, "x.npy"), x)
    out = os.path.join(work, "out")
    r = run([smelt, "run", path, "--input", os.path.join(work, "x.npy"), "--output-dir", out] + extra)
    if r.returncode != 0:
        fail("smelt run %s %s: %s" % (path, extra, r.stderr))
        return None
    name = onnx.load(path).graph.output[0].name
    return np.load(os.path.join(out, name + ".npy"))


def output_scale(model):
    """The scale of the DequantizeLinear writing the output, or None: the
    MLP's output is a float Add (smelt quantizes no Add)."""
    consts = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    out = model.graph.output[0].name
    for n in model.graph.node:
        if n.output[0] == out and n.op_type == "DequantizeLinear":
            return float(consts[n.input[1]])
    return None


def compare_with_ort_quantizer(name, mine, theirs):
    a = {t.name: numpy_helper.to_array(t) for t in mine.graph.initializer}
    b = {t.name: numpy_helper.to_array(t) for t in theirs.graph.initializer}
    weights = [k for k in a if k.endswith("_quantized")]
    if not weights:
        fail("%s: no quantized weights" % name)
    for k in weights:
        if k not in b:
            fail("%s: quantize_static has no %s" % (name, k))
            continue
        is_bias = a[k].dtype == np.int32
        tol = 1 if is_bias else 0
        if a[k].shape != b[k].shape or np.abs(a[k].astype(np.int64) - b[k].astype(np.int64)).max() > tol:
            fail("%s: %s differs from quantize_static's" % (name, k))
        base = k[:-len("_quantized")]
        for s in ([k + "_scale", k + "_zero_point"] if is_bias else [base + "_scale", base + "_zero_point"]):
            rtol = 1e-6 if is_bias else 0
            if s not in b or not np.allclose(a[s], b[s], rtol=rtol, atol=0):
                fail("%s: %s differs from quantize_static's" % (name, s))
    acts = [k for k in a if k.endswith("_scale") and a[k].ndim == 0]
    shared = [k for k in acts if k in b]
    for k in shared:
        zp = k[:-len("_scale")] + "_zero_point"
        if not np.allclose(a[k], b[k], rtol=1e-6, atol=0) or abs(int(a[zp]) - int(b[zp])) > 0:
            fail("%s: activation %s = %s, zero point %s; quantize_static: %s, %s"
                 % (name, k, a[k], a[zp], b[k], b[zp]))
    print("%s: %d quantized weights and biases equal to quantize_static's, %d of %d activation "
          "scales compared" % (name, len(weights), len(shared), len(acts)))
    if len(shared) < 2:
        fail("%s: fewer than 2 activation scales in common with quantize_static" % name)


def check_model(smelt, work, name, model, shape):
    rng = np.random.default_rng(7)
    d = os.path.join(work, name)
    calib = os.path.join(d, "calib")
    os.makedirs(calib, exist_ok=True)
    fp32, q, q_ort = (os.path.join(d, f) for f in ("fp32.onnx", "q.onnx", "q_ort.onnx"))
    onnx.save(model, fp32)
    arrays = [rng.standard_normal(shape).astype(np.float32) for _ in range(8)]
    for i, a in enumerate(arrays):
        np.save(os.path.join(calib, "sample_%02d.npy" % i), a)
    r = run([smelt, "quantize", fp32, "-o", q, "--calib", calib, "--reduce-range"])
    print(r.stderr.strip())
    if r.returncode != 0:
        fail("%s: smelt quantize: %s" % (name, r.stderr))
        return
    mq = onnx.load(q)
    onnx.checker.check_model(mq, full_check=True)
    ops = [n.op_type for n in mq.graph.node]
    if name == "cnn" and "Relu" in ops:
        fail("cnn: a Relu after a quantized conv stays (quantize_static removes it)")
    quantize_static(fp32, q_ort, Reader(model.graph.input[0].name, arrays), quant_format=QuantFormat.QDQ,
                    per_channel=True, activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                    reduce_range=True)
    compare_with_ort_quantizer(name, mq, onnx.load(q_ort))
    step = output_scale(mq)
    float_out = step is None
    worst_ort = worst_ref = worst_fp = 0.0
    top1 = total = 0
    for k in range(32 if name == "cnn" else 4):
        x = rng.standard_normal(shape).astype(np.float32)
        want = ort_run(q, x)
        ref = ort_run(fp32, x)
        for extra, label in (([], "compiled"), (["--reference"], "reference")):
            if k >= 4 and extra:
                continue
            got = smelt_run(smelt, q, x, d, extra)
            if got is None:
                return
            diff = float(np.abs(got - want).max())
            if label == "compiled":
                worst_ort = max(worst_ort, diff)
            else:
                worst_ref = max(worst_ref, diff)
        worst_fp = max(worst_fp, float(np.abs(want - ref).max()) / float(np.abs(ref).max()))
        if name == "cnn":
            top1 += int((want.argmax(axis=1) == ref.argmax(axis=1)).sum())
            total += want.shape[0]
    # one output step; a float output (after a float Add of dequantized
    # values): 1e-5, float32 roundings of the float ops only
    tol = 1e-5 if float_out else step * 1.0001 + 1e-6
    print("%s: output %s; smelt vs ONNX Runtime: compiled %.6g, reference %.6g; "
          "vs the float model: %.4f of its largest output%s" % (
              name, "float" if float_out else "step %.6g" % step, worst_ort, worst_ref, worst_fp,
              ", top-1 %d/%d" % (top1, total) if total else ""))
    if worst_ort > tol or worst_ref > tol:
        fail("%s: smelt and ONNX Runtime differ by more than %.6g" % (name, tol))
    if worst_fp > TOLERANCE[name]:
        fail("%s: %.4f from the float model, more than %.2f" % (name, worst_fp, TOLERANCE[name]))
    if total and top1 < TOP1_MIN * total:
        fail("%s: top-1 agrees on %d of %d" % (name, top1, total))
    if name == "cnn":
        r = run([smelt, "compile", q, "--dump-ir=c"])
        if "smelt_uk_qgemm_u8s8(" not in r.stdout + r.stderr:
            fail("cnn: the quantized convolutions do not run smelt.qgemm_u8s8")


def expect_error(smelt, args, rc, text):
    r = run([smelt, "quantize"] + args)
    if r.returncode != rc or text not in r.stderr:
        fail("smelt quantize %s: exit %d, stderr %r; want exit %d and %r"
             % (" ".join(args), r.returncode, r.stderr, rc, text))


def check_errors(smelt, work):
    d = os.path.join(work, "cnn")
    fp32, q = os.path.join(d, "fp32.onnx"), os.path.join(d, "q.onnx")
    out = os.path.join(work, "err.onnx")
    expect_error(smelt, [fp32], 2, "usage: smelt quantize")
    expect_error(smelt, [fp32, "-o", out, "--samples", "0"], 2, "--samples")
    expect_error(smelt, [fp32, "-o", out, "--bogus"], 2, "unknown option '--bogus'")
    expect_error(smelt, [fp32, "-o", out, "--calib", d, "--seed", "3"], 2, "--calib takes the inputs")
    expect_error(smelt, [fp32, "-o", out, "--calib", os.path.join(work, "missing")], 1,
                 "cannot open the folder")
    expect_error(smelt, [q, "-o", out], 1, "the model is quantized already")
    bad = os.path.join(work, "bad_calib")
    os.makedirs(bad, exist_ok=True)
    np.save(os.path.join(bad, "a.npy"), np.zeros((2, 3, 20), np.float32))
    expect_error(smelt, [fp32, "-o", out, "--calib", bad], 1, "model input 'x'")
    nan = os.path.join(work, "nan_calib")
    os.makedirs(nan, exist_ok=True)
    x = np.zeros((2, 3, 20, 20), np.float32)
    x[0, 0, 0, 0] = np.nan
    np.save(os.path.join(nan, "a.npy"), x)
    expect_error(smelt, [fp32, "-o", out, "--calib", nan], 1, "holds nan")
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [4])],
                          [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [4])])
    relu = os.path.join(work, "relu.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), relu)
    expect_error(smelt, [relu, "-o", out], 1, "nothing to quantize")
    old = os.path.join(work, "opset12.onnx")
    m12 = onnx.load(fp32)
    m12.opset_import[0].version = 12
    onnx.save(m12, old)
    expect_error(smelt, [old, "-o", out], 1, "needs opset 13")


def main():
    smelt, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    check_model(smelt, work, "cnn", gq.cnn_fp32(), (2, 3, 20, 20))
    check_model(smelt, work, "mlp", gq.mlp_fp32(), (2, 6, 32))
    check_errors(smelt, work)
    print("check_smelt_quantize: %s" % ("%d failures" % len(FAILED) if FAILED else "ok"))
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
