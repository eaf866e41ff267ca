"""The ctypes binding of libsmelt.so: where it is found, and the C signatures.

Only this module touches ctypes declarations; the rest of the package calls
`lib()` and the small helpers here.
"""
import ctypes
import os
from ctypes import (POINTER, Structure, c_char_p, c_double, c_int, c_int64, c_size_t,
                    c_void_p)

MAX_RANK = 8  # SMELT_MAX_RANK


class Tensor(Structure):
    """smelt_tensor."""
    _fields_ = [("dtype", c_int), ("rank", c_int), ("dims", c_int64 * MAX_RANK),
                ("data", c_void_p), ("name", c_void_p)]


class Options(Structure):
    """smelt_options."""
    _fields_ = [("target", c_char_p), ("num_threads", c_int), ("dump_c", c_int),
                ("embed_weights", c_int), ("opt_level", c_int),
                ("disabled_passes", c_char_p), ("dump_ir_after", c_char_p),
                ("records", c_char_p), ("aot_prefix", c_char_p), ("schedule", c_char_p)]


class CheckOptions(Structure):
    """smelt_check_options."""
    _fields_ = [("mode", c_int), ("rtol", c_double), ("atol", c_double), ("compile", Options),
                ("num_dims", c_int), ("dim_names", c_void_p), ("dim_min", c_void_p),
                ("dim_max", c_void_p)]


class TuneOptions(Structure):
    """smelt_tune_options."""
    _fields_ = [("records", c_char_p), ("target", c_char_p), ("trials", c_int),
                ("minutes", c_double), ("threads", c_int), ("quiet", c_int),
                ("opt_level", c_int)]


