# Shared helpers for the harness scripts.  Sourced, never run.
#
# Every script starts with:
#   set -euo pipefail
#   . "$(dirname "$0")/lib.sh"
#
# Settings come from the environment (the Makefile exports them):
#   BUILD       build folder (default: build, relative to the repo)
#   KERNEL_SRC  use this kernel tree instead of Debian's linux-source-6.1
#   PATCHES     folder of the patch queues (default: patches; the 6.1 series
#               is in its 6.1/, the mainline series in its 6.12/)
#   JOBS        parallel make jobs (default: number of CPUs + 1: on two
#               cores, make -j3 built kernel/ and mm/ 5% sooner than -j2,
#               using 98% of the CPUs instead of 90%)
#   V=1         show full command output instead of logging it

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$TOP/$BUILD ;; esac
# PATCHES is the root of the queues; lib.sh narrows it to one series below.
# The root is kept in PATCHES_ROOT (exported) so a script that runs another
# one does not narrow it twice (patches/6.1/6.1).
PATCHES_ROOT=${PATCHES_ROOT:-${PATCHES:-patches}}
case $PATCHES_ROOT in /*) ;; *) PATCHES_ROOT=$TOP/$PATCHES_ROOT ;; esac
export PATCHES_ROOT

JOBS=${JOBS:-$(($(nproc) + 1))}

# SERIES picks the series a script works on:
#   6.1   patches/6.1/ on Debian's linux-source-6.1 (the product; the default)
#   6.12  patches/6.12/ on Debian's linux-source-6.12: what we offer mainline
# Each has its own scratch tree, object folders, logs and guest files, so the
# two never share a build.  KERNEL_SRC is a user's own 6.1 tree; the 6.12
# series takes KERNEL_SRC_612 instead.
SERIES=${SERIES:-6.1}
case $SERIES in
6.1)
	SRC=$BUILD/linux                # scratch kernel tree (git)
	OBJ=$BUILD/obj                  # object folders: normal, debug, bisect, ...
	LOGS=$BUILD/logs
	GUEST_ROOT=$BUILD               # headers/ kselftest/ user/ tests.list
	PATCHES=$PATCHES_ROOT/6.1
	# The Debian package the series is tested on (PIN_VERSION: override only
	# to test the fallback to the newest one).
	PIN_PACKAGE=linux-source-6.1
	PIN_VERSION=${PIN_VERSION:-6.1.192-2}
	;;
6.12)
	SRC=$BUILD/linux-6.12
	OBJ=$BUILD/obj-6.12
	LOGS=$BUILD/logs-6.12
	GUEST_ROOT=$BUILD/guest-6.12
	PATCHES=$PATCHES_ROOT/6.12
	PIN_PACKAGE=linux-source-6.12
	PIN_VERSION=${PIN_VERSION_612:-6.12.117-1~deb12u1}
	KERNEL_SRC=${KERNEL_SRC_612:-}
	;;
*)
	printf 'ERROR: unknown SERIES=%s (6.1 or 6.12)\n' "$SERIES" >&2
	exit 1
	;;
esac
# WORKTREE: build from this checkout of the scratch tree instead (bench.sh
# builds the unpatched base from $BUILD/base-src, a git worktree at "base").
[ -z "${WORKTREE:-}" ] || SRC=$WORKTREE

# Identity used for commits in the scratch tree and for git am.
GIT_IDENT_NAME=ftrace-mmap-6.1
GIT_IDENT_EMAIL=ftrace-mmap-6.1@users.noreply.invalid

# busybox-static of arm64, unpacked by deps.sh (installing it would replace
# the host's busybox-static).
BUSYBOX_ARM64=$BUILD/dl/busybox-arm64/bin/busybox

# Debian 12's own kernel configs of the series' kernel (packages
# linux-config-6.1 and, from bookworm-backports, linux-config-6.12; amd64
# and arm64): the debian flavours and the config matrix start from them.
DEBIAN_CONFIGS=/usr/src/linux-config-$SERIES

# set_flavour FLAVOUR: set_arch for the flavour's guest: normal, debug, kcsan,
# rt and debian are x86_64, arm64, arm64-debug, gki and debian-arm64 are
# arm64 (cross-compiled, booted in qemu-system-aarch64).  gki's kernel is built with clang, as Android's GKI
# is: Debian's clang-16 and its LLVM tools (GKI_LLVM: the LLVM= suffix).
GKI_LLVM=${GKI_LLVM:--16}
set_flavour() {
	case $1 in
	normal | debug | kcsan | rt | debian) set_arch x86_64 ;;
	arm64 | arm64-debug | debian-arm64) set_arch arm64 ;;
	gki)
		set_arch arm64
		KMAKE=(make -C "$SRC" ARCH="$KARCH" LLVM="$GKI_LLVM" -j"$JOBS")
		;;
	*) die "unknown flavour '$1' (normal, debug, arm64, arm64-debug, gki, kcsan, rt, debian or debian-arm64)" ;;
	esac
}

# set_arch x86_64|arm64: what the scripts build and boot for that guest.
#   KARCH       the kernel's ARCH          CROSS      CROSS_COMPILE prefix
#   KMAKE       make in the scratch tree   KIMAGE     boot image in an object folder
#   GUEST_CC    C compiler of the guest programs, GUEST_CFLAGS its extra flags
#               (arm64: Debian's multiarch headers and static libraries)
#   GUEST       folder of the guest's files: headers/ kselftest/ user/ tests.list
#   GUEST_TAG   prefix of their object folders and logs ($OBJ/${GUEST_TAG}headers)
#   INITRD      the guest's initramfs      BUSYBOX    the guest's busybox
set_arch() {
	case $1 in
	x86_64)
		KARCH=x86_64 CROSS='' KIMAGE=arch/x86/boot/bzImage
		GUEST=$GUEST_ROOT GUEST_TAG='' INITRD=$GUEST_ROOT/initramfs-guest.cpio.gz
		BUSYBOX=/bin/busybox
		GUEST_CFLAGS=()
		;;
	arm64)
		KARCH=arm64 CROSS=aarch64-linux-gnu- KIMAGE=arch/arm64/boot/Image
		GUEST=$GUEST_ROOT/arm64 GUEST_TAG=arm64- INITRD=$GUEST_ROOT/initramfs-arm64.cpio.gz
		BUSYBOX=$BUSYBOX_ARM64
		GUEST_CFLAGS=(-idirafter /usr/include -L/usr/lib/aarch64-linux-gnu)
		;;
	*) die "unknown guest architecture '$1' (x86_64 or arm64)" ;;
	esac
	GUEST_CC=${CROSS}gcc
	KMAKE=(make -C "$SRC" ARCH="$KARCH" ${CROSS:+CROSS_COMPILE="$CROSS"} -j"$JOBS")
}

say()  { printf '==> %s\n' "$*"; }
note() { printf '    %s\n' "$*"; }

# Key stamps (config/bisect/, config/matrix-base/head.txt, config/lint/,
# config/compile-6.12.txt): "# key: KEY", a hash of what a run's outcome
# depends on, then what that run found and who wrote it, as comments.
# stamp_holds WHAT FILE KEY: whether FILE holds KEY (never for an empty
# KEY); if so, it says that WHAT is not done again, and what FILE says.
stamp_holds() {
	[ -n "$3" ] && [ "$(sed -n 's/^# key: //p' "$2" 2>/dev/null)" = "$3" ] || return 1
	say "$1: not again, ${2#"$TOP"/} has the key of this run ($3):"
	grep -v '^# key: ' "$2" | sed 's/^# /    /'
}
# stamp_write FILE KEY FOUND: the stamp of a run that passed
stamp_write() {
	mkdir -p "${1%/*}"
	{
		echo "# key: $2"
		echo "# $3"
		echo "# (scripts/${0##*/}, $(date -u +%Y-%m-%d))"
	} >"$1"
	note "wrote ${1#"$TOP"/} (key $2)"
}
warn() { printf 'WARNING: %s\n' "$*" >&2; }
die()  { printf 'ERROR: %s\n' "$*" >&2; exit 1; }

