//! Estimates and decisions: what repeated measurements say, and how sure
//! one can be. A figure that summarises repetitions or runs carries its n,
//! its spread and a confidence interval ([`Interval`]); a comparison of two
//! such figures is a [`Comparison`] whose [`Change`] is decided, or not.
//!
//! Bandwidth is compared as a ratio (B over A), with the interval taken on
//! the logarithms of the rates: a rate's noise is multiplicative (a busy
//! core, a page on the far node), and the ratio's interval is then
//! symmetric in the way people read "3 % faster" and "3 % slower".

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};

/// The confidence level membw states by default.
pub const LEVEL: f64 = 0.95;

/// Differences smaller than this share are "no change" even when the
/// interval excludes none: the run-to-run variation of memory bandwidth on
/// a quiet node (fresh arrays land on other pages), where a significant
/// 1 % is real but not worth acting on.
pub const NOISE_THRESHOLD: f64 = 0.02;

/// The two-sided Student t quantile for `level` with `df` degrees of freedom
/// (df may be fractional, as Welch's is); infinite without any.
pub fn t_quantile(level: f64, df: f64) -> f64 {
    if df.is_nan() || df <= 0.0 {
        return f64::INFINITY;
    }
    StudentsT::new(0.0, 1.0, df).map_or(f64::INFINITY, |t| t.inverse_cdf(0.5 + level / 2.0))
}

/// A confidence interval of a mean.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    pub low: f64,
    pub high: f64,
    /// Its confidence level (0.95).
    pub level: f64,
}

impl Interval {
    /// Half its width: the `±` people read.
    pub fn half_width(&self) -> f64 {
        (self.high - self.low) / 2.0
    }

    /// The t interval of the mean of `values`; `None` with fewer than two.
    pub fn of_mean(values: &[f64], level: f64) -> Option<Interval> {
        let n = values.len();
        if n < 2 {
            return None;
        }
        let (mean, var) = mean_var(values);
        let half = t_quantile(level, (n - 1) as f64) * (var / n as f64).sqrt();
        Some(Interval {
            low: mean - half,
            high: mean + half,
            level,
        })
    }
}

impl Interval {
    /// The distribution-free interval of the median of `sorted` values
    /// (ascending): the order statistics whose ranks the binomial(n, ½)
    /// puts around n/2 at `level` (normal approximation). Latency chunks
    /// are skewed by interrupts and other guests, which a t interval of
    /// the mean would not respect. `None` with fewer than 6 values, where
    /// the interval would be the whole range.
    pub fn of_median(sorted: &[f64], level: f64) -> Option<Interval> {
        let n = sorted.len();
        if n < 6 {
            return None;
        }
        let z = statrs::distribution::Normal::standard().inverse_cdf(0.5 + level / 2.0);
        let half = z * (n as f64).sqrt() / 2.0;
        // 1-based ranks j and k, as the textbooks write them.
        let j = ((n as f64 / 2.0 - half).floor() as usize).max(1);
        let k = ((n as f64 / 2.0 + half).ceil() as usize + 1).min(n);
        Some(Interval {
            low: sorted[j - 1],
            high: sorted[k - 1],
            level,
        })
    }
}

fn mean_var(values: &[f64]) -> (f64, f64) {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let var = if values.len() > 1 {
        values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)
    } else {
        0.0
    };
    (mean, var)
}

/// Mean ± standard deviation, min and max of the runs' best rates, and the
/// 95 % confidence interval of their mean (none of a single run).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    pub mean: f64,
    pub sd: f64,
    pub min: f64,
    pub max: f64,
    pub n: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci: Option<Interval>,
}

impl Stats {
    /// The 95 % interval of the mean: the one recorded, or for files
    /// written before it was, the same t interval from sd and n.
    pub fn interval(&self) -> Option<Interval> {
        self.ci.or_else(|| {
            (self.n > 1).then(|| {
                let half =
                    t_quantile(LEVEL, (self.n - 1) as f64) * self.sd / (self.n as f64).sqrt();
                Interval {
                    low: self.mean - half,
                    high: self.mean + half,
                    level: LEVEL,
                }
            })
        })
    }

