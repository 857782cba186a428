#!/usr/bin/env bash
# check.sh's own plumbing, every stage a stub (a copy of check.sh in a
# temporary folder): the two chains, the verdict and the totals, when all
# pass, when a boot fails, when a build stage fails (the kernels built
# before it are still booted), when a first stage fails; the builds at
# nice 19 (and their autogroup); that the builds end with the check; and
# link_face() of lib.sh, on small objects of gcc.
#   check-selftest.sh     prints "ok N - ..." / "not ok N - ..."; exit 0 when all pass
set -euo pipefail
. "$(dirname "$0")/lib.sh"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/scripts"
cp "$TOP/scripts/check.sh" "$TOP/scripts/lib.sh" "$tmp/scripts/"
# A stub: says who it is, fails when STUB_FAIL names it and its arguments
# (and SERIES=6.12 for the mainline series: "checkpatch  SERIES=6.12").
for s in deps check-selftest tree series-apply checkpatch kernel bisect lint matrix tests initramfs \
	tests-6.1-on-6.12 trace-check boot; do
	cat >"$tmp/scripts/$s.sh" <<EOF
#!/usr/bin/env bash
. "\$(dirname "\$0")/lib.sh"
echo "stub $s \$* nice=\$(nice) autogroup=\$(awk '{ print \$NF }' /proc/self/autogroup 2>/dev/null)"
key="$s \$*"
[ "\${SERIES:-}" != 6.12 ] || key="\$key SERIES=6.12"
[ "\${STUB_SLEEP:-}" != "\$key" ] || sleep 60
# lint spins until it used 1.5 s of CPU: the report must show it
[ "\$key" != "lint --if-changed" ] || python3 -c 'import time
while time.process_time() < 1.5: pass'
[ "\${STUB_FAIL:-}" != "\$key" ] || exit 1
mkdir -p "\$LOGS"
case $s in
boot) run=\${RUN_NAME:-\$1}; [ -z "\${KERNEL:-}" ] || run=\${RUN_NAME:-other}
	f=0; [ "\${STUB_FAIL:-}" != "guest \$run" ] || f=1
	echo "3 \$f 1" >"\$LOGS/\$run-check.counts" ;;
trace-check) n=trace-check; [ "\${1:-}" != --stock ] || n=trace-check-stock
	echo "2 0 0" >"\$LOGS/\$n.counts" ;;
