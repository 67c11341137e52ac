//! What a replay runs, as plain data: [`Replay`] — the workload ([`WorkloadSpec`]), the
//! simulator's settings ([`SimSpec`]) and the policies' ([`PolicySpec`]). The command line
//! derives its flags from these structs (each field is the flag of the same name, dashes for
//! underscores, with the same default and documentation) and the Python package reads them
//! from JSON with the same names: one definition for both.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Expected, Result};
use crate::ilp::SolveSettings;
use crate::objective::Objective;
use crate::perf::PerfModel;
use crate::policies::{
    IlpOptions, LearnedOptions, LookaheadArrivals, LookaheadFollow, LookaheadOptions,
    LookaheadTail, PolicyKind, PolicyOptions, TiresiasOptions,
};
use crate::sim::{Allowance, SimConfig, Simulator, Unplaceable};
use crate::workload::trace::{CpuMemMode, TraceOptions};
use crate::workload::{self, Workload};

/// Shortest and longest scheduling round, seconds: below a second the event times (seconds,
/// f64) stop resolving rounds over a months-long trace; a round over a week schedules nothing.
pub const ROUND_S: (f64, f64) = (1.0, 7.0 * 86_400.0);

/// A clap value parser of numbers `expected` admits.
#[cfg(feature = "cli")]
fn number(expected: Expected) -> impl Fn(&str) -> std::result::Result<f64, String> + Clone {
    move |s: &str| expected.parse(s)
}

/// A clap value parser of whole numbers >= 1.
#[cfg(feature = "cli")]
fn at_least_one<T: std::str::FromStr + PartialEq + From<u8>>(
    s: &str,
) -> std::result::Result<T, String> {
    match s.trim().parse::<T>() {
        Ok(v) if v != T::from(0) => Ok(v),
        Ok(_) => Err(Expected::AtLeastOne.to_string()),
        Err(_) => Err(format!("`{s}` is not a whole number in range")),
    }
}

/// One trace replay: which jobs on which cluster, how the simulator runs them, how the policies
/// are set. In JSON the three parts' fields sit side by side (`{"trace": "philly", "take": 100,
/// "round_s": 300, "policy_samples": 1}`); on the command line they are `coda simulate`'s
/// flags.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct Replay {
    /// The workload.
    #[serde(flatten)]
    #[cfg_attr(feature = "cli", command(flatten))]
    pub workload: WorkloadSpec,
    /// The simulator's settings.
    #[serde(flatten)]
    #[cfg_attr(feature = "cli", command(flatten))]
    pub sim: SimSpec,
    /// The policies' settings.
    #[serde(flatten)]
    #[cfg_attr(feature = "cli", command(flatten))]
    pub policy: PolicySpec,
}

/// Which jobs, on which cluster.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct WorkloadSpec {
    /// `philly`, `itp-cluster02`, `itp-cluster06`, `itp`, `alibaba`, or the path of a CSV in
    /// one of the shipped formats.
    #[cfg_attr(feature = "cli", arg(long))]
    pub trace: String,
    /// `NxG`, `NxG:TYPE`, `alibaba-nodes` or a cluster JSON file (default: the trace's own, see
    /// the README).
    #[cfg_attr(feature = "cli", arg(long))]
    pub cluster: Option<String>,
    /// Seed of the trace's model assignment and of every random choice of the policy.
    #[cfg_attr(feature = "cli", arg(long, default_value_t = 0))]
    pub seed: u64,
    /// `fungible`: jobs offer their model's CPU/memory tiers, which `ilp`, `learned*` and
    /// `synergy-tune` hand out; `fixed`: every task gets its demand under every policy.
    #[cfg_attr(feature = "cli", arg(long, default_value_t = CpuMemMode::Fungible))]
    pub cpu_mem: CpuMemMode,
    /// Give every server this many cores per GPU instead of its own (Synergy's testbed: 3).
    #[cfg_attr(feature = "cli", arg(long, value_parser = number(Expected::Positive)))]
    pub cpu_per_gpu: Option<f64>,
    /// Only the first N jobs of the trace (after `--skip`).
    #[cfg_attr(feature = "cli", arg(long, value_parser = at_least_one::<usize>))]
    pub take: Option<usize>,
    /// Leave out the first N jobs of the trace (e.g. those a policy was trained on).
    #[cfg_attr(feature = "cli", arg(long, default_value_t = 0))]
    pub skip: usize,
    /// Folder of the shipped data.
    #[cfg_attr(feature = "cli", arg(long, default_value = "datasets"))]
    pub datasets: PathBuf,
    /// Leave out (and report) jobs the cluster can never run — their smallest or requested
    /// allocation exceeds it — instead of refusing the workload.
    #[cfg_attr(feature = "cli", arg(long))]
    pub skip_unplaceable: bool,
}

