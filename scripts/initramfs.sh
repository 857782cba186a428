#!/usr/bin/env bash
# Pack the guest into $BUILD/initramfs-guest.cpio.gz:
#   /init                  guest/init
#   /bin/busybox           Debian's busybox-static (applets linked at boot)
#   /kselftest/            the installed kselftests ($BUILD/kselftest)
#   /usr/bin/ftmmap-NAME   user/NAME.c
#   /tests/NAME            user/tests/NAME.c, user/tests/NAME.sh
#   /etc/ftmmap/tests.list what check mode runs
#   /usr/bin/ftmmap        user/ftmmap/, dynamically linked (it loads plugins),
#                          with Debian's shared libraries it needs and the
#                          dynamic loader where Debian has them (/lib/TRIPLET,
#                          /usr/lib/TRIPLET, the loader's own path), and
#                          libtraceevent's plugins (/usr/lib/TRIPLET/traceevent/
#                          plugins, libtraceevent1-plugin), and x86_64: libtracecmd
#                          (libtracecmd1), which ftmmap loads with dlopen()
#   /opt/trace-cmd/        x86_64: Debian's trace-cmd (for bench-tools.sh), with
#                          its shared libraries and dynamic loader in lib/;
#                          run it as /opt/trace-cmd/trace-cmd.
# Those two are the only dynamically linked programs the guest may hold.
# The archive is written by the kernel's own usr/gen_init_cpio, so no root
# and no device nodes on the host are needed.
#
#   initramfs.sh [FLAVOUR]   normal or debug (default: the x86_64 guest), or
#                            arm64: $BUILD/initramfs-arm64.cpio.gz from
#                            $BUILD/arm64/ and busybox-static:arm64 (gki: the same)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
flavour=${1:-normal}
set_flavour "$flavour"
need_tree

out=$INITRD
stage=$GUEST/initramfs
busybox=$BUSYBOX
hint=
[ "$KARCH" = x86_64 ] || hint=" FLAVOUR=$flavour"
[ -f "$GUEST/tests.list" ] || die "no ${GUEST#"$TOP"/}/tests.list: run 'make tests$hint' first"
if [ "$KARCH" = x86_64 ]; then
	dpkg-query -W -f='${Status}' busybox-static 2>/dev/null | grep -q 'ok installed' ||
		die "busybox-static is not installed: run 'make deps'"
fi
[ -x "$busybox" ] || die "no $KARCH busybox at $busybox: run 'make deps'"

say "packing $KARCH initramfs ${out#"$TOP"/}"
gen=$BUILD/tools/gen_init_cpio
if [ ! -x "$gen" ] || [ "$SRC/usr/gen_init_cpio.c" -nt "$gen" ]; then
	mkdir -p "$BUILD/tools"
	gcc -O2 -o "$gen" "$SRC/usr/gen_init_cpio.c" || die "cannot build gen_init_cpio"
fi

rm -rf "$stage"
mkdir -p "$stage"/{bin,sbin,usr/bin,usr/sbin,etc/ftmmap,proc,sys,dev,tmp,root,tests,kselftest}
install -m 755 "$TOP/guest/init" "$stage/init"
install -m 755 "$busybox" "$stage/bin/busybox"
ln -s busybox "$stage/bin/sh"
cp -a "$GUEST/kselftest/." "$stage/kselftest/"
cp -a "$GUEST/user/bin/." "$stage/usr/bin/"
cp -a "$GUEST/user/tests/." "$stage/tests/"
cp "$GUEST/tests.list" "$stage/etc/ftmmap/tests.list"

