#!/usr/bin/env bash
# ftmmap against trace-cmd: a known workload recorded in the patched guest
# with "ftmmap record", read on the host with Debian's "trace-cmd report".
#
#   trace-check.sh [--stock]
#
# --stock: the same guest on Debian's stock 6.12 kernel (mainline's own
# mapping: losses in the sub-buffer headers only), whose virtio disk driver,
# a module of its package, comes in an archive after the initramfs; results
# in trace-check-stock/, counts in trace-check-stock.counts.
#
# The guest (ftmmap.mode=trace, scripts/trace.sh --job) runs, on every CPU,
# a task pinned there (taskset) that writes MARKERS markers "ftmmap-check
# cpu=C seq=I" (I = 1..MARKERS) to trace_marker, under:
#   rec     ftmmap record (markers, sched_switch, sched_wakeup)
#   recp    ftmmap record --print: the file and the printed events of one capture
#   stream  ftmmap stream, the same workload
#   sread   ftmmap stream --read (read() of trace_pipe_raw, no mapping)
#   rread   ftmmap record --read
#   lossy   ftmmap record -M 1 -b 16 -e ftrace:print, the consumer at nice 19
#           on CPU 0 and LOSSY markers written there at nice -20: the
#           writer wraps the buffer, events are lost
# and keeps, after each, every CPU buffer's stats file (overrun: what the
# kernel lost).  On the host, with trace-cmd report of each file:
#   - the markers are exactly those written, texts and order, on their CPU;
#   - the events lost per CPU, as trace-cmd shows them ("CPU:N [X EVENTS
#     DROPPED]", none when nothing was lost), equal the kernel's overrun
#     and ftmmap's own count (and lossy did lose some);
#   - trace-cmd reads as many events as ftmmap says it recorded;
#   - record -p prints the same marker lines as trace-cmd report of its
#     file, byte for byte, and the same other lines but for the comm of
#     the task column (see below);
#   - stream's and stream --read's marker lines are trace-cmd's marker lines
#     of rec (other runs: the pids and time stamps differ, so lines are
#     compared without them; see compare() below);
#   - irqsys (record --print of the irq events and the write() system
#     call's, one CPU online) prints the lines of trace-cmd report but
#     for the comm of the task column;
#   - plug (record --print of hrtimer events, one CPU online) prints the
#     lines of trace-cmd report, whose plugins (libtraceevent1-plugin)
#     format those events, but for the comm of the task column;
#   - func (record --print -p function -l, one CPU online) prints the
#     lines of trace-cmd report, the function lines included; graph (-p
#     function_graph -g, printed as it comes through libtracecmd, whose
#     graph printer looks at the next event) prints the lines of
#     trace-cmd report, leaf calls joined, but for the comm of the task
#     column; sgraph (stream -p function_graph -g, the same printer)
#     prints trace-cmd report's lines with leaf calls joined, none left
#     as an entry line followed by the same task's exit line;
#   - glossy (record --print -b 16 -p function_graph -g, the consumer at
#     nice 19), gleaf16 and gone16 (-l of two leaf functions of write(),
#     of one with markers) lose events: their lines are trace-cmd
#     report's but for the comm, and where trace-cmd report joins an
#     entry with the exit after a loss into one leaf line (the loss
#     unseen), ftmmap prints the entry, the loss and the exit (see
#     align_graph()); each loss ftmmap counted is printed, with its count
#     or as one of no count; the events read and lost of gleaf16 and
#     gone16 are those of the same workload with a buffer that loses none
#     (gleaf1024, gone1024).
# Prints "ok N - ..." / "not ok N - ..." and a last line "N passed, N
# failed, 0 skipped"; writes "passed failed skipped" to
# $LOGS/trace-check.counts.  Exit status 0 when all passed.
#
# Environment: MARKERS (200), LOSSY (4000), SMP (4),
# TRACE_CHECK_RESULTS=DIR (judge the results in DIR again, no boot).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
set_flavour normal

