#!/usr/bin/env bash
# ftmmap against Debian's trace-cmd (3.1.6), both run in the patched guest:
# guest instructions per event, writer plus consumer.
#
#   bench-tools.sh [WORKLOAD]...      markers, pingpong (default: both)
#
# One vCPU under "-icount shift=0,sleep=off": a guest nanosecond is one
# instruction.  Each workload gets its own boot (RUN_NAME: two may run at
# once).  The job (run.sh and the workload, one static C program built
# here) travels in a cpio archive appended to the guest's initramfs
# (boot.sh INITRD_EXTRA, guest/init takes /job): the guest reads no disk,
# whose reads end when the host is done with them, and a boot depends on
# nothing but its inputs.  The workloads:
#   markers   one process writes ROUNDS*6 markers of known text to
#             trace_marker: the writer's side is one write() an event, so
#             the consumer's share shows
#   pingpong  two processes pass a byte back and forth through pipes ROUNDS
#             times, each writes a marker before it passes it: per round 2
#             markers, 2 sched_wakeup and 2 sched_switch events
# In one boot the guest runs the workload
#   bare             tracing off (the workload alone)
#   unread           tracing on, the same events enabled, no one reading
#                    them (the buffer overwrites itself): the writer's side
#   ftmmap           ftmmap record -o FILE -- workload     (markers, switch, wakeup)
#   trace-cmd        trace-cmd record -e sched:sched_switch -e sched:sched_wakeup
#                    -o FILE -- workload                   (markers are always on):
#                    its default file, version 7, compressed with zstd
#   trace-cmd-v6     the same with --file-version 6: not compressed, the
#                    format ftmmap writes
#   ftmmap-stream    ftmmap stream -b STREAM_KB -- workload, its text into a file
#   trace-cmd-stream trace-cmd stream -b STREAM_KB (the same events) -- workload
#                    A stream formats every event, which costs more than the
#                    workload makes them: on one vCPU either tool would lose
#                    most of them (trace-cmd without saying how many), so
#                    both get a buffer that holds the whole run (STREAM_KB,
#                    32768 KiB), and buffer_percent 0: both wake on the
#                    first event (with 50, trace-cmd stream waits for a
#                    half-full buffer that this run never fills, and
#                    does not end). markers only: on pingpong, trace-cmd
#                    stream does not end within 600 s either way (its
#                    recorder splices again at once when a splice
#                    returns nothing, and takes the CPU from the
#                    workload)
# each with ROUNDS/5 and ROUNDS rounds, and measures the busy time of the
# CPU over each whole command (from the tool's start to the end of its
# output): /proc/timer_list "now" minus the CPU's idle and iowait sleep
# times (ns).  After the last run the guest counts the events of each file
# with the same trace-cmd's report, those of a stream from its lines, both
# plus the ones shown as lost, and prints them on the console with the
# times, where this script reads them.  Printed per event, for every tool:
#   total     busy time of the whole run / events          (the issue's figure)
#   marginal  (busy(ROUNDS) - busy(ROUNDS/5)) / (events(ROUNDS) - events(ROUNDS/5)):
#             without what a run costs whatever its size (start-up, formats,
#             kallsyms, writing the file's header)
#   tracing   (busy(ROUNDS) - busy(bare, ROUNDS)) / events: what tracing adds
#             to the workload, the writer's side (recording each event) plus
#             the consumer, without the workload's own work
#   own       (busy(ROUNDS) - busy(unread, ROUNDS)) / events: the tool's own
#             cost, start-up included, without the workload and the kernel's
#             recording of the events (the same whoever reads them; a
#             buffer that overwrites itself moves its head page too, so
#             this is a little below what the tool adds)
# and the ratios ftmmap / trace-cmd, record against record and stream
# against stream (goal for record: at most MAX_RATIO, 0.8).  It fails when a
# run fails or a file does not open in trace-cmd report; the ratio is
# reported, not enforced (BENCH_ENFORCE=1: fail above MAX_RATIO).
#
# Environment: ROUNDS (50000), STREAM_KB (32768), MAX_RATIO (0.8),
# BENCH_ENFORCE, TIMEOUT (2400), BENCH_TOOLS_CSV (append "workload,tool,
# events,lost,busy_instr,total,marginal,tracing,own" lines there: bench.sh's
# results file), QEMU_EXTRA and APPEND (as boot.sh; bench.sh fixes the
# guest's clock and layout).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
set_flavour normal

