//! The packer's plan arithmetic, free of its state: which servers take a job's workers, and
//! where its parameter servers go.

use crate::model::Job;
use crate::model::fits_in;

/// The first servers of `by_room` until `workers` fit.
pub(super) fn take_until(by_room: &[(usize, u32)], workers: u32) -> Option<Vec<(usize, u32)>> {
    let mut plan = Vec::new();
    let mut left = workers;
    for &(s, c) in by_room {
        if left == 0 {
            break;
        }
        let k = c.min(left);
        plan.push((s, k));
        left -= k;
    }
    (left == 0).then_some(plan)
}

/// Servers for `ps` PS tasks: round-robin over the worker servers while they have room (so PS
/// traffic stays local, as Optimus spreads PS evenly over its servers), then the servers with the
/// most free cores.
pub(super) fn ps_servers(
    job: &Job,
    plan: &[(usize, u32)],
    ps: u32,
    cpu: &[f64],
    mem: &[f64],
) -> Option<Vec<usize>> {
    let d = &job.demand;
    let mut cpu = cpu.to_vec();
    let mut mem = mem.to_vec();
    let fits = |c: f64, m: f64| fits_in((c, m), d.cpu_per_ps, d.mem_per_ps_gib);
    let mut out = Vec::with_capacity(ps as usize);
    let mut rr = 0usize;
    while (out.len() as u32) < ps {
        let local = (0..plan.len())
            .map(|k| plan[(rr + k) % plan.len()].0)
            .find(|&s| fits(cpu[s], mem[s]));
        let s = match local {
            Some(s) => {
                rr += 1;
                s
            }
            None => (0..cpu.len())
                .filter(|&s| fits(cpu[s], mem[s]))
                .max_by(|&a, &b| cpu[a].total_cmp(&cpu[b]).then(b.cmp(&a)))?,
        };
        cpu[s] -= d.cpu_per_ps;
        mem[s] -= d.mem_per_ps_gib;
        out.push(s);
    }
    Some(out)
}

/// The distinct values, sorted.
pub(super) fn dedup(it: impl Iterator<Item = u32>) -> Vec<u32> {
    let mut v: Vec<u32> = it.collect();
    v.sort_unstable();
    v.dedup();
    v
}
