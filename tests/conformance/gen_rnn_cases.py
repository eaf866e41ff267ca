#!/usr/bin/env python3
"""Node tests for RNN, GRU and LSTM beyond the ONNX node tests, in the ONNX
backend-test layout (<case>/model.onnx, <case>/test_data_set_0/*.pb), with
expected outputs from ONNX Runtime (not from smelt, and not from onnx's own
reference, which ignores sequence_lens, clip, activations and input_forget).

The ONNX node tests only use the default activations, full-length
sequences (but one) and layout 0.  These cases cover the rest: every
activation with activation_alpha/beta, clip, sequence_lens shorter than the
sequence in every direction, layout 1, input_forget, linear_before_reset 0
and 1, initial states, peepholes, omitted outputs, float64 (GRU; onnxruntime's LSTM has no float64).

Run by ctest (conformance/rnn_cases_*) with the pyenv python3 (onnx and
onnxruntime from PyPI, installed by scripts/setup.sh).
"""
import argparse
import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper, numpy_helper, TensorProto

GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}


def ort_run(model, feeds):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def expected_outputs(model, feeds, layout, node_outputs):
    """ONNX Runtime's outputs; it refuses layout 1, so a layout-1 case runs
    as its layout-0 twin on transposed inputs, outputs transposed back."""
    if not layout:
        return ort_run(model, feeds)
    twin = onnx.ModelProto()
    twin.CopyFrom(model)
    for a in twin.graph.node[0].attribute:
        if a.name == "layout":
            a.i = 0
    for vi in twin.graph.input:  # shapes as the twin sees them
        if vi.name in ("X", "initial_h", "initial_c"):
            dims = vi.type.tensor_type.shape.dim
            dims[0].dim_value, dims[1].dim_value = dims[1].dim_value, dims[0].dim_value
    for vi in twin.graph.output:
        dims = vi.type.tensor_type.shape.dim
        old = [d.dim_value for d in dims]
        new = [old[1], old[2], old[0], old[3]] if len(old) == 4 else [old[1], old[0], old[2]]
        for d, v in zip(dims, new):
            d.dim_value = v
    tf = {n: (np.swapaxes(v, 0, 1) if n in ("X", "initial_h", "initial_c") else v)
          for n, v in feeds.items()}
    res = ort_run(twin, {n: np.ascontiguousarray(v) for n, v in tf.items()})
    outs = [n for n in node_outputs if n]
    return [np.ascontiguousarray(np.transpose(r, (2, 0, 1, 3)) if n == "Y" else np.swapaxes(r, 0, 1))
            for n, r in zip(outs, res)]


def write_case(out, name, model, inputs, outputs):
    d = os.path.join(out, name)
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    onnx.save(model, os.path.join(d, "model.onnx"))
    for kind, items in (("input", inputs), ("output", outputs)):
        for i, (n, a) in enumerate(items):
            with open(os.path.join(d, "test_data_set_0", "%s_%d.pb" % (kind, i)), "wb") as f:
                f.write(numpy_helper.from_array(a, n).SerializeToString())


