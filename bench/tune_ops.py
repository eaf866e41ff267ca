#!/usr/bin/env python3
"""Tune the single-operator set (bench/gen_tune_ops.py) with smelt, model-guided
and random, and report what the search buys (issue 9):

  - per op: tasks, tuning wall time, default and tuned time (sum over the op's
    tasks of the verified records: the same interleaved re-measurement for both);
  - best-so-far against trials, averaged over all tasks, guided vs random, each
    task's curve normalised by the best time either search found for it;
  - the trials the guided search needs to come within 5% of the random search's
    best (the issue's goal: at most 64 when random ran 1,000 trials).

The guided records are merged into OUT/guided.jsonl for
`bench_ops.py SMELT OPS_DIR --records OUT/guided.jsonl` (latency against ONNX
Runtime in the same run).

usage: tune_ops.py SMELT OPS_DIR OUT [--models a,b] [--trials N] [--random-trials N]
                   [--threads N] [--skip-random]
"""
import argparse, json, os, subprocess, sys, time


def run_tune(smelt, model, out, trials, threads, random):
    cmd = [smelt, "tune", model, "-o", out, "--trials", str(trials), "--quiet",
           "--early-stop", str(trials)]
    if threads:
        cmd += ["--threads", str(threads)]
    if random:
        cmd.append("--random")
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True)
    return time.perf_counter() - t0


def load(path):
    recs = []
    with open(path) as f:
        for line in f:
            try:
                recs.append(json.loads(line))
            except ValueError:
                pass
    return recs


def curves(recs):
    """Per task: best ms after each trial (records in measurement order)."""
    out = {}
    for r in recs:
        if r.get("verified"):
            continue
        c = out.setdefault(r["task"], [])
        ms = r["ms"] if r["status"] == "ok" and r["ms"] > 0 else float("inf")
        c.append(min(ms, c[-1]) if c else ms)
    return out


def verified(recs):
    """Per task: (default ms, tuned ms) from the verification records."""
    out = {}
    for r in recs:
        if not r.get("verified") or r["status"] != "ok":
            continue
        d = out.setdefault(r["task"], [None, None])
        if not any(r["knobs"]):
            d[0] = r["ms"]
        d[1] = r["ms"] if d[1] is None else min(d[1], r["ms"])
    return out


def at(curve, t):
    return curve[min(t, len(curve)) - 1] if curve else float("inf")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("smelt")
    ap.add_argument("ops_dir")
    ap.add_argument("out")
    ap.add_argument("--models", help="comma-separated op names (default: all)")
    ap.add_argument("--trials", type=int, default=64, help="guided trials per task")
    ap.add_argument("--random-trials", type=int, default=0,
                    help="random-search trials per task (default: --trials)")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--skip-random", action="store_true")
    a = ap.parse_args()
    names = a.models.split(",") if a.models else sorted(os.listdir(a.ops_dir))
    os.makedirs(a.out, exist_ok=True)
    rtrials = a.random_trials or a.trials
    rows, guided_all, random_all = [], {}, {}
    for n in names:
        model = os.path.join(a.ops_dir, n, "model.onnx")
        g = os.path.join(a.out, n + ".guided.jsonl")
        r = os.path.join(a.out, n + ".random.jsonl")
        for p in (g, r):
            if os.path.exists(p):
                os.remove(p)
        tg = run_tune(a.smelt, model, g, a.trials, a.threads, False)
        tr = None if a.skip_random else run_tune(a.smelt, model, r, rtrials, a.threads, True)
        gr = load(g)
        v = verified(gr)
        default = sum(d for d, _ in v.values() if d)
        tuned = sum(t for _, t in v.values() if t)
        rows.append((n, len(v), tg, tr, default, tuned))
        guided_all.update(curves(gr))
        if tr is not None:
            random_all.update(curves(load(r)))
        print("%-26s %2d tasks  tuned in %6.1f s%s  default %.4f ms  tuned %.4f ms  %.2fx"
              % (n, len(v), tg, "" if tr is None else " (random %6.1f s)" % tr, default, tuned,
                 default / tuned if tuned else 0), flush=True)
    with open(os.path.join(a.out, "guided.jsonl"), "w") as f:
        for n in names:
            with open(os.path.join(a.out, n + ".guided.jsonl")) as src:
                f.write(src.read())

    print("\n| op | tasks | tuning s (guided) | tuning s (random) | default ms | tuned ms | speed-up |")
    print("|---|---|---|---|---|---|---|")
    prod, k = 1.0, 0
    for n, tasks, tg, tr, d, t in rows:
        print("| %s | %d | %.1f | %s | %.4f | %.4f | %.2fx |"
              % (n, tasks, tg, "-" if tr is None else "%.1f" % tr, d, t, d / t if t else 0))
        if d and t:
            prod *= d / t
            k += 1
    if k:
        print("\ngeometric mean speed-up over the defaults: %.2fx (%d ops)" % (prod ** (1 / k), k))

    if not random_all:
        return
    tasks = [t for t in guided_all if t in random_all]
    best = {t: min(at(guided_all[t], 10**9), at(random_all[t], 10**9)) for t in tasks}
    points = [p for p in (1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 512, 1000)
              if p <= max(a.trials, rtrials)]
    print("\nbest-so-far against trials, mean over %d tasks of (best found by either search) /"
          " (best so far); 1.00 = the best either found" % len(tasks))
    print("\n| trials | " + " | ".join(str(p) for p in points) + " |")
    print("|---|" + "---|" * len(points))
    for label, cs, limit in (("guided", guided_all, a.trials), ("random", random_all, rtrials)):
        vals = []
        for p in points:
            if p > limit:
                vals.append("-")
                continue
            q = [best[t] / at(cs[t], p) for t in tasks if best[t] < float("inf")]
            vals.append("%.3f" % (sum(q) / len(q)) if q else "-")
        print("| %s | %s |" % (label, " | ".join(vals)))
    # trials the guided search needs to come within 5% of random's best, per task
    need = []
    for t in tasks:
        target = at(random_all[t], 10**9) * 1.05
        c = guided_all[t]
        hit = next((i + 1 for i, ms in enumerate(c) if ms <= target), None)
        need.append(hit)
    ok = sorted(x for x in need if x is not None)
    if ok:
        print("\nguided trials to come within 5%% of random search's best (%d trials): median %d, "
              "max %d; %d of %d tasks reached it"
              % (rtrials, ok[len(ok) // 2], ok[-1], len(ok), len(need)))


if __name__ == "__main__":
    sys.exit(main())
