#!/usr/bin/env bash
# Put a pristine kernel source tree into DEST and describe it in DESC.
# With --fetch, only make sure the source is at hand and say which it is.
#
# Default: Debian's linux-source-6.1 (SERIES=6.12: linux-source-6.12) at the
# pinned version, or the newest available one when the pinned one is gone.
# KERNEL_SRC=/path (SERIES=6.12: KERNEL_SRC_612) copies a user's own tree
# instead (without its .git).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

if [ "${1:-}" = --fetch ]; then
	dest= desc=
else
	[ $# = 2 ] || die "usage: $0 DEST DESC | --fetch"
	dest=$1
	desc=$2
fi
dl=$BUILD/dl

installed_version() {
	dpkg-query -W -f='${Status} ${Version}\n' "$PIN_PACKAGE" 2>/dev/null |
		awk '$3 == "installed" { print $4 }'
}

# Once per run, also from the $(download ...) subshells ($$ is this script's pid).
apt_update() {
	[ ! -e "$dl/.apt-updated-$$" ] || return 0
	mkdir -p "$dl"
	touch "$dl/.apt-updated-$$"
	note "apt-get update"
	local sudo=
	[ "$(id -u)" = 0 ] || sudo=sudo
	$sudo apt-get update -q >/dev/null 2>&1 || warn "apt-get update failed"
}
trap 'rm -f "$dl/.apt-updated-$$"' EXIT

# download VERSION: fetch $PIN_PACKAGE=VERSION into $dl, print the tarball.
download() {
	local version=$1 deb tarball
	tarball=$dl/$PIN_PACKAGE-$version.tar.xz
	if [ ! -f "$tarball" ]; then
		mkdir -p "$dl"
		rm -f "$dl"/*.deb
		say "fetching $PIN_PACKAGE $version with apt-get download" >&2
		(cd "$dl" && apt-get download -q "$PIN_PACKAGE=$version") >&2 2>"$dl/apt.log" || {
			apt_update >&2
			(cd "$dl" && apt-get download -q "$PIN_PACKAGE=$version") >&2 2>"$dl/apt.log" || return 1
		}
		deb=$(ls "$dl"/"$PIN_PACKAGE"_*.deb)
		dpkg-deb --fsys-tarfile "$deb" |
			tar -xO "./usr/src/$PIN_PACKAGE.tar.xz" >"$tarball.tmp"
		mv "$tarball.tmp" "$tarball"
		rm -f "$deb"
	fi
	printf '%s\n' "$tarball"
}

newest_version() {
	apt-cache madison "$PIN_PACKAGE" 2>/dev/null | awk -F'|' '{ gsub(/ /, "", $2); print $2 }' |
		sort -V | tail -n 1
}

if [ -n "${KERNEL_SRC:-}" ]; then
	[ -f "$KERNEL_SRC/Makefile" ] && [ -d "$KERNEL_SRC/kernel" ] ||
		die "KERNEL_SRC=$KERNEL_SRC does not look like a kernel tree"
	for f in .config vmlinux include/generated; do
		[ ! -e "$KERNEL_SRC/$f" ] ||
			die "KERNEL_SRC=$KERNEL_SRC has build output ($f): run 'make mrproper' there first"
	done
	if [ -z "$dest" ]; then
		say "kernel source: KERNEL_SRC=$KERNEL_SRC (linux $(make -s -C "$KERNEL_SRC" kernelversion 2>/dev/null))"
		exit 0
	fi
	say "kernel source: copying $KERNEL_SRC"
	rm -rf "$dest"
	mkdir -p "$dest"
	rsync -a --delete --exclude=/.git "$KERNEL_SRC"/ "$dest"/
	version=$(make -s -C "$dest" kernelversion 2>/dev/null || echo unknown)
	rev=
	[ -d "$KERNEL_SRC/.git" ] && rev=$(git -C "$KERNEL_SRC" describe --always --dirty 2>/dev/null || true)
	echo "KERNEL_SRC $KERNEL_SRC (linux $version${rev:+, $rev})" >"$desc"
	case $version in "$SERIES".*) ;; *) warn "KERNEL_SRC is linux $version; the series is for $SERIES" ;; esac
	note "$(cat "$desc")"
	exit 0
fi

tarball=
used=
if [ "$(installed_version)" = "$PIN_VERSION" ] && [ -f "/usr/src/$PIN_PACKAGE.tar.xz" ]; then
	tarball=/usr/src/$PIN_PACKAGE.tar.xz
	used="$PIN_VERSION (pinned, installed package)"
elif tarball=$(download "$PIN_VERSION"); then
	used="$PIN_VERSION (pinned)"
else
	warn "pinned $PIN_PACKAGE $PIN_VERSION is not available: $(tail -n 1 "$dl/apt.log")"
	apt_update
	newest=$(newest_version)
	if [ -n "$newest" ] && tarball=$(download "$newest"); then
		used="$newest (NEWEST AVAILABLE: the series is tested on $PIN_VERSION)"
	elif [ -n "$(installed_version)" ] && [ -f "/usr/src/$PIN_PACKAGE.tar.xz" ]; then
		tarball=/usr/src/$PIN_PACKAGE.tar.xz
		used="$(installed_version) (INSTALLED PACKAGE: the series is tested on $PIN_VERSION)"
	else
		die "no $PIN_PACKAGE package can be had (see $dl/apt.log); set KERNEL_SRC=/path/to/linux-6.1.y (SERIES=6.12: KERNEL_SRC_612)"
	fi
fi

say "kernel source: Debian $PIN_PACKAGE $used"
[ -n "$dest" ] || exit 0
rm -rf "$dest"
mkdir -p "$dest"
note "extracting $tarball"
tar -xJf "$tarball" -C "$dest" --strip-components=1
echo "Debian $PIN_PACKAGE ${used%% *}" >"$desc"