name=trace-check
case ${1:-} in
'') ;;
--stock) name=trace-check-stock ;;
*) die "usage: $0 [--stock]" ;;
esac
MARKERS=${MARKERS:-200}
LOSSY=${LOSSY:-4000}
res=${TRACE_CHECK_RESULTS:-$BUILD/$name}
counts=$LOGS/$name.counts
mkdir -p "$LOGS"
rm -f "$counts"
command -v trace-cmd >/dev/null || die "trace-cmd is missing: run 'make deps'"

if [ "$name" = trace-check-stock ] && [ -z "${TRACE_CHECK_RESULTS:-}" ]; then
	KERNEL=$(stock_612_kernel)
	mods=$(dirname "$(dirname "$KERNEL")")/lib/modules
	ko=$(find "$mods" -name 'virtio_blk.ko*' | head -1)
	[ -n "$ko" ] || die "no virtio_blk module in ${mods#"$TOP"/}"
	extra=$BUILD/$name-modules
	rm -rf "$extra"
	mkdir -p "$extra"
	case $ko in
	*.xz) xz -dc "$ko" >"$extra/virtio_blk.ko" ;;
	*) cp "$ko" "$extra/virtio_blk.ko" ;;
	esac
	modules_cpio "$extra/modules.cpio" "$extra/virtio_blk.ko" ||
		die "cannot pack the virtio_blk module (run 'make initramfs' first: gen_init_cpio)"
	export KERNEL INITRD_EXTRA=$extra/modules.cpio RUN_NAME=stock TRACE_WORK=$BUILD/trace-stock
fi

if [ -z "${TRACE_CHECK_RESULTS:-}" ]; then
	job=$(mktemp -d)
	trap 'rm -rf "$job"' EXIT
	# markers.sh N [CPU [NICE]]: N markers from a task pinned on each CPU
	# (or on CPU), its nice value changed by NICE.
	cat >"$job/markers.sh" <<'EOF'
n=$1
[ -z "$3" ] || renice -n "$3" $$ >/dev/null
cpus=${2:-$(seq 0 $(($(nproc) - 1)))}
for c in $cpus; do
	taskset -c $c sh -c '
		i=1
		while [ $i -le $1 ]; do
			echo "ftmmap-check cpu=$2 seq=$i" >/sys/kernel/tracing/trace_marker
			i=$((i + 1))
		done' sh "$n" $c &
done
wait
EOF
	cat >"$job/run.sh" <<'EOF'