ROUNDS=${ROUNDS:-50000}
MAX_RATIO=${MAX_RATIO:-0.8}
command -v trace-cmd >/dev/null || die "trace-cmd is missing: run 'make deps'"
[ $# != 0 ] || set -- markers pingpong
for w; do
	case $w in markers | pingpong) ;; *) die "unknown workload '$w' (markers, pingpong)" ;; esac
done

job=$(mktemp -d)
trap 'rm -rf "$job"' EXIT
cat >"$job/wl.c" <<'EOF'
/*
 * wl markers N: N markers from one process.
 * wl pingpong N: N round trips between two processes, a marker before
 * each pass.
 * wl align: sleep until the next whole second of CLOCK_MONOTONIC.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Fails with tracing off (the workload alone): that is fine */
static void marker(int fd, const char *who, long i)
{
	char buf[64];
	int len = snprintf(buf, sizeof(buf), "bench %s round %ld", who, i);

	if (write(fd, buf, len) < 0 && errno != EBADF)
		exit(1);
}

static void pass(int fd, const char *who, long i, int out, int in, int first)
{
	char c = 0;

	if (!first && read(in, &c, 1) != 1)
		exit(1);
	marker(fd, who, i);
	if (write(out, &c, 1) != 1)
		exit(1);
}

int main(int argc, char **argv)
{
	long n = argc > 2 ? atol(argv[2]) : 1000, i;
	int fd = open("/sys/kernel/tracing/trace_marker", O_WRONLY);
	int a[2], b[2], st;
	char c;
	pid_t pid;

	if (argc == 2 && !strcmp(argv[1], "align")) {
		struct timespec t;

		clock_gettime(CLOCK_MONOTONIC, &t);
		t.tv_sec++;
		t.tv_nsec = 0;
		return clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) ? 1 : 0;
	}
	if (fd < 0 || argc < 2)
		return 1;
	if (!strcmp(argv[1], "markers")) {
		for (i = 0; i < n; i++)
			marker(fd, "writer", i);
		return 0;
	}
	if (strcmp(argv[1], "pingpong") || pipe(a) || pipe(b))
		return 1;
	pid = fork();
	if (pid < 0)
		return 1;
	for (i = 0; i < n; i++) {
		if (pid == 0)
			pass(fd, "child", i, b[1], a[0], 0);
		else
			pass(fd, "parent", i, a[1], b[0], 1);
		if (pid && read(b[0], &c, 1) != 1)
			return 1;
	}
	if (pid == 0)
		return 0;
	return waitpid(pid, &st, 0) == pid && WIFEXITED(st) && !WEXITSTATUS(st) ? 0 : 1;
}
EOF
gcc -static -O2 -Wall -Wextra -o "$job/wl" "$job/wl.c" || die "the workload does not build"
rm "$job/wl.c"
cat >>"$job/run.sh" <<'EOF'
# The guest side of bench-tools.sh: WORKLOAD, N and SMALL come first.
T=/sys/kernel/tracing
TC=/opt/trace-cmd/trace-cmd
EV="-e sched:sched_switch -e sched:sched_wakeup"
busy() {
	awk '/^now at/ { now = $3 }
	     /\.idle_sleeptime/ && !i { idle = $3; i = 1 }
	     /\.iowait_sleeptime/ && !w { iowait = $3; w = 1 }
	     END { printf "%.0f\n", now - idle - iowait }' /proc/timer_list
}
# Events and losses in the text of a stream or of trace-cmd report:
# "EVENTS LOST UNKNOWN"
count() {
	awk '/^CPU:[0-9]+ \[[0-9]+ EVENTS DROPPED\]$/ { sub(/^\[/, "", $2); lost += $2; next }
	     /^CPU:[0-9]+ \[EVENTS DROPPED\]$/ { unknown++; next }
	     /\[[0-9][0-9][0-9]\] +[0-9]+\.[0-9]+: / { ev++ }
	     END { printf "%d %d %d\n", ev, lost, unknown }' "$1"
}
# one NAME N CMD...: the busy time of CMD, its file or its output's counts.
one() {
	name=$1
	n=$2
	shift 2
	rm -f /tmp/b.dat* /tmp/b.out
	# Each run starts at a whole second of guest time: where the timer
	# ticks fall in it does not depend on how long the one before took.
	./wl align
	t0=$(busy)
	"$@" >/tmp/b.out 2>/tmp/b.err
	rc=$?
	t1=$(busy)
	c=
	case $name in *-stream-*) c=" counts=$(count /tmp/b.out | tr ' ' ,)" ;; esac
	echo "bench: $name n=$n rc=$rc busy_ns=$((t1 - t0))$c"
	[ $rc = 0 ] || head -n 20 /tmp/b.err
	[ ! -f /tmp/b.dat ] || mv /tmp/b.dat $OUT/$name.dat
}
echo 0 >$T/tracing_on
one bare-small $SMALL ./wl $WORKLOAD $SMALL
one bare-full $N ./wl $WORKLOAD $N
echo 1 >$T/tracing_on
# The events the tools record, with no one reading them
echo 1 >$T/events/sched/sched_switch/enable
echo 1 >$T/events/sched/sched_wakeup/enable
one unread-full $N ./wl $WORKLOAD $N
echo 0 >$T/events/sched/sched_switch/enable
echo 0 >$T/events/sched/sched_wakeup/enable
echo >$T/trace
for r in small:$SMALL full:$N; do
	n=${r#*:}
	s=${r%%:*}
	one ftmmap-$s $n ftmmap record -o /tmp/b.dat -- ./wl $WORKLOAD $n
	one trace-cmd-$s $n $TC record $EV -o /tmp/b.dat -- ./wl $WORKLOAD $n
	one trace-cmd-v6-$s $n $TC record --file-version 6 $EV -o /tmp/b.dat -- ./wl $WORKLOAD $n
	[ "$WORKLOAD" = markers ] || continue
	echo 0 >$T/buffer_percent
	one ftmmap-stream-$s $n ftmmap stream -b $STREAM_KB -- ./wl $WORKLOAD $n
	one trace-cmd-stream-$s $n $TC stream -b $STREAM_KB $EV -- ./wl $WORKLOAD $n
	echo 50 >$T/buffer_percent
done
# The runs are over: count the events of each file as trace-cmd report
# shows them, plus the ones it says were lost.
for f in $OUT/*.dat; do
	name=${f##*/}
	name=${name%.dat}
	if $TC report $f >/tmp/b.out 2>/tmp/b.err; then
		echo "bench: count $name $(count /tmp/b.out | tr ' ' ,)"
	else
		echo "bench: count $name report-failed"
		head -n 5 /tmp/b.err
	fi
	rm -f $f /tmp/b.out
