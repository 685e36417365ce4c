//! Splitting one workload across N generators: total clients dealt as evenly as
//! possible, a total `-R` rate divided equally (R/N each: the union of N
//! independent Poisson arrival streams of rate R/N is a Poisson stream of rate R),
//! and one seed per generator derived from the run's seed.
//!
//! **Seed derivation.** Generator `i` (0-based) uses the `i`-th output of the
//! SplitMix64 generator seeded with the run seed `S`:
//! `z = S + (i+1)·0x9E3779B97F4A7C15 (mod 2^64)`,
//! `z = (z ^ (z >> 30))·0xBF58476D1CE4E5B9`, `z = (z ^ (z >> 27))·0x94D049BB133111EB`,
//! `seed_i = z ^ (z >> 31)`. Each generator passes `seed_i` to `--random-seed`, so a
//! distributed run with the same `S` and N repeats itself, and no two generators
//! share a random stream.

/// One generator's share of the workload.
#[derive(Debug, Clone, PartialEq)]
pub struct Share {
    /// 0-based generator index.
    pub index: u32,
    /// `-c` for this generator.
    pub clients: u32,
    /// `-R` for this generator (total / N), when the total is throttled.
    pub rate_tps: Option<f64>,
    /// `--random-seed` for this generator, when a run seed was given.
    pub seed: Option<u64>,
}

/// Why a workload cannot be split.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SplitError {
    /// N = 0.
    #[error("the number of generators must be at least 1")]
    NoGenerators,
    /// Fewer clients than generators: some generator would run none.
    #[error("{clients} clients cannot be split across {generators} generators (each needs at least one)")]
    TooFewClients {
        /// Total clients.
        clients: u32,
        /// Generators.
        generators: u32,
    },
}

/// The `index`-th seed derived from `run_seed` (see the module doc).
pub fn generator_seed(run_seed: u64, index: u32) -> u64 {
    let mut z = run_seed.wrapping_add((u64::from(index) + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Splits `clients` and `rate_tps` across `generators`; the first
/// `clients % generators` generators get one client more.
pub fn split(
    clients: u32,
    rate_tps: Option<f64>,
    run_seed: Option<u64>,
    generators: u32,
) -> Result<Vec<Share>, SplitError> {
    check(clients, generators)?;
    Ok((0..generators)
        .map(|i| share_of(clients, rate_tps, run_seed, generators, i))
        .collect())
}

/// The share of generator `index` alone: `split(…)[index]`, without building the
/// others (`pgsurge bench --generator-split` computes its own share this way, so a
/// generator that splits for itself and `dist local` that splits for all agree).
/// `None` when `index` is not below `generators`.
pub fn share(
    clients: u32,
    rate_tps: Option<f64>,
    run_seed: Option<u64>,
    generators: u32,
    index: u32,
) -> Result<Option<Share>, SplitError> {
    check(clients, generators)?;
    Ok((index < generators).then(|| share_of(clients, rate_tps, run_seed, generators, index)))
}

fn check(clients: u32, generators: u32) -> Result<(), SplitError> {
    if generators == 0 {
        return Err(SplitError::NoGenerators);
    }
    if clients < generators {
        return Err(SplitError::TooFewClients {
            clients,
            generators,
        });
    }
    Ok(())
}

/// The one rule, for `0 < generators <= clients` and `index < generators`.
fn share_of(
    clients: u32,
    rate_tps: Option<f64>,
    run_seed: Option<u64>,
    generators: u32,
    index: u32,
) -> Share {
    let (base, extra) = (clients / generators, clients % generators);
    Share {
        index,
        clients: base + u32::from(index < extra),
        rate_tps: rate_tps.map(|r| r / f64::from(generators)),
        seed: run_seed.map(|s| generator_seed(s, index)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clients_and_rate_add_up() {
        let s = split(30, Some(1000.0), Some(42), 4).expect("splits");
        assert_eq!(
            s.iter().map(|x| x.clients).collect::<Vec<_>>(),
            [8, 8, 7, 7]
        );
        assert_eq!(s.iter().map(|x| x.clients).sum::<u32>(), 30);
        let r: f64 = s.iter().map(|x| x.rate_tps.expect("throttled")).sum();
        assert!((r - 1000.0).abs() < 1e-9);
        let seeds: std::collections::HashSet<_> = s.iter().map(|x| x.seed).collect();
        assert_eq!(seeds.len(), 4, "distinct seeds");
        assert_eq!(split(30, Some(1000.0), Some(42), 4), Ok(s), "reproducible");
        assert_eq!(split(8, None, None, 2).expect("splits")[1].rate_tps, None);
        assert_eq!(
            split(3, None, None, 4),
            Err(SplitError::TooFewClients {
                clients: 3,
                generators: 4
            })
        );
        assert_eq!(split(3, None, None, 0), Err(SplitError::NoGenerators));
    }

    #[test]
    fn one_share_is_the_same_as_its_place_in_the_split() {
        for (c, r, s, n) in [
            (30, Some(1000.0), Some(42), 4),
            (7, None, None, 7),
            (100, Some(3.0), Some(u64::MAX), 3),
        ] {
            let all = split(c, r, s, n).expect("splits");
            for (i, x) in all.iter().enumerate() {
                let i = u32::try_from(i).expect("small");
                assert_eq!(share(c, r, s, n, i), Ok(Some(x.clone())));
            }
            assert_eq!(share(c, r, s, n, n), Ok(None), "index out of range");
        }
        assert_eq!(
            share(3, None, None, 4, 0),
            Err(SplitError::TooFewClients {
                clients: 3,
                generators: 4
            })
        );
        // Huge counts need no table of shares.
        let big = share(u32::MAX, None, None, u32::MAX, u32::MAX - 1).expect("ok");
        assert_eq!(big.map(|s| s.clients), Some(1));
    }

    /// Known answers of SplitMix64 seeded with 0 (Vigna's reference outputs).
    #[test]
    fn seeds_are_splitmix64_outputs() {
        assert_eq!(generator_seed(0, 0), 0xE220_A839_7B1D_CDAF);
        assert_eq!(generator_seed(0, 1), 0x6E78_9E6A_A1B9_65F4);
        assert_eq!(generator_seed(0, 2), 0x06C4_5D18_8009_454F);
    }
}
