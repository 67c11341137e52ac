//! The one error type of the crate.
//!
//! Bad input fails at construction with a variant that names the file, the line and the field;
//! outcomes of a correct computation (a violated constraint, an infeasible round) are data, not
//! errors (see [`crate::Violation`]) — except where a caller hands an invalid schedule to
//! something that needs a valid one ([`Error::InvalidSchedule`]).

use std::path::PathBuf;

/// Everything that can go wrong while reading input or answering a query.
///
/// ```
/// // A file that does not parse names its line, column and field.
/// let e = coda::ClusterSnapshot::from_json_str("{\"time_s\": \"soon\"}", "round.json").unwrap_err();
/// assert!(matches!(e, coda::Error::Json { .. }));
/// assert!(e.to_string().starts_with("round.json:1:"));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file could not be opened, read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// A CSV row could not be split into fields (wrong number of fields, bad quoting, bad UTF-8).
    #[error("{file}:{line}: malformed CSV row: {message}")]
    MalformedRow {
        /// The file.
        file: String,
        /// 1-based line number (the header is line 1).
        line: u64,
        /// What was wrong.
        message: String,
    },
    /// A required column is absent from a CSV header.
    #[error("{file}:1: missing column `{column}`")]
    MissingColumn {
        /// The file.
        file: String,
        /// The column that was expected.
        column: String,
    },
    /// A field holds a value that cannot be used (unparsable, NaN, negative, zero...).
    #[error("{file}:{line}: field `{field}` = {value:?}: {expected}")]
    InvalidField {
        /// The file (or `<input>` for data given in memory).
        file: String,
        /// 1-based line number (0 when the input has no lines).
        line: u64,
        /// The field (a column name, or a JSON path such as `jobs[3].total_iterations`).
        field: String,
        /// The offending value as written.
        value: String,
        /// What it must be.
        expected: Expected,
    },
    /// A job with a field no job can have ([`crate::model::Job::check`]); a snapshot or trace
    /// reports it as an [`Error::InvalidField`] with its file and path.
    #[error("job {job}: field `{field}` = {value}: {expected}")]
    InvalidJob {
        /// The job.
        job: crate::id::JobId,
        /// The field (`total_iterations`, `demand.cpu_per_worker`, `tiers[2].mem_per_worker_gib`...).
        field: String,
        /// The offending value.
        value: String,
        /// What it must be.
        expected: Expected,
    },
    /// A JSON document does not parse or does not match the schema.
    #[error("{file}:{line}:{column}: field `{field}`: {message}")]
    Json {
        /// The file.
        file: String,
        /// 1-based line of the error.
        line: usize,
        /// 1-based column of the error.
        column: usize,
        /// JSON path of the offending field (`.` for the document itself).
        field: String,
        /// What serde reported.
        message: String,
    },
    /// A job names a model the performance model has no calibration for.
    #[error("{context}: unknown model `{model}` (known: {known})")]
    UnknownModel {
        /// Where the name was found (file and field, or a job id).
        context: String,
        /// The name.
        model: String,
        /// The names that are known, comma-separated.
        known: String,
    },
    /// A model is known but not for the requested architecture, GPU type or configuration.
    #[error("model `{model}`: {reason}")]
    UnsupportedConfiguration {
        /// The model.
        model: String,
        /// What is not supported.
        reason: String,
    },
    /// A cluster without servers or without GPUs.
    #[error("{context}: the cluster has no {what}")]
    EmptyCluster {
        /// Where the cluster came from.
        context: String,
        /// `servers` or `GPUs`.
        what: String,
    },
    /// A job whose smallest task (or smallest allocation) no server or cluster can ever host.
    #[error("{context}: job {job} can never run: {reason}")]
    JobTooLarge {
        /// Where the job came from.
        context: String,
        /// The job id.
        job: crate::id::JobId,
        /// Which demand exceeds which capacity.
        reason: String,
    },
    /// A snapshot that is internally inconsistent (duplicate ids, a current placement on an
    /// unknown server...).
    #[error("{context}: invalid instance: {reason}")]
    InvalidInstance {
        /// Where the instance came from.
        context: String,
        /// What is inconsistent.
        reason: String,
    },
    /// A schedule that cannot run on its snapshot, with every violation, typed (what
    /// [`crate::Schedule::validate`] found).
    #[error(
        "{context}: invalid schedule, {} violation(s), first: {}",
        .violations.len(),
        .violations.first().map(ToString::to_string).unwrap_or_default()
    )]
    InvalidSchedule {
        /// Who produced or used the schedule.
        context: String,
        /// Every violation.
        violations: Vec<crate::violation::Violation>,
    },
    /// A setting outside its range: solver, simulator, objective, policy or generator settings.
    #[error("{settings}: setting `{field}` = {value}: {expected}")]
    InvalidSetting {
        /// Which settings (`solve settings`, `simulator`, `objective`, `policy options`...).
        settings: String,
        /// The setting.
        field: String,
        /// Its value.
        value: String,
        /// What it must be.
        expected: Expected,
    },
    /// A name that is not one of the known ones (a policy, a cluster spec).
    #[error("unknown {what} `{name}`: {reason}")]
    UnknownName {
        /// What kind of name.
        what: String,
        /// The name given.
        name: String,
        /// The names (or forms) that are known.
        reason: String,
    },
    /// The solver itself failed (infeasible, time or node limits are outcomes, not failures).
    #[error("solver {solver} failed: {reason}")]
    Solver {
        /// Which solver.
        solver: String,
        /// What it said.
        reason: String,
    },
    /// A resource manager's command failed (`coda slurm`: `scontrol`, `squeue`, `sinfo`).
    #[error("`{command}` failed: {message}")]
    ResourceManager {
        /// The command line.
        command: String,
        /// What it printed on stderr, and its exit status.
        message: String,
    },
    /// A policy weights file that cannot be used: not safetensors, another format or version,
    /// features that differ from this build's, a tensor missing or of the wrong shape.
    #[error("{path}: policy weights: {reason}")]
    ModelFile {
        /// The file (or what the bytes came from).
        path: String,
        /// What is wrong.
        reason: String,
    },
    /// A calibration could not be computed (too few rows, singular fit).
    #[error("calibration of `{model}` failed: {reason}")]
    Calibration {
        /// The model being fitted.
        model: String,
        /// Why.
        reason: String,
    },
}

