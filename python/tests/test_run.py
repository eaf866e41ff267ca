"""Compiling and running, compared against ONNX Runtime and the reference kernels."""
import os
import resource
import shutil
import subprocess

import numpy as np
import onnxruntime as ort
import pytest

import smelt


def ort_run(model, feed):
    src = model if isinstance(model, bytes) else open(model, "rb").read()
    sess = ort.InferenceSession(src, providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feed)))


def random_input(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_tiny_cnn_matches_onnxruntime(tiny_cnn):
    x = random_input((1, 3, 32, 32))
    c = smelt.load(tiny_cnn).compile(threads=2)
    got = c.run({"input": x})
    np.testing.assert_allclose(got["output"], ort_run(tiny_cnn, {"input": x})["output"],
                               rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("opt_level", [0, 3])
def test_opt_levels_match_reference(tiny_cnn, opt_level):
    m = smelt.load(tiny_cnn)
    x = random_input((1, 3, 32, 32), seed=opt_level)
    got = m.compile(opt_level=opt_level, threads=1).run({"input": x})["output"]
    np.testing.assert_allclose(got, m.run_reference({"input": x})["output"], rtol=1e-4, atol=1e-5)


def test_attention_matches_onnxruntime(small_model):
    path = small_model("attention.onnx")
    x = random_input((6, 8))
    got = smelt.load(path).compile().run({"x": x})["y"]
    np.testing.assert_allclose(got, ort_run(path, {"x": x})["y"], rtol=1e-4, atol=1e-5)


def test_int64_model_matches_reference(small_model):
    m = smelt.load(small_model("gather_chain.onnx"))
    v0 = np.random.default_rng(1).integers(0, 2, (4, 4, 4, 4)).astype(np.int64)
    got = m.compile().run({"v0": v0})["v4"]
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, m.run_reference({"v0": v0})["v4"])


def test_dynamic_batch_matches_onnxruntime(matmul_relu):
    c = smelt.load(matmul_relu).compile()
    for batch in (1, 5):
        x = random_input((batch, 8), seed=batch)
        got = c.run({"x": x})["y"]
        assert got.shape == (batch, 4)
        np.testing.assert_allclose(got, ort_run(matmul_relu, {"x": x})["y"], rtol=1e-5, atol=1e-6)


def test_dims_bind_a_symbolic_batch_and_export(matmul_relu, tmp_path):
    c = smelt.load(matmul_relu).compile(dims={"batch": 3})
    assert c.inputs[0].shape == (3, 8) and c.outputs[0].shape == (3, 4)
    x = random_input((3, 8), seed=3)
    np.testing.assert_allclose(c.run({"x": x})["y"], ort_run(matmul_relu, {"x": x})["y"],
                               rtol=1e-5, atol=1e-6)
    with pytest.raises(smelt.ArgumentError, match="shape|dim"):
        c.run({"x": random_input((4, 8))})
    assert os.path.isfile(os.path.join(c.export(str(tmp_path / "pkg")), "model.c"))


def test_dims_range_compiles_once_for_every_batch(matmul_relu, tmp_path):
    # batch 1..6 as a run-time dim: one build, outputs of the run's batch
    c = smelt.load(matmul_relu).compile(dims={"batch": (1, 6)})
    for batch in (6, 1, 4):
        x = random_input((batch, 8), seed=batch)
        got = c.run({"x": x})["y"]
        assert got.shape == (batch, 4)
        np.testing.assert_allclose(got, ort_run(matmul_relu, {"x": x})["y"], rtol=1e-5, atol=1e-6)
    with pytest.raises(smelt.ArgumentError, match="dim 0 is 7"):
        c.run({"x": random_input((7, 8))})
    with pytest.raises(smelt.ArgumentError, match="dims"):
        smelt.load(matmul_relu).compile(dims={"batch": (1, 2, 3)})
    assert os.path.isfile(os.path.join(c.export(str(tmp_path / "pkg")), "model.c"))


def test_dims_tie_a_mask_to_the_cache(small_model):
    # attention_mask [1, total] beside caches [1, 2, past, 4]: total = past + 1,
    # one compile for past 1..40 takes the mask at every length
    path = small_model("kv_cache_mask.onnx")
    c = smelt.load(path).compile(dims={"total": "past+1", "past": (1, 40)})
    for past in (40, 5, 1):
        feeds = {"x": random_input((1, 1, 8), seed=past),
                 "past_key": random_input((1, 2, past, 4), seed=past + 1),
                 "past_value": random_input((1, 2, past, 4), seed=past + 2),
                 "attention_mask": (np.arange(past + 1) != 1).astype(np.float32)[None, :]}
        got, want = c.run(feeds), ort_run(path, feeds)
        assert got["present_key"].shape == (1, 2, past + 1, 4)
        for name in want:
            np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-6)
    with pytest.raises(smelt.ArgumentError, match="dims"):
        smelt.load(path).compile(dims={"total": "past*2"})
    with pytest.raises(smelt.ArgumentError, match="offset is -8..8"):
        smelt.load(path).compile(dims={"total": "past+9"})


