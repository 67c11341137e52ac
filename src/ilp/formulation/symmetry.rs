//! Group 13 of `formulations/README.md`: symmetry breaking. Servers nobody runs on now and
//! identical in everything the model reads are interchangeable, and so are the PCIe switches of
//! one socket of such a server: any solution can be relabelled so that, between two consecutive
//! interchangeable places, the first hosts a job of index no larger than every job the second
//! hosts (and an empty place comes after every used one). `v[j][s'] <= Σ_{i <= j} v[i][s]` says
//! exactly that, and keeps one labelling of each solution instead of up to `n!`.

use good_lp::Variable;

use super::{Ctx, Group, JobVars, Model, lin};
use crate::model::SwitchId;

/// Group 13: Orders consecutive interchangeable servers, and consecutive equal switches of one socket
/// of an idle server.
pub(super) fn symmetry(model: &mut Model, ctx: &Ctx<'_>, jobs: &[JobVars]) {
    let servers = &ctx.snapshot.cluster.servers;
    let busy: Vec<bool> = (0..servers.len())
        .map(|s| {
            ctx.snapshot
                .jobs
                .iter()
                .any(|j| j.current.as_ref().is_some_and(|c| c.servers().contains(&s)))
        })
        .collect();
    let same = |a: usize, b: usize| {
        let (x, y) = (&servers[a], &servers[b]);
        x.gpu_type == y.gpu_type
            && x.topology == y.topology
            && x.cpu_cores == y.cpu_cores
            && x.memory_gib == y.memory_gib
    };
    let mut prev: Option<usize> = None;
    for s in 0..servers.len() {
        if busy[s] {
            continue;
        }
        if let Some(p) = prev.filter(|&p| same(p, s)) {
            let places: Vec<_> = jobs.iter().map(|jv| (jv.v[p], jv.v[s])).collect();
            order_places(model, &places);
        }
        prev = Some(s);
    }
    let switches = ctx.topology.switches();
    for b in 1..switches.len() {
        let (x, y) = (&switches[b - 1], &switches[b]);
        if x.server == y.server
            && x.socket == y.socket
            && x.gpus.len() == y.gpus.len()
            && !busy[x.server]
        {
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