    pub fn of(values: &[f64]) -> Option<Stats> {
        if values.is_empty() {
            return None;
        }
        let n = values.len();
        let mean = values.iter().sum::<f64>() / n as f64;
        let var = if n > 1 {
            values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64
        } else {
            0.0
        };
        Some(Stats {
            mean,
            sd: var.sqrt(),
            min: values.iter().copied().fold(f64::INFINITY, f64::min),
            max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            n,
            ci: Interval::of_mean(values, LEVEL),
        })
    }
}

/// What a comparison decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    /// B is higher: the whole interval lies above 1 and the estimate beyond
    /// the noise threshold.
    Higher,
    /// B is lower, likewise.
    Lower,
    /// The interval contains 1, or the difference is inside the noise
    /// threshold: nothing to act on.
    NoChange,
    /// Too few runs for an interval (one each).
    NotResolved,
}

/// What measuring several candidates decided about the best of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// The leader is ahead of every other candidate measured.
    Resolved,
    /// The candidates left are within the noise threshold of the leader:
    /// any of them will do.
    Tied,
    /// The budget or the race's last look came with candidates whose
    /// intervals still reach the leader's.
    NotResolved,
    /// Other work shared the node during so many runs of the candidates
    /// left that too few quiet ones remain to judge by.
    Busy,
}

/// B over A, with its interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// The ratio of the geometric means of B's and A's values.
    pub ratio: f64,
    /// Its interval; `None` when neither side has a spread to judge by.
    pub interval: Option<Interval>,
    pub n_a: usize,
    pub n_b: usize,
    pub change: Change,
}

impl Comparison {
    /// Compares the positive values `b` against `a` at `level`. With two or
    /// more values on each side, Welch's interval of the difference of the
    /// log means; with a single value on one side, that side is assumed as
    /// noisy as the other (the pooled interval on the other's spread).
    pub fn of(a: &[f64], b: &[f64], level: f64) -> Option<Comparison> {
        let logs = |v: &[f64]| -> Option<Vec<f64>> {
            v.iter()
                .map(|&x| (x > 0.0 && x.is_finite()).then(|| x.ln()))
                .collect()
        };
        let (la, lb) = (logs(a)?, logs(b)?);
        if la.is_empty() || lb.is_empty() {
            return None;
        }
        let (na, nb) = (la.len() as f64, lb.len() as f64);
        let ((ma, va), (mb, vb)) = (mean_var(&la), mean_var(&lb));
        let diff = mb - ma;
        let spread = match (la.len(), lb.len()) {
            (1, 1) => None,
            (1, _) => Some(((vb * (1.0 / na + 1.0 / nb)).sqrt(), nb - 1.0)),
            (_, 1) => Some(((va * (1.0 / na + 1.0 / nb)).sqrt(), na - 1.0)),
            _ => {
                let (sa, sb) = (va / na, vb / nb);
                let se2 = sa + sb;
                // Welch–Satterthwaite; with no spread at all, any df will do.
                let df = if se2 > 0.0 {
                    se2 * se2 / (sa * sa / (na - 1.0) + sb * sb / (nb - 1.0))
                } else {
                    na + nb - 2.0
                };
                Some((se2.sqrt(), df))
            }
        };
        let interval = spread.map(|(se, df)| {
            let half = t_quantile(level, df) * se;
            Interval {
                low: (diff - half).exp(),
                high: (diff + half).exp(),
                level,
            }
        });
        let ratio = diff.exp();
        Some(Comparison {
            ratio,
            interval,
            n_a: la.len(),
            n_b: lb.len(),
            change: decide(ratio, interval),
        })
    }

    /// The ratio as a signed percentage: `+9.3 %`.
    pub fn percent(&self) -> f64 {
        100.0 * (self.ratio - 1.0)
    }
}

fn decide(ratio: f64, interval: Option<Interval>) -> Change {
    let Some(i) = interval else {
        return Change::NotResolved;
    };
    if (ratio - 1.0).abs() <= NOISE_THRESHOLD || (i.low <= 1.0 && i.high >= 1.0) {
        Change::NoChange
    } else if ratio > 1.0 {
        Change::Higher
    } else {
        Change::Lower
    }
}

