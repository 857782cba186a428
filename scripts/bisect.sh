#!/usr/bin/env bash
# Build every prefix of the series (base + patches 1..k) so that the series
# is bisectable: the kernel (vmlinux, normal config unless BISECT_FLAVOUR) in
# $BUILD/obj/bisect and, where the prefix has them, the ring-buffer
# kselftests.
#
#   bisect.sh [--skip-head] [--if-changed]
#
# --skip-head: the full series is built elsewhere.  --if-changed (make
# check): not again when config/bisect/SERIES.txt holds the key of this
# very queue.  Every bisect that passes writes that file; its key is a hash
# of what the builds depend on: the base's tree and every prefix's (the
# patches' contents), the flavour's .config, the compiler, the libraries
# the kselftests link, and this script with lib.sh.  A queue, compiler or
# config that changed is built again.
#
# BISECT_FLAVOUR=rt (or another flavour of kernel.sh) builds the prefixes
# with that flavour's config instead, from its kernel's objects.
#
# Prefixes are built from the last to the first, starting from a copy of the
# flavour's kernel objects: each step then only rebuilds what one patch
# changed.  A prefix whose kernel sources equal an already built one (a patch
# of documentation or tests only) is not built again.  A prefix that differs
# from the one built before it only in .c files, each compiled into one
# object, has those objects built alone; vmlinux is linked again only when
# their symbols differ or modpost would look at their references (see
# link_face() in lib.sh).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_tree

skip_head=0 if_changed=0
flavour=${BISECT_FLAVOUR:-normal}
for arg; do
	case $arg in
	--skip-head) skip_head=1 ;;
	--if-changed) if_changed=1 ;;
	*) die "usage: $0 [--skip-head] [--if-changed]" ;;
	esac
done
[ -z "$(sgit status --porcelain)" ] ||
	die "$SRC has uncommitted changes: commit or stash them before the bisect build"

