//! The statistics an evaluation reports: resolved rates with 95% Wilson intervals, unbiased
//! pass@k and pass^k over repeated attempts, cost per resolved task, median and p90, and the
//! paired comparison of two arms on the same tasks (exact McNemar test, paired bootstrap).
//!
//! Evaluations are small (tens of tasks), so the methods are the ones that stay honest at small
//! n: Wilson's interval rather than the normal approximation (which leaves [0, 1] and collapses
//! at 0 and n), the exact binomial form of McNemar's test rather than its χ² approximation, and
//! pass@k estimated without bias from n ≥ k attempts (Chen et al., 2021) rather than 1 - (1-p)^k.
//! The bootstrap draws from a fixed-seed xorshift generator, so a report is reproducible.

/// The z value of a two-sided 95% interval.
const Z95: f64 = 1.959_963_984_540_054;

/// Why a statistic cannot be computed from what it was given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StatsError {
    #[error("{successes} successes out of {n} attempts: successes cannot exceed attempts")]
    MoreSuccessesThanAttempts { successes: usize, n: usize },
    #[error("pass@{k} needs at least {k} attempts per task; there are {n}")]
    TooFewAttempts { k: usize, n: usize },
    #[error("k must be at least 1")]
    ZeroK,
    #[error("the two arms cover {a} and {b} tasks; a paired comparison needs the same tasks")]
    Unpaired { a: usize, b: usize },
    #[error("there is nothing to compare: no task")]
    NoTasks,
}

/// A proportion with its 95% interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate {
    /// Successes over attempts; 0 when there are no attempts.
    pub rate: f64,
    /// The lower bound of the 95% Wilson interval.
    pub low: f64,
    /// The upper bound of the 95% Wilson interval.
    pub high: f64,
}

/// Returns the rate `successes / n` with its 95% Wilson score interval; no attempts give the
/// uninformative interval [0, 1].
pub fn resolved_rate(successes: usize, n: usize) -> Result<Rate, StatsError> {
    if successes > n {
        return Err(StatsError::MoreSuccessesThanAttempts { successes, n });
    }
    if n == 0 {
        return Ok(Rate {
            rate: 0.0,
            low: 0.0,
            high: 1.0,
        });
    }
    let (s, n) = (successes as f64, n as f64);
    let p = s / n;
    let z2 = Z95 * Z95;
    let denominator = 1.0 + z2 / n;
    let center = (p + z2 / (2.0 * n)) / denominator;
    let half = Z95 * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt() / denominator;
    Ok(Rate {
        rate: p,
        low: (center - half).max(0.0),
        high: (center + half).min(1.0),
    })
}

/// Returns the unbiased estimate of pass@k for one task with `c` of `n` attempts resolved: the
/// chance that at least one of k attempts drawn without replacement resolves it,
/// 1 - C(n-c, k) / C(n, k).
pub fn pass_at_k(n: usize, c: usize, k: usize) -> Result<f64, StatsError> {
    check_k(n, c, k)?;
    if n - c < k {
        return Ok(1.0);
    }
    // 1 - Π_{i=n-c+1..n} (1 - k/i): the ratio of binomials as a product that cannot overflow.
    let fail: f64 = (n - c + 1..=n).map(|i| 1.0 - k as f64 / i as f64).product();
    Ok(1.0 - fail)
}

/// Returns the unbiased estimate of pass^k for one task with `c` of `n` attempts resolved: the
/// chance that all of k attempts drawn without replacement resolve it, C(c, k) / C(n, k).
pub fn pass_hat_k(n: usize, c: usize, k: usize) -> Result<f64, StatsError> {
    check_k(n, c, k)?;
    if c < k {
        return Ok(0.0);
    }
    Ok((0..k).map(|i| (c - i) as f64 / (n - i) as f64).product())
}

