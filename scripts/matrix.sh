#!/usr/bin/env bash
# Compile kernel/trace/ with W=1 under configurations the harness kernels
# are not: Debian's own amd64 and arm64 configs, a minimal FTRACE config
# without the max-buffer tracers, the harness config on i386, and the
# GKI-style arm64 config built with clang (gki-clang: the gki kernel's
# fragments, LLVM=-16), whose kernel the harness builds without W=1.  Fail when
# the series head does not build in one, or shows a warning the base does
# not show in the same config (texts compared without line numbers, as
# lint.sh does).
#
#   matrix.sh [--if-changed] [NAME...]
#                          default: all of debian-amd64 ftrace-minimal i386 arm64 gki-clang
#
# --if-changed (make check): nothing is built when config/matrix-base/head.txt
# holds the key of this run: the trees of the base and the head, each
# config's recipe (its start config and fragments), the compilers, the
# kept base warnings and this script with lib.sh.  A run of every config
# that passes writes that file.
#
# The sources are a separate work tree of the scratch repo ($BUILD/matrix/src,
# detached: $BUILD/linux is never checked out), objects in $BUILD/obj/matrix-NAME.
# Per config: build the base, then check out the head and build again.  Only
# what the series changes is compiled again at the head, and those objects
# were all compiled at the base just before (on a warm run, the ones whose
# recorded dependencies the series changes are removed first), so the two
# logs hold the warnings of the same objects; the objects the series does not
# touch give the same warnings at both ends.
#
# The base's warnings are a function of the base's sources, the compiler
# and the .config: config/matrix-base/NAME.txt keeps them, under a key of
# those three (and the W= level and folder).  When the key matches, the
# base is not built again: every object of the folder is compiled at the
# head and its warnings compared with the file's.  Otherwise (another
# tree, compiler or config) the base is built as above, and the key and
# warnings are in $LOGS/matrix-NAME-base.key; --record-base builds the base
# of every object and writes the files.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_tree

ALL=(debian-amd64 ftrace-minimal i386 arm64 gki-clang)
WT=$BUILD/matrix/src
dir=${MATRIX_DIR:-kernel/trace/}
BASELINES=$TOP/config/matrix-base
record=0 if_changed=0
case ${1:-} in
--record-base) record=1 && shift ;;
--if-changed) if_changed=1 && shift ;;
esac
names=("$@")
[ ${#names[@]} != 0 ] || names=("${ALL[@]}")

wgit() {
	GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1 git -C "$WT" "$@"
}

# recipe NAME: set arch, cross, llvm (LLVM=, for clang), cc (the compiler
# these name), start (tinyconfig, defconfig or an xz file) and frags
# (fragments of config/, merged in this order).
recipe() {
	arch=x86_64 cross='' llvm='' start=tinyconfig frags=()
	case $1 in
	debian-amd64)
		start=$DEBIAN_CONFIGS/config.amd64_none_amd64.xz
		frags=(matrix-debian) ;;
	ftrace-minimal)
		frags=(base x86_64 matrix-ftrace-minimal) ;;
	i386)
		arch=i386 frags=(base tracing x86_64 matrix-i386) ;;
	arm64)
		arch=arm64 cross=aarch64-linux-gnu-
		start=$DEBIAN_CONFIGS/config.arm64_none_arm64.xz
		frags=(matrix-debian) ;;
	gki-clang)
		arch=arm64 llvm=$GKI_LLVM
		frags=(base tracing arm64 gki) ;;
	*)
		die "unknown matrix config '$1' (known: ${ALL[*]})" ;;
	esac
	need_base_config "$start"
	# LLVM=-16 names clang-16, LLVM=/dir/ names /dir/clang, LLVM=1 clang
	case $llvm in '') cc=${cross}gcc ;; 1) cc=clang ;; */) cc=${llvm}clang ;; *) cc=clang$llvm ;; esac
	command -v "$cc" >/dev/null || die "$cc is missing: run 'make deps'"
}

