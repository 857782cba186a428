#!/usr/bin/env python3
"""The results file and the plots of make bench (scripts/bench.sh).

    bench-report.py RESULTS TOOLS_CSV OUT [--mainline NAME] [--dry-run]
    bench-report.py --plots OUT          (draw OUT's plots from OUT/results.csv)
    bench-report.py --check OUT          (make check: the plots match, the bounds hold)

RESULTS holds the "# result:" lines of the guests (user/bench.c), each
prefixed with kernel=NAME; TOOLS_CSV the lines of bench-tools.sh
(workload,tool,events,lost,busy_instr,total,marginal,tracing,own).  Writes
OUT/results.csv (kernel,measure,variant,size,figure,value, sorted), then the
plots OUT/*.svg with gnuplot, says which figures and plots changed, and exits
with 1 when a bound is passed (environment MAX_DRAIN, MAX_WRITER).
--dry-run (a part of the suite) writes RESULTS' figures beside it (.csv) and
compares them with OUT's, which it leaves as they are.
--plots only draws; --check draws in memory and compares with OUT's plots.
"""
import csv
import io
import os
import subprocess
import sys
import tempfile

KERNELS = ["ours", "base", "6.12+ours", "mainline"]
METHODS = ["read", "splice-null", "splice-file", "mmap", "parse"]
SIZES = ["4", "8", "16", "64", "512"]
HEADER = ["kernel", "measure", "variant", "size", "figure", "value"]


def fmt(v):
    return f"{v:.2f}" if isinstance(v, float) else str(v)


def parse_results(path, tools_path):
    rows = {}

    def put(k, measure, variant, size, figure, value):
        rows[(k, measure, variant, str(size), figure)] = fmt(value)

    for line in open(path):
        kv = dict(f.split("=", 1) for f in line.split())
        k, m = kv["kernel"], kv["measure"]
        if m == "drain":
            ev, sb, ns = int(kv["events"]), int(kv["subbufs"]), int(kv["ns"])
            key = (k, m, kv["method"], kv["subbuf_kb"])
            put(*key, "events", ev)
            put(*key, "subbufs", sb)
            put(*key, "calls", int(kv["calls"]))
            put(*key, "ns", ns)
            put(*key, "ns_per_event", ns / ev)
            put(*key, "ns_per_subbuf", round(ns / sb))
            if "max_call_ns" in kv:
                put(*key, "max_call_ns", int(kv["max_call_ns"]))
                put(*key, "max_call_events", int(kv["max_call_events"]))
        elif m == "writer":
            ev, ns = int(kv["events"]), int(kv["ns"])
            key = (k, m, kv["event"] + ("-mapped" if kv["mapped"] == "1" else ""), "")
            put(*key, "events", ev)
            put(*key, "ns", ns)
            put(*key, "ns_per_event", ns / ev)
        elif m == "setup":
            put(k, m, "map", kv["buffer_mb"], "ns", int(kv["map_ns"]))
            put(k, m, "unmap", kv["buffer_mb"], "ns", int(kv["unmap_ns"]))
            put(k, m, "map", kv["buffer_mb"], "bytes", int(kv["bytes"]))
        else:
            sys.exit(f"ERROR: unknown measure in {line!r}")
    if tools_path and os.path.exists(tools_path):
        names = ["events", "lost", "busy_instr", "total", "marginal", "tracing", "own"]
        for r in csv.reader(open(tools_path)):
            if not r:
                continue
            workload, tool, vals = r[0], r[1], r[2:]
            for n, v in zip(names, vals):
                put("ours", "tools-" + workload, tool, "", n, int(v))
    return rows


def write_csv(rows, path):
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(HEADER)
    for key in sorted(rows):
        w.writerow(list(key) + [rows[key]])
    text = out.getvalue()
    if path:
        with open(path, "w") as f:
            f.write(text)
    return text


def read_csv(path):
    rows = {}
    if not os.path.exists(path):
        return rows
    r = csv.reader(open(path))
    if next(r, None) != HEADER:
        return rows
    for line in r:
        rows[tuple(line[:5])] = line[5]
    return rows


def get(rows, *key):
    v = rows.get(tuple(str(k) for k in key))
    return float(v) if v is not None else None


