"""peercache.store - PeerCacheStore, SGLang HiCache's L3 storage backend over peercache.

Loaded by SGLang's dynamic backend factory (`--hicache-storage-backend dynamic` with
{"backend_name": "peercache", "module_path": "peercache.store", "class_name":
"PeerCacheStore", "interface_v1": 1, "topology": ...}): it calls
PeerCacheStore(storage_config, {}) and then register_mem_pool_host(host_pool).

What it adds to the C store (peercache._lib) is SGLang's contract:
  * a page is the objects get_page_buffer_meta gives for it (MHA: K then V, each all
    layers of the page; MLA: one), read and written in place in the host pool;
  * objects are named {namespace}:{hash}{rank suffix}{part}: the namespace is the
    model name and a fingerprint of the pool's layout (dtype, page size, layer and
    head shape, layout, part sizes), so another model or layout misses cleanly;
    MHA carries _{tp_rank}[_{pp_rank}]_k/_v, MLA is rank-replicated: no tp rank,
    written by tp_rank 0 only, read by all;
  * batch calls never raise and never return None (SGLang's prefetch and backup
    threads die on either): one bool per page, a count for exists.
Not for: the v2 (hybrid pool) interface, head splitting across TP sizes
(tp_lcm_size), deleting pages (the C API has no delete: clear() only warns).
"""
from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from abc import ABC, abstractmethod
from array import array
from dataclasses import dataclass
from typing import Any, List, Optional, Sequence

from . import _config
from ._lib import PageTable, Scratch, Store, StoreError, strerror

logger = logging.getLogger("peercache.store")

try:  # SGLang present: be one of its backends (its factory checks issubclass).
    from sglang.srt.mem_cache.hicache_storage import HiCacheStorage as _Base

    HAVE_SGLANG = True
except ImportError:
    HAVE_SGLANG = False

    class _Base(ABC):  # type: ignore[no-redef]
        """The abstract methods of SGLang's HiCacheStorage, for use without SGLang."""

        def register_mem_pool_host(self, mem_pool_host: Any) -> None:
            self.mem_pool_host = mem_pool_host

        def batch_get_v1(self, keys, host_indices, extra_info=None):
            raise NotImplementedError()

        def batch_set_v1(self, keys, host_indices, extra_info=None):
            raise NotImplementedError()

        @abstractmethod
        def get(self, key, target_location=None, target_sizes=None):
            pass

        @abstractmethod
        def batch_get(self, keys, target_locations=None, target_sizes=None):
            pass

        @abstractmethod
        def set(self, key, value=None, target_location=None, target_sizes=None):
            pass

        @abstractmethod
        def batch_set(self, keys, values=None, target_locations=None, target_sizes=None):
            pass

        @abstractmethod
        def exists(self, key):
            pass

        def batch_exists(self, keys, extra_info=None):
            for i, k in enumerate(keys):
                if not self.exists(k):
                    return i
            return len(keys)

        def clear(self) -> None:
            pass

        def get_stats(self):
            return None

StorageMetrics = None
for _mod in ("sglang.srt.observability.metrics_collector", "sglang.srt.metrics.collector"):
    try:
        StorageMetrics = __import__(_mod, fromlist=["StorageMetrics"]).StorageMetrics
        break
    except (ImportError, AttributeError):
        continue


@dataclass
class StorageConfig:
    """SGLang's HiCacheStorageConfig, for use without SGLang (same field names)."""

    tp_rank: int = 0
    tp_size: int = 1
    pp_rank: int = 0
    pp_size: int = 1
    attn_cp_rank: int = 0
    attn_cp_size: int = 1
    is_mla_model: bool = False
    enable_storage_metrics: bool = False
    is_page_first_layout: bool = True
    model_name: Optional[str] = None
    model_identity_hash: Optional[str] = None
    dp_rank: int = 0
    dp_size: int = 1
    tp_lcm_size: Optional[int] = None
    should_split_heads: bool = False
    extra_config: Optional[dict] = None


# Layouts whose pages get_page_buffer_meta gives as one object per part (MHA: K and
# V of all layers; MLA: one), i.e. that can move straight between the NIC and the pool.
ZERO_COPY_LAYOUTS = ("page_first", "page_first_direct", "page_head")


class _Indices(list):
    """Host indices for one page, enough for get_page_buffer_meta (len, tolist)."""

    def tolist(self):
        return list(self)


