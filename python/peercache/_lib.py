"""peercache._lib - the C library's public API (peercache.h, version 0.2) over ctypes.

What it is for: opening a store, batch set/get/exists on pages given as pointer and
length, registering caller memory, reading the metrics, routing the library's log
lines into `logging`. Any Python program can use it; peercache.store builds SGLang's
contract on top. What it is not for: deciding key names, layouts or what a partial
page means (that is the caller's), or the tiered pool (pc_tier_*).

The library is loaded with ctypes.CDLL, so every call releases the GIL: batches from
several threads run in parallel in the C code, which is thread-safe per store.

Where the library comes from, first match wins:
  1. $PEERCACHE_LIB, a path to libpeercache.so;
  2. the one installed with this package (cmake --install writes _paths.py), then the
     system's (ld.so's search path, e.g. after ldconfig);
  3. the build tree of a source checkout: <repo>/build/libpeercache.so.
"""
from __future__ import annotations

import atexit
import ctypes
import errno
import logging
import os
import threading
import weakref
from array import array
from typing import Iterable, Optional, Sequence

logger = logging.getLogger("peercache")
_c_logger = logging.getLogger("peercache.lib")

# The header version this binding mirrors. A library of another MAJOR may lay the
# structs out differently and is refused; a newer MINOR only adds (sized structs).
API_MAJOR, API_MINOR = 0, 2

PC_ERR_MAX = 512

# --------------------------------------------------------------------------- structs
# Each mirrors its declaration in core/include/peercache/peercache.h field by field;
# tests/python/test_lib.py compares sizes and offsets with a program compiled against
# the header, so a change there fails a test instead of corrupting memory.


class PcStoreOpts(ctypes.Structure):
    _fields_ = [
        ("size", ctypes.c_uint32),
        ("topology", ctypes.c_char_p),
        ("topo", ctypes.c_void_p),
        ("node", ctypes.c_char_p),
        ("fabric", ctypes.c_char_p),
        ("set", ctypes.POINTER(ctypes.c_char_p)),
        ("err", ctypes.c_char_p),
        ("errlen", ctypes.c_size_t),
    ]


class PcPage(ctypes.Structure):
    _fields_ = [
        ("key", ctypes.c_void_p),
        ("key_len", ctypes.c_size_t),
        ("data", ctypes.c_void_p),
        ("len", ctypes.c_size_t),
        ("cap", ctypes.c_size_t),
        ("status", ctypes.c_int),
    ]


METRIC_FIELDS = (
    "write_requests", "bytes_written", "write_failures", "evictions", "skipped_oversize",
    "read_requests", "hits", "hit_bytes", "bytes_read", "first_phase_hits",
    "miss_absent", "miss_other_key", "miss_torn", "miss_length", "miss_checksum",
    "miss_unreachable", "exists_requests", "exists_hits", "batches", "round_trips",
    "layout_fetches", "disk_hits", "promote_rpcs", "spill_demoted", "spill_promoted",
    "spill_corrupt", "spill_failures", "spill_dropped", "spill_stale", "pool_keys",
    "dir_entries", "remote_touches", "orphans_freed", "rpc_refused", "dir_refused",
    "claims_taken_over", "promote_failures", "spill_read_errors",
)


class PcMetrics(ctypes.Structure):
    _fields_ = [("size", ctypes.c_uint32), ("reserved", ctypes.c_uint32)] + [
        (name, ctypes.c_uint64) for name in METRIC_FIELDS
    ]


# Words of one struct pc_page seen as uint64 (key, key_len, data, len, cap, status).
_PAGE_WORDS = ctypes.sizeof(PcPage) // 8
_LOG_SINK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p)
_LEVELS = {0: logging.ERROR, 1: logging.WARNING, 2: logging.INFO, 3: logging.DEBUG}


class LibraryError(RuntimeError):
    """The library could not be found or loaded, or is of an incompatible version."""


class StoreError(RuntimeError):
    """pc_store_open (or another call that has no per-page status) failed."""

    def __init__(self, message: str, err: int = 0):
        super().__init__(message)
        self.errno = err


# --------------------------------------------------------------------------- loading


def _candidates() -> list[str]:
    env = os.environ.get("PEERCACHE_LIB")
    if env:
        return [env]
    here = os.path.dirname(os.path.abspath(__file__))
    out = []
    try:
        from . import _paths  # written by cmake --install, absent in a source tree

        out.append(os.path.normpath(os.path.join(here, _paths.LIBRARY_RELATIVE)))
    except ImportError:
        pass
    out.append("libpeercache.so.%d" % API_MAJOR)
    out.append(os.path.normpath(os.path.join(here, "..", "..", "build", "libpeercache.so")))
    return out