def test_dims_errors_name_the_dim(matmul_relu, tmp_path):
    with pytest.raises(smelt.ArgumentError, match="no input of the model has a symbolic dim named 'seq'"):
        smelt.load(matmul_relu).compile(dims={"seq": 3})
    with pytest.raises(smelt.ArgumentError, match="dims"):
        smelt.load(matmul_relu).compile(dims={"batch": "3"})
    with pytest.raises(smelt.Error, match="input 'x' dim 0 \\(batch\\) is symbolic"):
        smelt.load(matmul_relu).compile().export(str(tmp_path / "pkg"))


def test_call_by_keyword_returns_the_single_output(matmul_relu):
    c = smelt.load(matmul_relu).compile()
    x = random_input((2, 8))
    np.testing.assert_array_equal(c(x=x), c.run({"x": x})["y"])
    assert c.inputs[0].name == "x" and c.outputs[0].name == "y"


def test_non_contiguous_and_list_inputs_are_copied(matmul_relu):
    c = smelt.load(matmul_relu).compile()
    base = random_input((8, 3))
    strided = base.T  # Fortran order: not C-contiguous
    want = c.run({"x": np.ascontiguousarray(strided)})["y"]
    np.testing.assert_array_equal(c.run({"x": strided})["y"], want)
    np.testing.assert_array_equal(c.run({"x": strided.tolist()})["y"], want)


def test_inputs_are_not_modified(tiny_cnn):
    x = random_input((1, 3, 32, 32))
    before = x.copy()
    smelt.load(tiny_cnn).compile().run({"input": x})
    np.testing.assert_array_equal(x, before)


def test_outputs_are_owned_arrays_that_outlive_the_model(tiny_cnn):
    """Outputs are arrays over smelt's own buffers (no copy): writable, not
    shared between runs, valid after the model is closed and freed."""
    x = random_input((1, 3, 32, 32))
    c = smelt.load(tiny_cnn).compile()
    first, second = c.run({"input": x})["output"], c.run({"input": x})["output"]
    want = first.copy()
    c.close()
    del c
    second += 1.0  # writable, and a buffer of its own
    np.testing.assert_array_equal(first, want)
    view = first[0, 2:5]
    del first
    np.testing.assert_array_equal(view, want[0, 2:5])  # a view keeps the buffer


