//! The summary of one statistic over the replications of a point: n, mean, sample standard
//! deviation and the 95 % confidence interval of the mean (Student t with n - 1 degrees of
//! freedom).

use statrs::distribution::{ContinuousCDF, StudentsT};

/// Mean, standard deviation and confidence interval of a sample.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Summary {
    pub n: usize,
    pub mean: f64,
    /// Sample standard deviation (n - 1 in the denominator); NaN when n < 2.
    pub sd: f64,
    /// Half the width of the 95 % interval of the mean; NaN when n < 2.
    pub half: f64,
}

impl Summary {
    /// The summary of `xs` (non-finite values are left out).
    pub(crate) fn of(xs: &[f64]) -> Summary {
        let xs: Vec<f64> = xs.iter().copied().filter(|x| x.is_finite()).collect();
        let n = xs.len();
        if n == 0 {
            return Summary {
                n,
                mean: f64::NAN,
                sd: f64::NAN,
                half: f64::NAN,
            };
        }
        let mean = xs.iter().sum::<f64>() / n as f64;
        if n < 2 {
            return Summary {
                n,
                mean,
                sd: f64::NAN,
                half: f64::NAN,
            };
        }
        let ss: f64 = xs.iter().map(|x| (x - mean) * (x - mean)).sum();
        let sd = (ss / (n - 1) as f64).sqrt();
        Summary {
            n,
            mean,
            sd,
            half: t975(n - 1) * sd / (n as f64).sqrt(),
        }
    }

    pub(crate) fn lo(&self) -> f64 {
        self.mean - self.half
    }

    pub(crate) fn hi(&self) -> f64 {
        self.mean + self.half
    }
}

/// The 0.975 quantile of Student's t with `df` degrees of freedom (df >= 1).
pub(crate) fn t975(df: usize) -> f64 {
    StudentsT::new(0.0, 1.0, df as f64)
        .expect("df >= 1 is a valid Student t")
        .inverse_cdf(0.975)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_quantiles_match_the_tables() {
        for (df, want) in [
            (1, 12.706),
            (2, 4.303),
            (4, 2.776),
            (9, 2.262),
            (29, 2.045),
            (99, 1.984),
            (100_000, 1.960),
        ] {
            let t = t975(df);
            assert!((t - want).abs() < 6e-4, "df {df}: {t} vs {want}");
        }
    }

    #[test]
    fn summary_of_a_small_sample() {
        let s = Summary::of(&[1.0, 2.0, 3.0, 4.0, f64::NAN]);
        assert_eq!(s.n, 4);
        assert_eq!(s.mean, 2.5);
        assert!((s.sd - (5.0f64 / 3.0).sqrt()).abs() < 1e-12);
        assert!((s.half - 3.182446 * s.sd / 2.0).abs() < 1e-5, "{}", s.half);
        let one = Summary::of(&[7.0]);
        assert_eq!((one.n, one.mean), (1, 7.0));
        assert!(one.sd.is_nan() && one.half.is_nan());
        assert!(Summary::of(&[]).mean.is_nan());
    }
}
