#!/usr/bin/env bash
# Install the Debian packages the harness needs, if any are missing.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

PKGS=(
	build-essential bc bison flex libelf-dev libssl-dev kmod dwarves
	cpio xz-utils rsync git perl python3
	busybox-static qemu-system-x86 sparse
)

missing=()
for p in "${PKGS[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed'; then
		missing+=("$p")
	fi
done

if [ ${#missing[@]} = 0 ]; then
	say "build dependencies: all present"
	exit 0
fi

command -v apt-get >/dev/null || die "missing packages (${missing[*]}) and no apt-get: install them by hand"
SUDO=
if [ "$(id -u)" != 0 ]; then
	command -v sudo >/dev/null || die "missing packages (${missing[*]}): run 'make deps' as root"
	SUDO=sudo
fi

say "installing build dependencies: ${missing[*]}"
start=$(now_s)
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q >/dev/null || die "apt-get update failed"
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}" >"${TMPDIR:-/tmp}/ftmmap-apt.log" 2>&1 || {
	tail -n 30 "${TMPDIR:-/tmp}/ftmmap-apt.log" >&2
	die "apt-get install failed for: ${missing[*]}"
}
note "done in $(fmt_secs $(($(now_s) - start)))"