done
EOF

"$(dirname "$0")/trace.sh" --ensure

for w in "$@"; do
	case $w in markers) n=$((ROUNDS * 6)) ;; pingpong) n=$ROUNDS ;; esac
	res=$BUILD/bench-tools/$w
	rm -rf "${job:?}/$w" "$res"
	mkdir -p "$job/$w/job" "$res"
	printf 'WORKLOAD=%s\nN=%s\nSMALL=%s\nSTREAM_KB=%s\n' "$w" "$n" "$((n / 5))" \
		"${STREAM_KB:-32768}" | cat - "$job/run.sh" >"$job/$w/job/run.sh"
	cp "$job/wl" "$job/$w/job/"
	# The same files give the same archive (as scripts/initramfs.sh)
	find "$job/$w" -exec touch -h -d "@${SOURCE_DATE_EPOCH:-1767225600}" {} +
	(cd "$job/$w" && find job | LC_ALL=C sort |
		cpio -o -H newc -R 0:0 --reproducible --quiet) >"$job/$w.cpio" ||
		die "cannot pack the job"
	say "bench-tools: $w, $n rounds, ftmmap against trace-cmd, 1 vCPU, icount"
	log=$LOGS/bench-tools-$w-trace.log
	# TRACE_CLOCK=: under -icount the TSC is stable, the kernel keeps the
	# local clock, which the writer's figures of make bench have too.
	# BOOT_EVENTS=0: no event on from boot. boot.sh has the scheduler's
	# kept on in two instances that record nothing (guest/init, for the
	# tests on several vCPUs); with them, trace-cmd stream did not end:
	# its recorder blocked in pipe_write() on a pipe its parent, waiting
	# for it in wait4(), did not read (0 lines printed; killed after
	# 600 s). Without them it ends in 3 s.
	SMP=1 QEMU_EXTRA="-icount shift=0,sleep=off ${QEMU_EXTRA:-}" TIMEOUT=${TIMEOUT:-2400} \
		RUN_NAME=bench-tools-$w INITRD_EXTRA=$job/$w.cpio TRACE_CLOCK='' BOOT_EVENTS=0 \
		"$(dirname "$0")/boot.sh" normal trace ||
		die "the guest run failed (see ${log#"$TOP"/})"
	sed 's/\r$//' "$log" | grep '^bench: ' >"$res/bench.txt" ||
		die "the guest printed no results (see ${log#"$TOP"/})"
	python3 - "$res" "$w" "$MAX_RATIO" "${BENCH_ENFORCE:-0}" "${BENCH_TOOLS_CSV:-}" <<'EOF'