def matmul_model(m, k, n):
    from onnx import TensorProto, helper
    g = helper.make_graph([helper.make_node("MatMul", ["A", "B"], ["C"])], "mm",
                          [helper.make_tensor_value_info("A", TensorProto.FLOAT, [m, k]),
                           helper.make_tensor_value_info("B", TensorProto.FLOAT, [k, n])],
                          [helper.make_tensor_value_info("C", TensorProto.FLOAT, [m, n])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


@pytest.mark.parametrize("m,k,n", [(100, 256, 1536), (64, 1024, 768), (70, 200, 1000)])
def test_matmul_of_two_inputs_matches_numpy(m, k, n):
    """B an input: large ones are packed into panels at run time (pack_runtime_b);
    N = 1000 has no whole panels and stays a plain MatMul."""
    a, b = random_input((m, k), 1), random_input((k, n), 2)
    model = smelt.load(matmul_model(m, k, n))
    want = a.astype(np.float64) @ b.astype(np.float64)
    for disabled in ((), ("pack_runtime_b",)):
        got = model.compile(threads=2, disabled_passes=disabled).run({"A": a, "B": b})["C"]
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.sqrt(k))


def test_two_compiles_of_one_model_are_independent(tiny_cnn):
    m = smelt.load(tiny_cnn)
    a, b = m.compile(opt_level=0), m.compile(opt_level=2)
    x = random_input((1, 3, 32, 32))
    np.testing.assert_allclose(a.run({"input": x})["output"], b.run({"input": x})["output"],
                               rtol=1e-4, atol=1e-5)
    a.close()
    assert b.run({"input": x})["output"].shape == (1, 10)


def test_profile_times_every_function(tiny_cnn):
    c = smelt.load(tiny_cnn).compile()
    p = c.profile(repeat=3)
    assert len(p) == 6 and len({e.function for e in p}) == 6
    assert all(e.median_ms > 0 and "/" in e.nodes for e in p)
    assert [e.median_ms for e in p] == sorted((e.median_ms for e in p), reverse=True)


def test_benchmark_numbers_are_positive_and_ordered(tiny_cnn):
    b = smelt.load(tiny_cnn).compile().benchmark(repeat=5, warmup=1)
    assert 0 < b.min_ms <= b.median_ms <= b.max_ms and b.runs == 5


def test_export_writes_a_package_that_builds(tiny_cnn, tmp_path):
    out = tmp_path / "pkg"
    smelt.load(tiny_cnn).compile().export(str(out))
    names = set(os.listdir(out))
    assert {"model.c", "model.h", "Makefile", "main.c"} <= names, names
    if not shutil.which("make"):
        pytest.skip("make is not installed")
    subprocess.run(["make", "-s", "-C", str(out)], check=True, capture_output=True)
    run = subprocess.run([str(out / "main"), str(out / "weights.bin"), "1"], cwd=out,
                         capture_output=True, text=True, check=True)
    assert "output 'output' (float32, 10 elements)" in run.stdout


def rss_kib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() // 1024


def test_many_runs_do_not_grow_memory():
    from conftest import make_model
    from onnx import TensorProto, helper
    big = make_model([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                     [("x", TensorProto.FLOAT, [256, 256])], [("y", TensorProto.FLOAT, [256, 256])])
    c = smelt.load(big).compile(threads=1)
    x = random_input((256, 256))
    for _ in range(20):
        c.run({"x": x})
    before = rss_kib()
    for _ in range(400):
        np.testing.assert_array_equal(c.run({"x": x})["y"], np.maximum(x, 0))
    # a leaked output would be 256 KiB a run: 100 MiB here
    assert rss_kib() - before < 16 * 1024


def test_threads_share_one_compiled_model(tiny_cnn, matmul_relu):
    """One Compiled from 8 threads at once (no lock in Python or C): every
    result equals the serial one, bit for bit; a dynamic model too."""
    from concurrent.futures import ThreadPoolExecutor
    c = smelt.load(tiny_cnn).compile(threads=2)
    d = smelt.load(matmul_relu).compile()
    rng = np.random.default_rng(3)
    feeds = [rng.random((1, 3, 32, 32), dtype=np.float32) for _ in range(4)]
    want = [c.run({"input": x})["output"] for x in feeds]
    dyn_name = d.inputs[0].name
    dyn_feed = {dyn_name: rng.random((2, 8), dtype=np.float32)}
    dyn_want = list(d.run(dyn_feed).values())[0]

    def call(i):
        got = c.run({"input": feeds[i % 4]})["output"]
        dyn = list(d.run(dyn_feed).values())[0]
        return np.array_equal(got, want[i % 4]) and np.array_equal(dyn, dyn_want)

    with ThreadPoolExecutor(8) as pool:
        assert all(pool.map(call, range(400)))
