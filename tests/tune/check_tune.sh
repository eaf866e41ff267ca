#!/bin/sh
# smelt tune end to end on the checked-in tiny CNN (seconds):
#   tiny     tune a few trials; records readable, each timing paired with the
#            default's; --records applies them to every function and the
#            model still passes smelt check
#   faults   candidates that crash, hang and answer wrong are recorded as
#            invalid with their reason, and the run completes
#   resume   a tuning run killed mid-way and restarted re-measures nothing
#   options  --list-tasks, --show-space, bad values
# usage: check_tune.sh SMELT MODEL_DIR
smelt=$1
dir=$2
model=$dir/model.onnx
fails=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export SMELT_CACHE_DIR="$tmp/cache"

fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# ---- tiny ----
# (few trials per task: what is checked is the records' path, not the search;
# each trial is a C build and a measurement, 6 tasks each)
if ! "$smelt" tune "$model" -o "$tmp/r.jsonl" --trials 2 --min-ms 1 --plot "$tmp/p.svg" >"$tmp/out" 2>&1; then
    fail "tiny: smelt tune failed"; cat "$tmp/out"
fi
grep -q "geometric mean speed-up" "$tmp/out" || fail "tiny: no summary table"
grep -q "<polyline" "$tmp/p.svg" || fail "tiny: no plot"
n=$(grep -c '"status":"ok"' "$tmp/r.jsonl")
[ "$n" -ge 6 ] || fail "tiny: only $n valid records"
grep -q '"verified":true' "$tmp/r.jsonl" || fail "tiny: no verified record"
# paired timings: every valid record has its ratio to the default, and a
# task's times are one anchor (the default's first paired median) times it
python3 - "$tmp/r.jsonl" >"$tmp/paired" 2>&1 <<'PY' || { fail "tiny: paired timings"; cat "$tmp/paired"; }
import json, sys
anchors = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["status"] != "ok":
        continue
    assert r.get("rel", 0) > 0 and r.get("raw_ms", 0) > 0, "no ratio in " + line
    a = r["ms"] / r["rel"]
    b = anchors.setdefault(r["task"], a)
    assert abs(a - b) <= 1e-3 * b, "task %s: anchors %g and %g" % (r["task"], a, b)
print(len(anchors), "tasks")
PY
"$smelt" records show "$tmp/r.jsonl" >"$tmp/show" 2>&1 || fail "records show failed"
"$smelt" check --compiled --records "$tmp/r.jsonl" --rtol 1e-3 --atol 1e-4 "$dir" >"$tmp/check" 2>&1 \
    || { fail "tiny: check with records failed"; cat "$tmp/check"; }
grep -q "records: 6 of 6 functions scheduled" "$tmp/check" || { fail "tiny: records not applied"; cat "$tmp/check"; }
"$smelt" records best "$tmp/r.jsonl" -o "$tmp/best.jsonl" >/dev/null || fail "records best failed"
[ "$(wc -l <"$tmp/best.jsonl")" -eq 6 ] || fail "records best: not one record per task"
"$smelt" records merge "$tmp/r.jsonl" "$tmp/best.jsonl" -o "$tmp/merged.jsonl" >/dev/null || fail "records merge failed"
# a record of another target and one of an unknown schema are ignored with a note
sed 's/"target":"[^"]*"/"target":"elsewhere"/' "$tmp/best.jsonl" >"$tmp/other.jsonl"
sed 's/"v":1,/"v":99,/' "$tmp/best.jsonl" >>"$tmp/other.jsonl"
echo 'not json' >>"$tmp/other.jsonl"
"$smelt" run "$model" --records "$tmp/other.jsonl" >"$tmp/run" 2>&1 || fail "run with foreign records failed"
grep -q "0 of 6 functions scheduled from 0 records of this target; 6 records of another target ignored; 6 records of an unknown schema ignored; 1 unreadable lines ignored" "$tmp/run" \
    || { fail "foreign records: no note"; cat "$tmp/run"; }

# ---- faults ----
SMELT_TUNE_FAULTS="crash:2,hang:3,wrong:4" "$smelt" tune "$model" -o "$tmp/f.jsonl" --trials 4 \
    --min-ms 1 --timeout 2 --quiet >"$tmp/out" 2>&1 || { fail "faults: the run did not complete"; cat "$tmp/out"; }
