//! What coda reads of a Slurm cluster: each node's state and GPUs in use (`sinfo --json`), each
//! job's state, tag and GPUs per node (`squeue --json`, whose `gres_detail` holds the GPU
//! indices `scontrol show job -d` prints).

use serde_json::Value;

use super::hostlist::{expand_hostlist, expand_indices};
use crate::error::{Error, Expected, Result};

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
    /// GPU indices it holds on each of `nodes`.
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

fn field_error(source: &str, field: &str, value: &Value, expected: &str) -> Error {
    Error::InvalidField {
        file: source.to_string(),
        line: 0,
        field: field.to_string(),
        value: value.to_string().chars().take(80).collect(),
        expected: Expected::Other(expected.to_string()),
    }
}

fn parse_json(text: &str, source: &str) -> Result<Value> {
    serde_json::from_str(text).map_err(|e| Error::Json {
        file: source.to_string(),
        line: e.line(),
        column: e.column(),
        field: ".".into(),
        message: e.to_string(),
    })
}

fn str_of<'a>(v: &'a Value, key: &str, source: &str, at: &str) -> Result<&'a str> {
    v.get(key).and_then(Value::as_str).ok_or_else(|| {
        field_error(
            source,
            &format!("{at}.{key}"),
            v.get(key).unwrap_or(&Value::Null),
            "a string",
        )
    })
}

fn num_of(v: &Value, key: &str, source: &str, at: &str) -> Result<f64> {
    v.get(key).and_then(Value::as_f64).ok_or_else(|| {
        field_error(
            source,
            &format!("{at}.{key}"),
            v.get(key).unwrap_or(&Value::Null),
            "a number",
        )
    })
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
        let doc = parse_json(squeue, src)?;
        let jobs = doc
            .get("jobs")
            .and_then(Value::as_array)
            .ok_or_else(|| field_error(src, "jobs", &doc, "an array"))?;
        jobs.iter()
            .enumerate()
            .map(|(k, j)| {
                let at = format!("jobs[{k}]");
                let id = num_of(j, "job_id", src, &at)? as u64;
                let state = match str_of(j, "job_state", src, &at)? {
                    "PENDING" => JobState::Pending,
                    "RUNNING" => JobState::Running,
                    "COMPLETING" => JobState::Completing,
                    other => JobState::Ended(other.to_string()),
                };
                let reason = j
                    .get("state_reason")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                let held = state == JobState::Pending
                    && (j.get("priority").and_then(Value::as_f64) == Some(0.0)
                        || reason.starts_with("JobHeld"));
                let nodes = expand_hostlist(j.get("nodes").and_then(Value::as_str).unwrap_or(""))?;
                let detail: Vec<&str> = j
                    .get("gres_detail")
                    .and_then(Value::as_array)
                    .map(|a| a.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                let gpus = if matches!(state, JobState::Running | JobState::Completing) {
                    (0..nodes.len())
                        .map(|n| {
                            detail
                                .get(n)
                                .map_or(Some(Vec::new()), |g| gpu_indices(g))
                                .ok_or_else(|| {
                                    field_error(
                                        src,
                                        &format!("{at}.gres_detail[{n}]"),
                                        &j["gres_detail"],
                                        "GRES with IDX lists",
                                    )
                                })
                        })
                        .collect::<Result<Vec<_>>>()?
                } else {
                    vec![Vec::new(); nodes.len()]
                };
                let req_nodes = expand_hostlist(
                    j.get("required_nodes")
                        .and_then(Value::as_str)
                        .unwrap_or(""),
                )?;
                let req_gpus = j
                    .get("tres_per_job")
                    .and_then(Value::as_str)
                    .and_then(|t| t.strip_prefix("gres:gpu:"))
                    .and_then(|k| k.parse().ok());
                Ok(JobView {
                    id,
                    req_nodes,
                    req_gpus,
                    name: j
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                    held,
                    reason,
                    comment: j
                        .get("comment")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                    submit_s: num_of(j, "submit_time", src, &at)?,
                    eligible_s: j
                        .get("eligible_time")
                        .and_then(Value::as_f64)
                        .unwrap_or(0.0),
                    end_s: j.get("end_time").and_then(Value::as_f64).unwrap_or(0.0),
                    restarts: j.get("restart_cnt").and_then(Value::as_u64).unwrap_or(0) as u32,
                    nodes,
                    gpus,
                    state,
                })
            })
            .collect()
    }

    /// The nodes of `sinfo --json` output.
    pub fn parse_nodes(sinfo: &str) -> Result<Vec<NodeView>> {
        let src = "sinfo --json";
        let doc = parse_json(sinfo, src)?;
        let nodes = doc
            .get("nodes")
            .and_then(Value::as_array)
            .ok_or_else(|| field_error(src, "nodes", &doc, "an array"))?;
        nodes
            .iter()
            .enumerate()
            .map(|(k, n)| {
                let at = format!("nodes[{k}]");
                let name = str_of(n, "name", src, &at)?.to_string();
                let state = str_of(n, "state", src, &at)?.to_ascii_lowercase();
                let flags: Vec<String> = n
                    .get("state_flags")
                    .and_then(Value::as_array)
                    .map(|a| {
                        a.iter()
                            .filter_map(Value::as_str)
                            .map(str::to_ascii_uppercase)
                            .collect()
                    })
                    .unwrap_or_default();
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
                let used = n.get("gres_used").and_then(Value::as_str).unwrap_or("");
                let used_gpus = gpu_indices(used).ok_or_else(|| {
                    field_error(
                        src,
                        &format!("{at}.gres_used"),
                        &n["gres_used"],
                        "GRES with IDX lists",
                    )
                })?;
                Ok(NodeView {
                    name,
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