def _declare(lib: ctypes.CDLL) -> None:
    vp, sz, i, cp = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_char_p
    protos = {
        "pc_version": ([], cp),
        "pc_log_set_sink": ([_LOG_SINK, vp], None),
        "pc_log_set_level": ([i], None),
        "pc_store_open": ([ctypes.POINTER(PcStoreOpts), ctypes.POINTER(vp)], i),
        "pc_store_close": ([vp], None),
        "pc_batch_set": ([vp, ctypes.POINTER(PcPage), sz], i),
        "pc_batch_get": ([vp, ctypes.POINTER(PcPage), sz], i),
        "pc_batch_exists": ([vp, ctypes.POINTER(PcPage), sz], i),
        "pc_store_metrics": ([vp, ctypes.POINTER(PcMetrics)], i),
        "pc_store_register": ([vp, vp, sz], i),
        "pc_store_unregister": ([vp, vp], None),
        "pc_store_node": ([vp], cp),
        "pc_store_set_member": ([vp, cp, ctypes.c_bool], i),
        "pc_store_metrics_text": ([vp, cp, sz], ctypes.c_long),
        "pc_metrics_serve": ([vp, cp, ctypes.c_uint16, ctypes.POINTER(vp)], i),
        "pc_metrics_server_port": ([vp], ctypes.c_uint16),
        "pc_metrics_server_attach": ([vp, vp, cp], None),
        "pc_metrics_server_close": ([vp], None),
    }
    for name, (args, res) in protos.items():
        fn = getattr(lib, name)
        fn.argtypes = args
        fn.restype = res


def _load() -> tuple[ctypes.CDLL, str]:
    tried = []
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append(path + " (no such file)")
            continue
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
            continue
        _declare(lib)
        version = lib.pc_version().decode()
        major, minor = (int(x) for x in version.split(".")[:2])
        if major != API_MAJOR or minor < API_MINOR:
            raise LibraryError(
                "%s is libpeercache %s; this package needs %d.%d or a later %d.x: "
                "install a matching library or point $PEERCACHE_LIB at one"
                % (path, version, API_MAJOR, API_MINOR, API_MAJOR))
        return lib, path
    raise LibraryError(
        "libpeercache not found; tried: %s. Set $PEERCACHE_LIB to the path of "
        "libpeercache.so, or install the library (cmake --install build)" % "; ".join(tried))


_lib: Optional[ctypes.CDLL] = None
_lib_path = ""
_load_lock = threading.Lock()
_open_stores: "weakref.WeakSet[Store]" = weakref.WeakSet()


@_LOG_SINK
def _log_sink(_arg, level, line):
    # Called from any library thread (ctypes takes the GIL for it).
    _c_logger.log(_LEVELS.get(level, logging.INFO), "%s", line.decode("utf-8", "replace"))


def lib() -> ctypes.CDLL:
    """The loaded library (loaded on first use), its prototypes declared."""
    global _lib, _lib_path
    if _lib is None:
        with _load_lock:
            if _lib is None:
                handle, path = _load()
                # Before any store opens, as pc_log_set_sink requires.
                handle.pc_log_set_sink(_log_sink, None)
                _lib_path = path
                _lib = handle
                atexit.register(_at_exit)
    return _lib


def library_path() -> str:
    lib()
    return _lib_path


def version() -> str:
    """The library's version, "MAJOR.MINOR.PATCH"."""
    return lib().pc_version().decode()


def _at_exit() -> None:
    # Stores still open stop their threads first; only then may the sink go, since
    # those threads could still be logging through it.
    for s in list(_open_stores):
        s.close()
    if _lib is not None:
        _lib.pc_log_set_sink(ctypes.cast(None, _LOG_SINK), None)


def _c_level_for(py_logger: logging.Logger) -> int:
    lvl = py_logger.getEffectiveLevel()
    if lvl <= logging.DEBUG:
        return 3
    if lvl <= logging.INFO:
        return 2
    if lvl <= logging.WARNING:
        return 1
    return 0


# --------------------------------------------------------------------------- pages