import re, sys

res, workload, max_ratio, enforce, csv_path = sys.argv[1:6]
max_ratio, enforce = float(max_ratio), enforce == "1"
tools = ["ftmmap", "trace-cmd", "trace-cmd-v6"]
if workload == "markers":
    tools += ["ftmmap-stream", "trace-cmd-stream"]
ev, failed, runs = {}, [], {}
for line in open(f"{res}/bench.txt"):
    m = re.match(r"bench: (\S+) n=(\d+) rc=(\d+) busy_ns=(\d+)(?: counts=(\S+))?", line)
    if m:
        runs[m[1]] = (int(m[2]), int(m[3]), int(m[4]))
        if m[5]:
            ev[m[1]] = tuple(map(int, m[5].split(",")))
    m = re.match(r"bench: count (\S+) (\S+)", line)
    if m and m[2] == "report-failed":
        failed.append(m[1])
    elif m:
        ev[m[1]] = tuple(map(int, m[2].split(",")))
if failed:
    sys.exit(f"ERROR: {workload}: trace-cmd report cannot read {', '.join(failed)}")
missing = [f"{t}-{s}" for t in tools for s in ("small", "full") if f"{t}-{s}" not in ev]
if missing:
    sys.exit(f"ERROR: {workload}: no event counts for {', '.join(missing)}")
bad = [n for n, r in runs.items() if r[1] != 0]
if bad or len(runs) != 3 + 2 * len(tools):
    sys.exit(f"ERROR: {workload}: runs failed or missing in the guest: {bad or sorted(runs)}")
for n, (e, lost, unknown) in ev.items():
    if unknown:
        print(f"WARNING: {workload} {n}: {unknown} losses of unknown size")
    if e == 0:
        sys.exit(f"ERROR: {workload} {n}: no events")

n, _, bare = runs["bare-full"]
unread = runs["unread-full"][2]


def fig(tool):
    (_, _, bs), (_, _, bf) = runs[tool + "-small"], runs[tool + "-full"]
    es, ef = (ev[tool + "-small"][0] + ev[tool + "-small"][1],
              ev[tool + "-full"][0] + ev[tool + "-full"][1])
    return dict(busy=bf, events=ef, lost=ev[tool + "-full"][1], total=bf / ef,
                marginal=(bf - bs) / (ef - es), tracing=(bf - bare) / ef,
                own=(bf - unread) / ef)


print(f"{workload}, per event {'events':>8} {'lost':>6} {'busy instr':>12} {'total':>7} "
      f"{'marginal':>9} {'tracing':>8} {'own':>6}")
f = {t: fig(t) for t in tools}
for t in tools:
    r = f[t]
    print(f"  {t:20} {r['events']:8d} {r['lost']:6d} {r['busy']:12d} {r['total']:7.0f} "
          f"{r['marginal']:9.0f} {r['tracing']:8.0f} {r['own']:6.0f}")
print(f"  (the workload alone, tracing off: {bare} instructions for n={n}; "
      f"recorded, unread: {unread}; "
      f"1 vCPU, -icount shift=0: 1 ns = 1 instruction)")
for a, b in [("ftmmap", "trace-cmd"), ("ftmmap", "trace-cmd-v6"),
             ("ftmmap-stream", "trace-cmd-stream")]:
    if b not in f:
        continue
    print(f"  {a} / {b}: total {f[a]['total'] / f[b]['total']:.3f}, "
          f"marginal {f[a]['marginal'] / f[b]['marginal']:.3f}, "
          f"tracing {f[a]['tracing'] / f[b]['tracing']:.3f}, "
          f"own {f[a]['own'] / f[b]['own']:.3f}"
          + (f" (goal: at most {max_ratio})" if b == "trace-cmd" else ""))
if csv_path:
    with open(csv_path, "a") as out:
        for t in tools:
            r = f[t]
            out.write(f"{workload},{t},{r['events']},{r['lost']},{r['busy']},"
                      f"{round(r['total'])},{round(r['marginal'])},{round(r['tracing'])},"
                      f"{round(r['own'])}\n")
total = f["ftmmap"]["total"] / f["trace-cmd"]["total"]
if enforce and total > max_ratio:
    sys.exit(f"ERROR: {workload}: ftmmap costs {total:.3f} of trace-cmd per event, "
             f"more than {max_ratio}")
EOF
done
