#!/usr/bin/python3
"""The attention block of BERT-base alone, as torch.onnx exports it (opset 13):
inputs q, k, v [1, SEQ, 768] (the projections) and an additive mask
[1, 1, 1, SEQ]; heads split by Reshape + Transpose, Q K^T / sqrt(64) + mask,
Softmax, P V, heads merged.  For bench/bench_models.py and bench/ab_bench.py:

  /usr/bin/python3 bench/gen_attention_block.py --out /tmp/attn_models [--seq 128]
  python3 bench/bench_models.py build/smelt /tmp/attn_models --models attention_block_128
"""
import argparse, math, os

import torch


class Block(torch.nn.Module):
    def __init__(self, heads):
        super().__init__()
        self.heads = heads

    def forward(self, q, k, v, mask):
        b, s, h = q.shape
        d = h // self.heads

        def split(t):
            return t.reshape(b, s, self.heads, d).transpose(1, 2)

        scores = torch.matmul(split(q), split(k).transpose(-1, -2)) / math.sqrt(d)
        probs = torch.softmax(scores + mask, dim=-1)
        return torch.matmul(probs, split(v)).transpose(1, 2).reshape(b, s, h)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--hidden", type=int, default=768)
    ap.add_argument("--heads", type=int, default=12)
    a = ap.parse_args()
    name = "attention_block_%d" % a.seq
    os.makedirs(os.path.join(a.out, name), exist_ok=True)
    x = [torch.randn(1, a.seq, a.hidden) for _ in range(3)] + [torch.zeros(1, 1, 1, a.seq)]
    torch.onnx.export(Block(a.heads), tuple(x), os.path.join(a.out, name, "model.onnx"),
                      input_names=["q", "k", "v", "mask"], output_names=["y"], opset_version=13)
    print(os.path.join(a.out, name, "model.onnx"))


if __name__ == "__main__":
    main()
