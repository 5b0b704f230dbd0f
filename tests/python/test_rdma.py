"""test_rdma.py - the package over an RDMA fabric: the host pool SGLang registers
(register_mem_pool_host -> pc_store_register) is read and written by the NIC itself,
without a bounce copy, and buffers outside it are staged (and counted).

Needs an RDMA device: ci/rxe-vm.sh runs it in its VM over Soft-RoCE
(PEERCACHE_RDMA_DEVICE=rxe0, PEERCACHE_RDMA_PROTOCOL=rxe); elsewhere it is skipped.
"""
import os
import re
import unittest

import common
from live import Live, same
from pools import MHAPool, MLAPool

DEVICE = os.environ.get("PEERCACHE_RDMA_DEVICE", "")
PROTOCOL = os.environ.get("PEERCACHE_RDMA_PROTOCOL", "rxe")
SAMPLE = re.compile(r"^(peercache_fabric_[a-z_]+)(\{[^}]*\})? (\d+)$", re.M)


def fabric(store):
    """The fabric counters of store's metrics text, each summed over its labels."""
    out = {}
    for name, _labels, value in SAMPLE.findall(store.store.metrics_text()):
        out[name] = out.get(name, 0) + int(value)
    return out


def delta(after, before, name):
    return after.get(name, 0) - before.get(name, 0)


@unittest.skipUnless(DEVICE, "needs an RDMA device (PEERCACHE_RDMA_DEVICE=rxe0): "
                     "ci/rxe-vm.sh runs this in its Soft-RoCE VM")
class Rdma(Live):
    cluster_args = {"protocol": PROTOCOL, "devices": [DEVICE]}

    @classmethod
    def setUpClass(cls):
        os.environ.setdefault("PC_VERBS_DEVICE", DEVICE)  # the client's rail
        super().setUpClass()

    def test_registered_pool_moves_without_bounce(self):
        pool = MHAPool(pages=32)
        pool.fill(41)
        s = self.store(pool)
        k = common.keys("rdma-zc", 16)
        t0 = fabric(s)
        self.assertEqual(s.batch_set_v1(k, pool.indices(range(16))), [True] * 16)
        self.assertEqual(s.batch_exists(k), 16)
        self.assertEqual(s.batch_get_v1(k, pool.indices(range(16, 32))), [True] * 16)
        t1 = fabric(s)
        for p in range(16):
            self.assertTrue(same(pool.page(p), pool.page(16 + p)), "page %d" % p)
        page_bytes = pool.page(0).numel()
        moved = delta(t1, t0, "peercache_fabric_rail_bytes_total")
        print("\n  registered pool: %d pages of %d B set and got back, %d B over the "
              "rails, %d bounce copies" % (16, page_bytes, moved,
                                           delta(t1, t0, "peercache_fabric_bounce_copies_total")))
        self.assertGreaterEqual(moved, 2 * 16 * page_bytes, "pages did not move one-sided")
        self.assertEqual(delta(t1, t0, "peercache_fabric_bounce_copies_total"), 0)
        self.assertEqual(delta(t1, t0, "peercache_fabric_bounce_bytes_total"), 0)

    def test_mla_pool_read_by_another_rank_without_bounce(self):
        wpool, rpool = MLAPool(), MLAPool()
        wpool.fill(42)
        w = self.store(wpool, is_mla_model=True, tp_size=2, tp_rank=0)
        r = self.store(rpool, is_mla_model=True, tp_size=2, tp_rank=1)
        k = common.keys("rdma-mla", 4)
        self.assertEqual(w.batch_set_v1(k, wpool.indices(range(4))), [True] * 4)
        t0 = fabric(r)
        self.assertEqual(r.batch_get_v1(k, rpool.indices(range(4, 8))), [True] * 4)
        t1 = fabric(r)
        for p in range(4):
            self.assertTrue(same(wpool.page(p), rpool.page(4 + p)), "page %d" % p)
        self.assertEqual(delta(t1, t0, "peercache_fabric_bounce_copies_total"), 0)
        self.assertGreater(delta(t1, t0, "peercache_fabric_rail_bytes_total"), 0)

    def test_unregistered_buffers_are_staged(self):
        """The copying path (no interface_v1): get_data_page's tensors and dummy pages
        are not in the registered pool, so each page goes through a bounce buffer."""
        pool = MHAPool()
        pool.fill(43)
        s = self.store(pool, extra={"interface_v1": 0})
        k = common.keys("rdma-copy", 4)
        t0 = fabric(s)
        self.assertTrue(s.batch_set(k, [pool.get_data_page(i * 4) for i in range(4)]))
        dummies = [pool.get_dummy_flat_data_page() for _ in k]
        got = s.batch_get(k, dummies)
        t1 = fabric(s)
        for i in range(4):
            self.assertTrue(same(got[i], pool.get_data_page(i * 4)), "page %d" % i)
        copies = delta(t1, t0, "peercache_fabric_bounce_copies_total")
        print("\n  unregistered buffers: %d bounce copies, %d B" %
              (copies, delta(t1, t0, "peercache_fabric_bounce_bytes_total")))
        self.assertGreaterEqual(copies, 8, "4 sets and 4 gets, each staged")
        self.assertGreaterEqual(delta(t1, t0, "peercache_fabric_bounce_bytes_total"),
                                8 * pool.page(0).numel())


if __name__ == "__main__":
    unittest.main()
