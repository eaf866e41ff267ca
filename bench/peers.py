"""Shared pieces of the bench/ scripts: timing smelt (`smelt bench`) and ONNX
Runtime on the same model, the machine facts, and the measured fp32 FMA peak."""
import os, platform, re, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))


def smelt_bench(smelt, model, repeat, threads, extra=()):
    """Runs `smelt bench`; returns (median ms, None) or (None, error text)."""
    cmd = [smelt, "bench", model, "--repeat", str(repeat), "--threads", str(threads), *extra]
    p = subprocess.run(cmd, capture_output=True, text=True)
    m = re.search(r"median ([0-9.]+) ms", p.stdout)
    if p.returncode != 0 or not m:
        return None, (p.stderr.strip() or p.stdout.strip() or "exit %d" % p.returncode)
    return float(m.group(1)), None


def smelt_median(smelt, model, reference, repeat, threads):
    ms, err = smelt_bench(smelt, model, repeat, threads, ["--reference"] if reference else [])
    if ms is None:
        raise RuntimeError("smelt bench %s: %s" % (model, err))
    return ms


class OrtSession:
    """An ONNX Runtime session on seeded random inputs (uniform -1..1, int64 zeros)."""

    def __init__(self, model, threads):
        import numpy as np
        import onnxruntime as ort
        so = ort.SessionOptions()
        so.intra_op_num_threads = threads
        self.sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
        self.feeds = {}
        for i in self.sess.get_inputs():
            shape = [d if isinstance(d, int) else 1 for d in i.shape]
            if "int64" in i.type:
                self.feeds[i.name] = np.zeros(shape, dtype=np.int64)
            else:
                self.feeds[i.name] = np.random.default_rng(1).uniform(-1, 1, shape).astype(np.float32)

    def median(self, repeat, warmup=3):
        for _ in range(warmup):
            self.sess.run(None, self.feeds)
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            self.sess.run(None, self.feeds)
            times.append((time.perf_counter() - t0) * 1e3)
        times.sort()
        return times[len(times) // 2]


class Ort:
    """ONNX Runtime timed in a child process per measurement.  Its worker
    threads spin-wait after each run (ORT's default, kept: it is how ORT is
    deployed); in this process they would keep spinning while the next
    `smelt bench` runs and take a core from it (measured: a 3x3 conv 1.63 ms
    beside an idle session, 2.48 ms right after its runs)."""

    def __init__(self, model, threads):
        import onnxruntime  # noqa: F401  (ImportError here, not in the child)
        self.model, self.threads = model, threads

    def median(self, repeat, warmup=3):
        cmd = [sys.executable, os.path.abspath(__file__), "ort-median", self.model,
               str(repeat), str(self.threads), str(warmup)]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError("onnxruntime on %s: %s" % (self.model, p.stderr.strip()[-2000:]))
        return float(p.stdout.split()[-1])


def ort_median(model, repeat, threads):
    """Median ms of ONNX Runtime, or None when it is not importable."""
    try:
        return Ort(model, threads).median(repeat)
    except ImportError:
        return None


def cpu_field(name):
    for line in open("/proc/cpuinfo"):
        if line.split(":")[0].strip() == name:
            return line.split(":", 1)[1].strip()
    return platform.processor()


def cpu_name():
    return cpu_field("model name")


def _first_line(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True).stdout.splitlines()[0].strip()
    except (OSError, IndexError):
        return "n/a"


def machine_facts(smelt):
    """One Markdown list of the facts a benchmark table needs next to it."""
    repo = os.path.dirname(os.path.dirname(os.path.abspath(smelt)))
    rev = _first_line(["git", "-C", repo, "describe", "--always", "--dirty"])
    try:
        import onnxruntime
        ort_v = onnxruntime.__version__
    except ImportError:
        ort_v = "not installed"
    return "\n".join([
        "- date: " + time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "- CPU: %s, cpu family %s, model %s, %d cores; load average %s" % (
            cpu_name(), cpu_field("cpu family"), cpu_field("model"), os.cpu_count(),
            " ".join(open("/proc/loadavg").read().split()[:3])),
        "- smelt %s (%s), ONNX Runtime %s, %s, Python %s" % (
            rev, smelt, ort_v, _first_line(["gcc", "--version"]), platform.python_version()),
    ])


def fma_peak(threads_list, runs=5):
    """Measured fp32 FMA peak in GFLOP/s per thread count (bench/fma_peak.c,
    cc -O2 -march=native), the best of `runs` runs of the program."""
    with tempfile.TemporaryDirectory() as d:
        exe = os.path.join(d, "fma_peak")
        subprocess.run(["cc", "-O2", "-march=native", "-pthread", os.path.join(HERE, "fma_peak.c"),
                        "-o", exe], check=True)
        return {t: max(float(subprocess.run([exe, str(t)], check=True, capture_output=True,
                                            text=True).stdout) for _ in range(runs))
                for t in threads_list}


if __name__ == "__main__" and len(sys.argv) == 6 and sys.argv[1] == "ort-median":
    _, _, _model, _repeat, _threads, _warmup = sys.argv
    print(OrtSession(_model, int(_threads)).median(int(_repeat), int(_warmup)))