class PageTable:
    """A batch of pages as one struct pc_page array, built column by column.

    keys: the pages' keys, a list of bytes, or (blob, key_len) for keys of one length
    back to back in blob; ptrs: the address of each page's buffer (None: 0, as for
    exists); lens: each page's length (set: the page; get: the expected length;
    exists: its size class, 0 for any); caps: what each buffer holds (default lens).
    scratch: a Scratch whose arrays the table reuses (one thread's, see Scratch).
    The table owns its key bytes while it lives. Filling 256 pages costs a few array
    copies, not a Python object per page.
    """

    __slots__ = ("n", "words", "pages", "_blob")

    def __init__(self, keys, ptrs: Sequence[int] | array | None, lens: Sequence[int] | array,
                 caps: Sequence[int] | array | None = None, scratch: "Scratch | None" = None):
        if isinstance(keys, tuple):
            self._blob, klen = keys
            n = len(self._blob) // klen if klen else 0
            uniform = True
        else:
            n = len(keys)
            self._blob = b"".join(keys)
            klen = len(keys[0]) if n else 0
            uniform = n and len(self._blob) == klen * n and len(set(map(len, keys))) == 1
        self.n = n
        if scratch is not None:
            self.words, self.pages = scratch.arrays(n)
            self.words[5::_PAGE_WORDS] = array("Q", bytes(8 * n))  # statuses of the last use
        else:
            self.words = array("Q", bytes(8 * _PAGE_WORDS * n))
            self.pages = (PcPage * n).from_buffer(self.words) if n else None
        if not n:
            return
        base = ctypes.cast(ctypes.c_char_p(self._blob), ctypes.c_void_p).value or 0
        if uniform:
            # Empty keys (the library takes them) all start at base: range() refuses
            # a step of 0.
            offs: Iterable[int] = (range(base, base + klen * n, klen) if klen else
                                   array("Q", [base]) * n)
            klens = array("Q", [klen]) * n
        else:
            klens = array("Q", map(len, keys))
            offs, pos = [], base
            for k in klens:
                offs.append(pos)
                pos += k
        w = self.words
        w[0::_PAGE_WORDS] = array("Q", offs)
        w[1::_PAGE_WORDS] = klens
        w[2::_PAGE_WORDS] = (array("Q", bytes(8 * n)) if ptrs is None else
                             ptrs if isinstance(ptrs, array) else array("Q", ptrs))
        lens_a = lens if isinstance(lens, array) else array("Q", lens)
        w[3::_PAGE_WORDS] = lens_a
        w[4::_PAGE_WORDS] = lens_a if caps is None else (
            caps if isinstance(caps, array) else array("Q", caps))

    def statuses(self) -> list[int]:
        """Each page's status (0 or -errno) after a batch call."""
        if not self.n:
            return []
        # status is the int at byte 40 of each 48-byte page: every 12th int.
        ints = memoryview(self.words).cast("B").cast("i")
        return ints[10::_PAGE_WORDS * 2].tolist()

    def lengths(self) -> list[int]:
        return self.words[3::_PAGE_WORDS].tolist()


class Scratch(threading.local):
    """Per-thread pc_page arrays for PageTable to reuse, one per batch size: a batch
    builds no new array, and the library reads memory it read in the last call. A
    table built on it is valid until the next table of that size on the same thread."""

    def __init__(self):
        self._by_n: dict = {}

    def arrays(self, n: int):
        a = self._by_n.get(n)
        if a is None:
            if len(self._by_n) >= 16:
                self._by_n.clear()
            words = array("Q", bytes(8 * _PAGE_WORDS * n))
            a = self._by_n[n] = (words, (PcPage * n).from_buffer(words) if n else None)
        return a


# --------------------------------------------------------------------------- store


def strerror(err: int) -> str:
    return "%s (%s)" % (os.strerror(err), errno.errorcode.get(err, err))