/// Shorthand used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What a refused setting or field must be: one of the few kinds the checks use, each a value a
/// caller can match on, with its words for the message; [`Expected::Other`] for a rule of its
/// own.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Expected {
    /// A finite number > 0.
    Positive,
    /// A finite number >= 0.
    NonNegative,
    /// A time limit: seconds > 0, or infinity for none.
    TimeLimit,
    /// A number in [0, 1].
    Fraction,
    /// A number strictly between 0 and 1.
    OpenFraction,
    /// A whole number >= 1.
    AtLeastOne,
    /// A number at least this.
    AtLeast(f64),
    /// A number in `[lo, hi]`.
    Within(f64, f64),
    /// At most another setting's value (its name, its value).
    AtMost(String, f64),
    /// Above another setting's value (its name, its value).
    Above(String, f64),
    /// One of these names.
    OneOf(Vec<String>),
    /// A rule of its own, in words.
    Other(String),
}

impl std::fmt::Display for Expected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Expected::Positive => f.write_str("must be a finite number > 0"),
            Expected::NonNegative => f.write_str("must be a finite number >= 0"),
            Expected::TimeLimit => f.write_str("must be > 0 seconds (or `inf` for no limit)"),
            Expected::Fraction => f.write_str("must be in [0, 1]"),
            Expected::OpenFraction => f.write_str("must be strictly between 0 and 1"),
            Expected::AtLeastOne => f.write_str("must be >= 1"),
            Expected::AtLeast(v) => write!(f, "must be a number >= {v}"),
            Expected::Within(lo, hi) => write!(f, "must be in [{lo}, {hi}]"),
            Expected::AtMost(name, v) => write!(f, "must be at most {name} {v}"),
            Expected::Above(name, v) => write!(f, "must be above {name} {v}"),
            Expected::OneOf(names) => write!(f, "known: {}", names.join(", ")),
            Expected::Other(words) => f.write_str(words),
        }
    }
}

impl Expected {
    /// Whether `v` is such a number (the numeric kinds; [`Expected::OneOf`] and
    /// [`Expected::Other`] admit nothing here: their checks are their callers').
    pub fn admits(&self, v: f64) -> bool {
        match self {
            Expected::Positive => v.is_finite() && v > 0.0,
            Expected::NonNegative => v.is_finite() && v >= 0.0,
            Expected::TimeLimit => v > 0.0,
            Expected::Fraction => (0.0..=1.0).contains(&v),
            Expected::OpenFraction => v > 0.0 && v < 1.0,
            Expected::AtLeastOne => v >= 1.0 && v.fract() == 0.0,
            Expected::AtLeast(lo) => v.is_finite() && v >= *lo,
            Expected::Within(lo, hi) => (*lo..=*hi).contains(&v),
            Expected::AtMost(_, hi) => v <= *hi,
            Expected::Above(_, lo) => v > *lo,
            Expected::OneOf(_) | Expected::Other(_) => false,
        }
    }

    /// `text` as a number this admits, or the message a command line shows (clap's value
    /// parsers call this).
    pub fn parse(&self, text: &str) -> std::result::Result<f64, String> {
        let v: f64 = text
            .trim()
            .parse()
            .map_err(|_| format!("`{text}` is not a number"))?;
        if self.admits(v) {
            Ok(v)
        } else {
            Err(self.to_string())
        }
    }
}

impl From<&str> for Expected {
    fn from(words: &str) -> Self {
        Expected::Other(words.to_string())
    }
}

impl From<String> for Expected {
    fn from(words: String) -> Self {
        Expected::Other(words)
    }
}

impl Error {
    /// An [`Error::Io`] on `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    /// An [`Error::InvalidSetting`].
    pub fn setting(
        settings: &str,
        field: &str,
        value: impl ToString,
        expected: impl Into<Expected>,
    ) -> Self {
        Error::InvalidSetting {
            settings: settings.to_string(),
            field: field.to_string(),
            value: value.to_string(),
            expected: expected.into(),
        }
    }

    /// An [`Error::InvalidField`].
    pub fn invalid(
        file: &str,
        line: u64,
        field: &str,
        value: impl ToString,
        expected: impl Into<Expected>,
    ) -> Self {
        Error::InvalidField {
            file: file.to_string(),
            line,
            field: field.to_string(),
            value: value.to_string(),
            expected: expected.into(),
        }
    }
}