def rnn_case(out, name, op, rng, T=5, N=3, I=4, H=6, direction="forward", layout=0,
             lens=None, init=False, bias=True, peep=False, outputs=("Y", "Y_h", "Y_c"),
             dtype=np.float32, opset=22, **attrs):
    D = 2 if direction == "bidirectional" else 1
    G = GATES[op]
    x_shape = (N, T, I) if layout else (T, N, I)
    s_shape = (N, D, H) if layout else (D, N, H)
    vals = {
        "X": rng.standard_normal(x_shape),
        "W": rng.standard_normal((D, G * H, I)) * 0.5,
        "R": rng.standard_normal((D, G * H, H)) * 0.5,
        "B": rng.standard_normal((D, 2 * G * H)) * 0.5 if bias else None,
        "sequence_lens": np.array(lens, np.int32) if lens is not None else None,
        "initial_h": rng.standard_normal(s_shape) if init else None,
        "initial_c": rng.standard_normal(s_shape) if init and op == "LSTM" else None,
        "P": rng.standard_normal((D, 3 * H)) * 0.5 if peep else None,
    }
    order = ["X", "W", "R", "B", "sequence_lens", "initial_h"] + (["initial_c", "P"] if op == "LSTM" else [])
    node_inputs, feeds, graph_inputs = [], [], []
    for n in order:
        v = vals[n]
        if v is None:
            node_inputs.append("")
            continue
        if n != "sequence_lens":
            v = v.astype(dtype)
        node_inputs.append(n)
        feeds.append((n, v))
        et = helper.np_dtype_to_tensor_dtype(v.dtype)
        graph_inputs.append(helper.make_tensor_value_info(n, et, list(v.shape)))
    while node_inputs and node_inputs[-1] == "":
        node_inputs.pop()
    names = ["Y", "Y_h", "Y_c"][: 3 if op == "LSTM" else 2]
    node_outputs = [n if n in outputs else "" for n in names]
    while node_outputs and node_outputs[-1] == "":
        node_outputs.pop()
    node = helper.make_node(op, node_inputs, node_outputs, hidden_size=H, direction=direction,
                            **({"layout": layout} if opset >= 14 else {}), **attrs)
    et = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    y_shape = [N, T, D, H] if layout else [T, D, N, H]
    shapes = {"Y": y_shape, "Y_h": list(s_shape), "Y_c": list(s_shape)}
    graph_outputs = [helper.make_tensor_value_info(n, et, shapes[n]) for n in node_outputs if n]
    graph = helper.make_graph([node], name, graph_inputs, graph_outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    if dtype == np.float32:
        results = expected_outputs(model, dict(feeds), layout, node_outputs)
    else:  # onnxruntime has no float64 RNN kernels: its float32 result, widened
        twin = onnx.ModelProto()
        twin.CopyFrom(model)
        for vi in list(twin.graph.input) + list(twin.graph.output):
            if vi.type.tensor_type.elem_type == et:
                vi.type.tensor_type.elem_type = TensorProto.FLOAT
        f32 = {n: (v.astype(np.float32) if v.dtype == dtype else v) for n, v in feeds}
        results = [r.astype(dtype) for r in expected_outputs(twin, f32, layout, node_outputs)]
    expected = [(n, r) for n, r in zip([n for n in node_outputs if n], results)]
    write_case(out, name, model, feeds, expected)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    rng = np.random.default_rng(14)
    acts_lstm = ["HardSigmoid", "ScaledTanh", "Softsign", "Sigmoid", "Elu", "Softplus"]
    rnn_case(args.out, "lstm_bidir_layout1_lens_acts", "LSTM", rng, direction="bidirectional",
             layout=1, lens=[5, 2, 4], init=True, peep=True, activations=acts_lstm,
             activation_alpha=[0.3, 0.9, 1.2], activation_beta=[0.4, 0.7])
    rnn_case(args.out, "lstm_reverse_lens_clip_forget", "LSTM", rng, direction="reverse",
             lens=[3, 5, 1], init=True, peep=True, clip=0.8, input_forget=1)
    rnn_case(args.out, "lstm_forward_lens_y_c_only", "LSTM", rng, lens=[4, 5, 2],
             outputs=("Y_c",), bias=False)
    rnn_case(args.out, "lstm_opset7_bidir", "LSTM", rng, direction="bidirectional", opset=7,
             init=True)
    rnn_case(args.out, "gru_reverse_lens_lbr0", "GRU", rng, direction="reverse",
             lens=[2, 5, 3], init=True, linear_before_reset=0)
    rnn_case(args.out, "gru_bidir_layout1_lbr1_acts", "GRU", rng, direction="bidirectional",
             layout=1, lens=[5, 1, 3], init=True, linear_before_reset=1,
             activations=["Sigmoid", "Affine", "HardSigmoid", "LeakyRelu"],
             activation_alpha=[0.6, 0.25, 0.05], activation_beta=[0.1, 0.45], clip=2.5)
    rnn_case(args.out, "gru_forward_y_h_only_f64", "GRU", rng, outputs=("Y_h",), dtype=np.float64,
             lens=[5, 4, 1], activations=["Sigmoid", "Tanh"])
    rnn_case(args.out, "rnn_bidir_lens_acts", "RNN", rng, direction="bidirectional",
             lens=[1, 5, 3], init=True, activations=["Relu", "ThresholdedRelu"],
             activation_alpha=[0.1])
    rnn_case(args.out, "rnn_layout1_reverse_clip", "RNN", rng, direction="reverse", layout=1,
             lens=[4, 2, 5], clip=0.5, activations=["Tanh"])
    # hidden 64: each step's work split over two tasks by hidden unit (h double-buffered)
    rnn_case(args.out, "lstm_split_units_bidir_lens", "LSTM", rng, T=6, N=3, I=5, H=64,
             direction="bidirectional", lens=[6, 2, 1], init=True, peep=True, clip=3.0)
    rnn_case(args.out, "lstm_split_units_layout1", "LSTM", rng, T=4, N=2, I=3, H=96, layout=1,
             lens=[1, 4], init=True)
    print("gen_rnn_cases: wrote 11 cases to %s" % args.out)


if __name__ == "__main__":
    main()
