#!/usr/bin/env python3
"""How many -R slots a seed's schedule puts inside a -T run's window.

pgbench (and pgsurge) derive one throttle stream per thread from --random-seed and
advance each thread's schedule from that thread's start by Poisson steps; slots later
than the -T end are not run. Given the seed and the tool's initial connection time (the
threads start after connecting), this counts the slots a tool should process if it
loses none at the end of the run.

Usage: schedule_count.py SEED RATE CLIENTS THREADS DURATION_S CONN_MS
"""
import math
import sys

M = (1 << 64) - 1


def splitmix64(state):
    state = (state + 0x9E3779B97F4A7C15) & M
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M
    return state, z ^ (z >> 31)


def rotl(x, k):
    return ((x << k) | (x >> (64 - k))) & M


class Prng:
    """pg_prng: xoroshiro128** seeded through splitmix64."""

    def __init__(self, seed):
        s, self.s0 = splitmix64(seed & M)
        s, self.s1 = splitmix64(s)
        if self.s0 == 0 and self.s1 == 0:
            self.s0, self.s1 = 0x5851F42D4C957F2D, 0x14057B7EF767814F

    def next(self):
        s0, sx = self.s0, self.s1 ^ self.s0
        val = (rotl((s0 * 5) & M, 7) * 9) & M
        self.s0 = rotl(s0, 24) ^ sx ^ ((sx << 16) & M)
        self.s1 = rotl(sx, 37)
        return val

    def double(self):
        return (self.next() >> 12) * 2.0 ** -52


def main():
    seed, rate, clients, threads, duration, conn_ms = sys.argv[1:7]
    rate, clients, threads = float(rate), int(clients), int(threads)
    threads = min(threads, clients)
    window = int(duration) * 1_000_000 - float(conn_ms) * 1000.0
    base = Prng(int(seed))
    for _ in range(clients):
        base.next()
    base.next()  # :default_seed
    delay = 1e6 / rate * threads
    total = 0
    for _ in range(threads):
        base.next()  # choose
        throttle = Prng(base.next())
        base.next()  # sample
        t = 0
        while True:
            t += int(-math.log(1.0 - throttle.double()) * delay + 0.5)
            if t > window:
                break
            total += 1
    print(total)


if __name__ == "__main__":
    main()