for st in crash timeout wrong; do
    grep -q "\"status\":\"$st\"" "$tmp/f.jsonl" || fail "faults: no $st record"
done
grep -q '"status":"wrong".*differs from the reference' "$tmp/f.jsonl" || fail "faults: wrong without its reason"
grep -q '"status":"crash".*signal' "$tmp/f.jsonl" || fail "faults: crash without its signal"

# ---- resume ----
"$smelt" tune "$model" -o "$tmp/k.jsonl" --trials 3 --min-ms 1 --quiet >/dev/null 2>&1 &
pid=$!
i=0
# (up to 3 minutes: ctest runs other tests beside this one)
while [ "$i" -lt 1800 ] && [ "$(cat "$tmp/k.jsonl" 2>/dev/null | wc -l)" -lt 8 ]; do sleep 0.1; i=$((i + 1)); done
kill -9 "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
before=$(wc -l <"$tmp/k.jsonl")
[ "$before" -ge 8 ] || fail "resume: the first run wrote only $before records"
"$smelt" tune "$model" -o "$tmp/k.jsonl" --trials 3 --min-ms 1 >"$tmp/out" 2>&1 || fail "resume: restart failed"
grep -q "resuming: $before records" "$tmp/out" || { fail "resume: no resume note"; head -3 "$tmp/out"; }
# every (task, schedule) outside verification is measured once
dups=$(grep -v '"verified":true' "$tmp/k.jsonl" | sed 's/.*"task":"\([0-9a-f]*\)".*"schedule":"\([^"]*\)".*/\1 \2/' | sort | uniq -d | wc -l)
[ "$dups" -eq 0 ] || fail "resume: $dups candidates measured twice"

# ---- options ----
"$smelt" tune "$model" --list-tasks >"$tmp/list" 2>&1 || fail "--list-tasks failed"
[ "$(grep -c '^[0-9]' "$tmp/list")" -eq 6 ] || { fail "--list-tasks: not 6 tasks"; cat "$tmp/list"; }
"$smelt" tune "$model" --show-space | grep -q "rule conv_nchwc" || fail "--show-space: no knobs"
# --knobs: the conv task timed at a point of its space, a point the rule refuses
# reported as invalid (not fatal), a malformed point a usage error
conv=$(awk '/conv_nchwc/ { print $2; exit }' "$tmp/list")
"$smelt" tune "$model" --list-tasks --min-ms 1 --knobs "$conv=0,0,0,1" --knobs "$conv=0,0,0,99" \
    >"$tmp/kn" 2>&1 || { fail "--knobs failed"; cat "$tmp/kn"; }
grep -q "knobs 0,0,0,1 .*x default" "$tmp/kn" || { fail "--knobs: no timed point"; cat "$tmp/kn"; }
grep -q "knobs 0,0,0,99 *invalid: .*parallel" "$tmp/kn" || { fail "--knobs: bad value not reported"; cat "$tmp/kn"; }
# --flush-mb: the point timed from cold caches, still paired with the default
"$smelt" tune "$model" --list-tasks --min-ms 1 --flush-mb 4 --knobs "$conv=0,0,0,1" \
    >"$tmp/kf" 2>&1 || { fail "--flush-mb failed"; cat "$tmp/kf"; }
grep -q "knobs 0,0,0,1 .*x default (paired)" "$tmp/kf" || { fail "--flush-mb: no timed point"; cat "$tmp/kf"; }
for bad in "--trials 0" "--trials abc" "--minutes -1" "--threads x" "--knobs 12" "--knobs k=1,x" \
    "--flush-mb -1" "--flush-mb 5000"; do
    # shellcheck disable=SC2086
    "$smelt" tune "$model" -o "$tmp/x.jsonl" $bad >"$tmp/out" 2>&1
    [ $? -eq 2 ] || fail "tune $bad: not a usage error"
done
"$smelt" tune "$model" >/dev/null 2>&1
[ $? -eq 2 ] || fail "tune without -o: not a usage error"

if [ "$fails" -ne 0 ]; then echo "$fails failed"; exit 1; fi
echo "tune checks passed"
