#!/usr/bin/env bash
# (Re)create the scratch kernel tree $BUILD/linux: one base commit (tag
# "base") with the pristine source, then every patch of the queue applied
# with git am, one commit each.
#
#   tree.sh              recreate (refuses to drop unexported work unless FORCE=1)
#   tree.sh --sync       keep the tree when it matches the queue, else recreate;
#                        unexported work is an error
#   tree.sh --keep-work  like --sync, but a tree with unexported work is used as is
#   tree.sh --if-missing create only when there is no tree
set -euo pipefail
. "$(dirname "$0")/lib.sh"

mode=${1:-recreate}
FORCE=${FORCE:-0}

unexported_reason() {
	if [ -n "$TREE_DIRTY" ]; then
		echo "uncommitted changes:"
		printf '%s\n' "$TREE_DIRTY" | head -n 10 | sed 's/^/      /'
	elif [ "$TREE_HASH" != "$TREE_SYNCED" ]; then
		echo "commits that are not exported to ${PATCHES#"$TOP"/}/ (make export)"
	fi
}

if [ -d "$SRC/.git" ]; then
	case $mode in
	--if-missing)
		exit 0 ;;
	--sync | --keep-work)
		tree_state
		reason=$(unexported_reason)
		if [ "$(sgit config --get ftmmap.basekey || true)" = "$(base_key)" ] &&
			[ -z "$reason" ] && [ "$(sgit config --get ftmmap.applied || true)" = "$PATCHES_HASH" ]; then
			say "scratch tree: up to date with ${PATCHES#"$TOP"/}/ ($(sgit rev-list --count base..HEAD) patches)"
			exit 0
		fi
		if [ -n "$reason" ] && [ "$FORCE" != 1 ]; then
			if [ "$mode" = --keep-work ]; then
				say "scratch tree: using $SRC as it is; it has $reason"
				exit 0
			fi
			die "$SRC has $reason
       Commit them in the tree, run make export and commit ${PATCHES#"$TOP"/}/; or FORCE=1 drops them."
		fi ;;
	recreate)
		if [ "$FORCE" != 1 ]; then
			tree_state
			reason=$(unexported_reason)
			[ -z "$reason" ] || die "$SRC has $reason
       Commit them in the tree, run make export and commit ${PATCHES#"$TOP"/}/; or FORCE=1 drops them."
		fi ;;
	*)
		die "unknown mode $mode" ;;
	esac
fi

say "creating scratch tree $SRC"
start=$(now_s)
new=$BUILD/linux.new
rm -rf "$new"
mkdir -p "$BUILD"
"$TOP/scripts/source.sh" "$new" "$new.desc"
desc=$(cat "$new.desc")
rm -f "$new.desc"

note "git: base commit"
git -C "$new" init -q -b main
git -C "$new" config user.name "$GIT_IDENT_NAME"
git -C "$new" config user.email "$GIT_IDENT_EMAIL"
git -C "$new" config gc.auto 0
git -C "$new" config core.autocrlf false
git -C "$new" config ftmmap.basekey "$(base_key)"
git -C "$new" config ftmmap.base "$desc"
# Debian's tarball ignores everything at the top level, hence -f.
git -C "$new" add -f -A
# Fixed dates: the same source gives the same base commit, and with
# --committer-date-is-author-date the same patches give the same commits.
GIT_AUTHOR_DATE='2000-01-01T00:00:00Z' GIT_COMMITTER_DATE='2000-01-01T00:00:00Z' \
	git -C "$new" commit -q -m "Base: $desc" -m "Pristine source; the series is applied on top with git am."
git -C "$new" tag base
# Let git status show new files: drop Debian's "ignore everything" rule from
# the work tree's .gitignore without committing that change.
if grep -qx '/\*' "$new/.gitignore" 2>/dev/null; then
	git -C "$new" update-index --skip-worktree .gitignore
	sed -i -e '/^\/\*$/d' -e '/^!\/debian\/$/d' "$new/.gitignore"
fi

# Files the old tree had changed must look new to make (the tarball's mtimes
# are old), and a different base makes every object stale.
touch_list=
if [ -d "$SRC/.git" ]; then
	if [ "$(sgit config --get ftmmap.basekey || true)" != "$(base_key)" ]; then
		note "the base changed: removing the object folders"
		rm -rf "$OBJ"
	else
		touch_list=$(sgit diff --name-only base 2>/dev/null; sgit ls-files --others --exclude-standard 2>/dev/null)
	fi
fi
rm -rf "$SRC.old"
[ ! -e "$SRC" ] || mv "$SRC" "$SRC.old"
mv "$new" "$SRC"
rm -rf "$SRC.old" &
if [ -n "$touch_list" ]; then
	(cd "$SRC" && printf '%s\n' "$touch_list" | while read -r f; do
		[ ! -e "$f" ] || touch -- "$f"
	done)
fi

n=0
failed=
while read -r p; do
	[ -n "$p" ] || continue
	n=$((n + 1))
	if ! out=$(sgit am -q --committer-date-is-author-date "$p" 2>&1); then
		failed=$p
		sgit am --abort >/dev/null 2>&1 || true
		break
	fi
done < <(series_files)

# Remember what was applied and what export writes for it: a later
# difference in the tree is work to export, one in the queue is news.
tree_state
sgit config ftmmap.synced "$TREE_HASH"
sgit config ftmmap.applied "$PATCHES_HASH"
wait
if [ -n "$failed" ]; then
	printf '%s\n' "$out" | grep -vE '^(hint:|When you have|If you prefer|To restore)' >&2
	die "patch ${failed#"$TOP"/} does not apply (git am, see above); $SRC has the $((n - 1)) patches before it"
fi
note "applied $n patches in $(fmt_secs $(($(now_s) - start)))"
if [ "$TREE_HASH" != "$PATCHES_HASH" ]; then
	note "note: 'make export' would rewrite ${PATCHES#"$TOP"/}/ (not in export format yet)"
fi