esac
EOF
done
printf '#!/bin/sh\n' >"$tmp/scripts/bench-report.py"
chmod +x "$tmp"/scripts/*
git -C "$tmp" init -q

n=0 bad=0
# verdict TEXT CMD...: test n+1 is that CMD succeeds; what CMD printed is
# shown, as comments, when it does not.
verdict() {
	local text=$1 out rc=0
	shift
	n=$((n + 1))
	out=$("$@" 2>&1) || rc=$?
	if [ $rc = 0 ]; then
		echo "ok $n - $text"
	else
		echo "not ok $n - $text"
		[ -z "$out" ] || echo "#   ${out//$'\n'/$'\n'#   }"
		bad=$((bad + 1))
	fi
}
# fails CMD...: CMD fails
fails() {
	if "$@"; then
		echo "succeeded: $*"
		return 1
	fi
}
# The stubs' own build folder: make exports BUILD, and lib.sh made it this
# check's absolute one (the stubs' runs once wrote into its state).
stub_env=(BUILD="$tmp/build" MAINLINE_KERNEL=/stub)
# expect NAME RC LAST-TWO-LINES [ENV...]: start the stub check (each in a
# build folder of its own, all at once: their chains mostly wait);
# judge_all compares them, in order (they are tests 1 to $runs).
runs=0
expect() {
	local name=$1 want_rc=$2 want=$3
	shift 3
	runs=$((runs + 1))
	printf '%s\n%s\n' "$name" "$want_rc $want" >"$tmp/want.$runs"
	(
		rc=0
		env "${stub_env[@]}" BUILD="$tmp/build.$runs" "$@" "$tmp/scripts/check.sh" >"$tmp/out.$runs" 2>&1 || rc=$?
		echo "$rc $(tail -n 2 "$tmp/out.$runs" | tr '\n' '|')" >"$tmp/got.$runs"
	) &
}
same() { # GOT WANT OUTPUT
	[ "$1" = "$2" ] || { echo "got '$1', want '$2'" && cat "$3" && false; }
}
judge_all() {
	local i name want
	wait
	for i in $(seq 1 "$runs"); do
		{ read -r name; read -r want; } <"$tmp/want.$i"
		verdict "$name" same "$(cat "$tmp/got.$i")" "$want" "$tmp/out.$i"
	done
}
# 7 boots (boot.sh) of 3 passed, 1 skipped; two trace-checks of 2
expect "all pass" 0 "check: PASSED|25 passed, 0 failed, 7 skipped|"
expect "a failing boot" 1 "check: FAILED|25 passed, 1 failed, 7 skipped|" STUB_FAIL="guest debug"
# the normal, debug and 6.12 kernels were built: 6 boots, 2 trace-checks;
# the failed stage and the GKI boot not run
expect "a failing build stage" 1 "check: FAILED at stage 'kernel-gki' (see above)|22 passed, 2 failed, 6 skipped|" \
	STUB_FAIL="kernel gki"
# the third chain (bisect-6.12, matrix, plots): every kernel was built
expect "a failing stage of the third chain" 1 "check: FAILED at stage 'matrix' (see above)|25 passed, 1 failed, 7 skipped|" \
	STUB_FAIL="matrix --if-changed"
# the 6.12 series, which the 6.12 kernel waits for: the 6.1 kernels are
# still built and booted; the 6.12 boots and trace-check stock are not
expect "a failing 6.12 series (third chain)" 1 "check: FAILED at stage 'series-6.12' (see above)|17 passed, 4 failed, 5 skipped|" \
	STUB_FAIL="checkpatch  SERIES=6.12"
expect "a failing first stage" 1 "check: FAILED at stage 'kernel' (see above)|0 passed, 1 failed, 0 skipped|" \
	STUB_FAIL="kernel normal"
judge_all
# marked LINE WHAT: the all-pass run printed LINE (their autogroup too,
# where the kernel has autogroups)
has_line() { # LINE FILE
	grep -qxF -e "$1" "$2" || { echo "no line '$1'" && false; }
}
marked() {
	local want
	want="$1 nice=19 autogroup=$([ ! -e /proc/self/autogroup ] || echo 19)"
	verdict "$2 run at nice 19, their lines marked" has_line "$want" "$tmp/out.1"
}
marked "[builds] stub kernel debug" "the builds"
marked "[builds2] stub matrix --if-changed" "the third chain's builds"
# The CPU time of each stage: lint's 1.5 s of spinning (in a chain of
# builds) is its own, and no stub of the boots' chain, which only waits,
# has a second of it.
stage_cpu() {
	if grep -qE '^    lint +[0-9]+m[0-9]{2}s  CPU 0m0[12]s' "$tmp/out.1" &&
		! grep -E '^    (boot|trace-check)' "$tmp/out.1" | grep -qvF 'CPU 0m00s' &&
		grep -qE '^    CPU of the stages: ' "$tmp/out.1"; then
		return 0
	fi
	grep -E '^    [a-z]' "$tmp/out.1"
	return 1
}
verdict "the report gives each stage's CPU time" stage_cpu
# stopped STUB WHAT: the check stopped while the stub STUB runs (sleeps):
# no stub is left.
none_left() {
	if pgrep -af "$tmp/scripts/"; then
		pkill -f "$tmp/scripts/" || true
		return 1
	fi
}
stopped() {
	env "${stub_env[@]}" STUB_SLEEP="$1" "$tmp/scripts/check.sh" >"$tmp/out.stop" 2>&1 &
	pid=$!
	for _ in $(seq 1 60); do
		! grep -qF "stub $1" "$tmp/out.stop" || break
		sleep 1
	done
	kill -TERM $pid 2>/dev/null || true
	wait $pid 2>/dev/null || true
	sleep 1
	verdict "stopping the check while $2 runs stops the builds" none_left
}
stopped "bisect --skip-head --if-changed" "the 6.1 bisect (builds)"
stopped "matrix --if-changed" "the matrix (third chain)"

# link_face (lib.sh), by which bisect.sh leaves out a link: on objects of
# gcc (not PIC, as the kernel), the references modpost stops on and the
# symbols the link reads.
face() { # NAME C-SOURCE: the face of NAME.o, compiled from C-SOURCE
	printf '%s\n' "$2" >"$tmp/$1.c"
	gcc -O2 -fno-pic -c "$tmp/$1.c" -o "$tmp/$1.o" && link_face "$tmp" "$1.o"
}
init='__attribute__((section(".init.text"), noinline)) static int setup(void) { return 1; }'
ptr=$(face ptr "$init
static int (* volatile p)(void) = setup;
int use(void) { return p(); }")
verdict "link_face: a .data pointer to an init function is a reference modpost checks" \
	grep -qx '! CROSS ptr.o .data -> .init.text' <<<"$ptr"
within=$(face within "$init
__attribute__((section(\".init.text\"))) int boot(void) { return setup(); }")
verdict "link_face: a call between init functions is not" fails grep CROSS <<<"$within"
verdict "link_face: a global in an init section is in the face with its section" \
	grep -qx 'within.o boot T .init.text' <<<"$within"
moved=$(face moved "__attribute__((section(\".init.text\"))) int boot(void) { return 1; }")
plain=$(face plain "int boot(void) { return 1; }")
verdict "link_face: a global moved into an init section changes the face" \
	[ "${moved#moved.o }" != "${plain#plain.o }" ]
exported=$(face exported "static void f(void) { }
static const void *__export_symbol_f __attribute__((used)) = f;")
verdict "link_face: an export entry of a static function is in the face" \
	grep -q '^exported.o __export_symbol_f ' <<<"$exported"
verdict "link_face: an object that cannot be read fails" fails link_face "$tmp" missing.o
echo "$((n - bad)) passed, $bad failed, 0 skipped"
[ $bad = 0 ]
