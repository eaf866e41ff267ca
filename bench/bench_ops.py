#!/usr/bin/env python3
"""Single-operator latency: smelt's default schedules, smelt with tuning
records (when --records is given) and ONNX Runtime, same machine, same run,
interleaved (each op is measured in --rounds rounds of default, tuned, ORT;
the figure is the median of the rounds' medians, or with --best the best
round's median).  Prints the machine facts,
the measured fp32 FMA peak and a Markdown table with GFLOP/s and % of peak.

usage: bench_ops.py SMELT OPS_DIR [--models a,b] [--repeat N] [--threads N]
                    [--rounds N] [--best] [--records FILE.jsonl]
OPS_DIR holds one folder per op with model.onnx (bench/gen_tune_ops.py).
"""
import argparse, math, os, sys

import onnx
from onnx import numpy_helper, shape_inference

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peers import Ort, fma_peak, machine_facts, smelt_bench  # noqa: E402


def gflop(path):
    """Multiply-add work of the Conv/MatMul/Gemm nodes (2 FLOP per MAC), in
    GFLOP; None when the model has none (memory-bound ops)."""
    m = shape_inference.infer_shapes(onnx.load(path))
    shapes = {i.name: list(i.dims) for i in m.graph.initializer}
    for v in list(m.graph.input) + list(m.graph.value_info) + list(m.graph.output):
        shapes[v.name] = [d.dim_value for d in v.type.tensor_type.shape.dim]
    total = 0
    for n in m.graph.node:
        if n.op_type not in ("Conv", "MatMul", "Gemm"):
            continue
        out = math.prod(shapes[n.output[0]])
        if n.op_type == "Conv":
            total += 2 * out * math.prod(shapes[n.input[1]][1:])  # Ci/group * KH * KW per output
        else:
            trans_a = any(a.name == "transA" and a.i for a in n.attribute)
            a = shapes[n.input[0]]
            total += 2 * out * (a[-2] if trans_a else a[-1])
    return total / 1e9 if total else None


def median(xs):
    xs = sorted(x for x in xs if x is not None)
    return xs[len(xs) // 2] if xs else None


def geomean(xs):
    xs = [x for x in xs if x]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else None


def fmt(x, spec=".3f", none="n/a"):
    return none if x is None else format(x, spec)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("smelt")
    ap.add_argument("ops_dir")
    ap.add_argument("--models", default="", help="comma-separated op folder names (default: all)")
    ap.add_argument("--repeat", type=int, default=20, help="timed runs per measurement")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds per op")
    ap.add_argument("--best", action="store_true",
                    help="take the best round's median instead of the median of the rounds "
                         "(on a machine shared with other jobs, load only adds time)")
    ap.add_argument("--records", default="", help="tuning records for `smelt bench --records`")
    a = ap.parse_args()
    names = a.models.split(",") if a.models else sorted(os.listdir(a.ops_dir))
    names = [n for n in names if os.path.exists(os.path.join(a.ops_dir, n, "model.onnx"))]
    tuned = bool(a.records)

    facts = machine_facts(a.smelt)
    peak_threads = sorted({1, 2, a.threads})
    peak = fma_peak(peak_threads)
    rows, notes = [], []
    for name in names:
        print("measuring " + name, file=sys.stderr, flush=True)
        path = os.path.join(a.ops_dir, name, "model.onnx")
        ort = Ort(path, a.threads)
        d_ms, t_ms, o_ms = [], [], []
        for _ in range(a.rounds):
            ms, err = smelt_bench(a.smelt, path, a.repeat, a.threads)
            if err:
                notes.append("%s default: %s" % (name, err.splitlines()[-1]))
                break
            d_ms.append(ms)
            if tuned:
                ms, err = smelt_bench(a.smelt, path, a.repeat, a.threads, ["--records", a.records])
                if err and "unknown option" in err:
                    notes.append("this smelt has no `bench --records` yet: no tuned figures")
                    tuned = False
                elif err:
                    notes.append("%s tuned: %s" % (name, err.splitlines()[-1]))
                t_ms.append(ms)
            o_ms.append(ort.median(a.repeat))
        pick = (lambda xs: min((x for x in xs if x is not None), default=None)) if a.best else median
        rows.append((name, gflop(path), pick(d_ms), pick(t_ms), pick(o_ms)))
        # the peak again after each op: on a shared machine the largest figure is the closest
        peak = {t: max(v, fma_peak([t], runs=1)[t]) for t, v in peak.items()}

    print(facts)
    print("- load average after the run: " + " ".join(open("/proc/loadavg").read().split()[:3]))
    print("- fp32 FMA peak (bench/fma_peak.c, best of before and after each op): " +
          ", ".join("%.0f GFLOP/s on %d thread%s" % (peak[t], t, "s" * (t > 1)) for t in peak_threads))
    print("- threads %d, %d rounds x %d timed runs per engine and op, interleaved; "
          "%s of the rounds' medians%s" % (a.threads, a.rounds, a.repeat, "best" if a.best else "median",
                                               "; records " + a.records if a.records else ""))
    print()
    rec = bool(a.records)
    head = ["op", "GFLOP", "default ms"] + (["tuned ms"] if rec else []) + ["ORT ms", "default/ORT"]
    head += (["tuned/ORT", "tuned speed-up"] if rec else [])
    head += ["default GFLOP/s (% peak)"] + (["tuned GFLOP/s (% peak)"] if rec else []) + ["ORT GFLOP/s (% peak)"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    ratios = {"d": [], "t": [], "s": []}
    for name, g, d, t, o in rows:
        def rate(ms):
            if g is None or not ms:
                return "-"
            r = g / (ms / 1e3)
            return "%.1f (%.0f%%)" % (r, 100 * r / peak[a.threads])

        dr = d / o if d and o else None
        tr = t / o if t and o else None
        sp = d / t if d and t else None
        ratios["d"].append(dr)
        ratios["t"].append(tr)
        ratios["s"].append(sp)
        row = [name, fmt(g, ".4f", "-"), fmt(d)] + ([fmt(t)] if rec else []) + [fmt(o), fmt(dr, ".2f")]
        row += ([fmt(tr, ".2f"), fmt(sp, ".2f")] if rec else [])
        row += [rate(d)] + ([rate(t)] if rec else []) + [rate(o)]
        print("| " + " | ".join(row) + " |")
    gm = ["**geometric mean**", "", "", ""] + ([""] if rec else [])
    gm += ["**%s**" % fmt(geomean(ratios["d"]), ".2f")]
    if rec:
        gm += ["**%s**" % fmt(geomean(ratios["t"]), ".2f"), "**%s**" % fmt(geomean(ratios["s"]), ".2f")]
    gm += [""] * (len(head) - len(gm))
    print("| " + " | ".join(gm) + " |")
    for n in notes:
        print("\nnote: " + n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
