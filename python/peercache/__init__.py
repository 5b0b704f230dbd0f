"""peercache - Python access to the peercache distributed KV-cache page store.

peercache.store.PeerCacheStore is SGLang HiCache's storage backend (load it with
--hicache-storage-backend dynamic); peercache._lib is the C API for any program.
Importing this package loads nothing: the library is loaded on first use.
"""
__version__ = "0.2.0"
__all__ = ["PeerCacheStore", "Store", "PageTable", "version"]


def __getattr__(name):
    if name == "PeerCacheStore":
        from .store import PeerCacheStore

        return PeerCacheStore
    if name in ("Store", "PageTable", "version"):
        from . import _lib

        return getattr(_lib, name)
    raise AttributeError("module 'peercache' has no attribute %r" % name)
