//! Statistics shared by the suites: the normal distribution (own `erfc`), percentile bootstrap over
//! resampling units, and logistic regression by IRLS with cluster-robust (CR1) standard errors.

#![allow(clippy::needless_range_loop)] // small dense matrices read clearest with indices

use crate::core::error::{Error, Result};
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};
use serde::Serialize;
use std::collections::BTreeMap;

/// Two-sided 95% normal quantile Φ⁻¹(0.975).
pub const Z_975: f64 = 1.959_963_984_540_054;

/// Complementary error function, accurate to about 1e-15 relative.
///
/// For |x| < 3: erf from the series erf(x) = 2/√π · e^(−x²) · Σ 2ⁿ x^(2n+1) / (1·3·…·(2n+1)) (all terms
/// positive, no cancellation). For x ≥ 3: the continued fraction
/// erfc(x) = e^(−x²)/√π · 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + 2/(x + …))))) evaluated backwards from depth 80.
pub fn erfc(x: f64) -> f64 {
    if x.is_nan() {
        return f64::NAN;
    }
    if x < 0.0 {
        return 2.0 - erfc(-x);
    }
    const FRAC_2_SQRT_PI: f64 = std::f64::consts::FRAC_2_SQRT_PI;
    if x < 3.0 {
        let x2 = x * x;
        let mut term = x;
        let mut sum = x;
        let mut n = 0.0;
        loop {
            n += 1.0;
            term *= 2.0 * x2 / (2.0 * n + 1.0);
            sum += term;
            if term <= sum * 1e-17 {
                break;
            }
        }
        let erf = FRAC_2_SQRT_PI * (-x2).exp() * sum;
        1.0 - erf
    } else {
        if x > 27.3 {
            return 0.0;
        }
        let mut f = x;
        for k in (1..=80).rev() {
            f = x + (k as f64 / 2.0) / f;
        }
        (-x * x).exp() / (f * std::f64::consts::PI.sqrt())
    }
}

/// Standard normal CDF Φ(z) = erfc(−z/√2)/2.
pub fn normal_cdf(z: f64) -> f64 {
    0.5 * erfc(-z / std::f64::consts::SQRT_2)
}

/// Two-sided p-value of a z statistic: 2·(1 − Φ(|z|)) = erfc(|z|/√2).
pub fn p_two_sided(z: f64) -> f64 {
    erfc(z.abs() / std::f64::consts::SQRT_2)
}

/// Quantile with linear interpolation between order statistics (numpy's default, Hyndman–Fan type 7).
/// `sorted` must be sorted ascending and non-empty.
pub fn quantile_sorted(sorted: &[f64], q: f64) -> f64 {
    let n = sorted.len();
    if n == 1 {
        return sorted[0];
    }
    let h = (n - 1) as f64 * q.clamp(0.0, 1.0);
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(n - 1);
    sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
}

/// A point estimate with its percentile bootstrap 95% interval.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Interval {
    pub estimate: f64,
    pub lo: f64,
    pub hi: f64,
}

/// 95% percentile intervals: for every measure of `est`, the 2.5% and 97.5% quantiles of its values over
/// the bootstrap replicates `reps` (a replicate may lack a measure, e.g. an empty cell); NaN bounds when no
/// replicate has it.
pub fn percentile_intervals(
    est: std::collections::BTreeMap<String, f64>,
    reps: &[std::collections::BTreeMap<String, f64>],
) -> std::collections::BTreeMap<String, Interval> {
    est.into_iter()
        .map(|(name, estimate)| {
            let mut v: Vec<f64> = reps.iter().filter_map(|r| r.get(&name).copied()).collect();
            v.sort_by(f64::total_cmp);
            let (lo, hi) = if v.is_empty() {
                (f64::NAN, f64::NAN)
            } else {
                (quantile_sorted(&v, 0.025), quantile_sorted(&v, 0.975))
            };
            (name, Interval { estimate, lo, hi })
        })
        .collect()
}

/// The rows of each resampling unit (the unit of a row is `unit(row)`), units in sorted order, rows in their
/// order: what a cluster bootstrap draws with [`bootstrap_indices`].
pub fn group_by_unit<'a, T>(rows: &'a [T], unit: impl Fn(&'a T) -> &'a str) -> Vec<Vec<&'a T>> {
    let mut units: Vec<&str> = rows.iter().map(&unit).collect();
    units.sort_unstable();
    units.dedup();
    let index: std::collections::HashMap<&str, usize> =
        units.iter().enumerate().map(|(i, u)| (*u, i)).collect();
    let mut by_unit: Vec<Vec<&T>> = vec![Vec::new(); units.len()];
    for r in rows {
        by_unit[index[unit(r)]].push(r);
    }
    by_unit
}

