#!/usr/bin/env bash
# Build everything that runs in the guest, from the scratch tree:
#   $BUILD/headers     uapi headers (make headers_install)
#   $BUILD/kselftest   the ring-buffer kselftests, statically linked
#   $BUILD/user        user/*.c -> bin/ftmmap-NAME, user/tests/* -> tests/NAME
#   $BUILD/tests.list  what the guest runs in check mode, in order
# EXTRA_TESTS=DIR adds DIR/*.c and DIR/*.sh as more tests (for trying
# things out without committing them); USER_DIR=DIR replaces user/.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_tree
mkdir -p "$LOGS"

say "installing kernel headers into ${BUILD#"$TOP"/}/headers"
run_logged "$LOGS/headers.log" "${KMAKE[@]}" O="$OBJ/headers" \
	INSTALL_HDR_PATH="$BUILD/headers" headers_install ||
	die "make headers_install failed"

ksft_src=$SRC/tools/testing/selftests
rm -rf "$BUILD/kselftest"
mkdir -p "$BUILD/kselftest"
if [ -f "$ksft_src/ring-buffer/Makefile" ]; then
	say "building kselftests (TARGETS=ring-buffer, static)"
	run_logged "$LOGS/kselftest.log" make -C "$ksft_src" -j"$JOBS" \
		TARGETS=ring-buffer O="$OBJ/kselftest" \
		KHDR_INCLUDES="-isystem $BUILD/headers/include" \
		USERLDFLAGS=-static \
		KSFT_INSTALL_PATH="$BUILD/kselftest" install ||
		die "the ring-buffer kselftests do not build (see $LOGS/kselftest.log)"
	[ -s "$BUILD/kselftest/kselftest-list.txt" ] ||
		die "the ring-buffer kselftests installed no test (see $LOGS/kselftest.log)"
else
	note "no tools/testing/selftests/ring-buffer in the tree (empty series?): no kselftests"
	: >"$BUILD/kselftest/kselftest-list.txt"
fi

# build_c SRC OUT: one statically linked program.
CFLAGS=(-static -O2 -Wall -I"$BUILD/headers/include" -I"${USER_DIR:-$TOP/user}" -I"$ksft_src")
build_c() {
	gcc "${CFLAGS[@]}" -o "$2" "$1" -lpthread >>"$LOGS/user.log" 2>&1 || {
		tail -n 30 "$LOGS/user.log" >&2
		die "${1#"$TOP"/} does not build"
	}
}

user=${USER_DIR:-$TOP/user}
rm -rf "$BUILD/user"
mkdir -p "$BUILD/user/bin" "$BUILD/user/tests"
: >"$LOGS/user.log"
n=0
for f in "$user"/*.c; do
	[ -e "$f" ] || continue
	build_c "$f" "$BUILD/user/bin/ftmmap-$(basename "$f" .c)"
	n=$((n + 1))
done
for d in "$user/tests" ${EXTRA_TESTS:+"$EXTRA_TESTS"}; do
	[ -d "$d" ] || continue
	for f in "$d"/*.c; do
		[ -e "$f" ] || continue
		build_c "$f" "$BUILD/user/tests/$(basename "$f" .c)"
		n=$((n + 1))
	done
	for f in "$d"/*.sh; do
		[ -e "$f" ] || continue
		install -m 755 "$f" "$BUILD/user/tests/"
		n=$((n + 1))
	done
done
say "built $n user programs and tests (${user#"$TOP"/}/*.c, ${user#"$TOP"/}/tests/${EXTRA_TESTS:+, $EXTRA_TESTS})"

# The run list: the kselftests in their Makefile's order, then ours by name.
{
	sed -n 's/^\([^:]*\):\(.*\)$/\1\/\2/p' "$BUILD/kselftest/kselftest-list.txt"
	(cd "$BUILD/user" && ls tests | sed 's|^|tests/|')
} >"$BUILD/tests.list"
note "$(wc -l <"$BUILD/tests.list") tests in ${BUILD#"$TOP"/}/tests.list"
