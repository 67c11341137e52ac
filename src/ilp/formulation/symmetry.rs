//! Group 13 of `formulations/README.md`: symmetry breaking. Servers nobody runs on now and
//! identical in everything the model reads are interchangeable, and so are the PCIe switches of
//! one socket of such a server: any solution can be relabelled so that, between two consecutive
//! interchangeable places, the first hosts a job of index no larger than every job the second
//! hosts (and an empty place comes after every used one). `v[j][s'] <= Σ_{i <= j} v[i][s]` says
//! exactly that, and keeps one labelling of each solution instead of up to `n!`.

use good_lp::Variable;

use super::{Ctx, Group, JobVars, Model, lin};
use crate::model::ServerIdx;
use crate::model::{ClusterSnapshot, Schedule, SwitchId, Topology};

/// Group 13: Orders consecutive interchangeable servers, and consecutive equal switches of one socket
/// of an idle server.
pub(super) fn symmetry(model: &mut Model, ctx: &Ctx<'_>, jobs: &[JobVars]) {
    for (p, s) in server_pairs(ctx.snapshot) {
        let places: Vec<_> = jobs.iter().map(|jv| (jv.v[p], jv.v[s])).collect();
        order_places(model, &places);
    }
    for b in switch_pairs(ctx.snapshot, ctx.topology) {
        let (first, second) = (SwitchId(b - 1), SwitchId(b));
        let places: Vec<_> = jobs
            .iter()
            .map(|jv| {
                (
                    jv.g.get(&first).map(|g| g.1),
                    jv.g.get(&second).map(|g| g.1),
                )
            })
            .collect();
        order_places(model, &places);
    }
}

/// Servers nobody runs on now.
fn idle(snapshot: &ClusterSnapshot) -> Vec<bool> {
    (0..snapshot.cluster.servers.len())
        .map(|s| {
            !snapshot.jobs.iter().any(|j| {
                j.run
                    .current
                    .as_ref()
                    .is_some_and(|c| c.servers().contains(&s))
            })
        })
        .collect()
}

/// The ordered pairs `(p, s)` of consecutive interchangeable servers: `s` idle and identical to
/// `p`, the idle server before it.
fn server_pairs(snapshot: &ClusterSnapshot) -> Vec<(usize, usize)> {
    let servers = &snapshot.cluster.servers;
    let idle = idle(snapshot);
    let same = |a: usize, b: usize| {
        let (x, y) = (&servers[a], &servers[b]);
        x.gpu_type == y.gpu_type
            && x.topology == y.topology
            && x.nvlink == y.nvlink
            && x.cpu_cores == y.cpu_cores
            && x.memory_gib == y.memory_gib
    };
    let mut out = Vec::new();
    let mut prev: Option<usize> = None;
    for s in 0..servers.len() {
        if !idle[s] {
            continue;
        }
        if let Some(p) = prev.filter(|&p| same(p, s)) {
            out.push((p, s));
        }
        prev = Some(s);
    }
    out
}

/// The switches `b` (with `b - 1`) ordered: equal switches of one socket of an idle server.
fn switch_pairs(snapshot: &ClusterSnapshot, topology: &Topology) -> Vec<usize> {
    let idle = idle(snapshot);
    let switches = topology.switches();
    (1..switches.len())
        .filter(|&b| {
            let (x, y) = (&switches[b - 1], &switches[b]);
            x.server == y.server
                && x.socket == y.socket
                && x.gpus.len() == y.gpus.len()
                && idle[x.server]
        })
        .collect()
}

/// Runs of consecutive ordered places, from the pairs `(previous, next)` in order.
fn runs(pairs: impl IntoIterator<Item = (usize, usize)>) -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> = Vec::new();
    for (p, s) in pairs {
        match out.last_mut() {
            Some(run) if run.last() == Some(&p) => run.push(s),
            _ => out.push(vec![p, s]),
        }
    }
    out
}

/// `schedule` relabelled so that it satisfies group 13: within every run of interchangeable
/// servers (then of equal switches of one socket) the places are reordered by the lowest
/// snapshot index of a job with workers there, empty places last. Interchangeable places are
/// identical in everything the program reads, so the relabelled schedule is valid and scores
/// the same; without this a heuristic's or a policy's schedule violates the ordering rows and
/// HiGHS discards it as a MIP start.
pub fn relabel(snapshot: &ClusterSnapshot, topology: &Topology, schedule: &Schedule) -> Schedule {
    let index = |id| snapshot.job_index(id).unwrap_or(usize::MAX);
    let mut out = schedule.clone();
    // Servers.
    let lowest_on = |sch: &Schedule, s: usize| {
        sch.assignments
            .iter()
            .filter(|a| a.workers.iter().any(|w| w.server == ServerIdx(s)))
            .map(|a| index(a.job))
            .min()
            .unwrap_or(usize::MAX)
    };
    let mut map: Vec<usize> = (0..snapshot.cluster.servers.len()).collect();
    for run in runs(server_pairs(snapshot)) {
        let mut sorted = run.clone();
        sorted.sort_by_key(|&s| (lowest_on(schedule, s), s));
        for (to, &from) in run.iter().zip(&sorted) {
            map[from] = *to;
        }
    }
    for a in &mut out.assignments {
        for w in &mut a.workers {
            // A server outside the cluster (an invalid schedule, which validation reports)
            // keeps its index.
            w.server = ServerIdx(map.get(w.server.0).copied().unwrap_or(w.server.0));
        }
        for p in &mut a.ps {
            p.server = ServerIdx(map.get(p.server.0).copied().unwrap_or(p.server.0));
        }
    }
    // Switches of one socket, on the relabelled schedule.
    let switches = topology.switches();
    let lowest_under = |sch: &Schedule, b: usize| {
        let sw = &switches[b];
        sch.assignments
            .iter()
            .filter(|a| {
                a.workers.iter().any(|w| {
                    w.server == ServerIdx(sw.server) && w.gpus.iter().any(|g| sw.gpus.contains(g))
                })
            })
            .map(|a| index(a.job))
            .min()
            .unwrap_or(usize::MAX)
    };
    let pairs = switch_pairs(snapshot, topology)
        .into_iter()
        .map(|b| (b - 1, b));
    let mut gpu_map: std::collections::HashMap<(usize, u32), u32> = Default::default();
    for run in runs(pairs) {
        let mut sorted = run.clone();
        sorted.sort_by_key(|&b| (lowest_under(&out, b), b));
        for (&to, &from) in run.iter().zip(&sorted) {
            let server = switches[to].server;
            for (&g_from, &g_to) in switches[from].gpus.iter().zip(&switches[to].gpus) {
                gpu_map.insert((server, g_from), g_to);
            }
        }
    }
    for a in &mut out.assignments {
        for w in &mut a.workers {
            for g in &mut w.gpus {
                if let Some(&to) = gpu_map.get(&(w.server.0, *g)) {
                    *g = to;
                }
            }
            w.gpus.sort_unstable();
        }
    }
    out
}

/// `second[j] <= Σ_{i <= j} first[i]` for every job `j` that can use the second place.
fn order_places(model: &mut Model, places: &[(Option<Variable>, Option<Variable>)]) {
    let mut prefix: Vec<(f64, Variable)> = Vec::new();
    for &(first, second) in places {
        if let Some(f) = first {
            prefix.push((-1.0, f));
        }
        if let Some(sv) = second {
            let mut e = prefix.clone();
            e.push((1.0, sv));
            model.push(Group::Symmetry, lin(&e).leq(0.0));
        }
    }
}
