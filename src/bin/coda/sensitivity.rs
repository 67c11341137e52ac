//! `coda sensitivity`: which named estimate drives which result. Every policy is replayed with
//! each estimate at its low, shipped and high value (the others shipped), and with every
//! contention estimate off; the trace is re-converted under each setting, so a job replayed alone
//! still takes its trace duration and only the contention between jobs changes.

use std::fmt::Write as _;

use coda::io::write_atomic;
use coda::perf::Estimates;
use coda::{CalibratedPerf, Error};
use indicatif::{ProgressBar, ProgressDrawTarget};
use rayon::prelude::*;

use coda::sim::Allowance;

use crate::simulate::{PolicyRuns, SimArgs, check_policies, pool, run_one};

/// One setting of the estimates (and of the restart cost, the simulator's own estimate).
struct Setting {
    name: String,
    estimates: Estimates,
    restart_s: f64,
    /// A fixed contention allowance instead of the command's own.
    allowance: Option<f64>,
    /// Factor on every fitted gradient noise ratio (goodput on only; 1 elsewhere).
    noise_scale: f64,
}

/// The settings studied: shipped, each estimate low and high, and all contention off; with
/// goodput on, also the fitted noise ratios halved and doubled. The ranges are those documented
/// on each [`Estimates`] field.
fn settings(shipped: &Estimates, restart_s: f64, goodput: bool) -> Vec<Setting> {
    let plain = |name: &str, estimates: Estimates| Setting {
        name: name.into(),
        estimates,
        restart_s,
        allowance: None,
        noise_scale: 1.0,
    };
    let mut out = vec![plain("shipped", *shipped)];
    let mut vary = |name: &str, f: &dyn Fn(&mut Estimates)| {
        let mut e = *shipped;
        f(&mut e);
        out.push(plain(name, e));
    };
    vary("colocation_coupling=0", &|e| e.colocation_coupling = 0.0);
    vary("colocation_coupling=0.5", &|e| e.colocation_coupling = 0.5);
    vary("pcie_share_comm_penalty=0", &|e| {
        e.pcie_share_comm_penalty = 0.0
    });
    vary("pcie_share_comm_penalty=0.5", &|e| {
        e.pcie_share_comm_penalty = 0.5
    });
    vary("cross_socket_comm_factor=1", &|e| {
        e.cross_socket_comm_factor = 1.0
    });
    vary("cross_socket_comm_factor=2", &|e| {
        e.cross_socket_comm_factor = 2.0
    });
    vary("nic_bandwidth_fraction=0.5", &|e| {
        e.nic_bandwidth_fraction = 0.5
    });
    vary("nic_phase_alignment=1", &|e| e.nic_phase_alignment = 1.0);
    vary("cpu_mem_transfer=0", &|e| e.cpu_mem_transfer = 0.0);
    vary("cpu_mem_transfer=0.5", &|e| e.cpu_mem_transfer = 0.5);
    vary("all contention off", &|e| {
        e.colocation_coupling = 0.0;
        e.pcie_share_comm_penalty = 0.0;
        e.cross_socket_comm_factor = 1.0;
        e.nic_bandwidth_fraction = 0.0;
    });
    out.push(Setting {
        restart_s: 0.0,
        ..plain("restart_s=0", *shipped)
    });
    out.push(Setting {
        restart_s: 3.0 * restart_s,
        ..plain(&format!("restart_s={}", 3.0 * restart_s), *shipped)
    });
    out.push(Setting {
        allowance: Some(1.0),
        ..plain("contention_allowance=1 (all contention charged)", *shipped)
    });
    if goodput {
        // The noise ratio is fitted, not estimated; how much the result leans on the fit.
        for (name, f) in [("noise_ratio×0.5", 0.5), ("noise_ratio×2", 2.0)] {
            out.push(Setting {
                noise_scale: f,
                ..plain(name, *shipped)
            });
        }
    }
    out
}

