#!/usr/bin/env bash
# Our 6.1 series' ring-buffer selftests (map_test, subbuf_test, load_test)
# for the 6.12 guest: built from the 6.1 scratch tree against the 6.12
# uapi headers, installed as /kselftest/ring-buffer-6.1/ and appended to
# the 6.12 guest's run list.  Run after 'SERIES=6.12 tests.sh'.
#
# The tests that check behaviour only our 6.1 series has are left out by
# name (EXCLUDE below, with the reason); everything else must pass on
# 6.12 with the 6.12 series.
#
#   tests-6.1-on-6.12.sh [FLAVOUR]   normal/debug (x86_64) or arm64
set -euo pipefail
SERIES=6.12
. "$(dirname "$0")/lib.sh"
set_flavour "${1:-normal}"

src61=$BUILD/linux/tools/testing/selftests
[ -f "$src61/ring-buffer/map_test.c" ] ||
	die "no 6.1 selftests at ${src61#"$TOP"/}/ring-buffer: run 'make tree' (the 6.1 series) first"
[ -f "$GUEST/tests.list" ] || die "no ${GUEST#"$TOP"/}/tests.list: run 'SERIES=6.12 scripts/tests.sh' first"

# Tests of what only the 6.1 series does, by test name: they are built
# but not registered with the harness (6.1's kselftest harness cannot
# leave tests out at run time).
EXCLUDE=(
	# 6.1's trace_marker patch takes writes up to 4096 bytes, cut
	# to what a sub-buffer holds; 6.12 cuts them to about a page.
	marker_of_4096_bytes_cut_to_fit
	long_marker_write_returns_stored_count
	# These two check a 4096-byte marker after a size change.
	snapshot_follows_size_change
	snapshot_allocated_after_change_has_size
	# 6.1 fills the meta-page's pages_lost and pages_touched (mainline
	# names and fills them since 7.1); 6.12 has Reserved1/Reserved2, 0.
	meta_page_counts_pages
)

# The 6.1 tree made of links, with a copy of its ring-buffer/ selftests in
# which the excluded tests are renamed out of the harness.
root=$OBJ/${GUEST_TAG}kselftest-6.1-src
shadow=$root/tools/testing/selftests
rm -rf "$root"
# link_all DIR DEST KEEP: link every entry of DIR into DEST, but KEEP.
link_all() {
	local f
	mkdir -p "$2"
	for f in "$1"/* "$1"/.[!.]*; do
		[ -e "$f" ] || continue
		[ "${f##*/}" = "$3" ] || ln -s "$f" "$2/"
	done
}
link_all "$BUILD/linux" "$root" tools
link_all "$BUILD/linux/tools" "$root/tools" testing
link_all "$BUILD/linux/tools/testing" "$root/tools/testing" selftests
link_all "$src61" "$shadow" ring-buffer
cp -a "$src61/ring-buffer" "$shadow/ring-buffer"
for f in "$shadow"/ring-buffer/*_test.c; do
	for e in "${EXCLUDE[@]}"; do
		sed -i -E "s/^TEST_F\(([a-z_0-9]+), *$e\)/TEST_F_LEFT_OUT(\1, $e)/" "$f"
	done
	# Same signature as the harness' test functions, never registered.
	sed -i '0,/^#include "map_helpers.h"/s//&\
#define TEST_F_LEFT_OUT(f, t) static void __attribute__((unused)) \\\
	left_out_##f##_##t(struct __test_metadata *_metadata, \\\
			   FIXTURE_DATA(f) *self, const FIXTURE_VARIANT(f) *variant)/' "$f"
done
# The 6.12 uapi header names the last two meta-page fields Reserved1 and
# Reserved2: the left-out test above still has to compile.
if ! grep -q pages_touched "$GUEST/headers/include/linux/trace_mmap.h"; then
	sed -i 's/\bpages_lost\b/Reserved1/g; s/\bpages_touched\b/Reserved2/g' \
		"$shadow"/ring-buffer/*.c "$shadow"/ring-buffer/*.h
fi
[ "$(grep -c '^TEST_F_LEFT_OUT(' "$shadow"/ring-buffer/*_test.c | awk -F: '{ n += $2 } END { print n }')" \
	= "${#EXCLUDE[@]}" ] || die "not every test of EXCLUDE was found in the 6.1 selftests"

inst=$OBJ/${GUEST_TAG}kselftest-6.1-install
# Always from scratch: the sources were just copied.
rm -rf "$inst" "$OBJ/${GUEST_TAG}kselftest-6.1"
say "building the 6.1 series' ring-buffer selftests against the 6.12 headers ($KARCH)"
ksft_install "$shadow" "$OBJ/${GUEST_TAG}kselftest-6.1" "$inst" "$LOGS/${GUEST_TAG}kselftest-6.1.log" ||
	die "the 6.1 ring-buffer selftests do not build against the 6.12 headers"

dest=$GUEST/kselftest/ring-buffer-6.1
rm -rf "$dest"
cp -a "$inst/ring-buffer" "$dest"
progs=$(sed -n 's/^ring-buffer:\(.*\)$/\1/p' "$inst/kselftest-list.txt")
[ -n "$progs" ] || die "the 6.1 ring-buffer selftests installed no test"

# One wrapper per program (the guest runs *.sh with sh).
args=
sed -i '/^ring-buffer-6\.1\//d' "$GUEST/tests.list"
# The consumer tool's tests (user/tests/ftmmap*) check the tool, which is
# the 6.1 product's: the 6.1 guests run them, and with this initramfs
# Debian's stock 6.12 kernel does (make check's stage "boot stock 6.12":
# the tool on mainline's own mapping, lost counts in the headers only).
# This guest's own boot checks the series: they run only when named
# (ftmmap.only), like tests/fresh_*.
sed -i 's/^tests\/ftmmap/?&/' "$GUEST/tests.list"
for p in $progs; do
	printf '#!/bin/sh\nexec ./%s%s\n' "$p" "$args" >"$dest/$p.sh"
	chmod 755 "$dest/$p.sh"
	echo "ring-buffer-6.1/$p.sh" >>"$GUEST/tests.list"
done
note "$(echo "$progs" | wc -w) programs added to ${GUEST#"$TOP"/}/tests.list, ${#EXCLUDE[@]} tests left out"