def check_bounds(rows):
    max_drain = float(os.environ.get("MAX_DRAIN", "0.85"))
    max_writer = float(os.environ.get("MAX_WRITER", "1.02"))
    bad = []
    print("\nbounds:")
    for k in ["ours", "6.12+ours", "mainline"]:
        mm = get(rows, k, "drain", "mmap", 4, "ns_per_event")
        rd = get(rows, k, "drain", "read", 4, "ns_per_event")
        if mm is None or rd is None:
            continue
        r = mm / rd
        enforced = k != "mainline"
        ok = r <= max_drain or not enforced
        print(f"  {k:10} mapping drain / read() at 4 KiB: {r:.3f}"
              f" ({'limit ' + str(max_drain) if enforced else 'not bounded'})"
              f"{'' if ok else '  <-- over'}")
        if not ok:
            bad.append(f"{k}: mapping drain {r:.3f} x read()")
    for v in ["marker", "syscall", "marker-mapped", "syscall-mapped"]:
        base = get(rows, "base", "writer", v.replace("-mapped", ""), "", "ns_per_event")
        ours = get(rows, "ours", "writer", v, "", "ns_per_event")
        if base is None or ours is None:
            continue
        r = ours / base
        ok = r <= max_writer
        print(f"  ours       writer {v:15} / base: {r:.4f} (limit {max_writer})"
              f"{'' if ok else '  <-- over'}")
        if not ok:
            bad.append(f"writer {v}: {r:.4f} x base")
    return bad


def table(rows, mainline):
    """The figures as fixed-width text tables."""
    out = []
    add = out.append
    add("\ndrain, instructions per event (per sub-buffer), -icount: 1 ns = 1 instruction")
    for k in KERNELS:
        sizes = ["4"] if k == "base" else SIZES
        add(f"  {k}{' (' + mainline + ')' if k == 'mainline' and mainline else ''}")
        add("    " + f"{'KiB':>5}" + "".join(f"{m:>20}" for m in METHODS))
        for s in sizes:
            cells = []
            for m in METHODS:
                pe = get(rows, k, "drain", m, s, "ns_per_event")
                ps = get(rows, k, "drain", m, s, "ns_per_subbuf")
                cells.append("-" if pe is None else f"{pe:.2f} ({ps:.0f})")
            add("    " + f"{s:>5}" + "".join(f"{c:>20}" for c in cells))
    add("\nwriter, instructions per event")
    add("    " + f"{'':10}" + "".join(f"{v:>16}" for v in
                                        ["marker", "syscall", "marker-mapped", "syscall-mapped"]))
    for k in KERNELS:
        cells = [get(rows, k, "writer", v, "", "ns_per_event")
                 for v in ["marker", "syscall", "marker-mapped", "syscall-mapped"]]
        add("    " + f"{k:10}" + "".join(f"{'-' if c is None else f'{c:.2f}':>16}"
                                           for c in cells))
    add("\nmapping setup (open+mmap) / teardown (munmap+close), instructions")
    for k in KERNELS:
        cells = []
        for mb in ["1", "16", "128"]:
            a, b = get(rows, k, "setup", "map", mb, "ns"), get(rows, k, "setup", "unmap", mb, "ns")
            if a is not None:
                cells.append(f"{mb} MiB {a:.0f}/{b:.0f}")
        if cells:
            add(f"    {k:10} " + ", ".join(cells))
    tools = sorted({(key[1], key[2]) for key in rows if key[1].startswith("tools-")})
    if tools:
        add("\ntools on ours, instructions per event (writer + consumer)")
        add(f"    {'workload':10} {'tool':22} {'events':>8} {'lost':>6} {'total':>7}"
              f" {'marginal':>9} {'tracing':>8} {'own':>6}")
        for w, t in tools:
            f = {n: get(rows, "ours", w, t, "", n)
                 for n in ["events", "lost", "total", "marginal", "tracing", "own"]}
            add(f"    {w[6:]:10} {t:22} {f['events']:8.0f} {f['lost']:6.0f} {f['total']:7.0f}"
                  f" {f['marginal']:9.0f} {f['tracing']:8.0f}"
                  + (f" {f['own']:6.0f}" if f["own"] is not None else ""))
        for w in sorted({w for w, _ in tools}):
            for a, b in [("ftmmap", "trace-cmd"), ("ftmmap", "trace-cmd-v6"),
                         ("ftmmap-stream", "trace-cmd-stream")]:
                ra, rb = (get(rows, "ours", w, a, "", "total"),
                          get(rows, "ours", w, b, "", "total"))
                oa, ob = (get(rows, "ours", w, a, "", "own"),
                          get(rows, "ours", w, b, "", "own"))
                if ra is not None and rb:
                    add(f"    {w[6:]:10} {a} / {b}: total {ra / rb:.3f}"
                        + (f", own {oa / ob:.3f}" if oa is not None and ob else ""))
    return "\n".join(out) + "\n"