/// The median of `values`; `None` when there are none.
pub fn median(values: &[f64]) -> Option<f64> {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    match v.len() {
        0 => None,
        n if n % 2 == 1 => Some(v[mid]),
        _ => Some((v[mid - 1] + v[mid]) / 2.0),
    }
}

/// Coefficient of variation of `values`: sample standard deviation over
/// the mean (0 with fewer than two).
pub fn cv(values: &[f64]) -> f64 {
    if values.len() < 2 {
        return 0.0;
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let var = values.iter().map(|t| (t - mean).powi(2)).sum::<f64>() / (n - 1.0);
    if mean > 0.0 { var.sqrt() / mean } else { 0.0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_quantiles_match_the_tables() {
        // Two-sided 95 %: 12.706 (df 1), 2.776 (4), 2.042 (30), 1.960 (∞).
        for (df, t) in [(1.0, 12.706), (4.0, 2.776), (30.0, 2.042), (1e6, 1.960)] {
            assert!((t_quantile(0.95, df) - t).abs() < 1e-3, "df {df}");
        }
        assert!((t_quantile(0.99, 10.0) - 3.169).abs() < 1e-3);
        assert!(t_quantile(0.95, 0.0).is_infinite());
    }

    #[test]
    fn the_interval_of_a_mean_covers_it_and_shrinks_with_n() {
        let few = Interval::of_mean(&[10.0, 11.0, 9.0], LEVEL).unwrap();
        assert!(few.low < 10.0 && few.high > 10.0);
        // sd 1, n 3: half-width t(2) × 1/√3 = 4.303 × 0.577.
        assert!((few.half_width() - 2.484).abs() < 1e-3);
        let many: Vec<f64> = (0..30).map(|i| [10.0, 11.0, 9.0][i % 3]).collect();
        assert!(Interval::of_mean(&many, LEVEL).unwrap().half_width() < few.half_width() / 3.0);
        assert_eq!(Interval::of_mean(&[10.0], LEVEL), None);
    }

    #[test]
    fn comparisons_decide_only_outside_the_noise() {
        let a = [10.0, 10.2, 9.8, 10.1];
        let same = Comparison::of(&a, &[10.1, 9.9, 10.0, 10.2], LEVEL).unwrap();
        assert_eq!(same.change, Change::NoChange);
        let faster = Comparison::of(&a, &[11.0, 11.2, 10.9, 11.1], LEVEL).unwrap();
        assert_eq!(faster.change, Change::Higher);
        let i = faster.interval.unwrap();
        assert!(i.low > 1.0 && i.low < faster.ratio && faster.ratio < i.high);
        assert_eq!(
            Comparison::of(&[11.0, 11.2, 10.9], &a, LEVEL)
                .unwrap()
                .change,
            Change::Lower
        );
        // Significant, but 1 %: inside the noise threshold.
        let tiny = Comparison::of(&[10.0; 4], &[10.1; 4], LEVEL).unwrap();
        assert_eq!(tiny.change, Change::NoChange);
        // One run each: a ratio, no decision.
        let one = Comparison::of(&[10.0], &[12.0], LEVEL).unwrap();
        assert_eq!((one.change, one.interval), (Change::NotResolved, None));
        assert!((one.percent() - 20.0).abs() < 1e-9);
        // One run against several: judged on the several's spread.
        let pooled = Comparison::of(&[10.0], &[12.0, 12.1, 11.9], LEVEL).unwrap();
        assert_eq!(pooled.change, Change::Higher);
        assert!(Comparison::of(&[0.0, 1.0], &[1.0], LEVEL).is_none());
        assert!(Comparison::of(&[], &[1.0], LEVEL).is_none());
    }

    #[test]
    fn the_median_interval_takes_order_statistics_around_the_middle() {
        let sorted: Vec<f64> = (1..=100).map(f64::from).collect();
        let i = Interval::of_median(&sorted, 0.95).unwrap();
        // n = 100: ranks 40 and 61 (Conover's table gives 40 and 61).
        assert_eq!((i.low, i.high), (40.0, 61.0));
        assert!(Interval::of_median(&sorted[..5], 0.95).is_none());
        let i = Interval::of_median(&sorted[..6], 0.95).unwrap();
        assert_eq!((i.low, i.high), (1.0, 6.0));
    }
}