# git in the scratch tree, with only the repo's own config: a user's global
# settings (diff prefixes, signatures, abbreviations) must not change what
# format-patch writes.
sgit() {
	GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1 git -C "$SRC" "$@"
}

# The patch files of the queue, in order, without the cover letter: the
# names its "series" file lists (one per line, quilt's format; "#" starts a
# comment).  export.sh writes that file; a queue without one is read in the
# order of the numbered names, and so is any queue with PATCHES_NO_SERIES=1.
series_files() {
	local f
	[ -d "$PATCHES" ] || return 0
	if [ -f "$PATCHES/series" ] && [ -z "${PATCHES_NO_SERIES:-}" ]; then
		sed -e 's/#.*//' -e 's/[[:space:]]*$//' -e '/^$/d' "$PATCHES/series" |
			while read -r f; do
				[ -f "$PATCHES/$f" ] || die "${PATCHES#"$TOP"/}/series names $f, which is not there"
				printf '%s\n' "$PATCHES/$f"
			done
		return 0
	fi
	for f in "$PATCHES"/[0-9][0-9][0-9][0-9]-*.patch; do
		[ -e "$f" ] || continue
		case ${f##*/} in 0000-*) continue ;; esac
		printf '%s\n' "$f"
	done
}

# write_series: the queue's "series" file, from its numbered patches.
write_series() {
	{
		echo "# Apply in this order (git am, or quilt); 0000-cover-letter.patch is the cover letter."
		PATCHES_NO_SERIES=1 series_files | sed 's|.*/||'
	} >"$PATCHES/series.tmp"
	mv "$PATCHES/series.tmp" "$PATCHES/series"
}

# A hash naming the content of a folder of numbered patches.
series_hash() {
	local dir=$1 f
	(
		cd "$dir" 2>/dev/null || exit 0
		for f in [0-9][0-9][0-9][0-9]-*.patch; do
			[ -e "$f" ] || continue
			case $f in 0000-*) continue ;; esac
			printf '%s\n' "$f"
			cat "$f"
		done
	) | sha256sum | cut -c1-16
}

