#!/usr/bin/env python3
"""Builds synthetic long-run result documents from the real ones of a short run.

    synth_hour.py --count N --seconds S --out-dir DIR REAL.json...

writes DIR/synth-0.json .. synth-(N-1).json: generator i is real document i mod
len(REAL) stretched from its -T K seconds to S seconds (default 3600) by repeating
its K per-second interval samples, histograms included, S/K times with consecutive
timestamps (S must be a multiple of K). Each synthetic generator is renamed
`synth-I`, index I of N; starts are kept, so the real start skew stays.

What is changed so that the document stays one consistent run:

* A real run may end with a short extra sample (the last transactions finishing a
  few ms after -T); the merge files it under the same second as the sample before it.
  It is folded into that sample here (counts summed, mean and deviation pooled,
  histograms added), so the real run has exactly K samples whose sums are its totals.
* Every total is multiplied by S/K: transaction, failure, skip, retry and late
  counts, the exact latency/lag sums (count, sum, sum of squares; min and max stay)
  and the HDR histograms of the totals, the scripts and the commands (every bucket
  count times S/K). Means, deviations and percentiles do not change under that.
* -T becomes S; the end, the benchmark duration and tps follow.

Only the histograms that must change are decoded and re-encoded (the aggregates and
the folded last sample); the per-second histograms are copied as they are. The HDR
encoding is the V2-deflate one of the Rust `hdrhistogram` crate (base64).
"""

import argparse
import base64
import copy
import json
import os
import struct
import sys
import zlib

V2_COOKIE = 0x1C849303 | 0x10  # word size 8, as the Rust crate writes it
V2_DEFLATE_COOKIE = 0x1C849304 | 0x10


# ---- HdrHistogram V2-deflate: counts array only (no bucket arithmetic needed) ----

def _zigzag_decode(n):
    return (n >> 1) ^ -(n & 1)


def _zigzag_encode(n):
    return (n << 1) ^ (n >> 63)


def _varint_read(buf, pos):
    # LEB128-64b9B: 8 groups of 7 bits, then a whole 9th byte.
    value, shift = 0, 0
    for i in range(9):
        b = buf[pos]
        pos += 1
        if i == 8:
            value |= b << 56
            return value, pos
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, pos
    raise ValueError("bad varint")


def _varint_write(value, out):
    for i in range(9):
        if i == 8:
            out.append(value & 0xFF)
            return
        if value >> 7 == 0:
            out.append(value)
            return
        out.append((value & 0x7F) | 0x80)
        value >>= 7


def hdr_decode(b64):
    """(header fields, counts list) of one encoded histogram."""
    raw = base64.b64decode(b64)
    cookie, length = struct.unpack(">II", raw[:8])
    if cookie != V2_DEFLATE_COOKIE:
        raise ValueError(f"not V2-deflate (cookie {cookie:#x})")
    body = zlib.decompress(raw[8:8 + length])
    (cookie, payload_len, norm_offset, digits, lowest, highest,
     ratio) = struct.unpack(">IIIIQQd", body[:40])
    if cookie != V2_COOKIE or norm_offset != 0:
        raise ValueError("unexpected V2 header")
    payload = body[40:40 + payload_len]
    counts, pos = [], 0
    while pos < len(payload):
        v, pos = _varint_read(payload, pos)
        v = _zigzag_decode(v)
        if v < 0:
            counts.extend([0] * -v)
        else:
            counts.append(v)
    return (digits, lowest, highest, ratio), counts


def hdr_encode(header, counts):
    digits, lowest, highest, ratio = header
    while counts and counts[-1] == 0:
        counts = counts[:-1]
    payload = bytearray()
    i = 0
    while i < len(counts):
        c = counts[i]
        i += 1
        zeros = 0
        if c == 0:
            zeros = 1
            while i < len(counts) and counts[i] == 0:
                zeros += 1
                i += 1
        _varint_write(_zigzag_encode(-zeros if zeros > 1 else c), payload)
    body = struct.pack(">IIIIQQd", V2_COOKIE, len(payload), 0, digits, lowest,
                       highest, ratio) + bytes(payload)
    packed = zlib.compress(body)
    return base64.b64encode(struct.pack(">II", V2_DEFLATE_COOKIE, len(packed)) +
                            packed).decode()


def hdr_add(a, b):
    (ha, ca), (hb, cb) = hdr_decode(a), hdr_decode(b)
    if ha[:2] != hb[:2]:
        raise ValueError("histograms of different precision")
    n = max(len(ca), len(cb))
    counts = [(ca[i] if i < len(ca) else 0) + (cb[i] if i < len(cb) else 0) for i in range(n)]
    return hdr_encode((ha[0], ha[1], max(ha[2], hb[2]), ha[3]), counts)


def hdr_scale(enc, k):
    h, c = hdr_decode(enc)
    return hdr_encode(h, [x * k for x in c])


