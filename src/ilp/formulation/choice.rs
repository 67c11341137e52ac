//! Groups 1–2 of `formulations/README.md`: a job takes one option at most, and its workers and
//! PS add up to that option's.

use super::{Ctx, Group, JobVars, Model, lin};
use crate::model::Architecture;

/// Group 1: `Σ_k y_jk ≤ 1`.
pub(super) fn one_option(model: &mut Model, jv: &JobVars) {
    model.push(Group::OneOption, lin(&jv.run()).leq(1.0));
}

/// Group 2: `Σ_s m_js = Σ_k w_k y_jk`; `Σ_s q_js = Σ_k p_k y_jk` (PS jobs).
pub(super) fn tasks_add_up(model: &mut Model, ctx: &Ctx<'_>, jv: &JobVars) {
    let mut wsum: Vec<(f64, _)> = jv.m.iter().flatten().map(|&x| (1.0, x)).collect();
    wsum.extend(
        jv.y.iter()
            .zip(&jv.options)
            .map(|(&x, o)| (-f64::from(o.workers), x)),
    );
    model.push(Group::TasksAddUp, lin(&wsum).eq(0.0));
    if ctx.job(jv).arch == Architecture::ParameterServer {
        let mut psum: Vec<(f64, _)> = jv.q.iter().flatten().map(|&x| (1.0, x)).collect();
        psum.extend(
            jv.y.iter()
                .zip(&jv.options)
                .map(|(&x, o)| (-f64::from(o.ps), x)),
        );
        model.push(Group::TasksAddUp, lin(&psum).eq(0.0));
    }
}
