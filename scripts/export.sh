#!/usr/bin/env bash
# Write the commits base..HEAD of the scratch tree back to the queue as
# numbered patches.  An unchanged commit gives a byte-identical file;
# numbered files that no longer match a commit are removed, the
# hand-written 0000-cover-letter.patch is kept.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_tree

sgit rev-parse -q --verify base >/dev/null || die "$SRC has no 'base' tag: recreate it with 'make tree'"
sgit merge-base --is-ancestor base HEAD || die "HEAD of $SRC does not descend from 'base'"
[ -z "$(sgit status --porcelain)" ] ||
	warn "$SRC has uncommitted changes; they are not exported (commit them first)"
# (not REBASE_HEAD: git may leave it behind once a rebase has ended)
[ ! -d "$SRC/.git/rebase-merge" ] && [ ! -d "$SRC/.git/rebase-apply" ] ||
	die "$SRC is in the middle of a rebase or git am: finish it first"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
format_series "$tmp"
mkdir -p "$PATCHES"
rel=${PATCHES#"$TOP"/}

changed=0
for f in "$tmp"/*.patch; do
	[ -e "$f" ] || continue
	b=${f##*/}
	if [ ! -f "$PATCHES/$b" ]; then
		note "new      $rel/$b"
	elif ! cmp -s "$f" "$PATCHES/$b"; then
		note "changed  $rel/$b"
	else
		continue
	fi
	cp "$f" "$PATCHES/$b"
	changed=$((changed + 1))
done
while read -r f; do
	[ -n "$f" ] || continue
	if [ ! -e "$tmp/${f##*/}" ]; then
		note "removed  $rel/${f##*/}"
		rm -f "$f"
		changed=$((changed + 1))
	fi
done < <(PATCHES_NO_SERIES=1 series_files)
write_series

tree_state
sgit config ftmmap.synced "$TREE_HASH"
sgit config ftmmap.applied "$PATCHES_HASH"
n=$(sgit rev-list --count base..HEAD)
say "exported $n patches to $rel/ ($changed files changed)"
[ "$TREE_HASH" = "$PATCHES_HASH" ] || die "internal error: $rel/ differs from the tree after export"
