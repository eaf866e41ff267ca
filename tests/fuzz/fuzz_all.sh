#!/usr/bin/env bash
# Fuzzing as a standing practice: every harness in turn, from the current
# corpora, then crashes become regression files and new coverage joins the
# checked-in corpus.  See docs/fuzzing.md.
#
#   tests/fuzz/fuzz_all.sh [SECONDS_PER_HARNESS] [HARNESS...]
#
# HARNESS: onnx_import pipeline pipeline_models runtime records schedule
# differential (default: all; pipeline_models is the pipeline harness taking
# ONNX models, SMELT_FUZZ_MODEL_INPUT=1).  onnx_import and pipeline_models are
# also seeded with the node tests of the installed onnx (PyPI), written by
# tests/conformance/gen_current_onnx.py (skipped with a note when python3 has
# no onnx).  Work folders (build-fuzz/fuzz/work_NAME) persist between runs.
#
# Environment: FUZZ_PARALLEL=N runs N harnesses at a time (default 1);
# FUZZ_JOBS=N libFuzzer fork workers per harness (default 1); FUZZ_MERGE=0
# keeps the checked-in corpus as it is; FUZZ_BUILD=DIR as run_fuzz.sh.
#
# After each harness: every new crash or leak artifact is copied into
# tests/fuzz/regressions/NAME/ (ctest's fuzz/*_replay then fails until it is
# fixed; timeouts, OOMs and slow units stay in build-fuzz/fuzz/artifacts, as
# under load they are usually stalls: replay them by hand); the work corpus is
# merged into tests/fuzz/corpus/HARNESS with libFuzzer's -merge=1 counting
# edges only (-use_counters=0: the inputs that reach new code, a few hundred
# files, not every new hit count; merge output in log_NAME.merge.txt; not
# differential's, whose every input compiles C twice: CI replays the checked-in
# corpus, so it keeps its seeds; nor pipeline_models', whose seeds are
# generated); a Markdown row (date, tree, duration,
# executions, coverage, corpus, findings) goes to build-fuzz/fuzz/summary.md
# and stdout.  Exit status 1 when any harness found a crash or leak.
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-3600}
shift || true
all=(onnx_import pipeline pipeline_models runtime records schedule differential)
names=("$@")
[ ${#names[@]} -gt 0 ] || names=("${all[@]}")
bd=${FUZZ_BUILD:-build-fuzz}
export FUZZ_BUILD=$bd
fz=$bd/fuzz
art=$fz/artifacts
mkdir -p "$art"

binary_of() { case $1 in pipeline_models) echo pipeline ;; *) echo "$1" ;; esac; }

for n in "${names[@]}"; do
    case " ${all[*]} " in *" $n "*) ;; *) echo "fuzz_all: unknown harness '$n' (one of: ${all[*]})" >&2; exit 2 ;; esac
done

# One build for every harness (parallel runs must not race on it).
cmake -S . -B "$bd" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER="${CC:-clang}" \
    -DSMELT_FUZZ=ON -DSMELT_WERROR=OFF >/dev/null
targets=()
for n in "${names[@]}"; do targets+=("fuzz_$(binary_of "$n")"); done
cmake --build "$bd" --target $(printf '%s\n' "${targets[@]}" | sort -u) -j2