@dataclass(frozen=True)
class _Layout:
    """What register_mem_pool_host learnt of the pool; replaced whole, never mutated."""

    pool: Any
    page_size: int
    parts: int
    part_sizes: tuple
    prefix: bytes                   # b"{model}@{fingerprint}:"
    suffixes: tuple                 # one bytes suffix per part
    zero_copy: bool
    fingerprint: str
    description: str
    prefix_str: str = ""
    suffix_strs: tuple = ()
    uniform: bool = False           # ASCII prefix and suffixes of one length
    # Object j of the page whose first token is f starts at base + f * stride +
    # deltas[j] (checked against get_page_buffer_meta at registration), or None.
    affine: Optional[tuple] = None


    def page_bytes(self) -> int:
        return sum(self.part_sizes)


class _RateLimited:
    """Logs each kind of line (its format) at once the first time, then at most once
    a minute with a count of those left out: a dead node must not flood the log."""

    def __init__(self, interval: float = 60.0):
        self.interval = interval
        self.last: dict = {}
        self.skipped: dict = {}
        self.lock = threading.Lock()

    def __call__(self, log, msg: str, *args, exc_info: bool = False) -> None:
        with self.lock:
            now = time.monotonic()
            if now - self.last.get(msg, -1e9) < self.interval:
                self.skipped[msg] = self.skipped.get(msg, 0) + 1
                return
            skipped = self.skipped.pop(msg, 0)
            self.last[msg] = now
        if skipped:
            msg += " (%d more like it since the last such line)" % skipped
        log(msg, *args, exc_info=exc_info)


_ADAPTER_COUNTERS = (
    "get_calls", "get_pages", "get_hits", "get_partial", "set_calls", "set_pages", "set_ok",
    "set_present", "set_skipped_rank", "exists_calls", "exists_pages", "exists_hits",
    "calls_failed", "parts_unreachable", "parts_oversize", "errors",
)