need_tree() {
	[ -e "$SRC/.git" ] || die "no scratch tree at $SRC: run 'make tree' first"
}

# base_worktree: a detached worktree of the scratch tree at "base", in
# $BUILD/base-src (made again when it is not at base); prints its path.
base_worktree() {
	local wt=$BUILD/base-src want
	want=$(sgit rev-parse base)
	if [ "$(git -C "$wt" rev-parse HEAD 2>/dev/null)" != "$want" ]; then
		rm -rf "$wt"
		sgit worktree prune
		sgit worktree add -q --detach "$wt" "$want" >/dev/null ||
			die "cannot check the base out into $wt"
	fi
	echo "$wt"
}

# run_logged LOG CMD...: run CMD with its output in LOG, printing a progress
# line every 60 s.  On failure show the errors and the tail of the log.
# V=1 shows the output as it comes instead.
run_logged() {
	local log=$1 pid rc start now last
	shift
	mkdir -p "$(dirname "$log")"
	if [ "${V:-0}" = 1 ]; then
		"$@" 2>&1 | tee "$log"
		return "${PIPESTATUS[0]}"
	fi
	start=$(date +%s)
	"$@" >"$log" 2>&1 </dev/null &
	pid=$!
	# shellcheck disable=SC2064
	trap "kill $pid 2>/dev/null" INT TERM
	while kill -0 "$pid" 2>/dev/null; do
		for _ in $(seq 60); do
			sleep 1
			kill -0 "$pid" 2>/dev/null || break
		done
		if kill -0 "$pid" 2>/dev/null; then
			now=$(date +%s)
			last=$(grep -E '^  [A-Z]' "$log" | tail -n 1 | sed 's/^ *//')
			note "... $((now - start)) s${last:+, at: $last}"
		fi
	done
	rc=0
	wait "$pid" || rc=$?
	trap - INT TERM
	if [ "$rc" != 0 ]; then
		printf -- '---- errors from %s ----\n' "$log" >&2
		grep -E 'error:|Error [0-9]|\*\*\*|undefined reference|fatal:' "$log" | head -n 30 >&2 || true
		printf -- '---- last lines of %s ----\n' "$log" >&2
		tail -n 20 "$log" >&2
		printf -- '----\n' >&2
	fi
	return "$rc"
}

