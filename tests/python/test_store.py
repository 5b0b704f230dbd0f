"""PeerCacheStore against a live 3-node pcd cluster: SGLang's zero-copy and copying
paths, TP ranks, MLA, namespaces, partial pages, the factory, two threads."""
import errno
import importlib
import threading
import time
import unittest

import torch

import common
from cluster import Cluster
from live import Live, same
from pools import MHAPool, MLAPool
from peercache import _lib
from peercache import store as pcstore


class ZeroCopy(Live):
    def test_two_tp_ranks_own_heads(self):
        k = common.keys("tp", 8)
        writers, readers = [], []
        for rank in (0, 1):
            pool = MHAPool()
            pool.fill(100 + rank)
            s = self.store(pool, tp_rank=rank, tp_size=2)
            self.assertEqual(s.batch_set_v1(k, pool.indices(range(8))), [True] * 8)
            writers.append(pool)
        for rank in (0, 1):
            pool = MHAPool()
            s = self.store(pool, tp_rank=rank, tp_size=2)
            self.assertEqual(s.batch_exists(k), 8)
            self.assertEqual(s.batch_get_v1(k, pool.indices(range(8, 16))), [True] * 8)
            readers.append(pool)
        for rank in (0, 1):
            self.assertPagesEqual(writers[rank], range(8), readers[rank], range(8, 16))
        self.assertFalse(same(readers[0].page(8), readers[1].page(8)))

    def test_mla_written_once_read_by_every_rank(self):
        k = common.keys("mla", 6)
        pools = [MLAPool() for _ in range(3)]
        for i, p in enumerate(pools):
            p.fill(200 + i)
        ranks = [self.store(p, tp_rank=r, tp_size=3, is_mla_model=True)
                 for r, p in enumerate(pools)]
        # rank 1 and 2 report success without writing
        for r in (1, 2):
            before = ranks[r].store.metrics()["write_requests"]
            self.assertEqual(ranks[r].batch_set_v1(k, pools[r].indices(range(6))), [True] * 6)
            self.assertEqual(ranks[r].store.metrics()["write_requests"], before)
        self.assertEqual(ranks[1].batch_exists(k), 0)
        self.assertEqual(ranks[0].batch_set_v1(k, pools[0].indices(range(6))), [True] * 6)
        self.assertEqual(ranks[0].store.metrics()["write_requests"], 6)
        for r in (1, 2):
            self.assertEqual(ranks[r].batch_exists(k), 6)
            self.assertEqual(ranks[r].batch_get_v1(k, pools[r].indices(range(6, 12))), [True] * 6)
            self.assertPagesEqual(pools[0], range(6), pools[r], range(6, 12))

    def test_exists_leading_counts(self):
        pool = MHAPool()
        pool.fill(3)
        s = self.store(pool)
        k = common.keys("exists", 10)
        self.assertEqual(s.batch_exists(k), 0)
        stored = [0, 1, 2, 4, 5]                      # a hole at 3
        self.assertTrue(all(s.batch_set_v1([k[i] for i in stored], pool.indices(stored))))
        self.assertEqual(s.batch_exists(k), 3)
        self.assertEqual(s.batch_exists(k[4:6]), 2)
        self.assertEqual(s.batch_exists(k[6:]), 0)
        self.assertEqual(s.batch_exists([]), 0)
        rest = [3, 6, 7, 8, 9]
        self.assertTrue(all(s.batch_set_v1([k[i] for i in rest], pool.indices(rest))))
        self.assertEqual(s.batch_exists(k), 10)

    def test_absent_key_false_alone_buffer_untouched(self):
        src = MHAPool()
        src.fill(4)
        s = self.store(src)
        k = common.keys("absent", 5)
        self.assertTrue(all(s.batch_set_v1(k[:2] + k[3:], src.indices([0, 1, 3, 4]))))
        for n in (5, 1):  # a batch, and one page alone (a different read policy)
            dst = MHAPool()
            dst.kv_buffer.view(torch.uint8).fill_(0xAB)
            ks = k if n == 5 else k[2:3]
            pages = list(range(n)) if n == 5 else [2]
            got = self.store(dst).batch_get_v1(ks, dst.indices(pages))
            self.assertEqual(got, [True, True, False, True, True] if n == 5 else [False])
            self.assertTrue(bool((dst.page(2).view(torch.uint8) == 0xAB).all()),
                            "a missed page's buffer was written")
            if n == 5:
                self.assertPagesEqual(src, [0, 1, 3, 4], dst, [0, 1, 3, 4])

    def test_partial_page_is_a_miss_and_untouched(self):
        src = MHAPool()
        src.fill(5)
        s = self.store(src)
        k = common.keys("partial", 3)
        lay = s._layout
        # store only K of page 1, under the name the store would give it
        kname = lay.prefix + k[1].encode() + lay.suffixes[0]
        ptrs, sizes = src.get_page_buffer_meta(src.indices([1]))
        t = _lib.PageTable([kname], ptrs[:1], sizes[:1])
        self.assertEqual(s.store.batch_set(t), 1)
        self.assertTrue(all(s.batch_set_v1([k[0], k[2]], src.indices([0, 2]))))
        self.assertEqual(s.batch_exists(k), 1)
        dst = MHAPool()
        dst.kv_buffer.view(torch.uint8).fill_(0x5A)
        r = self.store(dst)
        self.assertEqual(r.batch_get_v1(k, dst.indices(range(3))), [True, False, True])
        self.assertTrue(bool((dst.page(1).view(torch.uint8) == 0x5A).all()))
        self.assertPagesEqual(src, [0, 2], dst, [0, 2])
        self.assertEqual(r.stats()["adapter"]["get_partial"], 1)
        # a set completes the page: only V is written
        before = s.store.metrics()["write_requests"]
        self.assertEqual(s.batch_set_v1(k[1:2], src.indices([1])), [True])
        self.assertEqual(s.store.metrics()["write_requests"], before + 1)
        self.assertEqual(s.batch_exists(k), 3)

    def test_int32_host_indices(self):
        # int32 indices: the addresses are computed in 64 bits, not in the
        # tensor's dtype (where index * stride + the pool's address wraps). Pools
        # of 64 MiB are mapped (past glibc's largest mmap threshold), at addresses
        # above 2^31 as a serving engine's pinned pool is.
        src, dst = MHAPool(pages=4096), MHAPool(pages=4096)
        self.assertGreater(src.kv_buffer.data_ptr(), 2 ** 32, "the pool is not mapped high")
        src.fill(11)
        s, r = self.store(src), self.store(dst)
        k = common.keys("int32", 4)
        pages = [4000, 4001, 4002, 4003]
        self.assertEqual(s.batch_set_v1(k, src.indices(pages).to(torch.int32)), [True] * 4)
        self.assertEqual(r.batch_get_v1(k, dst.indices(range(4)).to(torch.int32)), [True] * 4)
        self.assertPagesEqual(src, pages, dst, range(4))

    def test_set_skips_present_pages(self):
        pool = MHAPool()
        pool.fill(6)
        s = self.store(pool)
        k = common.keys("skip", 4)
        self.assertTrue(all(s.batch_set_v1(k, pool.indices(range(4)))))
        w = s.store.metrics()["write_requests"]
        self.assertTrue(all(s.batch_set_v1(k, pool.indices(range(4)))))
        self.assertEqual(s.store.metrics()["write_requests"], w)
        self.assertEqual(s.stats()["adapter"]["set_present"], 4)

    def test_set_when_exists_fails(self):
        # the exists that finds present objects fails as a call: every object is
        # written, and the answer is still one bool per page
        from unittest import mock
        pool = MHAPool()
        pool.fill(16)
        s = self.store(pool)
        k = common.keys("exists-failed", 4)
        with mock.patch.object(s.store, "batch_exists", return_value=-errno.EIO):
            self.assertEqual(s.batch_set_v1(k, pool.indices(range(4))), [True] * 4)
        self.assertEqual(s.batch_exists(k), 4)

    def test_other_model_or_layout_sees_nothing(self):
        pool = MHAPool()
        pool.fill(7)
        s = self.store(pool, model="org/model-a")
        k = common.keys("ns", 4)
        self.assertTrue(all(s.batch_set_v1(k, pool.indices(range(4)))))
        for kw, other in (({"model": "org/model-b"}, MHAPool()),
                          ({}, MHAPool(dtype=torch.float16)),
                          ({}, MHAPool(page_size=8, pages=8)),
                          ({"tp_size": 2}, MHAPool())):
            o = self.store(other, **kw)
            self.assertEqual(o.batch_exists(k), 0, kw)
            self.assertEqual(o.batch_get_v1(k, other.indices(range(4))), [False] * 4)
        self.assertEqual(self.store(MHAPool()).batch_exists(k), 4)

    def test_fp8_formats_do_not_share(self):
        # SGLang's host pools store both fp8 KV formats as uint8: the same shape and
        # bytes a page, read as another format they would be wrong KV
        def fp8(fmt):
            return MHAPool(dtype=torch.uint8, kv_dtype=fmt)
        e4m3, e5m2 = fp8("torch.float8_e4m3fn"), fp8("torch.float8_e5m2")
        e4m3.fill(11)
        k = common.keys("fp8", 4)
        self.assertTrue(all(self.store(e4m3).batch_set_v1(k, e4m3.indices(range(4)))))
        o = self.store(e5m2)
        self.assertEqual(o.batch_exists(k), 0)
        self.assertEqual(o.batch_get_v1(k, e5m2.indices(range(4))), [False] * 4)
        same_format = fp8("torch.float8_e4m3fn")
        self.assertEqual(self.store(same_format).batch_get_v1(k, same_format.indices(range(4))),
                         [True] * 4)
        self.assertPagesEqual(e4m3, range(4), same_format, range(4))

    def test_oversize_pages_are_false(self):
        # 2 x 1 MiB objects: larger than the largest class (256 KiB)
        pool = MHAPool(pages=2, page_size=64, layer_num=8, head_num=8, head_dim=128)
        s = self.store(pool)
        k = common.keys("big", 2)
        self.assertEqual(s.batch_set_v1(k, pool.indices(range(2))), [False, False])
        self.assertEqual(s.batch_exists(k), 0)
        self.assertGreater(s.stats()["adapter"]["parts_oversize"], 0)

    def test_stats(self):
        s = self.store(MHAPool())
        s.batch_exists(common.keys("stats", 3))
        st = s.get_stats()
        self.assertIsInstance(st, dict)
        self.assertIn("miss_absent", st["store"])
        self.assertIn("round_trips", st["store"])
        self.assertEqual(st["adapter"]["exists_pages"], 3)
        self.assertTrue(st["namespace"].startswith("org-model-a@"))

    def test_storage_metrics_of_a_batch_across_get_stats(self):
        # SGLang's collector calls get_stats on its own thread while a backup runs:
        # a batch that ends across that call is in the next StorageMetrics, not
        # appended to the one already handed out
        from dataclasses import dataclass
        from unittest import mock

        @dataclass
        class Metrics:
            prefetch_pgs: list
            backup_pgs: list
            prefetch_bandwidth: list
            backup_bandwidth: list

        patch = mock.patch.object(pcstore, "StorageMetrics", Metrics)
        patch.start()
        self.addCleanup(patch.stop)
        pool = MHAPool()
        pool.fill(15)
        s = self.store(pool, enable_storage_metrics=True)
        clock, reads, handed_out = time.perf_counter, [], []

        def clock_read():
            reads.append(None)
            if len(reads) == 2:  # the batch's second read: it is done, not yet counted
                handed_out.extend(s.get_stats().backup_pgs)
            return clock()
        with mock.patch.object(pcstore.time, "perf_counter", clock_read):
            self.assertEqual(s.batch_set_v1(common.keys("metrics-race", 3),
                                            pool.indices(range(3))), [True] * 3)
        self.assertEqual(handed_out + s.get_stats().backup_pgs, [3])

    def test_metrics_endpoint(self):
        # a serving engine's client store exports its own counters over HTTP
        import urllib.request
        from peercache import _lib
        s = _lib.Store(self.c.path)
        try:
            ks = [b"metrics-%d" % i for i in range(5)]
            table = _lib.PageTable(ks, None, [0] * 5)
            self.assertEqual(s.batch_exists(table), 0)
            text = s.metrics_text()
            self.assertIn('peercache_exists_requests_total{node="client"} 5\n', text)
            self.assertIn('peercache_batch_duration_seconds_count{node="client",op="exists"} 1\n', text)
            for bad in (86238, -1, "9100"):  # refused, never wrapped to another port
                with self.assertRaises(ValueError):
                    s.serve_metrics(port=bad)
            port = s.serve_metrics()
            self.assertGreater(port, 0)
            base = "http://127.0.0.1:%d" % port
            with urllib.request.urlopen(base + "/metrics", timeout=10) as r:
                self.assertEqual(r.status, 200)
                self.assertIn(b"peercache_exists_requests_total", r.read())
            with urllib.request.urlopen(base + "/readyz", timeout=10) as r:
                self.assertEqual(r.read(), b"ready\n")
        finally:
            s.close()

    def test_two_threads(self):
        pool = MHAPool(pages=32)
        pool.fill(8)
        k = common.keys("threads", 32)
        self.assertTrue(all(self.store(pool).batch_set_v1(k, pool.indices(range(32)))))
        dst = MHAPool(pages=64)
        s = self.store(dst)  # one store, two threads reading into two halves of its pool
        errors = []

        def reader(first):
            try:
                for _ in range(20):
                    got = s.batch_get_v1(k, dst.indices(range(first, first + 32)))
                    if got != [True] * 32:
                        errors.append(got)
            except Exception as e:  # pragma: no cover - reported below
                errors.append(e)

        th = [threading.Thread(target=reader, args=(f,)) for f in (0, 32)]
        for t in th:
            t.start()
        for t in th:
            t.join()
        self.assertEqual(errors, [])
        self.assertPagesEqual(pool, range(32), dst, range(32))
        self.assertPagesEqual(pool, range(32), dst, range(32, 64))