class PeerCacheStore(_Base):
    """SGLang HiCache storage backend on a peercache cluster. Thread-safe."""

    def __init__(self, storage_config: Any = None, kwargs: Optional[dict] = None):
        cfg = storage_config if storage_config is not None else StorageConfig()
        g = lambda name, default: (getattr(cfg, name, default)  # noqa: E731
                                   if getattr(cfg, name, None) is not None else default)
        self.tp_rank, self.tp_size = int(g("tp_rank", 0)), int(g("tp_size", 1))
        self.pp_rank, self.pp_size = int(g("pp_rank", 0)), int(g("pp_size", 1))
        self.cp_rank, self.cp_size = int(g("attn_cp_rank", 0)), int(g("attn_cp_size", 1))
        self.dp_rank = int(g("dp_rank", 0))
        self.is_mla = bool(g("is_mla_model", False))
        self.model_name = g("model_name", None)
        # SGLang's hash of model path, revision, dtype, quantization and KV dtype,
        # where it gives one
        self.model_identity = g("model_identity_hash", None)
        self.mem_pool_host = None
        if g("should_split_heads", False):
            raise ValueError("peercache: tp_lcm_size larger than tp_size (splitting heads for "
                             "ranks of other TP sizes) is not supported; drop tp_lcm_size from "
                             "the extra config")
        extra = g("extra_config", None) or {}
        ranks = {"tp_rank": self.tp_rank, "pp_rank": self.pp_rank, "dp_rank": self.dp_rank,
                 "attn_cp_rank": self.cp_rank}
        self.config = _config.parse(extra, ranks, {"tp_rank": self.tp_size,
                                                   "pp_rank": self.pp_size,
                                                   "dp_rank": int(g("dp_size", 1)),
                                                   "attn_cp_rank": self.cp_size})
        if not self.config.interface_v1:
            logger.warning("peercache: extra_config has no \"interface_v1\": 1, so SGLang uses "
                           "the copying get/set path instead of batch_get_v1/batch_set_v1 "
                           "(zero-copy); add it")
        try:
            self.store = Store(self.config.topology, self.config.node,
                               overrides=self.config.overrides)
        except StoreError as e:
            msg = str(e)
            key = self.config.key_of(msg) or ("node" if "no node named" in msg else "topology")
            if e.errno == 22:  # EINVAL: a config or topology problem the user can fix
                raise ValueError("peercache extra_config[%r]: %s" % (key, msg)) from None
            raise RuntimeError("peercache: could not open the store: %s" % msg) from None

        self._layout: Optional[_Layout] = None
        self._scratch = Scratch()
        self._lock = threading.Lock()
        self._counters = dict.fromkeys(_ADAPTER_COUNTERS, 0)
        self._metrics_on = bool(g("enable_storage_metrics", False)) and StorageMetrics is not None
        self._prefetch_pgs: list = []
        self._backup_pgs: list = []
        self._prefetch_bw: list = []
        self._backup_bw: list = []
        self._warn = _RateLimited()
        self._registered: list = []
        who = self.store.node()
        logger.info("PeerCacheStore: %s of %s, tp %d/%d pp %d/%d%s, model %s, library %s",
                    "node " + who if who else "client", self.config.topology, self.tp_rank,
                    self.tp_size, self.pp_rank, self.pp_size, ", MLA" if self.is_mla else "",
                    self.model_name or "(unnamed)", _lib_version())
        if kwargs:
            logger.debug("PeerCacheStore: ignoring factory kwargs %s", sorted(kwargs))

    # ------------------------------------------------------------------ the pool

    def register_mem_pool_host(self, mem_pool_host: Any) -> None:
        """Learn the pool's layout, name its pages, and register its memory with the
        store (pc_store_register), so over RDMA pages move between NIC and pool."""
        super().register_mem_pool_host(mem_pool_host)
        pool = mem_pool_host
        if getattr(pool, "kv_buffer", None) is None:
            raise ValueError("peercache: this host pool holds no KV buffer (a logical anchor of "
                             "a hybrid model); its side pools need SGLang's v2 storage "
                             "interface, which peercache does not implement")
        layout = str(getattr(pool, "layout", "?"))
        page_size = int(getattr(pool, "page_size", 1))
        zero_copy = layout in ZERO_COPY_LAYOUTS or (self.is_mla and layout != "layer_first")
        if not zero_copy and self.config.interface_v1:
            raise ValueError(
                "peercache: the host pool's layout %r cannot be read and written zero-copy "
                "(get_page_buffer_meta gives one object per layer); start SGLang with "
                "--hicache-mem-layout page_first (or page_first_direct)" % layout)
        sizes = self._part_sizes(pool, page_size, zero_copy)
        desc = self._describe(pool, layout, page_size, sizes)
        fp = hashlib.sha256(json.dumps(desc, sort_keys=True).encode()).hexdigest()[:16]
        model = "-".join(self.model_name.split("/")) if self.model_name else "_"
        prefix = ("%s@%s:" % (model, fp)).encode()
        affine = self._affine(pool, page_size, sizes) if zero_copy else None
        suffixes = tuple(self._suffixes(len(sizes)))
        lay = _Layout(pool=pool, page_size=page_size, parts=len(sizes), part_sizes=tuple(sizes),
                      prefix=prefix, suffixes=suffixes, zero_copy=zero_copy, fingerprint=fp,
                      description=json.dumps(desc, sort_keys=True),
                      prefix_str=prefix.decode(), suffix_strs=tuple(x.decode() for x in suffixes),
                      uniform=prefix.isascii() and len(set(map(len, suffixes))) == 1,
                      affine=affine)
        nbytes, nregions = self._register_memory(pool)
        self._layout = lay
        logger.info("PeerCacheStore: host pool %s, layout %s, %d tokens a page, %d part(s) of %s "
                    "bytes; namespace %s; %d bytes in %d region(s) registered",
                    type(pool).__name__, layout, page_size, len(sizes),
                    "/".join(str(s) for s in sizes), prefix.decode(), nbytes, nregions)
        if not self.model_name:
            logger.warning("peercache: SGLang gave no model_name; pages of different models "
                           "with the same layout would share keys. Pass --served-model-name")

    def _part_sizes(self, pool: Any, page_size: int, zero_copy: bool) -> list:
        """Byte sizes of a page's objects, as get_page_buffer_meta gives them. For the
        zero-copy calls a pool that cannot give them is refused here (every call would
        fail on it and count as a miss); the copying path derives them."""
        v1 = self.config.interface_v1
        if zero_copy:
            try:
                ptrs, sizes = pool.get_page_buffer_meta(_Indices(range(page_size)))
            except Exception as e:
                if v1:
                    raise ValueError(
                        "peercache: the host pool %s cannot give its pages' addresses "
                        "(get_page_buffer_meta raised %s: %s), which batch_get_v1 and "
                        "batch_set_v1 read and write; drop \"interface_v1\" from the extra "
                        "config (pages are then copied)" % (type(pool).__name__,
                                                             type(e).__name__, e)) from None
                logger.debug("get_page_buffer_meta probe failed", exc_info=True)
                ptrs = sizes = None
            if sizes is not None:
                if sizes and len(ptrs) == len(sizes) and (self.is_mla or len(sizes) == 2):
                    return [int(s) for s in sizes]
                if v1:
                    raise ValueError(
                        "peercache: the host pool %s gives a page as %d object(s) of %s "
                        "bytes where %s page is %s; drop \"interface_v1\" from the extra "
                        "config (pages are then copied)"
                        % (type(pool).__name__, len(sizes), [int(x) for x in sizes],
                           "an MLA" if self.is_mla else "an MHA",
                           "one object" if self.is_mla else "a K and a V object"))
        per_token = int(pool.get_size_per_token())
        if self.is_mla:
            return [per_token * page_size]
        return [per_token * page_size // 2] * 2

    @staticmethod
    def _affine(pool: Any, page_size: int, sizes: list) -> Optional[tuple]:
        """(base, stride, deltas) when get_page_buffer_meta's addresses are that line in
        the page's first token index (SGLang's page-major layouts are), from two pages
        asked of it; then a batch computes them with one tensor op instead of a Python
        loop over pages (get_page_buffer_meta was a third of batch_get_v1's own time)."""
        try:
            pages = max(1, int(getattr(pool, "size", page_size)) // page_size)
            far = min(pages - 1, 7) * page_size
            p0, s0 = pool.get_page_buffer_meta(_Indices(range(page_size)))
            p1, s1 = pool.get_page_buffer_meta(_Indices(range(far, far + page_size)))
        except Exception:
            return None
        if list(s0) != list(sizes) or list(s1) != list(sizes) or len(p0) != len(p1):
            return None
        base = int(p0[0])
        deltas = tuple(int(p) - base for p in p0)
        if far == 0:
            return None
        step = int(p1[0]) - base
        if step % far or any(int(b) - int(a) != step for a, b in zip(p0, p1)):
            return None
        return base, step // far, deltas

    def _describe(self, pool: Any, layout: str, page_size: int, sizes: list) -> dict:
        """What a page's bytes depend on: anything here differing makes another
        namespace, so one layout's pages are never read as another's."""
        d = {"v": 1, "class": type(pool).__name__, "layout": layout, "page_size": page_size,
             "dtype": str(getattr(pool, "dtype", "")), "parts": sizes, "mla": self.is_mla}
        # The pool's dtype is how it stores: SGLang stores both fp8 KV formats as
        # uint8, so the device pool's dtype says which one the bytes are.
        kv_dtype = getattr(getattr(pool, "device_pool", None), "dtype", None)
        if kv_dtype is not None:
            d["kv_dtype"] = str(kv_dtype)
        if self.model_identity:
            d["model_identity"] = str(self.model_identity)
        for a in ("layer_num", "head_num", "head_dim", "v_head_dim", "kv_cache_dim",
                  "kv_lora_rank", "qk_rope_head_dim", "start_layer", "end_layer"):
            v = getattr(pool, a, None)
            if isinstance(v, (int, str)) and not isinstance(v, bool):
                d[a] = v
        if not self.is_mla:
            d["tp_size"] = self.tp_size  # which heads a rank holds
        if self.pp_size > 1:
            d["pp_size"] = self.pp_size
        if self.cp_size > 1:
            d["cp_size"] = self.cp_size
        return d

    def _suffixes(self, parts: int) -> list:
        rank = "" if self.is_mla else "_%d" % self.tp_rank
        if self.pp_size > 1:
            rank += "_%d" % self.pp_rank
        if self.cp_size > 1:
            rank += "_cp%d" % self.cp_rank
        if not self.is_mla and parts == 2:
            names = ["_k", "_v"]
        elif parts == 1:
            names = [""]
        else:
            names = ["_p%d" % j for j in range(parts)]
        return [(rank + n).encode() for n in names]

    def _register_memory(self, pool: Any) -> tuple:
        get = getattr(pool, "get_hybrid_pool_buffer", None)
        bufs = get() if callable(get) else pool.kv_buffer
        if not isinstance(bufs, (list, tuple)):
            bufs = [bufs]
        ranges = sorted((int(b.data_ptr()), int(b.numel()) * int(b.element_size()))
                        for b in bufs if b is not None)
        merged: list = []
        for a, n in ranges:
            if n <= 0:
                continue
            if merged and a <= merged[-1][0] + merged[-1][1]:
                end = max(merged[-1][0] + merged[-1][1], a + n)
                merged[-1][1] = end - merged[-1][0]
            else:
                merged.append([a, n])
        total = 0
        for a, n in merged:
            ret = self.store.register(a, n)
            if ret:
                logger.warning("peercache: registering %d bytes of the host pool failed: %s; "
                               "pages will go through the library's bounce buffer",
                               n, strerror(-ret))
            else:
                total += n
                self._registered.append(a)
        return total, len(merged)

    # ------------------------------------------------------------------ helpers

    def _count(self, **kv: int) -> None:
        with self._lock:
            c = self._counters
            for k, v in kv.items():
                c[k] += v

    def _key_blob(self, lay: _Layout, keys: Sequence):
        """The objects' keys for PageTable: (blob, key_len) when they are all of one
        length (SGLang's hex hashes: one str join and one encode for the batch), else
        a list of bytes."""
        sfx = lay.suffix_strs
        if lay.uniform and keys and isinstance(keys[0], str):
            p = lay.prefix_str
            if len(sfx) == 2:
                s0, s1 = sfx
                txt = "".join([f"{p}{h}{s0}{p}{h}{s1}" for h in keys])
            elif len(sfx) == 1:
                s0 = sfx[0]
                txt = "".join([f"{p}{h}{s0}" for h in keys])
            else:
                txt = "".join([f"{p}{h}{s}" for h in keys for s in sfx])
            blob = txt.encode()
            if len(blob) == len(txt) and len(set(map(len, keys))) == 1:
                return blob, len(blob) // (len(keys) * len(sfx))
        return self._keys(lay, keys)

    @staticmethod
    def _key_list(pkeys) -> list:
        if isinstance(pkeys, tuple):
            blob, kl = pkeys
            return [blob[i:i + kl] for i in range(0, len(blob), kl)]
        return pkeys

    def _keys(self, lay: _Layout, keys: Sequence) -> list:
        p, sfx = lay.prefix, lay.suffixes
        try:
            hs = [p + k.encode() for k in keys]
        except AttributeError:  # bytes keys
            hs = [p + (k if isinstance(k, bytes) else str(k).encode()) for k in keys]
        if len(sfx) == 1:
            s = sfx[0]
            return [h + s for h in hs] if s else hs
        return [h + s for h in hs for s in sfx]

    @staticmethod
    def _pages_ok(st: list, parts: int) -> list:
        """Per page: every one of its parts' statuses is 0."""
        if parts == 1:
            return [not s for s in st]
        if parts == 2:
            return [not (a or b) for a, b in zip(st[0::2], st[1::2])]
        return [not any(st[i:i + parts]) for i in range(0, len(st), parts)]

    def _note_statuses(self, st: list) -> None:
        bad = [s for s in st if s and s != -2]  # -ENOENT is a clean miss
        if not bad:
            return
        big = sum(1 for s in bad if s == -27)  # -EFBIG
        self._count(parts_unreachable=len(bad) - big, parts_oversize=big)
        if big:
            lay = self._layout
            self._warn(logger.warning,
                       "peercache: pages of %s bytes are larger than the largest slot size "
                       "class and are not stored; raise store.slot_size_classes (or "
                       "slot_max_page_bytes) in the topology to at least that",
                       "/".join(str(s) for s in lay.part_sizes) if lay else "?")
        if len(bad) > big:
            self._warn(logger.warning, "peercache: %d of %d objects could not be reached "
                       "(first: %s); they count as misses", len(bad) - big, len(st),
                       strerror(-next(s for s in bad if s != -27)))

    def _meta(self, lay: _Layout, keys: Sequence, host_indices: Any):
        """(addresses, sizes) of the n pages' objects, page by page."""
        n = len(keys)
        if lay.affine is not None and hasattr(host_indices, "tolist"):
            if len(host_indices) != n * lay.page_size:
                raise ValueError("%d host indices for %d pages of %d tokens"
                                 % (len(host_indices), n, lay.page_size))
            base, stride, deltas = lay.affine
            first = host_indices[::lay.page_size]
            # In the tensor's own dtype an int32 index times the stride, plus the
            # pool's address, wraps: every address would be wrong.
            if "int64" not in str(getattr(first, "dtype", "int64")):
                first = first.long() if hasattr(first, "long") else first.astype("int64")
            first = first * stride + base
            if len(deltas) == 1:
                ptrs = array("Q", (first + deltas[0] if deltas[0] else first).tolist())
            else:
                ptrs = array("Q", bytes(8 * n * len(deltas)))
                for j, d in enumerate(deltas):
                    ptrs[j::len(deltas)] = array("Q", (first + d if d else first).tolist())
            return ptrs, array("Q", lay.part_sizes) * n
        ptrs, sizes = lay.pool.get_page_buffer_meta(host_indices)
        if len(ptrs) != n * lay.parts or len(sizes) != len(ptrs):
            raise ValueError("get_page_buffer_meta gave %d objects for %d pages of %d parts"
                             % (len(ptrs), n, lay.parts))
        want = list(lay.part_sizes) * n
        if sizes != want and list(sizes) != want:
            raise ValueError("get_page_buffer_meta gave object sizes %s, the pool was "
                             "registered with %s" % (sorted(set(sizes)), lay.part_sizes))
        return ptrs, want

    def _sub(self, table_keys, ptrs, sizes, pages: list, parts: int) -> tuple:
        idx = [i * parts + j for i in pages for j in range(parts)]
        table_keys = self._key_list(table_keys)
        return ([table_keys[i] for i in idx], [ptrs[i] for i in idx] if ptrs is not None else None,
                [sizes[i] for i in idx])

    def _read(self, lay: _Layout, n: int, pkeys: list, ptrs, sizes) -> list:
        """Read n pages into their buffers; True where every part hit.

        The pool is written only for pages whose every part was present a moment
        before (one header-only exists first): a partial page (K present, V absent,
        or one part's owner down) leaves its buffer as it was. The C get reads a
        candidate's payload into the buffer before it checks it, so without that
        check a missing part's page would hold a stale or half-read part. Left open:
        a part evicted between the two calls (its sibling is then written, the page
        is still False; SGLang never uses the bytes of a False page)."""
        t = PageTable(pkeys, ptrs, sizes, scratch=self._scratch)
        ret = self.store.batch_exists(t)
        if ret < 0:
            self._count(calls_failed=1)
            self._warn(logger.warning, "peercache: exists failed: %s", strerror(-ret))
            return [False] * n
        st = t.statuses()
        present = self._pages_ok(st, lay.parts)
        if ret == n * lay.parts:
            pages = None
        else:
            self._note_statuses(st)
            partial = sum(1 for i, ok in enumerate(present)
                          if not ok and not all(st[i * lay.parts:(i + 1) * lay.parts]))
            if partial:
                self._count(get_partial=partial)
            pages = [i for i, ok in enumerate(present) if ok]
            if not pages:
                return [False] * n
            t = PageTable(*self._sub(pkeys, ptrs, sizes, pages, lay.parts), scratch=self._scratch)
        ret = self.store.batch_get(t)
        if ret < 0:
            self._count(calls_failed=1)
            self._warn(logger.warning, "peercache: get failed: %s", strerror(-ret))
            return [False] * n
        st = t.statuses()
        if ret != t.n:
            self._note_statuses(st)
        got = self._pages_ok(st, lay.parts)
        if pages is None:
            return got
        out = [False] * n
        for i, ok in zip(pages, got):
            out[i] = ok
        return out

    def _write(self, lay: _Layout, n: int, pkeys: list, ptrs, sizes) -> list:
        """Store n pages from their buffers, skipping objects already present (keys
        name their content: a present object holds these very bytes)."""
        t = PageTable(pkeys, None, sizes, scratch=self._scratch)
        ret = self.store.batch_exists(t)
        parts = lay.parts
        if ret < 0:
            st = [-1] * t.n  # pkeys may be (blob, key_len): its len is not the count
        else:
            st = t.statuses()
        if ret == n * parts:
            self._count(set_present=n)
            return [True] * n
        missing = [i for i, s in enumerate(st) if s]
        klist = self._key_list(pkeys)
        t = PageTable([klist[i] for i in missing], [ptrs[i] for i in missing],
                      [sizes[i] for i in missing], scratch=self._scratch)
        ret = self.store.batch_set(t)
        if ret < 0:
            self._count(calls_failed=1)
            self._warn(logger.warning, "peercache: set failed: %s", strerror(-ret))
            return [False] * n
        done = [1 if not s else 0 for s in st]
        sst = t.statuses()
        for i, s in zip(missing, sst):
            done[i] = not s
        if ret != t.n:
            self._note_statuses(sst)
        self._count(set_present=sum(1 for ok in self._pages_ok(st, parts) if ok))
        return [all(done[i:i + parts]) for i in range(0, len(done), parts)]

    def _fail_all(self, what: str, n: int):
        self._count(errors=1)
        # what in the format: each call's failures are rate-limited on their own
        self._warn(logger.error, "peercache: " + what + " failed; its %d page(s) count as "
                   "misses", n, exc_info=True)

    def _layout_or_warn(self, what: str) -> Optional[_Layout]:
        lay = self._layout
        if lay is None:
            self._warn(logger.error, "peercache: %s before register_mem_pool_host: nothing to "
                       "read into or write from", what)
        return lay

    # ------------------------------------------------------------------ zero copy (v1)

    def batch_get_v1(self, keys: List[str], host_indices: Any,
                     extra_info: Any = None) -> List[bool]:
        """Read pages straight into the host pool at host_indices (page_size indices
        a page). One bool per key; never raises, never None."""
        n = len(keys)
        if not n:
            return []
        try:
            lay = self._layout_or_warn("batch_get_v1")
            if lay is None:
                return [False] * n
            t0 = time.perf_counter()
            ptrs, sizes = self._meta(lay, keys, host_indices)
            out = self._read(lay, n, self._key_blob(lay, keys), ptrs, sizes)
            hits = sum(out)
            self._count(get_calls=1, get_pages=n, get_hits=hits)
            if self._metrics_on:
                self._record(False, hits, lay, t0)
            return out
        except Exception:
            self._fail_all("batch_get_v1", n)
            return [False] * n

    def batch_set_v1(self, keys: List[str], host_indices: Any,
                     extra_info: Any = None) -> List[bool]:
        """Write pages straight from the host pool. MLA pages are written by tp_rank 0
        only (others return True: rank 0 holds the same bytes). One bool per key."""
        n = len(keys)
        if not n:
            return []
        try:
            lay = self._layout_or_warn("batch_set_v1")
            if lay is None:
                return [False] * n
            if self.is_mla and self.tp_rank != 0:
                self._count(set_calls=1, set_pages=n, set_ok=n, set_skipped_rank=n)
                return [True] * n
            t0 = time.perf_counter()
            ptrs, sizes = self._meta(lay, keys, host_indices)
            out = self._write(lay, n, self._key_blob(lay, keys), ptrs, sizes)
            ok = sum(out)
            self._count(set_calls=1, set_pages=n, set_ok=ok)
            if self._metrics_on:
                self._record(True, ok, lay, t0)
            return out
        except Exception:
            self._fail_all("batch_set_v1", n)
            return [False] * n

    def batch_exists(self, keys: List[str], extra_info: Any = None) -> int:
        """How many leading keys have every part of their page present (one batched,
        header-only call)."""
        n = len(keys)
        if not n:
            return 0
        try:
            lay = self._layout_or_warn("batch_exists")
            if lay is None:
                return 0
            t = PageTable(self._key_blob(lay, keys), None, array("Q", lay.part_sizes) * n,
                          scratch=self._scratch)
            ret = self.store.batch_exists(t)
            if ret < 0:
                self._count(exists_calls=1, exists_pages=n, calls_failed=1)
                self._warn(logger.warning, "peercache: exists failed: %s", strerror(-ret))
                return 0
            ok = self._pages_ok(t.statuses(), lay.parts) if ret != t.n else None
            lead = n if ok is None else (ok.index(False) if False in ok else n)
            self._count(exists_calls=1, exists_pages=n, exists_hits=lead)
            return lead
        except Exception:
            self._fail_all("batch_exists", n)
            return 0

    # ------------------------------------------------------------------ copying path
    # A value is a page's parts back to back (what the pool's get_data_page(flat)
    # gives for these layouts): the same objects as the zero-copy path, so the two
    # paths and batch_exists agree. Targets and values are CPU tensors (contiguous),
    # objects with the buffer protocol, or an address with target_sizes.

    def _buffers(self, lay: _Layout, items: Sequence, sizes: Any, writable: bool) -> list:
        """Addresses of each item's page (0 where it cannot be used), with the
        objects that own them kept alive in the returned list's second half."""
        import ctypes

        page = lay.page_bytes()
        out, keep = [], []
        for i, it in enumerate(items):
            addr = 0
            if hasattr(it, "data_ptr"):
                # a target must be the memory itself; a value may be copied to be contiguous
                t = it if it.is_contiguous() or writable else it.contiguous()
                if (t.is_contiguous() and t.numel() * t.element_size() == page
                        and getattr(t.device, "type", "cpu") == "cpu"):
                    addr = int(t.data_ptr())
                    keep.append(t)
            elif isinstance(it, int):
                sz = sizes[i] if isinstance(sizes, (list, tuple)) else sizes
                addr = it if sz in (None, page) else 0
            elif it is not None:
                mv = memoryview(it)
                if not mv.c_contiguous:  # as for tensors above (cast refuses it)
                    mv = memoryview(b"" if writable else mv.tobytes())
                mv = mv.cast("B")
                if mv.nbytes == page and (not writable or not mv.readonly):
                    if mv.readonly:
                        b = bytes(mv)
                        keep.append(b)
                        addr = ctypes.cast(ctypes.c_char_p(b), ctypes.c_void_p).value or 0
                    else:
                        c = (ctypes.c_char * page).from_buffer(mv)
                        keep.append(c)
                        addr = ctypes.addressof(c)
            out.append(addr)
        return [out, keep]

    def _split(self, lay: _Layout, addrs: list) -> tuple:
        offs, o = [], 0
        for s in lay.part_sizes:
            offs.append(o)
            o += s
        ptrs = [a + off for a in addrs for off in offs]
        return ptrs, list(lay.part_sizes) * len(addrs)

    def batch_get(self, keys: List[str], target_locations: Any = None,
                  target_sizes: Any = None) -> list:
        """Read pages into target_locations (one buffer per key, or new bytearrays
        when None). A list with the target for a hit and None for a miss."""
        n = len(keys)
        lay = self._layout_or_warn("batch_get")
        if lay is None or not n:
            return [None] * n
        try:
            if target_locations is None:
                target_locations = [bytearray(lay.page_bytes()) for _ in range(n)]
            addrs, keep = self._buffers(lay, target_locations, target_sizes, True)
            use = [i for i, a in enumerate(addrs) if a]
            if len(use) != n:
                self._warn(logger.error, "peercache: batch_get: %d target(s) are not %d-byte "
                           "CPU buffers; they count as misses", n - len(use), lay.page_bytes())
            out: list = [None] * n
            if use:
                ptrs, sizes = self._split(lay, [addrs[i] for i in use])
                got = self._read(lay, len(use), self._key_blob(lay, [keys[i] for i in use]),
                                 ptrs, sizes)
                for i, ok in zip(use, got):
                    if ok:
                        out[i] = target_locations[i]
            del keep
            hits = sum(1 for x in out if x is not None)
            self._count(get_calls=1, get_pages=n, get_hits=hits)
            return out
        except Exception:
            self._fail_all("batch_get", n)
            return [None] * n

    def get(self, key: str, target_location: Any = None, target_sizes: Any = None) -> Any:
        """One page into target_location: the target on a hit, else None."""
        return self.batch_get([key], None if target_location is None else [target_location],
                              target_sizes)[0]

    def batch_set(self, keys: List[str], values: Any = None, target_locations: Any = None,
                  target_sizes: Any = None) -> bool:
        """Store pages from values (or target_locations); True when all are stored."""
        n = len(keys)
        src = values if values is not None else target_locations
        lay = self._layout_or_warn("batch_set")
        if lay is None or not n or src is None or len(src) != n:
            return False
        try:
            if self.is_mla and self.tp_rank != 0:
                self._count(set_calls=1, set_pages=n, set_ok=n, set_skipped_rank=n)
                return True
            addrs, keep = self._buffers(lay, src, target_sizes, False)
            if not all(addrs):
                self._warn(logger.error, "peercache: batch_set: values must be %d-byte CPU "
                           "buffers", lay.page_bytes())
                return False
            ptrs, sizes = self._split(lay, addrs)
            out = self._write(lay, n, self._key_blob(lay, keys), ptrs, sizes)
            del keep
            self._count(set_calls=1, set_pages=n, set_ok=sum(out))
            return all(out)
        except Exception:
            self._fail_all("batch_set", n)
            return False

    def set(self, key: str, value: Any = None, target_location: Any = None,
            target_sizes: Any = None) -> bool:
        """Store one page; True when stored (or already present)."""
        return self.batch_set([key], None if value is None else [value],
                              None if target_location is None else [target_location],
                              target_sizes)

    def exists(self, key: str) -> bool:
        """Every part of key's page is present."""
        return self.batch_exists([key]) == 1

    # ------------------------------------------------------------------ the rest

    def clear(self) -> None:
        """Raises: the store deletes nothing (pages are overwritten or evicted), and a
        clear that did nothing while SGLang reports it done would let KV computed
        with old weights be served after a weight update. SGLang's callers catch it
        and report the clear as failed."""
        msg = ("peercache: clear() is not supported (the store has no delete); to drop "
               "every page, restart the cluster's pcd processes (their slots and spill files "
               "go with them), or serve under another --served-model-name (another namespace)")
        logger.error(msg)
        raise NotImplementedError(msg)

    def stats(self) -> dict:
        """The store's counters (pc_store_metrics: hits, misses by reason, bytes, round
        trips) and this adapter's (pages and calls of each kind, failures)."""
        with self._lock:
            adapter = dict(self._counters)
        return {"node": self.store.node(), "namespace": (self._layout.prefix.decode()
                                                         if self._layout else None),
                "store": self.store.metrics(), "adapter": adapter}

    def get_stats(self) -> Any:
        """stats(), a dict. With SGLang's --enable-storage-metrics its collector
        asserts a StorageMetrics: then that (pages and GB/s per batch since the last
        call, SGLang's histograms), with the dict as its .peercache attribute."""
        d = self.stats()
        if not self._metrics_on:
            return d
        with self._lock:
            m = StorageMetrics(prefetch_pgs=self._prefetch_pgs, backup_pgs=self._backup_pgs,
                               prefetch_bandwidth=self._prefetch_bw,
                               backup_bandwidth=self._backup_bw)
            self._prefetch_pgs, self._backup_pgs = [], []
            self._prefetch_bw, self._backup_bw = [], []
        m.peercache = d
        return m

    def _record(self, backup: bool, pages: int, lay: _Layout, t0: float) -> None:
        dt = time.perf_counter() - t0
        with self._lock:
            # the lists get_stats has not handed out yet, taken under its lock
            pgs, bw = ((self._backup_pgs, self._backup_bw) if backup else
                       (self._prefetch_pgs, self._prefetch_bw))
            pgs.append(pages)
            bw.append(pages * lay.page_bytes() / dt / 1e9 if dt > 0 else 0.0)

    def close(self) -> None:
        """Wait for calls under way, then close the store. Later calls miss."""
        self.store.close()

    def __enter__(self) -> "PeerCacheStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _lib_version() -> str:
    from ._lib import version

    return version()