/// The resampled unit indices of replicate `b` (seeded from (seed, b), so replicates do not depend on the
/// order or number of threads they are computed in).
pub fn bootstrap_indices(n_units: usize, seed: u64, b: usize) -> Vec<usize> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ (b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    (0..n_units).map(|_| rng.random_range(0..n_units)).collect()
}

/// Percentile intervals of named measures by a cluster bootstrap: `b` replicates (seeded) of `n_units` units
/// drawn with replacement, `replicate` computing the measures on one draw (unit indices); `est` holds the
/// measures on the units as they are.
pub fn bootstrap_measures(
    n_units: usize,
    b: usize,
    seed: u64,
    est: BTreeMap<String, f64>,
    replicate: impl Fn(&[usize]) -> BTreeMap<String, f64>,
) -> BTreeMap<String, Interval> {
    let reps: Vec<BTreeMap<String, f64>> = (0..b)
        .map(|i| replicate(&bootstrap_indices(n_units, seed, i)))
        .collect();
    percentile_intervals(est, &reps)
}

/// Percentile bootstrap: `stat` is given a multiset of unit indices (each unit is e.g. a question or an
/// original triple, with all its rows) and returns the statistic, or `None` when it is undefined on that
/// resample (such replicates are dropped). Returns the estimate on the original units, the 2.5% and 97.5%
/// type-7 quantiles of the replicates, and the replicates themselves.
pub fn bootstrap<F>(n_units: usize, b: usize, seed: u64, stat: F) -> Option<(Interval, Vec<f64>)>
where
    F: Fn(&[usize]) -> Option<f64>,
{
    let all: Vec<usize> = (0..n_units).collect();
    let estimate = stat(&all)?;
    let mut reps: Vec<f64> = (0..b)
        .filter_map(|i| stat(&bootstrap_indices(n_units, seed, i)))
        .collect();
    if reps.is_empty() {
        return None;
    }
    let kept = reps.clone();
    reps.sort_by(f64::total_cmp);
    Some((
        Interval {
            estimate,
            lo: quantile_sorted(&reps, 0.025),
            hi: quantile_sorted(&reps, 0.975),
        },
        kept,
    ))
}

/// A fitted logistic regression with CR1 cluster-robust standard errors.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LogitFit {
    pub names: Vec<String>,
    pub coef: Vec<f64>,
    /// Cluster-robust (CR1) standard errors.
    pub se: Vec<f64>,
    pub z: Vec<f64>,
    pub p: Vec<f64>,
    /// 95% z intervals: coef ± 1.96·se.
    pub ci_lo: Vec<f64>,
    pub ci_hi: Vec<f64>,
    pub n: usize,
    pub clusters: usize,
    pub iterations: usize,
}

fn solve_cholesky(a: &[Vec<f64>]) -> Option<Vec<Vec<f64>>> {
    // Returns the lower-triangular L with A = L Lᵀ.
    let k = a.len();
    let mut l = vec![vec![0.0; k]; k];
    for i in 0..k {
        for j in 0..=i {
            let mut s = a[i][j];
            for m in 0..j {
                s -= l[i][m] * l[j][m];
            }
            if i == j {
                if s <= 0.0 || !s.is_finite() {
                    return None;
                }
                l[i][i] = s.sqrt();
            } else {
                l[i][j] = s / l[j][j];
            }
        }
    }
    Some(l)
}

/// Inverse of a symmetric positive-definite matrix via Cholesky.
pub fn spd_inverse(a: &[Vec<f64>]) -> Option<Vec<Vec<f64>>> {
    let k = a.len();
    let l = solve_cholesky(a)?;
    let mut inv = vec![vec![0.0; k]; k];
    for col in 0..k {
        // Solve L y = e_col, then Lᵀ x = y.
        let mut y = vec![0.0; k];
        for i in 0..k {
            let mut s = if i == col { 1.0 } else { 0.0 };
            for m in 0..i {
                s -= l[i][m] * y[m];
            }
            y[i] = s / l[i][i];
        }
        let mut x = vec![0.0; k];
        for i in (0..k).rev() {
            let mut s = y[i];
            for m in i + 1..k {
                s -= l[m][i] * x[m];
            }
            x[i] = s / l[i][i];
        }
        for i in 0..k {
            inv[i][col] = x[i];
        }
    }
    Some(inv)
}

