#!/usr/bin/env bash
# Configure and build the kernel of the scratch tree in $BUILD/obj/NAME.
#
#   kernel.sh FLAVOUR [NAME] [TARGET]
#
# FLAVOUR normal = tinyconfig + config/base.config + config/tracing.config,
#         debug  = the same + config/debug.config.
# NAME is the object folder (default: FLAVOUR), TARGET the make target
# (default: bzImage).  The config is made again whenever a fragment changes,
# and every option a fragment asks for is checked in the final .config.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

flavour=${1:?usage: $0 normal|debug [NAME] [TARGET]}
name=${2:-$flavour}
target=${3:-bzImage}
case $flavour in
normal) fragments=(base tracing) ;;
debug) fragments=(base tracing debug) ;;
*) die "unknown flavour '$flavour' (normal or debug)" ;;
esac
need_tree

obj=$OBJ/$name
frag_paths=()
for f in "${fragments[@]}"; do frag_paths+=("$TOP/config/$f.config"); done
stamp=$(cat "${frag_paths[@]}" | sha256sum | cut -c1-16)

# check_config: every CONFIG_X=v and "# CONFIG_X is not set" of the
# fragments must be in the final .config.
check_config() {
	local f line sym val bad=()
	for f in "${frag_paths[@]}"; do
		while IFS= read -r line; do
			case $line in
			CONFIG_*=*)
				sym=${line%%=*} val=${line#*=}
				grep -qxF "$sym=$val" "$obj/.config" || bad+=("$line (from ${f#"$TOP"/}; got: $(grep -E "^$sym=|^# $sym is not set" "$obj/.config" || echo absent))")
				;;
			"# CONFIG_"*" is not set")
				sym=${line#\# } sym=${sym%% *}
				! grep -qE "^$sym=" "$obj/.config" || bad+=("$line (from ${f#"$TOP"/}; got: $(grep -E "^$sym=" "$obj/.config"))")
				;;
			esac
		done <"$f"
	done
	if [ ${#bad[@]} != 0 ]; then
		printf 'ERROR: options requested but not in %s:\n' "$obj/.config" >&2
		printf '    %s\n' "${bad[@]}" >&2
		exit 1
	fi
}

if [ ! -f "$obj/.config" ] || [ "$(cat "$obj/.ftmmap-config" 2>/dev/null)" != "$stamp" ]; then
	say "configuring kernel ($name: tinyconfig + ${fragments[*]})"
	mkdir -p "$obj" "$LOGS"
	rm -f "$obj/.ftmmap-config"
	{
		"${KMAKE[@]}" O="$obj" tinyconfig
		(cd "$obj" && "$SRC/scripts/kconfig/merge_config.sh" -m -O "$obj" "$obj/.config" "${frag_paths[@]}")
		"${KMAKE[@]}" O="$obj" olddefconfig
	} >"$LOGS/config-$name.log" 2>&1 || {
		tail -n 30 "$LOGS/config-$name.log" >&2
		die "kernel configuration failed (see $LOGS/config-$name.log)"
	}
	check_config
	echo "$stamp" >"$obj/.ftmmap-config"
fi

say "building kernel ($name, $target, make -j$JOBS)"
start=$(now_s)
run_logged "$LOGS/build-$name.log" "${KMAKE[@]}" O="$obj" "$target" ||
	die "kernel build failed ($name): see $LOGS/build-$name.log"
note "built in $(fmt_secs $(($(now_s) - start)))"
