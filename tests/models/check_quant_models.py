#!/usr/bin/env python3
"""Runs `smelt check MODE --atol A --rtol R DIR/NAME` for each quantized test
model, A and R from DIR/NAME/tolerance.txt (written by gen_quant_models.py,
which says why each tolerance is what it is).

usage: check_quant_models.py SMELT --compiled|--reference DIR NAME...
Exit status 1 when any check fails.
"""
import subprocess
import sys


def main():
    smelt, mode, root, names = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    failed = 0
    for name in names:
        with open("%s/%s/tolerance.txt" % (root, name)) as f:
            atol, rtol = f.read().split()
        cmd = [smelt, "check", mode, "--atol", atol, "--rtol", rtol, "%s/%s" % (root, name)]
        print(" ".join(cmd), flush=True)
        failed |= subprocess.run(cmd).returncode != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
