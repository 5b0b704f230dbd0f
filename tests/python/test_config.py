"""extra_config refused with the key named and the fix, SGLang's keys accepted; the
layouts the backend cannot serve zero-copy; what SGLang's factory relies on."""
import unittest

import common
from cluster import Cluster
from pools import MHAPool, MLAPool
from peercache import store as pcstore
from peercache.store import PeerCacheStore, StorageConfig


class ExtraConfig(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # A topology on free ports with no pcd behind it: client stores open
        # without connecting, and these tests send nothing.
        cls.c = Cluster(embed=("n0", "n1", "n2"))

    @classmethod
    def tearDownClass(cls):
        cls.c.close()

    def refused(self, key, extra, *words, **cfg):
        with self.assertRaises(ValueError) as cm:
            common.store(self.c.path, extra=extra, **cfg).close()
        msg = str(cm.exception)
        self.assertIn(repr(key), msg)
        for w in words:
            self.assertIn(w, msg)
        return msg

    def test_accepts_sglang_keys_and_seed_keys(self):
        s = common.store(self.c.path, extra={"prefetch_threshold": 256, "prefetch_timeout_base": 1,
                                             "protocol": "tcp", "mode": "slotmap",
                                             "slot_max_page_bytes": 262144, "slot_ways": 4,
                                             "slot_num_buckets": 0, "store.timeout_ms": 500})
        self.assertIsNone(s.store.node())
        s.close()

    def test_missing_topology(self):
        cfg = StorageConfig(extra_config={"interface_v1": 1})
        with self.assertRaises(ValueError) as cm:
            PeerCacheStore(cfg, {})
        self.assertIn("'topology'", str(cm.exception))
        self.assertIn("add \"topology\"", str(cm.exception))

    def test_topology_not_a_file(self):
        self.refused("topology", {"topology": "/nonexistent/c.yaml"}, "no such file")

    def test_discovery_addr(self):
        self.refused("discovery_addr", {"discovery_addr": "10.0.0.1"}, "host:port")
        self.refused("discovery_addr", {"discovery_addr": 31998}, "host:port")

    def test_unknown_key(self):
        self.refused("slot_wayz", {"slot_wayz": 4}, "unknown key", "slot_ways")

    def test_wrong_types(self):
        self.refused("slot_ways", {"slot_ways": "4"}, "expected an integer")
        self.refused("slot_num_buckets", {"slot_num_buckets": -1}, "below 0")
        self.refused("protocol", {"protocol": "udp"}, "tcp, rdma, rxe")
        self.refused("mode", {"mode": "dht"}, "slotmap, p2p")
        self.refused("slot_max_page_bytes", {"slot_max_page_bytes": "lots"}, "256KiB")
        self.refused("interface_v1", {"interface_v1": "yes"}, "0 or 1")
        self.refused("node", {"node": 7}, "node name")

    def test_library_range_errors_name_the_key(self):
        self.refused("slot_ways", {"slot_ways": 1000}, "store.slot_ways=1000")
        self.refused("store.timeout_ms", {"store.timeout_ms": 0}, "timeout_ms")
        self.refused("store.no_such_field", {"store.no_such_field": 1})
        self.refused("slot_max_page_bytes", {"slot_max_page_bytes": 1 << 20}, "size class")

    def test_node(self):
        self.refused("node", {"node": "n9"}, "no node named")
        self.refused("node", {"node": "n0"}, "{tp_rank}", tp_size=2, tp_rank=1)
        self.refused("node", {"node": "n{rank}"}, "placeholder")
        # a field or index of a rank is a placeholder the name cannot have
        self.refused("node", {"node": "n{tp_rank.real.x}"}, "placeholder")
        self.refused("node", {"node": "n{tp_rank[0]}"}, "placeholder")
        # every parallel dimension with more than one rank needs its placeholder
        self.refused("node", {"node": "n{tp_rank}"}, "{pp_rank}", tp_size=2, pp_size=2,
                     pp_rank=1)
        self.refused("node", {"node": "n{tp_rank}"}, "{attn_cp_rank}", attn_cp_size=2)
        self.refused("node", {"node": "n0"}, "{dp_rank}", dp_size=4, dp_rank=3)

    def test_tp_lcm_split_refused(self):
        with self.assertRaises(ValueError) as cm:
            common.store(self.c.path, should_split_heads=True, tp_lcm_size=4)
        self.assertIn("tp_lcm_size", str(cm.exception))

    def test_layer_first_mha_needs_page_first(self):
        s = common.store(self.c.path)
        with self.assertRaises(ValueError) as cm:
            s.register_mem_pool_host(MHAPool(layout="layer_first"))
        self.assertIn("--hicache-mem-layout page_first", str(cm.exception))
        s.close()
        # without interface_v1 SGLang copies pages: layer_first is fine then
        s = common.store(self.c.path, extra={"interface_v1": 0})
        s.register_mem_pool_host(MHAPool(layout="layer_first"))
        s.close()

    def test_logical_pool_refused(self):
        class Anchor:
            kv_buffer = None
            layout = "page_first"
            page_size = 4
        s = common.store(self.c.path)
        with self.assertRaises(ValueError) as cm:
            s.register_mem_pool_host(Anchor())
        self.assertIn("v2", str(cm.exception))
        s.close()

    def test_clear_refused(self):
        # SGLang reports a clear that returned as done: one that deletes nothing raises
        s = common.store(self.c.path)
        with self.assertLogs("peercache", "ERROR"):
            with self.assertRaises(NotImplementedError) as cm:
                s.clear()
        self.assertIn("restart", str(cm.exception))
        s.close()

    def test_calls_before_registration_miss(self):
        s = common.store(self.c.path)
        k = common.keys("early", 3)
        self.assertEqual(s.batch_get_v1(k, None), [False] * 3)
        self.assertEqual(s.batch_set_v1(k, None), [False] * 3)
        self.assertEqual(s.batch_exists(k), 0)
        s.close()
        self.assertEqual(s.batch_exists(k), 0)  # after close: misses, no exception

    def test_namespace_depends_on_model_and_layout(self):
        names = set()
        import torch
        u8 = torch.uint8  # how SGLang's host pool stores either fp8 format
        for model, pool, ident in (
                ("a", MHAPool(), None), ("b", MHAPool(), None), ("a", MHAPool(head_dim=64), None),
                ("a", MHAPool(dtype=pcstore_dtype_fp16()), None), ("a", MLAPool(), None),
                ("a", MHAPool(dtype=u8, kv_dtype="torch.float8_e4m3fn"), None),
                ("a", MHAPool(dtype=u8, kv_dtype="torch.float8_e5m2"), None),
                ("a", MHAPool(), "0123456789abcdef")):
            s = common.store(self.c.path, model=model, is_mla_model=isinstance(pool, MLAPool),
                             model_identity_hash=ident)
            s.register_mem_pool_host(pool)
            names.add(s.stats()["namespace"])
            s.close()
        self.assertEqual(len(names), 8)

    def test_pool_without_page_addresses_refused(self):
        class NoMeta(MHAPool):  # as SGLang's MXFP8 host pool: no flat pages (yet)
            def get_page_buffer_meta(self, indices):
                raise NotImplementedError("does not expose flat storage pages")

        class OneObject(MHAPool):  # an MHA page as one object: not K and V
            def get_page_buffer_meta(self, indices):
                ptrs, sizes = super().get_page_buffer_meta(indices)
                return ptrs[0::2], [2 * x for x in sizes[0::2]]
        for pool, words in ((NoMeta(), ("NoMeta", "NotImplementedError", "flat storage", "interface_v1")),
                            (OneObject(), ("OneObject", "1 object(s)", "interface_v1"))):
            s = common.store(self.c.path)
            with self.assertRaises(ValueError) as cm:
                s.register_mem_pool_host(pool)
            for w in words:
                self.assertIn(w, str(cm.exception))
            s.close()
        # the copying path does not need the addresses
        s = common.store(self.c.path, extra={"interface_v1": 0})
        s.register_mem_pool_host(NoMeta())
        s.close()

    def test_each_call_reports_its_failure(self):
        s = common.store(self.c.path, pool=MHAPool())

        def broken(*a):
            raise RuntimeError("no addresses")
        s._meta = broken
        k = common.keys("broken", 2)
        with self.assertLogs("peercache", "ERROR") as cm:
            self.assertEqual(s.batch_set_v1(k, MHAPool().indices([0, 1])), [False, False])
            self.assertEqual(s.batch_get_v1(k, MHAPool().indices([0, 1])), [False, False])
        self.assertEqual(len(cm.records), 2, [r.getMessage() for r in cm.records])
        self.assertIn("batch_set_v1", cm.records[0].getMessage())
        self.assertIn("batch_get_v1", cm.records[1].getMessage())
        s.close()


class Addresses(unittest.TestCase):
    """The addresses batch calls use are get_page_buffer_meta's, whether computed
    (page-major pools: a line in the first token index) or asked of the pool."""

    @classmethod
    def setUpClass(cls):
        cls.c = Cluster(embed=("n0", "n1", "n2"))

    @classmethod
    def tearDownClass(cls):
        cls.c.close()

    def check(self, pool, mla, affine):
        import torch
        s = common.store(self.c.path, pool, is_mla_model=mla)
        self.assertEqual(s._layout.affine is not None, affine)
        g = torch.Generator().manual_seed(1)
        pages = torch.randperm(pool.size // pool.page_size, generator=g)[:5].tolist()
        idx = pool.indices(pages)
        ptrs, sizes = s._meta(s._layout, ["k"] * len(pages), idx)
        want = pool.get_page_buffer_meta(idx)
        self.assertEqual((list(ptrs), list(sizes)), (list(want[0]), list(want[1])))
        s.close()

    def test_mha_and_mla_computed(self):
        self.check(MHAPool(pages=32), False, True)
        self.check(MLAPool(pages=32), True, True)

    def test_other_pools_asked(self):
        class Shuffled(MHAPool):  # pages not in address order: not a line
            def get_page_buffer_meta(self, indices):
                ptrs, sizes = super().get_page_buffer_meta(indices)
                base = self.kv_buffer.data_ptr()
                half = self.kv_buffer[0].numel() * self.itemsize
                obj = sizes[0]
                out = []
                for k, v in zip(ptrs[0::2], ptrs[1::2]):
                    page = (k - base) // obj
                    k2 = base + ((page * 5) % (self.size // self.page_size)) * obj
                    out += [k2, k2 + half]
                return out, sizes
        self.check(Shuffled(pages=32), False, False)


def pcstore_dtype_fp16():
    import torch
    return torch.float16


class Contract(unittest.TestCase):
    def test_subclasses_sglangs_base(self):
        if pcstore.HAVE_SGLANG:
            from sglang.srt.mem_cache.hicache_storage import HiCacheStorage
            self.assertTrue(issubclass(PeerCacheStore, HiCacheStorage))
        for name in ("get", "batch_get", "set", "batch_set", "exists", "batch_exists",
                     "batch_get_v1", "batch_set_v1", "clear", "get_stats", "close",
                     "register_mem_pool_host"):
            self.assertIn(name, PeerCacheStore.__dict__, name)
        self.assertFalse(getattr(PeerCacheStore, "__abstractmethods__", set()))


if __name__ == "__main__":
    unittest.main()