class Copying(Live):
    """SGLang's path without interface_v1: tensors from get_data_page in, dummy pages
    out. A value is the page's objects back to back, so both paths share pages."""

    def test_legacy_round_trip(self):
        pool = MHAPool()
        pool.fill(9)
        s = self.store(pool, extra={"interface_v1": 0})
        k = common.keys("legacy", 4)
        self.assertFalse(s.exists(k[0]))
        self.assertTrue(s.set(k[0], pool.get_data_page(0)))
        self.assertTrue(s.batch_set(k[1:], [pool.get_data_page(i * 4) for i in (1, 2, 3)]))
        self.assertTrue(s.exists(k[0]))
        self.assertEqual(s.batch_exists(k), 4)
        dummies = [pool.get_dummy_flat_data_page() for _ in range(5)]
        got = s.batch_get(k + common.keys("legacy-miss", 1), dummies)
        self.assertIsNone(got[4])
        for i in range(4):
            self.assertIs(got[i], dummies[i])
            self.assertTrue(same(got[i], pool.get_data_page(i * 4)))
        one = s.get(k[2], pool.get_dummy_flat_data_page())
        self.assertTrue(same(one, pool.get_data_page(8)))
        self.assertIsNone(s.get(common.keys("legacy-miss", 1)[0], pool.get_dummy_flat_data_page()))
        raw = s.batch_get(k[:1])  # no targets: bytearrays
        self.assertEqual(bytes(raw[0]), pool.page(0).numpy().tobytes())

    def test_numpy_buffers_not_contiguous(self):
        # as for tensors: a value is copied to be contiguous; a target that is not
        # the memory itself is that page's miss, not every page's
        import numpy as np
        pool = MHAPool()
        pool.fill(14)
        s = self.store(pool, extra={"interface_v1": 0})
        k = common.keys("numpy-strided", 1)
        page = pool.page(0).numpy()
        strided = np.zeros(2 * page.size, np.uint8)[::2]
        strided[:] = page
        self.assertTrue(s.batch_set(k, [strided]))
        targets = [np.zeros(page.size, np.uint8), np.zeros(2 * page.size, np.uint8)[::2]]
        got = s.batch_get(k + k, targets)
        self.assertIs(got[0], targets[0])
        self.assertIsNone(got[1])
        self.assertEqual(targets[0].tobytes(), page.tobytes())

    def test_paths_share_pages(self):
        pool = MHAPool()
        pool.fill(10)
        s = self.store(pool)
        k = common.keys("shared", 2)
        self.assertTrue(all(s.batch_set_v1(k[:1], pool.indices([0]))))
        self.assertTrue(same(s.get(k[0], pool.get_dummy_flat_data_page()),
                                    pool.get_data_page(0)))
        self.assertTrue(s.set(k[1], pool.get_data_page(4)))
        dst = MHAPool()
        self.assertEqual(self.store(dst).batch_get_v1(k[1:], dst.indices([1])), [True])
        self.assertPagesEqual(pool, [1], dst, [1])

    def test_mla_legacy(self):
        pool = MLAPool()
        pool.fill(11)
        w = self.store(pool, is_mla_model=True, tp_size=2, tp_rank=0, extra={"interface_v1": 0})
        r = self.store(MLAPool(), is_mla_model=True, tp_size=2, tp_rank=1,
                       extra={"interface_v1": 0})
        k = common.keys("mla-legacy", 2)
        self.assertTrue(r.batch_set(k, [pool.get_data_page(0), pool.get_data_page(4)]))
        self.assertEqual(r.batch_exists(k), 0)
        self.assertTrue(w.batch_set(k, [pool.get_data_page(0), pool.get_data_page(4)]))
        got = r.batch_get(k, [pool.get_dummy_flat_data_page() for _ in k])
        self.assertTrue(same(got[1], pool.get_data_page(4)))