fn sigmoid(t: f64) -> f64 {
    if t >= 0.0 {
        1.0 / (1.0 + (-t).exp())
    } else {
        let e = t.exp();
        e / (1.0 + e)
    }
}

/// Logistic regression by IRLS (Newton–Raphson on the log-likelihood) with question-clustered CR1 errors:
/// V = G/(G−1) · (N−1)/(N−K) · H⁻¹ (Σ_g S_g S_gᵀ) H⁻¹, where H = Xᵀ W X, S_g = Σ_{i∈g} x_i (y_i − p_i).
///
/// `x` rows include the intercept column if wanted; `cluster` gives each row's cluster id. Fails on a
/// singular information matrix, on non-convergence (e.g. complete separation), or on fewer than 2 clusters.
pub fn logit_cr1(
    names: &[String],
    x: &[Vec<f64>],
    y: &[f64],
    cluster: &[usize],
) -> Result<LogitFit> {
    let n = x.len();
    let k = names.len();
    if n == 0 || y.len() != n || cluster.len() != n || x.iter().any(|r| r.len() != k) {
        return Err(Error::Config("logit: inconsistent shapes".into()));
    }
    if n <= k {
        return Err(Error::Config(format!("logit: {n} rows for {k} parameters")));
    }
    let mut beta = vec![0.0; k];
    let mut iterations = 0;
    let mut converged = false;
    let mut hinv = Vec::new();
    for it in 0..100 {
        iterations = it + 1;
        let mut h = vec![vec![0.0; k]; k];
        let mut g = vec![0.0; k];
        for (row, &yi) in x.iter().zip(y) {
            let eta: f64 = row.iter().zip(&beta).map(|(a, b)| a * b).sum();
            let p = sigmoid(eta);
            let w = p * (1.0 - p);
            for a in 0..k {
                g[a] += row[a] * (yi - p);
                for b in 0..=a {
                    h[a][b] += w * row[a] * row[b];
                }
            }
        }
        for a in 0..k {
            for b in a + 1..k {
                h[a][b] = h[b][a];
            }
        }
        hinv = spd_inverse(&h).ok_or_else(|| {
            Error::Config("logit: singular information matrix (collinear or separated)".into())
        })?;
        let step: Vec<f64> = (0..k)
            .map(|a| (0..k).map(|b| hinv[a][b] * g[b]).sum())
            .collect();
        let max_step = step.iter().fold(0.0f64, |m, s| m.max(s.abs()));
        for a in 0..k {
            beta[a] += step[a];
        }
        if max_step < 1e-12 {
            converged = true;
            break;
        }
        if beta.iter().any(|b| !b.is_finite() || b.abs() > 50.0) {
            break;
        }
    }
    if !converged {
        return Err(Error::Config(
            "logit: IRLS did not converge (complete separation?)".into(),
        ));
    }
    // Information at the final estimate.
    let mut h = vec![vec![0.0; k]; k];
    let mut ids: Vec<usize> = cluster.to_vec();
    ids.sort_unstable();
    ids.dedup();
    let g_count = ids.len();
    if g_count < 2 {
        return Err(Error::Config("logit: need at least 2 clusters".into()));
    }
    let mut scores = vec![vec![0.0; k]; g_count];
    for ((row, &yi), c) in x.iter().zip(y).zip(cluster) {
        let eta: f64 = row.iter().zip(&beta).map(|(a, b)| a * b).sum();
        let p = sigmoid(eta);
        let w = p * (1.0 - p);
        let gi = ids.binary_search(c).unwrap_or(0);
        for a in 0..k {
            scores[gi][a] += row[a] * (yi - p);
            for b in 0..k {
                h[a][b] += w * row[a] * row[b];
            }
        }
    }
    if let Some(inv) = spd_inverse(&h) {
        hinv = inv;
    }
    let mut meat = vec![vec![0.0; k]; k];
    for s in &scores {
        for a in 0..k {
            for b in 0..k {
                meat[a][b] += s[a] * s[b];
            }
        }
    }
    let gf = g_count as f64;
    let c = gf / (gf - 1.0) * (n as f64 - 1.0) / (n as f64 - k as f64);
    let mul = |a: &[Vec<f64>], b: &[Vec<f64>]| -> Vec<Vec<f64>> {
        (0..k)
            .map(|i| {
                (0..k)
                    .map(|j| (0..k).map(|m| a[i][m] * b[m][j]).sum())
                    .collect()
            })
            .collect()
    };
    let v = mul(&mul(&hinv, &meat), &hinv);
    let se: Vec<f64> = (0..k).map(|i| (c * v[i][i]).max(0.0).sqrt()).collect();
    let z: Vec<f64> = beta.iter().zip(&se).map(|(b, s)| b / s).collect();
    Ok(LogitFit {
        names: names.to_vec(),
        p: z.iter().map(|&z| p_two_sided(z)).collect(),
        ci_lo: beta.iter().zip(&se).map(|(b, s)| b - Z_975 * s).collect(),
        ci_hi: beta.iter().zip(&se).map(|(b, s)| b + Z_975 * s).collect(),
        coef: beta,
        se,
        z,
        n,
        clusters: g_count,
        iterations,
    })
}

