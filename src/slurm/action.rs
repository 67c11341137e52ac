//! What `coda slurm` does to a job ([`Action`]) and the Slurm commands that do it.

/// What `coda slurm` does to one job.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Pin a job to `nodes` with `gpus_per_node` GPUs on each and release it, stopping it
    /// first if it runs or is starting elsewhere (it resumes from its checkpoint).
    Place {
        /// Slurm job id.
        job: u64,
        /// Nodes.
        nodes: Vec<String>,
        /// GPUs in all.
        gpus: u32,
        /// How it is stopped first, if it runs or is starting.
        stop: Option<Stop>,
        /// Wall seconds before it may start ([`SAME_NODE_RESTART_DELAY_S`] when requeued onto
        /// a node it ran on, else 0).
        delay_s: u32,
        /// Its tag with its first submission recorded (written before a requeue).
        comment: String,
        /// Nodes and GPUs it was submitted with, if Slurm refuses the placement.
        fallback: (u32, u32),
    },
    /// Stop a running (or starting) job and hold it until coda places it again.
    Preempt {
        /// Slurm job id.
        job: u64,
        /// Its tag with its first submission recorded.
        comment: String,
        /// Whether it runs (requeued) rather than waits to start (held).
        running: bool,
    },
    /// Hand a held job back to Slurm as submitted, with why.
    Release {
        /// Slurm job id.
        job: u64,
        /// Why coda does not decide it.
        why: String,
    },
    /// Hold again a job coda released that did not start.
    Rehold {
        /// Slurm job id.
        job: u64,
    },
    /// Start now a job coda released that waits out Slurm's requeue delay.
    Kick {
        /// Slurm job id.
        job: u64,
    },
}

/// Wall seconds a requeued job waits before it starts again on a node it just ran on: slurmd
/// remembers the job as killed for a moment and refuses to launch it ("Job N already killed,
/// do not launch batch job"), which fails the job. Measured on Slurm 22.05 with 4 slurmd on one
/// host: relaunched 0 s after the requeue completed, 3 of 3 failed; 0.3 s, 2 of 3; 0.6 s, 0 of
/// 3 (one left pending); 1 to 3 s, 0 of 9. (Slurm's own requeue delay is two minutes.)
pub const SAME_NODE_RESTART_DELAY_S: u32 = 1;

/// How a job is stopped before coda places it elsewhere.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// It runs: `requeuehold` (it resumes from its checkpoint).
    Requeue,
    /// It was released and has not started: `hold`.
    Hold,
}

fn cmd(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

impl Action {
    /// The Slurm job it acts on.
    pub fn job(&self) -> u64 {
        match self {
            Action::Place { job, .. }
            | Action::Preempt { job, .. }
            | Action::Release { job, .. }
            | Action::Rehold { job }
            | Action::Kick { job } => *job,
        }
    }

    /// The commands that carry it out, in order (each an argv).
    pub fn commands(&self) -> Vec<Vec<String>> {
        let id = self.job().to_string();
        let job = format!("JobId={id}");
        match self {
            Action::Place {
                nodes,
                gpus,
                stop,
                comment,
                delay_s,
                ..
            } => {
                let mut c = Vec::new();
                match stop {
                    Some(Stop::Requeue) => {
                        c.push(cmd(&[
                            "scontrol",
                            "update",
                            &job,
                            &format!("Comment={comment}"),
                        ]));
                        c.push(cmd(&["scontrol", "requeuehold", &id]));
                    }
                    Some(Stop::Hold) => c.push(cmd(&["scontrol", "hold", &id])),
                    None => {}
                }
                // One field at a time, list cleared first: Slurm checks a new node list
                // against the old node count (and a count against the old list).
                c.push(cmd(&["scontrol", "update", &job, "ReqNodeList="]));
                c.push(cmd(&[
                    "scontrol",
                    "update",
                    &job,
                    // Min and max: with only a minimum, Slurm may add nodes beyond the list.
                    &format!("NumNodes={0}-{0}", nodes.len()),
                    &format!("TresPerJob=gres:gpu:{gpus}"),
                ]));
                c.push(cmd(&[
                    "scontrol",
                    "update",
                    &job,
                    &format!("ReqNodeList={}", nodes.join(",")),
                ]));
                c.push(cmd(&["scontrol", "release", &id]));
                // A requeued job waits out Slurm's requeue delay (two minutes) unless told.
                let start = if *delay_s > 0 {
                    format!("StartTime=now+{delay_s}")
                } else {
                    "StartTime=now".into()
                };
                c.push(cmd(&["scontrol", "update", &job, &start]));
                c
            }
            Action::Preempt {
                comment,
                running: true,
                ..
            } => vec![
                cmd(&["scontrol", "update", &job, &format!("Comment={comment}")]),
                cmd(&["scontrol", "requeuehold", &id]),
            ],
            Action::Preempt { running: false, .. } => vec![cmd(&["scontrol", "hold", &id])],
            Action::Release { .. } => vec![cmd(&["scontrol", "release", &id])],
            Action::Rehold { .. } => vec![cmd(&["scontrol", "hold", &id])],
            Action::Kick { .. } => vec![cmd(&["scontrol", "update", &job, "StartTime=now"])],
        }
    }

    /// What to do when Slurm refused one of [`Action::commands`]: release the job unpinned, as
    /// submitted, so that it is never left held.
    pub fn fallback(&self) -> Vec<Vec<String>> {
        match self {
            Action::Place {
                job,
                fallback: (n, k),
                ..
            } => {
                let id = job.to_string();
                let j = format!("JobId={id}");
                vec![
                    cmd(&["scontrol", "update", &j, "ReqNodeList="]),
                    cmd(&[
                        "scontrol",
                        "update",
                        &j,
                        &format!("NumNodes={n}-{n}"),
                        &format!("TresPerJob=gres:gpu:{k}"),
                    ]),
                    cmd(&["scontrol", "release", &id]),
                    cmd(&["scontrol", "update", &j, "StartTime=now"]),
                ]
            }
            Action::Kick { .. } => Vec::new(),
            Action::Preempt { job, .. } | Action::Release { job, .. } | Action::Rehold { job } => {
                vec![cmd(&["scontrol", "release", &job.to_string()])]
            }
        }
    }
}

impl std::fmt::Display for Action {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Action::Place {
                job,
                nodes,
                gpus,
                stop,
                ..
            } => write!(
                f,
                "job {job}: {} on {} with {gpus} GPUs",
                if stop.is_some() { "move" } else { "start" },
                nodes.join(",")
            ),
            Action::Preempt { job, .. } => write!(f, "job {job}: stop and hold"),
            Action::Release { job, why } => {
                write!(f, "job {job}: released to Slurm as submitted ({why})")
            }
            Action::Rehold { job } => write!(f, "job {job}: held again (released but not started)"),
            Action::Kick { job } => write!(f, "job {job}: start now (requeue delay lifted)"),
        }
    }
}