impl Default for WorkloadSpec {
    fn default() -> Self {
        WorkloadSpec {
            trace: String::new(),
            cluster: None,
            seed: 0,
            cpu_mem: CpuMemMode::Fungible,
            cpu_per_gpu: None,
            take: None,
            skip: 0,
            datasets: PathBuf::from("datasets"),
            skip_unplaceable: false,
        }
    }
}

/// How the simulator runs and what it measures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct SimSpec {
    /// Seconds between scheduling rounds.
    #[cfg_attr(feature = "cli", arg(long, default_value_t = SimSpec::default().round_s,
        value_parser = number(Expected::Within(ROUND_S.0, ROUND_S.1))))]
    pub round_s: f64,
    /// Seconds a running job loses when its allocation or placement changes (an estimate; at
    /// most one round).
    #[cfg_attr(feature = "cli", arg(long, default_value_t = SimSpec::default().restart_s,
        value_parser = number(Expected::NonNegative)))]
    pub restart_s: f64,
    /// In-service credit κ of the objective the policies that price rounds read (`learned`'s
    /// back-fill, `lookahead`...; what a round at its full pace is worth to any job; 0: the pure
    /// fraction-of-remaining-work objective). The `ilp` policy's is `--ilp-in-service-credit`.
    #[cfg_attr(feature = "cli", arg(long, default_value_t = SimSpec::default().in_service_credit,
        value_parser = number(Expected::NonNegative)))]
    pub in_service_credit: f64,
    /// Stop at this simulated time (jobs left are reported unfinished).
    #[cfg_attr(feature = "cli", arg(long, value_parser = number(Expected::Positive)))]
    pub horizon_s: Option<f64>,
    /// Contention the trace durations already contain, as a factor >= 1 on step time (see the
    /// README): `auto` measures it with a FIFO replay of the same workload; 1 charges all
    /// contention on top of the trace durations.
    #[cfg_attr(feature = "cli", arg(long, default_value_t = Allowance::Measured))]
    pub contention_allowance: Allowance,
    /// Tracked window, as fractions of the jobs in arrival order: metrics leave out warm-up and
    /// tail (Blox does the same).
    #[cfg_attr(feature = "cli", arg(long, default_value_t = SimSpec::default().track_from,
        value_parser = number(Expected::Fraction)))]
    pub track_from: f64,
    /// End of the tracked window.
    #[cfg_attr(feature = "cli", arg(long, default_value_t = SimSpec::default().track_to,
        value_parser = number(Expected::Fraction)))]
    pub track_to: f64,
    /// Decide every round, even those in which no job waits and the policy would keep every
    /// assignment (by default skipped: same results, less time).
    #[cfg_attr(feature = "cli", arg(long))]
    pub every_round: bool,
}

impl Default for SimSpec {
    fn default() -> Self {
        SimSpec {
            round_s: 300.0,
            restart_s: 60.0,
            in_service_credit: crate::objective::DEFAULT_IN_SERVICE_CREDIT,
            horizon_s: None,
            contention_allowance: Allowance::Measured,
            track_from: 0.1,
            track_to: 0.9,
            every_round: false,
        }
    }
}

