"""cluster.py - local pcd clusters on loopback for the Python tests and benchmark.

Ports are picked per run below the ephemeral range (20000-31599, as the C tests'
pc_test_port_base), checked free by binding them, and picked again when a pcd cannot
start: the suite runs beside a user's cluster and other test runs.
"""
import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time

NODES = 3
STORE = ("mode: slotmap, slot_size_classes: [16KiB, 64KiB, 256KiB], slot_ways: 4, "
         "global_segment_size: 24MiB, timeout_ms: 1000")


def pcd_path():
    p = os.environ.get("PEERCACHE_PCD")
    if not p:
        here = os.path.dirname(os.path.abspath(__file__))
        p = os.path.join(here, "..", "..", "build", "tools", "pcd")
    return p


def _free(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        s.close()


class Cluster:
    """NODES pcd processes n0.. on 127.0.0.1 (embed: names of nodes not started, for
    stores that own them in the test process). path: the topology file. protocol:
    the store's fabric; devices: RDMA devices, one rail each, every node's (verbs,
    rxe)."""

    def __init__(self, store=STORE, nodes=NODES, embed=(), pcd_args=(), protocol="tcp",
                 devices=()):
        self.nodes = nodes
        self.dir = tempfile.mkdtemp(prefix="pcpytest-")
        self.procs = {}
        self.embed = set(embed)
        self.pcd_args = list(pcd_args)
        rng = random.Random(os.getpid() ^ int(time.time() * 1000))
        for _attempt in range(20):
            base = 20000 + 16 * rng.randrange(725)
            if not all(_free(base + i) for i in range(nodes)):
                continue
            self.port0 = base
            self.path = os.path.join(self.dir, "cluster-%d.yaml" % base)
            with open(self.path, "w") as f:
                f.write("name: pytest\nstore: {protocol: %s, fallback: none, %s}\n"
                        % (protocol, store))
                rails = (", rails: [%s]" % ", ".join("{device: %s}" % d for d in devices)
                         if devices else "")
                f.write("node_defaults: {nvme: {path: %s, capacity: 64MiB}%s}\nnodes:\n"
                        % (self.dir, rails))
                for i in range(nodes):
                    f.write("  - {name: n%d, address: 127.0.0.1, port: %d}\n" % (i, base + i))
            if all(self.start(i) for i in range(nodes) if "n%d" % i not in self.embed):
                return
            self.stop()
        raise RuntimeError("could not start a pcd cluster; logs in " + self.dir)

    def log(self, i):
        return os.path.join(self.dir, "pcd-n%d.log" % i)

    def start(self, i):
        log = open(self.log(i), "ab")
        p = subprocess.Popen([pcd_path(), "--topology", self.path, "--node", "n%d" % i]
                             + self.pcd_args, stdout=log, stderr=log, stdin=subprocess.DEVNULL)
        log.close()
        for _ in range(500):
            if p.poll() is not None:
                return False
            with open(self.log(i), "rb") as f:
                if b"; ready" in f.read():
                    self.procs[i] = p
                    return True
            time.sleep(0.01)
        p.kill()
        p.wait()
        return False

    def kill(self, i, sig=signal.SIGKILL):
        p = self.procs.pop(i, None)
        if p:
            p.send_signal(sig)
            p.wait()

    def stop(self):
        for i in list(self.procs):
            self.kill(i, signal.SIGTERM)

    def close(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
