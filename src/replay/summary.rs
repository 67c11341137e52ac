//! What a run leaves behind: a summary, a comparison table, per-job and utilisation CSVs. Pure
//! functions of the records; the command line decides where they go and draws the plots.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::scheduler::RoundSolve;
use crate::sim::{JctBound, JobRecord, Metrics};

/// One simulation, summarised.
/// Read back (Deserialize) by the Python package, which merges runs made apart.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    /// Policy name.
    pub policy: String,
    /// Trace name or path.
    pub trace: String,
    /// Cluster spec.
    pub cluster: String,
    /// GPUs in the cluster.
    pub gpus: u64,
    /// Seed of the trace's model assignment and of the policy.
    pub seed: u64,
    /// The metrics (flattened into the JSON object).
    #[serde(flatten)]
    pub metrics: Metrics,
    /// Mean, over rounds in which a job waited, of GPUs idle on servers whose free cores or
    /// memory could not take one more worker of any waiting job
    /// ([`crate::sim::Simulator::stranded_gpus`]).
    pub stranded_gpus: f64,
    /// Cores and memory held and stranded ([`crate::sim::CpuMemUse`]).
    #[serde(flatten)]
    pub cpu_mem: crate::sim::CpuMemUse,
    /// The contention allowance the run was priced with ([`crate::sim::SimConfig`]).
    pub contention_allowance: f64,
    /// Events processed.
    pub events: u64,
    /// Wall-clock seconds of the simulation (loading excluded).
    pub wall_s: f64,
    /// Events per wall-clock second.
    pub events_per_s: f64,
    /// Set when the run stopped because no waiting job could ever be placed ([`crate::sim::Stall`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stall: Option<crate::sim::Stall>,
    /// Jobs left out because the cluster can never run them, with why
    /// ([`crate::sim::Unplaceable::Skip`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unplaceable: Vec<(crate::model::JobId, String)>,
    /// What the policy reported about its rounds ([`crate::scheduler::RoundEvents::notes`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub policy_notes: Vec<String>,
}

/// Several runs of the same workload.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// One summary per policy, in the order asked.
    pub runs: Vec<RunSummary>,
    /// Lower bounds on the tracked jobs' average JCT under any policy, when computed
    /// ([`crate::replay::Replay::bound`]): how much each policy leaves above them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bound: Option<JctBound>,
}

impl Comparison {
    /// A Markdown table: policy, JCTs and waits (hours), makespan (hours), utilisation over the
    /// run and over the busy period, GPU-hours held and useful, stranded GPUs, restarts, wall time.
    pub fn markdown(&self) -> String {
        let mut s = String::from(
            "| policy | avg JCT (h) | median JCT (h) | p99 JCT (h) | avg queueing (h) | avg wait (h) | makespan (h) | GPU util. | busy util. | GPU-h held | GPU-h useful | stranded GPUs | cores held | cores stranded | restarts | unfinished | wall (s) |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
        );
        for r in &self.runs {
            let m = &r.metrics;
            let _ = writeln!(
                s,
                "| {} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.1} | {:.1} % | {:.1} % | {:.0} | {:.0} | {:.1} | {:.1} % | {:.1} % | {} | {} | {:.2} |",
                r.policy,
                m.avg_jct_s / 3600.0,
                m.median_jct_s / 3600.0,
                m.p99_jct_s / 3600.0,
                m.avg_queueing_s / 3600.0,
                m.avg_waiting_s / 3600.0,
                m.makespan_s / 3600.0,
                100.0 * m.gpu_utilization,
                100.0 * m.busy_utilization,
                m.gpu_hours_held,
                m.gpu_hours_useful,
                r.stranded_gpus,
                100.0 * r.cpu_mem.cores_held,
                100.0 * r.cpu_mem.cores_stranded,
                m.restarts,
                m.jobs_unfinished_total,
                r.wall_s
            );
        }
        if let Some(b) = &self.bound {
            let above: Vec<String> = self
                .runs
                .iter()
                .map(|r| {
                    format!(
                        "{} {:+.1} %",
                        r.policy,
                        100.0 * (r.metrics.avg_jct_s / b.avg_jct_s - 1.0)
                    )
                })
                .collect();
            let _ = writeln!(
                s,
                "\nLower bound on the average JCT, any policy (`coda bound`): **{:.2} h** (every job \
                 alone at its fastest: {:.2} h; with the cluster's capacity: {:.2} h). Above it: {}.",
                b.avg_jct_s / 3600.0,
                b.bounds.alone / 3600.0,
                b.bounds.capacity / 3600.0,
                above.join(", ")
            );
        }
        for r in &self.runs {
            for note in &r.policy_notes {
                let _ = writeln!(s, "\n`{}`: {note}", r.policy);
            }
        }
        if let Some(r) = self.runs.iter().find(|r| !r.unplaceable.is_empty()) {
            let shown: Vec<String> = r
                .unplaceable
                .iter()
                .take(5)
                .map(|(j, _)| j.to_string())
                .collect();
            let _ = writeln!(
                s,
                "\n{} job(s) left out as never runnable on this cluster (jobs {}{}); first: job {}: {}",
                r.unplaceable.len(),
                shown.join(", "),
                if r.unplaceable.len() > 5 { ", ..." } else { "" },
                r.unplaceable[0].0,
                r.unplaceable[0].1
            );
        }
        for r in &self.runs {
            if let Some(st) = &r.stall {
                let shown: Vec<String> = st.waiting.iter().take(5).map(|j| j.to_string()).collect();
                let _ = writeln!(
                    s,
                    "\n`{}` stalled at t = {:.0} s: {} job(s) waiting (jobs {}{}), the cluster empty, \
                     nothing left to arrive, and the policy placed none of them; the run stopped \
                     there.",
                    r.policy,
                    st.time_s,
                    st.waiting.len(),
                    shown.join(", "),
                    if st.waiting.len() > 5 { ", ..." } else { "" }
                );
            }
        }
        s
    }