mapfile -t commits < <(sgit rev-list --reverse base..HEAD)
total=${#commits[@]}
if [ "$total" = 0 ]; then
	say "bisect: empty series, nothing to build"
	exit 0
fi

# What a kernel build reads (all but documentation and tools), and what the
# kselftests read.
not_kernel=$'\t(Documentation|tools|LICENSES)/|\t(MAINTAINERS|CREDITS|\\.mailmap)$'
kernel_id() { # COMMIT
	sgit ls-tree -r "$1" | grep -vE "$not_kernel" | sha256sum | cut -c1-16
}
ksft_id() { # COMMIT
	sgit ls-tree -r "$1" -- tools include/uapi arch/x86/include/uapi | sha256sum | cut -c1-16
}

# queue_key: what a bisect's outcome depends on (see above), hashed
queue_key() {
	local c
	{
		echo "$SERIES $flavour skip_head=$skip_head"
		sgit rev-parse "base^{tree}"
		for c in "${commits[@]}"; do
			sgit rev-parse "$c^{tree}"
		done
		cat "$OBJ/$flavour/.config"
		gcc --version | head -n 1
		[ -z "${CROSS:-}" ] || "${CROSS}gcc" --version | head -n 1
		[ "$flavour" != gki ] || clang"$GKI_LLVM" --version | head -n 1
		dpkg-query -W -f '${Package} ${Version}\n' libtraceevent-dev libtracefs-dev 2>/dev/null || true
		cat "$TOP/scripts/bisect.sh" "$TOP/scripts/lib.sh"
	} | sha256sum | cut -c1-16
}
stamp=$TOP/config/bisect/$SERIES.txt key=
[ ! -f "$OBJ/$flavour/.config" ] || key=$(queue_key)
if [ "$if_changed" = 1 ] && stamp_holds bisect "$stamp" "$key"; then
	exit 0
fi

declare -A built_kernel built_ksft
built_kernel[$(kernel_id base)]=base
if [ "$skip_head" = 1 ]; then
	built_kernel[$(kernel_id HEAD)]=head
	built_ksft[$(ksft_id HEAD)]=head
fi

patch_name() { # K: the queue file of patch K, or its subject
	local f
	f=$(cd "$PATCHES" 2>/dev/null && ls "$(printf '%04d' "$1")"-*.patch 2>/dev/null | head -n 1 || true)
	echo "${f:-$(sgit log -1 --format=%s "${commits[$1 - 1]}")}"
}

# Start from a copy of the flavour's kernel objects (built at the head).  The
# tools build (objtool) records absolute paths: point them at the copy,
# keeping the files' times, or objtool and then everything is rebuilt.
rm -rf "$OBJ/bisect" "$OBJ/bisect-headers" "$OBJ/bisect-kselftest"
if [ -f "$OBJ/$flavour/vmlinux" ]; then
	note "seeding ${OBJ#"$TOP"/}/bisect from ${OBJ#"$TOP"/}/$flavour"
	cp -a "$OBJ/$flavour" "$OBJ/bisect"
	grep -rlIZ --exclude='*.o' -F "$OBJ/$flavour" "$OBJ/bisect" | while IFS= read -r -d '' f; do
		sed "s|$OBJ/$flavour|$OBJ/bisect|g" "$f" >"$f.tmp"
		touch -r "$f" "$f.tmp"
		chmod --reference="$f" "$f.tmp"
		mv "$f.tmp" "$f"
	done
fi

# Going back to the head rewrites the files the series touches: give them
# back their times (obj/bisect is made anew each time).
checkout_away
trap checkout_back EXIT

# The kselftests against the prefix's own uapi headers.
ksft_build() {
	"${KMAKE[@]}" O="$OBJ/bisect-headers" INSTALL_HDR_PATH="$OBJ/bisect-headers/usr" headers_install &&
		make -C "$SRC/tools/testing/selftests" TARGETS=ring-buffer O="$OBJ/bisect-kselftest" \
			KHDR_INCLUDES="-isystem $OBJ/bisect-headers/usr/include" USERLDFLAGS=-static all
}

# changed_objects FROM TO: the objects of vmlinux whose sources are the
# only kernel sources that differ between the commits FROM and TO, one per
# line; false when a differing file is anything else: a header, a Makefile,
# a file added or deleted, a .c file that is not built into vmlinux.a (the
# vDSO, a module, lib.a, a host program, or not built in this config) or
# that another object includes (the .cmd files name every file an object
# was built from).
changed_objects() {
	local st f src members
	src=$(realpath "$SRC")
	# a thin archive: ar names its members from the current folder
	members=$(cd "$OBJ/bisect" && ar t vmlinux.a) || return 1
	while IFS=$'\t' read -r st f; do
		[ "$st" = M ] && [[ $f == *.c ]] && grep -qxF -- "${f%.c}.o" <<<"$members" || return 1
		[ "$(grep -rlF --include='.*.cmd' -- "$src/$f" "$OBJ/bisect" | wc -l)" = 1 ] || return 1
		printf '%s\n' "${f%.c}.o"
	done < <(sgit diff --no-renames --name-status "$1" "$2" | grep -vE "$not_kernel")
}

# The objects of $OBJ/bisect hold the kernel of this commit, linked (or
# with the symbols of one that was), and this is its prefix number; empty
# when they hold none (before the first build, or after a failed one).
linked_at= linked_k=

# build_kernel K COMMIT: build vmlinux of prefix K, checked out.  When only
# some objects differ from the prefix linked before, they are built alone:
# a link of the prefix would differ from that one only in their code, so
# with the same symbols (link_face() of lib.sh) it ends as that one did.
# Otherwise vmlinux is built and linked.
build_kernel() {
	local k=$1 c=$2 from=$linked_at list objs before after
	linked_at=
	if [ -n "$from" ] && list=$(changed_objects "$from" "$c") && [ -n "$list" ]; then
		mapfile -t objs <<<"$list"
		before=$(link_face "$OBJ/bisect" "${objs[@]}") || before=
		run_logged "$LOGS/build-bisect.log" "${KMAKE[@]}" O="$OBJ/bisect" "${objs[@]}" || return 1
		after=$(link_face "$OBJ/bisect" "${objs[@]}") || after=
		if grep -q '^! CROSS' <<<"$after"; then
			note "${objs[*]}: a reference into an init or exit section, linking"
		elif [ -n "$before" ] && [ "$after" = "$before" ]; then
			note "built ${objs[*]} alone: the symbols of prefix $linked_k, not linked again"
			linked_at=$c
			return 0
		else
			note "${objs[*]}: not the symbols of prefix $linked_k, linking"
		fi
	fi
	"$TOP/scripts/kernel.sh" "$flavour" bisect vmlinux || return 1
	linked_at=$c linked_k=$k
}

# build_prefix K: 0 when base + patches 1..K builds.
build_prefix() {
	local k=$1 c=${commits[$1 - 1]} kid sid
	kid=$(kernel_id "$c")
	sid=$(ksft_id "$c")
	say "bisect $k/$total: $(patch_name "$k")"
	sgit checkout -q --detach "$c"
	if [ -n "${built_kernel[$kid]:-}" ]; then
		note "kernel sources as at ${built_kernel[$kid]}: not built again"
	else
		if ! build_kernel "$k" "$c"; then
			cp "$LOGS/build-bisect.log" "$LOGS/bisect-$k.log"
			return 1
		fi
		built_kernel[$kid]=$k
	fi
	if [ -f "$SRC/tools/testing/selftests/ring-buffer/Makefile" ] && [ -z "${built_ksft[$sid]:-}" ]; then
		note "building the ring-buffer kselftests"
		run_logged "$LOGS/bisect-$k-kselftest.log" ksft_build || return 1
		built_ksft[$sid]=$k
	fi
	return 0
}

last=$total
[ "$skip_head" = 0 ] || last=$((total - 1))
failed=
for ((k = last; k >= 1; k--)); do
	if build_prefix "$k"; then
		[ -z "$failed" ] || break
	else
		# Keep going down: the culprit is the first patch of the failing run.
		failed=$k
	fi
done
if [ -n "$failed" ]; then
	die "the series does not build from patch $failed/$total on: $(patch_name "$failed")
       (build log: $LOGS/bisect-$failed*.log)"
fi
if [ "$skip_head" = 1 ]; then
	done_what="every prefix builds (1..$last here, the full series as the $flavour kernel)"
else
	done_what="every prefix builds"
fi
say "bisect: $done_what"
[ -z "$key" ] ||
	stamp_write "$stamp" "$key" "$(basename "$PATCHES")/, $total patches, $flavour config: $done_what"