# ftmmap's shared libraries, loader and libtraceevent's plugins, from the
# guest architecture's Debian packages (multiarch), at Debian's paths: the
# loader looks in /lib/TRIPLET and /usr/lib/TRIPLET without ld.so.cache,
# and libtraceevent in its own plugin folder. readelf, not ldd: the arm64
# files cannot run here.
case $KARCH in
x86_64) triplet=x86_64-linux-gnu ;;
arm64) triplet=aarch64-linux-gnu ;;
esac
plugins=/usr/lib/$triplet/traceevent/plugins
# ship_libs FILE...: the libraries FILE needs (NEEDED), and theirs, into the stage
ship_libs() {
	local f lib dir found
	for f; do
		for lib in $(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p'); do
			[ -e "$stage/lib/$triplet/$lib" ] && continue
			found=
			for dir in /lib/$triplet /usr/lib/$triplet; do
				[ -e "$dir/$lib" ] && found=$dir/$lib && break
			done
			[ -n "$found" ] || die "no $lib for ${f#"$stage"} in /lib/$triplet or /usr/lib/$triplet: run 'make deps'"
			mkdir -p "$stage/lib/$triplet"
			cp -L "$found" "$stage/lib/$triplet/$lib"
			ship_libs "$stage/lib/$triplet/$lib"
		done
	done
}
if [ -e "$stage/usr/bin/ftmmap" ]; then
	interp=$(readelf -l "$stage/usr/bin/ftmmap" | sed -n 's/.*Requesting program interpreter: \(.*\)\]$/\1/p')
	if [ -n "$interp" ]; then
		[ -e "$interp" ] || die "no dynamic loader $interp for ftmmap: run 'make deps'"
		mkdir -p "$stage$(dirname "$interp")"
		cp -L "$interp" "$stage$interp"
		ship_libs "$stage/usr/bin/ftmmap"
		compgen -G "$plugins/*.so" >/dev/null ||
			die "no libtraceevent plugins in $plugins: run 'make deps' (libtraceevent1-plugin)"
		mkdir -p "$stage$plugins"
		cp -L "$plugins"/*.so "$stage$plugins/"
		ship_libs "$stage$plugins"/*.so
		# libtracecmd, which ftmmap loads with dlopen() to print the
		# function_graph tracer's events as trace-cmd report does (x86_64
		# only: Debian has no arm64 one beside the amd64 one)
		tcl=/usr/lib/$triplet/libtracecmd.so.1
		if [ -e "$tcl" ]; then
			cp -L "$tcl" "$stage/lib/$triplet/"
			ship_libs "$stage/lib/$triplet/libtracecmd.so.1"
		fi
	fi
fi

# Debian's trace-cmd, dynamically linked: the binary, the libraries ldd
# names and the loader, all in /opt/trace-cmd, started through the loader
# (no /lib64 in the guest).
if [ "$KARCH" = x86_64 ] && [ -x /usr/bin/trace-cmd ]; then
	tc=$stage/opt/trace-cmd
	mkdir -p "$tc/bin" "$tc/lib"
	cp /usr/bin/trace-cmd "$tc/bin/"
	ldd /usr/bin/trace-cmd | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\/.*ld-linux/ { print $1 }' |
		while read -r lib; do cp -L "$lib" "$tc/lib/"; done
	ld=$(cd "$tc/lib" && ls ld-linux-*.so.* 2>/dev/null | head -1)
	[ -n "$ld" ] || die "no dynamic loader for /usr/bin/trace-cmd (ldd)"
	printf '#!/bin/sh\nexec /opt/trace-cmd/lib/%s --library-path /opt/trace-cmd/lib /opt/trace-cmd/bin/trace-cmd "$@"\n' \
		"$ld" >"$tc/trace-cmd"
	chmod 755 "$tc/trace-cmd"
fi

# Everything must run without a dynamic loader (but ftmmap, its libraries
# and /opt/trace-cmd), on the guest's CPU; compat_* programs are 32-bit
# ones, on x86_64 (scripts/tests.sh).
case $KARCH in
x86_64) machine='Advanced Micro Devices X86-64' machine32='Intel 80386' ;;
arm64) machine=AArch64 machine32=ARM ;;
esac
bad=$(find "$stage" -type f -perm -u+x -exec sh -c '
	machine=$1 machine32=$2 stage=$3
	shift 3
	for f; do
		head -c 4 "$f" | grep -q "ELF" || continue
		case $f in
		"$stage"/opt/trace-cmd/* | "$stage"/usr/bin/ftmmap | "$stage"/lib*/* | "$stage"/usr/lib/*) dyn=1 ;;
		*) dyn=0 ;;
		esac
		m=$machine
		case $f in */compat_*) m=$machine32 ;; esac
		if [ $dyn = 0 ] && readelf -l "$f" 2>/dev/null | grep -q "Requesting program interpreter"; then
			echo "$f (not statically linked)"
		elif ! readelf -h "$f" 2>/dev/null | grep -q "Machine: *$m\$"; then
			echo "$f (not for $m)"
		fi
	done' sh "$machine" "$machine32" "$stage" {} +)
[ -z "$bad" ] || die "cannot run in the $KARCH guest: ${bad//$stage/}"

{
	(cd "$stage" && find . -mindepth 1 | LC_ALL=C sort) | while read -r p; do
		p=${p#.}
		if [ -L "$stage$p" ]; then
			echo "slink $p $(readlink "$stage$p") 0777 0 0"
		elif [ -d "$stage$p" ]; then
			echo "dir $p $(stat -c %a "$stage$p") 0 0"
		else
			echo "file $p $stage$p $(stat -c %a "$stage$p") 0 0"
		fi
	done
	echo "nod /dev/console 0600 0 0 c 5 1"
} >"$GUEST/initramfs.list"
# The same files give the same archive, byte for byte: the times in it are
# fixed (SOURCE_DATE_EPOCH, or 2026-01-01). make bench needs that: the
# guest's boot unpacks it, and an archive that differs shifts where the
# timer ticks fall in every figure that the boot measures.
epoch=${SOURCE_DATE_EPOCH:-1767225600}
find "$stage" -exec touch -h -d "@$epoch" {} +
"$gen" -t "$epoch" "$GUEST/initramfs.list" | gzip -n -6 >"$out.tmp"
mv "$out.tmp" "$out"
note "$(du -h "$out" | cut -f1), $(grep -c . "$GUEST/tests.list") tests"
