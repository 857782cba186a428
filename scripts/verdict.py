#!/usr/bin/env python3
"""Read a guest's console log and give one verdict.

The guest (guest/init) frames each program it runs:

    # ftmmap: running ring-buffer/map_test
    ...the program's own KTAP/TAP output...
    # ftmmap: exit ring-buffer/map_test rc=0
    ...
    # ftmmap: done

Counted: every top-level TAP result line ("ok", "not ok"; "# SKIP" and
"# TODO" count as skipped).  Failed, besides "not ok": a listed program that
did not run, one without a plan, one whose results do not match its plan,
one that exited non-zero without reporting a failure, a guest that did not
reach "done" (hang, panic), and any kernel splat (BUG, WARNING, KASAN,
UBSAN, lockdep, hung task, Oops, ...), printed with its context.

The last line is "NAME: N passed, N failed, N skipped".
"""

import argparse
import re
import sys

FRAME = re.compile(r"^# ftmmap: (running|exit) (\S+)(?: rc=(\d+))?")
PLAN = re.compile(r"^1\.\.(\d+)(.*)$")
RESULT = re.compile(r"^(not ok|ok)\b(.*)$")
DIRECTIVE = re.compile(r"#\s*(SKIP|TODO)\b", re.IGNORECASE)
# A kernel message: the guest runs with printk.time=1.
KMSG = re.compile(r"\[\s*\d+\.\d+\]\s?(.*)$")
SPLATS = [
    r"BUG:",
    r"WARNING:",
    r"KASAN",
    r"UBSAN",
    r"Oops",
    r"^[a-z][a-z0-9 ]*: [0-9a-f]{4} \[#\d+\]",  # die(): "int3: 0000 [#1]"
    r"general protection fault",
    r"Unable to handle kernel",  # arm64 faults, before "Internal error: Oops"
    r"Internal error:",
    r"CFI failure",  # kCFI (the gki kernel): a call through a mistyped pointer
    r"kernel BUG at",
    r"Kernel panic",
    r"INFO: task .* blocked for more than",
    r"detected stalls? on CPU",
    r"possible (circular|recursive) locking",
    r"inconsistent lock state",
    r"lock held when returning to user space",
    r"bad unlock balance",
    r"list_(add|del) corruption",
]
SPLAT = re.compile("|".join(SPLATS))
# a splat's faulting instruction: x86's "RIP: 0010:f+0x1/0x2", arm64's "pc : f+0x1/0x2"
SITE = re.compile(r"\b(RIP|pc) ?: (?:[0-9a-f]{4}:)?(\S+)")
# guest/init's console watchdog: the UART sent nothing for a while
# KCSAN: "BUG: KCSAN: data-race in a / b" (the two accesses' functions) or
# "BUG: KCSAN: data-race in a+0x12/0x40" (one access, the other unknown)
KCSAN = re.compile(r"BUG: KCSAN: (.+?) in (.+)$")
KCSAN_SELFTEST = re.compile(r"kcsan: selftest: (\d+)/(\d+) tests passed")
CONSOLE_QUIET = re.compile(r"ftmmap: console: no byte sent for (\d+) s")
# kernel/sched/clock.c turning on its static key __sched_clock_stable
SCHED_CLOCK_STABLE = re.compile(r"sched_clock: Marking stable")
KSFT_SKIP = 4


class Program:
    def __init__(self, name):
        self.name = name
        self.lines = []
        self.plan = None
        self.plan_skip = False
        self.results = []  # (kind, line, context lines)
        self.rc = None
        self.running = False
        self.planned = False  # this run printed its plan

    # A program runs once per pass (ftmmap.repeat=N runs them N times): the
    # plans add up, and the status is the first failing run's, else the last.
    def start_run(self):
        self.running = True
        self.planned = False

    def end_run(self, rc):
        self.running = False
        if rc is None or self.rc in (None, 0, KSFT_SKIP):
            self.rc = rc

    def add(self, line):
        self.lines.append(line)
        m = PLAN.match(line)
        if m and not self.planned:
            self.plan = (self.plan or 0) + int(m.group(1))
            self.plan_skip = bool(re.search(r"#\s*SKIP", m.group(2), re.I))
            self.planned = True
            return
        m = RESULT.match(line)
        if m:
            if DIRECTIVE.search(m.group(2)):
                kind = "skipped"
            elif m.group(1) == "ok":
                kind = "passed"
            else:
                kind = "failed"
            # Diagnostics since the previous result explain a failure.
            ctx = []
            for prev in reversed(self.lines[:-1]):
                if RESULT.match(prev) or PLAN.match(prev):
                    break
                ctx.insert(0, prev)
            self.results.append((kind, line, ctx[-15:]))


