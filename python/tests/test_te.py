"""smelt.te: user-written computes and schedules, built and compared with NumPy."""
import numpy as np
import pytest

import smelt
from smelt import te

M, K, N = 37, 29, 45
rng = np.random.default_rng(7)


def matmul():
    A = te.placeholder((M, K), name="A")
    B = te.placeholder((K, N), name="B")
    k = te.reduce_axis(K, name="k")
    C = te.compute((M, N), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return A, B, C


def run_matmul(s, A, B, C, **kw):
    f = smelt.build(s, [A, B, C], **kw)
    a = rng.standard_normal((M, K), dtype=np.float32)
    b = rng.standard_normal((K, N), dtype=np.float32)
    c = np.zeros((M, N), np.float32)
    f(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
    return f


def test_naive_and_lower():
    A, B, C = matmul()
    s = smelt.create_schedule(C)
    ir = smelt.lower(s, [A, B, C])
    assert ir.startswith("func(A, B, C)") and "for C.k in [0, +29)" in ir
    run_matmul(s, A, B, C)


def test_tile_vectorize_parallel():
    A, B, C = matmul()
    s = smelt.create_schedule(C)
    i, j = C.op.axis
    (k,) = C.op.reduce_axis
    io, jo, ii, ji = s[C].tile(i, j, 8, 16)
    assert (io.name, ji.name, io.extent, ji.extent) == ("i0.o", "i1.i", 5, 16)
    s[C].reorder(io, jo, k, ii, ji)
    s[C].vectorize(ji)
    s[C].parallel(io)
    assert "parallel for C.i0.o" in smelt.lower(s, [A, B, C])
    assert s.text == ("split C i0 8\nsplit C i1 16\nreorder C i0.o i1.o i0.i i1.i\n"
                      "reorder C i0.o i1.o k i0.i i1.i\nvectorize C i1.i\nparallel C i0.o\n")
    run_matmul(s, A, B, C, threads=2)


def test_cache_write_compute_at_unroll():
    A, B, C = matmul()
    s = smelt.create_schedule(C)
    CL = s.cache_write(C, "local")
    io, jo, ii, ji = s[C].tile(C.op.axis[0], C.op.axis[1], 4, 16)
    s[CL].compute_at(s[C], jo)
    x, y = CL.op.axis
    (k,) = CL.op.reduce_axis
    s[CL].reorder(k, x, y)
    s[CL].unroll(x)
    s[CL].vectorize(y)
    s[C].vectorize(ji)
    s[C].parallel(io)
    assert s[CL].loops[0].name == "i0.o" or s[CL].loops  # the stage's loops are listed
    run_matmul(s, A, B, C)


def test_split_fuse_and_tensorize():
    A, B, C = matmul()
    s = smelt.create_schedule(C)
    io, jo, ii, ji = s[C].tile(C.op.axis[0], C.op.axis[1], 6, 16)
    ko, ki = s[C].split(C.op.reduce_axis[0], factor=8)
    s[C].reorder(io, jo, ko, ii, ji, ki)
    s[C].tensorize(ii, "smelt.gemm_f32")
    f = run_matmul(s, A, B, C, target="host")
    assert "smelt_uk_gemm_f32(" in f.source
    A, B, C = matmul()
    s = smelt.create_schedule(C)
    ij = s[C].fuse(*C.op.axis)
    assert ij.name == "i0.i1" and ij.extent == M * N
    o, i = s[C].split(ij, nparts=4)
    s[C].parallel(o)
    run_matmul(s, A, B, C)


def test_elementwise_select_math_cast():
    X = te.placeholder((M, K), name="X")
    Y = te.compute((M, K), lambda i, j: te.max(
        te.select(X[i, j] > 0, te.exp(X[i, j]), -X[i, j] * 0.5),
        X[te.min(j, M - 1), i % K]) + te.cast(j, "float32") / 64, name="Y")
    s = smelt.create_schedule(Y)
    jo, ji = s[Y].split(Y.op.axis[1], 8)
    s[Y].vectorize(ji)
    f = smelt.build(s, [X, Y])
    x = rng.standard_normal((M, K), dtype=np.float32)
    y = np.empty_like(x)
    f(x, y)
    ii, jj = np.meshgrid(np.arange(M), np.arange(K), indexing="ij")
    sel = np.where(x > 0, np.exp(x), -x * 0.5)
    want = np.maximum(sel, x[np.minimum(jj, M - 1), ii % K]) + jj.astype(np.float32) / 64
    np.testing.assert_allclose(y, want, rtol=2e-6, atol=1e-6)


def test_integer_compute_and_two_outputs_and_rfactor():
    X = te.placeholder((M, N), name="X", dtype="int32")
    r = te.reduce_axis(N, name="r")
    Mx = te.compute((M,), lambda i: te.max(X[i, r], axis=r), name="Mx")
    D = te.compute((M, N), lambda i, j: (X[i, j] - Mx[i]) // 3 + te.cast(j % 5, "int32"),
                   name="D")
    assert D.dtype == "int32"
    s = smelt.create_schedule([Mx, D])
    RF = s.rfactor(Mx, Mx.op.reduce_axis[0], 8)
    assert RF.name == "Mx.rf" and RF.shape == (M, 8)
    s[RF].vectorize(RF.op.axis[1])
    s[D].parallel(D.op.axis[0])
    f = smelt.build(s, [X, Mx, D], threads=2)
    x = rng.integers(-1000, 1000, (M, N), dtype=np.int32)
    mx, d = np.empty(M, np.int32), np.empty((M, N), np.int32)
    f(x, mx, d)
    np.testing.assert_array_equal(mx, x.max(axis=1))
    np.testing.assert_array_equal(d, (x - x.max(axis=1)[:, None]) // 3 + np.arange(N) % 5)


def test_intermediate_stage_inline_and_compute_at():
    X = te.placeholder((64, 64), name="X")
    T = te.compute((64, 64), lambda i, j: te.sqrt(te.abs(X[i, j])), name="T")
    Y = te.compute((64, 64), lambda i, j: T[i, j] * 2 + T[j, i], name="Y")
    s = smelt.create_schedule(Y)
    s[T].compute_inline()
    f = smelt.build(s, [X, Y])
    x = rng.standard_normal((64, 64), dtype=np.float32)
    y = np.empty_like(x)
    f(x, y)
    t = np.sqrt(np.abs(x))
    np.testing.assert_allclose(y, t * 2 + t.T, rtol=1e-6)
    s = smelt.create_schedule(Y)
    yo, yi = s[Y].split(Y.op.axis[0], 16)
    s[T].compute_at(s[Y], yo)  # T's region for the rows Y needs (all of it: T[j, i])
    f = smelt.build(s, [X, Y])
    y[:] = 0
    f(x, y)
    np.testing.assert_allclose(y, t * 2 + t.T, rtol=1e-6)


def test_schedule_errors_name_the_step():
    A, B, C = matmul()
    s = smelt.create_schedule(C)
    io, ii = s[C].split(C.op.axis[0], 4)
    with pytest.raises(smelt.ArgumentError, match=r"schedule step 2 'split C i0 4': .*already split"):
        s[C].split(C.op.axis[0], 4)
    with pytest.raises(smelt.ArgumentError, match=r"'vectorize C k'"):
        s[C].vectorize(C.op.reduce_axis[0])
    with pytest.raises(smelt.ArgumentError, match=r"line 2"):
        s.apply("unroll C i0.i\nparallel C nope\n")
    assert s.text == "split C i0 4\nunroll C i0.i\n"
    with pytest.raises(smelt.ArgumentError, match="placeholder 'B' is missing"):
        smelt.lower(s, [A, C])
    with pytest.raises(smelt.ArgumentError, match="unknown target"):
        smelt.build(s, [A, B, C], target="vax")


def test_expression_errors():
    A = te.placeholder((4, 4), name="A")
    k = te.reduce_axis(4, name="k")
    T = te.compute((4,), lambda i: te.sum(A[i, k], axis=k) * 2, name="T")
    with pytest.raises(smelt.ArgumentError, match="must be the whole body"):
        smelt.create_schedule(T)
    U = te.compute((4,), lambda i: A[i, k], name="U")
    with pytest.raises(smelt.ArgumentError, match="reduce axis 'k' is used outside"):
        smelt.create_schedule(U)
    V = te.compute((4, 4), lambda i, j: A[i, j] + te.cast(A[i, j], "int32"), name="V")
    with pytest.raises(smelt.ArgumentError, match="'\\+' of f32 and i32"):
        smelt.create_schedule(V)
    W = te.compute((4,), lambda i: A[i], name="W")
    with pytest.raises(smelt.ArgumentError, match="rank 2 but is read with 1"):
        smelt.create_schedule(W)
    bad = te.placeholder((4,), name="a b")
    with pytest.raises(smelt.ArgumentError, match="not usable in a schedule"):
        smelt.create_schedule(te.compute((4,), lambda i: bad[i], name="Z"))
    with pytest.raises(TypeError):
        if A[0, 0] > 0:
            pass


def test_call_checks_arrays():
    A, B, C = matmul()
    s = smelt.create_schedule(C)
    f = smelt.build(s, [A, B, C])
    a = np.zeros((M, K), np.float32)
    b = np.zeros((K, N), np.float32)
    c = np.zeros((M, N), np.float32)
    with pytest.raises(smelt.ArgumentError, match=r"'B': expected float32\[29, 45\], got float64"):
        f(a, b.astype(np.float64), c)
    with pytest.raises(smelt.ArgumentError, match="takes 3 arrays"):
        f(a, b)
    with pytest.raises(smelt.ArgumentError, match="C-contiguous"):
        f(a, np.asfortranarray(b), c)
    c.flags.writeable = False
    with pytest.raises(smelt.ArgumentError, match="read-only"):
        f(a, b, c)


def test_compile_with_schedule_file(tmp_path, tiny_cnn):
    """Model.compile(schedule=) and smelt.check(schedule=): a hand schedule
    for one named function; a bad step fails naming the file, line and step."""
    m = smelt.load(tiny_cnn)
    x = rng.standard_normal((1, 3, 32, 32), dtype=np.float32)
    want = m.run_reference({"input": x})
    good = tmp_path / "good.txt"
    good.write_text("task f5_matmulpacked\nsplit n1_y i1 4\nparallel n1_y i0\n")
    got = smelt.load(tiny_cnn).compile(schedule=str(good)).run({"input": x})
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-4, atol=1e-5)
    bad = tmp_path / "bad.txt"
    bad.write_text("task f5_matmulpacked\n\nvectorize n0_y k\n")
    with pytest.raises(smelt.ArgumentError, match=r"bad.txt:3: .*step 'vectorize n0_y k'"):
        smelt.load(tiny_cnn).compile(schedule=str(bad))
    with pytest.raises(smelt.ArgumentError, match="does not exist"):
        m.compile(schedule=str(tmp_path / "missing.txt"))
    import os
    results = smelt.check(os.path.dirname(tiny_cnn), schedule=str(good))
    assert [r.status for r in results] == ["pass"]
