//! Between solver values and schedules: [`Decoder::decode`] turns a solution into a
//! [`Schedule`]; [`Decoder::encode`] turns a valid schedule into a value per column (a MIP start,
//! or a point at which to check the rows).

use std::collections::HashMap;

use good_lp::Variable;

use super::columns::{ColumnMap, Columns};
use crate::error::{Error, Result};
use crate::model::JobPos;
use crate::model::ServerIdx;
use crate::model::{Assignment, ClusterSnapshot, PsTask, Schedule, WorkerTask};
use crate::objective::{RoundPricing, Sharing, same_assignment};

/// Maps solver values back to a [`Schedule`], and a schedule to solver values (MIP start).
pub struct Decoder {
    map: ColumnMap,
}

impl Decoder {
    pub(crate) fn new(map: ColumnMap) -> Self {
        Decoder { map }
    }

    fn columns(&self) -> Columns<'_> {
        self.map.view()
    }

    /// Column index of a variable.
    pub fn index(&self, v: Variable) -> usize {
        self.map.index_of[&v]
    }

    /// The integer columns of job `j` (snapshot index): its option, workers, presence, GPUs
    /// per switch, PS, sockets and keep — what fixes its assignment.
    pub fn integer_columns_of(&self, j: usize) -> Vec<Variable> {
        let Some(jv) = self.map.jobs.iter().find(|jv| jv.job == j) else {
            return Vec::new();
        };
        let mut out: Vec<Variable> = jv.y.clone();
        out.extend(jv.m.iter().chain(&jv.v).chain(&jv.q).chain(&jv.a).flatten());
        out.extend(jv.m_tier.iter().flatten().flatten());
        out.extend(jv.g.values().flat_map(|&(g, u)| [g, u]));
        out.extend(jv.t.values().chain(jv.zeta.values()));
        out.extend(jv.keep);
        out
    }

    /// Constant added to the solver objective.
    pub fn objective_constant(&self) -> f64 {
        self.map.constant
    }

    /// The schedule encoded by a solution (`value(v)` gives each variable's value).
    pub fn decode(&self, snapshot: &ClusterSnapshot, value: &dyn Fn(Variable) -> f64) -> Schedule {
        self.columns().decode(snapshot, value)
    }

    /// Values of every variable for a valid schedule (a MIP start). Errors if the schedule is
    /// invalid or uses an option the model does not contain.
    pub fn encode(&self, pricing: &RoundPricing<'_>, schedule: &Schedule) -> Result<Vec<f64>> {
        self.columns().encode(pricing, schedule)
    }
}

