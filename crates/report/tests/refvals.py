import numpy as np, scipy.stats as st, json
cases = {
 "faster": ([1000.0, 1010.0, 995.0, 1003.0], [1100.0, 1090.0, 1112.0, 1105.0]),
 "same":   ([500.0, 510.0, 490.0], [505.0, 495.0, 500.0]),
 "ties":   ([10.0, 10.0, 12.0, 13.0, 11.0, 10.0, 14.0, 9.0, 12.0], [11.0, 12.0, 12.0, 15.0, 16.0, 14.0, 13.0, 12.0, 17.0]),
 "slower3": ([2000.0, 2010.0, 1990.0], [1800.0, 1810.0, 1795.0]),
}
for k,(a,b) in cases.items():
    a=np.array(a); b=np.array(b)
    mw = st.mannwhitneyu(b, a, alternative='two-sided')  # method auto
    la, lb = np.log(a), np.log(b)
    t = st.ttest_ind(lb, la, equal_var=False)
    ci = t.confidence_interval(0.95)
    d = lb.mean()-la.mean()
    hl = np.median([y-x for x in a for y in b])
    print(k, "U=%r p=%.12g"%(mw.statistic, mw.pvalue), "logdiff=%.12g ci=(%.12g, %.12g) df=%.12g" % (d, ci.low, ci.high, t.df), "hl=%r"%hl,
          "rel=%.12g lo=%.12g hi=%.12g" % (np.exp(d)-1, np.exp(ci.low)-1, np.exp(ci.high)-1))
print("t.ppf(0.975, 3.5)=%.15g" % st.t.ppf(0.975, 3.5))