def race_key(where):
    """The functions a KCSAN report names, without offsets, sorted."""
    return tuple(sorted(re.sub(r"\+0x[0-9a-f]+/0x[0-9a-f]+$", "", f.strip())
                        for f in where.split(" / ")))


def fn_name(frame):
    """A stack frame's or a report's function, without offset and suffixes."""
    f = re.sub(r"\+0x[0-9a-f]+/0x[0-9a-f]+.*$", "", frame.strip())
    return re.sub(r"\.(constprop|isra|part|cold)\.?\d*", "", f)


def report_frames(lines, i):
    """The functions of the stack frames of the KCSAN report at line i.

    Of an access made in an interrupt, only the frames up to the interrupt
    entry (asm_sysvec_*, asm_common_interrupt, asm_exc_*): below it is the
    code the interrupt happened to stop, which made no access."""
    out = set()
    interrupted = False
    for line in lines[i + 1:i + 80]:
        k = KMSG.search(line)
        if not k:
            continue
        body = k.group(1).strip()
        if body.startswith("====="):
            break
        m = re.match(r"^([A-Za-z_][\w.]*)\+0x[0-9a-f]+/0x[0-9a-f]+", body)
        if not m:
            interrupted = False     # the next access's stack, or the end
            continue
        if interrupted:
            continue
        out.add(fn_name(m.group(0)))
        if re.match(r"^asm_(sysvec_|common_interrupt|exc_)", m.group(1)):
            interrupted = True
    return out


