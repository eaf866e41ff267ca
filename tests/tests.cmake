# Test registration.  Unit tests are single-file C programs in tests/unit.
file(GLOB SMELT_UNIT_TESTS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/unit/test_*.c)
foreach(src ${SMELT_UNIT_TESTS})
  get_filename_component(name ${src} NAME_WE)
  add_executable(${name} ${src})
  target_link_libraries(${name} PRIVATE "$<LINK_LIBRARY:WHOLE_ARCHIVE,smelt>")
  target_include_directories(${name} PRIVATE ${CMAKE_SOURCE_DIR}/tests)
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  add_test(NAME unit/${name} COMMAND ${name})
endforeach()

# ---- The int8 micro-kernels built with each x86 target's dot-product ISA (compiled,
# not run: this host may lack VNNI); the assembly must hold that ISA's instruction ----
if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64")
  foreach(isa "avx512vnni|-mavx512f -mavx512bw -mavx512vl -mavx512vnni|vpdpbusd"
              "avxvnni|-mavx2 -mavxvnni|vpdpbusd" "avx2|-mavx2 -mfma|vpmaddubsw")
    string(REPLACE "|" ";" parts "${isa}")
    list(GET parts 0 name)
    list(GET parts 1 flags)
    list(GET parts 2 insn)
    add_test(NAME unit/uk_qgemm_isa_${name}
      COMMAND sh -c "${CMAKE_C_COMPILER} -std=c99 -O2 -Wall -Wextra -Werror ${flags} -S -o uk_qgemm_isa_${name}.s ${CMAKE_SOURCE_DIR}/tests/unit/uk_qgemm_isa.c && grep -q ${insn} uk_qgemm_isa_${name}.s")
  endforeach()
endif()

# ---- Conformance: ONNX backend node tests (Debian's libonnx-testdata, onnx 1.12) ----
set(ONNX_NODE_TESTS /usr/include/onnx/backend/test/data/node)
if(EXISTS ${ONNX_NODE_TESTS})
  add_test(NAME conformance/onnx_node_reference
    COMMAND smelt_cli check --reference
            --expected-failures ${CMAKE_SOURCE_DIR}/tests/conformance/expected_failures.txt
            ${ONNX_NODE_TESTS})
  # the compiled path must pass everything the reference executor passes
  add_test(NAME conformance/onnx_node_compiled
    COMMAND smelt_cli check --compiled
            --expected-failures ${CMAKE_SOURCE_DIR}/tests/conformance/expected_failures.txt
            --expected-failures ${CMAKE_SOURCE_DIR}/tests/conformance/expected_failures_compiled.txt
            ${ONNX_NODE_TESTS})
  set_tests_properties(conformance/onnx_node_compiled PROPERTIES TIMEOUT 1500)
endif()

# ---- Conformance: the node tests of the current onnx release (PyPI) ----
# The onnx wheel ships the test generators, not their data: the python3 on PATH
# (pyenv's, with onnx from scripts/setup.sh) writes them into the build tree
# (about 30 s; kept while its onnx version is the same).  The compiled path builds
# C for every test, so its tests are split in two shards that ctest -j2 runs side
# by side (each about 3-4 minutes on one core of the CI machine).
find_program(SMELT_PYTHON NAMES python3)
set(SMELT_CURRENT_ONNX_DIR ${CMAKE_BINARY_DIR}/tests/current_onnx)
set(SMELT_CURRENT_ONNX_XFAIL ${CMAKE_SOURCE_DIR}/tests/conformance/expected_failures_current.txt)
if(SMELT_PYTHON)
  # include/smelt_lowbit.h's float8/float4 conversions against ml_dtypes and
  # onnx.numpy_helper: every code, and sweeps with ties, subnormals, NaN, Inf
  add_test(NAME unit/lowbit_vs_ml_dtypes
    COMMAND ${SMELT_PYTHON} ${CMAKE_SOURCE_DIR}/tests/lowbit/check_lowbit.py ${CMAKE_SOURCE_DIR})
  add_test(NAME conformance/current_onnx_generate
    COMMAND ${SMELT_PYTHON} ${CMAKE_SOURCE_DIR}/tests/conformance/gen_current_onnx.py
            --out ${SMELT_CURRENT_ONNX_DIR} --shards 2 --expect-version 1.23.2)
  set_tests_properties(conformance/current_onnx_generate PROPERTIES
    FIXTURES_SETUP current_onnx TIMEOUT 600)
  add_test(NAME conformance/current_onnx_reference
    COMMAND smelt_cli check --reference --expected-failures ${SMELT_CURRENT_ONNX_XFAIL}
            ${SMELT_CURRENT_ONNX_DIR})
  set_tests_properties(conformance/current_onnx_reference PROPERTIES
    FIXTURES_REQUIRED current_onnx TIMEOUT 600)
  foreach(shard 0 1)
    add_test(NAME conformance/current_onnx_compiled_${shard}
      COMMAND smelt_cli check --compiled --expected-failures ${SMELT_CURRENT_ONNX_XFAIL}
              --expected-failures ${CMAKE_SOURCE_DIR}/tests/conformance/expected_failures_compiled.txt
              ${SMELT_CURRENT_ONNX_DIR}/shard${shard})
    set_tests_properties(conformance/current_onnx_compiled_${shard} PROPERTIES
      FIXTURES_REQUIRED current_onnx TIMEOUT 1500)
  endforeach()
  # 905 of the 932 onnx 1.12 node tests are current tests again and generate
  # the same C: run after the shards, they load it from the compile cache
  # instead of building it a second time (side by side, both built it: with a
  # cold cache the three took 180, 175 and 160 s)
  if(TEST conformance/onnx_node_compiled)
    set_tests_properties(conformance/onnx_node_compiled PROPERTIES
      DEPENDS "conformance/current_onnx_compiled_0;conformance/current_onnx_compiled_1")
  endif()
endif()

# Generated node-test folders: conformance/NAME_cases_generate writes them
# (PYTHON SCRIPT --out DIR), then smelt check runs them on the reference
# kernels and compiled.  Here and in the model checks every `smelt check`
# names an expected-failures list (/dev/null: none), so a case that turns
# UNSUPPORTED fails instead of counting as skipped.
# Cases a generator writes (tests/conformance/SCRIPT --out DIR), checked on both
# paths; an optional fourth argument lists what the compiled path refuses (strict:
# a case that turns unsupported fails).
function(smelt_generated_cases name python script)
  set(dir ${CMAKE_BINARY_DIR}/tests/${name}_cases)
  add_test(NAME conformance/${name}_cases_generate
    COMMAND ${python} ${CMAKE_SOURCE_DIR}/tests/conformance/${script} --out ${dir})
  set_tests_properties(conformance/${name}_cases_generate PROPERTIES FIXTURES_SETUP ${name}_cases)
  foreach(mode reference compiled)
    set(expected /dev/null)
    if(mode STREQUAL compiled AND ARGC GREATER 3)
      set(expected ${CMAKE_SOURCE_DIR}/tests/conformance/${ARGV3})
    endif()
    add_test(NAME conformance/${name}_cases_${mode}
      COMMAND smelt_cli check --${mode} --expected-failures ${expected} ${dir})
    set_tests_properties(conformance/${name}_cases_${mode} PROPERTIES FIXTURES_REQUIRED ${name}_cases)
  endforeach()
endfunction()

# ---- Attribute regressions (issue #14): node tests with expected values from numpy ----
smelt_generated_cases(attr /usr/bin/python3 gen_attr_cases.py)

