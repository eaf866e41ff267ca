"""smelt.check over backend-test folders, and smelt.tune."""
import os
import shutil

import numpy as np
import pytest
import onnx
from onnx import numpy_helper

import smelt
from conftest import REPO


def test_check_passes_tiny_cnn_in_both_modes():
    for mode in ("compiled", "reference"):
        [r] = smelt.check(os.path.join(REPO, "models", "tiny_cnn"), mode=mode)
        assert (r.name, r.status, r.reason) == ("tiny_cnn", "pass", "")


def test_check_finds_a_wrong_expected_output(tmp_path):
    case = tmp_path / "suite" / "tiny_cnn_wrong"
    shutil.copytree(os.path.join(REPO, "models", "tiny_cnn"), case)
    out = case / "test_data_set_0" / "output_0.pb"
    t = numpy_helper.to_array(onnx.load_tensor_from_string(out.read_bytes()))
    out.write_bytes(numpy_helper.from_array(t + 1, name="output").SerializeToString())
    [r] = smelt.check(tmp_path / "suite")
    assert r.status == "fail" and "output 'output'" in r.reason and "differ" in r.reason


def test_check_rejects_bad_arguments(tmp_path):
    with pytest.raises(smelt.ArgumentError, match="not a folder"):
        smelt.check(tmp_path / "missing")
    with pytest.raises(smelt.ArgumentError, match="mode"):
        smelt.check(tmp_path, mode="fast")


def test_tune_appends_records_that_compile_uses(small_model, tmp_path, capfd):
    records = tmp_path / "r.jsonl"
    smelt.tune([small_model("attention.onnx")], records=str(records), trials=2, threads=1,
               progress=False)
    lines = records.read_text().splitlines()
    assert lines and all(line.startswith("{") for line in lines)
    m = smelt.load(small_model("attention.onnx"))
    x = np.random.default_rng(0).standard_normal((6, 8)).astype(np.float32)
    got = m.compile(records=str(records)).run({"x": x})["y"]
    np.testing.assert_allclose(got, m.run_reference({"x": x})["y"], rtol=1e-4, atol=1e-5)


def test_tune_rejects_bad_arguments(small_model, tmp_path):
    with pytest.raises(smelt.ArgumentError, match="trials"):
        smelt.tune(small_model("attention.onnx"), records=str(tmp_path / "r"), trials=0)
    with pytest.raises(smelt.FileError):
        smelt.tune([str(tmp_path / "none.onnx")], records=str(tmp_path / "r"), trials=1,
                   progress=False)