_P = c_void_p  # opaque handles: smelt_ctx*, smelt_model*
_SIGNATURES = {
    "smelt_ctx_new": (_P, []),
    "smelt_ctx_free": (None, [_P]),
    "smelt_ctx_status": (c_int, [_P]),
    "smelt_ctx_message": (c_char_p, [_P]),
    "smelt_ctx_node": (c_char_p, [_P]),
    "smelt_ctx_op": (c_char_p, [_P]),
    "smelt_ctx_clear": (None, [_P]),
    "smelt_model_load_bytes": (_P, [_P, c_char_p, c_size_t, c_char_p]),
    "smelt_model_free": (None, [_P]),
    "smelt_model_num_inputs": (c_int, [_P]),
    "smelt_model_num_outputs": (c_int, [_P]),
    "smelt_model_input_info": (None, [_P, c_int, POINTER(c_char_p), POINTER(c_int),
                                      POINTER(c_int), c_int64 * MAX_RANK]),
    "smelt_model_output_info": (None, [_P, c_int, POINTER(c_char_p), POINTER(c_int),
                                       POINTER(c_int), c_int64 * MAX_RANK]),
    "smelt_model_input_dim_name": (c_char_p, [_P, c_int, c_int]),
    "smelt_model_output_dim_name": (c_char_p, [_P, c_int, c_int]),
    "smelt_model_set_dim": (c_int, [_P, _P, c_char_p, c_int64]),
    "smelt_model_set_dim_range": (c_int, [_P, _P, c_char_p, c_int64, c_int64]),
    "smelt_model_tie_dim": (c_int, [_P, _P, c_char_p, c_char_p, c_int64]),
    "smelt_model_num_nodes": (c_int, [_P]),
    "smelt_model_node_info": (None, [_P, c_int, POINTER(c_char_p), POINTER(c_char_p),
                                     POINTER(c_int), POINTER(c_int)]),
    "smelt_model_node_input": (c_char_p, [_P, c_int, c_int]),
    "smelt_model_node_output": (c_char_p, [_P, c_int, c_int]),
    "smelt_model_write_graph": (c_int, [_P, _P, c_char_p]),
    "smelt_model_run_reference": (c_int, [_P, _P, POINTER(Tensor), c_int, POINTER(Tensor),
                                          c_int]),
    "smelt_options_init": (None, [POINTER(Options)]),
    "smelt_model_compile": (c_int, [_P, _P, POINTER(Options)]),
    "smelt_model_run": (c_int, [_P, _P, POINTER(Tensor), c_int, POINTER(Tensor), c_int]),
    "smelt_model_run_profiled": (c_int, [_P, _P, POINTER(Tensor), c_int, POINTER(Tensor), c_int,
                                         POINTER(c_int64)]),
    "smelt_model_num_calls": (c_int, [_P]),
    "smelt_model_call_name": (c_char_p, [_P, c_int]),
    "smelt_model_call_nodes": (c_char_p, [_P, c_int]),
    "smelt_model_write_package": (c_int, [_P, _P, c_char_p, POINTER(Options)]),
    "smelt_tensor_release": (None, [POINTER(Tensor)]),
    "smelt_check_options_init": (None, [POINTER(CheckOptions)]),
    "smelt_check_test": (c_int, [c_char_p, POINTER(CheckOptions), c_char_p, c_size_t]),
    "smelt_tune_options_init": (None, [POINTER(TuneOptions)]),
    "smelt_tune": (c_int, [_P, POINTER(c_char_p), c_int, POINTER(TuneOptions)]),
    # smelt_te.h: user-written tensor expressions and schedules
    "smelt_te_graph_new": (_P, [_P]),
    "smelt_te_graph_free": (None, [_P]),
    "smelt_te_placeholder": (_P, [_P, c_char_p, c_int, c_int, POINTER(c_int64)]),
    "smelt_te_compute_begin": (c_int, [_P, c_int, POINTER(_P)]),
    "smelt_te_compute_end": (_P, [_P, c_char_p, c_int, c_int, POINTER(c_int64), _P]),
    "smelt_te_graph_text": (c_char_p, [_P]),
    "smelt_te_reduce_axis": (_P, [_P, c_char_p, c_int64]),
    "smelt_te_axis_expr": (_P, [_P, _P]),
    "smelt_te_const_int": (_P, [_P, c_int, c_int64]),
    "smelt_te_const_float": (_P, [_P, c_int, c_double]),
    "smelt_te_read": (_P, [_P, _P, c_int, POINTER(_P)]),
    "smelt_te_binary": (_P, [_P, c_int, _P, _P]),
    "smelt_te_neg": (_P, [_P, _P]),
    "smelt_te_not": (_P, [_P, _P]),
    "smelt_te_select": (_P, [_P, _P, _P, _P]),
    "smelt_te_cast": (_P, [_P, c_int, _P]),
    "smelt_te_call": (_P, [_P, c_char_p, c_int, POINTER(_P)]),
    "smelt_te_reduce": (_P, [_P, c_int, _P, c_int, POINTER(_P)]),
    "smelt_te_expr_dtype": (c_int, [_P]),
    "smelt_te_schedule_new": (_P, [_P, c_int, POINTER(_P)]),
    "smelt_te_schedule_free": (None, [_P]),
    "smelt_te_split": (c_int, [_P, c_char_p, c_char_p, c_int64]),
    "smelt_te_fuse": (c_int, [_P, c_char_p, c_char_p, c_char_p]),
    "smelt_te_reorder": (c_int, [_P, c_char_p, c_int, POINTER(c_char_p)]),
    "smelt_te_vectorize": (c_int, [_P, c_char_p, c_char_p]),
    "smelt_te_unroll": (c_int, [_P, c_char_p, c_char_p]),
    "smelt_te_parallel": (c_int, [_P, c_char_p, c_char_p]),
    "smelt_te_compute_inline": (c_int, [_P, c_char_p]),
    "smelt_te_compute_at": (c_int, [_P, c_char_p, c_char_p, c_char_p]),
    "smelt_te_cache_write": (c_int, [_P, c_char_p]),
    "smelt_te_rfactor": (c_int, [_P, c_char_p, c_char_p, c_int64]),
    "smelt_te_tensorize": (c_int, [_P, c_char_p, c_char_p, c_char_p]),
    "smelt_te_apply_text": (c_int, [_P, c_char_p]),
    "smelt_te_schedule_text": (c_char_p, [_P]),
    "smelt_te_stage_loops": (c_char_p, [_P, c_char_p]),
    "smelt_te_lower": (c_char_p, [_P, c_int, POINTER(_P)]),
    "smelt_te_build": (_P, [_P, c_int, POINTER(_P), c_char_p, c_int]),
    "smelt_te_func_free": (None, [_P]),
    "smelt_te_func_call": (c_int, [_P, c_int, POINTER(_P), POINTER(c_size_t)]),
    "smelt_te_func_source": (c_char_p, [_P]),
    "smelt_te_tensor_dtype": (c_int, [_P]),
    "smelt_te_tensor_rank": (c_int, [_P]),
    "smelt_te_tensor_dim": (c_int64, [_P, c_int]),
    "smelt_te_error": (c_int, [_P, c_int, c_char_p]),
    "smelt_te_register_op": (c_int, [_P, c_char_p, c_char_p, c_int, c_int, _P, _P]),
}

_lib = None


def library_path():
    """SMELT_LIB when set, else the libsmelt.so shipped inside the package."""
    env = os.environ.get("SMELT_LIB")
    if env:
        return env
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "libsmelt.so")


def lib():
    """The loaded library (loaded on first use, so `import smelt` never fails)."""
    global _lib
    if _lib is None:
        path = library_path()
        if not os.path.exists(path):
            raise OSError(f"libsmelt.so not found at '{path}': build it (bash scripts/build.sh) "
                          "and set SMELT_LIB=build/libsmelt.so, or reinstall the package")
        loaded = ctypes.CDLL(path)
        for name, (restype, argtypes) in _SIGNATURES.items():
            fn = getattr(loaded, name)
            fn.restype, fn.argtypes = restype, argtypes
        _lib = loaded
    return _lib


def text(raw):
    """A C string from the library as str ('' for NULL)."""
    return raw.decode("utf-8", "replace") if raw else ""
