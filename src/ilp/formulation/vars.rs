//! The variables of one job (see "Variables" in `formulations/README.md`).

use std::collections::BTreeMap;

use good_lp::Variable;

use super::{JobVars, Model};
use crate::error::Result;
use crate::model::Architecture;
use crate::model::JobPos;
use crate::objective::{Mode, RoundPricing};

/// Creates job `j`'s columns: option choice `y`, workers and presence per server (`m`, `v`),
/// workers per CPU/memory tier and server (`mt`, when its options differ in tier), GPUs and use
/// per PCIe switch (`g`, `u`), PS and any task per server (`q`, `a`), sockets (`t`, `ζ`) when a
/// cross-socket option exists, its three losses and its `keep`.
pub(super) fn job_vars(model: &mut Model, pricing: &RoundPricing<'_>, j: usize) -> Result<JobVars> {
    let snapshot = pricing.snapshot();
    let topology = pricing.topology();
    let servers = &snapshot.cluster.servers;
    let job = &snapshot.jobs[j];
    let opts = pricing.options(JobPos(j)).to_vec();
    let id = job.id;
    let is_ps = job.arch == Architecture::ParameterServer;
    let gpw = job.demand.gpus_per_worker;
    let y: Vec<Variable> = (0..opts.len())
        .map(|k| model.bin(format!("y_j{id}_o{k}")))
        .collect();
    let types = pricing.usable_types(JobPos(j));
    let usable =
        |s: usize| types.contains(&servers[s].gpu_type.as_str()) && servers[s].num_gpus() >= gpw;
    let nsrv = servers.len();
    let mut m = vec![None; nsrv];
    let mut v = vec![None; nsrv];
    let mut q = vec![None; nsrv];
    let mut a = vec![None; nsrv];
    let mut m_tier = Vec::new();
    let mut g = BTreeMap::new();
    let mut t = BTreeMap::new();
    let mut zeta = BTreeMap::new();
    if !opts.is_empty() {
        for s in 0..nsrv {
            if usable(s) {
                let cap = (servers[s].num_gpus() / gpw).min(job.workers.max);
                m[s] = Some(model.add_var(format!("m_j{id}_s{s}"), 0.0, f64::from(cap), true));
                v[s] = Some(model.bin(format!("v_j{id}_s{s}")));
            }
            if is_ps {
                let p_max = f64::from(job.ps.max);
                q[s] = Some(model.add_var(format!("q_j{id}_s{s}"), 0.0, p_max, true));
                a[s] = Some(model.bin(format!("a_j{id}_s{s}")));
            }
        }
        for (b, sw) in topology.switches().iter().enumerate() {
            if m[sw.server].is_some() {
                let cap = sw.gpus.len() as f64;
                let gv = model.add_var(format!("g_j{id}_b{b}"), 0.0, cap, true);
                let uv = model.bin(format!("u_j{id}_b{b}"));
                g.insert(crate::model::SwitchId(b), (gv, uv));
            }
        }
        // Workers per tier and server, when the job's options differ in tier.
        let tiers = opts.iter().map(|o| usize::from(o.tier)).max().unwrap_or(0);
        if tiers > 0 {
            for tier in 0..=tiers {
                let row = (0..nsrv)
                    .map(|s| {
                        m[s].map(|ms| {
                            let ub = model.info_ub(ms);
                            model.add_var(format!("mt_j{id}_t{tier}_s{s}"), 0.0, ub, true)
                        })
                    })
                    .collect();
                m_tier.push(row);
            }
        }
        if opts.iter().any(|o| o.mode == Mode::CrossSocket) {
            for s in 0..nsrv {
                let socks = topology.sockets_on(s);
                if m[s].is_some() && socks.len() > 1 {
                    for &so in &socks {
                        t.insert((s, so), model.bin(format!("t_j{id}_s{s}_k{so}")));
                    }
                    zeta.insert(s, model.bin(format!("z_j{id}_s{s}")));
                }
            }
        }
    }
    let loss = [
        model.add_var(format!("lcol_j{id}"), 0.0, f64::INFINITY, false),
        model.add_var(format!("lpcie_j{id}"), 0.0, f64::INFINITY, false),
        model.add_var(format!("lnic_j{id}"), 0.0, f64::INFINITY, false),
    ];
    let restart = pricing.restart_cost(JobPos(j))?;
    let keep = (job.run.current.is_some() && restart > 0.0 && !opts.is_empty())
        .then(|| model.bin(format!("keep_j{id}")));
    Ok(JobVars {
        job: j,
        options: opts,
        y,
        m,
        v,
        m_tier,
        g,
        q,
        a,
        t,
        zeta,
        bits: BTreeMap::new(),
        local_pairs: None,
        local_pairs_by_option: Vec::new(),
        keep,
        restart,
        loss,
        pressure: [Vec::new(), Vec::new(), Vec::new()],
        wcol: BTreeMap::new(),
    })
}