kmake() { # OBJ ARGS...
	local obj=$1
	shift
	make -C "$WT" O="$obj" ARCH="$arch" ${cross:+CROSS_COMPILE=$cross} ${llvm:+LLVM=$llvm} -j"$JOBS" "$@"
}

# worktree: make $WT a work tree of the scratch repo.  tree.sh makes that
# repo anew; then the old files are kept and registered again, so that their
# times, and the objects built from them, stay valid.
worktree() {
	local common
	common=$(git -C "$WT" rev-parse --path-format=absolute --git-common-dir 2>/dev/null || true)
	[ -z "$common" ] || [ "$(realpath "$common")" != "$(realpath "$SRC/.git")" ] || return 0
	sgit worktree prune
	if [ -d "$WT" ]; then
		note "registering ${WT#"$TOP"/} again as a work tree of ${SRC#"$TOP"/}"
		rm -rf "$WT.old"
		mv "$WT" "$WT.old"
		sgit worktree add -q --no-checkout --detach "$WT" base
		rm -rf "$WT.old/.git"
		mv "$WT/.git" "$WT.old/.git"
		rmdir "$WT"
		mv "$WT.old" "$WT"
		wgit reset -q
		wgit update-index -q --refresh >/dev/null || true
	else
		say "matrix: creating the work tree ${WT#"$TOP"/}"
		mkdir -p "$(dirname "$WT")"
		sgit worktree add -q --detach "$WT" base
	fi
}

goto() { # COMMIT
	wgit checkout -q -f --detach "$1" || die "cannot check out $1 in $WT"
}

# configure NAME OBJ: make OBJ/.config from the recipe, at the base, when the
# recipe or the base changed.
configure() {
	local name=$1 obj=$2 stamp f paths=()
	for f in "${frags[@]}"; do paths+=("$TOP/config/$f.config"); done
	stamp=$({
		echo "$arch $cross $llvm $start $base_commit"
		case $start in *.xz) xzcat "$start" ;; esac
		cat "${paths[@]}"
	} | sha256sum | cut -c1-16)
	! config_current "$obj" "$stamp" || return 0
	note "configuring: ${start##*/} + ${frags[*]} (ARCH=$arch)"
	make_config "$WT" kmake "$obj" "$start" "$stamp" "$LOGS/matrix-$name-config.log" "${paths[@]}"
}