if(SMELT_PYTHON)
  # ---- RNN/GRU/LSTM cases beyond the ONNX node tests, expected values from ONNX Runtime ----
  smelt_generated_cases(rnn ${SMELT_PYTHON} gen_rnn_cases.py)
  # ---- sequences and optionals (ops/sequence.c) beyond the ONNX node tests, expected
  # values from numpy (lists of arrays); compiled code unrolls every case
  # (passes/unroll_containers.c) ----
  smelt_generated_cases(sequence ${SMELT_PYTHON} gen_sequence_cases.py)
  # ---- FlexAttention (ai.onnx.preview) beyond its node tests, expected values from onnx's
  # reference (compiled: modifier bodies as nodes, passes/expand_flex.c) ----
  smelt_generated_cases(flex ${SMELT_PYTHON} gen_flex_cases.py)
  # ---- ai.onnx.ml ops (Binarizer, ArrayFeatureExtractor, TreeEnsemble) beyond their node
  # tests, expected values from numpy (a tree walk per row) ----
  smelt_generated_cases(ml ${SMELT_PYTHON} gen_ml_cases.py)
  # ---- DeformConv beyond its four node tests, expected values from ONNX Runtime ----
  smelt_generated_cases(deform ${SMELT_PYTHON} gen_deform_cases.py)
  # ---- float16/bfloat16 products through the float32 kernels (passes/widen_half.c),
  # expected values: ONNX Runtime on a float32 twin, rounded once per product ----
  smelt_generated_cases(half ${SMELT_PYTHON} gen_half_cases.py)
  add_test(NAME conformance/half_cases_float32_kernels
    COMMAND sh -c "for t in conv3x3_relu_f16 conv3x3_relu_bf16; do $<TARGET_FILE:smelt_cli> compile ${CMAKE_BINARY_DIR}/tests/half_cases/test_$t/model.onnx --stats | grep -q 'ops:.*ConvNCHWc' || exit 1; done; $<TARGET_FILE:smelt_cli> compile ${CMAKE_BINARY_DIR}/tests/half_cases/test_matmul_const_bf16/model.onnx --stats | grep -q 'ops:.*MatMulPacked'")
  set_tests_properties(conformance/half_cases_float32_kernels PROPERTIES FIXTURES_REQUIRED half_cases)
  add_test(NAME conformance/half_cases_region_compiled
    COMMAND smelt_cli check --compiled --expected-failures /dev/null ${CMAKE_BINARY_DIR}/tests/half_cases-region)
  set_tests_properties(conformance/half_cases_region_compiled PROPERTIES FIXTURES_REQUIRED half_cases)
  # ---- Quantization ops (issue #10): node tests the ONNX ones leave out, expected
  # values from onnx's reference implementation (pyenv python3, onnx 1.23.2) ----
  smelt_generated_cases(quant ${SMELT_PYTHON} gen_quant_cases.py)
  # ---- ops at edge values (integer Resize rounding, ArgMax/ArgMin over NaNs), values
  # from onnx's reference ----
  smelt_generated_cases(edge_value ${SMELT_PYTHON} gen_edge_value_cases.py)
  # the int8 micro-kernel cases (quant_kernel_*) also built for the generic
  # target (the kernels' plain C branch), and the kernels must be what runs
  set(quant_kernel_dirs)
  foreach(c k_tail_7bit 8bit_stride_dilation s8_groups s8_zp_max u8_weights_zp wide_rows tasks_batch
            s8_groups_stride2_tasks
            mm_k_tail_7bit mm_no_zero_points mm_s8_8bit_runtime_zp mm_s8_zp_max mm_u8_weights_zp_tasks
            qmm_per_column_tasks qmm_s8_saturate qmm_u8_weights_s8_out qmm_yz_max
            dw_3x3_pad dw_s8_stride2_asym dw_u8_weights_dilated dw_s8_2x2_zp_max
            dw_s8_stride2_wide dw_u8_stride2_wide_pad2)
    list(APPEND quant_kernel_dirs ${CMAKE_BINARY_DIR}/tests/quant_cases/quant_kernel_${c})
  endforeach()
  add_test(NAME conformance/quant_kernel_cases_generic
    COMMAND smelt_cli check --compiled --expected-failures /dev/null --target generic ${quant_kernel_dirs})
  add_test(NAME conformance/quant_kernel_cases_use_kernels
    COMMAND smelt_cli compile ${CMAKE_BINARY_DIR}/tests/quant_cases/quant_kernel_s8_groups/model.onnx
            --dump-ir=c)
  set_tests_properties(conformance/quant_kernel_cases_use_kernels PROPERTIES
    PASS_REGULAR_EXPRESSION "smelt_uk_qgemm_u8s8\\(&")
  add_test(NAME conformance/quant_kernel_cases_use_matmul_kernel
    COMMAND smelt_cli compile ${CMAKE_BINARY_DIR}/tests/quant_cases/quant_kernel_mm_s8_8bit_runtime_zp/model.onnx
            --dump-ir=c)
  set_tests_properties(conformance/quant_kernel_cases_use_matmul_kernel PROPERTIES
    PASS_REGULAR_EXPRESSION "smelt_uk_qmatmul_u8s8\\(&" FIXTURES_REQUIRED quant_cases)
  add_test(NAME conformance/quant_kernel_cases_use_dwconv_kernel
    COMMAND smelt_cli compile ${CMAKE_BINARY_DIR}/tests/quant_cases/quant_kernel_dw_s8_stride2_asym/model.onnx
            --dump-ir=c)
  set_tests_properties(conformance/quant_kernel_cases_use_dwconv_kernel PROPERTIES
    PASS_REGULAR_EXPRESSION "smelt_uk_qdwconv_u8\\(&" FIXTURES_REQUIRED quant_cases)
  # cross-built for aarch64 (the plain C branch; the check builds with -Wall -Werror:
  # a module carries every kernel of the file and calls some) and run under qemu
  add_test(NAME aarch64/quant_kernel_cases
    COMMAND smelt_cli check --target aarch64 --expected-failures /dev/null ${CMAKE_BINARY_DIR}/tests/quant_cases/quant_kernel_k_tail_7bit
            ${CMAKE_BINARY_DIR}/tests/quant_cases/quant_kernel_mm_k_tail_7bit
            ${CMAKE_BINARY_DIR}/tests/quant_cases/quant_kernel_dw_s8_stride2_asym
            ${CMAKE_BINARY_DIR}/tests/quant_cases/quant_qadd_u8_tail)
  set_tests_properties(conformance/quant_kernel_cases_generic conformance/quant_kernel_cases_use_kernels
    aarch64/quant_kernel_cases PROPERTIES FIXTURES_REQUIRED quant_cases)
  # ---- graphs with float8/float4/int4/int2 tensors: packed initializers, low-bit
  # values between nodes and as outputs (include/smelt_lowbit.h) ----
  smelt_generated_cases(lowbit ${SMELT_PYTHON} gen_lowbit_cases.py)
  # ---- If/Loop/Scan (issue #14): nested bodies, outer-scope values, run-time trip
  # counts, while loops, reversed scans; expected values from ONNX Runtime ----
  # strict (an expected-failures list: a case that turns unsupported fails): none on
  # the reference path, Scan-8 on the compiled one
  smelt_generated_cases(control ${SMELT_PYTHON} gen_control_cases.py expected_failures_control.txt)
  # every allocation of compiling an If nested in a Loop body refused in turn
  add_test(NAME unit/test_alloc_fail_compile_control
    COMMAND test_alloc_fail_compile
            ${CMAKE_BINARY_DIR}/tests/control_cases/control_nested_if_in_loop/model.onnx avx2)
  set_tests_properties(unit/test_alloc_fail_compile_control PROPERTIES
    FIXTURES_REQUIRED control_cases TIMEOUT 600)
  # ---- NonMaxSuppression with a data-dependent row count K (0 included) and the ops
  # after it over K rows: RoiAlign, Gather, Gemm, two counts in one graph; expected
  # values from onnx's reference; NonZero, Compress; a ReduceSum over K is refused
  # compiled ----
  smelt_generated_cases(detect ${SMELT_PYTHON} gen_detect_cases.py expected_failures_detect.txt)
endif()

