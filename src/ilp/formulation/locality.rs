//! Group 9 of `formulations/README.md`: PS locality `L_j = Σ_s m_js·q_js`, exactly, by binary
//! expansion of `q_js`, split over the options so that each carries its own slope.

use std::collections::BTreeMap;

use good_lp::Variable;

use super::{Ctx, Group, JobVars, Model, lin};
use crate::model::Architecture;

/// Group 9: `q_js = Σ_ℓ 2^ℓ β_jsℓ`; `π ≤ M β`, `π ≤ m_js`, `π ≥ m_js − M(1−β)`;
/// `L_j = Σ_{s,ℓ} 2^ℓ π_jsℓ`; `Σ_k L_jk = L_j`, `L_jk ≤ w_k p_k y_jk`. Only for PS jobs whose
/// speed depends on locality.
pub(super) fn ps_locality(model: &mut Model, ctx: &Ctx<'_>, jv: &mut JobVars) {
    let job = ctx.job(jv);
    if job.arch != Architecture::ParameterServer
        || jv.options.iter().all(|o| o.terms.local_pair_slope == 0.0)
    {
        return;
    }
    let id = job.id;
    let nbits = (32 - job.ps.max.leading_zeros()).max(1);
    let mut l_terms: Vec<(f64, Variable)> = Vec::new();
    let mut bits = BTreeMap::new();
    for s in 0..jv.m.len() {
        let Some(ms) = jv.m[s] else { continue };
        let qs = jv.q[s].expect("PS jobs have q");
        let mcap = model.info_ub(ms);
        let mut qexp: Vec<(f64, Variable)> = vec![(-1.0, qs)];
        let mut pairs = Vec::new();
        for k in 0..nbits {
            let beta = model.bin(format!("qb_j{id}_s{s}_{k}"));
            let pi = model.add_var(format!("mq_j{id}_s{s}_{k}"), 0.0, mcap, false);
            let w = f64::from(1u32 << k);
            qexp.push((w, beta));
            l_terms.push((w, pi));
            model.push(Group::PsLocality, lin(&[(1.0, pi), (-mcap, beta)]).leq(0.0));
            model.push(Group::PsLocality, lin(&[(1.0, pi), (-1.0, ms)]).leq(0.0));
            model.push(
                Group::PsLocality,
                lin(&[(1.0, pi), (-1.0, ms), (-mcap, beta)]).geq(-mcap),
            );
            pairs.push((beta, pi));
        }
        model.push(Group::PsLocality, lin(&qexp).eq(0.0));
        bits.insert(s, pairs);
    }
    let l = model.add_var(format!("L_j{id}"), 0.0, f64::INFINITY, false);
    l_terms.push((-1.0, l));
    model.push(Group::PsLocality, lin(&l_terms).eq(0.0));
    let mut split: Vec<(f64, Variable)> = vec![(-1.0, l)];
    let mut by_opt = Vec::with_capacity(jv.options.len());
    for (k, o) in jv.options.iter().enumerate() {
        let pairs = f64::from(o.workers * o.ps);
        let lk = model.add_var(format!("L_j{id}_o{k}"), 0.0, pairs, false);
        model.push(
            Group::PsLocality,
            lin(&[(1.0, lk), (-pairs, jv.y[k])]).leq(0.0),
        );
        split.push((1.0, lk));
        by_opt.push(Some(lk));
    }
    model.push(Group::PsLocality, lin(&split).eq(0.0));
    jv.bits = bits;
    jv.local_pairs = Some(l);
    jv.local_pairs_by_option = by_opt;
}