# force_changed OBJ: remove the objects of $dir whose recorded dependencies
# (the .cmd files of the last build) include a file the series changes, so
# that the base build compiles every object the head build will.
force_changed() {
	local obj=$1 pat n=0 c o
	[ -d "$obj/$dir" ] || return 0
	pat=$(mktemp)
	sgit diff --name-only base "$head_commit" | sed "s|^|$WT/|" >"$pat"
	while IFS= read -r c; do
		o=$(dirname "$c")/$(basename "$c" .cmd)
		o=${o%/.*}/${o##*/.}
		[ ! -e "$o" ] || { rm -f "$o"; n=$((n + 1)); }
	done < <(find "$obj/$dir" -name '.*.o.cmd' -print0 | xargs -0 -r grep -lF -f "$pat" || true)
	rm -f "$pat"
	[ "$n" = 0 ] || note "$n objects depend on files the series changes: compiled again"
}

# base_key OBJ: what the base's warnings depend on: the base's sources (its
# tree), the compiler, the .config made at the base, the W= level and the
# folder.
base_key() {
	{
		sgit rev-parse "$base_commit^{tree}"
		"$cc" --version | head -n 1
		echo "$arch W=1 $dir"
		cat "$1/.config"
	} | sha256sum | cut -c1-16
}

# clean_dir OBJ: remove the objects of $dir, so that the next build
# compiles (and warns about) every one of them.
clean_dir() {
	[ ! -d "$1/$dir" ] || find "$1/$dir" \( -name '*.o' -o -name '*.a' \) -delete
}

# warnings LOG: the warnings of a build log, without line and column numbers
# and code offsets (objtool), each once.  Not those of the host programs
# under scripts/, which the series does not touch: a build in a new object
# folder makes them first (genksyms' bison conflicts, where MODVERSIONS is
# on), and only there, so a kept base would lack them.
warnings() {
	{ grep -E '(warning|error):' "$1" || true; } |
		sed -E -e "s|$WT/||g" -e 's|^\.\./||' -e 's/:[0-9]+:[0-9]+:/:/' -e 's/:[0-9]+:/:/' \
			-e 's/\+0x[0-9a-f]+(\/0x[0-9a-f]+)?//g' |
		{ grep -v '^scripts/' || true; } |
		LC_ALL=C sort -u
}

# first_errors LOG: the first errors of a failed build: the compiler's, each
# after the "In function" line it belongs to, else make's.
first_errors() {
	if grep -qE 'error:|undefined reference' "$1"; then
		awk '/: In function /{ fn = $0; next }
			/error:|undefined reference/{ if (fn != "") print fn; fn = ""; print }' "$1"
	else
		grep -E 'Error [0-9]|\*\*\*' "$1" || true
	fi | sed -e "s|$WT/||g" | head -n 12
}

# run_config NAME: configure, build the base, build the head, compare.
# Sets result[NAME] and times[NAME]; returns non-zero on any failure.
declare -A result times
run_config() {
	local name=$1 obj=$OBJ/matrix-$1 t0 t1 t2 t3 rc=0 blog hlog key baseline from
	blog=$LOGS/matrix-$name-base.log hlog=$LOGS/matrix-$name-head.log
	recipe "$name"
	say "matrix $name: W=1 $dir ($cc, ARCH=$arch, make -j$JOBS)"
	t0=$(now_s)
	goto "$base_commit"
	if ! configure "$name" "$obj"; then
		result[$name]="configuration failed (see $LOGS/matrix-$name-config.log)"
		times[$name]="configure failed after $(fmt_secs $(($(now_s) - t0)))"
		return 1
	fi
	t1=$(now_s)
	key=$(base_key "$obj")
	baseline=$BASELINES/$name.txt
	if [ $record = 0 ] && [ "$(sed -n 's/^# key: //p' "$baseline" 2>/dev/null)" = "$key" ]; then
		note "base: the warnings of ${baseline#"$TOP"/} (key $key), not built again"
		grep -v '^#' "$baseline" >"$LOGS/matrix-$name-base.txt" || true
		: >"$blog"
		clean_dir "$obj"
		from=${baseline#"$TOP"/}
	else
		if [ $record = 1 ]; then
			clean_dir "$obj"
		elif [ -f "$baseline" ]; then
			note "base: ${baseline#"$TOP"/} is of another tree, compiler or config: built"
		fi
		force_changed "$obj"
		note "base: $(sgit log -1 --format='%h %s' "$base_commit")"
		if ! run_logged "$blog" kmake "$obj" -k W=1 "$dir"; then
			result[$name]="$dir does not build at the base (see $blog)"
			times[$name]="base failed after $(fmt_secs $(($(now_s) - t0)))"
			return 1
		fi
		warnings "$blog" >"$LOGS/matrix-$name-base.txt"
		{
			echo "# key: $key"
			echo "# The W=1 warnings of $dir at the base, config $name (scripts/matrix.sh --record-base)"
			cat "$LOGS/matrix-$name-base.txt"
		} >"$LOGS/matrix-$name-base.key"
		if [ $record = 1 ]; then
			mkdir -p "$BASELINES"
			cp "$LOGS/matrix-$name-base.key" "$baseline"
			note "wrote ${baseline#"$TOP"/}: $(wc -l <"$LOGS/matrix-$name-base.txt") warnings"
		fi
		from="the base"
	fi
	t2=$(now_s)
	goto "$head_commit"
	note "head: $(sgit log -1 --format='%h %s' "$head_commit")"
	run_logged "$hlog" kmake "$obj" -k W=1 "$dir" || rc=$?
	t3=$(now_s)
	times[$name]=$(printf 'configure %s, base %s, head %s, total %s' "$(fmt_secs $((t1 - t0)))" \
		"$(fmt_secs $((t2 - t1)))" "$(fmt_secs $((t3 - t2)))" "$(fmt_secs $((t3 - t0)))")
	warnings "$hlog" >"$LOGS/matrix-$name-head.txt"
	LC_ALL=C comm -13 "$LOGS/matrix-$name-base.txt" "$LOGS/matrix-$name-head.txt" |
		{ grep -v 'error:' || true; } >"$LOGS/matrix-$name-new.txt"
	if [ "$rc" != 0 ]; then
		result[$name]="$dir does not build at the head; first errors ($hlog):
$(first_errors "$hlog" | sed 's/^/        /')"
		return 1
	fi
	if [ -s "$LOGS/matrix-$name-new.txt" ]; then
		result[$name]="$(wc -l <"$LOGS/matrix-$name-new.txt") W=1 warnings the base does not show:
$(sed 's/^/        /' "$LOGS/matrix-$name-new.txt")"
		return 1
	fi
	result[$name]="builds; no new W=1 warnings ($from shows all $(wc -l <"$LOGS/matrix-$name-head.txt") of the head's)"
	note "${times[$name]}"
}

for n in "${names[@]}"; do recipe "$n"; done
[ -z "$(sgit status --porcelain --untracked-files=no)" ] ||
	warn "$SRC has uncommitted changes: the matrix builds the branch main without them"
base_commit=$(sgit rev-parse 'base^{commit}')
# The series' branch, not HEAD: in make check the 6.1 bisect may have a
# prefix checked out in $SRC meanwhile.  Read once: the key and the
# build are of the same commit.
head_commit=$(sgit rev-parse 'refs/heads/main^{commit}')

# run_key: what the outcome of this run depends on (see above), hashed
run_key() {
	local n f
	{
		sgit rev-parse "$base_commit^{tree}" "$head_commit^{tree}"
		echo "W=1 $dir ${names[*]}"
		for n in "${names[@]}"; do
			recipe "$n"
			echo "$n: $arch $cross $llvm $start ${frags[*]}"
			case $start in *.xz) xzcat "$start" ;; esac
			for f in "${frags[@]}"; do cat "$TOP/config/$f.config"; done
			"$cc" --version | head -n 1
			cat "$BASELINES/$n.txt" 2>/dev/null || true
		done
		cat "$TOP/scripts/matrix.sh" "$TOP/scripts/lib.sh"
	} | sha256sum | cut -c1-16
}
head_stamp=$BASELINES/head.txt key=
if [ $record = 0 ] && [ "${names[*]}" = "${ALL[*]}" ]; then
	key=$(run_key)
	if [ $if_changed = 1 ] && stamp_holds matrix "$head_stamp" "$key"; then
		exit 0
	fi
fi
mkdir -p "$LOGS"
t_start=$(now_s)
worktree
note "work tree ready in $(fmt_secs $(($(now_s) - t_start)))"

failed=()
for n in "${names[@]}"; do
	run_config "$n" || failed+=("$n")
done

echo
say "matrix: $dir at $(sgit rev-parse --short "$head_commit") against the base"
for n in "${names[@]}"; do
	note "$(printf '%-15s %s' "$n" "${result[$n]}")"
done
say "matrix: times"
for n in "${names[@]}"; do
	note "$(printf '%-15s %s' "$n" "${times[$n]}")"
done
note "$(printf '%-15s %s' total "$(fmt_secs $(($(now_s) - t_start)))")"
[ ${#failed[@]} = 0 ] || die "matrix: failed in ${failed[*]} (above)"
say "matrix: $dir builds in ${names[*]}, no new W=1 warnings"
[ -z "$key" ] ||
	stamp_write "$head_stamp" "$key" "$dir builds in ${names[*]} with W=1, no warning the base lacks"
