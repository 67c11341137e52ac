//! The tag that hands a Slurm job to coda: its `--comment`, `coda:model=bert,gpus=4,iters=9e6`.
//!
//! | key | meaning | required |
//! |---|---|---|
//! | `model` | a model the performance model prices (`coda perf --list`); PS or all-reduce follows from it | yes |
//! | `gpus` | GPUs (workers) the job was submitted with; coda may give it 1 to twice that, as in a trace replay | yes |
//! | `iters` | its work, in the performance model's iteration unit | yes |
//! | `done` | work done so far: written by the job as it checkpoints, read back after a restart | no (0) |
//! | `submit` | first submission, Unix seconds: written by `coda slurm` when it requeues the job (Slurm resets its submit time) | no |
//!
//! Everything else about the job (per-task cores and memory, how far it scales) follows the same
//! rule as a trace row ([`crate::workload::trace`]), so a tagged job and the same row replayed
//! by `coda simulate --cpu-mem fixed` are the same job.

use crate::error::{Error, Expected, Result};
use crate::model::{Job, JobId};
use crate::perf::PerfModel;
use crate::workload::trace::{CpuMemMode, TraceOptions, make_job};

/// What every coda tag starts with.
pub const TAG_PREFIX: &str = "coda:";

/// A parsed tag.
#[derive(Debug, Clone, PartialEq)]
pub struct Tag {
    /// Model name.
    pub model: String,
    /// GPUs the job was submitted with.
    pub gpus: u32,
    /// Total work, iterations.
    pub iters: f64,
    /// Work done, iterations.
    pub done: f64,
    /// First submission, Unix seconds, if recorded.
    pub submit: Option<f64>,
}

impl Tag {
    /// Whether a job's comment hands it to coda (it may still be malformed).
    pub fn is_tagged(comment: &str) -> bool {
        comment.trim_start().starts_with(TAG_PREFIX)
    }

    /// Parses a comment; `job` names the Slurm job in the error, which names the key.
    pub fn parse(comment: &str, job: u64) -> Result<Tag> {
        let bad = |field: &str, value: &str, expected: Expected| Error::InvalidField {
            file: format!("slurm job {job}"),
            line: 0,
            field: format!("comment.{field}"),
            value: value.to_string(),
            expected,
        };
        let body = comment.trim().strip_prefix(TAG_PREFIX).ok_or_else(|| {
            bad(
                "",
                comment,
                Expected::Other(format!("starts with `{TAG_PREFIX}`")),
            )
        })?;
        let (mut model, mut gpus, mut iters, mut done, mut submit) = (None, None, None, 0.0, None);
        for pair in body.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (key, value) = pair
                .split_once('=')
                .ok_or_else(|| bad(pair, pair, Expected::Other("key=value".into())))?;
            let number = |e: Expected| {
                value
                    .parse::<f64>()
                    .ok()
                    .filter(|v| v.is_finite())
                    .ok_or_else(|| bad(key, value, e))
            };
            match key {
                "model" if !value.is_empty() => model = Some(value.to_string()),
                "gpus" => {
                    gpus = Some(
                        value
                            .parse::<u32>()
                            .ok()
                            .filter(|&g| g >= 1)
                            .ok_or_else(|| bad(key, value, Expected::AtLeastOne))?,
                    )
                }
                "iters" => {
                    iters = Some(number(Expected::Positive).and_then(|v| {
                        if v > 0.0 {
                            Ok(v)
                        } else {
                            Err(bad(key, value, Expected::Positive))
                        }
                    })?)
                }
                "done" => {
                    done = number(Expected::NonNegative).and_then(|v| {
                        if v >= 0.0 {
                            Ok(v)
                        } else {
                            Err(bad(key, value, Expected::NonNegative))
                        }
                    })?
                }
                "submit" => submit = Some(number(Expected::NonNegative)?),
                _ => {
                    return Err(bad(
                        key,
                        value,
                        Expected::OneOf(
                            ["model", "gpus", "iters", "done", "submit"]
                                .map(String::from)
                                .to_vec(),
                        ),
                    ));
                }
            }
        }
        let missing = |k: &str| bad(k, "", Expected::Other("present".into()));
        Ok(Tag {
            model: model.ok_or_else(|| missing("model"))?,
            gpus: gpus.ok_or_else(|| missing("gpus"))?,
            iters: iters.ok_or_else(|| missing("iters"))?,
            done,
            submit,
        })
    }

    /// The comment this tag is written as (`done` with 6 significant digits' worth of rounding
    /// kept out: the exact value, so that a restart resumes where the checkpoint was).
    pub fn comment(&self) -> String {
        let mut s = format!(
            "{TAG_PREFIX}model={},gpus={},iters={}",
            self.model, self.gpus, self.iters
        );
        if self.done > 0.0 {
            s.push_str(&format!(",done={}", self.done));
        }
        if let Some(t) = self.submit {
            s.push_str(&format!(",submit={t}"));
        }
        s
    }

    /// The job this tag describes, as the trace rule builds it (fixed cores and memory per
    /// worker: Slurm gives a running job's tasks no other share), arriving at `arrival_s`.
    pub fn job(&self, id: JobId, arrival_s: f64, perf: &dyn PerfModel) -> Result<Job> {
        let arch =
            perf.known_architecture(&self.model, &format!("slurm job {}: comment.model", id.0))?;
        let opts = TraceOptions {
            cpu_mem: CpuMemMode::Fixed,
            ..TraceOptions::default()
        };
        let mut job = make_job(
            id,
            arrival_s,
            &self.model,
            arch,
            self.gpus,
            (None, None),
            &opts,
            perf,
        )?;
        job.total_iterations = self.iters;
        // A snapshot needs work left; a job that is done exits on its own.
        job.run.done_iterations = self.done.min(self.iters * (1.0 - 1e-9));
        Ok(job)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tag_reads_back_as_written() {
        let t = Tag::parse("coda:model=bert,gpus=4,iters=1000.5,done=10,submit=17", 3).unwrap();
        assert_eq!(t.model, "bert");
        assert_eq!(
            (t.gpus, t.iters, t.done, t.submit),
            (4, 1000.5, 10.0, Some(17.0))
        );
        assert_eq!(Tag::parse(&t.comment(), 3).unwrap(), t);
    }

    #[test]
    fn a_bad_tag_names_the_job_and_key() {
        for (comment, key) in [
            ("coda:model=bert,gpus=0,iters=5", "comment.gpus"),
            ("coda:model=bert,gpus=2", "comment.iters"),
            ("coda:model=bert,gpus=2,iters=-1", "comment.iters"),
            ("coda:model=bert,gpus=2,iters=5,color=red", "comment.color"),
            ("coda:gpus=2,iters=5", "comment.model"),
            ("coda:model=bert,gpus", "comment.gpus"),
        ] {
            match Tag::parse(comment, 12) {
                Err(Error::InvalidField { file, field, .. }) => {
                    assert_eq!(file, "slurm job 12", "{comment}");
                    assert_eq!(field, key, "{comment}");
                }
                other => panic!("{comment}: {other:?}"),
            }
        }
    }
}
