#!/usr/bin/env python3
"""Reference values of the unit tests of pgsurge-analysis, computed independently of its
code: with SciPy/NumPy where they have the method, otherwise with a direct
implementation of the published definition (named in each section).

Run: pip install scipy numpy && python3 reference.py
Printed with SciPy 1.17.1 and NumPy 2.4.6; the tests hold the printed numbers.
"""
import itertools
import numpy as np
import scipy.stats as st

def section(name):
    print(f"\n== {name}")

def intervals():
    section("intervals")
    faster = ([1000.0, 1010.0, 995.0, 1003.0], [1100.0, 1090.0, 1112.0, 1105.0])
    same = ([500.0, 510.0, 490.0], [505.0, 495.0, 500.0])
    slower = ([2000.0, 2010.0, 1990.0], [1800.0, 1810.0, 1795.0])
    for name, (a, b) in [("faster", faster), ("same", same), ("slower", slower)]:
        la, lb = np.log(a), np.log(b)
        t = st.ttest_ind(lb, la, equal_var=False)
        ci = t.confidence_interval(0.95)
        d = lb.mean() - la.mean()
        print(f"welch {name}: est={np.exp(d)-1:.12g} lo={np.exp(ci.low)-1:.12g} "
              f"hi={np.exp(ci.high)-1:.12g} df={t.df:.12g}")
    pairs = [(1487.0, 1410.0), (782.0, 745.0), (575.0, 548.0), (1200.0, 1139.0)]
    r = np.log([b / a for a, b in pairs])
    t = st.ttest_1samp(r, 0.0)
    ci = t.confidence_interval(0.95)
    print(f"paired: est={np.exp(r.mean())-1:.12g} lo={np.exp(ci.low)-1:.12g} "
          f"hi={np.exp(ci.high)-1:.12g} df={t.df}")
    x = np.array([10.0, 12.0, 11.0, 13.0])
    ci = st.ttest_1samp(x, 0.0).confidence_interval(0.95)
    print(f"mean interval: lo={ci.low:.12g} hi={ci.high:.12g}")

def exact_u_cdf(m, n):
    """P(U <= u) for u = 0..mn, by enumerating every assignment of ranks to sample 2."""
    counts = np.zeros(m * n + 1)
    for ys in itertools.combinations(range(m + n), n):
        ys = set(ys)
        u, seen_x = 0, 0
        for r in range(m + n):  # U of sample 2 = pairs (x, y) with y > x
            if r in ys:
                u += seen_x
            else:
                seen_x += 1
        counts[u] += 1
    return np.cumsum(counts) / counts.sum()

def hl_interval(a, b, conf=0.95):
    """R's wilcox.test(conf.int=TRUE) rule, exact distribution: qu = smallest q with
    P(U <= q) >= alpha/2; interval [D(qu), D(mn - qu + 1)] (1-based)."""
    m, n = len(a), len(b)
    d = np.sort([y - x for x in a for y in b])
    cdf = exact_u_cdf(m, n)
    alpha = 1 - conf
    qu = int(np.argmax(cdf >= alpha / 2))
    achieved = 1 - 2 * (cdf[qu - 1] if qu > 0 else 0.0)
    return np.median(d), d[qu - 1], d[m * n - qu], achieved

