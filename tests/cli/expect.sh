# Sourced by the CLI checks: expect STATUS PATTERN -- command... runs the
# command and counts a failure in $fails when its status is not STATUS or its
# output (stdout and stderr, kept in $tmp/out) lacks PATTERN.
expect() {
    want=$1 pattern=$2
    shift 3
    "$@" >"$tmp/out" 2>&1
    got=$?
    if [ "$got" != "$want" ] || ! grep -q -- "$pattern" "$tmp/out"; then
        echo "FAIL: '$*' -> status $got (want $want), output lacks '$pattern':"
        sed 's/^/    /' "$tmp/out"
        fails=$((fails + 1))
    fi
}
