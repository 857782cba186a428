#!/usr/bin/env bash
# Check that the queue applies cleanly, in order, to the base commit.  Works
# on a scratch index only: the work tree and its timestamps are not touched.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_tree

# The series file lists exactly the numbered patches, in their order.
rel=${PATCHES#"$TOP"/}
[ -f "$PATCHES/series" ] || die "$rel/ has no series file (make export writes it)"
if ! diff <(series_files) <(PATCHES_NO_SERIES=1 series_files) >/dev/null; then
	diff <(series_files) <(PATCHES_NO_SERIES=1 series_files) | sed 's|^|    |' >&2
	die "$rel/series does not list the numbered patches in order (make export rewrites it)"
fi

idx=$BUILD/apply.index
trap 'rm -f "$idx"' EXIT
export GIT_INDEX_FILE=$idx
sgit read-tree base
n=0
while read -r p; do
	[ -n "$p" ] || continue
	n=$((n + 1))
	if ! out=$(sgit apply --cached "$p" 2>&1); then
		printf '%s\n' "$out" >&2
		die "patch ${p#"$TOP"/} does not apply to the base after the $((n - 1)) patches before it"
	fi
done < <(series_files)
tree=$(sgit write-tree)
unset GIT_INDEX_FILE
say "series: all $n patches apply cleanly to $(sgit log -1 --format=%s base | sed 's/^Base: //')"
tree_state
if [ "$TREE_HASH" = "$PATCHES_HASH" ] && [ "$tree" != "$(sgit rev-parse 'HEAD^{tree}')" ]; then
	die "the queue applied with git apply differs from the scratch tree's HEAD"
fi