# ksft_install SELFTESTS OBJDIR DEST LOG: build the ring-buffer kselftests
# of the selftests folder SELFTESTS for the guest (its uapi headers in
# $GUEST/headers, statically linked, cross-compiled for arm64) and install
# them into DEST, with the build's output in LOG.
ksft_install() {
	local cross=()
	[ -z "$CROSS" ] || cross=(ARCH="$KARCH" CROSS_COMPILE="$CROSS")
	run_logged "$4" make -C "$1" -j"$JOBS" "${cross[@]}" \
		TARGETS=ring-buffer O="$2" \
		KHDR_INCLUDES="-isystem $GUEST/headers/include" \
		USERCFLAGS="${GUEST_CFLAGS[*]}" USERLDFLAGS="-static ${GUEST_CFLAGS[*]}" \
		KSFT_INSTALL_PATH="$3" install
}

# stock_612_kernel: the path of Debian's newest 6.12 cloud kernel (a plain
# bzImage that boots in QEMU, with mainline's own ring-buffer mapping),
# fetched with apt-get download into $BUILD/mainline once; MAINLINE_KERNEL
# names another one instead.
stock_612_kernel() {
	local dir=$BUILD/mainline pkg deb
	if [ -n "${MAINLINE_KERNEL:-}" ]; then
		echo "$MAINLINE_KERNEL"
		return
	fi
	mkdir -p "$dir"
	if ! ls "$dir"/x/boot/vmlinuz-* >/dev/null 2>&1; then
		pkg=$(apt-cache search --names-only '^linux-image-6\.12\.[0-9.]+\+deb12-cloud-amd64-unsigned$' |
			awk '{print $1}' | sort -V | tail -1)
		[ -n "$pkg" ] || die "no linux-image-6.12 cloud package known to apt (apt-get update?)"
		note "fetching $pkg" >&2
		rm -rf "$dir"/*.deb "$dir/x"
		(cd "$dir" && apt-get download -q "$pkg" >/dev/null) ||
			die "apt-get download $pkg failed"
		deb=$(ls "$dir"/*.deb | head -1)
		dpkg-deb -x "$deb" "$dir/x"
	fi
	ls "$dir"/x/boot/vmlinuz-* | sort -V | tail -1
}

# modules_cpio OUT KO...: a cpio archive OUT (OUT.list: its gen_init_cpio
# list) with each module KO in /lib/modules/ftmmap/, to unpack after the
# guest's initramfs (boot.sh's INITRD_EXTRA and test modules).
modules_cpio() {
	local out=$1 ko
	shift
	{
		printf '%s\n' 'dir /lib 755 0 0' 'dir /lib/modules 755 0 0' 'dir /lib/modules/ftmmap 755 0 0'
		for ko; do
			echo "file /lib/modules/ftmmap/${ko##*/} $ko 644 0 0"
		done
	} >"$out.list"
	"$BUILD/tools/gen_init_cpio" "$out.list" >"$out"
}

# need_base_config BASE: a config kernel.sh or matrix.sh starts from is a
# make target (tinyconfig, defconfig) or an xz file of Debian's, installed
# by make deps.
need_base_config() {
	case $1 in
	*.xz) [ -f "$1" ] || die "$1 is missing: run 'make deps' (linux-config-$SERIES, linux-config-$SERIES:arm64)" ;;
	esac
}

# config_current OBJ STAMP: OBJ/.config was made by make_config with STAMP
# (a hash of what it was made from).
config_current() {
	[ -f "$1/.config" ] && [ "$(cat "$1/.ftmmap-config" 2>/dev/null)" = "$2" ]
}