# ---- Models quantized by onnxruntime.quantization (issue #10), checked against
# ONNX Runtime's outputs within the tolerance tolerance.txt gives and explains ----
if(SMELT_PYTHON)
  set(SMELT_QUANT_MODEL_DIR ${CMAKE_BINARY_DIR}/models_quant)
  add_test(NAME models/quant_generate
    COMMAND ${SMELT_PYTHON} ${CMAKE_SOURCE_DIR}/tests/models/gen_quant_models.py
            --out ${SMELT_QUANT_MODEL_DIR})
  set_tests_properties(models/quant_generate PROPERTIES FIXTURES_SETUP quant_models TIMEOUT 300)
  foreach(mode reference compiled)
    add_test(NAME models/quant_${mode}
      COMMAND ${SMELT_PYTHON} ${CMAKE_SOURCE_DIR}/tests/models/check_quant_models.py
              $<TARGET_FILE:smelt_cli> --${mode} ${SMELT_QUANT_MODEL_DIR} qdq_cnn qop_cnn qdq_conv_relu qdq_mlp dynamic_mlp)
    set_tests_properties(models/quant_${mode} PROPERTIES FIXTURES_REQUIRED quant_models)
  endforeach()
  # the int8 kernels' file in AOT packages built with AVX2 by GCC and clang
  # (-Wall -Wextra -Werror): GCC 12 warned of undefined behaviour in
  # smelt_uk_dynq_u8's tail loops when it cloned it for a constant n, clang of
  # the unused plain C helpers
  foreach(cc cc clang)
    foreach(m dynamic_mlp qdq_cnn)
      add_test(NAME aot/quant_${m}_avx2_${cc}
        COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/aot/check_aot.py $<TARGET_FILE:smelt_cli>
                ${SMELT_QUANT_MODEL_DIR}/${m} ${CMAKE_BINARY_DIR}/aot/quant_${m}_avx2_${cc})
      set_tests_properties(aot/quant_${m}_avx2_${cc} PROPERTIES FIXTURES_REQUIRED quant_models
        ENVIRONMENT "AOT_CC=${cc} -mavx2 -mfma")
    endforeach()
  endforeach()
  # smelt quantize against onnxruntime's quantize_static and ONNX Runtime's outputs
  add_test(NAME models/smelt_quantize
    COMMAND ${SMELT_PYTHON} ${CMAKE_SOURCE_DIR}/tests/models/check_smelt_quantize.py
            $<TARGET_FILE:smelt_cli> ${CMAKE_BINARY_DIR}/smelt_quantize)
  set_tests_properties(models/smelt_quantize PROPERTIES TIMEOUT 600)
  # every allocation of the QDQ CNN's compile (fuse_qdq, the integer ops) refused in turn
  add_test(NAME unit/test_alloc_fail_compile_qdq
    COMMAND test_alloc_fail_compile ${SMELT_QUANT_MODEL_DIR}/qdq_cnn/model.onnx avx2)
  set_tests_properties(unit/test_alloc_fail_compile_qdq PROPERTIES
    FIXTURES_REQUIRED quant_models TIMEOUT 600)
  # the same with 16-byte arena blocks (a failure inside any IR builder):
  # QuantizeLinear's compute read the dtype of a NULL expression
  add_test(NAME unit/test_alloc_fail_compile_qdq_per_node
    COMMAND test_alloc_fail_compile ${SMELT_QUANT_MODEL_DIR}/qdq_cnn/model.onnx avx2)
  set_tests_properties(unit/test_alloc_fail_compile_qdq_per_node PROPERTIES
    FIXTURES_REQUIRED quant_models TIMEOUT 900 ENVIRONMENT SMELT_ALLOC_FAIL_BLOCK=16)
endif()

# ---- Models: real architectures exported by torch.onnx, checked against torch ----
set(SMELT_MODEL_DIR ${CMAKE_BINARY_DIR}/models)
add_test(NAME models/generate
  COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/models/gen_models.py --out ${SMELT_MODEL_DIR})
set_tests_properties(models/generate PROPERTIES FIXTURES_SETUP torch_models TIMEOUT 900)
set(SMELT_TEST_MODELS resnet50 resnet18 mobilenet_v2 mobilenet_v3_small efficientnet_b0
    densenet121 googlenet squeezenet1_0 bert_tiny_like gpt2_tiny_like lstm_lm gru_lm
    bert_tiny_dynseq gpt2_tiny_decoder detect_head)
foreach(m ${SMELT_TEST_MODELS})
  add_test(NAME models/${m}_reference
    COMMAND smelt_cli check --reference --expected-failures /dev/null --rtol 1e-3 --atol 1e-4 ${SMELT_MODEL_DIR}/${m})
  set_tests_properties(models/${m}_reference PROPERTIES FIXTURES_REQUIRED torch_models)
  add_test(NAME models/${m}_compiled
    COMMAND smelt_cli check --compiled --expected-failures /dev/null --rtol 1e-3 --atol 1e-4 ${SMELT_MODEL_DIR}/${m})
  set_tests_properties(models/${m}_compiled PROPERTIES FIXTURES_REQUIRED torch_models TIMEOUT 900)
endforeach()
# Run-time dims: BERT exported with a symbolic length, compiled ONCE for 1..63
# (its hidden size is 64) and checked at lengths 16, 1, 7 and 63 against torch
add_test(NAME models/bert_tiny_dynseq_rt_dims
  COMMAND smelt_cli check --compiled --dim seq=1..63 --expected-failures /dev/null --rtol 1e-3
          --atol 1e-4 ${SMELT_MODEL_DIR}/bert_tiny_dynseq)
set_tests_properties(models/bert_tiny_dynseq_rt_dims PROPERTIES FIXTURES_REQUIRED torch_models)
# A decoder with a key/value cache compiled ONCE for past = 1..62 and checked at
# past 9, 1, 2, 31 and 62 against torch (presents one row longer than the past)
add_test(NAME models/gpt2_tiny_decoder_rt_dims
  COMMAND smelt_cli check --compiled --dim past=1..62 --expected-failures /dev/null --rtol 1e-3
          --atol 1e-4 ${SMELT_MODEL_DIR}/gpt2_tiny_decoder)
set_tests_properties(models/gpt2_tiny_decoder_rt_dims PROPERTIES FIXTURES_REQUIRED torch_models)
# A torch.jit.script model whose export is a Loop (trip count a model input) with a
# data-dependent If inside, checked against torch's outputs (issue #14)
set(SMELT_CONTROL_MODEL_DIR ${CMAKE_BINARY_DIR}/tests/control_model)
add_test(NAME models/control_torch_generate
  COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/models/gen_control_model.py
          --out ${SMELT_CONTROL_MODEL_DIR})
set_tests_properties(models/control_torch_generate PROPERTIES FIXTURES_SETUP control_model)
# the loop body goes through the graph passes: its Gemm packs and fuses with Tanh
add_test(NAME models/control_torch_fusion
  COMMAND sh -c "\"$0\" compile --stats --json '${SMELT_CONTROL_MODEL_DIR}/control_torch/model.onnx' | grep -F '[\"MatMulPacked\", \"Add\", \"Tanh\"]'"
          $<TARGET_FILE:smelt_cli>)
set_tests_properties(models/control_torch_fusion PROPERTIES FIXTURES_REQUIRED control_model)
foreach(mode reference compiled)
  add_test(NAME models/control_torch_${mode}
    COMMAND smelt_cli check --${mode} --rtol 1e-4 --atol 1e-5 --expected-failures /dev/null
            ${SMELT_CONTROL_MODEL_DIR})
  set_tests_properties(models/control_torch_${mode} PROPERTIES FIXTURES_REQUIRED control_model)
endforeach()
# Outputs must not depend on the optimisation level: a few models also at -O0
# (the _compiled tests above run at the default -O2, the highest level in use).
foreach(m resnet18 mobilenet_v2 bert_tiny_like)
  add_test(NAME models/${m}_O0
    COMMAND smelt_cli check --compiled --expected-failures /dev/null -O0 --rtol 1e-3 --atol 1e-4 ${SMELT_MODEL_DIR}/${m})
  set_tests_properties(models/${m}_O0 PROPERTIES FIXTURES_REQUIRED torch_models TIMEOUT 900)
endforeach()
foreach(level O0 O3)
  add_test(NAME models/tiny_cnn_${level}
    COMMAND smelt_cli check --compiled --expected-failures /dev/null -${level} --rtol 1e-3 --atol 1e-4 ${CMAKE_SOURCE_DIR}/models/tiny_cnn)
endforeach()
# The generated C built in 4 parts compiled at once, then linked,
# in a cache of its own so that no earlier build of the same source is reused
set(SMELT_PARTS_CACHE ${CMAKE_BINARY_DIR}/tests/parts_cache)
add_test(NAME models/tiny_cnn_parts
  COMMAND sh -c "rm -rf '${SMELT_PARTS_CACHE}' && SMELT_CC_PARTS=4 SMELT_CACHE_DIR='${SMELT_PARTS_CACHE}' \"$0\" check --compiled --expected-failures /dev/null --rtol 1e-3 --atol 1e-4 '${CMAKE_SOURCE_DIR}/models/tiny_cnn'"
          $<TARGET_FILE:smelt_cli>)