class Factory(Live):
    def test_loaded_as_sglang_does(self):
        """importlib, getattr, issubclass, cls(storage_config, {}), then
        register_mem_pool_host: SGLang's dynamic backend factory."""
        cfg = common.config(self.c.path)
        mod = importlib.import_module(cfg.extra_config["module_path"])
        cls = getattr(mod, cfg.extra_config["class_name"])
        self.assertTrue(issubclass(cls, mod._Base))
        backend = cls(cfg, {})
        self.stores.append(backend)
        pool = MHAPool()
        pool.fill(12)
        backend.register_mem_pool_host(pool)
        k = common.keys("factory", 3)
        self.assertTrue(all(backend.batch_set_v1(k, pool.indices(range(3)))))
        self.assertEqual(backend.batch_exists(k), 3)
        dst = MHAPool()
        reader = cls(cfg, {})
        self.stores.append(reader)
        reader.register_mem_pool_host(dst)
        self.assertEqual(reader.batch_get_v1(k, dst.indices(range(3))), [True] * 3)
        self.assertPagesEqual(pool, range(3), dst, range(3))

    def test_embedded_node(self):
        """node: this process serves slots too, as the node named (per TP rank)."""
        c = Cluster(embed=("n0", "n1"))
        try:
            stores = [common.store(c.path, pool, tp_rank=r, tp_size=2,
                                   extra={"node": "n{tp_rank}"})
                      for r, pool in enumerate((MHAPool(), MHAPool()))]
            self.assertEqual([s.store.node() for s in stores], ["n0", "n1"])
            pool = stores[0].mem_pool_host
            pool.fill(13)
            k = common.keys("embedded", 6)
            self.assertTrue(all(stores[0].batch_set_v1(k, pool.indices(range(6)))))
            reader = common.store(c.path, MHAPool(), tp_rank=0, tp_size=2)
            self.assertEqual(reader.batch_get_v1(k, reader.mem_pool_host.indices(range(6))),
                             [True] * 6)
            self.assertPagesEqual(pool, range(6), reader.mem_pool_host, range(6))
            for s in stores + [reader]:
                s.close()
        finally:
            c.close()


if __name__ == "__main__":
    unittest.main()