/// Returns an error unless `1 <= k <= n` and `c <= n`.
fn check_k(n: usize, c: usize, k: usize) -> Result<(), StatsError> {
    if c > n {
        return Err(StatsError::MoreSuccessesThanAttempts { successes: c, n });
    }
    if k == 0 {
        return Err(StatsError::ZeroK);
    }
    if k > n {
        return Err(StatsError::TooFewAttempts { k, n });
    }
    Ok(())
}

/// Returns the total cost divided by the tasks resolved, `None` when none was resolved (the
/// cost of a resolved task is then unbounded, not zero).
pub fn cost_per_resolved(total_cost: f64, resolved: usize) -> Option<f64> {
    (resolved > 0).then(|| total_cost / resolved as f64)
}

/// Returns the `q` quantile (0 ≤ q ≤ 1) of `values` by linear interpolation between the
/// closest ranks (numpy's default), `None` for no values. NaNs sort last.
pub fn quantile(values: &[f64], q: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(|a, b| a.total_cmp(b));
    let position = q.clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let below = position.floor() as usize;
    let above = position.ceil() as usize;
    let fraction = position - below as f64;
    Some(sorted[below] + (sorted[above] - sorted[below]) * fraction)
}

/// Returns the median of `values`, `None` for no values.
pub fn median(values: &[f64]) -> Option<f64> {
    quantile(values, 0.5)
}

/// Returns the 90th percentile of `values`, `None` for no values.
pub fn p90(values: &[f64]) -> Option<f64> {
    quantile(values, 0.9)
}

/// Returns the two-sided p-value of the exact McNemar test for `b` pairs where only the first
/// arm resolved the task and `c` where only the second did: the binomial test of b against
/// Binomial(b + c, ½). Without discordant pairs there is no evidence of a difference: 1.
pub fn mcnemar_exact(b: usize, c: usize) -> f64 {
    let n = b + c;
    if n == 0 {
        return 1.0;
    }
    // Σ_{i=0..min(b,c)} C(n, i) / 2^n, each term built in log space so that large n neither
    // overflows the binomial nor underflows 2^-n.
    let mut log_term = n as f64 * 0.5f64.ln();
    let mut tail = log_term.exp();
    for i in 1..=b.min(c) {
        log_term += ((n - i + 1) as f64 / i as f64).ln();
        tail += log_term.exp();
    }
    (2.0 * tail).min(1.0)
}

/// The paired comparison of two arms on the same tasks.
#[derive(Debug, Clone, PartialEq)]
pub struct Paired {
    /// Tasks both arms resolved.
    pub both: usize,
    /// Tasks only the first arm resolved (McNemar's b).
    pub only_a: usize,
    /// Tasks only the second arm resolved (McNemar's c).
    pub only_b: usize,
    /// Tasks neither resolved.
    pub neither: usize,
    /// The first arm's resolved rate minus the second's.
    pub difference: f64,
    /// The exact McNemar p-value of the difference.
    pub mcnemar_p: f64,
    /// The 95% paired-bootstrap interval of the difference: (low, high).
    pub bootstrap: (f64, f64),
}

impl Paired {
    /// Returns true if and only if the difference is significant at the 5% level by McNemar's
    /// test.
    pub fn significant(&self) -> bool {
        self.mcnemar_p < 0.05
    }
}

