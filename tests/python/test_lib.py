"""The ctypes binding against the header it mirrors, and PageTable's packing."""
import ctypes
import os
import re
import subprocess
import unittest

import common  # noqa: F401  (sys.path)
from peercache import _lib


class Abi(unittest.TestCase):
    """Sizes and offsets of the structs, as a program compiled against peercache.h
    sees them; a header change that the binding does not follow fails here."""

    @classmethod
    def setUpClass(cls):
        probe = os.environ.get("PEERCACHE_ABI_PROBE")
        if not probe:
            raise unittest.SkipTest("PEERCACHE_ABI_PROBE not set (ctest sets it)")
        out = subprocess.run([probe], check=True, capture_output=True, text=True).stdout
        cls.c = dict(line.rsplit(" ", 1) for line in out.splitlines())

    def check(self, cstruct, pystruct):
        self.assertEqual(int(self.c[cstruct]), ctypes.sizeof(pystruct), cstruct)
        for key, off in self.c.items():
            if key.startswith(cstruct + "."):
                field = key.split(".", 1)[1]
                self.assertEqual(int(off), getattr(pystruct, field).offset, key)

    def test_store_opts(self):
        self.check("pc_store_opts", _lib.PcStoreOpts)

    def test_page(self):
        self.check("pc_page", _lib.PcPage)

    def test_metrics(self):
        self.check("pc_metrics", _lib.PcMetrics)

    def test_header_version(self):
        self.assertEqual(self.c["version"], "%d.%d" % (_lib.API_MAJOR, _lib.API_MINOR))

    def test_metric_names_follow_the_header(self):
        header = os.environ.get("PEERCACHE_HEADER")
        if not header:
            self.skipTest("PEERCACHE_HEADER not set")
        text = open(header).read()
        body = re.search(r"struct pc_metrics \{(.*?)\};", text, re.S).group(1)
        body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
        names = []
        for decl in body.split(";"):
            m = re.match(r"\s*uint64_t\s+(.*)", decl, re.S)
            if m:
                names += [n.strip() for n in m.group(1).split(",")]
        self.assertEqual(tuple(names), _lib.METRIC_FIELDS)


class Library(unittest.TestCase):
    def test_version_and_path(self):
        self.assertRegex(_lib.version(), r"^0\.\d+\.\d+$")
        if os.environ.get("PEERCACHE_LIB"):
            self.assertEqual(_lib.library_path(), os.environ["PEERCACHE_LIB"])

    def test_open_error_is_one_line(self):
        with self.assertRaises(_lib.StoreError) as cm:
            _lib.Store("/nonexistent/topology.yaml")
        self.assertIn("/nonexistent/topology.yaml", str(cm.exception))
        self.assertNotIn("\n", str(cm.exception))


class Table(unittest.TestCase):
    def test_columns(self):
        keys = [b"a", b"bbb", b"cc"]
        t = _lib.PageTable(keys, [10, 20, 30], [1, 2, 3], [4, 5, 6])
        for i, k in enumerate(keys):
            p = t.pages[i]
            self.assertEqual(ctypes.string_at(p.key, p.key_len), k)
            self.assertEqual((p.data, p.len, p.cap, p.status), ((i + 1) * 10, i + 1, i + 4, 0))
        t.pages[1].status = -2
        self.assertEqual(t.statuses(), [0, -2, 0])

    def test_uniform_keys_and_empty(self):
        keys = [b"k%03d" % i for i in range(100)]
        t = _lib.PageTable(keys, None, [7] * 100)
        self.assertEqual(ctypes.string_at(t.pages[99].key, t.pages[99].key_len), b"k099")
        self.assertEqual((t.pages[5].data, t.pages[5].cap), (None, 7))
        self.assertEqual(_lib.PageTable([], None, []).statuses(), [])

    def test_empty_keys(self):
        # The library takes a key of length 0 (the empty byte string) like any other.
        t = _lib.PageTable([b"", b""], None, [0, 0])
        self.assertEqual(t.n, 2)
        self.assertEqual([t.pages[i].key_len for i in range(2)], [0, 0])
        self.assertEqual(t.statuses(), [0, 0])


if __name__ == "__main__":
    unittest.main()