class Store:
    """One open pc_store. Batch calls are safe from many threads; close() waits for
    the calls under way and makes later calls fail with -ESHUTDOWN (no exception)."""

    def __init__(self, topology: str, node: Optional[str] = None, fabric: Optional[str] = None,
                 overrides: Sequence[str] = ()):
        L = lib()
        if "PC_LOG_LEVEL" not in os.environ:
            L.pc_log_set_level(_c_level_for(_c_logger))
        err = ctypes.create_string_buffer(PC_ERR_MAX)
        sets = (ctypes.c_char_p * (len(overrides) + 1))(*[s.encode() for s in overrides], None)
        opts = PcStoreOpts(size=ctypes.sizeof(PcStoreOpts), topology=topology.encode(),
                           node=node.encode() if node else None,
                           fabric=fabric.encode() if fabric else None,
                           set=ctypes.cast(sets, ctypes.POINTER(ctypes.c_char_p)),
                           err=ctypes.cast(err, ctypes.c_char_p), errlen=PC_ERR_MAX)
        handle = ctypes.c_void_p()
        ret = L.pc_store_open(ctypes.byref(opts), ctypes.byref(handle))
        if ret:
            msg = err.value.decode("utf-8", "replace") or strerror(-ret)
            raise StoreError(msg, -ret)
        self._lib = L
        self._h = handle.value
        self._cv = threading.Condition()
        self._inflight = 0
        self._closed = False
        self._registered: list[int] = []
        self._metrics_server = None
        _open_stores.add(self)

    # Calls run outside the condition's lock; it only counts them, so that close()
    # never frees the store under a batch (pc_store_close's rule).
    def _enter(self) -> bool:
        with self._cv:
            if self._closed:
                return False
            self._inflight += 1
            return True

    def _leave(self) -> None:
        with self._cv:
            self._inflight -= 1
            if not self._inflight:
                self._cv.notify_all()

    def _batch(self, fn, table: PageTable) -> int:
        if not table.n:
            return 0
        if not self._enter():
            return -errno.ESHUTDOWN
        try:
            return fn(self._h, table.pages, table.n)
        finally:
            self._leave()

    def batch_set(self, table: PageTable) -> int:
        """pc_batch_set: pages stored, or -errno for the call (page statuses in table)."""
        return self._batch(self._lib.pc_batch_set, table)

    def batch_get(self, table: PageTable) -> int:
        """pc_batch_get: hits, or -errno. A hit's bytes are in its buffer."""
        return self._batch(self._lib.pc_batch_get, table)

    def batch_exists(self, table: PageTable) -> int:
        """pc_batch_exists: pages present, or -errno."""
        return self._batch(self._lib.pc_batch_exists, table)

    def register(self, addr: int, length: int) -> int:
        """pc_store_register: 0 or -errno. The memory must stay mapped until close."""
        if not self._enter():
            return -errno.ESHUTDOWN
        try:
            ret = self._lib.pc_store_register(self._h, addr, length)
            if not ret:
                self._registered.append(addr)
            return ret
        finally:
            self._leave()

    def unregister(self, addr: int) -> None:
        if not self._enter():
            return
        try:
            self._lib.pc_store_unregister(self._h, addr)
            if addr in self._registered:
                self._registered.remove(addr)
        finally:
            self._leave()

    def metrics(self) -> dict[str, int]:
        """The store's counters since open (pc_store_metrics), by name."""
        m = PcMetrics(size=ctypes.sizeof(PcMetrics))
        if not self._enter():
            return {}
        try:
            self._lib.pc_store_metrics(self._h, ctypes.byref(m))
        finally:
            self._leave()
        return {name: getattr(m, name) for name in METRIC_FIELDS}

    def metrics_text(self) -> str:
        """The store's metrics in the Prometheus text format (pc_store_metrics_text)."""
        if not self._enter():
            return ""
        try:
            n = self._lib.pc_store_metrics_text(self._h, None, 0)
            while n >= 0:
                buf = ctypes.create_string_buffer(n + 1)
                got = self._lib.pc_store_metrics_text(self._h, buf, n + 1)
                if got <= n:
                    return buf.value.decode()
                n = got  # it grew between the two calls
            raise StoreError(strerror(-n), -n)
        finally:
            self._leave()

    def serve_metrics(self, host: str = "127.0.0.1", port: int = 0) -> int:
        """Serve /metrics, /healthz and /readyz over HTTP (pc_metrics_serve) until
        close(); returns the port (port 0: a free one)."""
        if self._metrics_server is not None:
            return self._lib.pc_metrics_server_port(self._metrics_server)
        if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
            raise ValueError("serve_metrics: port %r is not a TCP port; give 0 to 65535 "
                             "(0: a free one)" % (port,))
        if not self._enter():
            raise StoreError("store is closed", errno.ESHUTDOWN)
        try:
            srv = ctypes.c_void_p()
            ret = self._lib.pc_metrics_serve(self._h, host.encode(), port, ctypes.byref(srv))
            if ret:
                raise StoreError("metrics endpoint on %s port %d: %s" % (host, port, strerror(-ret)), -ret)
            self._metrics_server = srv.value
            return self._lib.pc_metrics_server_port(srv.value)
        finally:
            self._leave()

    def node(self) -> Optional[str]:
        """This store's node name, or None for a client."""
        if not self._enter():
            return None
        try:
            name = self._lib.pc_store_node(self._h)
        finally:
            self._leave()
        return name.decode() if name else None

    def set_member(self, node: str, member: bool) -> int:
        """pc_store_set_member: 0, -ENXIO for an unknown node, or -errno."""
        if not self._enter():
            return -errno.ESHUTDOWN
        try:
            return self._lib.pc_store_set_member(self._h, node.encode(), member)
        finally:
            self._leave()

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Wait for the batches under way, then pc_store_close. Idempotent."""
        with self._cv:
            if self._closed:
                return
            self._closed = True
            while self._inflight:
                self._cv.wait()
        if self._metrics_server is not None:
            self._lib.pc_metrics_server_attach(self._metrics_server, None, b"shutting down")
            self._lib.pc_metrics_server_close(self._metrics_server)
            self._metrics_server = None
        for addr in self._registered:
            self._lib.pc_store_unregister(self._h, addr)
        self._registered.clear()
        self._lib.pc_store_close(self._h)
        self._h = None
        _open_stores.discard(self)

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
