#!/usr/bin/env bash
# W=1 and sparse (C=2) on kernel/trace/ for the base and for the series head;
# fail on warnings the series adds.  Warnings are compared as texts without
# line and column numbers, so moved code does not count as new.
#
#   lint.sh [--if-changed]
#
# --if-changed (make check): nothing is built when config/lint/6.1.txt holds
# the key of this run, a hash of what its outcome depends on: the trees of
# the base and of the branch main, the normal kernel's .config (made from
# config/base, tracing and x86_64), gcc's and sparse's versions and this
# script with lib.sh and kernel.sh.  A run that passes writes the file.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
if_changed=0
case ${1:-} in
'') ;;
--if-changed) if_changed=1 ;;
*) die "usage: $0 [--if-changed]" ;;
esac
need_tree
command -v sparse >/dev/null || die "sparse is missing: run 'make deps'"
[ -z "$(sgit status --porcelain)" ] ||
	die "$SRC has uncommitted changes: commit or stash them before 'make lint'"

# run_key: what the outcome depends on (see above), hashed; empty without
# the normal kernel's .config
run_key() {
	local config=$OBJ/normal/.config
	[ -f "$config" ] || return 0
	{
		sgit rev-parse 'base^{tree}' 'refs/heads/main^{tree}'
		echo "W=1 C=2 ${LINT_DIR:-kernel/trace/}"
		cat "$config"
		gcc --version | head -n 1
		dpkg-query -W -f '${Package} ${Version}\n' sparse
		cat "$TOP/scripts/lint.sh" "$TOP/scripts/lib.sh" "$TOP/scripts/kernel.sh"
	} | sha256sum | cut -c1-16
}
stamp=$TOP/config/lint/6.1.txt
key=$(run_key)
if [ $if_changed = 1 ] && stamp_holds lint "$stamp" "$key"; then
	exit 0
fi

obj=$OBJ/lint
dir=${LINT_DIR:-kernel/trace/}
checkout_away
trap checkout_back EXIT

# warnings REV OUT: the normalised warnings of $dir at REV.
warnings() {
	local rev=$1 out=$2 log=$LOGS/lint-$1.log
	sgit checkout -q --detach "$rev"
	"$TOP/scripts/kernel.sh" normal lint prepare >/dev/null
	find "$obj/$dir" -name '*.o' -delete 2>/dev/null || true
	say "lint: W=1 C=2 $dir at $rev"
	run_logged "$log" "${KMAKE[@]}" O="$obj" W=1 C=2 "$dir" ||
		die "the build of $dir failed at $rev (see $log)"
	grep -E '(warning|error):' "$log" |
		sed -E -e "s|$SRC/||g" -e 's|^\.\./||' -e 's/:[0-9]+:[0-9]+:/:/' -e 's/:[0-9]+:/:/' |
		LC_ALL=C sort >"$out"
	note "$(wc -l <"$out") warnings"
}

mkdir -p "$LOGS"
warnings base "$LOGS/lint-base.txt"
warnings "$SAVED_BRANCH" "$LOGS/lint-head.txt"
LC_ALL=C comm -13 "$LOGS/lint-base.txt" "$LOGS/lint-head.txt" >"$LOGS/lint-new.txt"
if [ -s "$LOGS/lint-new.txt" ]; then
	sed 's/^/    /' "$LOGS/lint-new.txt"
	die "lint: the series adds $(wc -l <"$LOGS/lint-new.txt") warnings in $dir (above)"
fi
say "lint: no new W=1 or sparse warnings in $dir"
# Only for the branch main, whose tree the key names
if [ -n "$key" ] && [ "$SAVED_BRANCH" = main ]; then
	stamp_write "$stamp" "$key" "$dir at main: no W=1 or sparse warning the base lacks"
fi