def hdr_total(enc):
    return sum(hdr_decode(enc)[1])


# ---- the document ----

def fold(a, b):
    """Sample a and the sample b just after it, as one sample (b's end)."""
    out = copy.deepcopy(b)
    n = a["transactions"] + b["transactions"]
    for k in ("transactions", "failures", "skipped", "retried", "retries"):
        out[k] = a[k] + b[k]
    out["duration_s"] = a["duration_s"] + b["duration_s"]
    out["tps"] = n / out["duration_s"] if out["duration_s"] > 0 else 0.0
    if n:
        wa, wb = a["transactions"] / n, b["transactions"] / n
        mean = wa * a["latency_ms"] + wb * b["latency_ms"]
        ex2 = (wa * (a["stddev_ms"] ** 2 + a["latency_ms"] ** 2) +
               wb * (b["stddev_ms"] ** 2 + b["latency_ms"] ** 2))
        out["latency_ms"] = mean
        out["stddev_ms"] = max(ex2 - mean * mean, 0.0) ** 0.5
        out["lag_ms"] = wa * a["lag_ms"] + wb * b["lag_ms"]
    ha, hb = a.get("histogram"), b.get("histogram")
    out["histogram"] = hdr_add(ha, hb) if ha and hb else (ha or hb)
    if a["percentiles"] or b["percentiles"]:
        # Only with --percentiles (not in these runs): keep the bigger part's.
        out["percentiles"] = (a if a["transactions"] >= b["transactions"] else b)["percentiles"]
    return out


def seconds_of(doc):
    """The real run's samples, one per second of its window (tails folded)."""
    start = (doc["generator"]["actual_start_unix_us"] if doc.get("generator")
             else doc["start_time_unix_us"] + doc["initial_connection_us"]) / 1e6
    merged = []
    for s in sorted(doc["intervals"], key=lambda s: s["epoch_s"]):
        if merged and round(s["epoch_s"] - start) == round(merged[-1]["epoch_s"] - start):
            merged[-1] = fold(merged[-1], s)
        else:
            merged.append(s)
    return merged


def scale_latency(lat, k):
    s = lat["sums_us"]
    if s["count"] == 0:
        return
    s["count"] *= k
    s["sum"] *= k
    s["sum2"] *= k
    if lat.get("histogram"):
        lat["histogram"] = hdr_scale(lat["histogram"], k)


def scale_txn(t, k):
    for key in ("transactions", "skipped", "failures", "serialization_failures",
                "deadlock_failures", "other_sql_failures", "retried", "retries", "late"):
        t[key] *= k
    scale_latency(t["latency"], k)
    scale_latency(t["lag"], k)


def stretch(real, seconds):
    doc = copy.deepcopy(real)
    k_s = doc["options"]["duration_s"]
    if not k_s or seconds % k_s:
        raise SystemExit(f"the real run's -T ({k_s}) must divide {seconds}")
    samples = seconds_of(doc)
    if len(samples) != k_s:
        raise SystemExit(f"{len(samples)} one-second samples in a -T {k_s} run")
    if sum(s["transactions"] for s in samples) != doc["totals"]["transactions"]:
        raise SystemExit("the real samples do not sum to the run's transactions")
    reps = seconds // k_s
    doc["intervals"] = [
        dict(s, epoch_s=s["epoch_s"] + c * k_s, elapsed_s=s["elapsed_s"] + c * k_s)
        for c in range(reps) for s in samples
    ]
    scale_txn(doc["totals"], reps)
    for script in doc["scripts"]:
        scale_txn(script["stats"], reps)
        for cmd in script["commands"]:
            scale_latency(cmd["latency"], reps)
            cmd["failures"] *= reps
            cmd["retries"] *= reps
    extra_us = (reps - 1) * k_s * 1_000_000
    doc["options"]["duration_s"] = seconds
    doc["end_time_unix_us"] += extra_us
    doc["bench_duration_us"] += extra_us
    if doc.get("generator"):
        doc["generator"]["end_unix_us"] += extra_us
    doc["tps"] = doc["totals"]["transactions"] / (doc["bench_duration_us"] / 1e6)
    return doc


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, required=True, help="synthetic generators")
    ap.add_argument("--seconds", type=int, default=3600, help="length of the synthetic run")
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("real", nargs="+", help="real result documents (pgsurge bench --json)")
    a = ap.parse_args()
    reals = [json.load(open(p)) for p in a.real]
    # Stretch each real document once, then rename copies.
    stretched = [stretch(r, a.seconds) for r in reals]
    os.makedirs(a.out_dir, exist_ok=True)
    for i in range(a.count):
        doc = copy.copy(stretched[i % len(stretched)])
        gen = dict(doc["generator"], name=f"synth-{i}", index=i, count=a.count)
        doc["generator"] = gen
        with open(os.path.join(a.out_dir, f"synth-{i}.json"), "w") as f:
            json.dump(doc, f, indent=2)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
