//! What a run accrues: GPU-time held and useful, work done, waiting, stranded GPUs — the
//! per-job records and the utilisation timeline the metrics and reports read.

use super::*;
use crate::model::ServerIdx;

/// What a job accrues over an interval at its current speed: GPUs held, GPU-seconds held, work
/// done and useful GPU-seconds (held, weighted by in-context ÷ alone speed; none while
/// restarting). The one rule the simulator's clock and the environment's outcomes both read.
pub(super) struct Accrual {
    pub(super) gpus: f64,
    pub(super) held: f64,
    pub(super) work: f64,
    pub(super) useful: f64,
}

impl State {
    pub(super) fn accrue(&self, dt: f64) -> Accrual {
        let Some(a) = &self.assignment else {
            return Accrual {
                gpus: 0.0,
                held: 0.0,
                work: 0.0,
                useful: 0.0,
            };
        };
        let gpus = a.workers.iter().map(|w| w.gpus.len()).sum::<usize>() as f64;
        let progressing = !self.restarting;
        Accrual {
            gpus,
            held: gpus * dt,
            work: if progressing { self.speed * dt } else { 0.0 },
            useful: if progressing && self.alone_speed > 0.0 {
                gpus * dt * self.speed / self.alone_speed
            } else {
                0.0
            },
        }
    }
}

