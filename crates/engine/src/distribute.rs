//! How clients are dealt to threads (pgbench §3.1 step 9): thread `i` of `n` gets the next
//! `(remaining + n - i - 1) / (n - i)` consecutive client ids, so earlier threads take the
//! extra clients. Owns only this arithmetic.

use std::ops::Range;

/// Client id ranges per thread, in thread order. `nthreads` is clamped to `1..=nclients`
/// the way pgbench clamps `-j` to `-c`.
pub fn clients_per_thread(nclients: usize, nthreads: usize) -> Vec<Range<usize>> {
    let nthreads = nthreads.clamp(1, nclients.max(1));
    let mut out = Vec::with_capacity(nthreads);
    let mut dealt = 0usize;
    for i in 0..nthreads {
        let n = (nclients - dealt + nthreads - i - 1) / (nthreads - i);
        out.push(dealt..dealt + n);
        dealt += n;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn earlier_threads_get_the_extra_clients() {
        let r = clients_per_thread(10, 4);
        assert_eq!(r, vec![0..3, 3..6, 6..8, 8..10]);
        let r = clients_per_thread(200, 2);
        assert_eq!(r, vec![0..100, 100..200]);
    }

    #[test]
    fn threads_clamped_to_clients() {
        assert_eq!(clients_per_thread(2, 8), vec![0..1, 1..2]);
        assert_eq!(clients_per_thread(1, 1), vec![0..1]);
    }

    #[test]
    fn every_client_dealt_once() {
        for c in 1..40 {
            for j in 1..12 {
                let r = clients_per_thread(c, j);
                let ids: Vec<usize> = r.iter().flat_map(|r| r.clone()).collect();
                assert_eq!(ids, (0..c).collect::<Vec<_>>(), "c={c} j={j}");
            }
        }
    }
}
