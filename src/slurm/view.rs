//! What coda reads of a Slurm cluster: each node's state and GPUs in use (`sinfo --json`), each
//! job's state, tag and GPUs per node (`squeue --json`, whose `gres_detail` holds the GPU
//! indices `scontrol show job -d` prints).

use serde::Deserialize;

use super::hostlist::{expand_hostlist, expand_indices};
use crate::error::{Error, Expected, Result};
use crate::util::json::parse_json;

/// A job's state as coda tells them apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobState {
    /// Waiting (held or not).
    Pending,
    /// Running.
    Running,
    /// Ending (its GPUs not yet free): after it finished, was cancelled or requeued.
    Completing,
    /// Any other state (completed, cancelled, failed...), as Slurm writes it.
    Ended(String),
}

/// One job of `squeue --json`.
#[derive(Debug, Clone, PartialEq)]
pub struct JobView {
    /// Slurm job id.
    pub id: u64,
    /// Job name.
    pub name: String,
    /// State.
    pub state: JobState,
    /// Whether it is held (priority 0: `--hold`, `scontrol hold` or `requeuehold`).
    pub held: bool,
    /// Why it waits (`JobHeldUser`, `Resources`, `BeginTime`...).
    pub reason: String,
    /// Its comment (where a coda tag lives).
    pub comment: String,
    /// Submission time, Unix seconds (reset by a requeue).
    pub submit_s: f64,
    /// When it last became eligible to start, Unix seconds (its release, for a held job).
    pub eligible_s: f64,
    /// When its last run ended, Unix seconds (0 if none did).
    pub end_s: f64,
    /// Times Slurm restarted it (requeues).
    pub restarts: u32,
    /// Nodes it holds (running or completing), in Slurm's order.
    pub nodes: Vec<String>,
    /// GPU indices it holds on each of `nodes` (empty where Slurm does not report them, as after
    /// a slurmctld restart; `running_speeds` and `Round::build` then infer them).
    pub gpus: Vec<Vec<u32>>,
    /// Nodes it is pinned to (`ReqNodeList`), if any.
    pub req_nodes: Vec<String>,
    /// GPUs it asks for in all (`TresPerJob=gres:gpu:k`, sbatch's `--gpus`), if it asks so.
    pub req_gpus: Option<u32>,
}

/// One node of `sinfo --json`.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeView {
    /// Node name.
    pub name: String,
    /// Whether new work may start there (not down, drained, draining, failing or unresponsive).
    pub open: bool,
    /// Whether it runs work at all (not down or unresponsive): its jobs are alive.
    pub alive: bool,
    /// GPU indices in use by any job.
    pub used_gpus: Vec<u32>,
}

/// The cluster as Slurm sees it at one moment.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SlurmView {
    /// Nodes.
    pub nodes: Vec<NodeView>,
    /// Jobs Slurm still knows (ended ones until `MinJobAge`).
    pub jobs: Vec<JobView>,
}

/// The fields of `squeue --json` coda reads (the rest ignored; text fields Slurm leaves null or
/// out read as empty).
#[derive(Deserialize)]
struct SqueueDoc {
    jobs: Vec<SqueueJob>,
}

/// The three fields every job must have are optional here so that a missing one is reported
/// with its full path (`jobs[3].job_state`), as a wrong value is.
#[derive(Deserialize)]
struct SqueueJob {
    #[serde(default)]
    job_id: Option<u64>,
    #[serde(default)]
    job_state: Option<String>,
    #[serde(default)]
    submit_time: Option<f64>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    state_reason: Option<String>,
    #[serde(default)]
    priority: Option<f64>,
    #[serde(default)]
    comment: Option<String>,
    #[serde(default)]
    eligible_time: Option<f64>,
    #[serde(default)]
    end_time: Option<f64>,
    #[serde(default)]
    restart_cnt: Option<u32>,
    #[serde(default)]
    nodes: Option<String>,
    #[serde(default)]
    gres_detail: Option<Vec<String>>,
    #[serde(default)]
    required_nodes: Option<String>,
    #[serde(default)]
    tres_per_job: Option<String>,
}

/// The fields of `sinfo --json` coda reads.
#[derive(Deserialize)]
struct SinfoDoc {
    nodes: Vec<SinfoNode>,
}

#[derive(Deserialize)]
struct SinfoNode {
    name: String,
    state: String,
    #[serde(default)]
    state_flags: Option<Vec<String>>,
    #[serde(default)]
    gres_used: Option<String>,
}

/// A required field Slurm left out, as an error naming its path.
fn missing(source: &str, field: String) -> Error {
    Error::InvalidField {
        file: source.to_string(),
        line: 0,
        field,
        value: String::new(),
        expected: Expected::Other("present".into()),
    }
}

/// A GRES string without readable `IDX:` lists, as an error naming where it was.
fn gres_error(source: &str, field: String, value: &str) -> Error {
    Error::InvalidField {
        file: source.to_string(),
        line: 0,
        field,
        value: value.chars().take(80).collect(),
        expected: Expected::Other("GRES with IDX lists".into()),
    }
}

