#!/usr/bin/env bash
# Configure and build the kernel of the scratch tree in $BUILD/obj/NAME.
#
#   kernel.sh FLAVOUR [NAME] [TARGET]
#
# FLAVOUR normal = tinyconfig + config/base.config + config/tracing.config
#                  + config/x86_64.config,
#         debug  = the same + config/debug.config,
#         arm64  = tinyconfig + base + tracing + config/arm64.config, for
#                  arm64 with Debian's aarch64-linux-gnu- cross compiler,
#         arm64-debug = arm64 + config/debug.config (KASAN, lockdep, UBSAN,
#                  KFENCE on arm64),
#         gki    = arm64 + config/gki.config, built with clang (LLVM=-16):
#                  Android GKI's CFI, shadow call stacks, ThinLTO,
#                  full preemption and hardening,
#         kcsan  = normal + config/kcsan.config (the function tracer off, so
#                  that KCSAN instruments kernel/trace/),
#         rt     = normal + config/rt.config (PREEMPT_RT with lockdep; the
#                  6.12 series: 6.1 has no PREEMPT_RT),
#         debian = Debian 12's own amd64 config (linux-config-6.1; with
#                  SERIES=6.12, bookworm-backports' linux-config-6.12) +
#                  config/matrix-debian.config (no debug info); only
#                  the vmlinux exports are made for the test modules,
#                  not Debian's thousands of modules,
#         debian-arm64 = the same with Debian 12's arm64 config.
# NAME is the object folder (default: FLAVOUR), TARGET the make target
# (default: the boot image, bzImage or Image).  The config is made again
# whenever a fragment changes, and every option a fragment asks for is
# checked in the final .config.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

flavour=${1:?usage: $0 normal|debug|arm64|arm64-debug|gki|kcsan|rt|debian|debian-arm64 [NAME] [TARGET]}
name=${2:-$flavour}
# base_config: the config the fragments are merged on (an xz file: Debian's)
base_config=tinyconfig
case $flavour in
normal) fragments=(base tracing x86_64) ;;
debug) fragments=(base tracing x86_64 debug) ;;
arm64) fragments=(base tracing arm64) ;;
arm64-debug) fragments=(base tracing arm64 debug) ;;
gki) fragments=(base tracing arm64 gki) ;;
kcsan) fragments=(base tracing x86_64 kcsan) ;;
rt) fragments=(base tracing x86_64 rt) ;;
debian) fragments=(matrix-debian) base_config=$DEBIAN_CONFIGS/config.amd64_none_amd64.xz ;;
debian-arm64) fragments=(matrix-debian) base_config=$DEBIAN_CONFIGS/config.arm64_none_arm64.xz ;;
*) die "unknown flavour '$flavour' (normal, debug, arm64, arm64-debug, gki, kcsan, rt, debian or debian-arm64)" ;;
esac
need_base_config "$base_config"
set_flavour "$flavour"
target=${3:-${KIMAGE##*/}}
need_tree

obj=$OBJ/$name
frag_paths=()
for f in "${fragments[@]}"; do frag_paths+=("$TOP/config/$f.config"); done
stamp=$({
	cat "${frag_paths[@]}"
	[ "$flavour" != gki ] || echo "LLVM=$GKI_LLVM"
	case $base_config in *.xz) xzcat "$base_config" ;; esac
} | sha256sum | cut -c1-16)

kmake() { # OBJ TARGET...
	local o=$1
	shift
	"${KMAKE[@]}" O="$o" "$@"
}
if ! config_current "$obj" "$stamp"; then
	say "configuring kernel ($name, $KARCH: ${base_config##*/} + ${fragments[*]})"
	make_config "$SRC" kmake "$obj" "$base_config" "$stamp" "$LOGS/config-$name.log" "${frag_paths[@]}" ||
		exit 1
fi

say "building kernel ($name, $KARCH $target, make -j$JOBS)"
start=$(now_s)
run_logged "$LOGS/build-$name.log" kmake "$obj" "$target" ||
	die "kernel build failed ($name): see $LOGS/build-$name.log"
note "built in $(fmt_secs $(($(now_s) - start)))"

# The test modules of user/kmod, into $obj/ftmmap-kmod (boot.sh puts them
# into the guest), with the kernel's image only. They test the mapping:
# not for a kernel without it (the base).
kmod=$obj/ftmmap-kmod
rm -rf "$kmod"
if [ "$target" = "${KIMAGE##*/}" ] && [ -d "$TOP/user/kmod" ] &&
	[ -f "$SRC/include/uapi/linux/trace_mmap.h" ] &&
	grep -qx 'CONFIG_MODULES=y' "$obj/.config"; then
	mkdir -p "$kmod"
	cp "$TOP"/user/kmod/* "$kmod/"
	# modules: the linker script and Module.symvers (vmlinux's exports)
	# that an external module is built with. Debian's configs have
	# thousands of modules, hours of build here: the test modules need
	# vmlinux's exports only, which the image's build wrote.
	case $base_config in
	*.xz)
		run_logged "$LOGS/build-$name-modules.log" kmake "$obj" modules_prepare ||
			die "make modules_prepare failed ($name): see $LOGS/build-$name-modules.log"
		cp "$obj/vmlinux.symvers" "$obj/Module.symvers"
		;;
	*)
		run_logged "$LOGS/build-$name-modules.log" kmake "$obj" modules ||
			die "make modules failed ($name): see $LOGS/build-$name-modules.log"
		;;
	esac
	run_logged "$LOGS/build-$name-kmod.log" kmake "$obj" modules M="$kmod" ||
		die "the test modules do not build ($name): see $LOGS/build-$name-kmod.log"
	note "test modules: $(cd "$kmod" && echo *.ko)"
fi