/// `coda sensitivity`: writes `sensitivity.csv` (every metric of every run) and
/// `sensitivity.md` (average JCT per setting and policy, and each policy's rank), and returns
/// the Markdown.
pub fn run(args: &SimArgs, runs: &PolicyRuns, base: &CalibratedPerf) -> coda::Result<String> {
    let (policies, threads) = (&runs.policies, runs.threads);
    check_policies(args, policies)?;
    std::fs::create_dir_all(&args.out).map_err(|e| Error::Io {
        path: args.out.clone(),
        source: e,
    })?;
    let shipped = base.params().estimates;
    let settings = settings(&shipped, args.replay.sim.restart_s, base.goodput());
    let models: Vec<CalibratedPerf> = settings
        .iter()
        .map(|s| {
            let mut p = base.params().clone();
            p.estimates = s.estimates;
            for g in p.goodput.values_mut() {
                for v in &mut g.log_ratio {
                    *v += s.noise_scale.ln();
                }
            }
            CalibratedPerf::new(p).map(|m| m.with_goodput(base.goodput()))
        })
        .collect::<coda::Result<_>>()?;
    let argsets: Vec<coda::replay::Replay> = settings
        .iter()
        .map(|s| {
            let mut r = args.replay.clone();
            r.sim.restart_s = s.restart_s;
            if let Some(a) = s.allowance {
                r.sim.contention_allowance = Allowance::Given(a);
            }
            r
        })
        .collect();
    let workloads: Vec<_> = models
        .iter()
        .zip(&argsets)
        .map(|(m, a)| a.workload(m))
        .collect::<coda::Result<_>>()?;
    let allowances: Vec<f64> = models
        .iter()
        .zip(&argsets)
        .zip(&workloads)
        .map(|((m, a), w)| a.allowance(w, m))
        .collect::<coda::Result<_>>()?;
    let jobs: Vec<(usize, coda::policies::PolicyKind)> = (0..settings.len())
        .flat_map(|s| policies.iter().map(move |&p| (s, p)))
        .collect();
    let bar = if args.quiet {
        ProgressBar::hidden()
    } else {
        ProgressBar::with_draw_target(Some(jobs.len() as u64), ProgressDrawTarget::stderr())
    };
    let pool = pool(threads)?;
    let hidden = ProgressBar::hidden();
    let runs: Vec<coda::Result<coda::replay::RunSummary>> = pool.install(|| {
        jobs.par_iter()
            .map(|&(s, p)| {
                let r = run_one(
                    p,
                    &workloads[s],
                    &argsets[s],
                    (allowances[s], &models[s]),
                    &hidden,
                )
                .map(|r| r.summary);
                bar.inc(1);
                r
            })
            .collect()
    });
    bar.finish_and_clear();
    let runs: Vec<coda::replay::RunSummary> = runs.into_iter().collect::<coda::Result<_>>()?;
    // Every metric of every run, in `coda compare`'s CSV layout with the setting in front.
    let mut csv = String::new();
    for (k, setting) in settings.iter().enumerate() {
        let block = coda::replay::Comparison {
            runs: runs[k * policies.len()..(k + 1) * policies.len()].to_vec(),
            bound: None,
        }
        .csv();
        let mut lines = block.lines();
        let header = lines.next().unwrap_or_default();
        if k == 0 {
            let _ = writeln!(csv, "setting,{header}");
        }
        for line in lines {
            let _ = writeln!(csv, "{},{line}", setting.name);
        }
    }
    let mut md = format!(
        "Average JCT (h) over the tracked jobs, `{}` on `{}`; (rank among the policies); \
         contention allowance F_ref of each setting\n\n| setting | F_ref |",
        workloads[0].trace, workloads[0].cluster_spec
    );
    for p in policies {
        let _ = write!(md, " {p} |");
    }
    md += "\n|---|---|";
    md += &"---|".repeat(policies.len());
    md += "\n";
    for (s, setting) in settings.iter().enumerate() {
        let row: Vec<f64> = runs[s * policies.len()..(s + 1) * policies.len()]
            .iter()
            .map(|r| r.metrics.avg_jct_s / 3600.0)
            .collect();
        let _ = write!(md, "| {} | {:.2} |", setting.name, allowances[s]);
        for v in &row {
            let rank = 1 + row.iter().filter(|o| *o < v).count();
            let _ = write!(md, " {v:.2} ({rank}) |");
        }
        md += "\n";
    }
    write_atomic(&args.out.join("sensitivity.csv"), csv.as_bytes())?;
    write_atomic(&args.out.join("sensitivity.md"), md.as_bytes())?;
    Ok(md)
}