foreach(mode reference compiled)
  add_test(NAME models/tiny_cnn_${mode}
    COMMAND smelt_cli check --${mode} --expected-failures /dev/null --rtol 1e-3 --atol 1e-4 ${CMAKE_SOURCE_DIR}/models/tiny_cnn)
endforeach()

# ---- Errors: bad and hostile models give a clean error, never a crash ----
# gen_bad_models.py writes the cases (Debian's python3 has onnx); the driver
# checks exit status 1 and the expected message of each.
set(SMELT_BAD_MODEL_DIR ${CMAKE_BINARY_DIR}/tests/bad_models)
add_test(NAME errors/generate
  COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/errors/gen_bad_models.py
          --out ${SMELT_BAD_MODEL_DIR})
set_tests_properties(errors/generate PROPERTIES FIXTURES_SETUP bad_models TIMEOUT 120)
add_test(NAME errors/bad_models
  COMMAND ${CMAKE_SOURCE_DIR}/tests/errors/check_bad_models.sh $<TARGET_FILE:smelt_cli>
          ${SMELT_BAD_MODEL_DIR})
set_tests_properties(errors/bad_models PROPERTIES FIXTURES_REQUIRED bad_models TIMEOUT 600)
add_test(NAME errors/data_errors
  COMMAND ${CMAKE_SOURCE_DIR}/tests/errors/check_data_errors.sh $<TARGET_FILE:smelt_cli>
          ${CMAKE_SOURCE_DIR}/tests/models)
set_tests_properties(errors/data_errors PROPERTIES TIMEOUT 300)
# Allocation failures while loading each bad model: clean errors, no leaks.
add_test(NAME errors/bad_models_alloc_fail
  COMMAND test_frontend_fuzz --alloc-fail ${SMELT_BAD_MODEL_DIR})
set_tests_properties(errors/bad_models_alloc_fail PROPERTIES FIXTURES_REQUIRED bad_models TIMEOUT 600)
# Many threads on shared compiled models (issue 15); the C API's calls.
foreach(t test_api_threads test_api_calls)
  target_compile_definitions(${t} PRIVATE
    SMELT_TINY_CNN_PATH="${CMAKE_SOURCE_DIR}/models/tiny_cnn/model.onnx"
    SMELT_ATTENTION_PATH="${CMAKE_SOURCE_DIR}/tests/models/small/attention.onnx"
    SMELT_TWO_INPUTS_PATH="${CMAKE_SOURCE_DIR}/tests/models/small/two_inputs.onnx")
endforeach()
# Run-time dims: one compile of a model with a symbolic length serves every length.
target_compile_definitions(test_rt_dims PRIVATE
  SMELT_SEQ_BLOCK_PATH="${CMAKE_SOURCE_DIR}/tests/models/small/seq_block.onnx"
  SMELT_SEQ_MEAN_PATH="${CMAKE_SOURCE_DIR}/tests/models/small/seq_mean.onnx"
  SMELT_SEQ_TWICE_PATH="${CMAKE_SOURCE_DIR}/tests/models/small/seq_twice.onnx"
  SMELT_SEQ_POSMEAN_PATH="${CMAKE_SOURCE_DIR}/tests/models/small/seq_posmean.onnx"
  SMELT_KV_CACHE_PATH="${CMAKE_SOURCE_DIR}/tests/models/small/kv_cache.onnx"
  SMELT_KV_CACHE_MASK_PATH="${CMAKE_SOURCE_DIR}/tests/models/small/kv_cache_mask.onnx"
  SMELT_SEQ_SHIFT_PATH="${CMAKE_SOURCE_DIR}/tests/models/small/seq_shift.onnx"
  SMELT_BATCH_SEQ_PATH="${CMAKE_SOURCE_DIR}/tests/models/small/batch_seq.onnx")
target_compile_definitions(test_specialize PRIVATE
  SMELT_SEQ_BLOCK_PATH="${CMAKE_SOURCE_DIR}/tests/models/small/seq_block.onnx"
  SMELT_RESIZE_SCALES_PATH="${CMAKE_SOURCE_DIR}/tests/models/small/resize_scales.onnx")
# Mutation and allocation-failure tests start from the checked-in tiny CNN.
target_compile_definitions(test_frontend_fuzz PRIVATE
  SMELT_TINY_CNN_PATH="${CMAKE_SOURCE_DIR}/models/tiny_cnn/model.onnx")
set_tests_properties(unit/test_frontend_fuzz PROPERTIES TIMEOUT 300)

