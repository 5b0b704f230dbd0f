"""bench_get.py - what the Python layer costs: PeerCacheStore.batch_get_v1 against the
C API doing the same gets, in one run on one cluster. A benchmark, not a test.

  bench_get.py [--part-size 32KiB] [--pages 128] [--rounds 5] [--seconds 1.5]
               [--topology FILE] [--profile] [--no-pcbench] [--poll-us N]

Starts a 3-node pcd cluster on free loopback ports (or uses --topology's, whose nodes
must be running), stores --pages MHA pages of 2 objects of --part-size each, then in
rounds measures pages/s of (the first three called in turn, each call timed):
  py get_v1       PeerCacheStore.batch_get_v1 (get_page_buffer_meta, keys, exists, get)
  C exists+get    the same 2 x pages objects, a prebuilt pc_page array, pc_batch_exists
                  then pc_batch_get (what batch_get_v1 asks of the library)
  C get           pc_batch_get alone on that array
  pcbench         build/tools/pcbench --batch 2 x pages --page-size part (its own keys)
and prints the ratios per round, their best and median; then batch_get_v1 with the
library's calls answered at once (what the Python layer alone costs a call, free of the
network's noise); then 1 against 2 threads calling batch_get_v1 on one store, for a
big and a small batch, with the library loaded as ctypes.CDLL (GIL released in C
calls, as the package does) and, as a control, ctypes.PyDLL (GIL held); with
--profile, cProfile's view of 200 batch_get_v1 calls.
"""
import argparse
import cProfile
import ctypes
import io
import os
import pstats
import re
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

from cluster import Cluster  # noqa: E402
from pools import MHAPool  # noqa: E402
import common  # noqa: E402
from peercache import _lib  # noqa: E402

STORE = ("mode: slotmap, slot_size_classes: [16KiB, 64KiB, 256KiB], slot_ways: 4, "
         "global_segment_size: 384MiB, timeout_ms: 2000")


def size(s):
    m = re.match(r"^(\d+)(KiB|K)?$", s)
    if not m:
        raise argparse.ArgumentTypeError("a size like 32KiB")
    return int(m.group(1)) * (1024 if m.group(2) else 1)


def rate(fn, pages, seconds):
    """pages/s of fn() over about `seconds`, after one warm-up call."""
    fn()
    n, t0 = 0, time.perf_counter()
    while True:
        fn()
        n += 1
        dt = time.perf_counter() - t0
        if dt >= seconds:
            return n * pages / dt, dt / n


