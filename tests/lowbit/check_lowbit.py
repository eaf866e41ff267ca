"""Exhaustive check of include/smelt_lowbit.h against ml_dtypes and onnx's
numpy helpers: every code of each float8/float4 type decoded, and a sweep of
floats (all float16 values, float32 ties, subnormals, NaN, Inf, values past
the range) encoded with and without saturation.

Usage: check_lowbit.py SMELT_SOURCE_DIR   (needs a C compiler, numpy, ml_dtypes, onnx)
"""
import ctypes
import warnings
import os
import subprocess
import sys
import tempfile

import ml_dtypes
import numpy as np
import onnx.numpy_helper as nh

SHIM = r"""
#include "smelt_lowbit.h"
float lb_decode(int dt, unsigned code) { return smelt_lowbit_decode(dt, code); }
int lb_encode(int dt, double x, int mode) { return smelt_lowbit_encode(dt, x, mode); }
void lb_encode_many(int dt, const double *x, long n, int mode, int *out)
{ for (long i = 0; i < n; i++) out[i] = smelt_lowbit_encode(dt, x[i], mode); }
void lb_decode_many(int dt, const unsigned *c, long n, float *out)
{ for (long i = 0; i < n; i++) out[i] = smelt_lowbit_decode(dt, c[i]); }
"""

FLOATS = {  # ONNX dtype -> (ml_dtypes type, code bits)
    17: (ml_dtypes.float8_e4m3fn, 8),
    18: (ml_dtypes.float8_e4m3fnuz, 8),
    19: (ml_dtypes.float8_e5m2, 8),
    20: (ml_dtypes.float8_e5m2fnuz, 8),
    23: (ml_dtypes.float4_e2m1fn, 4),
}
INTS = {21: ml_dtypes.uint4, 22: ml_dtypes.int4, 25: ml_dtypes.uint2, 26: ml_dtypes.int2}
failures = 0


def load(src_dir):
    tmp = tempfile.mkdtemp()
    c = os.path.join(tmp, "shim.c")
    so = os.path.join(tmp, "shim.so")
    with open(c, "w") as f:
        f.write(SHIM)
    subprocess.check_call(["cc", "-O2", "-std=c99", "-Wall", "-Werror", "-shared", "-fPIC",
                           "-I", os.path.join(src_dir, "include"), c, "-o", so])
    lib = ctypes.CDLL(so)
    lib.lb_decode.restype = ctypes.c_float
    lib.lb_decode.argtypes = [ctypes.c_int, ctypes.c_uint]
    return lib


def encode(lib, dt, x, mode):
    x = np.ascontiguousarray(x, dtype=np.float64)
    out = np.empty(x.size, dtype=np.int32)
    lib.lb_encode_many(dt, x.ctypes.data_as(ctypes.c_void_p), ctypes.c_long(x.size), mode,
                       out.ctypes.data_as(ctypes.c_void_p))
    return out


def decode(lib, dt, codes):
    c = np.ascontiguousarray(codes, dtype=np.uint32)
    out = np.empty(c.size, dtype=np.float32)
    lib.lb_decode_many(dt, c.ctypes.data_as(ctypes.c_void_p), ctypes.c_long(c.size),
                       out.ctypes.data_as(ctypes.c_void_p))
    return out


def report(what, x, got, want):
    global failures
    bad = np.nonzero(got != want)[0]
    if bad.size:
        failures += 1
        i = bad[0]
        print(f"FAIL {what}: {bad.size} differ, first x={x[i]!r} got {got[i]} want {want[i]}")
    else:
        print(f"ok   {what} ({x.size} values)")


def sweep():
    """float32 values: all float16 values, every float32 near each code of
    every type (ties, one ulp either side), subnormals, specials, huge."""
    h = np.arange(0, 1 << 16, dtype=np.uint16).view(np.float16).astype(np.float32)
    near = []
    for t, _ in FLOATS.values():
        v = np.arange(0, 256 if t != ml_dtypes.float4_e2m1fn else 16, dtype=np.uint8)
        f = v.view(t).astype(np.float32)
        f = f[np.isfinite(f)]
        mids = (np.sort(f)[1:].astype(np.float64) + np.sort(f)[:-1]) / 2
        near += [f, mids.astype(np.float32)]
    base = np.concatenate(near + [h]).astype(np.float32)
    bits = base.view(np.uint32)
    around = np.concatenate([bits - 1, bits, bits + 1]).view(np.float32)
    rng = np.random.default_rng(7)
    rand = rng.integers(0, 1 << 32, 200000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1e-45, -1e-45, 3.4e38,
                        -3.4e38, 1e30, 449, 464, 465, 480, 57344, 61440, 61441, 6.5, 7, 5, 240,
                        248, 256], dtype=np.float32)
    allv = np.concatenate([around, rand, special, -around])
    return allv[~np.isnan(allv)], np.concatenate([allv, special])