def read_known_races(path):
    """config/kcsan-known-races: "a / b   # why" per line (scripts/kcsan.sh)."""
    known = {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            body, _, why = line.partition("#")
            if not body.strip():
                continue
            known[race_key(body)] = (why.strip(), f"{path}:{n}")
    return known


def parse(path):
    with open(path, "rb") as f:
        text = f.read().decode("utf-8", "replace")
    lines = [l.rstrip("\r") for l in text.split("\n")]
    programs, order, splats, quiet = {}, [], [], []
    current, done, cpus = None, False, None
    for i, line in enumerate(lines):
        k = KMSG.search(line)
        if k and SPLAT.search(k.group(1).strip()):
            splats.append(i)
        if k and CONSOLE_QUIET.match(k.group(1).strip()):
            quiet.append(i)
        m = FRAME.match(line)
        if m:
            what, name = m.group(1), m.group(2)
            if what == "running":
                current = programs.setdefault(name, Program(name))
                current.start_run()
                if name not in order:
                    order.append(name)
            elif name in programs:
                programs[name].end_run(int(m.group(3)) if m.group(3) else None)
                current = None
            continue
        if line.startswith("# ftmmap: done"):
            done = True
            current = None
            continue
        m = re.match(r"^# ftmmap: kernel .*, (\d+) CPUs online", line)
        if m:
            cpus = int(m.group(1))
        if current is not None:
            if not k:
                current.add(line)
            elif line[:k.start()].strip():
                # A kernel message cut into the program's line: keep its start.
                current.add(line[:k.start()])
    return lines, programs, order, splats, done, cpus, quiet


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("log")
    ap.add_argument("--name", default="guest")
    ap.add_argument("--tests", help="file listing the programs that must run")
    ap.add_argument("--counts", help="write 'passed failed skipped' here")
    ap.add_argument("--timed-out", type=int, metavar="SECS")
    ap.add_argument("--silent", type=int, metavar="SECS",
                    help="the host stopped the guest after SECS s without output")
    ap.add_argument("--require", metavar="PREFIX",
                    help="fail when no program whose name starts with PREFIX reported a result")
    ap.add_argument("--smp", type=int, help="fail unless the guest saw this many CPUs")
    ap.add_argument("--only", help="the guest ran only the listed programs whose "
                    "name contains one of these (comma-separated, as ftmmap.only=)")
    ap.add_argument("--skip", help="the guest ran none of the listed programs whose "
                    "name contains one of these (comma-separated, as ftmmap.skip=)")
    ap.add_argument("--known-races", metavar="FILE",
                    help="KCSAN reports listed here (base-kernel races, with the "
                    "reason) are shown but not failures")
    ap.add_argument("--touched", metavar="FILE",
                    help="functions the series changes (one per line): a listed "
                    "race that names one of them still fails")
    ap.add_argument("--tracing", metavar="FILE",
                    help="the functions of kernel/trace/, one a line: an unlisted "
                         "KCSAN report none of whose stack frames is one of them nor "
                         "a function of --touched is a note, not a failure")
    ap.add_argument("--kcsan-selftest", action="store_true",
                    help="fail unless KCSAN's boot selftest reported all passed")
    ap.add_argument("--no-stable-sched-clock", action="store_true",
                    help="fail when the kernel marked its sched_clock stable: code "
                    "patched with the other vCPUs running, which can kill a TCG "
                    "guest (boot.sh boots x86 guests of several vCPUs with "
                    "tsc=unstable to prevent it)")
    ap.add_argument("--splats-only", action="store_true",
                    help="only check for kernel splats and the end of the run (demo, bench)")
    a = ap.parse_args()

    lines, programs, order, splats, done, cpus, quiet = parse(a.log)
    passed = failed = skipped = 0
    problems = []

    expected = []
    if a.tests and not a.splats_only:
        with open(a.tests) as f:
            expected = [l.strip() for l in f if l.strip() and not l.startswith("#")]
        # "?name": run only when ftmmap.only names it (guest/init)
        if a.only:
            keys = a.only.split(",")
            expected = [l.lstrip("?") for l in expected if any(k in l for k in keys)]
        else:
            expected = [l for l in expected if not l.startswith("?")]
        if a.skip:
            keys = a.skip.split(",")
            expected = [l for l in expected if not any(k in l for k in keys)]

    if not a.splats_only:
        for name in expected + [n for n in order if n not in expected]:
            p = programs.get(name)
            if p is None:
                problems.append(f"{name}: did not run")
                continue
            counts = {"passed": 0, "failed": 0, "skipped": 0}
            for kind, _, _ in p.results:
                counts[kind] += 1
            if p.plan == 0 and p.plan_skip and not p.results:
                counts["skipped"] += 1
            passed += counts["passed"]
            failed += counts["failed"]
            skipped += counts["skipped"]
            bad = []
            if p.rc is None or p.running:
                bad.append("did not finish (the guest hung or died while it ran)")
            if p.plan is None:
                bad.append("printed no TAP plan")
            elif p.plan != len(p.results) and not (p.plan == 0 and p.plan_skip):
                bad.append(f"planned {p.plan} tests but reported {len(p.results)}")
            if p.rc not in (None, 0, KSFT_SKIP) and not counts["failed"]:
                bad.append(f"exited with status {p.rc}" + (" (killed: time limit)" if p.rc == 137 else ""))
            status = "FAIL" if bad or counts["failed"] else "ok  "
            print(f"{status} {name}: {counts['passed']} passed, {counts['failed']} failed, "
                  f"{counts['skipped']} skipped")
            for kind, line, ctx in p.results:
                if kind == "failed":
                    for c in ctx:
                        print(f"       | {c}")
                    print(f"       > {line}")
            for b in bad:
                problems.append(f"{name}: {b}")
                if p.plan is None or "reported" in b or "finish" in b:
                    for l in p.lines[-15:]:
                        print(f"       | {l}")
        if a.require and not any(n.startswith(a.require) and programs[n].results for n in programs):
            problems.append(f"no {a.require.rstrip('/')} test reported a result "
                            "(set ALLOW_NO_TESTS=1 to accept that)")

    if a.splats_only:
        for name in order:
            rc = programs[name].rc
            if rc is None or programs[name].running:
                problems.append(f"{name}: did not finish")
            elif rc != 0:
                problems.append(f"{name}: exited with status {rc}")

    if a.no_stable_sched_clock:
        for i, line in enumerate(lines):
            if SCHED_CLOCK_STABLE.search(line):
                problems.append("the kernel marked its sched_clock stable with the other "
                                "vCPUs running (a static key turned on: code patched under "
                                f"TCG, which can kill the guest) at {a.log}:{i + 1}")
                break
    if a.smp and cpus is not None and cpus != a.smp:
        problems.append(f"the guest saw {cpus} CPUs, not {a.smp}")
    if a.silent:
        problems.append(f"guest printed nothing for {a.silent} s, not even its console "
                        "watchdog: stopped (a hung kernel?)")
    elif a.timed_out:
        problems.append(f"guest did not finish within {a.timed_out} s (hang?)")
    elif not done:
        problems.append("guest did not reach the end of its run (no '# ftmmap: done': crash or panic?)")

    # Not a failure by itself: a test may work for a while without printing.
    # A notice cut into a program's line means the console had stopped in
    # the middle of it, and what follows shows whether it went on.
    for i in quiet:
        k = KMSG.search(lines[i])
        cut = " (cut into a program's line: the console had stopped mid-line)" \
            if lines[i][:k.start()].strip() else ""
        print(f"note: {k.group(1).strip()}{cut} at {a.log}:{i + 1}")

    known = read_known_races(a.known_races) if a.known_races else {}
    touched = set()
    if a.touched:
        with open(a.touched) as f:
            touched = {l.strip() for l in f if l.strip()}
    if a.kcsan_selftest:
        st = [KCSAN_SELFTEST.search(l) for l in lines]
        st = [m for m in st if m]
        if not st:
            problems.append("no 'kcsan: selftest: N/N tests passed' line: KCSAN did not test itself")
        elif st[0].group(1) != st[0].group(2):
            problems.append(f"KCSAN's selftest: {st[0].group(0)}")
        else:
            print(f"note: {st[0].group(0)}")
        # Asked on the command line, guest/init turns KCSAN on for the tests
        if any("ftmmap.kcsan=tests" in l for l in lines[:200]) and \
                not any(l.rstrip().endswith("# ftmmap: KCSAN on") for l in lines):
            problems.append("KCSAN was not turned on for the tests (no '# ftmmap: KCSAN on')")
    tracing = set()
    if a.tracing:
        with open(a.tracing) as f:
            tracing = {l.strip() for l in f if l.strip()}
    races = {}
    unlisted = []
    for i in splats:
        msg = KMSG.search(lines[i]).group(1).strip()
        m = KCSAN.search(msg)
        if not m:
            unlisted.append(i)
            continue
        key = race_key(m.group(2))
        if key not in known and len(key) == 1:
            # "race at unknown origin": one side only, the other access
            # unseen; it is a listed race when a listed pair has this
            # function (and the pair names nothing the series changes)
            pairs = [k for k in known if key[0] in k and len(k) > 1 and not touched & set(k)]
            if len(pairs) == 1:
                key = pairs[0]
        races.setdefault(key, []).append(i)
        if key not in known:
            frames = report_frames(lines, i) | {fn_name(f) for f in key}
            if tracing and not frames & (tracing | touched):
                print(f"note: KCSAN report with no tracing code in its stacks, not listed "
                      f"(a base race outside tracing; 'make kcsan-base' lists such races): "
                      f"{msg} at {a.log}:{i + 1}")
                continue
            unlisted.append(i)
        elif not known[key][0] or known[key][0].startswith("TODO"):
            unlisted.append(i)
            problems.append(f"known race without a reason at {known[key][1]}: {msg}")
        elif touched & set(key):
            unlisted.append(i)
            problems.append(f"KCSAN report in code the series changes ({', '.join(sorted(touched & set(key)))}), "
                            f"listed as a base-kernel race at {known[key][1]}: {msg}")
    for key, where in races.items():
        if key in known and not touched & set(key) and known[key][0] \
                and not known[key][0].startswith("TODO"):
            print(f"note: known base-kernel race, {len(where)} report(s): {' / '.join(key)} "
                  f"({known[key][0]}; {known[key][1]}), first at {a.log}:{where[0] + 1}")
    splats = unlisted

    shown = 0
    for i in splats:
        msg = KMSG.search(lines[i]).group(1).strip()
        site = fault_site(lines, i)
        problems.append(f"kernel splat: {msg}" + (f" ({site})" if site else ""))
        if shown < 5:
            shown += 1
            print(f"---- kernel splat at {a.log}:{i + 1} ----")
            for l in lines[max(0, i - 2): i + 25]:
                print(f"  {l}")
    if shown < len(splats):
        print(f"---- ({len(splats) - shown} more splats, see {a.log}) ----")

    for p in problems:
        print(f"FAIL {p}")
    failed += len(problems)
    if a.counts:
        with open(a.counts, "w") as f:
            f.write(f"{passed} {failed} {skipped}\n")
    if a.splats_only:
        print(f"{a.name}: " + ("FAILED" if failed else "ok (no kernel splats)"))
    else:
        print(f"{a.name}: {passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed else 0


# fault_site(lines, i): where the splat starting at lines[i] happened,
# from its register dump ("RIP: hrtimer_try_to_cancel+0xaa/0x100" on x86,
# "pc : ..." on arm64), for the one-line FAIL message that outlives a cut
# log; None when the next lines have none before another splat starts.
def fault_site(lines, i):
    for l in lines[i + 1: i + 30]:
        m = KMSG.search(l)
        if not m:
            continue
        if SPLAT.search(m.group(1)):
            return None
        s = SITE.search(m.group(1))
        if s:
            return f"{s.group(1)}: {s.group(2)}"
    return None


if __name__ == "__main__":
    sys.exit(main())