def rank():
    section("rank")
    faster = ([1000.0, 1010.0, 995.0, 1003.0], [1100.0, 1090.0, 1112.0, 1105.0])
    ties = ([10.0, 10.0, 12.0, 13.0, 11.0, 10.0, 14.0, 9.0, 12.0],
            [11.0, 12.0, 12.0, 15.0, 16.0, 14.0, 13.0, 12.0, 17.0])
    for name, (a, b) in [("faster", faster), ("ties", ties)]:
        mw = st.mannwhitneyu(b, a, alternative="two-sided")
        print(f"mann-whitney {name}: U={mw.statistic} p={mw.pvalue:.12g}")
    a = [100.0, 102.0, 99.0, 101.0, 98.0, 160.0]
    b = [95.0, 96.5, 94.0, 97.0, 95.5, 93.0]
    est, lo, hi, ach = hl_interval(a, b)
    print(f"hodges-lehmann 6+6: est={est} lo={lo} hi={hi} achieved={ach:.12g}")
    est, lo, hi, ach = hl_interval(*faster)
    print(f"hodges-lehmann 4+4: est={est} lo={lo} hi={hi} achieved={ach:.12g}")
    # With ties: the large-sample rule k = floor(mn/2 - z * sigma_U(tie-corrected)).
    a, b = ties
    m, n = len(a), len(b)
    d = np.sort([y - x for x in a for y in b])
    allv = np.concatenate([a, b])
    _, cnt = np.unique(allv, return_counts=True)
    N = m + n
    sigma = np.sqrt(m * n / 12 * ((N + 1) - (cnt**3 - cnt).sum() / (N * (N - 1))))
    k = int(np.floor(m * n / 2 - st.norm.ppf(0.975) * sigma))
    print(f"hodges-lehmann ties: est={np.median(d)} lo={d[k-1]} hi={d[m*n-k]}")

def outliers():
    section("outliers")
    x = np.array([1012.0, 998.0, 1005.0, 640.0, 1001.0, 1009.0, 995.0])
    mad = st.median_abs_deviation(x, scale="normal")
    print("modified z-scores:", " ".join(f"{z:.10g}" for z in (x - np.median(x)) / mad))

def power():
    section("power")
    q = lambda df: st.t.ppf(0.975, df) + st.t.ppf(0.8, df)
    print(f"detectable change se=0.01 df=4: {np.exp(q(4) * 0.01) - 1:.10g}")
    target = np.log(1.02)
    n = next(n for n in range(2, 10000) if q(2 * n - 2) * 0.02 * np.sqrt(2 / n) <= target)
    print(f"repeats needed, independent, sd 0.02, 2 %: {n}")
    n = next(n for n in range(2, 10000) if q(n - 1) * 0.02 / np.sqrt(n) <= target)
    print(f"repeats needed, paired, sd 0.02, 2 %: {n}")

def noise(i, amp):
    return amp * (np.sin(1.7 * i) * 0.6 + np.cos(0.37 * i + 1.0) * 0.4)

def mser_stat(v):
    """White's MSER statistic of each truncation d: sum((v[d:] - mean)^2) / (n - d)^2."""
    n = len(v)
    return np.array([np.sum((v[d:] - v[d:].mean()) ** 2) / (n - d) ** 2 for d in range(n)])

def robust_sd(v):
    """Scaled median absolute deviation (SciPy), the sample standard deviation when it is 0."""
    mad = st.median_abs_deviation(v, scale="normal")
    return mad if mad > 0 else np.std(v, ddof=1)