GNUPLOT_HEAD = """set terminal svg size 900,480 font "sans,11" background "white"
set datafile missing "-"
set key outside right top
set grid ytics
"""


def plots(rows, out):
    """Draw out/*.svg from rows; returns {name: svg text}."""
    tmp = tempfile.mkdtemp()

    def dat(name, lines):
        p = os.path.join(tmp, name)
        with open(p, "w") as f:
            f.write("\n".join(lines) + "\n")
        return p

    def v(x):
        return "-" if x is None else f"{x:.2f}"

    scripts = {}
    # 1. drain per event against the sub-buffer size, one panel a kernel
    panels = []
    for k in ["ours", "6.12+ours", "mainline"]:
        lines = ["# kib " + " ".join(METHODS)]
        for s in SIZES:
            lines.append(s + " " + " ".join(v(get(rows, k, "drain", m, s, "ns_per_event"))
                                            for m in METHODS))
        p = dat(f"drain-{k}.dat", lines)
        plot = ", ".join(f"'{p}' using 1:{i + 2} with linespoints title '{m}'"
                         + (" dt 2 lc rgb 'black'" if m == "parse" else "")
                         for i, m in enumerate(METHODS))
        panels.append(f"set title '{k}'\nplot {plot}\n")
    scripts["drain"] = (GNUPLOT_HEAD + "set terminal svg size 1200,420\n"
                        "set logscale xy 2\nset xtics (4,8,16,64,512)\n"
                        "set xlabel 'sub-buffer size (KiB)'\n"
                        "set ylabel 'instructions per event'\nset key inside top right\n"
                        "set multiplot layout 1,3\n" + "".join(panels) + "unset multiplot\n")
    # 2. at 4 KiB: every kernel, every method, per sub-buffer
    lines = ["kernel " + " ".join(METHODS[:4])]
    for k in KERNELS:
        lines.append(f'"{k}" ' + " ".join(v(get(rows, k, "drain", m, 4, "ns_per_subbuf"))
                                           for m in METHODS[:4]))
    p = dat("drain4.dat", lines)
    scripts["drain-4k"] = (GNUPLOT_HEAD + "set style data histogram\n"
                           "set style histogram clustered gap 1\nset style fill solid border -1\n"
                           "set ylabel 'instructions per 4 KiB sub-buffer'\nset yrange [0:*]\n"
                           f"plot for [i=2:5] '{p}' using i:xtic(1) title columnheader(i)\n")
    # 3. writer
    wv = ["marker", "syscall", "marker-mapped", "syscall-mapped"]
    lines = ["event " + " ".join(f'"{k}"' for k in KERNELS)]
    for w in wv:
        lines.append(f'"{w}" ' + " ".join(v(get(rows, k, "writer", w, "", "ns_per_event"))
                                           for k in KERNELS))
    p = dat("writer.dat", lines)
    scripts["writer"] = (GNUPLOT_HEAD + "set style data histogram\n"
                         "set style histogram clustered gap 1\nset style fill solid border -1\n"
                         "set ylabel 'instructions per event (writer)'\nset yrange [0:*]\n"
                         f"plot for [i=2:5] '{p}' using i:xtic(1) title columnheader(i)\n")
    # 4. setup and teardown against the buffer size
    cols = [(k, op) for k in ["ours", "6.12+ours", "mainline"] for op in ["map", "unmap"]]
    lines = ["# mb " + " ".join(f"{k}-{op}" for k, op in cols)]
    for mb in ["1", "16", "128"]:
        lines.append(mb + " " + " ".join(v(get(rows, k, "setup", op, mb, "ns")) for k, op in cols))
    p = dat("setup.dat", lines)
    plot = ", ".join(f"'{p}' using 1:{i + 2} with linespoints title '{k} {op}'"
                     + (" dt 2" if op == "unmap" else "")
                     for i, (k, op) in enumerate(cols))
    scripts["setup"] = (GNUPLOT_HEAD + "set logscale xy\nset xtics (1,16,128)\n"
                        "set xlabel 'buffer size per CPU (MiB)'\n"
                        "set ylabel 'instructions'\n" f"plot {plot}\n")
    # 5. tools
    tools = sorted({key[2] for key in rows if key[1].startswith("tools-")})
    works = sorted({key[1] for key in rows if key[1].startswith("tools-")})
    if tools:
        lines = ["what " + " ".join(f'"{t}"' for t in tools)]
        for w in works:
            for fig in ["total", "tracing"]:
                lines.append(f'"{w[6:]} {fig}" ' + " ".join(v(get(rows, "ours", w, t, "", fig))
                                                            for t in tools))
        p = dat("tools.dat", lines)
        # streams format every event: ten times what recording costs
        scripts["tools"] = (GNUPLOT_HEAD + "set style data histogram\n"
                            "set style histogram clustered gap 1\n"
                            "set style fill solid border -1\n"
                            "set logscale y\n"
                            "set ylabel 'instructions per event (log scale)'\n"
                            "set yrange [100:*]\n"
                            f"plot for [i=2:{len(tools) + 1}] '{p}' using i:xtic(1)"
                            " title columnheader(i)\n")
    svgs = {"tables.md": "# make bench: the figures of docs/bench/results.csv\n\n"
                         "Drawn by scripts/bench-report.py; instructions under -icount"
                         " (1 guest ns = 1 instruction).\n\n```\n" + table(rows, "")
                         + "```\n"}
    for name, script in scripts.items():
        r = subprocess.run(["gnuplot"], input=script, capture_output=True, text=True)
        if r.returncode or not r.stdout.startswith("<?xml"):
            sys.exit(f"ERROR: gnuplot failed on {name}: {r.stderr.strip()[:500]}")
        svgs[name + ".svg"] = r.stdout
    for f in os.listdir(tmp):
        os.unlink(os.path.join(tmp, f))
    os.rmdir(tmp)
    return svgs


