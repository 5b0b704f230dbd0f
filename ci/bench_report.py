#!/usr/bin/python3
"""bench_report.py - write docs/performance.md and docs/performance-get.png from
what ci/bench.sh measured: pcbench's summary lines (one per run) and the other
benchmarks' output as they printed it.

Every figure on the page comes from those files; nothing here is typed by hand
but the words around them. Ratios are taken within one run, then given as the
range over the rounds.

Not for: measuring (ci/bench.sh and the tools do that).
"""
import argparse
import datetime
import math
import os
import re
import platform
import statistics
import subprocess
import sys
import textwrap

# The width of the page's generated paragraphs.
WIDTH = 84

# The targets, as (title, ratio key, bound, whether the ratio must stay
# at or above the bound (else at or below)).
TARGETS = [
    ("get >= 1.0x the best memcached client", "get_mc", 1.0, True),
    ("get >= 1.5x the best Redis client", "get_redis", 1.5, True),
    ("get >= 0.8x the ceiling", "get_ceiling", 0.8, True),
    ("set >= 1.0x memcached's best set", "set_mc", 1.0, True),
    ("exists >= 1.0x Redis's best exists (keys/s)", "exists_redis", 1.0, True),
    ("p50 per batch <= memcached's (store p50 / memcached p50)", "p50_mc", 1.0, False),
]


def parse(path):
    """Runs as dicts: label, then every key=value of the summary line."""
    runs = []
    with open(path) as f:
        for line in f:
            words = line.split()
            if len(words) < 2 or words[1] != "summary":
                continue
            run = {"label": words[0]}
            for w in words[2:]:
                k, _, v = w.partition("=")
                try:
                    run[k] = float(v)
                except ValueError:
                    run[k] = v
            runs.append(run)
    return runs


def ratio(a, b):
    return a / b if a and b else 0.0


def ratios(r):
    """The ratios of one run."""
    return {
        "get_ceiling": ratio(r["get_gbps"], r["ceiling_gbps"]),
        "get_mc": ratio(r["get_gbps"], r.get("memcached_get_gbps", 0)),
        "get_redis": ratio(r["get_gbps"], r.get("redis_get_gbps", 0)),
        "set_mc": ratio(r["set_gbps"], r.get("memcached_set_gbps", 0)),
        "set_redis": ratio(r["set_gbps"], r.get("redis_set_gbps", 0)),
        "exists_redis": ratio(r["exists_kps"], r.get("redis_exists_kps", 0)),
        "exists_mc": ratio(r["exists_kps"], r.get("memcached_exists_kps", 0)),
        "p50_mc": ratio(r["get_p50_us"], r.get("memcached_get_p50_us", 0)),
        # lookups answered rather than bytes that hit: what a miss the placement
        # made (a key its bucket evicted) leaves of the comparison
        "lookups_mc": ratio(r["get_gbps"] / r["get_hit"] if r.get("get_hit") else 0,
                            r.get("memcached_get_gbps", 0) / r["memcached_get_hit"]
                            if r.get("memcached_get_hit") else 0),
        "mc_ceiling": ratio(r.get("memcached_get_gbps", 0), r["ceiling_gbps"]),
        "redis_ceiling": ratio(r.get("redis_get_gbps", 0), r["ceiling_gbps"]),
        "stream_ceiling": ratio(r.get("stream_gbps", 0), r["ceiling_gbps"]),
        "batches_ceiling": ratio(r.get("batches_gbps", 0), r["ceiling_gbps"]),
        "pages_ceiling": ratio(r.get("pages_gbps", 0), r["ceiling_gbps"]),
        "get_pages": ratio(r["get_gbps"], r.get("pages_gbps", 0)),
        "mc_pages": ratio(r.get("memcached_get_gbps", 0), r.get("pages_gbps", 0)),
    }


def overflow(ways, load):
    """The share of keys that find their bucket full when keys land in buckets of
    `ways` at random, `load` keys a slot: E[(X - ways)+] / E[X], X ~ Poisson(ways x
    load), the keys a bucket is asked to hold."""
    lam = ways * load
    if lam <= 0:
        return 0.0
    e = sum((x - ways) * math.exp(-lam + x * math.log(lam) - math.lgamma(x + 1))
            for x in range(ways + 1, ways + 20 + int(10 * lam)))
    return e / lam


