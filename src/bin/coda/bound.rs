//! `coda bound`: lower bounds on a replay's average JCT that no policy beats (the library's
//! [`Replay::bound`]), with the workload and simulator flags of `coda simulate`.

use clap::Args as ClapArgs;
use coda::PerfModel;
use coda::replay::{PolicySpec, Replay, SimSpec, WorkloadSpec};
use coda::sim::LpLimits;

/// The replay's workload and simulator settings (`coda simulate`'s flags, without a policy's).
#[derive(ClapArgs, Debug, Clone)]
pub struct Args {
    /// The workload.
    #[command(flatten)]
    pub workload: WorkloadSpec,
    /// The simulator's settings.
    #[command(flatten)]
    pub sim: SimSpec,
    /// Most columns of the time-indexed relaxation (its period grows until the program fits;
    /// 0: no relaxation).
    #[arg(long, default_value_t = LpLimits::default().max_columns)]
    pub lp_columns: usize,
    /// Seconds HiGHS may spend on the relaxation (unsolved by then: no third bound).
    #[arg(long, default_value_t = LpLimits::default().time_limit_s)]
    pub lp_time_limit: f64,
    /// One JSON object on stdout: `{"avg_jct_s": …, "bounds": {"alone": …, "capacity": …}, …}`
    /// (what `coda compare` writes to `bound.json`, with the trace and cluster).
    #[arg(long)]
    pub json: bool,
}

/// Runs the command: the text (or JSON) it prints.
pub fn run(args: Args, perf: &dyn PerfModel) -> coda::Result<String> {
    let replay = Replay {
        workload: args.workload,
        sim: args.sim,
        policy: PolicySpec::default(),
    };
    replay.check_named("command line", &|f| format!("--{}", f.replace('_', "-")))?;
    let workload = replay.workload(perf)?;
    let lp = (args.lp_columns > 0).then_some(LpLimits {
        max_columns: args.lp_columns,
        time_limit_s: args.lp_time_limit,
    });
    let b = replay.bound(&workload, perf, lp)?;
    if args.json {
        let mut v = serde_json::to_value(&b).expect("a bound serialises");
        v["trace"] = workload.trace.clone().into();
        v["cluster"] = workload.cluster_spec.clone().into();
        v["gpus"] = workload.cluster.num_gpus().into();
        return Ok(v.to_string());
    }
    Ok(format!(
        "lower bounds on the average JCT of {} tracked jobs, trace `{}` on `{}` ({} GPUs), any policy:\n\
         | bound | avg JCT (s) | avg JCT (h) |\n|---|---|---|\n\
         | alone (fastest allocation and placement, round grid) | {:.1} | {:.3} |\n\
         | capacity (aggregated cluster, order statistics) | {:.1} | {:.3} |\n\
         | time-indexed relaxation ({}) | {} | {} |\n\
         | **bound** | **{:.1}** | **{:.3}** |\n\
         (the round grid's share: {:.1} s per job)",
        b.jobs_tracked,
        workload.trace,
        workload.cluster_spec,
        workload.cluster.num_gpus(),
        b.bounds.alone,
        b.bounds.alone / 3600.0,
        b.bounds.capacity,
        b.bounds.capacity / 3600.0,
        b.bounds
            .lp_period_s
            .map_or("not solved".to_string(), |p| format!("periods of {p:.0} s")),
        b.bounds.lp.map_or("–".to_string(), |v| format!("{v:.1}")),
        b.bounds
            .lp
            .map_or("–".to_string(), |v| format!("{:.3}", v / 3600.0)),
        b.avg_jct_s,
        b.avg_jct_s / 3600.0,
        b.round_grid_s,
    ))
}
