#!/bin/sh
# Optional: Apache TVM for bench/tvm_tune_ops.py (not part of scripts/setup.sh).
# apache-tvm 0.27.0.post1 needs apache-tvm-ffi pinned to 0.1.14.post1 (0.1.15
# crashes in MetaSchedule's tuning database); MetaSchedule itself imports psutil
# and xgboost (its default cost model; xgboost-cpu is the same module without
# the CUDA libraries).
set -e
PYTHON=${PYTHON:-python3}
"$PYTHON" -m pip install apache-tvm==0.27.0.post1 apache-tvm-ffi==0.1.14.post1 psutil xgboost-cpu
"$PYTHON" -c "import tvm, tvm_ffi; print('apache-tvm', tvm.__version__, 'apache-tvm-ffi', tvm_ffi.__version__)"
