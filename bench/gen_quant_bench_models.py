#!/usr/bin/env python3
"""Quantize fp32 benchmark models (tests/models/gen_models.py output) with
onnxruntime.quantization: CNNs with quantize_static (QDQ, per-channel s8
weights, u8 activations, calibrated on seeded random inputs), transformers
(--dynamic) with quantize_dynamic (DynamicQuantizeLinear -> MatMulInteger
-> Cast/Mul, s8 weights per tensor), both with reduce_range=True (7-bit
weights, see docs/quantization.md).  Writes OUT/<name>_int8/model.onnx
beside a symlink OUT/<name>/ to the fp32 model, so bench/bench_models.py
times both in one run.

usage: gen_quant_bench_models.py FP32_MODELS_DIR OUT [--models resnet50,...]
                                 [--dynamic bert_base_like,...] [--calib N]
"""
import argparse, os, sys

import numpy as np
import onnx
from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType, quantize_dynamic,
                                      quantize_static)


class RandomReader(CalibrationDataReader):
    def __init__(self, model, count, seed):
        rng = np.random.default_rng(seed)
        feeds = []
        for _ in range(count):
            feed = {}
            for i in model.graph.input:
                shape = [d.dim_value or 1 for d in i.type.tensor_type.shape.dim]
                feed[i.name] = rng.standard_normal(shape).astype(np.float32)
            feeds.append(feed)
        self.it = iter(feeds)

    def get_next(self):
        return next(self.it, None)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("fp32_dir")
    ap.add_argument("out")
    ap.add_argument("--models", default="resnet50")
    ap.add_argument("--dynamic", default="", help="models for quantize_dynamic")
    ap.add_argument("--calib", type=int, default=4)
    a = ap.parse_args()
    dynamic = [n for n in a.dynamic.split(",") if n]
    for name in [n for n in a.models.split(",") if n] + dynamic:
        src = os.path.abspath(os.path.join(a.fp32_dir, name, "model.onnx"))
        link = os.path.join(a.out, name)
        os.makedirs(link, exist_ok=True)
        if not os.path.exists(os.path.join(link, "model.onnx")):
            os.symlink(src, os.path.join(link, "model.onnx"))
        qdir = os.path.join(a.out, name + "_int8")
        os.makedirs(qdir, exist_ok=True)
        if name in dynamic:
            quantize_dynamic(src, os.path.join(qdir, "model.onnx"), weight_type=QuantType.QInt8,
                             reduce_range=True, op_types_to_quantize=["MatMul"])
            print("wrote", qdir)
            continue
        quantize_static(src, os.path.join(qdir, "model.onnx"),
                        RandomReader(onnx.load(src, load_external_data=False), a.calib, 5),
                        quant_format=QuantFormat.QDQ, per_channel=True,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                        reduce_range=True)
        print("wrote", qdir)


if __name__ == "__main__":
    sys.exit(main())