/// Returns the paired comparison of arms `a` and `b`, where `a[i]` and `b[i]` say whether each
/// resolved task i; the bootstrap resamples tasks `resamples` times from `seed`.
pub fn compare(a: &[bool], b: &[bool], resamples: usize, seed: u64) -> Result<Paired, StatsError> {
    if a.len() != b.len() {
        return Err(StatsError::Unpaired {
            a: a.len(),
            b: b.len(),
        });
    }
    if a.is_empty() {
        return Err(StatsError::NoTasks);
    }
    let count =
        |f: &dyn Fn(bool, bool) -> bool| a.iter().zip(b).filter(|(x, y)| f(**x, **y)).count();
    let only_a = count(&|x, y| x && !y);
    let only_b = count(&|x, y| !x && y);
    let n = a.len();
    // Per task, +1 when only a resolved it, -1 when only b did: the difference in resolved rate
    // is their mean, and a bootstrap sample is the mean of n of them drawn with replacement.
    let deltas: Vec<f64> = a
        .iter()
        .zip(b)
        .map(|(x, y)| f64::from(u8::from(*x)) - f64::from(u8::from(*y)))
        .collect();
    let mut rng = XorShift::new(seed);
    let means: Vec<f64> = (0..resamples.max(1))
        .map(|_| (0..n).map(|_| deltas[rng.below(n)]).sum::<f64>() / n as f64)
        .collect();
    Ok(Paired {
        both: count(&|x, y| x && y),
        only_a,
        only_b,
        neither: count(&|x, y| !x && !y),
        difference: (only_a as f64 - only_b as f64) / n as f64,
        mcnemar_p: mcnemar_exact(only_a, only_b),
        bootstrap: (
            quantile(&means, 0.025).unwrap_or(0.0),
            quantile(&means, 0.975).unwrap_or(0.0),
        ),
    })
}

/// Marsaglia's xorshift64* generator: small, fast and reproducible from its seed, which is all
/// a bootstrap needs (it is no cryptographic generator).
struct XorShift(u64);

impl XorShift {
    /// Returns a generator seeded with `seed` (0, which xorshift cannot leave, is replaced).
    fn new(seed: u64) -> Self {
        XorShift(if seed == 0 {
            0x9E37_79B9_7F4A_7C15
        } else {
            seed
        })
    }

