#!/usr/bin/env bash
# Build everything that runs in the guest, from the scratch tree:
#   $BUILD/headers     uapi headers (make headers_install)
#   $BUILD/kselftest   the ring-buffer kselftests, statically linked
#   $BUILD/user        user/*.c -> bin/ftmmap-NAME, user/ftmmap/*.c -> bin/ftmmap,
#                      user/tests/* -> tests/NAME
#   $BUILD/tests.list  what the guest runs in check mode, in order
#
#   tests.sh [FLAVOUR]   normal or debug (the default: one x86_64 guest for
#                        both), or arm64: the same, cross-compiled for
#                        arm64 into $BUILD/arm64/{headers,kselftest,user,tests.list}
#                        (gki: the same arm64 guest)
# EXTRA_TESTS=DIR adds DIR/*.c and DIR/*.sh as more tests (for trying
# things out without committing them); USER_DIR=DIR replaces user/.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
set_flavour "${1:-normal}"
need_tree
mkdir -p "$LOGS" "$GUEST"

say "installing $KARCH kernel headers into ${GUEST#"$TOP"/}/headers"
run_logged "$LOGS/${GUEST_TAG}headers.log" "${KMAKE[@]}" O="$OBJ/${GUEST_TAG}headers" \
	INSTALL_HDR_PATH="$GUEST/headers" headers_install ||
	die "make headers_install failed"

ksft_src=$SRC/tools/testing/selftests
ksft_log=$LOGS/${GUEST_TAG}kselftest.log
rm -rf "$GUEST/kselftest"
mkdir -p "$GUEST/kselftest"
if [ -f "$ksft_src/ring-buffer/Makefile" ]; then
	say "building kselftests (TARGETS=ring-buffer, static, $KARCH)"
	ksft_install "$ksft_src" "$OBJ/${GUEST_TAG}kselftest" "$GUEST/kselftest" "$ksft_log" ||
		die "the ring-buffer kselftests do not build (see $ksft_log)"
	[ -s "$GUEST/kselftest/kselftest-list.txt" ] ||
		die "the ring-buffer kselftests installed no test (see $ksft_log)"
else
	note "no tools/testing/selftests/ring-buffer in the tree (empty series?): no kselftests"
	: >"$GUEST/kselftest/kselftest-list.txt"
fi

# map_test again as a 32-bit program, on x86_64 (the kernel has
# IA32_EMULATION, config/x86_64.config): a compat task maps the buffer
# and calls GET_READER through compat_sys_ioctl().  Beside map_test, whose
# helper (map_example) it runs from the same folder; named so that
# "ring-buffer/map_test" (the KCSAN boot's list) does not take it in.  The
# sub-buffers hold longs of the 64-bit kernel (RB_KERNEL_LONG,
# map_helpers.h: the 6.12 series' map_test does not parse them); 6.1's
# kselftest_harness.h casts pointers to uintmax_t, which -m32 warns about.
if [ "$KARCH" = x86_64 ] && [ -f "$ksft_src/ring-buffer/map_test.c" ]; then
	helpers=()
	[ ! -f "$ksft_src/ring-buffer/map_helpers.c" ] || helpers=("$ksft_src/ring-buffer/map_helpers.c")
	gcc -m32 -static -O2 -Wall -Wno-pointer-to-int-cast -D_GNU_SOURCE -DRB_KERNEL_LONG=8 \
		-I"$GUEST/headers/include" \
		-o "$GUEST/kselftest/ring-buffer/compat_map_test" \
		"$ksft_src/ring-buffer/map_test.c" "${helpers[@]}" \
		>>"$ksft_log" 2>&1 || {
		tail -n 30 "$ksft_log" >&2
		die "map_test does not build as a 32-bit program (see $ksft_log)"
	}
	echo "ring-buffer:compat_map_test" >>"$GUEST/kselftest/kselftest-list.txt"
fi

# build_c OUT SRC...: one statically linked program.
CFLAGS=(-O2 -Wall -I"$GUEST/headers/include" -I"${USER_DIR:-$TOP/user}" -I"$ksft_src"
	"${GUEST_CFLAGS[@]}")
user_log=$LOGS/${GUEST_TAG}user.log
# Every program links Debian's libtracefs and libtraceevent statically; their
# headers include each other without the folder name.
build_c() {
	local out=$1
	shift
	"$GUEST_CC" -static "${CFLAGS[@]}" -I/usr/include/traceevent -I/usr/include/tracefs -o "$out" "$@" \
		-ltracefs -ltraceevent -lpthread >>"$user_log" 2>&1 || {
		tail -n 30 "$user_log" >&2
		die "${out#"$GUEST"/} does not build (see ${user_log#"$TOP"/})"
	}
}

user=${USER_DIR:-$TOP/user}
rm -rf "$GUEST/user"
mkdir -p "$GUEST/user/bin" "$GUEST/user/tests"
: >"$user_log"
n=0
for f in "$user"/*.c; do
	[ -e "$f" ] || continue
	build_c "$GUEST/user/bin/ftmmap-$(basename "$f" .c)" "$f"
	n=$((n + 1))
done
# The tool: user/ftmmap/*.c (library, trace.dat writer, command) -> ftmmap,
# linked dynamically: it loads libtraceevent's plugins (dlopen()), which
# call back into libtraceevent, and that a static program cannot do.
# initramfs.sh puts its shared libraries, the dynamic loader and the
# plugins into the guest, where Debian has them.
if compgen -G "$user/ftmmap/*.c" >/dev/null; then
	"$GUEST_CC" "${CFLAGS[@]}" -Wextra -I/usr/include/traceevent -I/usr/include/tracefs \
		-o "$GUEST/user/bin/ftmmap" "$user"/ftmmap/*.c -ltracefs -ltraceevent >>"$user_log" 2>&1 || {
		tail -n 30 "$user_log" >&2
		die "user/bin/ftmmap does not build (see ${user_log#"$TOP"/})"
	}
	n=$((n + 1))
fi
for d in "$user/tests" ${EXTRA_TESTS:+"$EXTRA_TESTS"}; do
	[ -d "$d" ] || continue
	for f in "$d"/*.c; do
		[ -e "$f" ] || continue
		build_c "$GUEST/user/tests/$(basename "$f" .c)" "$f"
		n=$((n + 1))
	done
	for f in "$d"/*.sh; do
		[ -e "$f" ] || continue
		install -m 755 "$f" "$GUEST/user/tests/"
		n=$((n + 1))
	done
done
say "built $n $KARCH user programs and tests (${user#"$TOP"/}/*.c, ${user#"$TOP"/}/ftmmap/, ${user#"$TOP"/}/tests/${EXTRA_TESTS:+, $EXTRA_TESTS})"

# The run list: the kselftests in their Makefile's order, then ours by name.
# tests/fresh_*: for a kernel nothing traced with yet (booted without
# trace_event=); listed as "?tests/fresh_..." and run only when named in
# ftmmap.only (guest/init), by their own boot in make check; tests/hotadd_*
# (a CPU that was never online: maxcpus=) in that boot too; tests/kcsan_*:
# the load of the KCSAN stage (scripts/kcsan.sh), likewise.
{
	sed -n 's/^\([^:]*\):\(.*\)$/\1\/\2/p' "$GUEST/kselftest/kselftest-list.txt"
	(cd "$GUEST/user" && ls tests | sed -E 's,^,tests/,; s,^tests/(fresh|hotadd|kcsan)_,?&,')
} >"$GUEST/tests.list"
note "$(wc -l <"$GUEST/tests.list") tests in ${GUEST#"$TOP"/}/tests.list"
