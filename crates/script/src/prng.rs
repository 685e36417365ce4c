//! Owns pgbench's pseudo-random number generator and the order in which pgbench seeds
//! its streams.
//!
//! [`Prng`] is PostgreSQL's `pg_prng` (xoroshiro128** 1.0 seeded through splitmix64),
//! bit-exact with pgbench 15–18. [`RandomSeed`] parses `--random-seed` /
//! `PGBENCH_RANDOM_SEED`; [`SeedStreams`] derives every stream from the base generator in
//! pgbench's order: one per client (for `random*()`), then `:default_seed`, then per thread
//! `choose`, `throttle`, `sample`. Reading the clock or the OS random source for `time` and
//! `rand` is the caller's job (this crate does no I/O).

/// pgbench's `pg_prng_state`: xoroshiro128** 1.0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Prng {
    s0: u64,
    s1: u64,
}

fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Prng {
    /// `pg_prng_seed`: seeds both state words with splitmix64 (and never leaves the state
    /// all-zero, like `pg_prng_seed_check`).
    pub fn seed(seed: u64) -> Prng {
        let mut s = seed;
        let s0 = splitmix64(&mut s);
        let s1 = splitmix64(&mut s);
        if s0 == 0 && s1 == 0 {
            Prng {
                s0: 0x5851_F42D_4C95_7F2D,
                s1: 0x1405_7B7E_F767_814F,
            }
        } else {
            Prng { s0, s1 }
        }
    }

    /// `pg_prng_uint64`: the next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let s0 = self.s0;
        let sx = self.s1 ^ s0;
        let val = s0.wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        self.s0 = s0.rotate_left(24) ^ sx ^ (sx << 16);
        self.s1 = sx.rotate_left(37);
        val
    }

    /// `pg_prng_uint64_range`: uniform in `[min, max]` by rejection sampling of the top bits
    /// (returns `min` without drawing when `max <= min`).
    pub fn uint64_range(&mut self, min: u64, max: u64) -> u64 {
        if max > min {
            let range = max - min;
            let rshift = 63 - (63 - range.leading_zeros());
            loop {
                let v = self.next_u64() >> rshift;
                if v <= range {
                    return min + v;
                }
            }
        }
        min
    }

    /// `pg_prng_double`: uniform in `[0, 1)` with 52 random bits.
    pub fn double(&mut self) -> f64 {
        ((self.next_u64() >> 12) as f64) * (2.0f64).powi(-52)
    }

    /// `pg_prng_double_normal`: a standard normal deviate by Box–Muller.
    pub fn double_normal(&mut self) -> f64 {
        let u1 = 1.0 - self.double();
        let u2 = 1.0 - self.double();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).sin()
    }

    /// The raw state (to save and restore it around retries).
    pub fn state(&self) -> (u64, u64) {
        (self.s0, self.s1)
    }

    /// Rebuilds a generator from [`Prng::state`].
    pub fn from_state(s0: u64, s1: u64) -> Prng {
        Prng { s0, s1 }
    }
}

/// The `--random-seed` choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RandomSeed {
    /// `time` (the default): the caller seeds with the monotonic clock in microseconds.
    Time,
    /// `rand`: the caller seeds with 8 bytes from a strong random source.
    Rand,
    /// An explicit unsigned 64-bit seed.
    Value(u64),
}

/// A `--random-seed` value pgbench does not accept.
///
/// pgbench prints [`SeedError::message`] as an error, [`SeedError::detail`] as a detail,
/// then `error while setting random seed from --random-seed option` (or `… from
/// PGBENCH_RANDOM_SEED environment variable`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unrecognized random seed option \"{arg}\"")]
pub struct SeedError {
    /// The rejected text.
    pub arg: String,
}

impl SeedError {
    /// The error line (without the `pgbench: error: ` prefix).
    pub fn message(&self) -> String {
        self.to_string()
    }

    /// The detail line (without the `pgbench: detail: ` prefix).
    pub fn detail(&self) -> &'static str {
        "Expecting an unsigned integer, \"time\" or \"rand\"."
    }
}

impl RandomSeed {
    /// Parses `time`, `rand` or an unsigned decimal integer as C `sscanf("%lu%c")` does
    /// (leading white space and a sign accepted, `-1` wraps, overflow saturates, nothing
    /// may follow the digits).
    pub fn parse(s: &str) -> Result<RandomSeed, SeedError> {
        if s == "time" {
            return Ok(RandomSeed::Time);
        }
        if s == "rand" {
            return Ok(RandomSeed::Rand);
        }
        let err = || SeedError { arg: s.to_string() };
        let t = s.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
        let (neg, digits) = match t.as_bytes().first() {
            Some(b'-') => (true, &t[1..]),
            Some(b'+') => (false, &t[1..]),
            _ => (false, t),
        };
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(err());
        }
        let mut v: u64 = 0;
        let mut overflow = false;
        for b in digits.bytes() {
            match v
                .checked_mul(10)
                .and_then(|x| x.checked_add(u64::from(b - b'0')))
            {
                Some(x) => v = x,
                None => overflow = true,
            }
        }
        if overflow {
            v = u64::MAX;
        } else if neg {
            v = v.wrapping_neg();
        }
        Ok(RandomSeed::Value(v))
    }
}

