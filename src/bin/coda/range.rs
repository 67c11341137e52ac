//! Range-checked parsers for numeric arguments. Each is a clap `value_parser`, so a value out of
//! range is refused before the command starts, in clap's own words, with the argument's name:
//! `invalid value '1.5' for '--ps-local <PS_LOCAL>': must be in [0, 1]`.

/// Most servers a generated or simulated cluster may have (the library's own limit).
pub const MAX_SERVERS: usize = coda::model::MAX_SERVERS;

/// Most jobs `coda generate` writes: at about 1 KB of JSON each, 10 GB.
pub const MAX_JOBS: usize = 10_000_000;

/// Shortest and longest scheduling round, seconds: below a second the event times (seconds,
/// f64) stop resolving rounds over a months-long trace; a round over a week schedules nothing.
pub const ROUND_S: (f64, f64) = (1.0, 7.0 * 86_400.0);

fn number(s: &str) -> Result<f64, String> {
    s.trim()
        .parse::<f64>()
        .map_err(|_| format!("`{s}` is not a number"))
}

fn count<T: std::str::FromStr>(s: &str) -> Result<T, String> {
    s.trim()
        .parse::<T>()
        .map_err(|_| format!("`{s}` is not a whole number in range"))
}

/// A finite number > 0.
pub fn positive(s: &str) -> Result<f64, String> {
    match number(s)? {
        v if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err("must be a finite number > 0".into()),
    }
}

/// A finite number >= 0.
pub fn non_negative(s: &str) -> Result<f64, String> {
    match number(s)? {
        v if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err("must be a finite number >= 0".into()),
    }
}

/// A fraction in [0, 1].
pub fn fraction(s: &str) -> Result<f64, String> {
    match number(s)? {
        v if (0.0..=1.0).contains(&v) => Ok(v),
        _ => Err("must be in [0, 1]".into()),
    }
}

/// A wall-clock limit in seconds: > 0, or `inf` for none.
pub fn time_limit(s: &str) -> Result<f64, String> {
    match number(s)? {
        v if v > 0.0 => Ok(v),
        _ => Err("must be > 0 seconds (or `inf` for no limit)".into()),
    }
}

/// A round length in seconds, within [`ROUND_S`].
pub fn round_s(s: &str) -> Result<f64, String> {
    let (lo, hi) = ROUND_S;
    match number(s)? {
        v if (lo..=hi).contains(&v) => Ok(v),
        _ => Err(format!("must be in [{lo}, {hi}] seconds")),
    }
}

/// A whole number >= 1 (`u32`).
pub fn at_least_one_u32(s: &str) -> Result<u32, String> {
    match count::<u32>(s)? {
        0 => Err("must be >= 1".into()),
        v => Ok(v),
    }
}

/// A whole number >= 1 (`u64`).
pub fn at_least_one_u64(s: &str) -> Result<u64, String> {
    match count::<u64>(s)? {
        0 => Err("must be >= 1".into()),
        v => Ok(v),
    }
}

/// A whole number >= 1 (`usize`).
pub fn at_least_one(s: &str) -> Result<usize, String> {
    match count::<usize>(s)? {
        0 => Err("must be >= 1".into()),
        v => Ok(v),
    }
}

/// A server count in [1, [`MAX_SERVERS`]].
pub fn servers(s: &str) -> Result<usize, String> {
    match count::<usize>(s)? {
        v if (1..=MAX_SERVERS).contains(&v) => Ok(v),
        _ => Err(format!("must be in [1, {MAX_SERVERS}]")),
    }
}

/// A job count in [0, [`MAX_JOBS`]].
pub fn jobs(s: &str) -> Result<usize, String> {
    match count::<usize>(s)? {
        v if v <= MAX_JOBS => Ok(v),
        _ => Err(format!("must be in [0, {MAX_JOBS}]")),
    }
}

/// A round size `SERVERSxJOBS` (e.g. `8x16`): servers as [`servers`], jobs as [`jobs`].
pub fn size(s: &str) -> Result<(usize, usize), String> {
    let (a, b) = s
        .trim()
        .split_once('x')
        .ok_or_else(|| format!("`{s}`: expected SERVERSxJOBS, e.g. 8x16"))?;
    Ok((servers(a)?, jobs(b)?))
}

/// A worker count in [1, the most GPUs one server may have].
pub fn workers(s: &str) -> Result<u32, String> {
    let hi = coda::model::MAX_GPUS_PER_SERVER;
    match count::<u32>(s)? {
        v if (1..=hi).contains(&v) => Ok(v),
        _ => Err(format!("must be in [1, {hi}]")),
    }
}

/// The objective of `--round-s` and `--restart-s`, each already in range: a restart costs at
/// most one round (the simulator charges and the `ilp` policy prices the same two numbers).
pub fn objective(round_s: f64, restart_s: f64, credit: f64) -> coda::Result<coda::Objective> {
    if restart_s > round_s {
        return Err(coda::Error::setting(
            "command line",
            "--restart-s",
            restart_s,
            format!("must be at most --round-s {round_s}: a restart costs at most one round"),
        ));
    }
    coda::Objective::new(round_s, restart_s)?.with_in_service_credit(credit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_refuse_what_they_name() {
        assert_eq!(fraction("0.5"), Ok(0.5));
        assert!(fraction("1.5").unwrap_err().contains("[0, 1]"));
        assert!(fraction("NaN").is_err());
        assert!(positive("0").is_err() && positive("inf").is_err() && positive("-1").is_err());
        assert_eq!(time_limit("inf"), Ok(f64::INFINITY));
        assert!(time_limit("0").is_err() && time_limit("nan").is_err());
        assert!(round_s("1e-9").is_err() && round_s("1e300").is_err());
        assert_eq!(round_s("300"), Ok(300.0));
        assert!(at_least_one_u32("0").is_err() && at_least_one_u32("-3").is_err());
        assert!(servers("4294967296").is_err() && servers("0").is_err());
        assert_eq!(servers("8"), Ok(8));
        assert!(non_negative("-0.1").is_err());
        assert!(jobs("x").unwrap_err().contains("not a whole number"));
    }
}