/// Jaccard similarity |A ∩ B| / |A ∪ B| of two boolean vectors over the same items (`None` if both empty).
pub fn jaccard(a: &[bool], b: &[bool]) -> Option<f64> {
    let inter = a.iter().zip(b).filter(|(x, y)| **x && **y).count();
    let union = a.iter().zip(b).filter(|(x, y)| **x || **y).count();
    (union > 0).then(|| inter as f64 / union as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, rel: f64) {
        assert!(
            (a - b).abs() <= rel * b.abs().max(1e-300),
            "{a} vs {b} (rel {})",
            (a - b).abs() / b.abs()
        );
    }

    #[test]
    fn erfc_known_values() {
        // Reference values (Abramowitz & Stegun table 7.1 / high-precision computation).
        close(erfc(0.0), 1.0, 1e-15);
        close(erfc(0.5), 0.479_500_122_186_953_5, 1e-14);
        close(erfc(1.0), 0.157_299_207_050_285_13, 1e-14);
        close(erfc(2.0), 0.004_677_734_981_047_266, 1e-13);
        close(erfc(3.0), 2.209_049_699_858_544e-5, 1e-12);
        close(erfc(5.0), 1.537_459_794_428_035e-12, 1e-12);
        close(erfc(-1.0), 2.0 - 0.157_299_207_050_285_13, 1e-15);
        close(normal_cdf(1.959_963_984_540_054), 0.975, 1e-14);
        close(normal_cdf(-1.0), 0.158_655_253_931_457_05, 1e-13);
        close(normal_cdf(1.644_853_626_951_472_2), 0.95, 1e-14);
        close(p_two_sided(2.575_829_303_548_900_4), 0.01, 1e-12);
        close(p_two_sided(-1.959_963_984_540_054), 0.05, 1e-13);
        // continuity at the switch point 3 (x/√2 for z = 4.2426…)
        let below = erfc(3.0 - 1e-9);
        let above = erfc(3.0);
        close(below, above, 1e-7);
    }

    #[test]
    fn quantiles_like_numpy() {
        // numpy.percentile([1,2,3,4], [2.5, 50, 97.5]) = [1.075, 2.5, 3.925]
        let s = [1.0, 2.0, 3.0, 4.0];
        close(quantile_sorted(&s, 0.025), 1.075, 1e-15);
        close(quantile_sorted(&s, 0.5), 2.5, 1e-15);
        close(quantile_sorted(&s, 0.975), 3.925, 1e-15);
        assert_eq!(quantile_sorted(&[7.0], 0.3), 7.0);
    }

    #[test]
    fn bootstrap_is_seeded_and_resamples_units() {
        let vals = [0.0, 1.0, 1.0, 0.0, 1.0];
        let mean =
            |idx: &[usize]| Some(idx.iter().map(|&i| vals[i]).sum::<f64>() / idx.len() as f64);
        let (a, ra) = bootstrap(5, 200, 7, mean).unwrap();
        let (b, rb) = bootstrap(5, 200, 7, mean).unwrap();
        assert_eq!(a, b);
        assert_eq!(ra, rb);
        assert_eq!(a.estimate, 0.6);
        assert!(a.lo <= 0.6 && 0.6 <= a.hi);
        // every replicate is a mean of 5 draws: a multiple of 0.2
        assert!(ra
            .iter()
            .all(|r| ((r * 5.0).round() - r * 5.0).abs() < 1e-12));
        let (c, _) = bootstrap(5, 200, 8, mean).unwrap();
        assert!(c.lo <= c.hi);
        // a constant statistic gives a degenerate interval
        let (d, _) = bootstrap(5, 50, 1, |_| Some(3.0)).unwrap();
        assert_eq!((d.lo, d.hi), (3.0, 3.0));
    }

    #[test]
    fn logit_hand_case_intercept_only() {
        // Intercept only: beta = logit(mean y). With y = 1,1,1,0 -> p = 0.75, beta = ln 3.
        // Clusters of one row each (G = N = 4, K = 1): CR1 factor 4/3 · 3/3 = 4/3.
        // H = N p(1−p) = 0.75; scores s_i = y_i − p: three of 0.25, one of −0.75 -> Σ s² = 0.75.
        // V = 4/3 · 0.75 / 0.75² = 16/9 · ... = 4/3 / 0.75 = 1.777…; se = 1.3333…
        let names = vec!["const".to_string()];
        let x = vec![vec![1.0]; 4];
        let y = [1.0, 1.0, 1.0, 0.0];
        let fit = logit_cr1(&names, &x, &y, &[0, 1, 2, 3]).unwrap();
        close(fit.coef[0], 3f64.ln(), 1e-12);
        close(fit.se[0], (4.0f64 / 3.0 / 0.75).sqrt(), 1e-12);
        close(fit.z[0], 3f64.ln() / fit.se[0], 1e-12);
        close(fit.p[0], p_two_sided(fit.z[0]), 1e-15);
        // Same rows in 2 clusters {0,1},{2,3}: S = (0.5, −0.5) -> Σ S² = 0.5; factor 2/1 · 3/3 = 2.
        // V = 2 · 0.5 / 0.5625 = 1.777…
        let fit2 = logit_cr1(&names, &x, &y, &[0, 0, 1, 1]).unwrap();
        close(fit2.se[0], (2.0 * 0.5 / 0.5625f64).sqrt(), 1e-12);
    }

    #[test]
    fn logit_binary_covariate_closed_form() {
        // y ~ const + d with a binary d: the MLE reproduces the two group log-odds.
        // d=0: y = 1,0,0,1,1 (3/5); d=1: y = 1,1,1,0 (3/4).
        let names = vec!["const".to_string(), "d".to_string()];
        let d = [0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0];
        let y = [1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0];
        let x: Vec<Vec<f64>> = d.iter().map(|&v| vec![1.0, v]).collect();
        let cl: Vec<usize> = (0..9).collect();
        let fit = logit_cr1(&names, &x, &y, &cl).unwrap();
        let l0 = (0.6f64 / 0.4).ln();
        let l1 = 3f64.ln();
        close(fit.coef[0], l0, 1e-10);
        close(fit.coef[1], l1 - l0, 1e-10);
        // With singleton clusters the sandwich of a saturated model equals the model-based variance
        // times the CR1 factor: var(const) = 1/(5·0.6·0.4) · 9/8 · 8/7.
        close(
            fit.se[0],
            (1.0 / 1.2 * 9.0 / 8.0 * 8.0 / 7.0f64).sqrt(),
            1e-10,
        );
        let var_d = 1.0 / 1.2 + 1.0 / (4.0 * 0.75 * 0.25);
        close(fit.se[1], (var_d * 9.0 / 8.0 * 8.0 / 7.0f64).sqrt(), 1e-10);
    }

    #[test]
    fn logit_separation_is_an_error() {
        let names = vec!["const".to_string(), "d".to_string()];
        let x: Vec<Vec<f64>> = [0.0, 0.0, 1.0, 1.0].iter().map(|&v| vec![1.0, v]).collect();
        assert!(logit_cr1(&names, &x, &[0.0, 0.0, 1.0, 1.0], &[0, 1, 2, 3]).is_err());
    }

    #[test]
    fn jaccard_hand() {
        assert_eq!(
            jaccard(&[true, true, false, false], &[true, false, true, false]),
            Some(1.0 / 3.0)
        );
        assert_eq!(jaccard(&[false, false], &[false, false]), None);
        assert_eq!(jaccard(&[true], &[true]), Some(1.0));
    }
}
