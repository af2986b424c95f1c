#!/usr/bin/env python3
"""paragon's interaction-net reducer against HVM2 on this machine's CPU, in the same run.

For each program of HVM2's peer folder (../shared/peers/hvm2, or --peer DIR) it builds HVM2's
best CPU build (gen-c, log2(cores) threads, its net touched before its timer) and HVM2's gen-c
build as shipped (the same, without the pretouch), then runs paragon once untimed (its first run
builds the program's own kernel, as HVM2's are built before) and then paragon (`paragon run FILE
-s`, the device `auto` picks), HVM2's best and HVM2 as shipped one after another, --runs times,
and prints per program: whether the Result line and the interaction count equal the
program's .expected file for each, the MIPS each reports (median), paragon's over HVM2's best,
whole-process seconds (median) and paragon's over HVM2 as shipped, and peak RSS (largest).
Without the peer folder it says so and exits 0.

    bench/inet_vs_hvm2.py [--peer DIR] [--paragon BIN] [--runs N] [--programs A,B] [--device DEV]
                          [--markdown]
"""
import argparse
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PROGRAMS = ["stress_10", "sum_tree_d22", "fib32", "sum_rec_24", "sort_bitonic_16", "sort_radix"]


def parse_output(text):
    """Result, ITRS and MIPS as HVM2 prints them (paragon's -s prints the same lines)."""
    result = re.search(r"^Result: (.*)$", text, re.M)
    itrs = re.search(r"^- ITRS: (\d+)", text, re.M)
    mips = re.search(r"^- MIPS: ([0-9.]+)", text, re.M)
    return (result.group(1).strip() if result else None, int(itrs.group(1)) if itrs else None,
            float(mips.group(1)) if mips else None)


def run(cmd):
    """One whole process: its output, wall seconds and peak RSS in MiB (the kernel's count)."""
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    out = p.stdout.read()
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.monotonic() - t0
    if p.returncode != 0:
        sys.exit(f"inet_vs_hvm2: {' '.join(cmd)} exited {p.returncode}:\n{out.decode(errors='replace')[-2000:]}")
    return out.decode(errors="replace"), seconds, usage.ru_maxrss / 1024.0


def build(peer, program, l2, pretouch, out_dir):
    env = dict(os.environ, HVM2_OUT=out_dir)
    args = [os.path.join(peer, "build.sh"), os.path.join(peer, "programs", program + ".hvm"), "comp", str(l2)]
    if pretouch:
        args.append("pretouch")
    done = subprocess.run(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        sys.exit(f"inet_vs_hvm2: building {program} failed:\n{done.stderr[-2000:]}")
    return done.stdout.strip().splitlines()[-1]


def default_paragon():
    for b in ("build/paragon", "build-rel/paragon"):
        if os.access(os.path.join(ROOT, b), os.X_OK):
            return os.path.join(ROOT, b)
    sys.exit("inet_vs_hvm2: no paragon binary in build/ or build-rel/: build it first, or pass --paragon")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--peer", default=os.path.join(ROOT, "..", "shared", "peers", "hvm2"))
    ap.add_argument("--paragon", default=None)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--programs", default=",".join(PROGRAMS))
    ap.add_argument("--device", default="auto")
    ap.add_argument("--markdown", action="store_true", help="the table as Markdown (docs/benchmarks.md's)")
    a = ap.parse_args()
    peer = os.path.abspath(a.peer)
    if not os.path.isfile(os.path.join(peer, "build.sh")):
        print(f"inet_vs_hvm2: no HVM2 peer folder at {peer} (its build.sh): skipped")
        return 0
    if a.runs < 1:
        sys.exit("inet_vs_hvm2: --runs must be at least 1")
    paragon = a.paragon or default_paragon()
    programs = [p for p in a.programs.split(",") if p]
    for p in programs:
        if not os.path.isfile(os.path.join(peer, "programs", p + ".hvm")):
            sys.exit(f"inet_vs_hvm2: {p}.hvm is not in {peer}/programs")
    cores = os.cpu_count() or 1
    l2 = int(math.floor(math.log2(cores)))
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    print(f"# {cpu}, {cores} cores; HVM2 gen-c with {1 << l2} threads; paragon: {paragon} run -s "
          f"--device {a.device} (one untimed run first: its own kernel's build); {a.runs} alternating runs, "
          f"medians (RSS: largest)", flush=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="hvm2-bin-") as out_dir:
        for p in programs:
            want_result, want_itrs, _ = parse_output(open(os.path.join(peer, "programs", p + ".expected")).read())
            tools = {
                "paragon": [paragon, "run", os.path.join(peer, "programs", p + ".hvm"), "-s", "--device", a.device],
                "best": [build(peer, p, l2, True, out_dir)],
                "shipped": [build(peer, p, l2, False, out_dir)],
            }
            got = {t: [] for t in tools}
            # paragon builds a program's own kernel on its first run (a record tells later runs to
            # wait for it at once): one untimed run, as HVM2's builds above are before its runs
            run(tools["paragon"])
            for r in range(a.runs):
                order = list(tools) if r % 2 == 0 else list(reversed(tools))
                for t in order:
                    text, seconds, rss = run(tools[t])
                    got[t].append((parse_output(text), seconds, rss))
                    print(f"  {p} run {r + 1} {t}: {seconds:.2f} s", file=sys.stderr, flush=True)

            def ok(t):
                return all(res == want_result and itrs == want_itrs for (res, itrs, _), _, _ in got[t])

            def med(t, k):
                return statistics.median(g[0][2] if k == "mips" else g[1] for g in got[t])

            rows.append({
                "program": p,
                "equal": "yes" if ok("paragon") and ok("best") and ok("shipped") else "NO",
                "itrs": want_itrs,
                "mips_paragon": med("paragon", "mips"), "mips_best": med("best", "mips"),
                "s_paragon": med("paragon", "s"), "s_best": med("best", "s"), "s_shipped": med("shipped", "s"),
                "rss_paragon": max(g[2] for g in got["paragon"]), "rss_best": max(g[2] for g in got["best"]),
                "rss_shipped": max(g[2] for g in got["shipped"]),
            })
    head = ["program", "result+ITRS equal", "ITRS", "paragon MIPS", "HVM2 best MIPS", "paragon/best",
            "paragon s", "HVM2 best s", "HVM2 shipped s", "shipped/paragon s", "paragon RSS MiB", "HVM2 best RSS MiB",
            "HVM2 shipped RSS MiB"]
    body = [[r["program"], r["equal"], str(r["itrs"]), f"{r['mips_paragon']:.1f}", f"{r['mips_best']:.1f}",
             f"{r['mips_paragon'] / r['mips_best']:.2f}x", f"{r['s_paragon']:.2f}", f"{r['s_best']:.2f}",
             f"{r['s_shipped']:.2f}", f"{r['s_shipped'] / r['s_paragon']:.2f}x", f"{r['rss_paragon']:.0f}",
             f"{r['rss_best']:.0f}", f"{r['rss_shipped']:.0f}"] for r in rows]
    if a.markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for b in body:
            print("| " + " | ".join(b) + " |")
    else:
        widths = [max(len(h), *(len(b[i]) for b in body)) for i, h in enumerate(head)]
        for line in [head] + body:
            print("  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(line, widths))))
    return 0 if all(r["equal"] == "yes" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