/// The policies' settings (each policy reads its own).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct PolicySpec {
    /// `ilp` policy: seconds per round.
    #[cfg_attr(feature = "cli", arg(long, default_value_t = PolicySpec::default().ilp_time_limit,
        value_parser = number(Expected::TimeLimit)))]
    pub ilp_time_limit: f64,
    /// `ilp` policy: branch-and-bound node limit per round (makes runs repeatable; >= 1: a
    /// limit of 0 stops every round before any schedule).
    #[cfg_attr(feature = "cli", arg(long, value_parser = at_least_one::<u64>))]
    pub ilp_node_limit: Option<u64>,
    /// `ilp` policy: the configuration program's work limit per round, pricing-search nodes
    /// (with a node limit and a time limit that does not bind, runs are repeatable).
    #[cfg_attr(feature = "cli", arg(long, value_parser = at_least_one::<u64>))]
    pub ilp_work_limit: Option<u64>,
    /// `ilp` policy: the work limit scaled with the round, pricing-search nodes per job the
    /// program decides (the smaller of the two if `--ilp-work-limit` is also set; repeatable
    /// like it).
    #[cfg_attr(feature = "cli", arg(long, value_parser = at_least_one::<u64>))]
    pub ilp_work_per_job: Option<u64>,
    /// `ilp` policy: solver threads per round (HiGHS's, and the configuration program prices
    /// its server classes on that many unless a work limit is set, which prices them in order).
    #[cfg_attr(feature = "cli", arg(long,
        default_value_t = PolicySpec::default().solver_threads,
        value_parser = at_least_one::<u32>))]
    pub solver_threads: u32,
    /// `ilp` policy: jobs each round's program decides (the waiting ones the objective values
    /// most, half kept for them and more until they ask for every free GPU, up to four times
    /// this; and the running ones it values least; other running jobs are held where they are,
    /// other waiting jobs wait unless back-fill starts them).
    #[cfg_attr(feature = "cli", arg(long, default_value_t = PolicySpec::default().ilp_max_jobs,
        value_parser = at_least_one::<usize>))]
    pub ilp_max_jobs: usize,
    /// `ilp` policy: re-solve a round in which nothing changed since the last decision (same
    /// jobs, each where it was put) only every this many rounds; 1: every round.
    #[cfg_attr(feature = "cli", arg(long,
        default_value_t = PolicySpec::default().ilp_revisit_rounds,
        value_parser = at_least_one::<u32>))]
    pub ilp_revisit_rounds: u32,
    /// `ilp` policy: the in-service credit κ its program, start and back-fill maximise (what a
    /// round at a job's full pace is worth, in rounds of JCT; `--in-service-credit` sets the
    /// other policies').
    #[cfg_attr(feature = "cli", arg(long,
        default_value_t = PolicySpec::default().ilp_in_service_credit,
        value_parser = number(Expected::NonNegative)))]
    pub ilp_in_service_credit: f64,
    /// `ilp` policy: what a co-runner on a job's server costs in the objective its program,
    /// start and back-fill maximise (`pair`: its pair slowdown, as every other policy prices
    /// it; `full-server`: the average over a full server of the PerfModel's saturating
    /// slowdown; `progress`: that average, scaled to the progress a full server takes).
    #[cfg_attr(feature = "cli", arg(long, value_enum,
        default_value_t = PolicySpec::default().ilp_colocation))]
    pub ilp_colocation: crate::objective::Colocation,
    /// `tiresias` policy: its `PromoteKnob` (a job pending for this many times its executed time
    /// returns to the highest queue; 0 disables promotion).
    #[cfg_attr(feature = "cli", arg(long,
        default_value_t = PolicySpec::default().tiresias_promote_knob,
        value_parser = number(Expected::NonNegative)))]
    pub tiresias_promote_knob: f64,
    /// `ilp` policy: also start every round's solve from the learned policy's schedule (a MIP
    /// start; the best heuristic's is always offered).
    #[cfg_attr(feature = "cli", arg(long))]
    pub ilp_policy_start: bool,
    /// `learned` policy: its weights file (default: the shipped `models/policy.safetensors`).
    #[cfg_attr(feature = "cli", arg(long))]
    pub policy_weights: Option<PathBuf>,
    /// `learned` policy: decodings per round (1: greedy), the best under the objective kept.
    #[cfg_attr(feature = "cli", arg(long,
        default_value_t = PolicySpec::default().policy_samples,
        value_parser = at_least_one::<usize>))]
    pub policy_samples: usize,
    /// `learned` policies: moves of the local search on the objective ending each round (0:
    /// none; 8 is what was measured inside Sia's simulator).
    #[cfg_attr(feature = "cli", arg(long, default_value_t = PolicySpec::default().policy_grow))]
    pub policy_grow: usize,
    /// `distilled` policy: its gate (default: the shipped `models/distilled.json`; `coda
    /// distil fit` writes one).
    #[cfg_attr(feature = "cli", arg(long))]
    pub distilled_gate: Option<PathBuf>,
    /// `lookahead` policy: rounds each candidate is played forward, its own included.
    #[cfg_attr(feature = "cli", arg(long,
        default_value_t = PolicySpec::default().lookahead_rounds,
        value_parser = at_least_one::<u32>))]
    pub lookahead_rounds: u32,
    /// `lookahead` policy: candidates proposing each round (the first this many of `learned`,
    /// `keep`, `learned-greedy`, `pollux`, `srtf`, `drf`, `learned-packer`, `tiresias`,
    /// `optimus`, `sjf-bco`).
    #[cfg_attr(feature = "cli", arg(long,
        default_value_t = PolicySpec::default().lookahead_candidates,
        value_parser = at_least_one::<usize>))]
    pub lookahead_candidates: usize,
    /// `lookahead` policy: the policy deciding the rounds after each candidate's in its play
    /// (a learned one decodes greedily there).
    #[cfg_attr(feature = "cli", arg(long, value_enum,
        default_value_t = PolicySpec::default().lookahead_base))]
    pub lookahead_base: PolicyKind,
    /// `lookahead` policy: what its plays assume of arrivals (`none`, or `sampled` from the rate
    /// and the jobs seen so far; never the trace's future).
    #[cfg_attr(feature = "cli", arg(long, value_enum,
        default_value_t = PolicySpec::default().lookahead_arrivals))]
    pub lookahead_arrivals: LookaheadArrivals,
    /// `lookahead` policy: who decides a play's rounds after the candidate's (`base`: the base
    /// policy; `candidate`: the candidate's own policy, throughout the horizon).
    #[cfg_attr(feature = "cli", arg(long, value_enum,
        default_value_t = PolicySpec::default().lookahead_follow))]
    pub lookahead_follow: LookaheadFollow,
    /// `lookahead` policy: what a play counts for the jobs left at its horizon (`bound`: a lower
    /// bound on their remaining time in the system; `none`: nothing).
    #[cfg_attr(feature = "cli", arg(long, value_enum,
        default_value_t = PolicySpec::default().lookahead_tail))]
    pub lookahead_tail: LookaheadTail,
}

