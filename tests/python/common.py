"""common.py - what the Python test modules share: keys, configs, store factories."""
import hashlib
import logging
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

# The library's info lines (slot regions, layouts) would bury unittest's output.
logging.basicConfig(level=os.environ.get("PEERCACHE_TEST_LOG", "WARNING"),
                    format="%(levelname)s %(name)s: %(message)s")

from peercache.store import PeerCacheStore, StorageConfig  # noqa: E402


def keys(tag, n, start=0):
    """n SGLang-style page hashes (hex SHA-256), distinct per tag."""
    return [hashlib.sha256(("%s/%d" % (tag, i)).encode()).hexdigest()
            for i in range(start, start + n)]


def config(topology, model="org/model-a", **kw):
    extra = {"backend_name": "peercache", "module_path": "peercache.store",
             "class_name": "PeerCacheStore", "interface_v1": 1, "topology": topology}
    extra.update(kw.pop("extra", {}))
    return StorageConfig(model_name=model, extra_config=extra, **kw)


def store(topology, pool=None, **kw):
    s = PeerCacheStore(config(topology, **kw), {})
    if pool is not None:
        s.register_mem_pool_host(pool)
    return s
