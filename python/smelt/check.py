"""smelt.check: ONNX backend-test folders, as `smelt check` runs them."""
import ctypes
import os
from collections import namedtuple

from ._lib import CheckOptions, lib
from .errors import ArgumentError
from .model import _options

CheckResult = namedtuple("CheckResult", "name path status reason")
CheckResult.__doc__ = "One test folder: status 'pass', 'fail' or 'unsupported', and why."

_MODES = {"compiled": 0, "reference": 1, "te": 2}
_STATUS = {0: "pass", 1: "fail", 2: "unsupported"}


def _test_folders(root):
    """Folders holding model.onnx under root (root itself when it does), sorted."""
    if os.path.isfile(os.path.join(root, "model.onnx")):
        return [root]
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        if "model.onnx" in filenames:
            found.append(dirpath)
            dirnames.clear()  # a test folder's subfolders are its data sets
    return found


def check(directory, mode="compiled", rtol=1e-3, atol=1e-7, target="host", opt_level=2,
          threads=0, records=None, schedule=None):
    """Run every test folder under directory (model.onnx and test_data_set_*/
    input_*.pb, output_*.pb); a list of CheckResult, one per folder.

    mode: "compiled" (default), "reference" (the reference kernels) or "te".
    """
    if mode not in _MODES:
        raise ArgumentError(f"mode must be one of {', '.join(_MODES)}, not {mode!r}")
    if not os.path.isdir(directory):
        raise ArgumentError(f"'{directory}' is not a folder")
    o = CheckOptions()
    lib().smelt_check_options_init(ctypes.byref(o))
    o.mode, o.rtol, o.atol = _MODES[mode], rtol, atol
    compile_opts = _options(target, opt_level, threads, records, (), schedule)
    o.compile = compile_opts.struct  # its strings stay alive in compile_opts
    results = []
    for folder in _test_folders(directory):
        why = ctypes.create_string_buffer(2048)
        status = lib().smelt_check_test(os.fsencode(folder), ctypes.byref(o), why, len(why))
        results.append(CheckResult(os.path.basename(os.path.normpath(folder)), folder,
                                   _STATUS.get(status, "fail"), why.value.decode("utf-8", "replace")))
    return results