def write_plots(svgs, out):
    changed = []
    for name, text in svgs.items():
        path = os.path.join(out, name)
        old = open(path).read() if os.path.exists(path) else None
        if old != text:
            changed.append(name)
            with open(path, "w") as f:
                f.write(text)
    return changed


def main(argv):
    if argv[:1] in (["--plots"], ["--check"]):
        out = argv[1]
        rows = read_csv(os.path.join(out, "results.csv"))
        if not rows:
            sys.exit(f"ERROR: no results in {out}/results.csv")
        svgs = plots(rows, out)
        if argv[0] == "--plots":
            write_plots(svgs, out)
            return 0
        # --check: the committed plots are those of the committed results,
        # and the committed results keep the bounds
        stale = [n for n, t in svgs.items()
                 if not os.path.exists(os.path.join(out, n))
                 or open(os.path.join(out, n)).read() != t]
        bad = check_bounds(rows)
        print(f"{len(rows)} figures in {os.path.relpath(out)}/results.csv, "
              f"{len(svgs)} plots drawn from them")
        if stale:
            print("ERROR: plots that do not match results.csv: " + ", ".join(stale)
                  + " (scripts/bench-report.py --plots docs/bench redraws them)")
        if bad:
            print("ERROR: committed figures beyond the bounds: " + "; ".join(bad))
        return 1 if stale or bad else 0
    results, tools, out = argv[:3]
    dry = "--dry-run" in argv
    mainline = argv[argv.index("--mainline") + 1] if "--mainline" in argv else ""
    rows = parse_results(results, tools)
    print(table(rows, mainline))
    bad = check_bounds(rows)
    csv_path = os.path.join(out, "results.csv")
    old = read_csv(csv_path)
    if dry:
        # A part of the suite: compare the figures it made, write them aside
        write_csv(rows, os.path.splitext(results)[0] + ".csv")
        diff = [k for k in sorted(rows) if old.get(k) != rows[k]]
        print(f"\n{len(rows)} figures, {len(rows) - len(diff)} as in "
              f"{os.path.relpath(csv_path)}, {len(diff)} changed or new")
        for k in diff[:40]:
            print(f"  {','.join(k)}: {old.get(k, '(none)')} -> {rows[k]}")
    else:
        write_csv(rows, csv_path)
        diff = [k for k in sorted(set(old) | set(rows)) if old.get(k) != rows.get(k)]
        print(f"\n{os.path.relpath(csv_path)}: {len(rows)} figures, "
              f"{len(rows) - len(diff) if old else 0} unchanged, {len(diff)} changed or new")
        for k in diff[:40]:
            print(f"  {','.join(k)}: {old.get(k, '(none)')} -> {rows.get(k, '(gone)')}")
        if len(diff) > 40:
            print(f"  ... and {len(diff) - 40} more")
        changed = write_plots(plots(rows, out), out)
        print(f"plots and tables changed: {', '.join(changed) if changed else 'none'}")
    if bad:
        print("ERROR: beyond the bounds: " + "; ".join(bad))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
