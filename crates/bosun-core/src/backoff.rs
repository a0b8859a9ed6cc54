//! The one exponential back-off of bosun's retries: the kit's reconcile retries, `observe`'s
//! command retries and the notifications' delivery retries all wait `base`, doubling each
//! attempt, bounded by `max`, the kit's spread by jitter.
//!
//! ```
//! use std::time::Duration;
//! use bosun_core::backoff::Exponential;
//!
//! let backoff = Exponential::new(Duration::from_secs(1), Duration::from_secs(60));
//! assert_eq!(backoff.delay(3), Duration::from_secs(4));
//! assert_eq!(backoff.delay(40), Duration::from_secs(60));
//! ```

use std::time::Duration;

/// Delays from `base`, doubling each attempt, never above `max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exponential {
    base: Duration,
    max: Duration,
}

impl Exponential {
    /// Delays from `base`, doubling up to `max`.
    pub const fn new(base: Duration, max: Duration) -> Exponential {
        Exponential { base, max }
    }

    /// The delay before retry `attempt` (from 1): `base` × 2^(attempt − 1), at most `max`.
    pub fn delay(&self, attempt: u32) -> Duration {
        let factor = 2u32.saturating_pow(attempt.saturating_sub(1).min(31));
        self.base.saturating_mul(factor).min(self.max)
    }

    /// [`Exponential::delay`] spread by `jitter` (0..1 maps to −10 %..+10 %), so objects that
    /// fail together do not retry together.
    pub fn jittered(&self, attempt: u32, jitter: f64) -> Duration {
        self.delay(attempt).mul_f64(0.9 + 0.2 * jitter.clamp(0.0, 1.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_double_from_the_base_up_to_the_bound() {
        let backoff = Exponential::new(Duration::from_millis(100), Duration::from_secs(300));
        for (attempt, millis) in [(0, 100), (1, 100), (2, 200), (3, 400), (6, 3200), (40, 300_000), (u32::MAX, 300_000)]
        {
            assert_eq!(backoff.delay(attempt), Duration::from_millis(millis), "attempt {attempt}");
        }
    }

    #[test]
    fn jitter_spreads_by_ten_percent_either_way() {
        let backoff = Exponential::new(Duration::from_secs(1), Duration::from_secs(60));
        for (attempt, jitter, seconds) in
            [(1, 0.5, 1.0), (2, 0.5, 2.0), (7, 0.5, 60.0), (1, 0.0, 0.9), (1, 1.0, 1.1), (1, 7.0, 1.1)]
        {
            let delay = backoff.jittered(attempt, jitter).as_secs_f64();
            assert!((delay - seconds).abs() < 1e-9, "attempt {attempt}, jitter {jitter}: {delay}");
        }
    }
}
