//! `--random-seed` / `PGBENCH_RANDOM_SEED`: parsing the value and drawing `time` /
//! `rand` seeds the way pgbench does. Does not own the PRNG (that is the script crate).

/// How the seed was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeedSource {
    /// Default or `time`: the monotonic clock in µs at parse time.
    Time,
    /// `rand`: 8 bytes from the kernel's strong random source.
    Rand,
    /// An explicit unsigned integer.
    Value,
}

/// The random seed in force after parsing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RandomSeed {
    /// The 64-bit seed for the base PRNG (`:random_seed` is this value as int64).
    pub value: u64,
    /// How it was chosen.
    pub source: SeedSource,
    /// True when set explicitly (option or environment); pgbench then printed
    /// `setting random seed to N`.
    pub explicit: bool,
}

/// Why a seed could not be set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeedFailure {
    /// Not `time`, `rand` or an unsigned integer.
    Unrecognized,
    /// `rand` and the kernel gave no random bytes.
    NoRandom,
}

/// pgbench's `pg_time_now()`: the monotonic clock in microseconds.
fn monotonic_us() -> u64 {
    u64::try_from(pgsurge_engine::clock::monotonic_ns() / 1_000).unwrap_or(0)
}

fn strong_random_u64() -> Option<u64> {
    let mut buf = [0u8; 8];
    let mut filled = 0;
    while filled < buf.len() {
        match rustix::rand::getrandom(&mut buf[filled..], rustix::rand::GetRandomFlags::empty()) {
            Ok(0) => return None,
            Ok(n) => filled += n,
            Err(rustix::io::Errno::INTR) => continue,
            Err(_) => return None,
        }
    }
    Some(u64::from_ne_bytes(buf))
}

/// pgbench's `set_random_seed`: `None` is the default (`time`, not explicit).
pub fn resolve(value: Option<&[u8]>) -> Result<RandomSeed, SeedFailure> {
    let explicit = value.is_some();
    match value {
        None | Some(b"time") => Ok(RandomSeed {
            value: monotonic_us(),
            source: SeedSource::Time,
            explicit,
        }),
        Some(b"rand") => Ok(RandomSeed {
            value: strong_random_u64().ok_or(SeedFailure::NoRandom)?,
            source: SeedSource::Rand,
            explicit,
        }),
        Some(text) => match crate::numeric::scan_u64_whole(text) {
            Some(v) => Ok(RandomSeed {
                value: v,
                source: SeedSource::Value,
                explicit,
            }),
            None => Err(SeedFailure::Unrecognized),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explicit_values() {
        let s = resolve(Some(b"5432")).expect("valid");
        assert_eq!(
            (s.value, s.source, s.explicit),
            (5432, SeedSource::Value, true)
        );
        assert_eq!(resolve(Some(b"-1")).map(|s| s.value), Ok(u64::MAX));
        assert_eq!(resolve(Some(b"abc")), Err(SeedFailure::Unrecognized));
        assert_eq!(resolve(Some(b"Time")), Err(SeedFailure::Unrecognized));
        assert_eq!(resolve(Some(b"")), Err(SeedFailure::Unrecognized));
    }

    #[test]
    fn time_and_rand() {
        let d = resolve(None).expect("default");
        assert_eq!((d.source, d.explicit), (SeedSource::Time, false));
        let t = resolve(Some(b"time")).expect("time");
        assert!(t.explicit && t.value >= d.value, "monotonic");
        let a = resolve(Some(b"rand")).expect("rand").value;
        let b = resolve(Some(b"rand")).expect("rand").value;
        assert_ne!(
            a, b,
            "two 64-bit random draws are equal with negligible odds"
        );
    }
}
