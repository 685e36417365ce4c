#!/usr/bin/env python3
"""Splits each transaction's round trip into where it waited, from a system-wide trace.

Reads `perf script -F comm,pid,tid,time,event,trace` output of the socket system calls
(read/write/recvfrom/sendto, enter and exit) and `ss -xpn` taken during the same run,
which pairs each client socket (process, fd) with the backend (pid, fd) at its other end.
For every connection it follows the cycle

    backend sends reply (t0) -> client has read it (t1) -> client sends next request (t2)
    -> backend has read it (t3) -> backend sends the next reply (t0') ...

and prints, over all connections, the distribution of
  * reply queued: t1 - t0, the reply waiting in the client's socket (the client thread is
    busy with other clients, or not on a core);
  * client turnaround: t2 - t1, the client's own time from reading a reply to sending
    the next request;
  * request queued: t3 - t2, the request waiting until its backend runs and reads it;
  * backend service: t0' - t3, the backend's time for the statement;
and the number of requests at the server (sent, reply not yet read) sampled every
millisecond. Usage: turnaround.py SS_FILE CLIENT_PID < perf-script-output
"""
import re
import sys
from collections import defaultdict

EVENT = re.compile(
    r"^\s*(?P<comm>.+?)\s+(?P<pid>\d+)/(?P<tid>\d+)\s+(?P<time>\d+\.\d+):\s+"
    r"syscalls:sys_(?P<dir>enter|exit)_(?P<call>read|write|recvfrom|sendto):\s*(?P<rest>.*)$"
)
FD = re.compile(r"fd: (0x[0-9a-f]+)")
PEER = re.compile(r"users:\(\(\"[^\"]*\",pid=(\d+),fd=(\d+)\)\)")


def socket_pairs(ss_text, client_pid):
    """{client fd: (backend pid, backend fd)} for the client process's sockets."""
    by_inode = {}
    for line in ss_text.splitlines():
        fields = line.split()
        if len(fields) < 8 or not fields[0].startswith("u_str"):
            continue
        owner = PEER.search(line)
        if not owner:
            continue
        local_inode, peer_inode = fields[5], fields[7]
        by_inode[local_inode] = (peer_inode, int(owner.group(1)), int(owner.group(2)))
    pairs = {}
    for _inode, (peer, pid, fd) in by_inode.items():
        if pid != client_pid or peer not in by_inode:
            continue
        _, bpid, bfd = by_inode[peer]
        pairs[fd] = (bpid, bfd)
    return pairs


def pct(values, q):
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def main():
    ss_file, client_pid = sys.argv[1], int(sys.argv[2])
    pairs = socket_pairs(open(ss_file).read(), client_pid)
    if not pairs:
        sys.exit("turnaround.py: no client socket found in the ss snapshot")
    conn_of_client = {fd: i for i, fd in enumerate(pairs)}
    conn_of_backend = {pairs[fd]: i for fd, i in conn_of_client.items()}
    backend_pids = {bpid for bpid, _ in pairs.values()}
    pending = {}  # tid -> (call, fd) of the system call under way
    # Per connection: last t0 (reply sent), t1 (read), t2 (request sent), t3 (request read).
    t0, t1, t2, t3 = ({} for _ in range(4))
    series = defaultdict(list)
    at_server = set()
    changes = []  # (time, requests at the server)
    for line in sys.stdin:
        m = EVENT.match(line)
        if not m:
            continue
        pid, tid, t = int(m["pid"]), int(m["tid"]), float(m["time"])
        if pid != client_pid and pid not in backend_pids:
            continue
        call, rest = m["call"], m["rest"]
        if m["dir"] == "enter":
            fd = FD.search(rest)
            if not fd:
                continue
            fd = int(fd.group(1), 16)
            if call in ("read", "recvfrom"):
                pending[tid] = fd
                continue
            # A send: the request (client) or the reply (backend) leaves now.
            if pid == client_pid:
                c = conn_of_client.get(fd)
                if c is None:
                    continue
                if c in t1:
                    series["client turnaround"].append(t - t1.pop(c))
                t2[c] = t
                at_server.add(c)
                changes.append((t, len(at_server)))
            else:
                c = conn_of_backend.get((pid, fd))
                if c is None:
                    continue
                if c in t3:
                    series["backend service"].append(t - t3.pop(c))
                t0[c] = t
            continue
        fd = pending.pop(tid, None)
        ret = rest.strip().split()[0] if rest.strip() else "0"
        try:
            n = int(ret, 16) if ret.startswith("0x") else int(ret)
        except ValueError:
            continue
        if fd is None or n <= 0 or n >= 1 << 63:
            continue
        if pid == client_pid:
            c = conn_of_client.get(fd)
            if c is None:
                continue
            if c in t0:
                series["reply queued"].append(t - t0.pop(c))
            t1[c] = t
            if c in at_server:
                at_server.discard(c)
                changes.append((t, len(at_server)))
        else:
            c = conn_of_backend.get((pid, fd))
            if c is None:
                continue
            if c in t2:
                series["request queued"].append(t - t2.pop(c))
            t3[c] = t
    print(f"connections traced: {len(pairs)}")
    if not any(series.values()):
        print("no complete cycle in the trace (did the run end before the trace began?)")
        return
    print(f"{'stage':<20} {'count':>8} {'p10 µs':>9} {'median µs':>10} {'p90 µs':>9} {'mean µs':>9}")
    total = 0.0
    for name in ("reply queued", "client turnaround", "request queued", "backend service"):
        v = series[name]
        mean = sum(v) / len(v) if v else float("nan")
        total += mean
        print(
            f"{name:<20} {len(v):>8} {pct(v, 0.1) * 1e6:>9.1f} {pct(v, 0.5) * 1e6:>10.1f}"
            f" {pct(v, 0.9) * 1e6:>9.1f} {mean * 1e6:>9.1f}"
        )
    print(f"{'cycle (sum of means)':<20} {'':>8} {'':>9} {'':>10} {'':>9} {total * 1e6:>9.1f}")
    if changes:
        samples, k, level = [], 0, 0
        t, end = changes[0][0], changes[-1][0]
        # Requests sent before the trace began are seen from their first reply on:
        # sampling starts once every connection has had time for a full cycle.
        warm = t + 0.05
        while t < end:
            while k < len(changes) and changes[k][0] <= t:
                level = changes[k][1]
                k += 1
            if t >= warm:
                samples.append(level)
            t += 0.001
        print(
            f"requests at the server (of {len(pairs)}), per ms: p10 {pct(samples, 0.1)}"
            f"  median {pct(samples, 0.5)}  p90 {pct(samples, 0.9)}"
        )


if __name__ == "__main__":
    main()