impl Default for PolicySpec {
    fn default() -> Self {
        PolicySpec {
            ilp_time_limit: 10.0,
            ilp_node_limit: None,
            ilp_work_limit: None,
            ilp_work_per_job: None,
            solver_threads: 1,
            ilp_max_jobs: 12,
            ilp_revisit_rounds: crate::policies::DEFAULT_ILP_REVISIT_ROUNDS,
            ilp_in_service_credit: crate::policies::DEFAULT_ILP_IN_SERVICE_CREDIT,
            ilp_colocation: crate::policies::DEFAULT_ILP_COLOCATION,
            tiresias_promote_knob: 4.0,
            ilp_policy_start: false,
            policy_weights: None,
            policy_samples: crate::policies::learned::DEFAULT_SAMPLES,
            policy_grow: 0,
            distilled_gate: None,
            lookahead_rounds: LookaheadOptions::default().rounds,
            lookahead_candidates: LookaheadOptions::default().candidates,
            lookahead_base: LookaheadOptions::default().base,
            lookahead_arrivals: LookaheadOptions::default().arrivals,
            lookahead_follow: LookaheadOptions::default().follow,
            lookahead_tail: LookaheadOptions::default().tail,
        }
    }
}

impl Replay {
    /// The replay of `trace` with every other setting at its default.
    pub fn of(trace: &str) -> Self {
        Replay {
            workload: WorkloadSpec {
                trace: trace.to_string(),
                ..WorkloadSpec::default()
            },
            ..Replay::default()
        }
    }