# make_config TREE MAKE OBJ BASE STAMP LOG FRAGMENT...: make OBJ/.config for
# the kernel tree TREE: BASE (see need_base_config), the fragments merged
# in this order by merge_config.sh, then olddefconfig; MAKE is a command
# run as "MAKE OBJ TARGET" (make with the caller's ARCH and compiler).
# Then every CONFIG_X=v and "# CONFIG_X is not set" line of the fragments
# must be in the .config; where two fragments name an option, the later
# line counts, as merge_config.sh merges them.  On success, STAMP is kept
# for config_current.  Returns 1, saying why on stderr, on failure.
make_config() {
	local tree=$1 mk=$2 obj=$3 base=$4 stamp=$5 log=$6
	shift 6
	local f line sym bad=()
	local -A want from
	mkdir -p "$obj" "$(dirname "$log")"
	rm -f "$obj/.ftmmap-config"
	# Each step's status is tested: set -e does not act in a list
	# followed by ||.
	if ! {
		case $base in
		*.xz) xzcat "$base" >"$obj/.config" ;;
		*) "$mk" "$obj" "$base" ;;
		esac &&
			(cd "$obj" && "$tree/scripts/kconfig/merge_config.sh" -m -O "$obj" "$obj/.config" "$@") &&
			"$mk" "$obj" olddefconfig
	} >"$log" 2>&1; then
		tail -n 30 "$log" >&2
		printf 'ERROR: configuring %s failed (see %s)\n' "$obj" "$log" >&2
		return 1
	fi
	for f; do
		while IFS= read -r line; do
			case $line in
			CONFIG_*=*) sym=${line%%=*} ;;
			"# CONFIG_"*" is not set") sym=${line#\# } sym=${sym%% *} ;;
			*) continue ;;
			esac
			want[$sym]=$line from[$sym]=${f#"$TOP"/}
		done <"$f"
	done
	for sym in "${!want[@]}"; do
		line=${want[$sym]}
		case $line in
		CONFIG_*) ! grep -qxF "$line" "$obj/.config" || continue ;;
		*) grep -qE "^$sym=" "$obj/.config" || continue ;;
		esac
		bad+=("$line (from ${from[$sym]}; got: $(grep -E "^$sym=|^# $sym is not set" "$obj/.config" || echo absent))")
	done
	if [ ${#bad[@]} != 0 ]; then
		printf 'ERROR: options requested but not in %s:\n' "$obj/.config" >&2
		printf '    %s\n' "${bad[@]}" >&2
		return 1
	fi
	echo "$stamp" >"$obj/.ftmmap-config"
}

# Seconds since the epoch, and a duration as "Mm SSs".
now_s() { date +%s; }
fmt_secs() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

# format_series DIR: write base..HEAD of the scratch tree as numbered patches
# into DIR.  The options make the output a function of the commits alone:
# no version signature, no commit hashes, no "n/m" in subjects (adding a patch
# would rewrite every subject), a fixed abbreviation for blob names, and the
# Date header is the author date, which git am keeps.
format_series() {
	mkdir -p "$1"
	sgit format-patch -q --no-signature --zero-commit -N --abbrev=12 \
		--no-thread --diff-algorithm=myers --output-directory "$1" base..HEAD
}

# The key naming where the base came from; a different key means a new base.
base_key() {
	if [ -n "${KERNEL_SRC:-}" ]; then
		echo "KERNEL_SRC $(cd "$KERNEL_SRC" && pwd)"
	else
		echo "Debian $PIN_PACKAGE $PIN_VERSION"
	fi
}

# tree_state: set TREE_DIRTY (uncommitted or untracked changes, as text),
# TREE_HASH (hash of what export would write), TREE_SYNCED (that hash when
# the tree was made or last exported) and PATCHES_HASH (hash of the queue;
# the scratch repo's ftmmap.applied holds it as of the same moment).
tree_state() {
	local tmp
	TREE_DIRTY=$(sgit status --porcelain)
	tmp=$(mktemp -d)
	format_series "$tmp"
	TREE_HASH=$(series_hash "$tmp")
	rm -rf "$tmp"
	TREE_SYNCED=$(sgit config --get ftmmap.synced || true)
	PATCHES_HASH=$(series_hash "$PATCHES")
}

# link_face DIR OBJECT...: what the link of vmlinux needs of these objects
# of the object folder DIR (bisect.sh): their global symbols (defined, weak
# or undefined) with their sections, and their exports (6.1's __ksymtab_
# and 6.12's __export_symbol_ entries).  The rest matters to modpost alone:
# its section checks go by the sections that the references of the code go
# between, and for some exceptions by the function a reference is in.  Any
# reference that one of those checks looks at (the pairs of sections of
# modpost's sectioncheck[], 6.1's and 6.12's) gives a line "! CROSS", and
# the prefix is then linked.  False when an object cannot be read.
link_face() {
	local dir=$1 o syms rels
	shift
	for o; do
		syms=$(nm -f sysv "$dir/$o") && rels=$(readelf -rW "$dir/$o") || return 1
		awk -v o="$o" '
			function initsec(s) { return s ~ /^\.(init|meminit)\./ }
			function exitsec(s) { return s ~ /^\.(exit|memexit)\./ }
			function textsec(s) {
				return s ~ /^\.(l?text|sched\.text|kprobes\.text|cpuidle\.text|noinstr\.text)(\..*)?$/
			}
			function mismatch(from, to) {
				if ((textsec(from) || from == ".data" || from == ".data.rel") &&
				    (initsec(to) || exitsec(to)))
					return 1
				if ((initsec(from) || from ~ /^\.pci_fixup_/) && to ~ /^\.init\./)
					return from ~ /^\.(meminit|pci_fixup_)/
				if (from ~ /^___ksymtab/ || from ~ /^__export_symbol/)
					return initsec(to) || exitsec(to)
				if (from == "__ex_table")
					return to !~ /(^\.|\.)text$|^\.l?text\.|^\.fixup$/
				return (initsec(from) && exitsec(to)) || (exitsec(from) && initsec(to))
			}
			FNR == 1 { n++ }
			n == 1 {
				if (split($0, a, "|") < 7)
					next
				for (i in a)
					gsub(/^ +| +$/, "", a[i])
				sec[a[1]] = a[7]
				if (a[3] ~ /^[A-Z]$/ || a[1] ~ /^__(ksymtab|kcrctab|export_symbol)_/)
					print o, a[1], a[3], a[7]
				next
			}
			/^Relocation section/ { rs = $3; gsub(/\047/, "", rs); next }
			$1 ~ /^[0-9a-f]+$/ && NF >= 5 {
				from = rs
				sub(/^\.rela/, "", from)
				if (mismatch(from, ($5 in sec) ? sec[$5] : $5))
					print "! CROSS", o, from, "->", $5
			}' <(printf '%s\n' "$syms") <(printf '%s\n' "$rels")
	done | LC_ALL=C sort -u
}

# checkout_away: remember the branch and the times of the files the series
# touches; checkout_back (run it from an EXIT trap) returns to the branch and
# gives those files their times back, so object folders built from the same
# content stay up to date.  For scripts that check out other commits.
checkout_away() {
	SAVED_BRANCH=$(sgit symbolic-ref -q --short HEAD || sgit rev-parse HEAD)
	SAVED_TIMES=$(cd "$SRC" && sgit diff --name-only base HEAD | while read -r f; do
		[ ! -e "$f" ] || printf '%s\t%s\n' "$(stat -c %y "$f")" "$f"
	done)
}
checkout_back() {
	sgit checkout -q "$SAVED_BRANCH"
	(cd "$SRC" && printf '%s\n' "$SAVED_TIMES" | while IFS=$'\t' read -r t f; do
		[ -z "$f" ] || touch -d "$t" -- "$f"
	done)
}

# x86_64 unless a script says otherwise (set_arch).
set_arch x86_64
