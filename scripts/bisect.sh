#!/usr/bin/env bash
# Build every prefix of the series (base + patches 1..k) in $BUILD/obj/bisect
# with the normal config, so that the series is bisectable.
#   bisect.sh [--skip-head]   --skip-head: the full series is built elsewhere
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_tree

skip_head=0
[ "${1:-}" != --skip-head ] || skip_head=1
[ -z "$(sgit status --porcelain)" ] ||
	die "$SRC has uncommitted changes: commit or stash them before the bisect build"

mapfile -t commits < <(sgit rev-list --reverse base..HEAD)
total=${#commits[@]}
if [ "$total" = 0 ]; then
	say "bisect: empty series, nothing to build"
	exit 0
fi
last=$total
[ "$skip_head" = 0 ] || last=$((total - 1))
if [ "$last" = 0 ]; then
	say "bisect: one patch, already built as the normal kernel"
	exit 0
fi

# Start from the normal kernel's objects when there are none yet: each
# prefix is then an incremental build.
if [ ! -f "$OBJ/bisect/.config" ] && [ -f "$OBJ/normal/vmlinux" ]; then
	note "seeding ${OBJ#"$TOP"/}/bisect from ${OBJ#"$TOP"/}/normal"
	cp -a "$OBJ/normal" "$OBJ/bisect"
fi

branch=$(sgit symbolic-ref -q --short HEAD || sgit rev-parse HEAD)
trap 'sgit checkout -q "$branch"' EXIT
for ((k = 1; k <= last; k++)); do
	c=${commits[k - 1]}
	file=$(cd "$PATCHES" 2>/dev/null && ls "$(printf '%04d' "$k")"-*.patch 2>/dev/null | head -n 1 || true)
	say "bisect $k/$total: ${file:-$(sgit log -1 --format=%s "$c")}"
	sgit checkout -q --detach "$c"
	if ! "$TOP/scripts/kernel.sh" normal bisect vmlinux; then
		die "the series does not build at patch $k/$total: ${file:-$(sgit log -1 --format=%s "$c")} (see $LOGS/build-bisect.log)"
	fi
done
say "bisect: every prefix builds ($last of $total built here)"