/// The PRNG streams of one thread, seeded in this order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadStreams {
    /// Script choice (`random(0, total_weight - 1)`).
    pub choose: Prng,
    /// Poisson schedule of `--rate`.
    pub throttle: Prng,
    /// Log sampling (`--sampling-rate`).
    pub sample: Prng,
}

/// Every stream pgbench derives from the seed, in pgbench's order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeedStreams {
    /// The seed itself (`:random_seed` is it as an int64).
    pub seed: u64,
    /// Each client's function PRNG (`random*()`), by client id.
    pub clients: Vec<Prng>,
    /// `:default_seed`, the same for every client.
    pub default_seed: i64,
    /// Each thread's streams, by thread index.
    pub threads: Vec<ThreadStreams>,
}

impl SeedStreams {
    /// Derives all streams from `seed` for `nclients` clients and `nthreads` threads
    /// (threads after clamping to the number of clients).
    pub fn new(seed: u64, nclients: usize, nthreads: usize) -> SeedStreams {
        SeedStreams::with_default_seed(seed, nclients, nthreads, true)
    }

    /// Like [`SeedStreams::new`], but pgbench draws `:default_seed` from the base
    /// generator only when `-D default_seed=…` did not define it
    /// (`draw_default_seed = false` then; `default_seed` is left 0 and the thread
    /// streams come one draw earlier).
    pub fn with_default_seed(
        seed: u64,
        nclients: usize,
        nthreads: usize,
        draw_default_seed: bool,
    ) -> SeedStreams {
        let mut base = Prng::seed(seed);
        let clients = (0..nclients).map(|_| Prng::seed(base.next_u64())).collect();
        let default_seed = if draw_default_seed {
            base.next_u64() as i64
        } else {
            0
        };
        let threads = (0..nthreads)
            .map(|_| ThreadStreams {
                choose: Prng::seed(base.next_u64()),
                throttle: Prng::seed(base.next_u64()),
                sample: Prng::seed(base.next_u64()),
            })
            .collect();
        SeedStreams {
            seed,
            clients,
            default_seed,
            threads,
        }
    }

    /// `:random_seed` (the seed as an int64).
    pub fn random_seed(&self) -> i64 {
        self.seed as i64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeded_run_vectors_from_model() {
        // --random-seed=5432, -c 2: client PRNGs first, then :default_seed.
        let s = SeedStreams::new(5432, 2, 1);
        assert_eq!(s.default_seed, 7312993047133655103);
        let mut c0 = s.clients[0];
        let mut c1 = s.clients[1];
        assert_eq!(1 + c0.uint64_range(0, 999_999) as i64, 856256);
        assert_eq!(1 + c1.uint64_range(0, 999_999) as i64, 506940);
    }

    #[test]
    fn defined_default_seed_is_not_drawn() {
        let drawn = SeedStreams::new(5432, 2, 2);
        let defined = SeedStreams::with_default_seed(5432, 2, 2, false);
        assert_eq!(drawn.clients, defined.clients);
        assert_eq!(defined.default_seed, 0);
        // the thread streams move one draw earlier
        assert_eq!(defined.threads[0].throttle, drawn.threads[0].choose);
        assert_ne!(defined.threads[0].choose, drawn.threads[0].choose);
    }

    #[test]
    fn uint64_range_degenerate_does_not_draw() {
        let mut p = Prng::seed(1);
        let before = p;
        assert_eq!(p.uint64_range(7, 7), 7);
        assert_eq!(p.uint64_range(9, 3), 9);
        assert_eq!(p, before);
    }

    #[test]
    fn double_is_in_unit_interval() {
        let mut p = Prng::seed(42);
        for _ in 0..10_000 {
            let d = p.double();
            assert!((0.0..1.0).contains(&d));
        }
    }

    #[test]
    fn seed_parsing_like_sscanf() {
        assert_eq!(RandomSeed::parse("time"), Ok(RandomSeed::Time));
        assert_eq!(RandomSeed::parse("rand"), Ok(RandomSeed::Rand));
        assert_eq!(RandomSeed::parse("5432"), Ok(RandomSeed::Value(5432)));
        assert_eq!(RandomSeed::parse(" +7"), Ok(RandomSeed::Value(7)));
        assert_eq!(RandomSeed::parse("-1"), Ok(RandomSeed::Value(u64::MAX)));
        assert_eq!(
            RandomSeed::parse("99999999999999999999999"),
            Ok(RandomSeed::Value(u64::MAX))
        );
        for bad in ["abc", "", "12x", "1 ", "Time", "0x10", "-"] {
            let e = RandomSeed::parse(bad).unwrap_err();
            assert_eq!(
                e.message(),
                format!("unrecognized random seed option \"{bad}\"")
            );
        }
        assert_eq!(
            RandomSeed::parse("abc").unwrap_err().detail(),
            "Expecting an unsigned integer, \"time\" or \"rand\"."
        );
    }
}