# Node-test models of the current onnx as seeds (small ones only: libFuzzer's
# input length limit follows the largest seed, and big ones slow every run).
node_seeds=$fz/seeds_node_tests
make_node_seeds() {
    [ -d "$node_seeds" ] && return 0
    local py=${SMELT_PYTHON:-python3} tmp=$fz/node_tests
    if ! "$py" -c 'import onnx' 2>/dev/null; then
        echo "fuzz_all: $py has no onnx: no node-test seeds" >&2
        return 0
    fi
    "$py" tests/conformance/gen_current_onnx.py --out "$tmp" >/dev/null
    mkdir -p "$node_seeds.tmp"
    for m in "$tmp"/*/model.onnx; do
        [ "$(stat -c %s "$m")" -le 16384 ] || continue
        cp "$m" "$node_seeds.tmp/$(basename "$(dirname "$m")").onnx"
    done
    mv "$node_seeds.tmp" "$node_seeds"
    echo "fuzz_all: $(ls "$node_seeds" | wc -l) node-test models as seeds"
}
case " ${names[*]} " in *" onnx_import "*|*" pipeline_models "*) make_node_seeds ;; esac

tree=$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src include tests/fuzz || echo "+changes")

# The last fork-mode status line: "#N: cov: C ft: F corp: K exec/s: E oom/timeout/crash: a/b/c time: Ts ..."
status_field() { sed -n 's/.*'"$2"': *\([^ ]*\).*/\1/p' "$1" | tail -1; }

fuzz_one() {
    local n=$1 h log start end stamp
    h=$(binary_of "$n")
    log=$fz/log_$n.txt
    stamp=$fz/.start_$n
    touch "$stamp"
    start=$(date -u '+%F %H:%M')
    local env=(FUZZ_NO_BUILD=1 FUZZ_NAME="$n" FUZZ_HARNESS="$h" FUZZ_JOBS="${FUZZ_JOBS:-1}")
    local extra=()
    case $n in
        onnx_import) env+=(FUZZ_SEEDS="$node_seeds") ;;
        pipeline_models) env+=(SMELT_FUZZ_MODEL_INPUT=1
                               FUZZ_SEEDS="$node_seeds tests/fuzz/regressions/pipeline_models") ;;
        differential) extra+=(-timeout=30) ;;
    esac
    env "${env[@]}" tests/fuzz/run_fuzz.sh "$secs" "${extra[@]}" >"$log" 2>&1 || true
    end=$(date -u +%H:%M)
    collect "$n" "$h" "$log" "$stamp" "$start" "$end"
}

# Crashes and leaks become regression files; the rest is counted.
collect() {
    local n=$1 h=$2 log=$3 stamp=$4 start=$5 end=$6 f kept=0 other=0
    local reg=tests/fuzz/regressions/$n
    mkdir -p "$reg"
    while IFS= read -r f; do
        case $(basename "$f") in
            "$n"-crash-*|"$n"-leak-*) cp "$f" "$reg/found-$(date -u +%Y%m%d)-$(basename "$f" | sed "s/^$n-//")"
                                       kept=$((kept + 1)) ;;
            *) other=$((other + 1)) ;;
        esac
    done < <(find "$art" -name "$n-*" -newer "$stamp" -type f)
    local added=0 before
    if [ "${FUZZ_MERGE:-1}" = 1 ] && [ "$n" != pipeline_models ] && [ "$n" != differential ]; then
        before=$(ls "tests/fuzz/corpus/$h" | wc -l)
        SMELT_FUZZ_RUN=1 "$fz/fuzz_$h" -merge=1 -use_counters=0 -timeout=30 -rss_limit_mb=2048 \
            "tests/fuzz/corpus/$h" "$fz/work_$n" >"$fz/log_$n.merge.txt" 2>&1 || true
        added=$(( $(ls "tests/fuzz/corpus/$h" | wc -l) - before ))
    fi
    local row
    row="| $n | $start - $end | $tree | $(status_field "$log" time) | $(sed -n 's/^#\([0-9]*\):.*/\1/p' "$log" | tail -1) | $(status_field "$log" cov) | $(status_field "$log" corp) (+$added checked in) | $kept crash/leak, $other timeout/oom/slow |"
    echo "$row" | tee -a "$fz/summary.md"
    [ "$kept" = 0 ] || echo "fuzz_all: $n: $kept new regression file(s) in $reg" >&2
    echo "$kept" >"$fz/.found_$n"
}

echo "| harness | start - end (UTC) | tree | duration | execs | cov | corpus | findings |"
par=${FUZZ_PARALLEL:-1}
for n in "${names[@]}"; do
    while [ "$(jobs -rp | wc -l)" -ge "$par" ]; do wait -n || true; done
    fuzz_one "$n" &
done
wait
found=0
for n in "${names[@]}"; do found=$((found + $(cat "$fz/.found_$n" 2>/dev/null || echo 0))); done
[ "$found" = 0 ]