    /// Returns the next 64 random bits.
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Returns a number in `0..n` (n > 0), by multiply-shift; its bias is below 2^-32 for the
    /// task counts an evaluation has.
    fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next() >> 32) * n as u128) >> 32) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tolerance: f64) -> bool {
        (a - b).abs() < tolerance
    }

    #[test]
    fn wilson_interval_matches_published_values() {
        let r = resolved_rate(7, 10).unwrap();
        assert!(close(r.rate, 0.7, 1e-12));
        assert!(close(r.low, 0.3968, 1e-4), "{r:?}");
        assert!(close(r.high, 0.8922, 1e-4), "{r:?}");
        let none = resolved_rate(0, 10).unwrap();
        assert!(
            close(none.low, 0.0, 1e-12) && close(none.high, 0.2775, 1e-4),
            "{none:?}"
        );
        let all = resolved_rate(10, 10).unwrap();
        assert!(
            close(all.low, 0.7225, 1e-4) && close(all.high, 1.0, 1e-12),
            "{all:?}"
        );
        assert_eq!(resolved_rate(0, 0).unwrap().high, 1.0);
        assert_eq!(
            resolved_rate(3, 2),
            Err(StatsError::MoreSuccessesThanAttempts { successes: 3, n: 2 })
        );
    }

    #[test]
    fn pass_at_k_and_pass_hat_k_are_the_unbiased_estimators() {
        // n = 5, c = 2, k = 2: 1 - C(3,2)/C(5,2) = 1 - 3/10; C(2,2)/C(5,2) = 1/10.
        assert!(close(pass_at_k(5, 2, 2).unwrap(), 0.7, 1e-12));
        assert!(close(pass_hat_k(5, 2, 2).unwrap(), 0.1, 1e-12));
        // k = 1 is the plain rate for both.
        assert!(close(pass_at_k(10, 3, 1).unwrap(), 0.3, 1e-12));
        assert!(close(pass_hat_k(10, 3, 1).unwrap(), 0.3, 1e-12));
        // Too few failures to fill k draws: pass@k is certain; too few successes: pass^k is 0.
        assert_eq!(pass_at_k(4, 3, 2).unwrap(), 1.0);
        assert_eq!(pass_hat_k(4, 1, 2).unwrap(), 0.0);
        // 200 samples, 37 correct, k = 10 (a HumanEval-sized case): 1 - C(163,10)/C(200,10).
        let exact = 1.0
            - (0..10)
                .map(|i| (163 - i) as f64 / (200 - i) as f64)
                .product::<f64>();
        assert!(close(pass_at_k(200, 37, 10).unwrap(), exact, 1e-12));
        assert_eq!(
            pass_at_k(3, 1, 5),
            Err(StatsError::TooFewAttempts { k: 5, n: 3 })
        );
        assert_eq!(pass_hat_k(3, 1, 0), Err(StatsError::ZeroK));
    }

    #[test]
    fn cost_median_and_p90() {
        assert_eq!(cost_per_resolved(12.0, 4), Some(3.0));
        assert_eq!(cost_per_resolved(12.0, 0), None);
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        let ten: Vec<f64> = (1..=10).map(f64::from).collect();
        assert!(close(p90(&ten).unwrap(), 9.1, 1e-12));
        assert_eq!(p90(&[5.0]), Some(5.0));
        assert_eq!(median(&[]), None);
    }

    #[test]
    fn mcnemar_exact_matches_the_binomial_test() {
        // b = 10, c = 2: 2 · (1 + 12 + 66) / 4096.
        assert!(close(mcnemar_exact(10, 2), 158.0 / 4096.0, 1e-12));
        assert!(close(mcnemar_exact(2, 10), 158.0 / 4096.0, 1e-12));
        assert_eq!(mcnemar_exact(0, 0), 1.0);
        assert_eq!(mcnemar_exact(5, 5), 1.0);
        assert!(close(mcnemar_exact(6, 0), 2.0 / 64.0, 1e-12));
        // Large n stays finite: 2000 against 0 is overwhelming evidence.
        let p = mcnemar_exact(2000, 0);
        assert!((0.0..1e-300).contains(&p), "{p}");
    }

    #[test]
    fn paired_comparison_counts_discordant_pairs_and_bootstraps_reproducibly() {
        // 20 tasks: 6 both, 10 only a, 2 only b, 2 neither.
        let mut a = Vec::new();
        let mut b = Vec::new();
        for (x, y, times) in [
            (true, true, 6),
            (true, false, 10),
            (false, true, 2),
            (false, false, 2),
        ] {
            a.extend(std::iter::repeat_n(x, times));
            b.extend(std::iter::repeat_n(y, times));
        }
        let p = compare(&a, &b, 2000, 42).unwrap();
        assert_eq!((p.both, p.only_a, p.only_b, p.neither), (6, 10, 2, 2));
        assert!(close(p.difference, 0.4, 1e-12));
        assert!(close(p.mcnemar_p, 158.0 / 4096.0, 1e-12));
        assert!(p.significant());
        let (low, high) = p.bootstrap;
        assert!(
            low > 0.0 && low < 0.4 && high > 0.4 && high <= 0.9,
            "{low} {high}"
        );
        assert_eq!(compare(&a, &b, 2000, 42).unwrap(), p, "not reproducible");
        let same = compare(&a, &a, 500, 7).unwrap();
        assert_eq!(
            (same.difference, same.bootstrap, same.mcnemar_p),
            (0.0, (0.0, 0.0), 1.0)
        );
        assert!(!same.significant());
        assert_eq!(
            compare(&a, &b[1..], 10, 1),
            Err(StatsError::Unpaired { a: 20, b: 19 })
        );
        assert_eq!(compare(&[], &[], 10, 1), Err(StatsError::NoTasks));
    }

    #[test]
    fn xorshift_draws_cover_the_range_evenly() {
        let mut rng = XorShift::new(0);
        let mut seen = [0usize; 5];
        for _ in 0..10_000 {
            seen[rng.below(5)] += 1;
        }
        assert!(seen.iter().all(|n| (1_800..2_200).contains(n)), "{seen:?}");
    }
}
