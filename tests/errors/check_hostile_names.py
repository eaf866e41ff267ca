#!/usr/bin/env python3
"""Hostile names end to end (issue 5, no code injection).

Writes a model whose node, value, graph, input/output and initializer names
and doc strings hold comment closers, quotes, backslashes, newlines,
#include, trigraphs, non-ASCII text, a 10 KB name and duplicates (node names
repeated, value names that sanitise alike), with a test folder whose
expected outputs come from numpy.  Then:
  - `smelt check --reference` and `--compiled` (JIT) must match numpy;
  - the AOT package (tests/aot/check_aot.py: built standalone with
    cc -Werror) must match too;
  - the C (`smelt compile --dump-ir=c`, and the package's model.c/model.h)
    must hold no name raw: every name carries the marker EVIL, which may
    appear only inside string literals or comments; no trigraph, no line
    splice, no raw newline in a literal, and no comment may end early.
usage: check_hostile_names.py SMELT WORK_DIR
"""
import os
import re
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))

X1 = 'x*/EVIL_a(); /* "in\\1" \n#include <stdlib.h>'
X2 = '??/EVIL_b\\'
W = 'w"EVIL_c"\\";\n#define EVIL_d'
V1 = 'v\r\nEVIL_e */ int evil; /*'
V2 = 'caf\u00e9 \u2028EVIL_f \u00ff\x01\x7f'
Y1 = 'L' * 10240 + '*/EVIL_g'
Y2 = 'a.b EVIL_h'
Y3 = 'a-b EVIL_h'   # sanitises like Y2
NODE = 'n*/EVIL_i/*'  # used by every node: duplicate node names
DOC = '*/ EVIL_j(); /* ??/ \n#include "x"'
GRAPH = 'g\n#include EVIL_k ??='
HOSTILE = [X1, X2, W, V1, V2, Y1, Y2, Y3, NODE, DOC, GRAPH]


def build(folder):
    rng = np.random.default_rng(5)
    x1 = rng.standard_normal((2, 3)).astype(np.float32)
    x2 = rng.standard_normal((2, 3)).astype(np.float32)
    w = rng.standard_normal((2, 3)).astype(np.float32)
    nodes = [
        helper.make_node("Add", [X1, X2], [V1], name=NODE, doc_string=DOC),
        helper.make_node("Relu", [V1], [V2], name=NODE, doc_string=DOC),
        helper.make_node("Mul", [V2, W], [Y1], name=NODE),
        helper.make_node("Sigmoid", [X1], [Y2], name=NODE),
        helper.make_node("Neg", [X2], [Y3], name=NODE),
    ]
    f32 = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 3])
    graph = helper.make_graph(nodes, GRAPH, [f32(X1), f32(X2)], [f32(Y1), f32(Y2), f32(Y3)],
                              initializer=[numpy_helper.from_array(w, W)], doc_string=DOC)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], doc_string=DOC)
    os.makedirs(os.path.join(folder, "test_data_set_0"), exist_ok=True)
    onnx.save(model, os.path.join(folder, "model.onnx"))
    want = [np.maximum(x1 + x2, 0) * w, 1 / (1 + np.exp(-x1)), -x2]
    data = os.path.join(folder, "test_data_set_0")
    for i, a in enumerate([x1, x2]):
        with open(os.path.join(data, f"input_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(a).SerializeToString())
    for i, a in enumerate(want):
        with open(os.path.join(data, f"output_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(a.astype(np.float32)).SerializeToString())


def scan_c(text, what):
    """Problems in C text: EVIL outside literals/comments, trigraphs, splices."""
    problems = []
    if "??" in text:
        problems.append("'??' (a trigraph could form)")
    if re.search(r"\\\r?\n", text):
        problems.append("backslash-newline (line splice)")
    i, n, code = 0, len(text), []
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            if j < 0:
                problems.append("unterminated comment")
                break
            i = j + 2
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                if text[j] == "\n":
                    problems.append("raw newline in a literal")
                j += 2 if text[j] == "\\" else 1
            i = j + 1
        else:
            code.append(c)
            i += 1
    code = "".join(code)
    for m in re.finditer(r"EVIL\w*", code):
        problems.append(f"{m.group(0)} reached the C as code")
    for h in HOSTILE:  # pieces with a character that needs escaping must not appear as is
        for line in h.split("\n"):
            risky = any(t in line for t in ('*/', '"', '\\', '??', '\r')) or \
                any(not " " <= ch <= "~" for ch in line)
            if risky and "EVIL" in line and line in text:
                problems.append(f"raw name text {line[:40]!r}")
    for p in problems:
        print(f"FAIL {what}: {p}")
    return not problems


def run(cmd, **kw):
    print("$", " ".join(c if len(c) < 80 else c[:77] + "..." for c in cmd))
    return subprocess.run(cmd, **kw)


def main():
    smelt, work = sys.argv[1:3]
    folder = os.path.join(work, "hostile_names")
    run(["rm", "-rf", work], check=True)
    build(folder)
    ok = True
    for mode in ("--reference", "--compiled"):
        ok &= run([smelt, "check", mode, folder]).returncode == 0
    c = run([smelt, "compile", os.path.join(folder, "model.onnx"), "--dump-ir=c"],
            capture_output=True)
    ok &= c.returncode == 0 and scan_c(c.stdout.decode("latin-1"), "--dump-ir=c")
    ok &= run([sys.executable, os.path.join(HERE, "..", "aot", "check_aot.py"), smelt, folder,
               os.path.join(work, "aot")]).returncode == 0
    for name in ("model.c", "model.h"):
        with open(os.path.join(work, "aot", "pkg", name), "rb") as f:
            ok &= scan_c(f.read().decode("latin-1"), "AOT " + name)
    print("hostile names:", "PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
