"""examples/: the notebook-style scripts run at a small size (each step's
result is checked against NumPy inside the script)."""
import os
import runpy

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))


def test_gemm_schedule_small():
    mod = runpy.run_path(os.path.join(REPO, "examples", "gemm_schedule.py"))
    # 100: no tile divides it (edges everywhere), packed panels padded
    rates = mod["main"](["--size", "100", "--repeat", "1", "--no-compare", "--threads", "2"])
    assert len(rates) == len(mod["STEPS"]) and all(r > 0 for r in rates.values())
