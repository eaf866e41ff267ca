#!/bin/sh
# `cmake --install` into a fresh prefix, then an outside program built with
# nothing but pkg-config: against the shared libsmelt.so (smelt) and the
# static libraries (smelt-static, no --whole-archive), both running a model.
# usage: check_install.sh BUILD_DIR SOURCE_DIR MODEL [EXTRA_CFLAGS...]
set -u
build=$1 src=$2 model=$3
shift 3
extra="$*"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cmake --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log" 2>&1 ||
    { cat "$tmp/install.log"; fail "cmake --install"; }
for f in include/smelt.h include/smelt_rt.h lib/libsmelt.a lib/libsmelt.so lib/libsmelt_rt.a \
    lib/libsmelt_rt.so lib/pkgconfig/smelt.pc bin/smelt; do
    [ -e "$tmp/prefix/$f" ] || fail "the prefix lacks $f"
done
export PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig"
export SMELT_CACHE_DIR="$tmp/cache"
# shellcheck disable=SC2046,SC2086
cc -std=c99 -Wall -Werror $extra -o "$tmp/app_shared" "$src/tests/install/outside.c" \
    $(pkg-config --cflags --libs smelt) || fail "building against smelt.pc (shared)"
# shellcheck disable=SC2046,SC2086
cc -std=c99 -Wall -Werror $extra -o "$tmp/app_static" "$src/tests/install/outside.c" \
    $(pkg-config --cflags --libs smelt-static) || fail "building against smelt-static.pc"
ldd "$tmp/app_shared" | grep -q "libsmelt.so" || fail "app_shared does not load libsmelt.so"
readelf -d "$tmp/prefix/lib/libsmelt.so" | grep -q "SONAME.*\[libsmelt\.so\.0\]" ||
    fail "libsmelt.so has no SONAME libsmelt.so.0"
ldd "$tmp/app_static" | grep -q "libsmelt.so" && fail "app_static loads libsmelt.so"
LD_LIBRARY_PATH="$tmp/prefix/lib" "$tmp/app_shared" "$model" >"$tmp/shared.out" ||
    fail "app_shared: $(cat "$tmp/shared.out")"
"$tmp/app_static" "$model" >"$tmp/static.out" || fail "app_static: $(cat "$tmp/static.out")"
cmp -s "$tmp/shared.out" "$tmp/static.out" || fail "shared and static results differ"
echo "shared and static: $(cat "$tmp/shared.out")"
[ "$(pkg-config --modversion smelt)" = "$("$tmp/prefix/bin/smelt" --version | cut -d' ' -f2)" ] ||
    fail "smelt.pc's version differs from smelt --version"
echo "1 passed, 0 failed"
