"""peercache._config - the schema of SGLang's --hicache-storage-backend-extra-config.

What it is for: turning the extra_config dict into what pc_store_open takes (a
topology path, a node, "store.key=value" overrides), refusing what is wrong with a
ValueError that names the key and the fix. Not for: range checks the library makes
itself (slot_ways 1..64, sizes): those come back from pc_store_open and are reported
under the key that caused them (see StoreConfig.key_of).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any, Optional

# Keys SGLang itself reads from extra_config (the dynamic loader, the controller):
# accepted and ignored here.
SGLANG_KEYS = frozenset({"backend_name", "module_path", "class_name", "interface_v1",
                         "tp_lcm_size"})
SGLANG_PREFIXES = ("prefetch_",)

# key -> (meaning, default): docs/sglang.md's table is this one.
KEYS = {
    "topology": ("path of the topology YAML; every process of the cluster uses the same file",
                 "required"),
    "discovery_addr": ("host:port[,host:port...] of nodes to learn the node table from "
                       "(store.discovery_addr; needs store.max_nodes in the topology): the "
                       "topology may then list no nodes", "the topology's"),
    "node": ("this process also owns slots as this node of the topology ({tp_rank}, "
             "{pp_rank}, {dp_rank}, {attn_cp_rank} are replaced); absent: a client", "client"),
    "protocol": ("tcp, rdma or rxe (store.protocol)", "the topology's"),
    "mode": ("slotmap or p2p (store.mode)", "the topology's"),
    "slot_max_page_bytes": ("largest page a slot holds (store.slot_max_page_bytes)",
                            "the topology's"),
    "slot_ways": ("ways per bucket (store.slot_ways)", "the topology's"),
    "slot_num_buckets": ("buckets per class per node, 0 = derived (store.slot_num_buckets)",
                         "the topology's"),
    "store.*": ("any store field of the topology by name, e.g. store.timeout_ms", "-"),
}

_ENUMS = {"protocol": ("tcp", "rdma", "rxe"), "mode": ("slotmap", "p2p")}
_SIZE = re.compile(r"^\s*\d+(\.\d+)?\s*([KMGT]i?B|[KMGT]|B)?\s*$", re.I)
_ADDRS = re.compile(r"^\s*[^\s,:]+:\d{1,5}(\s*,\s*[^\s,:]+:\d{1,5})*\s*$")
_NODE_FIELDS = ("tp_rank", "pp_rank", "dp_rank", "attn_cp_rank")


def _fail(key: str, problem: str, fix: str) -> ValueError:
    return ValueError("peercache extra_config[%r]: %s; %s" % (key, problem, fix))


def _int(key: str, v: Any, lo: int) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise _fail(key, "expected an integer, got %r (%s)" % (v, type(v).__name__),
                    "write it as a JSON number, e.g. \"%s\": 4" % key)
    if v < lo:
        raise _fail(key, "%d is below %d" % (v, lo), "use a value of at least %d" % lo)
    return v


def _size(key: str, v: Any) -> str:
    if isinstance(v, int) and not isinstance(v, bool):
        return str(_int(key, v, 1))
    if isinstance(v, str) and _SIZE.match(v):
        return v.strip()
    raise _fail(key, "expected a size, got %r" % (v,),
                "give bytes as a number (262144) or a string with a suffix (\"256KiB\")")


def _scalar(key: str, v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, str) and v and "\n" not in v:
        return v
    if isinstance(v, list) and v and all(isinstance(x, (int, str)) and not isinstance(x, bool)
                                         for x in v):
        return "[%s]" % ",".join(str(x) for x in v)
    raise _fail(key, "expected a number, a string, true/false or a list of sizes, got %r" % (v,),
                "give the value as the topology YAML would")


@dataclass
class StoreConfig:
    """What extra_config asks of pc_store_open."""

    topology: str
    node: Optional[str] = None
    overrides: list[str] = field(default_factory=list)
    interface_v1: bool = False
    # "store.x=..." -> the extra_config key it came from, for the library's errors
    origin: dict[str, str] = field(default_factory=dict)

    def key_of(self, message: str) -> Optional[str]:
        """The extra_config key a pc_store_open error names (its --set prefix)."""
        m = re.match(r"--set (\S+?)=", message)
        if m:
            for ov, key in self.origin.items():
                if ov.startswith(m.group(1) + "="):
                    return key
        return None


def parse(extra: Optional[dict], ranks: dict[str, int], sizes: dict[str, int]) -> StoreConfig:
    """Check extra_config and turn it into a StoreConfig. ranks: tp_rank, pp_rank,
    dp_rank, attn_cp_rank of this process (for {tp_rank} in node); sizes: how many
    ranks of each there are, by the same names (absent: one)."""
    if extra is None:
        extra = {}
    if not isinstance(extra, dict):
        raise ValueError("peercache extra_config: expected a JSON object, got %r; pass "
                         "--hicache-storage-backend-extra-config '{\"topology\": ...}'" % (extra,))
    origin: dict[str, str] = {}
    overrides: list[str] = []

    def add(key: str, assignment: str) -> None:
        overrides.append(assignment)
        origin[assignment] = key

    for key, v in extra.items():
        if not isinstance(key, str):
            raise _fail(str(key), "keys must be strings", "quote the key")
        if key in SGLANG_KEYS or key.startswith(SGLANG_PREFIXES) or key in ("topology", "node"):
            continue
        if key == "discovery_addr":
            if not isinstance(v, str) or not _ADDRS.match(v):
                raise _fail(key, "expected \"host:port\" or a comma-separated list of them, "
                            "got %r" % (v,), "e.g. \"10.0.0.1:31998,10.0.0.2:31998\"")
            add(key, "store.discovery_addr=%s" % v)
        elif key in _ENUMS:
            if v not in _ENUMS[key]:
                raise _fail(key, "%r is not one of %s" % (v, ", ".join(_ENUMS[key])),
                            "use one of those")
            add(key, "store.%s=%s" % (key, v))
        elif key == "slot_max_page_bytes":
            add(key, "store.slot_max_page_bytes=%s" % _size(key, v))
        elif key == "slot_ways":
            add(key, "store.slot_ways=%d" % _int(key, v, 1))
        elif key == "slot_num_buckets":
            add(key, "store.slot_num_buckets=%d" % _int(key, v, 0))
        elif key.startswith("store.") and len(key) > 6:
            add(key, "%s=%s" % (key, _scalar(key, v)))
        else:
            raise _fail(key, "unknown key",
                        "use one of %s (or SGLang's own: %s, prefetch_*)"
                        % (", ".join(KEYS), ", ".join(sorted(SGLANG_KEYS))))

    topo = extra.get("topology")
    if topo is None:
        raise _fail("topology", "missing",
                    "add \"topology\": the path of the cluster's topology YAML, e.g. "
                    "\"/etc/peercache/cluster.yaml\" (the file pcd runs with)")
    if not isinstance(topo, str) or not topo:
        raise _fail("topology", "expected a path string, got %r" % (topo,),
                    "give the topology YAML's path as a string")
    if not os.path.isfile(topo):
        raise _fail("topology", "no such file: %s" % topo,
                    "give the path of an existing topology YAML (relative paths are from "
                    "the server's working directory, %s)" % os.getcwd())

    node = extra.get("node")
    if node is not None:
        if not isinstance(node, str) or not node:
            raise _fail("node", "expected a node name string, got %r" % (node,),
                        "give the name of a node under nodes: in the topology, or drop the key")
        try:
            formatted = node.format(**{k: ranks.get(k, 0) for k in _NODE_FIELDS})
        except (KeyError, IndexError, ValueError, AttributeError, TypeError) as e:
            raise _fail("node", "bad placeholder in %r (%s)" % (node, e),
                        "use only {tp_rank}, {pp_rank}, {dp_rank} or {attn_cp_rank}") from None
        # Ranks that differ only in a field whose placeholder the name lacks would
        # claim the same node (the second one's pcd port is taken).
        for f in _NODE_FIELDS:
            n = sizes.get(f, 1)
            other = dict(ranks, **{f: 1 - min(ranks.get(f, 0), 1)})
            if n > 1 and node.format(**{k: other.get(k, 0) for k in _NODE_FIELDS}) == formatted:
                raise _fail("node", "each of the %d ranks of %s would claim node %r"
                            % (n, f[:-5], formatted),
                            "put {%s} in the name (e.g. \"gpu-{%s}\", one topology node per "
                            "rank) or drop node so the ranks are clients of pcd nodes" % (f, f))
        node = formatted

    iv1 = extra.get("interface_v1", 0)
    if isinstance(iv1, bool):
        iv1 = int(iv1)
    if iv1 not in (0, 1):
        raise _fail("interface_v1", "expected 0 or 1, got %r" % (iv1,),
                    "set \"interface_v1\": 1 for the zero-copy path")
    return StoreConfig(topology=topo, node=node, overrides=overrides, interface_v1=bool(iv1),
                       origin=origin)