def interleaved(fns, pages, seconds):
    """pages/s of each fn, called in turn (A B C A B C ...) for about `seconds`, each
    timed alone: every variant sees the same moments of a shared, noisy machine."""
    for fn in fns:
        fn()
    spent, calls, t0 = [0.0] * len(fns), 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for i, fn in enumerate(fns):
            t = time.perf_counter()
            fn()
            spent[i] += time.perf_counter() - t
        calls += 1
    return [calls * pages / x for x in spent], [x / calls for x in spent]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--part-size", type=size, default=32 * 1024)
    ap.add_argument("--pages", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=1.5)
    ap.add_argument("--topology")
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--no-pcbench", action="store_true")
    ap.add_argument("--poll-us", type=int, help="the cluster's store.tcp_poll_us (default 50)")
    a = ap.parse_args()

    # K (or V) of a page: layer 16 x page_size tokens x 2 heads x 64 dims x 2 B
    per_token = 16 * 2 * 64 * 2
    if a.part_size % per_token:
        ap.error("--part-size must be a multiple of %d" % per_token)
    shape = dict(layer_num=16, head_num=2, head_dim=64, page_size=a.part_size // per_token)
    n = a.pages
    store = STORE + (", tcp_poll_us: %d" % a.poll_us if a.poll_us is not None else "")
    cluster = None if a.topology else Cluster(store=store)
    topo = a.topology or cluster.path
    try:
        src = MHAPool(pages=n, **shape)
        src.fill(1)
        w = common.store(topo, src, model="bench/model")
        keys = common.keys("bench", n)
        ok = w.batch_set_v1(keys, src.indices(range(n)))
        if not all(ok):
            print("warning: %d of %d pages not stored" % (n - sum(ok), n))
        dst = MHAPool(pages=2 * n, **shape)
        r = common.store(topo, dst, model="bench/model")
        idx = dst.indices(range(n))
        got = r.batch_get_v1(keys, idx)
        if not all(got) or any(not bool((src.page(i) == dst.page(i)).all()) for i in range(n)):
            print("FAIL: pages read back differ or miss")
            return 1

        # The same objects as the library sees them, built once.
        lay = r._layout
        ptrs, sizes = dst.get_page_buffer_meta(idx)
        table = _lib.PageTable(r._keys(lay, keys), ptrs, sizes)
        L, h, pages, cnt = _lib.lib(), r.store._h, table.pages, table.n

        def c_get():
            if L.pc_batch_get(h, pages, cnt) != cnt:
                raise SystemExit("C get missed")

        def c_exists_get():
            L.pc_batch_exists(h, pages, cnt)
            c_get()

        def py_get():
            r.batch_get_v1(keys, idx)

        pcbench = os.path.join(HERE, "..", "..", "build", "tools", "pcbench")
        use_pcbench = not a.no_pcbench and os.path.exists(pcbench)

        def pcbench_rate():
            out = subprocess.run([pcbench, "--topology", topo, "--page-size", str(a.part_size),
                                  "--batch", str(2 * n), "--keys", str(2 * n), "--iters",
                                  str(max(5, int(a.seconds * 400 / (2 * n) * 32768 / a.part_size))),
                                  "--ops", "set,get", "--no-raw-tcp", "--prefix", "pcpybench"],
                                 capture_output=True, text=True).stdout
            m = re.search(r"^get\s+\d+\s+(\d+)", out, re.M)
            return float(m.group(1)) if m else float("nan")

        print("%d MHA pages of 2 x %d B (%d objects, %.1f MiB a batch), 3 pcd nodes on loopback"
              % (n, a.part_size, 2 * n, 2 * n * a.part_size / 2**20))
        best, allr = {}, {}
        head = "round  py get_v1  C exists+get    C get   pcbench   py/C(e+g)  py/C(get)"
        print(head)
        for rnd in range(a.rounds):
            rates, _ = interleaved((py_get, c_exists_get, c_get), n, a.seconds)
            row = dict(zip(("py", "ceg", "cg"), rates))
            row["pcb"] = pcbench_rate() * n / (2 * n) if use_pcbench else float("nan")
            for k, v in row.items():
                best[k] = max(best.get(k, 0), v)
                allr.setdefault(k, []).append(v)
            print("%5d  %9.0f  %12.0f  %7.0f  %8.0f   %9.3f  %9.3f" % (
                rnd, row["py"], row["ceg"], row["cg"], row["pcb"], row["py"] / row["ceg"],
                row["py"] / row["cg"]))
        print("best   %9.0f  %12.0f  %7.0f  %8.0f   %9.3f  %9.3f   (pages/s; pcbench: its "
              "objects/s / 2)" % (best["py"], best["ceg"], best["cg"], best["pcb"],
                                  best["py"] / best["ceg"], best["py"] / best["cg"]))
        med = {k: sorted(v)[len(v) // 2] for k, v in allr.items()}
        print("median %9.0f  %12.0f  %7.0f  %8.0f   %9.3f  %9.3f" % (
            med["py"], med["ceg"], med["cg"], med["pcb"], med["py"] / med["ceg"],
            med["py"] / med["cg"]))
        _, (t_py, t_c) = interleaved((py_get, c_exists_get), n, a.seconds)
        print("per call: py %.0f us, C exists+get %.0f us" % (t_py * 1e6, t_c * 1e6))

        # The Python layer alone: the same calls with the library's two answered at
        # once (every object present, every get a hit), so no network noise.
        class Instant:
            def batch_exists(self, t):
                return t.n

            batch_get = batch_exists
        real, r.store = r.store, Instant()
        try:
            _, t_only = rate(py_get, n, a.seconds)
        finally:
            r.store = real
        print("the Python layer alone: %.0f us a call (%.1f us a page), against the C calls' "
              "%.0f us: %.3f" % (t_only * 1e6, t_only * 1e6 / n, t_c * 1e6,
                                 t_c / (t_c + t_only)))

        # 1 against 2 threads on one store, each reading its own half of the pool; and
        # the same with the library loaded by ctypes.PyDLL (the GIL held in C calls).
        def threads(k, npages):
            stop, counts = threading.Event(), [0] * k
            ix = [dst.indices(range(i * n, i * n + npages)) for i in range(k)]

            def run(i):
                while not stop.is_set():
                    r.batch_get_v1(keys[:npages], ix[i])
                    counts[i] += 1
            th = [threading.Thread(target=run, args=(i,)) for i in range(k)]
            t0 = time.perf_counter()
            for t in th:
                t.start()
            time.sleep(a.seconds)
            stop.set()
            for t in th:
                t.join()
            return sum(counts) * npages / (time.perf_counter() - t0)

        pydll = ctypes.PyDLL(_lib.library_path())
        _lib._declare(pydll)
        cdll = r.store._lib
        print("batch_get_v1 on one store, pages/s (median of 3)   1 thread  2 threads  2/1")
        for npages in (n, 8):
            for name, dll in (("CDLL", cdll), ("PyDLL", pydll)):
                r.store._lib = dll
                res = {1: [], 2: []}
                for _ in range(3):
                    for k in (1, 2):
                        res[k].append(threads(k, npages))
                m1, m2 = sorted(res[1])[1], sorted(res[2])[1]
                print("  %3d pages, %-5s (GIL %s in C)  %19.0f  %9.0f  %.2f" % (
                    npages, name, "released" if dll is cdll else "held", m1, m2, m2 / m1))
        r.store._lib = cdll

        if a.profile:
            pr = cProfile.Profile()
            pr.enable()
            for _ in range(200):
                py_get()
            pr.disable()
            s = io.StringIO()
            pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(14)
            print(s.getvalue())
        w.close()
        r.close()
        return 0
    finally:
        if cluster:
            cluster.close()


if __name__ == "__main__":
    sys.exit(main())