# ---- Fuzzing: libFuzzer harnesses (see docs/fuzzing.md) ----
# Every build replays each harness's seed corpus and crash regressions
# (replay_main.c stands in for libFuzzer); -DSMELT_FUZZ=ON (clang) also
# builds the real fuzzers and runs each for 60 s.
#   onnx_import  ONNX bytes -> decode, import, shape inference (+ reference run)
#   pipeline     a byte recipe -> generated model -> import, lower, emit C
#   runtime      fuzzed calls into libsmelt_rt on a small compiled module
#   records      tuning records -> loaded -> their schedule texts replayed and
#                lowered on the tiny CNN
#   differential a byte recipe -> generated model -> reference vs compiled
#                (host -O2, generic -O0): outputs must match
#   schedule     a --schedule file's text -> parsed -> applied to the tiny CNN
set(SMELT_FUZZ_HARNESSES onnx_import pipeline runtime records differential schedule)
set(SMELT_FUZZ_SRCS_pipeline tests/fuzz/recipe_model.c tests/fuzz/recipe_patterns.c)
set(SMELT_FUZZ_SRCS_differential tests/fuzz/recipe_model.c tests/fuzz/recipe_patterns.c)
foreach(h ${SMELT_FUZZ_HARNESSES})
  set(dirs ${CMAKE_SOURCE_DIR}/tests/fuzz/corpus/${h} ${CMAKE_SOURCE_DIR}/tests/fuzz/regressions/${h})
  add_executable(fuzz_${h}_replay tests/fuzz/fuzz_${h}.c ${SMELT_FUZZ_SRCS_${h}} tests/fuzz/replay_main.c)
  target_link_libraries(fuzz_${h}_replay PRIVATE "$<LINK_LIBRARY:WHOLE_ARCHIVE,smelt>")
  set_target_properties(fuzz_${h}_replay PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  add_test(NAME fuzz/${h}_replay COMMAND fuzz_${h}_replay ${dirs})
  set_tests_properties(fuzz/${h}_replay PROPERTIES ENVIRONMENT SMELT_FUZZ_RUN=1 TIMEOUT 300)
  if(SMELT_FUZZ)
    add_executable(fuzz_${h} tests/fuzz/fuzz_${h}.c ${SMELT_FUZZ_SRCS_${h}})
    target_link_libraries(fuzz_${h} PRIVATE "$<LINK_LIBRARY:WHOLE_ARCHIVE,smelt>")
    target_compile_options(fuzz_${h} PRIVATE -fsanitize=fuzzer)
    target_link_options(fuzz_${h} PRIVATE -fsanitize=fuzzer)
    set_target_properties(fuzz_${h} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fuzz)
    set(dict)
    if(h STREQUAL onnx_import)
      set(dict -dict=${CMAKE_SOURCE_DIR}/tests/fuzz/onnx.dict)
    elseif(h STREQUAL schedule OR h STREQUAL records)
      set(dict -dict=${CMAKE_SOURCE_DIR}/tests/fuzz/schedule.dict)
    endif()
    # mutates a scratch copy: the checked-in corpus only changes by hand
    set(scratch ${CMAKE_BINARY_DIR}/fuzz/scratch_${h})
    file(MAKE_DIRECTORY ${scratch} ${CMAKE_BINARY_DIR}/fuzz/artifacts)
    add_test(NAME fuzz/${h}_brief
      COMMAND ${CMAKE_COMMAND} -E env SMELT_FUZZ_RUN=1
              $<TARGET_FILE:fuzz_${h}> -max_total_time=60 -timeout=10 -rss_limit_mb=2048 ${dict}
              -artifact_prefix=${CMAKE_BINARY_DIR}/fuzz/artifacts/${h}-
              ${scratch} ${dirs})
    # each wants a core for its minute: scripts/test.sh runs them with
    # ctest -j$(nproc), as many at once as there are cores
    set_tests_properties(fuzz/${h}_brief PROPERTIES TIMEOUT 300)
  endif()
endforeach()
# the runtime harness builds its module through the compile cache at startup;
# the records and schedule harnesses lower the tiny CNN
foreach(h runtime records schedule)
  target_compile_definitions(fuzz_${h}_replay PRIVATE
    SMELT_TINY_CNN_PATH="${CMAKE_SOURCE_DIR}/models/tiny_cnn/model.onnx")
  if(SMELT_FUZZ)
    target_compile_definitions(fuzz_${h} PRIVATE
      SMELT_TINY_CNN_PATH="${CMAKE_SOURCE_DIR}/models/tiny_cnn/model.onnx")
  endif()
endforeach()

# Hostile names end to end: JIT, reference and AOT outputs right, and the
# generated C holds no name raw (issue 5).
add_test(NAME errors/hostile_names
  COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/errors/check_hostile_names.py
          $<TARGET_FILE:smelt_cli> ${CMAKE_BINARY_DIR}/tests/hostile_names)
set_tests_properties(errors/hostile_names PROPERTIES TIMEOUT 300)

# ---- AOT: packages build standalone (cc -std=c99 -O2 -Wall -Werror) and match ----
add_test(NAME aot/tiny_cnn_embedded
  COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/aot/check_aot.py $<TARGET_FILE:smelt_cli>
          ${CMAKE_SOURCE_DIR}/models/tiny_cnn ${CMAKE_BINARY_DIR}/aot/tiny_cnn --embed-weights)
add_test(NAME aot/data_error
  COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/aot/check_aot_data_error.py $<TARGET_FILE:smelt_cli>
          ${CMAKE_SOURCE_DIR}/tests/models/small/gather_chain.onnx ${CMAKE_BINARY_DIR}/aot/data_error)
add_test(NAME aot/resnet18
  COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/aot/check_aot.py $<TARGET_FILE:smelt_cli>
          ${SMELT_MODEL_DIR}/resnet18 ${CMAKE_BINARY_DIR}/aot/resnet18)
set_tests_properties(aot/resnet18 PROPERTIES FIXTURES_REQUIRED torch_models TIMEOUT 900)
# a detection model's package: NonMaxSuppression's count taken at run time,
# the outputs' rows the run's count (smelt_rt_model_invoke's sizes)
add_test(NAME aot/detect_head
  COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/aot/check_aot.py $<TARGET_FILE:smelt_cli>
          ${SMELT_MODEL_DIR}/detect_head ${CMAKE_BINARY_DIR}/aot/detect_head)
set_tests_properties(aot/detect_head PROPERTIES FIXTURES_REQUIRED torch_models TIMEOUT 600)

# ---- Golden generated C for small graphs (codegen drift shows in review) ----
add_test(NAME golden/graph_c
  COMMAND ${CMAKE_SOURCE_DIR}/tests/golden/check_graph_golden.sh $<TARGET_FILE:smelt_cli>
          ${CMAKE_SOURCE_DIR}/tests/golden)

# ---- CLI contract: help, usage errors (status 2), failures naming the model ----
add_test(NAME cli/usage_and_errors
  COMMAND ${CMAKE_SOURCE_DIR}/tests/cli/check_cli.sh $<TARGET_FILE:smelt_cli>
          ${CMAKE_SOURCE_DIR}/models/tiny_cnn)
# strict input bindings, numbers, empty check folders, several models,
# colliding output names, dumps on stdout, --version, bench --json (issue 15)
add_test(NAME cli/strict
  COMMAND ${CMAKE_SOURCE_DIR}/tests/cli/check_cli_strict.sh $<TARGET_FILE:smelt_cli>
          ${CMAKE_SOURCE_DIR}/models/tiny_cnn)
# --schedule FILE: hand-written schedules for named tasks, errors naming the line and step
add_test(NAME cli/schedule_file
  COMMAND ${CMAKE_SOURCE_DIR}/tests/cli/check_schedule.sh $<TARGET_FILE:smelt_cli>
          ${CMAKE_SOURCE_DIR}/models/tiny_cnn)

# Pipeline crashes kept as the models their recipes made (a recipe picks ops
# by ops.def index, so it names another model once ops are added).
add_test(NAME fuzz/pipeline_models_replay
  COMMAND fuzz_pipeline_replay ${CMAKE_SOURCE_DIR}/tests/fuzz/regressions/pipeline_models)
set_tests_properties(fuzz/pipeline_models_replay PROPERTIES
  ENVIRONMENT "SMELT_FUZZ_MODEL_INPUT=1" TIMEOUT 300)
# Differential mismatches kept likewise as models: reference vs compiled.
add_test(NAME fuzz/differential_models_replay
  COMMAND fuzz_differential_replay ${CMAKE_SOURCE_DIR}/tests/fuzz/regressions/differential_models)
set_tests_properties(fuzz/differential_models_replay PROPERTIES
  ENVIRONMENT "SMELT_FUZZ_MODEL_INPUT=1" TIMEOUT 300)

# ---- Transformer patterns: decomposed LayerNorm / GELU / attention recognised,
# and each LayerNormalization, Gelu and FusedAttention one generated function
# (--stats --json);
# outputs the same at every optimisation level ----
add_test(NAME models/transformer_fusion
  COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/models/check_fusion.py
          $<TARGET_FILE:smelt_cli> ${SMELT_MODEL_DIR}
          bert_tiny_like:5:2:2 gpt2_tiny_like:5:2:2)
set_tests_properties(models/transformer_fusion PROPERTIES FIXTURES_REQUIRED torch_models TIMEOUT 300)
foreach(m bert_tiny_like gpt2_tiny_like)
  foreach(level O1 O3)
    add_test(NAME models/${m}_${level}
      COMMAND smelt_cli check --compiled --expected-failures /dev/null -${level} --rtol 1e-3 --atol 1e-4 ${SMELT_MODEL_DIR}/${m})
    set_tests_properties(models/${m}_${level} PROPERTIES FIXTURES_REQUIRED torch_models TIMEOUT 900)
  endforeach()
endforeach()
add_test(NAME models/gpt2_tiny_like_O0
  COMMAND smelt_cli check --compiled --expected-failures /dev/null -O0 --rtol 1e-3 --atol 1e-4 ${SMELT_MODEL_DIR}/gpt2_tiny_like)
set_tests_properties(models/gpt2_tiny_like_O0 PROPERTIES FIXTURES_REQUIRED torch_models TIMEOUT 900)

# The string maps' hash key is random per process: the printed IR, the C and
# the compile cache keys must not change with it (issue 5).
add_test(NAME errors/hash_key_determinism
  COMMAND ${CMAKE_SOURCE_DIR}/tests/errors/check_hash_determinism.sh $<TARGET_FILE:smelt_cli>
          ${CMAKE_SOURCE_DIR}/models/tiny_cnn/model.onnx ${SMELT_BAD_MODEL_DIR}/ext_symlink_inside/model.onnx)
set_tests_properties(errors/hash_key_determinism PROPERTIES FIXTURES_REQUIRED bad_models TIMEOUT 300)
# The run calls' input checks use the checked-in tiny CNN.
target_compile_definitions(test_runtime_api_checks PRIVATE
  SMELT_TINY_CNN_PATH="${CMAKE_SOURCE_DIR}/models/tiny_cnn/model.onnx")

# ---- Blocked layout: CNN convolution chains in NCHW16c with at most two
# conversions, epilogues (Clip, Relu, residual Add) fused into the blocked
# convs, ResNet-50 within 60 functions and a quarter-size arena ----
add_test(NAME models/cnn_layout
  COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/models/check_layout.py
          $<TARGET_FILE:smelt_cli> ${SMELT_MODEL_DIR} mobilenet_v2:54 resnet50:60)
set_tests_properties(models/cnn_layout PROPERTIES FIXTURES_REQUIRED torch_models TIMEOUT 600)

# A 150-input Concat compiles (split_args) and matches numpy at -O0 and -O2.
add_test(NAME models/wide_concat
  COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/models/check_wide_concat.py
          $<TARGET_FILE:smelt_cli> ${CMAKE_BINARY_DIR}/tests/wide_concat)

# ---- The tuner end to end on the tiny CNN (seconds): records applied,
# crashing/hanging/wrong candidates recorded as invalid, a killed run resumes
# without re-measuring (issue 9) ----
add_test(NAME tune/end_to_end
  COMMAND ${CMAKE_SOURCE_DIR}/tests/tune/check_tune.sh $<TARGET_FILE:smelt_cli>
          ${CMAKE_SOURCE_DIR}/models/tiny_cnn)
# not RUN_SERIAL: nothing it checks depends on timing (its polls wait for
# progress, not for a time), and a serial test leaves the other core idle
set_tests_properties(tune/end_to_end PROPERTIES TIMEOUT 900)

# ---- Distributed tuning: mpirun -np 2 smelt tune on this host (issue 9, item
# 7): rank 1 measures, rank 0 records; a SIGKILLed rank loses only its
# in-flight candidates; ranks with other tasks are refused.  Skipped, with
# the reason, where the CLI was built without MPI or mpirun is missing
# (scripts/setup.sh installs both) ----
if(MPI_C_FOUND)
  set(SMELT_CLI_MPI ON)
else()
  set(SMELT_CLI_MPI OFF)
endif()
add_test(NAME tune/mpi
  COMMAND ${CMAKE_SOURCE_DIR}/tests/tune/check_mpi.sh $<TARGET_FILE:smelt_cli>
          ${CMAKE_SOURCE_DIR}/models/tiny_cnn ${SMELT_CLI_MPI})
# RUN_SERIAL: a rank silent for 10 s counts as dead (tune_mpi.c), and beside
# another test on a loaded 2-core machine the sanitized ranks went silent that
# long (rank 1 was counted lost in the basic run)
set_tests_properties(tune/mpi PROPERTIES TIMEOUT 300 RUN_SERIAL TRUE SKIP_RETURN_CODE 77)

# Allocation failures through the whole compile (load, optimise, lower, emit):
# every allocation refused in turn (issue 16).
target_compile_definitions(test_alloc_fail_compile PRIVATE SMELT_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
target_compile_definitions(test_sequence_values PRIVATE SMELT_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
add_test(NAME unit/test_alloc_fail_compile_per_node COMMAND test_alloc_fail_compile --per-node)
# run-time dims: the range's second imports and comparison, te marking, nests, module info
add_test(NAME unit/test_alloc_fail_compile_rt_dims
  COMMAND test_alloc_fail_compile ${CMAKE_SOURCE_DIR}/tests/models/small/dynamic_batch.onnx avx2 batch 1 8)
# inputs and outputs laid out at the run's dims: the accesses' proof (kv_cache), and
# the compile tried again with a value staged when a product's tiles round its rows up
add_test(NAME unit/test_alloc_fail_compile_dense_kv
  COMMAND test_alloc_fail_compile ${CMAKE_SOURCE_DIR}/tests/models/small/kv_cache.onnx avx2 past 1 40)
add_test(NAME unit/test_alloc_fail_compile_dense_retry
  COMMAND test_alloc_fail_compile ${CMAKE_SOURCE_DIR}/tests/models/small/batch_seq.onnx avx2 seq 1 40)
# float16 products widened to float32 (passes/widen_half.c: casts, converted weights)
add_test(NAME unit/test_alloc_fail_compile_half
  COMMAND test_alloc_fail_compile ${CMAKE_SOURCE_DIR}/tests/models/small/half_conv.onnx avx2)
set_tests_properties(unit/test_alloc_fail_compile unit/test_alloc_fail_compile_per_node
  unit/test_alloc_fail_compile_half PROPERTIES TIMEOUT 600)

# ---- Python package (python/): its pytest suite over this build's libsmelt.so ----
# SMELT_PYTHON (found above: pyenv's python3 with numpy, onnx, onnxruntime, pytest from
# scripts/setup.sh), not Debian's, which the model generators above use.
set(SMELT_PYTEST_ENV "SMELT_LIB=$<TARGET_FILE:smelt_shared>" PYTHONDONTWRITEBYTECODE=1)
if(SMELT_SANITIZE AND CMAKE_C_COMPILER_ID STREQUAL "GNU")
  # an ASan library loaded into python needs the ASan runtime loaded first;
  # python itself is not instrumented and keeps memory at exit: no leak report;
  # a small quarantine keeps freed outputs from looking like growth (test_run.py)
  execute_process(COMMAND ${CMAKE_C_COMPILER} -print-file-name=libasan.so
                  OUTPUT_VARIABLE SMELT_LIBASAN OUTPUT_STRIP_TRAILING_WHITESPACE)
  list(APPEND SMELT_PYTEST_ENV "LD_PRELOAD=${SMELT_LIBASAN}" "ASAN_OPTIONS=detect_leaks=0:quarantine_size_mb=4")
endif()
if(SMELT_PYTHON AND NOT (SMELT_SANITIZE AND NOT CMAKE_C_COMPILER_ID STREQUAL "GNU"))
  add_test(NAME python/pytest
    COMMAND ${SMELT_PYTHON} -m pytest -q -p no:cacheprovider ${CMAKE_SOURCE_DIR}/python/tests)
  set_tests_properties(python/pytest PROPERTIES ENVIRONMENT "${SMELT_PYTEST_ENV}" TIMEOUT 600)
  # token-by-token decoding (one compile for every past length, the cache fed
  # back each step) against ONNX Runtime's full-sequence logits
  add_test(NAME models/gpt2_tiny_decoder_steps
    COMMAND ${SMELT_PYTHON} ${CMAKE_SOURCE_DIR}/bench/decode.py ${SMELT_MODEL_DIR}/gpt2_tiny_decoder
            --check 40 --prompt 3 --threads 2)
  set_tests_properties(models/gpt2_tiny_decoder_steps PROPERTIES ENVIRONMENT "${SMELT_PYTEST_ENV}"
    FIXTURES_REQUIRED torch_models TIMEOUT 600)
endif()

# ---- Soak run (scripts/soak.sh; built, not run by ctest) ----
add_executable(smelt_soak tests/soak/soak.c)
target_link_libraries(smelt_soak PRIVATE "$<LINK_LIBRARY:WHOLE_ARCHIVE,smelt>")
set_target_properties(smelt_soak PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)

# ---- Installed libraries used from outside through pkg-config (issue 15) ----
add_test(NAME install/pkg_config
  COMMAND ${CMAKE_SOURCE_DIR}/tests/install/check_install.sh ${CMAKE_BINARY_DIR}
          ${CMAKE_SOURCE_DIR} ${CMAKE_SOURCE_DIR}/models/tiny_cnn/model.onnx
          $<$<BOOL:${SMELT_SANITIZE}>:-fsanitize=address,undefined>)

# ---- AOT packages inside applications: size macros, model_run_static with
# static buffers, ARCH / lib targets, no stale files (issue 15) ----
add_test(NAME aot/embedding
  COMMAND ${CMAKE_SOURCE_DIR}/tests/aot/check_aot_embedding.sh $<TARGET_FILE:smelt_cli>
          ${CMAKE_SOURCE_DIR}/models/tiny_cnn ${CMAKE_SOURCE_DIR}/tests/models/small/attention.onnx
          ${CMAKE_SOURCE_DIR}/tests/models/small/softmax_row.onnx)
add_test(NAME aot/rt_dims
  COMMAND ${CMAKE_SOURCE_DIR}/tests/aot/check_aot_rt_dims.sh $<TARGET_FILE:smelt_cli>
          ${CMAKE_SOURCE_DIR}/tests/models/small/seq_block.onnx
          ${CMAKE_SOURCE_DIR}/tests/aot/rt_dims_driver.c ${CMAKE_BINARY_DIR}/aot/rt_dims)
add_test(NAME aot/kv_cache
  COMMAND ${CMAKE_SOURCE_DIR}/tests/aot/check_aot_kv_cache.sh $<TARGET_FILE:smelt_cli>
          ${CMAKE_SOURCE_DIR}/tests/models/small/kv_cache.onnx
          ${CMAKE_SOURCE_DIR}/tests/aot/kv_cache_driver.c ${CMAKE_BINARY_DIR}/aot/kv_cache)

# bench/fma_peak.c (the FMA peak the benchmarks and examples/gemm_schedule.py
# compare with) must build with the host's own flags: its 512-bit vectors did
# not on AVX2 machines ('impossible constraint in asm')
add_test(NAME bench/fma_peak_builds
  COMMAND cc -O2 -march=native -pthread -c ${CMAKE_SOURCE_DIR}/bench/fma_peak.c
          -o ${CMAKE_BINARY_DIR}/fma_peak.o)

# bench/int8_peak.c (the AVX2 int8 ceiling docs/benchmarks.md quotes) builds
if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64")
  add_test(NAME bench/int8_peak_builds
    COMMAND cc -O3 -mavx2 -c ${CMAKE_SOURCE_DIR}/bench/int8_peak.c -o ${CMAKE_BINARY_DIR}/int8_peak.o)
endif()

# ---- aarch64 (NEON): cross-built with Debian's gcc-aarch64-linux-gnu, run under qemu-user ----
target_compile_definitions(test_target_aarch64 PRIVATE SMELT_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
add_test(NAME aarch64/tiny_cnn_check
  COMMAND smelt_cli check --target aarch64 --expected-failures /dev/null --rtol 1e-3 --atol 1e-4 ${CMAKE_SOURCE_DIR}/models/tiny_cnn)
add_test(NAME aarch64/tiny_cnn_package
  COMMAND ${CMAKE_SOURCE_DIR}/tests/aarch64/check_package.sh $<TARGET_FILE:smelt_cli>
          ${CMAKE_SOURCE_DIR}/models/tiny_cnn ${CMAKE_BINARY_DIR}/aarch64/tiny_cnn)
# what cannot work says why: aarch64 code in an x86 process, a missing cross compiler
add_test(NAME aarch64/run_refused
  COMMAND smelt_cli run --target aarch64 ${CMAKE_SOURCE_DIR}/models/tiny_cnn/model.onnx)
set_tests_properties(aarch64/run_refused PROPERTIES
  PASS_REGULAR_EXPRESSION "target 'aarch64' is another architecture than this host's, so its code cannot run in this process: `smelt check --target aarch64` runs a model under qemu-aarch64")
add_test(NAME aarch64/missing_cross_cc
  COMMAND smelt_cli check --target aarch64 ${CMAKE_SOURCE_DIR}/models/tiny_cnn)
set_tests_properties(aarch64/missing_cross_cc PROPERTIES
  ENVIRONMENT "SMELT_CROSS_CC=/nonexistent/aarch64-gcc"
  PASS_REGULAR_EXPRESSION "FAIL tiny_cnn: cross-building the model for target 'aarch64' with /nonexistent/aarch64-gcc: cannot run '/nonexistent/aarch64-gcc': No such file or directory \\(is it installed\\? scripts/setup.sh installs it\\)")
# models with symbolic dims under qemu: compiled once for a range (run-time
# dims; a key/value cache read and written at the run's length, the outputs'
# dims from the program) and one program per input signature without --dim
add_test(NAME aarch64/gpt2_tiny_decoder_rt_dims
  COMMAND smelt_cli check --target aarch64 --dim past=1..62 --expected-failures /dev/null
          --rtol 1e-3 --atol 1e-4 ${SMELT_MODEL_DIR}/gpt2_tiny_decoder)
add_test(NAME aarch64/bert_tiny_dynseq_specialized
  COMMAND smelt_cli check --target aarch64 --expected-failures /dev/null --rtol 1e-3 --atol 1e-4
          ${SMELT_MODEL_DIR}/bert_tiny_dynseq)
# NonMaxSuppression's count written by the program, the outputs' rows from its size
add_test(NAME aarch64/detect_head
  COMMAND smelt_cli check --target aarch64 --expected-failures /dev/null --rtol 1e-3 --atol 1e-4
          ${SMELT_MODEL_DIR}/detect_head)
set_tests_properties(aarch64/gpt2_tiny_decoder_rt_dims aarch64/bert_tiny_dynseq_specialized
  aarch64/detect_head
  PROPERTIES FIXTURES_REQUIRED torch_models PASS_REGULAR_EXPRESSION "\n1 passed, 0 failed, 0 skipped"
  TIMEOUT 300)
# the aarch64 AOT package's model.c, cross-built with -Wall -Wextra -Werror, run under
# qemu on the test data and compared (tests/aot/check_aot.py)
add_test(NAME aarch64/tiny_cnn_aot
  COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/aot/check_aot.py $<TARGET_FILE:smelt_cli>
          ${CMAKE_SOURCE_DIR}/models/tiny_cnn ${CMAKE_BINARY_DIR}/aarch64/tiny_cnn_aot --target aarch64)
set_tests_properties(aarch64/tiny_cnn_aot PROPERTIES
  ENVIRONMENT "AOT_CC=aarch64-linux-gnu-gcc;AOT_EMULATOR=qemu-aarch64 -L /usr/aarch64-linux-gnu")

# ---- GPU targets (issue 12): OpenCL kernels run on PoCL (scripts/setup.sh
# installs it; skipped without an OpenCL platform), CUDA packages built by
# nvcc for sm_80 and sm_90 (skipped without nvcc; no GPU runs here) ----
set(SMELT_GPU_MODEL_DIR ${CMAKE_BINARY_DIR}/tests/gpu_models)
if(SMELT_PYTHON)
  add_test(NAME gpu/generate
    COMMAND ${SMELT_PYTHON} ${CMAKE_SOURCE_DIR}/tests/gpu/gen_gpu_models.py ${SMELT_GPU_MODEL_DIR})
  set_tests_properties(gpu/generate PROPERTIES FIXTURES_SETUP gpu_models TIMEOUT 120)
  add_test(NAME gpu/opencl_check
    COMMAND ${CMAKE_SOURCE_DIR}/tests/gpu/check_opencl.sh $<TARGET_FILE:smelt_cli>
            ${CMAKE_SOURCE_DIR}/models/tiny_cnn ${SMELT_GPU_MODEL_DIR}/mlp
            ${SMELT_GPU_MODEL_DIR}/eltwise ${SMELT_GPU_MODEL_DIR}/norm_reduce
            ${SMELT_GPU_MODEL_DIR}/cnn_pool ${SMELT_GPU_MODEL_DIR}/gather
            ${SMELT_GPU_MODEL_DIR}/long_reduce ${SMELT_GPU_MODEL_DIR}/lstm
            ${SMELT_GPU_MODEL_DIR}/tiled_mm ${SMELT_GPU_MODEL_DIR}/tiled_conv)
  # (tiled_mm, tiled_conv: the default rules' tiled products and convolutions,
  # shared-memory tiles copied between barriers, edges no tile divides)
  set_tests_properties(gpu/opencl_check PROPERTIES
    FIXTURES_REQUIRED gpu_models SKIP_RETURN_CODE 77 TIMEOUT 600)
  # mlp: its softmax's root temporaries (nvcc failed on a temporary declared in a
  # kernel that did not use it, set but never used); gather: the data check's
  # atomics; long_reduce: block-shared partial sums; tiled_mm, tiled_conv: the
  # tiled products and convolutions (cache_read tiles in __shared__ arrays,
  # barriers; also built with -DSMELT_GPU_TIMING)
  add_test(NAME gpu/cuda_package
    COMMAND ${CMAKE_SOURCE_DIR}/tests/gpu/check_cuda_package.sh $<TARGET_FILE:smelt_cli>
            ${CMAKE_BINARY_DIR}/gpu/cuda ${CMAKE_SOURCE_DIR}/models/tiny_cnn
            ${SMELT_GPU_MODEL_DIR}/mlp ${SMELT_GPU_MODEL_DIR}/gather
            ${SMELT_GPU_MODEL_DIR}/long_reduce ${SMELT_GPU_MODEL_DIR}/tiled_mm
            ${SMELT_GPU_MODEL_DIR}/tiled_conv)
  set_tests_properties(gpu/cuda_package PROPERTIES
    FIXTURES_REQUIRED gpu_models SKIP_RETURN_CODE 77 TIMEOUT 600)
  # a model with a symbolic length: one OpenCL program per input signature
  add_test(NAME gpu/opencl_dynamic_shapes
    COMMAND ${CMAKE_SOURCE_DIR}/tests/gpu/check_opencl.sh $<TARGET_FILE:smelt_cli> --no-stats
            ${SMELT_MODEL_DIR}/bert_tiny_dynseq)
  set_tests_properties(gpu/opencl_dynamic_shapes PROPERTIES
    FIXTURES_REQUIRED torch_models SKIP_RETURN_CODE 77 TIMEOUT 600
    PASS_REGULAR_EXPRESSION "1 passed, 0 failed, 0 skipped")
  # the CUDA target's tiles (256-thread blocks) run on PoCL too
  add_test(NAME gpu/opencl_check_256_threads
    COMMAND ${CMAKE_SOURCE_DIR}/tests/gpu/check_opencl.sh $<TARGET_FILE:smelt_cli>
            ${SMELT_GPU_MODEL_DIR}/tiled_mm ${SMELT_GPU_MODEL_DIR}/tiled_conv ${SMELT_GPU_MODEL_DIR}/mlp)
  set_tests_properties(gpu/opencl_check_256_threads PROPERTIES ENVIRONMENT "SMELT_GPU_BLOCK=256"
    FIXTURES_REQUIRED gpu_models SKIP_RETURN_CODE 77 TIMEOUT 300)
  # cache_read by hand: a user schedule staging a Gemm's operands in shared
  # memory gives the same results; a tile over the target's shared memory
  # and cache_read on a CPU are refused, naming the step
  add_test(NAME gpu/opencl_cache_read_schedule
    COMMAND ${CMAKE_SOURCE_DIR}/tests/gpu/check_opencl.sh $<TARGET_FILE:smelt_cli>
            --schedule ${CMAKE_SOURCE_DIR}/tests/gpu/mlp_cache_read.sched ${SMELT_GPU_MODEL_DIR}/mlp)
  set_tests_properties(gpu/opencl_cache_read_schedule PROPERTIES
    FIXTURES_REQUIRED gpu_models SKIP_RETURN_CODE 77 TIMEOUT 300)
  add_test(NAME gpu/cache_read_tile_too_big
    COMMAND smelt_cli compile --target opencl --stats
            --schedule ${CMAKE_SOURCE_DIR}/tests/gpu/mlp_tile_too_big.sched ${SMELT_GPU_MODEL_DIR}/mlp/model.onnx)
  set_tests_properties(gpu/cache_read_tile_too_big PROPERTIES FIXTURES_REQUIRED gpu_models
    PASS_REGULAR_EXPRESSION "schedule step cache_read n0_y_mm x1 k\\.o: its tile needs 34064 bytes of shared memory \\(with the stage's other tiles\\), more than the target's 32768 per block")
  add_test(NAME gpu/cache_read_on_cpu_refused
    COMMAND smelt_cli compile --target generic
            --schedule ${CMAKE_SOURCE_DIR}/tests/gpu/mlp_cache_read.sched ${SMELT_GPU_MODEL_DIR}/mlp/model.onnx)
  set_tests_properties(gpu/cache_read_on_cpu_refused PROPERTIES FIXTURES_REQUIRED gpu_models
    PASS_REGULAR_EXPRESSION "schedule step cache_read n0_y_mm x0 k\\.o: the target is a CPU, which has no shared memory \\(cache_read stages tiles for GPU targets: opencl, cuda\\)")
endif()
# a user schedule binding other loops (rows to blocks, columns to threads)
# gives the same results
add_test(NAME gpu/opencl_user_schedule
  COMMAND ${CMAKE_SOURCE_DIR}/tests/gpu/check_opencl.sh $<TARGET_FILE:smelt_cli>
          --schedule ${CMAKE_SOURCE_DIR}/tests/gpu/tiny_cnn_fc.sched ${CMAKE_SOURCE_DIR}/models/tiny_cnn)
set_tests_properties(gpu/opencl_user_schedule PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300)
# what GPU code cannot do is refused, naming the node, the op or the loop
add_test(NAME gpu/bind_on_cpu_refused
  COMMAND smelt_cli compile --target generic --schedule ${CMAKE_SOURCE_DIR}/tests/gpu/tiny_cnn_fc.sched
          ${CMAKE_SOURCE_DIR}/models/tiny_cnn/model.onnx)
set_tests_properties(gpu/bind_on_cpu_refused PROPERTIES
  PASS_REGULAR_EXPRESSION "loop 'y\\.i1' is bound to threadIdx.x \\(schedule step bind\\), which only GPU targets \\(opencl, cuda\\) have; target 'generic' is a CPU")
add_test(NAME gpu/tune_refused
  COMMAND smelt_cli tune --target opencl -o ${CMAKE_BINARY_DIR}/gpu/tune.jsonl
          ${CMAKE_SOURCE_DIR}/models/tiny_cnn/model.onnx)
set_tests_properties(gpu/tune_refused PROPERTIES
  PASS_REGULAR_EXPRESSION "target 'opencl' is a GPU target: the tuner measures candidates in this process and has no GPU search space yet")
add_test(NAME gpu/run_refused
  COMMAND smelt_cli run --target cuda ${CMAKE_SOURCE_DIR}/models/tiny_cnn/model.onnx)
set_tests_properties(gpu/run_refused PROPERTIES
  PASS_REGULAR_EXPRESSION "target 'cuda' generates GPU kernels, which do not load into this process: `smelt compile --target cuda -o DIR` writes a package")
if(SMELT_PYTHON)
  # a data check failing on the device: the CPU's message (node, index, position)
  add_test(NAME gpu/opencl_data_error
    COMMAND sh -c "ls /etc/OpenCL/vendors/*.icd >/dev/null 2>&1 || { echo 'SKIP: no OpenCL platform'; exit 77; }; \"$0\" check --target opencl \"$1\""
            $<TARGET_FILE:smelt_cli> ${SMELT_GPU_MODEL_DIR}/gather_bad)
  set_tests_properties(gpu/opencl_data_error PROPERTIES FIXTURES_REQUIRED gpu_models SKIP_RETURN_CODE 77
    PASS_REGULAR_EXPRESSION "FAIL gather_bad: node 'y_node' \\(Gather\\): index 99 at position 1 is out of range for axis 0 of size 16")
  # what GPU kernels cannot do yet (float16 arithmetic) is refused, naming the
  # function and its nodes, never run on the CPU
  add_test(NAME gpu/float16_refused
    COMMAND smelt_cli compile --target cuda -o ${CMAKE_BINARY_DIR}/gpu/half ${SMELT_GPU_MODEL_DIR}/half/model.onnx)
  set_tests_properties(gpu/float16_refused PROPERTIES FIXTURES_REQUIRED gpu_models
    PASS_REGULAR_EXPRESSION "target 'cuda': function f0_cast \\(h_node \\.\\. y_node \\(4 nodes\\)\\): it needs float16 arithmetic, which GPU kernels do not support yet")
endif()

# ---- Long tests first.  ctest -j starts the ready tests by COST, highest
# first; a fresh clone (CI) has no Testing/Temporary/CTestCostData.txt to
# learn it from and would start them in declaration order, so a long test
# could start last and leave the other core idle.  About the seconds under
# ASan on a 2-core CI machine with a cold compile cache (fixture set-ups such
# as models/generate always run before the tests that need them). ----
set(SMELT_TEST_COSTS
  conformance/current_onnx_compiled_0 170
  conformance/current_onnx_compiled_1 170 unit/test_compute_layout 120 tune/mpi 60
  tune/end_to_end 50 unit/test_winograd 60 unit/test_compute_sample 40
  unit/test_alloc_fail_compile 36 python/pytest 33 unit/test_alloc_fail_compile_per_node 33
  unit/test_sched_matmul 26 models/mobilenet_v2_O0 21 aot/embedding 18
  unit/test_codegen_aot 17 gpu/cuda_package 16 conformance/quant_cases_compiled 16
  models/resnet50_reference 16 unit/test_schedule_fuzz 15)
while(SMELT_TEST_COSTS)
  list(POP_FRONT SMELT_TEST_COSTS name cost)
  if(TEST ${name})
    set_tests_properties(${name} PROPERTIES COST ${cost})
  endif()
endwhile()

# The weight blob holds only what compiled code reads: an LSTM's / GRU's W and R
# are read as compile-time transposes, the originals stay out of the blob
add_test(NAME models/weight_bytes
  COMMAND ${SMELT_PYTHON} ${CMAKE_SOURCE_DIR}/tests/models/check_weight_bytes.py $<TARGET_FILE:smelt_cli>
          ${SMELT_MODEL_DIR}/lstm_lm ${SMELT_MODEL_DIR}/gru_lm)
set_tests_properties(models/weight_bytes PROPERTIES FIXTURES_REQUIRED torch_models)
