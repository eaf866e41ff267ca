#!/usr/bin/env python3
"""Token-by-token decoding with a key/value cache: smelt against the
full-sequence model, and smelt's time per token beside ONNX Runtime's.

CASE is a decoder folder written by tests/models/gen_models.py
(gpt2_tiny_decoder, gpt2_decoder): model.onnx decodes one token against
past_key_L/past_value_L [1, heads, past, head_dim] and returns the logits and
present_* (past + 1 rows); full_model.onnx is the same weights over a whole
sequence (logits and the cache).  smelt compiles the decoder ONCE for every
past length in --past-range (--dim past=MIN..MAX) and the full model once for
the prompt's length.

  --check N: a random prompt (--prompt tokens) read by smelt's full model,
      then N tokens decoded one at a time by smelt's decoder, each step's
      logits compared with ONNX Runtime's full-sequence logits at that
      position (all prompt + N tokens in one run); fails on a mismatch.
  --bench PAST,...: per past length, smelt's and ONNX Runtime's decoder on
      the same inputs (ONNX Runtime in a process of its own), interleaved in
      --rounds rounds of --repeat runs: medians and minima of the time per
      token, and their ratio.

  SMELT_LIB=build/libsmelt.so PYTHONPATH=python python3 bench/decode.py \\
      /tmp/models/gpt2_decoder --check 16 --bench 16,128,512,1000 --threads 2
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))
import smelt  # noqa: E402


def kv_inputs(model):
    return [i.name for i in model.inputs if i.name.startswith("past_")]


def ort_session(path, threads):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def decoder_feed(ids, position, cache, names):
    feed = {"input_ids": np.array([[ids]], np.int64),
            "position_ids": np.array([[position]], np.int64)}
    feed.update(zip(names, cache))
    return feed


def check(a, dec, full_path, past_names):
    """Decode a.check tokens after a prompt; every step's logits against ONNX
    Runtime's full-sequence logits.  Returns the worst relative error."""
    rng = np.random.default_rng(0)
    vocab = dec.outputs[0].shape[-1]
    total = a.prompt + a.check
    tokens = rng.integers(0, vocab, (1, total)).astype(np.int64)
    want = ort_session(full_path, a.threads).run(None, {"input_ids": tokens})[0][0]
    full = smelt.load(full_path).compile(threads=a.threads, dims={"seq": a.prompt})
    cache = list(full.run({"input_ids": tokens[:, :a.prompt]}).values())[1:]
    worst = 0.0
    for step in range(a.check):
        pos = a.prompt + step
        res = list(dec.run(decoder_feed(tokens[0, pos], pos, cache, past_names)).values())
        got, ref = res[0][0, 0], want[pos]
        err = float(np.max(np.abs(got - ref)) / max(1e-6, float(np.max(np.abs(ref)))))
        worst = max(worst, err)
        ok = np.allclose(got, ref, rtol=a.rtol, atol=a.atol)
        print(f"  step {step:3d} past {pos:4d}: max |diff| {np.max(np.abs(got - ref)):.2e} "
              f"(relative to max |logit| {err:.1e}) {'ok' if ok else 'MISMATCH'}", flush=True)
        if not ok:
            raise SystemExit(f"decode step {step} (past {pos}) differs from the full-sequence model")
        cache = list(res[1:])
    return worst


def random_cache(dec, past_names, past, rng):
    """Random past_* tensors [1, heads, past, head_dim] (a compiled model's
    input shapes hold the run-time dim's maximum, so dim 2 is set here)."""
    shapes = {i.name: list(i.shape) for i in dec.inputs}
    return [rng.standard_normal(shapes[n][:2] + [past] + shapes[n][3:]).astype(np.float32)
            for n in past_names]


def max_positions(model_path):
    """Rows of the position embedding: the table the Gather of position_ids reads."""
    import onnx
    g = onnx.load(model_path).graph
    tables = {t.name: t.dims[0] for t in g.initializer}
    for n in g.node:
        if n.op_type == "Gather" and n.input[1] == "position_ids" and n.input[0] in tables:
            return tables[n.input[0]]
    raise SystemExit(f"{model_path}: no Gather of position_ids; give --past-range")


