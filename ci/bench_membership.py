#!/usr/bin/python3
"""bench_membership.py - how long a cluster takes to see a node die.

  ci/bench_membership.py [--nodes 16] [--kills 20] [--heartbeat-ms 100]
                         [--failure-ms 500] [--discovery embedded|etcd] [--build build]

Starts --nodes pcd processes on free loopback ports (heartbeats every
--heartbeat-ms, failure timeout --failure-ms), then --kills times: SIGKILL a node,
poll `pcctl status` at every other node until all of them say it is down (the
detection time: kill -> every ring updated), restart it and wait until all say it
is up again. Prints p50 and max of both, and the heartbeat traffic each node sends
per second (requests and answers, frame headers included), computed from the wire
format. With --discovery etcd it starts a real etcd (etcd-server) on free
ports with a temporary data directory and keeps membership there instead (a
lease of the failure timeout, rounded up to etcd's minimum of 2 s), and measures
the requests the nodes make of it, from etcd's own gRPC counters
(grpc_server_started_total, every method, over 5 s with no kill). Everything it
starts it stops.
"""
import argparse
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HDR = 32            # tcp frame header
HEARTBEAT = 160     # struct proto_heartbeat (with the sender's entry)
VIEW = 32           # struct proto_view (header only, node to node)


def etcd_calls(client):
    """Calls etcd has started (its grpc_server_started_total, every method)."""
    r = subprocess.run(["curl", "-sf", client + "/metrics"], capture_output=True, text=True)
    total = 0.0
    for line in r.stdout.splitlines():
        if line.startswith("grpc_server_started_total{"):
            total += float(line.split()[-1])
    return total


def free_port_base(n):
    """n consecutive free loopback ports below the ephemeral range."""
    for _ in range(100):
        base = random.randint(20000, 32000 - n)
        ok = True
        for p in range(base, base + n):
            s = socket.socket()
            try:
                s.bind(("127.0.0.1", p))
            except OSError:
                ok = False
            finally:
                s.close()
            if not ok:
                break
        if ok:
            return base
    sys.exit("bench_membership: no free ports")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nodes", type=int, default=16)
    ap.add_argument("--kills", type=int, default=20)
    ap.add_argument("--heartbeat-ms", type=int, default=100)
    ap.add_argument("--failure-ms", type=int, default=500)
    ap.add_argument("--discovery", choices=("embedded", "etcd"), default="embedded")
    ap.add_argument("--build", default="build")
    a = ap.parse_args()
    pcd = os.path.join(a.build, "tools", "pcd")
    pcctl = os.path.join(a.build, "tools", "pcctl")
    tmp = tempfile.mkdtemp(prefix="pcmember.")
    base = free_port_base(a.nodes + 2)
    topo = os.path.join(tmp, "t.yaml")
    extra, etcd = "", None
    if a.discovery == "etcd":
        client, peer = "http://127.0.0.1:%d" % (base + a.nodes), "http://127.0.0.1:%d" % (base + a.nodes + 1)
        etcd = subprocess.Popen(["etcd", "--data-dir", os.path.join(tmp, "etcd"),
                                 "--listen-client-urls", client, "--advertise-client-urls", client,
                                 "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                                 "--initial-cluster", "default=" + peer],
                                stdout=subprocess.DEVNULL, stderr=open(os.path.join(tmp, "etcd.log"), "wb"))
        for _ in range(100):
            if subprocess.run(["curl", "-sf", "-X", "POST", client + "/v3/kv/range", "-d", '{"key":"eA=="}'],
                              capture_output=True).returncode == 0:
                break
            time.sleep(0.1)
        else:
            etcd.kill()
            sys.exit("bench_membership: etcd did not start (see %s/etcd.log)" % tmp)
        extra = ', discovery: etcd, etcd_endpoints: "%s", etcd_prefix: "/bench/"' % client
    with open(topo, "w") as f:
        f.write("name: bench\nstore: {slot_size_classes: [16KiB], global_segment_size: 4MiB, "
                "heartbeat_ms: %d, failure_timeout_ms: %d%s}\nnodes:\n" % (a.heartbeat_ms, a.failure_ms, extra))
        for i in range(a.nodes):
            f.write("  - {name: n%d, address: 127.0.0.1, port: %d}\n" % (i, base + i))
    procs = {}

    def start(i):
        log = open(os.path.join(tmp, "n%d.log" % i), "ab")
        procs[i] = subprocess.Popen([pcd, "--topology", topo, "--node", "n%d" % i], stderr=log)

    def says(ask, node):
        r = subprocess.run([pcctl, "--discovery", "127.0.0.1:%d" % (base + ask), "--timeout-ms", "300",
                            "status"], capture_output=True, text=True)
        for line in r.stdout.splitlines():
            w = line.split()
            if len(w) >= 3 and w[0] == "n%d" % node:
                return w[2]
        return ""

    def wait_all(node, want, limit=10.0):
        t0 = time.monotonic()
        pending = [i for i in range(a.nodes) if i != node]
        while pending and time.monotonic() - t0 < limit:
            pending = [i for i in pending if says(i, node) != want]
        return None if pending else time.monotonic() - t0

    try:
        for i in range(a.nodes):
            start(i)
        time.sleep(1.0 + 3 * a.heartbeat_ms / 1000)
        calls_per_s = None
        if etcd:
            time.sleep(2.0)     # past the grace after open: the steady state
            c0, t0 = etcd_calls(client), time.monotonic()
            time.sleep(5.0)
            calls_per_s = (etcd_calls(client) - c0) / (time.monotonic() - t0)
        down, back = [], []
        rng = random.Random(1)
        for k in range(a.kills):
            victim = rng.randrange(a.nodes)
            procs[victim].send_signal(signal.SIGKILL)
            t0 = time.monotonic()
            procs[victim].wait()
            t = wait_all(victim, "down")
            if t is None:
                sys.exit("bench_membership: n%d was not seen down everywhere within 10 s" % victim)
            down.append(time.monotonic() - t0)
            start(victim)
            t0 = time.monotonic()
            t = wait_all(victim, "up")
            if t is None:
                sys.exit("bench_membership: n%d did not come back within 10 s" % victim)
            back.append(time.monotonic() - t0)
        ms = lambda v: 1000 * v
        print("membership (%s), %d nodes, heartbeat %d ms, failure timeout %d ms, %d kills:"
              % (a.discovery, a.nodes, a.heartbeat_ms, a.failure_ms, a.kills))
        print("  kill -> every other node sees it down: p50 %.0f ms, max %.0f ms"
              % (ms(statistics.median(down)), ms(max(down))))
        print("  restart -> every other node sees it up: p50 %.0f ms, max %.0f ms"
              % (ms(statistics.median(back)), ms(max(back))))
        if etcd:
            print("  membership traffic per node: %.1f etcd requests/s measured (etcd's "
                  "grpc_server_started_total over 5 s, all nodes / %d); a keepalive every third of "
                  "the lease, two ranges when the watch sees a change or at least every second"
                  % (calls_per_s / a.nodes, a.nodes))
        else:
            per_s = 1000 / a.heartbeat_ms * (a.nodes - 1)
            print("  heartbeat traffic per node: %.0f heartbeats/s sent and as many received, "
                  "%.1f KB/s each way (requests and answers)"
                  % (per_s, per_s * (HDR + HEARTBEAT + HDR + VIEW) / 1000))
        print("  (times include polling: one pcctl status per node per round)")
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.terminate()
        for p in procs.values():
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
        if etcd:
            etcd.kill()
            etcd.wait()


if __name__ == "__main__":
    main()