    /// A replay read from a JSON object of the three parts' fields side by side; a field of
    /// none of them is an error naming it and every valid one ([`Expected::OneOf`]).
    pub fn from_json(text: &str, origin: &str) -> Result<Self> {
        let value: serde_json::Value = crate::util::json::parse_json(text, origin)?;
        if let Some(map) = value.as_object() {
            let known = Replay::fields();
            if let Some(k) = map.keys().find(|k| !known.contains(k)) {
                return Err(Error::invalid(origin, 0, k, "", Expected::OneOf(known)));
            }
        }
        // Each part read on its own (it passes over the others' keys), so that an error names
        // its field, which a flattened read cannot.
        Ok(Replay {
            workload: crate::util::json::parse_json(text, origin)?,
            sim: crate::util::json::parse_json(text, origin)?,
            policy: crate::util::json::parse_json(text, origin)?,
        })
    }

    /// The names of every field, as JSON and the command line (with dashes) spell them.
    pub fn fields() -> Vec<String> {
        match serde_json::to_value(Replay::default()) {
            Ok(serde_json::Value::Object(map)) => map.keys().cloned().collect(),
            _ => Vec::new(),
        }
    }

    /// Checks every field's range (the command line's parsers check the same ones one by one)
    /// and the fields that relate two of them; `origin` names where the spec came from.
    pub fn check(&self, origin: &str) -> Result<()> {
        self.check_named(origin, &str::to_string)
    }

    /// [`Replay::check`], each field named by `name` (the command line names its flags).
    pub fn check_named(&self, origin: &str, name: &dyn Fn(&str) -> String) -> Result<()> {
        let (w, s, p) = (&self.workload, &self.sim, &self.policy);
        let bad = |field: &str, v: f64, expected: Expected| {
            Err(Error::setting(origin, &name(field), v, expected))
        };
        if w.trace.is_empty() {
            return Err(Error::setting(
                origin,
                &name("trace"),
                "",
                "a trace is needed",
            ));
        }
        for (f, v) in [("track_from", s.track_from), ("track_to", s.track_to)] {
            if !Expected::Fraction.admits(v) {
                return bad(f, v, Expected::Fraction);
            }
        }
        if s.track_from >= s.track_to {
            return bad(
                "track_to",
                s.track_to,
                Expected::Above(name("track_from"), s.track_from),
            );
        }
        if !Expected::TimeLimit.admits(p.ilp_time_limit) {
            return bad("ilp_time_limit", p.ilp_time_limit, Expected::TimeLimit);
        }
        for (f, v) in [("horizon_s", s.horizon_s), ("cpu_per_gpu", w.cpu_per_gpu)] {
            if let Some(v) = v.filter(|v| !Expected::Positive.admits(*v)) {
                return bad(f, v, Expected::Positive);
            }
        }
        if let Allowance::Given(a) = s.contention_allowance
            && !Expected::AtLeast(1.0).admits(a)
        {
            return bad("contention_allowance", a, Expected::AtLeast(1.0));
        }
        if !Expected::NonNegative.admits(p.ilp_in_service_credit) {
            return bad(
                "ilp_in_service_credit",
                p.ilp_in_service_credit,
                Expected::NonNegative,
            );
        }
        if !Expected::NonNegative.admits(p.tiresias_promote_knob) {
            return bad(
                "tiresias_promote_knob",
                p.tiresias_promote_knob,
                Expected::NonNegative,
            );
        }
        for (f, v) in [
            ("take", w.take.unwrap_or(1)),
            ("ilp_max_jobs", p.ilp_max_jobs),
            ("policy_samples", p.policy_samples),
            ("ilp_revisit_rounds", p.ilp_revisit_rounds as usize),
            ("ilp_node_limit", p.ilp_node_limit.unwrap_or(1) as usize),
            ("ilp_work_limit", p.ilp_work_limit.unwrap_or(1) as usize),
            ("ilp_work_per_job", p.ilp_work_per_job.unwrap_or(1) as usize),
            ("solver_threads", p.solver_threads as usize),
        ] {
            if v == 0 {
                return bad(f, 0.0, Expected::AtLeastOne);
            }
        }
        if s.restart_s > s.round_s {
            return bad(
                "restart_s",
                s.restart_s,
                Expected::AtMost(name("round_s"), s.round_s),
            );
        }
        self.objective(origin).map(|_| ())
    }

