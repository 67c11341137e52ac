//! Groups 6–7 of `formulations/README.md`: the option's placement mode matches where the tasks
//! are — `Multi` exactly when they span servers, `CrossSocket` exactly when a one-server job's
//! GPUs span sockets.

use good_lp::Variable;

use super::{Ctx, Group, JobVars, Model, lin};
use crate::objective::Mode;

/// Group 6: With `D_j = Σ_{k Multi} y_jk` and `n_j = Σ_s (any task on s)`: `n_j ≥ 2 D_j`,
/// `n_j ≤ run_j + (|S|−1) D_j`.
pub(super) fn multi(model: &mut Model, jv: &JobVars) {
    let multi = jv.ys_where(|o| o.mode == Mode::Multi);
    let span: Vec<(f64, Variable)> = (0..jv.v.len())
        .filter_map(|s| jv.any_task(s).map(|x| (1.0, x)))
        .collect();
    let nspan = span.len() as f64;
    let mut e = span.clone();
    e.extend(multi.iter().map(|&x| (-2.0, x)));
    model.push(Group::MultiMode, lin(&e).geq(0.0));
    let mut e = span;
    e.extend(jv.y.iter().map(|&x| (-1.0, x)));
    e.extend(multi.iter().map(|&x| (-(nspan - 1.0).max(0.0), x)));
    model.push(Group::MultiMode, lin(&e).leq(0.0));
}

/// Group 7: `t_jsσ ≥ u_jb` for `b` under `σ`, `t_jsσ ≤ Σ_{b under σ} u_jb`;
/// `X_j ≥ t_jsσ + t_jsσ' − 1 − D_j`; `2 ζ_js ≤ Σ_σ t_jsσ`, `X_j ≤ Σ_s ζ_js`.
pub(super) fn cross_socket(model: &mut Model, ctx: &Ctx<'_>, jv: &JobVars) {
    if jv.t.is_empty() {
        return;
    }
    let multi: Vec<(f64, Variable)> = jv
        .ys_where(|o| o.mode == Mode::Multi)
        .into_iter()
        .map(|x| (1.0, x))
        .collect();
    let cross: Vec<(f64, Variable)> = jv
        .ys_where(|o| o.mode == Mode::CrossSocket)
        .into_iter()
        .map(|x| (1.0, x))
        .collect();
    for (&(s, so), &tv) in &jv.t {
        let under: Vec<Variable> = ctx
            .topology
            .switches_on(s)
            .iter()
            .filter(|&&b| ctx.topology.switch(b).socket == so)
            .map(|b| jv.g[b].1)
            .collect();
        for &u in &under {
            model.push(
                Group::CrossSocketMode,
                lin(&[(1.0, u), (-1.0, tv)]).leq(0.0),
            );
        }
        let mut e: Vec<(f64, Variable)> = vec![(1.0, tv)];
        e.extend(under.iter().map(|&u| (-1.0, u)));
        model.push(Group::CrossSocketMode, lin(&e).leq(0.0));
    }
    for (&s, &z) in &jv.zeta {
        let socks: Vec<Variable> =
            jv.t.iter()
                .filter(|((ss, _), _)| *ss == s)
                .map(|(_, &tv)| tv)
                .collect();
        for i in 0..socks.len() {
            for k in (i + 1)..socks.len() {
                // cross >= t_i + t_k - 1 - multi
                let mut e = cross.clone();
                e.extend(multi.iter().copied());
                e.push((-1.0, socks[i]));
                e.push((-1.0, socks[k]));
                model.push(Group::CrossSocketMode, lin(&e).geq(-1.0));
            }
        }
        let mut e: Vec<(f64, Variable)> = vec![(2.0, z)];
        e.extend(socks.iter().map(|&tv| (-1.0, tv)));
        model.push(Group::CrossSocketMode, lin(&e).leq(0.0));
    }
    let mut e = cross;
    e.extend(jv.zeta.values().map(|&z| (-1.0, z)));
    model.push(Group::CrossSocketMode, lin(&e).leq(0.0));
}