def clip(x):
    """Clipped to the median of the second half +- 4 robust standard deviations of it."""
    half = x[len(x) // 2:]
    level, sd = np.median(half), robust_sd(half)
    return np.clip(x, level - 4 * sd, level + 4 * sd) if sd > 0 else x

def warm_up(x, batch=5):
    """The warm-up end as docs/report-and-compare.md states the rule: MSER-5's minimum
    over the clipped batch means fixes the window; the warm-up is the leading run of
    batches whose median differs from the window's level beyond noise (t at 1 %, the
    noise the larger of the MAD-based and the line-residual estimates) and by more than
    1 %; a run reaching the last batch before the half is unsettled; refined to one
    interval by the 3-sd band."""
    x = np.asarray(x, dtype=float)
    k = len(x) // batch
    z = clip(x)[: k * batch].reshape(k, batch).mean(axis=1)
    limit = k // 2
    stats = mser_stat(z)[: limit + 1]
    d = int(np.argmin(stats))
    med = np.median(x[: k * batch].reshape(k, batch), axis=1)
    w, raw = med[d:], x[d * batch:]
    level = np.median(w)
    noise = np.sqrt(np.pi / 2) * robust_sd(raw) / np.sqrt(batch)
    if len(w) >= 3:
        r = st.linregress(np.arange(len(w)), w)
        res = w - (r.intercept + r.slope * np.arange(len(w)))
        noise = max(noise, np.sqrt(np.sum(res ** 2) / (len(w) - 2)))
    q = st.t.ppf(0.995, max(0.37 * (len(raw) - 1), 1.0))
    threshold = max(q * noise, 0.01 * abs(level))
    warm = 0
    while warm < min(limit + 1, k) and abs(med[warm] - level) > threshold:
        warm += 1
    unsettled = warm > 0 and warm + 1 >= limit
    if warm == 0 or unsettled:
        return 0, d, stats[d], unsettled
    window = x[warm * batch:]
    wl, sd = np.median(window), robust_sd(window)
    out = [i + 1 for i in range((warm - 1) * batch, warm * batch) if abs(x[i] - wl) > 3 * sd]
    at = max(out) if out else (warm - 1) * batch
    if at == warm * batch:
        while at < min((warm + 1) * batch, len(x)) and abs(x[at] - wl) > 3 * sd:
            at += 1
    return at, d, stats[d], unsettled

def drift(x, batch=5):
    """Least-squares line through the batch means (SciPy's linregress): slope, p, change."""
    k = len(x) // batch
    z = np.asarray(x[: k * batch]).reshape(k, batch).mean(axis=1)
    t = np.arange(k) * batch + (batch - 1) / 2
    r = st.linregress(t, z)
    change = r.slope * (t[-1] - t[0]) / np.mean(x)
    return r.slope, r.pvalue, change, r.pvalue < 0.01 and abs(change) > 0.05

def detect(tps):
    """One series: the trend rule (a cut after which the clipped series drifts, MSER's
    minimum in the second half of the searched range, is dropped), then the drift of
    the clipped window."""
    at, d, stat, unsettled = warm_up(tps)
    c = clip(np.asarray(tps, dtype=float))
    limit = len(tps) // 5 // 2
    if at > 0 and 2 * d >= limit and drift(c[at:])[3]:
        at, unsettled = 0, True
    return at, unsettled, drift(c[at:])

def series():
    """The synthetic series of the unit tests (same formulas)."""
    i120, i100 = np.arange(120), np.arange(100)
    flat = 500.0 + noise(np.arange(60), 10.0)
    spiky = 1000.0 + noise(i120, 15.0)
    for at in (7, 23, 41, 77, 103):
        spiky[at] = 450.0
    return {
        "warm-up 20": np.where(i120 < 20, 200.0 + 40.0 * i120, 1000.0) + noise(i120, 20.0),
        "flat": flat,
        "flat with spikes": spiky,
        "exponential": 1000.0 - 800.0 * np.exp(-i120 / 3.0) + noise(i120, 15.0),
        "linear drift": 1000.0 - 2.0 * i100 + noise(i100, 15.0),
        "step at 30": np.where(i120 < 30, 1200.0, 1000.0) + noise(i120, 15.0),
        "step at 80": np.where(i120 < 80, 1000.0, 800.0) + noise(i120, 15.0),
        "never settles": 300.0 + 700.0 * np.exp(-np.arange(80) / 60.0) + noise(np.arange(80), 2.0),
    }

def steady():
    section("steady")
    for name, x in series().items():
        at, d, stat, unsettled = warm_up(x)
        at2, uns2, (slope, p, change, drifting) = detect(x)
        print(f"{name}: cut={at} mser_batches={d} statistic={stat:.10g} unsettled={unsettled} "
              f"| judged cut={at2} unsettled={uns2} drift change={change:.10g} p={p:.6g} "
              f"drifting={drifting}")
    i = np.arange(100)
    falling = 1000.0 - 2.0 * i + noise(i, 15.0)
    z = falling.reshape(20, 5).mean(axis=1)
    x = np.arange(20) * 5 + 2.0
    r = st.linregress(x, z)
    print(f"drift falling: slope={r.slope:.10g} p={r.pvalue:.6g} "
          f"change={r.slope * (x[-1] - x[0]) / falling.mean():.10g}")

def precision():
    section("precision")
    x = np.array([1000.0, 1010.0, 990.0, 1004.0])
    ci = st.ttest_1samp(x, 0.0).confidence_interval(0.95)
    print(f"half-width relative to the median: {(ci.high - ci.low) / 2 / np.median(x):.10g}")
    x = np.array([990.0, 1010.0])
    s = np.std(x, ddof=1) / np.median(x)
    n = next(n for n in range(2, 10000) if st.t.ppf(0.975, n - 1) * s / np.sqrt(n) <= 0.02)
    print(f"repeats for 2 %: {n}")
    a = np.array([1000.0, 950.0, 900.0, 1020.0])
    b = np.array([1100.0, 1040.0, 1000.0, 1115.0])
    r = b / a
    s = np.std(r, ddof=1) / np.median(r)
    n = next(n for n in range(2, 10000) if st.t.ppf(0.975, n - 1) * s / np.sqrt(n) <= 0.005)
    print(f"repeats of a change for 0.5 %: {n}")
    # A stopping rule that needs a decided verdict: the paired 95 % interval of each
    # cell against a margin of +-2 %.
    a = np.array([1000.0, 1100.0, 900.0, 1050.0, 950.0])
    for name, b in [("crossing", [978.2, 1084.7, 892.8, 1047.9, 955.7]),
                    ("inside", [986.1, 1093.4, 900.0, 1056.3, 963.4]),
                    ("slower", [957.0, 1061.1, 873.4, 1025.1, 934.9])]:
        r = np.log(np.array(b) / a)
        ci = st.ttest_1samp(r, 0.0).confidence_interval(0.95)
        half = np.exp((ci.high - ci.low) / 2) - 1
        print(f"paired {name}: lo={np.exp(ci.low)-1:.10g} hi={np.exp(ci.high)-1:.10g} "
              f"half-width={half:.10g}")
    # The repeats the crossing cell's spread needs for a decided verdict: a half-width
    # of max(2 % - |change|, |change|), the change the mean per-round ratio.
    r = np.array([978.2, 1084.7, 892.8, 1047.9, 955.7]) / a
    d = abs(r.mean() - 1)
    target = max(0.02 - d, d)
    s = np.std(r, ddof=1) / np.median(r)
    n = next(n for n in range(2, 10000) if st.t.ppf(0.975, n - 1) * s / np.sqrt(n) <= target)
    print(f"deciding half-width {target:.10g}, repeats {n}")

def energy_q(x, tau):
    """Matteson & James's Q for a split before tau (alpha = 1), from its definition."""
    a, b = np.asarray(x[:tau]), np.asarray(x[tau:])
    m, n = len(a), len(b)
    between = np.abs(a[:, None] - b[None, :]).sum()
    wa = np.abs(a[:, None] - a[None, :]).sum() / 2 / (m * (m - 1) / 2)
    wb = np.abs(b[:, None] - b[None, :]).sum() / 2 / (n * (n - 1) / 2)
    return m * n / (m + n) * (2 * between / (m * n) - wa - wb)

def change_points():
    section("change points")
    wobble = [0.0, 6.0, -4.0, 9.0, -7.0, 3.0, -9.0, 5.0]
    x = [(920.0 if i >= 10 else 1000.0) + wobble[i % 8] for i in range(16)]
    print(f"Q(10)={energy_q(x, 10):.13g} Q(5)={energy_q(x, 5):.13g}")
    qs = {t: energy_q(x, t) for t in range(2, 15)}
    best = max(qs, key=lambda t: qs[t])
    a, b = np.log(x[:best]), np.log(x[best:])
    t = st.ttest_ind(b, a, equal_var=False)
    print(f"best split={best} change={np.exp(b.mean() - a.mean()) - 1:.10g} p={t.pvalue:.7g}")
    noise = [2.1, -1.3, 0.4, -2.8, 1.7, -0.2, 2.9, -1.9, 0.8, -0.6, 1.2, -2.4, 0.1, 2.5, -1.1,
             -2.9, 1.9, 0.3, -0.9, 2.2]
    flat = [1000.0 * (1 + n / 100) for n in noise]
    qs = {t: energy_q(flat, t) for t in range(2, len(flat) - 1)}
    best = max(qs, key=lambda t: qs[t])
    t = st.ttest_ind(np.log(flat[best:]), np.log(flat[:best]), equal_var=False)
    print(f"flat: best split={best} p={t.pvalue:.7g}")
    print(f"detected: step={detect_changes(x)} flat={detect_changes(flat)} "
          f"two steps={detect_changes([v * 1.1 if i >= 4 else v for i, v in enumerate(x)])}")

def detect_changes(x, max_p=0.001, min_seg=2):
    """E-divisive candidates by recursive bisection, then the weakest candidate whose
    Welch p between its neighbours is not below max_p dropped until all hold."""
    found, todo = [], [(0, len(x))]
    while todo:
        lo, hi = todo.pop()
        taus = range(min_seg, hi - lo - min_seg + 1)
        if not taus:
            continue
        tau = max(taus, key=lambda t: (energy_q(x[lo:hi], t), -t))
        found.append(lo + tau)
        todo += [(lo, lo + tau), (lo + tau, hi)]
    found.sort()
    while True:
        b = [0] + found + [len(x)]
        ps = [st.ttest_ind(np.log(x[c:b[k + 2]]), np.log(x[b[k]:c]), equal_var=False).pvalue
              for k, c in enumerate(found)]
        weak = [(p if not np.isnan(p) else 1.0, k) for k, p in enumerate(ps)
                if not (p < max_p)]
        if not weak:
            return found
        found.pop(max(weak)[1])

def noise_levels():
    section("noise levels")
    # Kalibera & Jones, ISMM 2013, section 4: two-level variance components, written
    # from the paper's definitions (groups cut to the fewest runs of any start).
    for starts in ([[1001, 998, 1003], [1041, 1037, 1042], [979, 983, 978], [1022, 1019, 1021, 5000]],
                   [[1000, 1030, 970, 1010], [990, 1020, 1005, 985], [1015, 975, 1000, 1010]]):
        n1, n2 = min(len(s) for s in starts), len(starts)
        g = np.array([s[:n1] for s in starts], dtype=float)
        m = g.mean(axis=1)
        s1 = ((g - m[:, None]) ** 2).sum() / (n2 * (n1 - 1))
        s2 = ((m - m.mean()) ** 2).sum() / (n2 - 1)
        t2 = max(s2 - s1 / n1, 0.0)
        best = int(np.ceil(np.sqrt(60 * s1 / t2))) if t2 > 0 else None
        print(f"T1^2={s1:.13g} T2^2={t2:.13g} share={t2 / (s1 + t2):.10g} "
              f"runs per start (start = 60 runs)={best}")
    # Three levels (builds, starts, runs), the same paper's definitions: each build cut to
    # the fewest starts of any build, each start to the fewest runs of any start.
    builds = [[[1001, 998, 1003], [1011, 1013, 1009]],
              [[1041, 1037, 1042], [1030, 1034, 1029]],
              [[979, 983, 978], [990, 986, 991, 5000]]]
    n3, n2 = len(builds), min(len(b) for b in builds)
    n1 = min(len(s) for b in builds for s in b)
    g = np.array([[s[:n1] for s in b[:n2]] for b in builds], dtype=float)
    starts = g.mean(axis=2)
    means = starts.mean(axis=1)
    s1 = ((g - starts[:, :, None]) ** 2).sum() / (n3 * n2 * (n1 - 1))
    s2 = ((starts - means[:, None]) ** 2).sum() / (n3 * (n2 - 1))
    s3 = ((means - means.mean()) ** 2).sum() / (n3 - 1)
    t2, t3 = max(s2 - s1 / n1, 0.0), max(s3 - s2 / n2, 0.0)
    c1, c2, c3 = 60, 30, 600
    print(f"T1^2={s1:.13g} T2^2={t2:.13g} T3^2={t3:.13g} share builds={t3 / (s1 + t2 + t3):.10g} "
          f"runs per start={int(np.ceil(np.sqrt(c2 * s1 / (c1 * t2))))} "
          f"starts per build={int(np.ceil(np.sqrt(c3 * t2 / (c2 * t3))))}")

if __name__ == "__main__":
    intervals()
    rank()
    outliers()
    power()
    steady()
    precision()
    change_points()
    noise_levels()