    /// The round length and restart cost; the simulator charges and the `ilp` policy prices the
    /// same ones.
    pub fn objective(&self, origin: &str) -> Result<Objective> {
        let s = &self.sim;
        if s.restart_s > s.round_s {
            return Err(Error::setting(
                origin,
                "restart_s",
                s.restart_s,
                Expected::AtMost("round_s".into(), s.round_s),
            ));
        }
        Objective::new(s.round_s, s.restart_s)?.with_in_service_credit(s.in_service_credit)
    }

    /// The simulator's settings at `contention_allowance`.
    pub fn config(&self, contention_allowance: f64) -> Result<SimConfig> {
        Ok(SimConfig {
            objective: self.objective("replay")?,
            horizon_s: self.sim.horizon_s.unwrap_or(f64::INFINITY),
            contention_allowance,
            skip_idle_rounds: !self.sim.every_round,
            unplaceable: if self.workload.skip_unplaceable {
                Unplaceable::Skip
            } else {
                Unplaceable::Reject
            },
        })
    }

    /// The contention allowance for `workload`: given, or measured by a FIFO replay
    /// ([`crate::sim::contention_allowance`]).
    pub fn allowance(&self, workload: &Workload, perf: &dyn PerfModel) -> Result<f64> {
        match self.sim.contention_allowance {
            Allowance::Given(v) => Ok(v),
            Allowance::Measured => crate::sim::contention_allowance(
                perf,
                self.config(1.0)?,
                workload.cluster.clone(),
                workload.jobs.clone(),
            ),
        }
    }

    /// Every policy's settings.
    pub fn policy_options(&self) -> Result<PolicyOptions> {
        let p = &self.policy;
        let seed = self.workload.seed;
        Ok(PolicyOptions {
            seed,
            objective: self.objective("replay")?,
            tiresias: TiresiasOptions {
                promote_knob: p.tiresias_promote_knob,
                ..TiresiasOptions::default()
            },
            ilp: IlpOptions {
                solve: SolveSettings {
                    time_limit_s: p.ilp_time_limit,
                    node_limit: p.ilp_node_limit,
                    work_limit: p.ilp_work_limit,
                    work_per_job: p.ilp_work_per_job,
                    threads: p.solver_threads,
                    seed: (seed % u64::from(u32::MAX)) as u32,
                    ..SolveSettings::default()
                },
                max_jobs: p.ilp_max_jobs,
                revisit_rounds: p.ilp_revisit_rounds,
                in_service_credit: p.ilp_in_service_credit,
                colocation: p.ilp_colocation,
                learned_start: p.ilp_policy_start,
            },
            learned: LearnedOptions {
                weights: p.policy_weights.clone(),
                samples: p.policy_samples,
                gate: p.distilled_gate.clone(),
                grow: p.policy_grow,
            },
            lookahead: LookaheadOptions {
                rounds: p.lookahead_rounds,
                candidates: p.lookahead_candidates,
                base: p.lookahead_base,
                arrivals: p.lookahead_arrivals,
                follow: p.lookahead_follow,
                tail: p.lookahead_tail,
            },
        })
    }

    /// The trace's jobs (after `skip`, up to `take`) on the cluster.
    pub fn workload(&self, perf: &dyn PerfModel) -> Result<Workload> {
        let w = &self.workload;
        let opts = TraceOptions {
            seed: w.seed,
            cpu_mem: w.cpu_mem,
            server_cpu_per_gpu: w.cpu_per_gpu,
            ..TraceOptions::default()
        };
        let mut wl = workload::load(
            workload::TraceRef {
                name: &w.trace,
                datasets: &w.datasets,
                cluster: w.cluster.as_deref(),
                take: w.take.map(|t| t + w.skip),
            },
            &opts,
            perf,
        )?;
        if w.skip >= wl.jobs.len() {
            return Err(Error::setting(
                "simulate",
                "skip",
                w.skip,
                format!("fewer than the trace's {} jobs", wl.jobs.len()),
            ));
        }
        wl.jobs.drain(..w.skip);
        Ok(wl)
    }

    /// The simulator of `workload` at `allowance`, before its first round.
    pub fn simulator<'p>(
        &self,
        workload: &Workload,
        allowance: f64,
        perf: &'p dyn PerfModel,
    ) -> Result<Simulator<'p>> {
        Simulator::builder(perf, workload.cluster.clone(), workload.jobs.clone())
            .config(self.config(allowance)?)
            .build()
    }
}
