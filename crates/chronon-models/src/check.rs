//! Parameter checks shared by the models: each error is one line naming the parameter (as its
//! flag is spelled) and what is allowed.

/// `x` rounded up as a count, saturating at `u64::MAX` (for size estimates).
pub(crate) fn count(x: f64) -> u64 {
    x.ceil() as u64
}

/// `value` must be finite and > 0.
pub(crate) fn positive(name: &str, value: f64) -> Result<(), String> {
    if value > 0.0 && value.is_finite() {
        Ok(())
    } else {
        Err(format!("{name} is {value}; it must be finite and > 0"))
    }
}

/// `value` must be finite and >= 0.
pub(crate) fn nonneg(name: &str, value: f64) -> Result<(), String> {
    if value >= 0.0 && value.is_finite() {
        Ok(())
    } else {
        Err(format!("{name} is {value}; it must be finite and >= 0"))
    }
}

/// `value` must be a probability in [0, 1].
pub(crate) fn probability(name: &str, value: f64) -> Result<(), String> {
    if (0.0..=1.0).contains(&value) {
        Ok(())
    } else {
        Err(format!("{name} is {value}; it must be in [0, 1]"))
    }
}

/// `value` must be at least `min`.
pub(crate) fn at_least(name: &str, value: u64, min: u64) -> Result<(), String> {
    if value >= min {
        Ok(())
    } else {
        Err(format!("{name} is {value}; it must be at least {min}"))
    }
}

/// The first time of a periodic global event every `period` (none when `period` is 0): the
/// `Model::global_events` of the models whose sampling is optional.
pub(crate) fn sampling(period: f64) -> Vec<f64> {
    if period > 0.0 {
        vec![period]
    } else {
        Vec::new()
    }
}