def check_floats(lib):
    for dt, (t, nbits) in FLOATS.items():
        codes = np.arange(1 << nbits, dtype=np.uint32)
        want = codes.astype(np.uint8).view(t).astype(np.float32)
        got = decode(lib, dt, codes)
        same = (got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want))
        report(f"decode {t.__name__} all {1 << nbits} codes", codes, same, np.ones_like(same))
        # NaN keeps its sign where the type has signed NaNs
        nan_sign_ok = np.signbit(got[np.isnan(got)]) == np.signbit(want[np.isnan(want)])
        report(f"decode {t.__name__} NaN signs", codes[np.isnan(got)], nan_sign_ok,
               np.ones_like(nan_sign_ok))
        finite, everything = sweep()
        x = finite if t == ml_dtypes.float4_e2m1fn else everything
        if t == ml_dtypes.float4_e2m1fn:  # ml_dtypes saturates; ONNX: NaN -> +6
            want_sat = x.astype(t).view(np.uint8).astype(np.int32)
            report(f"encode {t.__name__}", x, encode(lib, dt, x, 0), want_sat)
            got_nan = encode(lib, dt, np.array([np.nan, -np.nan]), 0)
            report(f"encode {t.__name__} NaN -> +6", np.array([np.nan, -np.nan]), got_nan,
                   np.array([7, 7]))
            continue
        want_sat = nh.saturate_cast(x, t).view(np.uint8).astype(np.int32)
        report(f"encode {t.__name__} saturate", x, encode(lib, dt, x, 1), want_sat)
        want_raw = x.astype(t).view(np.uint8).astype(np.int32)
        report(f"encode {t.__name__} no saturate", x, encode(lib, dt, x, 0), want_raw)
        # float64 inputs are rounded once, not through float32 (ml_dtypes goes
        # through float32: a value just above a tie would round as the tie)
        tiny = 2.0 ** -40
        d = np.array([1 + 2.0 ** -4 + tiny, 1 + 2.0 ** -3 + tiny, 1 + 2.0 ** -3 - tiny])
        once = {17: [1.125, 1.125, 1.125], 18: [1.125, 1.125, 1.125], 19: [1.0, 1.25, 1.0],
                20: [1.0, 1.25, 1.0]}[dt]
        report(f"encode {t.__name__} from float64", d, encode(lib, dt, d, 1),
               np.array(once, np.float32).astype(t).view(np.uint8).astype(np.int32))


def check_e8m0(lib):
    codes = np.arange(256, dtype=np.uint32)
    want = codes.astype(np.uint8).view(ml_dtypes.float8_e8m0fnu).astype(np.float32)
    got = decode(lib, 24, codes)
    same = (got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want))
    report("decode float8_e8m0fnu all 256 codes", codes, same, np.ones_like(same))
    finite, _ = sweep()
    x = np.abs(finite[np.isfinite(finite)])
    for name, rbits in (("up", 0), ("down", 2), ("nearest", 4)):
        for sat in (0, 1):
            want = nh.to_float8e8m0(x, bool(sat), name).view(np.uint8).astype(np.int32)
            report(f"encode e8m0 round {name} saturate {sat}", x, encode(lib, 24, x, rbits | sat),
                   want)
    inf = np.array([np.inf])
    report("encode e8m0 Inf saturates to the max", inf, encode(lib, 24, inf, 1), np.array([254]))
    report("encode e8m0 Inf without saturation is NaN", inf, encode(lib, 24, inf, 0),
           np.array([255]))
    report("encode e8m0 NaN", inf, encode(lib, 24, np.array([np.nan]), 1), np.array([255]))


def check_ints(lib):
    x = np.concatenate([np.arange(-40, 40, 0.25), [1e6, -1e6, 2.5, -2.5, 3.5, -3.5, 0.5, -0.5]])
    for dt, t in INTS.items():
        want = x.astype(np.float32).astype(t).astype(np.int32)
        report(f"encode {t.__name__} (truncate, wrap)", x, encode(lib, dt, x, 1), want)
    for dt in INTS:
        got = encode(lib, dt, np.array([np.nan, np.inf, -np.inf]), 1)
        report(f"encode dtype {dt} NaN/Inf -> 0", got, got, np.zeros(3, np.int32))


def main():
    warnings.simplefilter("ignore", RuntimeWarning)  # NaN/Inf casts are the point
    lib = load(sys.argv[1])
    check_floats(lib)
    check_e8m0(lib)
    check_ints(lib)
    if failures:
        print(f"{failures} check(s) failed")
        sys.exit(1)
    print("all checks passed")


if __name__ == "__main__":
    main()