impl Simulator<'_> {
    /// Per-job outcome so far.
    pub fn records(&self) -> &[JobRecord] {
        &self.records
    }

    /// `(time, GPUs held)` at every change.
    pub fn utilization(&self) -> &[(f64, u64)] {
        &self.utilization
    }

    pub(super) fn gpus_held(&self) -> u64 {
        self.active
            .iter()
            .filter_map(|&i| self.state[i].assignment.as_ref())
            .map(|a| a.workers.iter().map(|w| w.gpus.len() as u64).sum::<u64>())
            .sum()
    }

    /// Moves progress and GPU-time forward to `t`.
    pub(super) fn advance(&mut self, t: f64) {
        let dt = t - self.last_advance;
        if dt > 0.0 {
            self.account_cpu_mem(dt);
            let busy = (self.last_arrival.min(t) - self.last_advance).max(0.0);
            // Only active jobs hold GPUs or wait.
            for &i in &self.active {
                let (s, r) = (&mut self.state[i], &mut self.records[i]);
                if s.assignment.is_some() {
                    let acc = s.accrue(dt);
                    r.gpu_seconds += acc.held;
                    r.busy_gpu_seconds += acc.gpus * busy;
                    s.done += acc.work;
                    r.useful_gpu_seconds += acc.useful;
                } else if s.arrived && !s.finished {
                    r.waiting_s += dt;
                }
            }
        }
        self.last_advance = t;
        self.now = t;
    }

    /// Adds `dt` seconds of the cores and memory held and stranded now.
    fn account_cpu_mem(&mut self, dt: f64) {
        let now = match self.cpu_mem_now {
            Some(v) => v,
            None => {
                let v = self.cpu_mem_shares();
                self.cpu_mem_now = Some(v);
                v
            }
        };
        let c = &mut self.cpu_mem;
        c.cores_held += now[0] * dt;
        c.mem_held += now[1] * dt;
        c.cores_stranded += now[2] * dt;
        c.mem_stranded += now[3] * dt;
        c.span_s += dt;
    }

    /// Shares of the cluster's cores and memory held by tasks (at their tier), and free on
    /// servers whose every GPU is held: `[cores held, memory held, cores stranded, memory
    /// stranded]`.
    fn cpu_mem_shares(&self) -> [f64; 4] {
        let servers = &self.priced.cluster.servers;
        let n = servers.len();
        let mut used: Vec<(f64, f64, u32)> = vec![(0.0, 0.0, 0); n];
        for &i in &self.active {
            let Some(a) = &self.state[i].assignment else {
                continue;
            };
            let job = &self.jobs[i];
            let d = &job.demand;
            let (wc, wm) = job.worker_hold(a.tier);
            for w in a.workers.iter().filter(|w| w.server < ServerIdx(n)) {
                let u = &mut used[w.server.0];
                u.0 += wc;
                u.1 += wm;
                u.2 += w.gpus.len() as u32;
            }
            for p in a.ps.iter().filter(|p| p.server < ServerIdx(n)) {
                used[p.server.0].0 += d.cpu_per_ps;
                used[p.server.0].1 += d.mem_per_ps_gib;
            }
        }
        let (mut cap_c, mut cap_m) = (0.0, 0.0);
        let (mut held_c, mut held_m, mut str_c, mut str_m) = (0.0, 0.0, 0.0, 0.0);
        for (s, u) in servers.iter().zip(&used) {
            cap_c += s.cpu_cores;
            cap_m += s.memory_gib;
            held_c += u.0.min(s.cpu_cores);
            held_m += u.1.min(s.memory_gib);
            if u.2 >= s.num_gpus() {
                str_c += (s.cpu_cores - u.0).max(0.0);
                str_m += (s.memory_gib - u.1).max(0.0);
            }
        }
        let share = |x: f64, cap: f64| if cap > 0.0 { x / cap } else { 0.0 };
        [
            share(held_c, cap_c),
            share(held_m, cap_m),
            share(str_c, cap_c),
            share(str_m, cap_m),
        ]
    }

    /// Cores and memory held and stranded so far, as time-averaged shares of capacity.
    pub fn cpu_mem_use(&self) -> CpuMemUse {
        let c = &self.cpu_mem;
        let f = |x: f64| if c.span_s > 0.0 { x / c.span_s } else { 0.0 };
        CpuMemUse {
            cores_held: f(c.cores_held),
            cores_stranded: f(c.cores_stranded),
            mem_held: f(c.mem_held),
            mem_stranded: f(c.mem_stranded),
            span_s: c.span_s,
        }
    }

    /// The speed of job `i` alone in assignment `a` (0 if the model refuses it).
    pub(super) fn alone_speed(&self, i: usize, a: &Assignment) -> f64 {
        perf::speed_alone(
            self.perf,
            &self.priced.cluster,
            &self.slots,
            &self.job_now(i),
            a,
        )
        .map_or(0.0, |s| s.iterations_per_s)
    }

    /// Job `i` with its progress so far (what a progress-dependent speed reads).
    pub(super) fn job_now(&self, i: usize) -> crate::model::Job {
        let mut j = self.jobs[i].clone();
        j.run.done_iterations = self.state[i].done.min(j.total_iterations * (1.0 - 1e-12));
        j
    }

    /// After a round: GPUs idle on servers whose free cores or memory cannot take one more
    /// worker of any waiting job.
    pub(super) fn count_stranded(&mut self) {
        let waiting: Vec<usize> = self
            .active
            .iter()
            .copied()
            .filter(|&i| self.state[i].assignment.is_none())
            .collect();
        if waiting.is_empty() {
            return;
        }
        // Counted against the demand a waiting job would be placed at (its tier 0).
        let min_cpu = waiting
            .iter()
            .map(|&i| self.jobs[i].demand.cpu_per_worker)
            .fold(f64::INFINITY, f64::min);
        let min_mem = waiting
            .iter()
            .map(|&i| self.jobs[i].demand.mem_per_worker_gib)
            .fold(f64::INFINITY, f64::min);
        // The packer's ledger of free GPUs, cores and memory, filled with what runs now.
        let mut ledger = crate::policies::Packer::new(&self.priced, self.perf);
        for &i in &self.active {
            if let Some(a) = &self.state[i].assignment {
                ledger.keep(&self.jobs[i], a);
            }
        }
        let stranded = ledger.stranded_gpus(min_cpu, min_mem);
        self.stranded.0 += 1;
        self.stranded.1 += stranded as f64;
    }

    /// Mean, over rounds in which a job waited, of the GPUs left idle on servers whose free
    /// cores or memory could not take one more worker of any waiting job.
    pub fn stranded_gpus(&self) -> f64 {
        if self.stranded.0 == 0 {
            0.0
        } else {
            self.stranded.1 / self.stranded.0 as f64
        }
    }

    /// Jobs finished so far.
    pub fn finished(&self) -> usize {
        self.finished_count
    }

    /// Jobs in the run.
    pub fn total_jobs(&self) -> usize {
        self.jobs.len()
    }
}
