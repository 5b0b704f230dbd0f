"""live.py - what the test modules against a live pcd cluster share: a TestCase with
one cluster for the whole class (Cluster(**cluster_args)) and the stores its tests
open, closed after the class; byte equality of pages."""
import unittest

import torch

import common
from cluster import Cluster


def same(a, b):
    """Byte equality (random bf16 bits include NaNs, which torch.equal calls unequal)."""
    return torch.equal(a.contiguous().view(torch.uint8), b.contiguous().view(torch.uint8))


class Live(unittest.TestCase):
    cluster_args: dict = {}

    @classmethod
    def setUpClass(cls):
        cls.c = Cluster(**cls.cluster_args)
        cls.stores = []

    @classmethod
    def tearDownClass(cls):
        for s in cls.stores:
            s.close()
        cls.c.close()

    def store(self, pool=None, **kw):
        s = common.store(self.c.path, pool, **kw)
        self.stores.append(s)
        return s

    def assertPagesEqual(self, a, pa, b, pb):
        for x, y in zip(pa, pb):
            self.assertTrue(same(a.page(x), b.page(y)), "page %d vs %d" % (x, y))