def timed(fn, repeat):
    t = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        t.append((time.perf_counter() - t0) * 1e3)
    return t


def ort_worker(conn, model_path, threads):
    """ONNX Runtime in a process of its own: its threads and smelt's never
    share a process (both pools pin and spin; in one process each slowed
    the other's next run).  Takes ("feed", feed) and ("time", n) messages."""
    sess = ort_session(model_path, threads)
    feed = None
    while True:
        msg = conn.recv()
        if msg[0] == "feed":
            feed = msg[1]
            conn.send(sess.run(None, feed))
        elif msg[0] == "time":
            conn.send(timed(lambda: sess.run(None, feed), msg[1]))
        else:
            return


def bench(a, dec, model_path, past_names):
    import multiprocessing as mp
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe()
    worker = ctx.Process(target=ort_worker, args=(child, model_path, a.threads), daemon=True)
    worker.start()
    rng = np.random.default_rng(1)
    rows = []
    try:
        for past in a.bench:
            feed = decoder_feed(7, past, random_cache(dec, past_names, past, rng), past_names)
            parent.send(("feed", feed))
            got, ref = list(dec.run(feed).values()), parent.recv()
            if not all(np.allclose(x, y, rtol=a.rtol, atol=a.atol) for x, y in zip(got, ref)):
                raise SystemExit(f"past {past}: smelt's outputs differ from ONNX Runtime's")
            ts, to = [], []
            for _ in range(a.rounds):  # interleaved blocks: the machine's drift hits both
                time.sleep(a.settle)  # the other engine's threads stop spinning first
                ts += timed(lambda: dec.run(feed), a.repeat)
                time.sleep(a.settle)
                parent.send(("time", a.repeat))
                to += parent.recv()
            rows.append((past, statistics.median(ts), min(ts), statistics.median(to), min(to)))
            print(f"  past {past:5d}: smelt {rows[-1][1]:8.3f} ms (min {rows[-1][2]:.3f})  "
                  f"ORT {rows[-1][3]:8.3f} ms (min {rows[-1][4]:.3f})  "
                  f"smelt/ORT {rows[-1][1] / rows[-1][3]:.2f} (minima {rows[-1][2] / rows[-1][4]:.2f})",
                  flush=True)
    finally:
        parent.send(("stop",))
        worker.join(timeout=10)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("case", help="a decoder folder of gen_models.py (model.onnx, full_model.onnx)")
    ap.add_argument("--past-range", default="1..MAX",
                    help="the decoder's run-time past range (MAX: max_pos - 2 of the model)")
    ap.add_argument("--check", type=int, default=0, help="decode N tokens against the full model")
    ap.add_argument("--prompt", type=int, default=4)
    ap.add_argument("--bench", default="", help="comma-separated past lengths to time")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--settle", type=float, default=0.2,
                    help="seconds idle before each block (pools spin after a run)")
    ap.add_argument("--rtol", type=float, default=1e-3)
    ap.add_argument("--atol", type=float, default=1e-4)
    a = ap.parse_args(argv)
    a.bench = [int(x) for x in a.bench.split(",") if x]
    model_path = os.path.join(a.case, "model.onnx")
    full_path = os.path.join(a.case, "full_model.onnx")
    lo, hi = a.past_range.split("..")
    if hi == "MAX":
        hi = max_positions(model_path) - 2  # the new token's position past must be < max_pos
    t0 = time.perf_counter()
    dec = smelt.load(model_path).compile(threads=a.threads, dims={"past": (int(lo), int(hi))})
    print(f"{a.case}: decoder compiled once for past {lo}..{hi} in {time.perf_counter() - t0:.1f} s, "
          f"{a.threads} thread(s)", flush=True)
    past_names = kv_inputs(dec)
    if a.check:
        worst = check(a, dec, full_path, past_names)
        print(f"check: {a.check} decoded tokens match the full-sequence model "
              f"(worst max |diff| / max |logit| {worst:.1e})")
    if a.bench:
        bench(a, dec, model_path, past_names)
    return 0


if __name__ == "__main__":
    sys.exit(main())