def span(values, fmt="%.2f"):
    values = [v for v in values if v]
    if not values:
        return "-"
    lo, hi = min(values), max(values)
    return fmt % lo if fmt % lo == fmt % hi else (fmt % lo) + "-" + (fmt % hi)


def kib(page):
    return "%d KiB" % (int(page) // 1024)


def by_page(runs, label):
    pages = {}
    for r in runs:
        if r["label"] == label:
            pages.setdefault(int(r["page"]), []).append(r)
    return dict(sorted(pages.items()))


def who(runs, key):
    """The client (or stream) that was best, and in how many of the runs."""
    names = [r.get(key, "-") for r in runs]
    common = max(names, key=names.count)  # a tie: the first run's
    return common if names.count(common) == len(names) else "%s (%d of %d)" % (common, names.count(common), len(names))


def congestion():
    try:
        with open("/proc/sys/net/ipv4/tcp_congestion_control") as f:
            return f.read().strip()
    except OSError:
        return "?"


def machine():
    model = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
        with open("/proc/meminfo") as f:
            mem = int(f.readline().split()[1]) // (1024 * 1024)
    except OSError:
        mem = 0
    osname = "?"
    try:
        with open("/etc/os-release") as f:
            for line in f:
                if line.startswith("PRETTY_NAME="):
                    osname = line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return "%s, %d CPUs, %d GiB, %s, Linux %s" % (model, os.cpu_count() or 0, mem, osname, platform.release())


def versions():
    out = []
    for cmd in (["memcached", "-V"], ["redis-server", "--version"]):
        try:
            out.append(subprocess.run(cmd, capture_output=True, text=True, check=False).stdout.split(" sha=")[0].strip())
        except OSError:
            out.append(cmd[0] + " ?")
    return ", ".join(out)


def plot(ws, out):
    """GB/s of gets by page size: the store, the best memcached and Redis clients,
    the ceiling (medians over the rounds)."""
    data = os.path.join(out, ".performance-get.dat")
    png = os.path.join(out, "performance-get.png")
    with open(data, "w") as f:
        for page, runs in ws.items():
            med = lambda k: statistics.median(r.get(k, 0) for r in runs)
            f.write("\"%s\" %.3f %.3f %.3f %.3f\n" % (kib(page), med("get_gbps"), med("memcached_get_gbps"),
                                                    med("redis_get_gbps"), med("ceiling_gbps")))
    script = """set terminal pngcairo size 800,480 noenhanced
set output '%s'
set title 'get throughput over tcp loopback, 64-page batches (median of the rounds)'
set ylabel 'GB/s'
set xlabel 'page size'
set yrange [0:*]
set grid ytics
set key top left
set style data linespoints
plot '%s' using 2:xtic(1) title 'peercache slotmap' lw 2 pt 7, \\
     '' using 3 title 'memcached (best client)' lw 2 pt 5, \\
     '' using 4 title 'Redis (best client)' lw 2 pt 9, \\
     '' using 5 title 'ceiling (fastest raw TCP transfer)' lw 2 dt 2 pt 1
""" % (png, data)
    subprocess.run(["gnuplot"], input=script, text=True, check=True)
    os.unlink(data)


def other_targets(other):
    """The tier's and the rxe VM's targets, from the lines pctierbench and
    ci/rxe-vm.sh printed: rows of (title, bound, worst ratio or None, where); and per
    block size pctierbench ran, (block, raw random block reads as a share of raw
    sequential reads, promotion in random order as a share of the former)."""
    tier, rxe_get, rxe_set, block, rxe_page = [], [], [], "?", "?"
    tier_random, seq, rnd = [], 0.0, 0.0
    for line in other.splitlines():
        m = re.match(r"pctierbench: \d+ blocks of (\d+) B", line)
        if m:
            block = kib(int(m.group(1)))
        m = re.match(r"raw (sequential read|random block reads)\s+([\d.]+)", line)
        if m:
            seq, rnd = (float(m.group(2)), rnd) if m.group(1) == "sequential read" else (seq, float(m.group(2)))
        m = re.match(r"(demote|promote, write order|promote, random order)( \(disk_put\))?\s+[\d.]+\s+([\d.]+)", line)
        if m:
            tier.append((float(m.group(3)), "%s, %s blocks" % (m.group(1), block)))
        m = re.match(r"promote, random order.*\(([\d.]+) of raw random reads\)", line)
        if m and seq:
            tier_random.append((block, rnd / seq, float(m.group(1))))
        m = re.match(r"pcbench over rxe: (\S+) pages, batch (\d+), read policy (\S+)", line)
        if m:
            rxe_page = "%s, batch %s, %s" % (m.group(1).replace("KiB", " KiB"), m.group(2), m.group(3))
        m = re.match(r"\s*get / ib_read_bw ([\d.]+) .*set / ib_write_bw ([\d.]+)", line)
        if m:
            rxe_get.append((float(m.group(1)), rxe_page))
            rxe_set.append((float(m.group(2)), rxe_page))
        # what a page cost, printed after the ratios of the same run
        m = re.match(r"\s*a page: get .*?([\d.]+) packets \(ib_read_bw [\d.]+ us, ([\d.]+)\)"
                     r".*set .*?([\d.]+) packets \(ib_write_bw [\d.]+ us, ([\d.]+)\)", line)
        if m and rxe_get and rxe_set:
            for v, mine, ref, tool in ((rxe_get, 1, 2, "ib_read_bw"), (rxe_set, 3, 4, "ib_write_bw")):
                v[-1] = (v[-1][0], "%s; %s packets a page, %s's %s" % (v[-1][1], m.group(mine), tool, m.group(ref)))
    rows = []
    for title, bound, vals in (("tier demote and promote >= 0.8x raw sequential O_DIRECT", 0.8, tier),
                               ("rxe VM: get >= 0.9x ib_read_bw of the page size", 0.9, rxe_get),
                               ("rxe VM: set >= 0.9x ib_write_bw of the page size", 0.9, rxe_set)):
        worst = min(vals) if vals else (None, "")
        rows.append((title, bound, worst[0], worst[1]))
    return rows, tier_random


def write(args, runs, other):
    ws = by_page(runs, "ws")
    occ = by_page(runs, "occ80")
    started = args.started or datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    L = []
    w = L.append
    w("# peercache performance figures")
    w("")
    w("Written by `ci/bench.sh` (with `ci/bench_report.py`); every figure below comes from")
    w("that run. Do not edit by hand: run the script again.")
    w("")
    w("- **Run:** started %s, commit `%s`, %d round(s) per page size" % (started, args.commit, args.rounds))
    w("- **Machine:** %s" % machine())
    w("- **Peers:** %s" % versions())
    w("- **Placement:** one pcd node, memcached (`-t 1 -I 1m`) and redis-server on CPU 1;")
    w("  pcbench (the store's client and every reference client) on CPU 0; the ceiling's")
    w("  sender on CPU 1, its receiver on CPU 0. Loopback TCP.")
    if args.cc:
        w("- **Congestion control:** %s for the store and its peers (the machine's is %s):" % (args.cc, congestion()))
        w("  the store's from its topology (`store.tcp_congestion`), memcached's and")
        w("  Redis's through `build/tools/libpc_bench_cc.so` preloaded, which sets it on")
        w("  their listening sockets (`tools/pcbench/bench_cc_preload.c`; neither has an")
        w("  option for it), each listener checked; the ceiling's tuned transfers with cubic.")
        if args.cc == "cubic":
            w("  Cubic is Debian's default and does not pace (docs/deployment.md); the store")
            w("  against the machine's own is under \"Other benchmarks\".")
    else:
        w("- **Congestion control:** the machine's (%s) for the store and its peers; the" % congestion())
        w("  ceiling's tuned transfers with cubic.")
    w("- **Shape:** 64 keys a batch; each set runs one untimed pass that puts the keys in")
    w("  place, then 3 timed passes; gets 3 passes; exists 3 passes, or more until they")
    w("  make 512 batches (a pass of few large pages' keys takes milliseconds). A working")
    w("  set of 256 MiB (half of a 512 MiB slot segment), then 80 % slot occupancy, each in")
    w("  every round.")
    w("")
    w("This is a shared 2-core VM whose speed varies from minute to minute: read the")
    w("ratios, each taken within one run (store, ceiling and references back to back),")
    w("given as the range over the rounds.")
    w("")
    w("## References")
    w("")
    w("The ceiling is the fastest of raw TCP transfers between the same cores, measured")
    w("before and after the store's ops (`tools/pcbench/bench_ref_stream.c`): three")
    w("variants (plain; tuned: 1 MiB writes, `TCP_NODELAY`, 8 MiB socket buffers, cubic")
    w("congestion control, which does not pace; busy: tuned with a spinning reader), each")
    w("as a stream and in two batch-by-batch shapes (\"The ceiling's shapes\"). A peer's")
    w("figure is the best of its clients per op")
    w("(`tools/pcbench/bench_ref_*.c`): for memcached, pipelined meta commands")
    w("(`ms`/`mg ... v q`/`mn`), multi-key `get`, libmemcached (`memcached_mget` +")
    w("fetch) and a naive one-request-at-a-time client; for Redis, `MSET`/`MGET`,")
    w("pipelined `SET`/`GET`/`EXISTS`, hiredis pipelining and a naive client. The raw")
    w("clients receive values straight into preallocated page buffers (the store's and")
    w("every client's start at a 4 KiB boundary, as a serving engine's KV pool does,")
    w("`tools/pcbench/pcbench_page.h`), a value larger")
    w("than 64 KiB 64 KiB a receive, and poll 50 us before they sleep, as the store's")
    w("client does (`store.tcp_poll_us`; it takes a response of more than 1 MiB from")
    w("a sender that paces, as bbr does, in 64 KiB receives, `backends/tcp/tcp_sock.c`).")
    w("Every client's values are checked against the page its key names. The store")
    w("and every reference client run in %d interleaved tries (store, Redis," % args.tries)
    w("memcached, then all again) and each keeps its best try, so that the")
    w("machine's drift over a run decides no ratio and every party gets as many tries.")
    w("")
    w("![get GB/s by page size](performance-get.png)")
    w("")
    w("## Get, 256 MiB working set")
    w("")
    w("| page | store GB/s | memcached GB/s (client) | Redis GB/s (client) | ceiling GB/s (variant) | store / ceiling | memcached / ceiling | Redis / ceiling |")
    w("|---|---|---|---|---|---|---|---|")
    for page, rs in ws.items():
        R = [ratios(r) for r in rs]
        w("| %s | %s | %s (%s) | %s (%s) | %s (%s) | %s | %s | %s |" % (
            kib(page), span([r["get_gbps"] for r in rs]),
            span([r.get("memcached_get_gbps", 0) for r in rs]), who(rs, "memcached_get_by"),
            span([r.get("redis_get_gbps", 0) for r in rs]), who(rs, "redis_get_by"),
            span([r["ceiling_gbps"] for r in rs]), who(rs, "ceiling_by"),
            span([x["get_ceiling"] for x in R]), span([x["mc_ceiling"] for x in R]),
            span([x["redis_ceiling"] for x in R])))
    w("")
    w("| page | store / memcached | store / Redis | store p50 us | memcached p50 us | store p50 / memcached p50 | store hit rate | memcached hit rate |")
    w("|---|---|---|---|---|---|---|---|")
    for page, rs in ws.items():
        R = [ratios(r) for r in rs]
        w("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
            kib(page), span([x["get_mc"] for x in R]), span([x["get_redis"] for x in R]),
            span([r["get_p50_us"] for r in rs], "%.0f"), span([r.get("memcached_get_p50_us", 0) for r in rs], "%.0f"),
            span([x["p50_mc"] for x in R]), span([r.get("get_hit", 0) for r in rs], "%.3f"),
            span([r.get("memcached_get_hit", 0) for r in rs], "%.3f")))
    w("")
    if any(r.get("pages_gbps") for rs in ws.values() for r in rs):
        w("## The ceiling's shapes")
        w("")
        w("A stream reads its buffer in order and never waits; a get does neither. Every")
        w("client's get is a round trip: it asks for a batch and has all of it before it")
        w("asks for the next, so nothing moves while the request crosses and the last bytes")
        w("land. And a store's server sends the pages the batch names from wherever they lie")
        w("in its memory. pcbench runs each variant of the stream in three shapes")
        w("(`tools/pcbench/bench_ref_stream.c`, no protocol, nothing checked): the stream;")
        w("one batch in flight, asked for with a byte and received before the next, the")
        w("sender walking its buffer in order; and the same with each batch sent as its")
        w("pages from random places of the buffer in one `sendmsg`. The ceiling is the")
        w("fastest of all nine (a shape that adds work and still moves the bytes faster")
        w("shows that the stream was no limit). GB/s of each shape's best variant, and")
        w("each as a share of the ceiling:")
        w("")
        w("| page | batch | stream | one batch in flight | its pages from random places | store / pages | memcached / pages |")
        w("|---|---|---|---|---|---|---|")
        for page, rs in ws.items():
            R = [ratios(r) for r in rs]
            cell = lambda shape: "%s (%s; %s)" % (span([r.get(shape + "_gbps", 0) for r in rs]), who(rs, shape + "_by"),
                                                 span([x[shape + "_ceiling"] for x in R]))
            w("| %s | %s | %s | %s | %s | %s | %s |" % (
                kib(page), kib(page * rs[0]["batch"]), cell("stream"), cell("batches"), cell("pages"),
                span([x["get_pages"] for x in R]), span([x["mc_pages"] for x in R])))
        w("")
    w("## Set and exists, 256 MiB working set")
    w("")
    w("| page | store set GB/s | memcached set GB/s (client) | Redis set GB/s (client) | set / memcached | set / Redis | store exists keys/s | Redis exists keys/s | exists / Redis | exists / memcached (meta `mg`) |")
    w("|---|---|---|---|---|---|---|---|---|---|")
    for page, rs in ws.items():
        R = [ratios(r) for r in rs]
        w("| %s | %s | %s (%s) | %s (%s) | %s | %s | %s | %s | %s | %s |" % (
            kib(page), span([r["set_gbps"] for r in rs]),
            span([r.get("memcached_set_gbps", 0) for r in rs]), who(rs, "memcached_set_by"),
            span([r.get("redis_set_gbps", 0) for r in rs]), who(rs, "redis_set_by"),
            span([x["set_mc"] for x in R]), span([x["set_redis"] for x in R]),
            span([r["exists_kps"] for r in rs], "%.0f"), span([r.get("redis_exists_kps", 0) for r in rs], "%.0f"),
            span([x["exists_redis"] for x in R]), span([x["exists_mc"] for x in R])))
    w("")
    if occ:
        w("## 80 % slot occupancy")
        w("")
        w("| page | keys | store get GB/s | get / memcached | get / Redis | get / ceiling | set / memcached | p50 / memcached p50 | store hit rate | get / memcached, lookups |")
        w("|---|---|---|---|---|---|---|---|---|---|")
        for page, rs in occ.items():
            R = [ratios(r) for r in rs]
            w("| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                kib(page), int(rs[0]["keys"]), span([r["get_gbps"] for r in rs]),
                span([x["get_mc"] for x in R]), span([x["get_redis"] for x in R]),
                span([x["get_ceiling"] for x in R]), span([x["set_mc"] for x in R]),
                span([x["p50_mc"] for x in R]), span([r.get("get_hit", 0) for r in rs], "%.3f"),
                span([x["lookups_mc"] for x in R])))
        w("")
        runs_ways = [(r, int(r.get("ways", 0))) for rs in list(ws.values()) + list(occ.values()) for r in rs]
        if all(wy and r.get("slots") for r, wy in runs_ways):
            loads = sorted({round(r["keys"] / r["slots"], 2) for r, _ in runs_ways})
            wy = runs_ways[0][1]
            missed = lambda rows: span([1 - r.get("get_hit", 0) for rs in rows.values() for r in rs], "%.3f")
            L.extend(textwrap.wrap(
                "A get's GB/s counts the bytes that hit. The store's buckets hold %d ways "
                "(`store.slot_ways`), so a key that lands in a full bucket evicts the bucket's "
                "oldest; with keys in random buckets, the share that finds its bucket full is "
                "what a Poisson count of keys a bucket beyond its ways gives: %s of the keys "
                "at %s keys a slot (%s with 8 ways, %s with 16). The store's gets missed %s "
                "of the keys in the working-set runs and %s at 80 %% occupancy; memcached, "
                "given the memory, keeps every key. The last column compares the lookups "
                "each answered a second, hit or miss." % (
                    wy, ", ".join("%.3f" % overflow(wy, l) for l in loads),
                    ", ".join("%.2f" % l for l in loads),
                    ", ".join("%.3f" % overflow(8, l) for l in loads),
                    ", ".join("%.3f" % overflow(16, l) for l in loads),
                    missed(ws), missed(occ)), WIDTH))
            w("")
    w("## Targets (issue 20)")
    w("")
    w("Met where the ratio reached the target in every run of every size (working set")
    w("and 80 % occupancy).")
    w("")
    w("| target | worst run | met |")
    w("|---|---|---|")
    every = runs
    for title, key, bound, above in TARGETS:
        vals = [(ratios(r)[key], r) for r in every if ratios(r)[key]]
        if not vals:
            w("| %s | not measured | - |" % title)
            continue
        worst, wr = (min if above else max)(vals, key=lambda x: x[0])
        met = worst >= bound if above else worst <= bound
        w("| %s | %.2f (%s, %s) | %s |" % (title, worst, kib(wr["page"]), wr["label"], "yes" if met else "no"))
    other_rows, tr = other_targets(other)
    for title, bound, worst, where in other_rows:
        if worst is None:
            w("| %s | not measured | - |" % title)
        else:
            w("| %s | %.2f (%s) | %s |" % (title, worst, where, "yes" if worst >= bound else "no"))
    w("")
    rt = [(page, span([ratios(r)["pages_ceiling"] for r in rs])) for page, rs in ws.items()
          if any(r.get("pages_gbps") for r in rs)]
    if rt:
        L.extend(textwrap.wrap(
            "The ceiling target holds a batch get to the fastest raw transfer. One batch of "
            "pages in flight, with no protocol and nothing checked, reached %s of the ceiling "
            "(%s pages; \"The ceiling's shapes\" above): where that is below 0.8, no client "
            "that waits for each batch of scattered pages meets the target, and the store's "
            "ratio to it says how much of the rest is the store's." % (
                ", ".join(v for _, v in rt), ", ".join(kib(p) for p, _ in rt)), WIDTH))
        w("")
    if tr:
        L.extend(textwrap.wrap(
            "Promotion in random order reads blocks from random places of the file. Raw random "
            "reads of the same blocks moved %s of raw sequential reads (%s blocks), which "
            "bounds any promotion in that order; promotion reached %s of them." % (
                ", ".join("%.2f" % r for _, r, _ in tr), ", ".join(b for b, _, _ in tr),
                ", ".join("%.2f" % p for _, _, p in tr)), WIDTH))
        w("")
    w("Over rxe, rdma_rxe does every packet's work in software, both ends' on the VM's")
    w("CPUs: a page's cost there is its packets (rxe0's counters), and the rxe runs")
    w("below print the CPU time a page took next to perftest's. perftest moves the page")
    w("alone; the store's get also reads the slot's 64-byte header (a 12 KiB page and")
    w("its header take four packets, the page alone three), and under `predict` the")
    w("bucket's index block besides (`auto`, the default, reads a key it wrote or saw in")
    w("that way alone); its set reads the bucket's headers (one READ a way; a key it")
    w("wrote before, its hinted way's header alone) and writes the index tag after the")
    w("slot.")
    w("")
    if other.strip():
        w("## Other benchmarks, as they printed")
        w("")
        w(other.rstrip())
        w("")
    with open(os.path.join(args.out, "performance.md"), "w") as f:
        f.write("\n".join(L))
    if ws:
        plot(ws, args.out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", required=True)
    ap.add_argument("--other", required=True)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--tries", type=int, default=2)
    ap.add_argument("--out", required=True)
    ap.add_argument("--commit", default="?")
    ap.add_argument("--started", default="", help="when the measurements started (default: now)")
    ap.add_argument("--cc", default="", help="the congestion control every party ran ('' the machine's)")
    args = ap.parse_args()
    runs = parse(args.results)
    if not runs:
        sys.exit("bench_report.py: %s has no pcbench summary lines; did the tcp runs fail?" % args.results)
    with open(args.other) as f:
        other = f.read()
    write(args, runs, other)


if __name__ == "__main__":
    main()