    /// The same table as CSV (seconds, fractions).
    pub fn csv(&self) -> String {
        let mut s = String::from(
            "policy,trace,cluster,gpus,seed,jobs_tracked,jobs_finished,jobs_unfinished,avg_jct_s,median_jct_s,p95_jct_s,p99_jct_s,avg_queueing_s,avg_waiting_s,makespan_s,gpu_utilization,busy_utilization,gpu_hours_held,gpu_hours_useful,stranded_gpus,contention_allowance,restarts,jobs_total,jobs_unfinished_total,events,wall_s,events_per_s,cores_held,cores_stranded,mem_held,mem_stranded\n",
        );
        for r in &self.runs {
            let m = &r.metrics;
            let c = &r.cpu_mem;
            let _ = writeln!(
                s,
                "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{:.4},{:.0},{:.4},{:.4},{:.4},{:.4}",
                r.policy,
                r.trace,
                r.cluster,
                r.gpus,
                r.seed,
                m.jobs_tracked,
                m.jobs_finished,
                m.jobs_unfinished,
                m.avg_jct_s,
                m.median_jct_s,
                m.p95_jct_s,
                m.p99_jct_s,
                m.avg_queueing_s,
                m.avg_waiting_s,
                m.makespan_s,
                m.gpu_utilization,
                m.busy_utilization,
                m.gpu_hours_held,
                m.gpu_hours_useful,
                r.stranded_gpus,
                r.contention_allowance,
                m.restarts,
                m.jobs_total,
                m.jobs_unfinished_total,
                r.events,
                r.wall_s,
                r.events_per_s,
                c.cores_held,
                c.cores_stranded,
                c.mem_held,
                c.mem_stranded
            );
        }
        s
    }
}

/// One row per job: `id,arrival_s,first_start_s,finish_s,jct_s,queueing_s,restarts,gpu_seconds,
/// max_gpus,max_servers` (empty where a job never started or never finished).
pub(crate) fn jobs_csv(records: &[JobRecord]) -> String {
    let opt = |x: Option<f64>| x.map_or(String::new(), |v| v.to_string());
    let mut s = String::from(
        "id,arrival_s,first_start_s,finish_s,jct_s,queueing_s,restarts,gpu_seconds,max_gpus,max_servers\n",
    );
    for r in records {
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{},{},{}",
            r.id,
            r.arrival_s,
            opt(r.first_start_s),
            opt(r.finish_s),
            opt(r.finish_s.map(|f| f - r.arrival_s)),
            opt(r.first_start_s.map(|f| f - r.arrival_s)),
            r.restarts,
            r.gpu_seconds,
            r.max_gpus,
            r.max_servers
        );
    }
    s
}

/// `time_s,gpus_held,utilization` at every change of the GPUs held.
pub(crate) fn utilization_csv(timeline: &[(f64, u64)], gpus: u64) -> String {
    let mut s = String::from("time_s,gpus_held,utilization\n");
    for &(t, g) in timeline {
        let _ = writeln!(s, "{t},{g},{}", g as f64 / gpus.max(1) as f64);
    }
    s
}

/// One row per round a policy solved: status, objectives, bound, gap, times, nodes, and the
/// program (with its columns and search nodes where it was the configuration program).
pub(crate) fn solves_csv(solves: &[RoundSolve]) -> String {
    let mut out = String::from(
        "time_s,jobs,held,status,objective,start_objective,returned_start,best_bound,gap,build_s,solve_s,nodes,program,columns,search_nodes\n",
    );
    let opt = |v: Option<u64>| v.map_or(String::new(), |n| n.to_string());
    for r in solves {
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            r.time_s,
            r.jobs,
            r.held,
            r.status,
            r.objective,
            r.start_objective,
            r.returned_start,
            r.best_bound,
            r.gap,
            r.build_s,
            r.solve_s,
            opt(r.nodes),
            if r.columns.is_some() {
                "config"
            } else {
                "compact"
            },
            opt(r.columns.map(|c| c as u64)),
            opt(r.search_nodes),
        );
    }
    out
}
