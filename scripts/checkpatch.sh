#!/usr/bin/env bash
# scripts/checkpatch.pl --strict on every patch of the queue: 0 errors and
# 0 warnings each (CHECKs are shown, not counted).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_tree

# The scratch trees are Debian's tarballs, without mainline's history:
# checkpatch cannot look up the commits that Fixes: tags name there and
# would call every one unknown.  Those tags are listed instead, for review.
# FILE_PATH_CHANGES asks for a MAINTAINERS change with every new file,
# also under a directory that MAINTAINERS already covers (the selftests
# after the first one): the check is about MAINTAINERS, not the patch.
ignore=(--ignore UNKNOWN_COMMIT_ID,FILE_PATH_CHANGES)
if series_files | xargs grep -q '^Fixes:'; then
	note "Fixes: tags (not looked up: the tree has no mainline history):"
	series_files | xargs grep -h '^Fixes:' | sort | uniq -c | sed 's/^/    /'
fi

n=0
bad=0
while read -r p; do
	[ -n "$p" ] || continue
	n=$((n + 1))
	# GIT_DIR elsewhere: the scratch repo has no upstream history, so
	# checkpatch must not look commit ids up in it.
	out=$(cd "$SRC" && GIT_DIR=/nonexistent ./scripts/checkpatch.pl --strict --no-color --showfile \
		${ignore[@]+"${ignore[@]}"} "$p" 2>&1) || true
	total=$(printf '%s\n' "$out" | grep -E '^total: [0-9]+ errors, [0-9]+ warnings' | tail -n 1)
	[ -n "$total" ] || {
		printf '%s\n' "$out" >&2
		die "checkpatch gave no total for ${p#"$TOP"/}"
	}
	errors=$(echo "$total" | sed -E 's/^total: ([0-9]+) errors.*/\1/')
	warnings=$(echo "$total" | sed -E 's/^total: [0-9]+ errors, ([0-9]+) warnings.*/\1/')
	if [ "$errors" != 0 ] || [ "$warnings" != 0 ]; then
		printf '%s\n' "$out" | sed 's/^/    | /'
		printf 'FAIL %s: %s\n' "${p##*/}" "$total"
		bad=$((bad + 1))
	else
		printf 'ok   %s: %s\n' "${p##*/}" "$total"
	fi
done < <(series_files)
[ "$bad" = 0 ] || die "checkpatch --strict: $bad of $n patches have errors or warnings (above)"
say "checkpatch --strict: $n patches, 0 errors, 0 warnings"