/// GPU indices of one node's GRES string (`gpu:sw0:1(IDX:0),gpu:sw2:1(IDX:4)` or
/// `gpu:2(IDX:0-1)`): every `IDX:` list of a `gpu` entry.
pub(crate) fn gpu_indices(gres: &str) -> Option<Vec<u32>> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    let mut entries = Vec::new();
    for (i, c) in gres.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                entries.push(&gres[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    entries.push(&gres[start..]);
    for e in entries.into_iter().map(str::trim).filter(|e| !e.is_empty()) {
        if !e.starts_with("gpu") {
            continue;
        }
        if let Some(open) = e.find("(IDX:") {
            let close = e[open..].find(')')? + open;
            out.extend(expand_indices(&e[open + 5..close])?);
        }
    }
    out.sort_unstable();
    out.dedup();
    Some(out)
}

impl SlurmView {
    /// Reads `squeue --json` and `sinfo --json` output; an error names the document and field.
    pub fn parse(squeue: &str, sinfo: &str) -> Result<SlurmView> {
        Ok(SlurmView {
            jobs: Self::parse_jobs(squeue)?,
            nodes: Self::parse_nodes(sinfo)?,
        })
    }

    /// The jobs of `squeue --json` output.
    pub fn parse_jobs(squeue: &str) -> Result<Vec<JobView>> {
        let src = "squeue --json";
        let doc: SqueueDoc = parse_json(squeue, src)?;
        doc.jobs
            .into_iter()
            .enumerate()
            .map(|(k, j)| {
                let need = |f: &str| missing(src, format!("jobs[{k}].{f}"));
                let id = j.job_id.ok_or_else(|| need("job_id"))?;
                let state = match j.job_state.as_deref().ok_or_else(|| need("job_state"))? {
                    "PENDING" => JobState::Pending,
                    "RUNNING" => JobState::Running,
                    "COMPLETING" => JobState::Completing,
                    other => JobState::Ended(other.to_string()),
                };
                let submit_s = j.submit_time.ok_or_else(|| need("submit_time"))?;
                let reason = j.state_reason.unwrap_or_default();
                let held = state == JobState::Pending
                    && (j.priority == Some(0.0) || reason.starts_with("JobHeld"));
                let nodes = expand_hostlist(j.nodes.as_deref().unwrap_or(""))?;
                let detail = j.gres_detail.unwrap_or_default();
                let gpus = if matches!(state, JobState::Running | JobState::Completing) {
                    (0..nodes.len())
                        .map(|n| match detail.get(n) {
                            None => Ok(Vec::new()),
                            Some(g) => gpu_indices(g).ok_or_else(|| {
                                gres_error(src, format!("jobs[{k}].gres_detail[{n}]"), g)
                            }),
                        })
                        .collect::<Result<Vec<_>>>()?
                } else {
                    vec![Vec::new(); nodes.len()]
                };
                Ok(JobView {
                    id,
                    name: j.name.unwrap_or_default(),
                    held,
                    reason,
                    comment: j.comment.unwrap_or_default(),
                    submit_s,
                    eligible_s: j.eligible_time.unwrap_or(0.0),
                    end_s: j.end_time.unwrap_or(0.0),
                    restarts: j.restart_cnt.unwrap_or(0),
                    nodes,
                    gpus,
                    req_nodes: expand_hostlist(j.required_nodes.as_deref().unwrap_or(""))?,
                    req_gpus: j
                        .tres_per_job
                        .as_deref()
                        .and_then(|t| t.strip_prefix("gres:gpu:"))
                        .and_then(|k| k.parse().ok()),
                    state,
                })
            })
            .collect()
    }

    /// The nodes of `sinfo --json` output.
    pub fn parse_nodes(sinfo: &str) -> Result<Vec<NodeView>> {
        let src = "sinfo --json";
        let doc: SinfoDoc = parse_json(sinfo, src)?;
        doc.nodes
            .into_iter()
            .enumerate()
            .map(|(k, n)| {
                let state = n.state.to_ascii_lowercase();
                let flags: Vec<String> = n
                    .state_flags
                    .unwrap_or_default()
                    .iter()
                    .map(|f| f.to_ascii_uppercase())
                    .collect();
                let flagged = |f: &[&str]| flags.iter().any(|x| f.contains(&x.as_str()));
                let alive = !matches!(state.as_str(), "down" | "unknown" | "future")
                    && !flagged(&["NOT_RESPONDING", "POWERED_DOWN", "POWERING_DOWN"]);
                let open = alive
                    && !matches!(state.as_str(), "drained" | "draining")
                    && !flagged(&[
                        "DRAIN",
                        "FAIL",
                        "MAINTENANCE",
                        "REBOOT_REQUESTED",
                        "RESERVED",
                    ]);
                let used = n.gres_used.unwrap_or_default();
                let used_gpus = gpu_indices(&used)
                    .ok_or_else(|| gres_error(src, format!("nodes[{k}].gres_used"), &used))?;
                Ok(NodeView {
                    name: n.name,
                    open,
                    alive,
                    used_gpus,
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gres_strings_give_gpu_indices() {
        assert_eq!(
            gpu_indices("gpu:sw0:1(IDX:0),gpu:sw2:1(IDX:4)"),
            Some(vec![0, 4])
        );
        assert_eq!(gpu_indices("gpu:3(IDX:0-1,6)"), Some(vec![0, 1, 6]));
        assert_eq!(
            gpu_indices("gpu:sw0:0(IDX:N/A),gpu:sw1:2(IDX:2-3),gpu:sw2:0(IDX:)"),
            Some(vec![2, 3])
        );
        assert_eq!(gpu_indices(""), Some(vec![]));
        assert_eq!(gpu_indices("gpu:2(IDX:x)"), None);
    }
}