impl Columns<'_> {
    fn decode(&self, snapshot: &ClusterSnapshot, value: &dyn Fn(Variable) -> f64) -> Schedule {
        let r = |v: Variable| value(v).round();
        let switches = self.topology.switches();
        let mut taken: Vec<Vec<bool>> = switches
            .iter()
            .map(|sw| vec![false; sw.gpus.len()])
            .collect();
        let mut out: Vec<Assignment> = Vec::new();
        // Kept jobs first: they get exactly their current GPUs.
        let mut order: Vec<usize> = (0..self.jobs.len()).collect();
        order.sort_by_key(|&i| self.jobs[i].keep.map(|k| r(k) < 0.5).unwrap_or(true));
        for i in order {
            let jv = &self.jobs[i];
            let job = &snapshot.jobs[jv.job];
            let Some(k) = jv.y.iter().position(|&y| r(y) > 0.5) else {
                continue;
            };
            let tier = jv.options[k].tier;
            if jv.keep.is_some_and(|k| r(k) > 0.5) {
                let mut cur = job
                    .run
                    .current
                    .clone()
                    .expect("keep exists only for running jobs");
                // Kept where it runs, at the tier the option says (not a restart).
                cur.tier = tier;
                for w in &cur.workers {
                    for &g in &w.gpus {
                        if let Some((b, pos)) = self.topology.switch_of(w.server.0, g) {
                            taken[b.0][pos] = true;
                        }
                    }
                }
                out.push(cur);
                continue;
            }
            let gpw = job.demand.gpus_per_worker as usize;
            let mut servers: Vec<usize> = Vec::new();
            let mut by_server: HashMap<usize, Vec<u32>> = HashMap::new();
            for (&b, &(gv, _)) in &jv.g {
                let n = r(gv) as usize;
                let sw = self.topology.switch(b);
                let mut got = 0;
                for (pos, &gpu) in sw.gpus.iter().enumerate() {
                    if got == n {
                        break;
                    }
                    if !taken[b.0][pos] {
                        taken[b.0][pos] = true;
                        by_server.entry(sw.server).or_default().push(gpu);
                        got += 1;
                    }
                }
                if !servers.contains(&sw.server) && n > 0 {
                    servers.push(sw.server);
                }
            }
            servers.sort_unstable();
            let mut workers = Vec::new();
            for s in servers {
                for chunk in by_server[&s].chunks(gpw.max(1)) {
                    workers.push(WorkerTask {
                        server: ServerIdx(s),
                        gpus: chunk.to_vec(),
                    });
                }
            }
            let mut ps = Vec::new();
            for (s, q) in jv.q.iter().enumerate() {
                if let Some(qv) = q {
                    for _ in 0..(r(*qv) as usize) {
                        ps.push(PsTask {
                            server: ServerIdx(s),
                        });
                    }
                }
            }
            out.push(Assignment {
                tier,
                job: job.id,
                workers,
                ps,
            });
        }
        out.sort_by_key(|a| a.job);
        Schedule { assignments: out }
    }

    pub(crate) fn encode(
        &self,
        pricing: &RoundPricing<'_>,
        schedule: &Schedule,
    ) -> Result<Vec<f64>> {
        let snapshot = pricing.snapshot();
        let mut x = vec![0.0; self.columns];
        let idx = |v: Variable| -> usize { self.index_of[&v] };
        // Scoring first rejects invalid schedules and unpriceable shapes with a clear error.
        pricing.score(schedule)?;
        let mut chosen: Vec<Option<usize>> = vec![None; self.jobs.len()];
        for (i, jv) in self.jobs.iter().enumerate() {
            let job = &snapshot.jobs[jv.job];
            let Some(a) = schedule.assignment(job.id) else {
                continue;
            };
            let f = pricing.option_of(JobPos(jv.job), a);
            // The program's options are the priced list, in its order.
            let k =
                pricing
                    .option_index(JobPos(jv.job), &f)
                    .ok_or_else(|| Error::InvalidInstance {
                        context: "MIP start".into(),
                        reason: format!(
                            "job {}: {:?} is not an option of the model",
                            job.id,
                            (f.workers, f.ps, f.mode, &f.gpu_type, f.tier)
                        ),
                    })?;
            chosen[i] = Some(k);
            x[idx(jv.y[k])] = 1.0;
            let mut per_server: HashMap<usize, f64> = HashMap::new();
            let mut per_switch: HashMap<crate::model::SwitchId, f64> = HashMap::new();
            for w in &a.workers {
                *per_server.entry(w.server.0).or_default() += 1.0;
                for &g in &w.gpus {
                    let (b, _) = self
                        .topology
                        .switch_of(w.server.0, g)
                        .expect("valid schedule");
                    *per_switch.entry(b).or_default() += 1.0;
                }
            }
            let mut ps_on: HashMap<usize, f64> = HashMap::new();
            for p in &a.ps {
                *ps_on.entry(p.server.0).or_default() += 1.0;
            }
            for (s, &n) in &per_server {
                x[idx(jv.m[*s].expect("option's type"))] = n;
                x[idx(jv.v[*s].expect("option's type"))] = 1.0;
                if let Some(Some(mt)) = jv.m_tier.get(usize::from(a.tier)).map(|row| row[*s]) {
                    x[idx(mt)] = n;
                }
            }
            for (b, &n) in &per_switch {
                let (gv, uv) = jv.g[b];
                x[idx(gv)] = n;
                x[idx(uv)] = 1.0;
            }
            for s in 0..jv.q.len() {
                if let (Some(qv), Some(av)) = (jv.q[s], jv.a[s]) {
                    let q = ps_on.get(&s).copied().unwrap_or(0.0);
                    x[idx(qv)] = q;
                    let on = q > 0.0 || per_server.contains_key(&s);
                    x[idx(av)] = f64::from(u8::from(on));
                }
            }
            let slots = self.topology.slots();
            for (&(s, so), &tv) in &jv.t {
                let on = a.workers.iter().any(|w| {
                    w.server == ServerIdx(s)
                        && w.gpus
                            .iter()
                            .any(|&g| slots[s].get(g as usize).is_some_and(|sl| sl.socket == so))
                });
                x[idx(tv)] = f64::from(u8::from(on));
            }
            for (&s, &z) in &jv.zeta {
                let n =
                    jv.t.iter()
                        .filter(|((ss, _), tv)| *ss == s && x[idx(**tv)] > 0.5)
                        .count();
                x[idx(z)] = f64::from(u8::from(n >= 2));
            }
            let mut l = 0.0;
            for (&s, pairs) in &jv.bits {
                let q = ps_on.get(&s).copied().unwrap_or(0.0) as u32;
                let m = per_server.get(&s).copied().unwrap_or(0.0);
                for (k, &(beta, pi)) in pairs.iter().enumerate() {
                    let bit = f64::from((q >> k) & 1);
                    x[idx(beta)] = bit;
                    x[idx(pi)] = bit * m;
                    l += bit * m * f64::from(1u32 << k);
                }
            }
            if let Some(lv) = jv.local_pairs {
                x[idx(lv)] = l;
                if let Some(Some(lk)) = jv.local_pairs_by_option.get(k) {
                    x[idx(*lk)] = l;
                }
            }
            if let (Some(kv), Some(cur)) = (jv.keep, &job.run.current) {
                x[idx(kv)] = f64::from(u8::from(same_assignment(cur, a)));
            }
        }
        // Sharing variables at their tight values, in creation order (μ before the NIC ω that
        // read it), then losses.
        for d in self.shares {
            let gate: f64 = d
                .gates
                .iter()
                .map(|g| g.iter().map(|&v| x[idx(v)]).sum::<f64>())
                .product();
            let sum: f64 = if d.terms.is_empty() {
                1.0
            } else {
                d.terms.iter().map(|&(c, v)| c * x[idx(v)]).sum()
            };
            x[idx(d.var)] = gate * sum;
        }
        for (i, jv) in self.jobs.iter().enumerate() {
            let Some(k) = chosen[i] else { continue };
            let o = &jv.options[k];
            for kind in Sharing::ALL {
                let p: f64 = jv.pressure[kind.index()]
                    .iter()
                    .map(|&(c, v, _)| c * x[idx(v)])
                    .sum();
                x[idx(jv.loss[kind.index()])] = (o.terms.coef(kind) * p).max(0.0);
            }
        }
        Ok(x)
    }
}
