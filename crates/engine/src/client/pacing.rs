//! A client's pacing state: its card deck (`--mix=deck`) and the random stream its
//! deck shuffles and think times are drawn from. Allocated once, when the client is
//! made; dealing a card or drawing a think time allocates nothing.

use pgsurge_script::Prng;

/// One client's deck and random stream.
#[derive(Debug, Clone)]
pub struct Pacing {
    rng: Prng,
    /// Script indexes, `weight` cards per script (empty without a deck).
    cards: Box<[u16]>,
    /// The next card to deal; `cards.len()`: the deck is used up.
    next: usize,
}

impl Pacing {
    /// A client's pacing, drawing from `rng`; with `deck`, a deck of `weights[i]` cards
    /// of script `i` (weights beyond `u16::MAX` scripts or below 1 give no cards).
    pub fn new(rng: Prng, weights: &[i64], deck: bool) -> Pacing {
        let cards: Vec<u16> = if deck {
            weights
                .iter()
                .enumerate()
                .filter_map(|(i, &w)| u16::try_from(i).ok().map(|i| (i, w)))
                .flat_map(|(i, w)| std::iter::repeat_n(i, w.max(0) as usize))
                .collect()
        } else {
            Vec::new()
        };
        let next = cards.len();
        Pacing {
            rng,
            cards: cards.into_boxed_slice(),
            next,
        }
    }

    /// The script of the next transaction: the next card, the deck shuffled anew
    /// (Fisher–Yates) when it is used up. `None` without a deck.
    pub fn deal(&mut self) -> Option<usize> {
        if self.cards.is_empty() {
            return None;
        }
        if self.next >= self.cards.len() {
            for i in (1..self.cards.len()).rev() {
                let j = self.rng.uint64_range(0, i as u64) as usize;
                self.cards.swap(i, j);
            }
            self.next = 0;
        }
        let card = self.cards[self.next];
        self.next += 1;
        Some(usize::from(card))
    }

    /// A think time of mean `mean_us`: negative exponential, truncated at 10 times the
    /// mean (TPC-C clause 5.2.5).
    pub fn think_us(&mut self, mean_us: i64) -> i64 {
        if mean_us <= 0 {
            return 0;
        }
        let mean = mean_us as f64;
        // 1 - [0, 1) is in (0, 1], whose logarithm is finite.
        let t = -(1.0 - self.rng.double()).ln() * mean;
        t.min(10.0 * mean) as i64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_deck_dealt_holds_the_weights_exactly() {
        let weights = [45, 43, 4, 4, 4];
        let mut p = Pacing::new(Prng::seed(7), &weights, true);
        let mut first = Vec::new();
        for deck in 0..5 {
            let mut counts = [0i64; 5];
            for _ in 0..100 {
                let s = p.deal().unwrap();
                counts[s] += 1;
                if deck == 0 {
                    first.push(s);
                }
            }
            assert_eq!(counts, weights, "deck {deck}");
        }
        // Shuffled: not in script order, and the same seed deals the same cards.
        assert_ne!(first, {
            let mut sorted = first.clone();
            sorted.sort();
            sorted
        });
        let mut again = Pacing::new(Prng::seed(7), &weights, true);
        let replay: Vec<usize> = (0..100).map(|_| again.deal().unwrap()).collect();
        assert_eq!(first, replay);
        let mut other = Pacing::new(Prng::seed(8), &weights, true);
        let other: Vec<usize> = (0..100).map(|_| other.deal().unwrap()).collect();
        assert_ne!(first, other);
    }

    #[test]
    fn without_a_deck_nothing_is_dealt() {
        let mut p = Pacing::new(Prng::seed(1), &[1, 1], false);
        assert_eq!(p.deal(), None);
    }

    #[test]
    fn think_times_are_negative_exponential_truncated_at_ten_means() {
        let mut p = Pacing::new(Prng::seed(3), &[1], false);
        let mean = 1_000_000;
        let n = 200_000;
        let draws: Vec<i64> = (0..n).map(|_| p.think_us(mean)).collect();
        assert!(draws.iter().all(|&t| (0..=10 * mean).contains(&t)));
        // The truncated distribution's mean is mean * (1 - e^-10); its standard
        // deviation about the mean, so 5 standard errors are 5 * mean / sqrt(n).
        let avg = draws.iter().sum::<i64>() as f64 / n as f64;
        let expected = mean as f64 * (1.0 - (-10f64).exp());
        assert!(
            (avg - expected).abs() < 5.0 * mean as f64 / (n as f64).sqrt(),
            "{avg} vs {expected}"
        );
        // P(T > mean) = e^-1.
        let above = draws.iter().filter(|&&t| t > mean).count() as f64 / n as f64;
        assert!((above - (-1f64).exp()).abs() < 0.01, "{above}");
        assert_eq!(p.think_us(0), 0);
    }
}