# The guest side of trace-check.sh: $OUT goes back to the host.
T=/sys/kernel/tracing
J=$PWD
stats() {
	mkdir -p $OUT/$1.stats
	for d in $T/per_cpu/cpu*; do cat $d/stats >$OUT/$1.stats/${d##*/}; done
}
# one NAME FTMMAP-ARGS...: a run, its stdout, stderr, exit status and stats;
one() {
	name=$1
	shift
	echo "# ftmmap: trace-check: $name: ftmmap $*"
	sh -c 'renice -n "$0" $$ >/dev/null; exec ftmmap "$@"' "${NICE:-0}" "$@" \
		>$OUT/$name.out 2>$OUT/$name.err
	echo $? >$OUT/$name.rc
	stats $name
	cat $OUT/$name.err
}
echo "$MARKERS $LOSSY $(nproc)" >$OUT/params
one rec record -o $OUT/rec.dat -- sh $J/markers.sh $MARKERS
one recp record --print -o $OUT/recp.dat -- sh $J/markers.sh $MARKERS
one stream stream -- sh $J/markers.sh $MARKERS
one sread stream --read -- sh $J/markers.sh $MARKERS
one rread record --read -o $OUT/rread.dat -- sh $J/markers.sh $MARKERS
# Events that libtraceevent's plugins print (hrtimer), with one CPU online:
# enabling them patches code, which TCG and several vCPUs do not mix with.
off=
for d in /sys/devices/system/cpu/cpu[1-9]*; do
	if [ "$(cat $d/online 2>/dev/null)" = 1 ] && echo 0 >$d/online; then off="$off $d"; fi
done
one plug record --print -e timer:hrtimer_start -e timer:hrtimer_expire_entry -e ftrace:print -e sched:sched_switch -e sched:sched_wakeup \
	-o $OUT/plug.dat -- sh $J/markers.sh 20 0
# Interrupts (irq: hardirq and softirq events) and system calls (the
# markers' write()s), their lines too
one irqsys record --print -e irq -e syscalls:sys_enter_write -e syscalls:sys_exit_write -e ftrace:print \
	-o $OUT/irqsys.dat -- sh $J/markers.sh 20 0
# The tracers patch code too: function (-l: a few functions) and
# function_graph (-g), with their lines
one func record --print -p function -l 'hrtimer_*' -l do_nanosleep -e ftrace:print \
	-o $OUT/func.dat -- sh $J/markers.sh 20 0
# (20 sleeps: the events of a sub-buffer come in several pieces, and fill several)
sleeps='for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do usleep 2000; done'
one graph record --print -p function_graph -g do_nanosleep -o $OUT/graph.dat -- sh -c "$sleeps"
one sgraph stream -p function_graph -g do_nanosleep -- sh -c "$sleeps"
# function_graph losing events: ftmmap at nice 19, the writes at nice -20,
# a 16 KB buffer, only the writers traced (-F -c): the lines, and each
# loss where it happened
NICE=19 one glossy record --print -F -c -b 16 -p function_graph -g ksys_write -o $OUT/glossy.dat -- \
	sh $J/markers.sh 500 0 -39
# Leaf calls only: functions of write() (-l), 1000 writes to /dev/null,
# everything at nice 0, losses between the reads; and the same with a
# buffer that loses none, for the number of events. gleaf: two functions;
# on Debian's 6.12 the last event before each loss is an entry whose
# function's exit is the first after it, which trace-cmd report joins into
# one line. gone: one function, and 1000 markers: on 6.12 the sub-buffers
# before the losses are full to their end, with no room for the count.
nullw='i=0; while [ $i -lt 1000 ]; do echo x >/dev/null; i=$((i + 1)); done'
for b in 16 1024; do
	one gleaf$b record --print -F -c -b $b -p function_graph -l '*fdget_pos' -l rw_verify_area \
		-o $OUT/gleaf$b.dat -- sh -c "$nullw"
	one gone$b record --print -F -c -b $b -p function_graph -l '*fdget_pos' \
		-o $OUT/gone$b.dat -- sh $J/markers.sh 1000 0
done
for d in $off; do echo 1 >$d/online; done
# The consumer at nice 19 and the writer at nice -20, both on CPU 0: the
# writer fills the 16 KB buffer many times before the consumer runs.
renice 19 $$ >/dev/null
taskset -p 1 $$ >/dev/null
one lossy record -M 1 -b 16 -e ftrace:print -o $OUT/lossy.dat -- sh $J/markers.sh $LOSSY 0 -39
EOF
	printf 'MARKERS=%s\nLOSSY=%s\n' "$MARKERS" "$LOSSY" | cat - "$job/run.sh" >"$job/run.sh.new"
	mv "$job/run.sh.new" "$job/run.sh"
	say "trace-check${KERNEL:+ on ${KERNEL##*/}}: $MARKERS markers per CPU, ftmmap record/stream/--read in the guest, trace-cmd report here"
	TRACE_LOG=$name "$(dirname "$0")/trace.sh" --job "$job" "$res" ||
		warn "the guest run reported a problem (see ${LOGS#"$TOP"/}/$name.log)"
fi

python3 - "$res" "$counts" <<'EOF'
import os, re, subprocess, sys

res, counts_file = sys.argv[1], sys.argv[2]
results = []


def check(ok, what, why=""):
    ok = bool(ok)
    results.append(ok)
    n = len(results)
    print(f"{'ok' if ok else 'not ok'} {n} - {what}")
    if not ok and why:
        for line in str(why).splitlines()[:12]:
            print(f"#   {line}")


def read(name):
    try:
        with open(os.path.join(res, name), errors="replace") as f:
            return f.read()
    except OSError:
        return None


params = read("params")
if params is None:
    check(False, "the guest ran the check (no results: see the trace-check console log)")
    nmark, nlossy, ncpus = 0, 0, 0
else:
    nmark, nlossy, ncpus = map(int, params.split())

# A line of trace-cmd report (and of ftmmap stream): comm-pid, [CPU],
# timestamp, event:, fields.
LINE = re.compile(r"^\s*(?P<comm>.*?)-(?P<pid>\d+)\s+\[(?P<cpu>\d{3})\]\s+(?P<ts>\d+\.\d+):"
                  r" (?P<event>\w+):\s+(?P<fields>.*)$")
DROPPED = re.compile(r"^CPU:(\d+) \[(?:(\d+) )?EVENTS DROPPED\]$")
MARK = "tracing_mark_write: "


def parse(text):
    """events: [(line, match)], dropped: {cpu: n} (-1: unknown), other lines"""
    events, dropped, other = [], {}, []
    for line in (text or "").splitlines():
        m = LINE.match(line)
        d = DROPPED.match(line)
        if m:
            events.append((line, m))
        elif d:
            cpu = int(d.group(1))
            n = int(d.group(2)) if d.group(2) else -1
            dropped[cpu] = -1 if n < 0 or dropped.get(cpu, 0) < 0 else dropped.get(cpu, 0) + n
        elif line.strip():
            other.append(line)
    return events, dropped, other


def markers(events):
    """{cpu: [text, ...]} of the print events, in the order of the output"""
    out = {}
    for _, m in events:
        if m["event"] == "print" and m["fields"].startswith(MARK):
            out.setdefault(int(m["cpu"]), []).append(m["fields"][len(MARK):])
    return out


def report(name):
    path = os.path.join(res, name + ".dat")
    if not os.path.exists(path):
        return None, f"no {name}.dat"
    p = subprocess.run(["trace-cmd", "report", path], capture_output=True, text=True)
    if p.returncode:
        return None, f"trace-cmd report {name}.dat: exit {p.returncode}: {p.stderr.strip()}"
    return p.stdout, None


def kernel_lost(name):
    lost = {}
    d = os.path.join(res, name + ".stats")
    for f in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        m = re.search(r"^overrun: (\d+)$", read(f"{name}.stats/{f}") or "", re.M)
        lost[int(f[3:])] = int(m.group(1)) if m else None
    return lost


# ftmmap's totals: "CPU 0: 934 events, 0 lost (and 2070 more in 1 loss of
# no count, by the kernel's overrun count), 11 sub-buffers"
TOTALS = re.compile(r"^CPU (\d+): (\d+) events, (\d+) lost(?: \(and (?:(?P<n>\d+) more"
                    r"(?: in (?P<k1>\d+) loss(?:es)? of no count)?, by the kernel's overrun count"
                    r"|more, of unknown number, in (?P<k2>\d+) loss(?:es)?)\))?,", re.M)


def ftmmap_totals(name):
    """{cpu: (events, events lost with a count, events lost in losses of
    no count (None: unknown), losses of no count)} from ftmmap's stderr"""
    return {int(m.group(1)): (int(m.group(2)), int(m.group(3)),
                              int(m["n"]) if m["n"] else (None if m["k2"] else 0),
                              int(m["k1"] or m["k2"] or 0))
            for m in TOTALS.finditer(read(name + ".err") or "")}


def ran(name):
    rc = (read(name + ".rc") or "").strip()
    if rc != "0":
        check(False, f"{name}: ftmmap ran (exit {rc or 'none'})", read(name + ".err"))
        return False
    return True


def ran_report(name, label):
    """trace-cmd report of a run's file; None (and a failed check) when the
    run did not happen or trace-cmd cannot read the file"""
    if not ran(name):
        return None
    text, err = report(name)
    if text is None:
        check(False, f"{label}: trace-cmd report opens the file", err)
    return text


def expected(cpus):
    return {c: [f"ftmmap-check cpu={c} seq={i}" for i in range(1, nmark + 1)] for c in cpus}


def diff_markers(got, want):
    why = []
    for c in sorted(set(got) | set(want)):
        g, w = got.get(c, []), want.get(c, [])
        if g != w:
            first = next((i for i in range(min(len(g), len(w))) if g[i] != w[i]), min(len(g), len(w)))
            why.append(f"CPU {c}: {len(g)} markers, {len(w)} written; first difference at #{first + 1}: "
                       f"{g[first] if first < len(g) else '(none)'!r} vs {w[first] if first < len(w) else '(none)'!r}")
    return "\n".join(why)


def check_recording(name, label):
    """markers exact, lost counts, event totals of a recording without losses"""
    text = ran_report(name, label)
    if text is None:
        return None
    events, dropped, other = parse(text)
    bad = [l for l in other if not re.match(r"^cpus=\d+$", l)]
    check(not bad, f"{label}: every line of trace-cmd report is an event line", "\n".join(bad[:5]))
    got, want = markers(events), expected(range(ncpus))
    check(got == want, f"{label}: trace-cmd report shows exactly the {nmark} markers of each of the "
          f"{ncpus} CPUs, texts in order", diff_markers(got, want))
    klost = kernel_lost(name)
    tot = ftmmap_totals(name)
    shown = {c: dropped.get(c, 0) for c in klost}
    said = {c: tot.get(c, (0, 0))[1] for c in klost}
    check(bool(klost) and shown == klost == said,
          f"{label}: lost per CPU: trace-cmd {shown} = kernel overrun {klost} = ftmmap {said}")
    nev = sum(e for e, *_ in tot.values())
    check(bool(tot) and nev == len(events),
          f"{label}: trace-cmd reads the {nev} events ftmmap recorded ({len(events)})")
    return events


# The writer of the markers is taskset, which exec()s sh: its first markers
# show "taskset" or "sh", whichever saved_cmdlines holds, and that depends
# on whether it was switched out between the exec() and its first marker,
# which varies between two runs.
WRITER = {"taskset": "taskset|sh", "sh": "taskset|sh"}


def key(m):
    """a marker line without what differs between runs: pid, time stamp
    and which of its two names the writer had"""
    comm = m["comm"].strip()
    return (WRITER.get(comm, comm), int(m["cpu"]), m["event"], m["fields"])


def compare(label, name, ref_events):
    """stream-like output of another run against trace-cmd report's marker lines"""
    if not ran(name):
        return
    out = read(name + ".out") or ""
    events, _, other = parse(out)
    bad = [l for l in other if l.strip()]
    check(not bad and bool(events), f"{label}: every stdout line is in trace-cmd report's line format",
          "\n".join(bad[:5]) or "no event line")
    mine = [key(m) for _, m in events if m["event"] == "print"]
    ref = [key(m) for _, m in ref_events if m["event"] == "print"]
    per = lambda ks: {c: [k for k in ks if k[1] == c] for c in sorted({k[1] for k in ks})}
    why = ""
    if per(mine) != per(ref):
        a, b = per(mine), per(ref)
        for c in sorted(set(a) | set(b)):
            x, y = a.get(c, []), b.get(c, [])
            if x != y:
                i = next((i for i in range(min(len(x), len(y))) if x[i] != y[i]), min(len(x), len(y)))
                why += (f"CPU {c}: {len(x)} vs {len(y)} marker lines; #{i + 1}: "
                        f"{x[i] if i < len(x) else None} vs {y[i] if i < len(y) else None}\n")
    check(not why, f"{label}: its marker lines are trace-cmd report's (rec), "
          "but for pid and time stamp", why)
    return events


# The comm of the task column may differ: ftmmap takes it from the saved
# cmdlines (the file's section), while trace-cmd's sched_switch plugin keeps
# the first comm it saw for a pid in a sched_switch event ("ftmmap" for a
# child that then exec()s sh): compared without it.
task = lambda l: re.sub(r"^\s*.*?-(\d+)(\s+\[\d{3}\])", r"\1\2", l)


def printed_lines(name, label=None):
    """A record --print run: the lines it printed, trace-cmd report's of
    its file, and the pairs that differ but for the comm of the task
    column; None (and a failed check) when trace-cmd cannot read the file,
    or when the run did not happen."""
    text = ran_report(name, label or name)
    if text is None:
        return None
    a = [l for l in (read(f"{name}.out") or "").splitlines() if l.strip()]
    b = [l for l in text.splitlines() if l.strip() and not l.startswith("cpus=")]
    return a, b, [(x, y) for x, y in zip(a, b) if task(x) != task(y)]


def leaves(lines):
    """How many of the lines are leaf calls, entry and exit joined: "f();\""""
    return sum(1 for l in lines if re.search(r" funcgraph_entry: .*\|\s+\w+\(\);$", l))


GRAPH_OPEN = re.compile(r"\|\s+(\S+)\(\) \{$")
GRAPH_LEAF = re.compile(r"\|\s+(\S+)\(\);$")


def align_graph(a, b):
    """ftmmap's printed lines @a against trace-cmd report's @b of the same
    file: the same but for the comm of the task column, except where
    trace-cmd report joins a function's entry with the first event after a
    loss, the exit of that function by the same task but of another call:
    it prints one leaf line ("f();") and no loss, which ftmmap prints as
    the entry ("f() {"), the loss, then the exit. Returns the pairs that
    differ otherwise, and how many such joins there were."""
    i = j = joins = 0
    diff = []
    while i < len(a) and j < len(b):
        x, y = a[i], b[j]
        if task(x) == task(y):
            i += 1
            j += 1
            continue
        mx, my = LINE.match(x), LINE.match(y)
        ox = mx and mx["event"] == "funcgraph_entry" and GRAPH_OPEN.search(mx["fields"])
        ly = my and my["event"] == "funcgraph_entry" and GRAPH_LEAF.search(my["fields"])
        d = DROPPED.match(a[i + 1]) if i + 2 < len(a) else None
        me = LINE.match(a[i + 2]) if d else None
        if (ox and ly and me and ox.group(1) == ly.group(1) and
                (mx["pid"], mx["cpu"], mx["ts"]) == (my["pid"], my["cpu"], my["ts"]) and
                me["event"] == "funcgraph_exit" and (me["pid"], me["cpu"]) == (mx["pid"], mx["cpu"]) and
                int(d.group(1)) == int(mx["cpu"])):
            joins += 1
            i += 3
            j += 1
            continue
        diff.append((x, y))
        i += 1
        j += 1
    diff += [(x, "(none)") for x in a[i:]] + [("(none)", y) for y in b[j:]]
    return diff, joins


def shown_losses(lines):
    """{cpu: (events in the losses with a count, losses without)} of the
    "CPU:N [X EVENTS DROPPED]" lines"""
    out = {}
    for l in lines:
        d = DROPPED.match(l)
        if d:
            n, u = out.get(int(d.group(1)), (0, 0))
            out[int(d.group(1))] = (n + int(d.group(2)), u) if d.group(2) else (n, u + 1)
    return out


def check_graph_losses(name, label):
    """A record --print run of function_graph that lost events: its lines
    are trace-cmd report's (align_graph()), and each loss it counted is
    printed where it happened"""
    lines = printed_lines(name)
    if not lines:
        return
    a, b, _ = lines
    diff, joins = align_graph(a, b)
    ng = sum(1 for l in a if " funcgraph_" in l)
    shown = shown_losses(a)
    nlost = sum(n for n, _ in shown.values())
    nshown = sum(1 for l in a if DROPPED.match(l))
    check(ng > 0 and nshown > 0 and not diff,
          f"{label}: its {len(a)} lines ({ng} graph ones, {nshown} losses of {nlost} events) "
          f"are trace-cmd report's, but for the comm of the task column and the {joins} "
          "leaf lines trace-cmd report makes of an entry and the exit after a loss",
          show(diff) or f"{len(a)} vs {len(b)} lines, {ng} graph lines, {nshown} losses")
    counted = {c: (l, k) for c, (_, l, _, k) in ftmmap_totals(name).items()}
    printed = {c: shown.get(c, (0, 0)) for c in counted}
    check(bool(counted) and printed == counted,
          f"{label}: every loss ftmmap counted is printed where it happened: "
          f"(events, losses without a count) per CPU: printed {printed} = counted {counted}")


def show(diff):
    """The first differing lines, for a failed check's message"""
    return "\n".join(f"ftmmap:    {x}\ntrace-cmd: {y}" for x, y in diff[:3])


if params is not None:
    rec = check_recording("rec", "record")

    # record -p: the printed events and trace-cmd report of the same file.
    lines = printed_lines("recp", "record --print")
    if lines:
        a, b, diff = lines
        am = [l for l in a if " print: " in l]
        bm = [l for l in b if " print: " in l]
        check(len(am) == nmark * ncpus and am == bm,
              f"record --print: its {len(am)} marker lines are trace-cmd report's, byte for byte",
              "\n".join(f"{x!r}\n{y!r}" for x, y in zip(am, bm) if x != y) or
              f"{len(am)} vs {len(bm)} lines")
        check(len(a) == len(b) and not diff,
              f"record --print: all its {len(a)} lines (sched_switch, sched_wakeup too) are "
              "trace-cmd report's, but for the comm of the task column",
              show(diff) or f"{len(a)} vs {len(b)} lines")

    if rec:
        s = compare("stream", "stream", rec)
        r = compare("stream --read", "sread", rec)
        err = read("sread.err") or ""
        check("not mapping the ring-buffer (--read)" in err,
              "stream --read: says it reads trace_pipe_raw instead of mapping it", err)
    check_recording("rread", "record --read")

    # Events that trace-cmd report prints through a plugin (hrtimer)
    lines = printed_lines("plug")
    if lines:
        a, b, diff = lines
        nhr = sum(1 for l in a if re.search(r" hrtimer_(start|expire_entry): ", l))
        check(nhr > 0 and len(a) == len(b) and not diff,
              f"record --print of hrtimer events: its {len(a)} lines ({nhr} hrtimer ones) are "
              "trace-cmd report's, plugins included, but for the comm of the task column",
              show(diff) or f"{len(a)} vs {len(b)} lines, {nhr} hrtimer lines")

    # Interrupt and system call events: the lines of trace-cmd report
    lines = printed_lines("irqsys")
    if lines:
        a, b, diff = lines
        nirq = sum(1 for l in a if re.search(r" (irq_handler|softirq)_\w+: ", l))
        nsys = sum(1 for l in a if re.search(r" sys_(enter|exit)_write: ", l))
        check(nirq > 0 and nsys > 0 and len(a) == len(b) and not diff,
              f"record --print of irq and syscall events: its {len(a)} lines ({nirq} irq, "
              f"{nsys} syscall ones) are trace-cmd report's, but for the comm of the task column",
              show(diff) or f"{len(a)} vs {len(b)} lines, {nirq} irq lines, {nsys} syscall lines")

    # The function tracer, limited by -l: the lines of trace-cmd report
    lines = printed_lines("func")
    if lines:
        a, b, diff = lines
        nfn = sum(1 for l in a if " function: " in l)
        odd = [l for l in a if " function: " in l and
               not re.search(r" function: +(hrtimer_|do_nanosleep)", l)]
        check(nfn > 0 and not odd and len(a) == len(b) and not diff,
              f"record --print -p function -l: its {len(a)} lines ({nfn} function ones, "
              "of the -l functions only) are trace-cmd report's, but for the comm of the task column",
              "\n".join(odd[:3] + [show(diff)]).strip() or
              f"{len(a)} vs {len(b)} lines, {nfn} function lines")

    # record --print of function_graph prints through libtracecmd as the
    # events come, whose graph printer joins a leaf function's entry and
    # exit into one line ("f();" with its duration), as trace-cmd report
    # does: the same lines
    lines = printed_lines("graph")
    if lines:
        a, b, diff = lines
        ng = sum(1 for l in a if " funcgraph_" in l)
        leaf = leaves(a)
        check(ng > 0 and leaf > 0 and len(a) == len(b) and not diff and
              not any("UNKNOWN" in l for l in b),
              f"record --print -p function_graph -g: its {len(a)} lines ({ng} graph ones, "
              f"{leaf} leaf calls) are trace-cmd report's, but for the comm of the task column",
              show(diff) or f"{len(a)} vs {len(b)} lines, {ng} graph lines, {leaf} leaf lines" +
              ("\n" + (read("graph.err") or "") if not a else ""))

    # The same, losing events: the lines, "CPU:0 [N EVENTS DROPPED]" ones
    # included (in the printer's pieces as in the file's sub-buffers)
    check_graph_losses("glossy", "record --print -b 16 -p function_graph, losing events")
    # Leaf calls only: losses between an entry and an exit (gleaf), losses
    # that 6.12 cannot store the count of (gone); every event of the
    # workload read or counted lost
    for name, what in ("gleaf", "two leaf functions"), ("gone", "one leaf function"):
        label = f"record --print -b 16 -p function_graph -l of {what}, losing events"
        check_graph_losses(name + "16", label)
        # (a run that failed is a failed check already: one for each)
        if (read(name + "16.rc") or "").strip() == "0" and ran(name + "1024"):
            lossy = {c: t[:3] for c, t in ftmmap_totals(name + "16").items()}
            whole = {c: t[:3] for c, t in ftmmap_totals(name + "1024").items()}
            sums = {c: e + l + (m or 0) for c, (e, l, m) in lossy.items() if m is not None}
            want = {c: e for c, (e, l, m) in whole.items() if (l, m) == (0, 0)}
            nlost = sum(l + (m or 0) for _, l, m in lossy.values())
            check(bool(lossy) and nlost > 0 and len(sums) == len(lossy) and sums == want,
                  f"{label}: events read + lost, per CPU, are the events of the same workload "
                  f"with a 1024 KB buffer: {sums} = {want} ({nlost} lost)",
                  f"-b 16: {lossy}\n-b 1024: {whole}")

    # stream of function_graph: the same printer as record --print. Its
    # own run, so not the same lines as graph.dat's; but trace-cmd report's
    # layout: leaf calls joined, and no entry line ("f() {") whose next
    # line is the same task's exit ("}"), which trace-cmd report joins.
    if ran("sgraph"):
        events, _, other = parse(read("sgraph.out") or "")
        a = [l for l, _ in events]
        bad = [l for l in other if l.strip()]
        leaf = leaves(a)
        unjoined = [f"{x}\n{y}" for (x, mx), (y, my) in zip(events, events[1:])
                    if mx["event"] == "funcgraph_entry" and x.endswith("{") and
                    my["event"] == "funcgraph_exit" and my["fields"].endswith("}") and
                    (mx["comm"], mx["pid"]) == (my["comm"], my["pid"])]
        alone = [l for l in a if "--> " in l or "<-- " in l]
        check(leaf > 0 and not bad and not unjoined and not alone,
              f"stream -p function_graph -g: its {len(a)} lines are trace-cmd report's graph, "
              f"{leaf} leaf calls joined, none left apart",
              "\n".join(bad[:3] + unjoined[:3] + alone[:3]) or
              f"{leaf} leaf lines\n" + (read("sgraph.err") or ""))

    # The lossy run: CPU 0 only, markers only.
    text = ran_report("lossy", "lossy")
    if text is not None:
        events, dropped, _ = parse(text)
        got = markers(events).get(0, [])
        seqs = [int(t.rsplit("=", 1)[1]) for t in got if t.startswith("ftmmap-check cpu=0 seq=")]
        klost = kernel_lost("lossy").get(0)
        said = ftmmap_totals("lossy").get(0, (0, None))[1]
        shown = dropped.get(0, 0)
        check(klost is not None and klost > 0 and shown == klost == said,
              f"lossy: events lost on CPU 0: trace-cmd {shown} = kernel overrun {klost} "
              f"= ftmmap {said}, more than 0")
        check(len(seqs) == len(got) and seqs == sorted(set(seqs)) and
              len(seqs) + max(shown, 0) == nlossy,
              f"lossy: {len(seqs)} markers read, in order, + {shown} lost = {nlossy} written")

passed = sum(results)
failed = len(results) - passed
with open(counts_file, "w") as f:
    f.write(f"{passed} {failed} 0\n")
print(f"{passed} passed, {failed} failed, 0 skipped")
sys.exit(1 if failed else 0)
EOF
