"""bench_report_test.py - ci/bench_report.py renders what the bench measured: the
ratios taken within each run, the worst run per target, the ceiling's shapes, the
misses the placement makes, and the tier's and rxe's lines as pctierbench and
ci/rxe-vm.sh print them. Synthetic runs with known figures; every check names a
number the page must carry.

usage: python3 bench_report_test.py ci/bench_report.py
"""
import importlib.util
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = None


def load():
    spec = importlib.util.spec_from_file_location("bench_report", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def summary(label, **kv):
    base = dict(page=12288, keys=21845, batch=64, get_gbps=4.0, get_p50_us=150.0, set_gbps=3.0,
                set_p50_us=200.0, exists_kps=1000000, get_hit=0.96, slots=43464, ways=4,
                ceiling_gbps=8.0, ceiling_by="busy-stream", stream_gbps=8.0, stream_by="busy",
                batches_gbps=7.0, batches_by="busy", pages_gbps=5.0, pages_by="tuned",
                memcached_get_gbps=4.4, memcached_get_by="multiget", memcached_get_p50_us=160.0,
                memcached_get_hit=1.0, memcached_set_gbps=2.0, memcached_set_by="meta",
                memcached_exists_kps=500000, memcached_exists_by="meta",
                redis_get_gbps=2.5, redis_get_by="resp", redis_get_p50_us=300.0, redis_get_hit=1.0,
                redis_set_gbps=2.0, redis_set_by="resp", redis_exists_kps=900000,
                redis_exists_by="pipeline")
    base.update(kv)
    return label + " summary " + " ".join("%s=%s" % kv for kv in base.items())


RUNS = "\n".join([
    # round 1: get 4.0 / memcached 4.4 = 0.91 (the worst get / memcached)
    summary("ws"),
    # round 2: get 5.0 / memcached 4.0 = 1.25; the ceiling a batch shape's
    summary("ws", get_gbps=5.0, memcached_get_gbps=4.0, ceiling_gbps=9.0,
            ceiling_by="busy-batches", batches_gbps=9.0),
    # 80 %: 0.876 of the gets hit; lookups 3.5 / 0.876 against 4.0 / 1.0 = 1.0
    summary("occ80", keys=34771, get_gbps=3.5, get_hit=0.876, memcached_get_gbps=4.0),
]) + "\n"

OTHER = """### disk tier: 12 KiB blocks
```
pctierbench: 16384 blocks of 12288 B in batches of 64, /var/tmp; 3 interleaved rounds
raw sequential write               6.00   (4096 KiB a call: 6.00; batches of 64 blocks in flight: 5.47)
raw sequential read                5.00   (4096 KiB a call: 5.00; batches of 64 blocks in flight: 4.91)
raw random block reads             2.50
                                   GB/s   vs raw  checksums    per batch
demote (disk_put)                  5.10     0.85      10.6%      0.15 ms
promote, write order               4.00     0.80      14.9%      0.20 ms
promote, random order              2.00     0.40      10.9%      0.46 ms   (0.80 of raw random reads)
```
pcbench over rxe: 12KiB pages, batch 64, read policy auto
get / ib_read_bw 0.82 (0.0995 / 0.1218 GB/s), set / ib_write_bw 0.63 (0.0874 / 0.1394 GB/s), passes 3 to 6
a page: get 142 us of CPU, 5.0 packets (ib_read_bw 122 us, 4.0), set 127 us, 9.1 packets (ib_write_bw 102 us, 4.0)
"""


class Report(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        d = cls.dir.name
        for name, text in (("results.txt", RUNS), ("other.txt", OTHER)):
            with open(os.path.join(d, name), "w") as f:
                f.write(text)
        subprocess.run([sys.executable, SCRIPT, "--results", os.path.join(d, "results.txt"),
                        "--other", os.path.join(d, "other.txt"), "--rounds", "2", "--cc", "cubic",
                        "--out", d, "--commit", "abc1234", "--started", "2026-01-02 03:04 UTC"],
                       check=True)
        with open(os.path.join(d, "performance.md")) as f:
            cls.page = f.read()
        cls.lines = cls.page.splitlines()

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def row(self, start):
        rows = [l for l in self.lines if l.startswith(start)]
        self.assertTrue(rows, "no line starts with %r" % start)
        return rows[0]

    def test_header_names_the_run(self):
        self.assertIn("- **Run:** started 2026-01-02 03:04 UTC, commit `abc1234`, 2 round(s) "
                      "per page size", self.page)
        self.assertTrue(os.path.getsize(os.path.join(self.dir.name, "performance-get.png")) > 0)

    def test_get_ratios_are_per_run_ranges(self):
        # store / ceiling: 4.0 / 8.0 and 5.0 / 9.0; memcached / ceiling 4.4 / 8 and 4 / 9
        self.assertEqual(self.row("| 12 KiB | 4.00-5.00 |"),
                         "| 12 KiB | 4.00-5.00 | 4.00-4.40 (multiget) | 2.50 (resp) | 8.00-9.00 "
                         "(busy-stream (1 of 2)) | 0.50-0.56 | 0.44-0.55 | 0.28-0.31 |")

    def test_ceiling_shapes_and_hit_rates(self):
        # pages 5.0 of 8.0 and of 9.0; store / pages 0.80 and 1.00
        self.assertIn("5.00 (tuned; 0.56-0.62) | 0.80-1.00 | 0.80-0.88 |", self.row("| 12 KiB | 768 KiB |"))
        self.assertIn("| 0.960 | 1.000 |", self.row("| 12 KiB | 0.91-1.25 |"))

    def test_targets_take_the_worst_run(self):
        self.assertEqual(self.row("| get >= 1.0x the best memcached client"),
                         "| get >= 1.0x the best memcached client | 0.88 (12 KiB, occ80) | no |")
        self.assertEqual(self.row("| set >= 1.0x memcached's best set"),
                         "| set >= 1.0x memcached's best set | 1.50 (12 KiB, ws) | yes |")
        self.assertEqual(self.row("| p50 per batch"),
                         "| p50 per batch <= memcached's (store p50 / memcached p50) | 0.94 (12 KiB, ws) | yes |")
        self.assertIn("| 0.40 (promote, random order, 12 KiB blocks) | no |",
                      self.row("| tier demote and promote"))
        self.assertIn("| 0.82 (12 KiB, batch 64, auto; 5.0 packets a page, ib_read_bw's 4.0) | no |",
                      self.row("| rxe VM: get"))

    def test_occupancy_misses_and_lookups(self):
        occ = self.row("| 12 KiB | 34771 |")
        self.assertTrue(occ.endswith("| 0.876 | 1.00 |"), occ)
        flat = " ".join(self.lines)
        # 21845 / 43464 = 0.50 and 34771 / 43464 = 0.80 keys a slot, 4 ways
        self.assertIn("0.038, 0.123 of the keys at 0.50, 0.80 keys a slot", flat)
        self.assertIn("missed 0.040 of the keys in the working-set runs and 0.124 at 80 %", flat)
        self.assertIn("Raw random reads of the same blocks moved 0.50 of raw sequential reads "
                      "(12 KiB blocks)", flat)
        self.assertIn("promotion reached 0.80 of them", flat)

    def test_overflow_is_poisson(self):
        br = load()
        self.assertAlmostEqual(br.overflow(4, 0.5), 0.0376, places=3)
        self.assertAlmostEqual(br.overflow(16, 0.8), 0.0309, places=3)
        self.assertEqual(br.overflow(4, 0), 0.0)

    def test_who_breaks_ties_by_the_first_run(self):
        br = load()
        runs = [{"x": "b"}, {"x": "a"}]
        self.assertEqual(br.who(runs, "x"), "b (1 of 2)")


if __name__ == "__main__":
    SCRIPT = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
