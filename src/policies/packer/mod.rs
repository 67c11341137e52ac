//! Free-resource bookkeeping and the placement rules the baselines share.
//!
//! A [`Packer`] starts from an empty cluster, takes the assignments a policy keeps
//! ([`Packer::keep`]) and places new ones with one of the [`Placement`] rules. It never
//! over-commits a GPU, a core or a GiB, so every schedule it builds passes
//! [`crate::Schedule::validate`] by construction — the simulator re-checks anyway.

use rand::Rng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;

mod plans;

use plans::{dedup, ps_servers, take_until};

use crate::model::ServerIdx;
use crate::model::{Assignment, ClusterSnapshot, CoreMemLedger, GpuSlot, Job, PsTask, WorkerTask};
use crate::objective::RoundPricing;
use crate::perf::{JobQuery, Occupancy, PerfModel, PlacementShape};

/// How a policy places a job whose size it has decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// Fewest servers: the best-fitting single server if one suffices, else the servers with the
    /// most room first; GPUs chosen under as few PCIe switches and sockets as possible
    /// (Tiresias' consolidation, Optimus' packing). Among GPU types, the fastest for the job.
    Consolidated,
    /// Servers and GPUs in a seeded random order.
    Random,
    /// Balances contention against spreading overhead (SJF-BCO): for every server count `k`,
    /// the `k` least-loaded servers that fit an even split; the candidate the performance model
    /// prices fastest *in context* (co-runners, PCIe and NIC sharers, sockets, PS locality,
    /// read from the same [`Occupancy`] the simulator prices with) wins.
    Balanced,
}

/// How [`Packer::place_plan`] chooses GPUs within a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GpuChoice {
    /// Under as few PCIe switches and sockets as possible (the baselines' rule).
    Compact,
    /// Under switches no other job uses, within one socket, when the server has that room
    /// (no PCIe sharing: the objective charges every (switch, other job) pair); else compact.
    OwnSwitches,
}

/// The GPUs one server has left (its cores and memory are in the packer's ledger): its flags
/// are `gpus` from `start` in the packer's one flag vector (one allocation for the cluster, not
/// one per server: a decoding builds a packer per proposal).
#[derive(Debug, Clone)]
struct ServerState {
    start: usize,
    gpus: u32,
    free_count: u32,
}

/// The free resources of a cluster while a schedule is being built.
#[derive(Clone)]
pub struct Packer<'a> {
    perf: &'a dyn PerfModel,
    snapshot: &'a ClusterSnapshot,
    /// Who runs where among the assignments placed so far — kept only once a rule that prices
    /// in context asks for it (building it costs more than the other rules' whole placement).
    occupancy: Occupancy,
    tracking: bool,
    servers: Vec<ServerState>,
    /// Every GPU's free flag, server after server (see [`ServerState`]).
    free: Vec<bool>,
    /// Free cores and memory per server: the validator's own ledger and rule.
    ledger: CoreMemLedger,
    /// Server indices by GPU type, in cluster order.
    groups: Vec<(crate::model::GpuType, Vec<usize>)>,
    assignments: Vec<Assignment>,
    /// Free GPUs in the whole cluster (kept, not recounted: policies ask before every job).
    free_total: u64,
    /// Servers holding workers of a job whose workers span several servers.
    has_distributed: Vec<bool>,
    /// Pollux's rule: at most one distributed job per server (multi-server placements avoid
    /// servers that already hold one).
    exclusive_distributed: bool,
}

impl<'a> Packer<'a> {
    /// An empty cluster.
    pub fn new(snapshot: &'a ClusterSnapshot, perf: &'a dyn PerfModel) -> Self {
        Packer::on(snapshot, perf, Occupancy::new(&snapshot.cluster))
    }

    /// An empty cluster whose slot table a round's pricing already holds (shared, not
    /// recomputed: a decoding builds a packer per proposal).
    pub(crate) fn priced(pricing: &RoundPricing<'a>, perf: &'a dyn PerfModel) -> Self {
        let occupancy = Occupancy::on(pricing.topology().shared_slots());
        Packer::on(pricing.snapshot(), perf, occupancy)
    }

    fn on(snapshot: &'a ClusterSnapshot, perf: &'a dyn PerfModel, occupancy: Occupancy) -> Self {
        let servers = snapshot
            .cluster
            .servers
            .iter()
            .scan(0usize, |start, s| {
                let st = ServerState {
                    start: *start,
                    gpus: s.num_gpus(),
                    free_count: s.num_gpus(),
                };
                *start += s.num_gpus() as usize;
                Some(st)
            })
            .collect();
        let free = vec![true; snapshot.cluster.num_gpus() as usize];
        let mut groups: Vec<(crate::model::GpuType, Vec<usize>)> = Vec::new();
        for (i, s) in snapshot.cluster.servers.iter().enumerate() {
            match groups.iter_mut().find(|(t, _)| *t == s.gpu_type) {
                Some((_, v)) => v.push(i),
                None => groups.push((s.gpu_type, vec![i])),
            }
        }
        Packer {
            perf,
            free_total: snapshot.cluster.num_gpus(),
            has_distributed: vec![false; snapshot.cluster.servers.len()],
            exclusive_distributed: false,
            snapshot,
            occupancy,
            tracking: false,
            servers,
            free,
            ledger: CoreMemLedger::new(&snapshot.cluster),
            groups,
            assignments: Vec::new(),
        }
    }

    /// Free GPUs in the whole cluster.
    pub fn free_gpus(&self) -> u64 {
        self.free_total
    }

    /// The assignments placed so far.
    pub fn assignments(&self) -> &[Assignment] {
        &self.assignments
    }

    /// The schedule built so far.
    pub fn into_assignments(self) -> Vec<Assignment> {
        self.assignments
    }

    /// GPUs still free on servers whose free cores are below `min_cpu` or free memory below
    /// `min_mem_gib`: GPUs no worker with those demands can use.
    pub fn stranded_gpus(&self, min_cpu: f64, min_mem_gib: f64) -> u64 {
        self.servers
            .iter()
            .enumerate()
            .filter(|&(i, _)| !self.ledger.fits(i, min_cpu, min_mem_gib))
            .map(|(_, s)| u64::from(s.free_count))
            .sum()
    }

    /// Keeps an existing assignment if all its resources are still free; `false` (and nothing
    /// taken) otherwise.
    pub fn keep(&mut self, job: &Job, a: &Assignment) -> bool {
        let d = &job.demand;
        // A worker holds what its tier grants (the demand at tier 0).
        let (wc, wm) = job.worker_hold(a.tier);
        for w in &a.workers {
            if w.server.0 >= self.servers.len() {
                return false;
            }
            let free = self.free_gpus_on(w.server.0);
            if w.gpus
                .iter()
                .any(|&g| !free.get(g as usize).copied().unwrap_or(false))
            {
                return false;
            }
        }
        // Cores and memory, checked on the servers the assignment touches only.
        for srv in a.servers() {
            if srv >= self.servers.len() {
                return false;
            }
            let w = a
                .workers
                .iter()
                .filter(|w| w.server == ServerIdx(srv))
                .count() as f64;
            let p = a.ps.iter().filter(|p| p.server == ServerIdx(srv)).count() as f64;
            let cpu = w * wc + p * d.cpu_per_ps;
            let mem = w * wm + p * d.mem_per_ps_gib;
            if !self.ledger.fits(srv, cpu, mem) {
                return false;
            }
        }
        self.commit(job, a.clone());
        true
    }

    /// Enforces Pollux's rule from now on: a placement over several servers avoids servers that
    /// already hold workers of another multi-server job.
    pub fn one_distributed_job_per_server(&mut self) {
        self.exclusive_distributed = true;
    }

    fn commit(&mut self, job: &Job, a: Assignment) {
        let d = &job.demand;
        let (wc, wm) = job.worker_hold(a.tier);
        let mut worker_servers: Vec<usize> = a.workers.iter().map(|w| w.server.0).collect();
        worker_servers.sort_unstable();
        worker_servers.dedup();
        if worker_servers.len() > 1 {
            for &s in &worker_servers {
                self.has_distributed[s] = true;
            }
        }
        for w in &a.workers {
            let s = &mut self.servers[w.server.0];
            for &g in &w.gpus {
                self.free[s.start + g as usize] = false;
                s.free_count -= 1;
                self.free_total -= 1;
            }
            self.ledger.take(w.server.0, wc, wm);
        }
        for p in &a.ps {
            self.ledger.take(p.server.0, d.cpu_per_ps, d.mem_per_ps_gib);
        }
        if self.tracking {
            let i = self.occupancy.add(&a, Some(&job.model));
            self.occupancy
                .price_nic_competition_of(self.perf, &self.snapshot.cluster, i, job, &a);
        }
        self.assignments.push(a);
    }

    /// Starts keeping the occupancy index, from everything committed so far.
    fn track_occupancy(&mut self) {
        if self.tracking {
            return;
        }
        for a in &self.assignments {
            let model = self.snapshot.job(a.job).map(|j| j.model.as_str());
            self.occupancy.add(a, model);
        }
        self.occupancy
            .price_nic_competition(self.perf, self.snapshot, &self.assignments);
        self.tracking = true;
    }

    /// Free GPUs of server `s`, one flag per GPU.
    pub fn free_gpus_on(&self, s: usize) -> &[bool] {
        let st = &self.servers[s];
        &self.free[st.start..st.start + st.gpus as usize]
    }

    /// Free cores and GiB of memory of server `s`.
    pub fn free_cpu_mem(&self, s: usize) -> (f64, f64) {
        self.ledger.free(s)
    }

    /// Places `job` exactly on `plan` (server, workers), its GPUs chosen by `gpus` and its `ps`
    /// parameter servers by the shared PS rule; commits and returns `true`, or returns `false`
    /// and takes nothing when the plan or the PS do not fit.
    pub fn place_plan(
        &mut self,
        job: &Job,
        plan: &[(usize, u32)],
        ps: u32,
        gpus: GpuChoice,
    ) -> bool {
        let mut seen = vec![false; self.servers.len()];
        for &(s, k) in plan {
            if s >= self.servers.len() || seen[s] || k == 0 || self.capacity(job, s) < k {
                return false;
            }
            seen[s] = true;
        }
        if plan.is_empty() || !self.ps_fit(job, plan, ps) {
            return false;
        }
        let mut a = self.build(job, plan, ps, None);
        if gpus == GpuChoice::OwnSwitches {
            let g = job.demand.gpus_per_worker as usize;
            let mut workers = Vec::with_capacity(a.workers.len());
            for &(s, k) in plan {
                let chosen = self
                    .own_switch_gpus(s, k * job.demand.gpus_per_worker)
                    .unwrap_or_else(|| self.compact_gpus(s, k * job.demand.gpus_per_worker));
                workers.extend(chosen.chunks(g).map(|c| WorkerTask {
                    server: ServerIdx(s),
                    gpus: c.to_vec(),
                }));
            }
            a.workers = workers;
        }
        self.commit(job, a);
        true
    }

    /// `n` GPUs of server `s` under PCIe switches no one uses yet, all under one socket (the
    /// tightest socket that has room): the smallest free switch that holds them, else the
    /// largest free switches first; `None` if no socket has that much untouched room.
    fn own_switch_gpus(&self, s: usize, n: u32) -> Option<Vec<u32>> {
        let on = self.free_gpus_on(s);
        let slots = &self.occupancy.slots()[s];
        // (socket, switch, its GPUs) of switches whose every GPU is free.
        let mut whole: Vec<(u32, u32, Vec<u32>)> = Vec::new();
        for (i, slot) in slots.iter().enumerate() {
            match whole.iter_mut().find(|w| w.1 == slot.switch) {
                Some(w) => w.2.push(i as u32),
                None => whole.push((slot.socket, slot.switch, vec![i as u32])),
            }
        }
        whole.retain(|w| w.2.iter().all(|&i| on[i as usize]));
        let room = |so: u32| -> u32 {
            whole
                .iter()
                .filter(|w| w.0 == so)
                .map(|w| w.2.len() as u32)
                .sum()
        };
        let socket = dedup(whole.iter().map(|w| w.0))
            .into_iter()
            .filter(|&so| room(so) >= n)
            .min_by_key(|&so| (room(so), so))?;
        let mut mine: Vec<&(u32, u32, Vec<u32>)> = whole.iter().filter(|w| w.0 == socket).collect();
        if let Some(w) = mine
            .iter()
            .filter(|w| w.2.len() as u32 >= n)
            .min_by_key(|w| (w.2.len(), w.1))
        {
            return Some(w.2.iter().copied().take(n as usize).collect());
        }
        mine.sort_by_key(|w| (std::cmp::Reverse(w.2.len()), w.1));
        Some(
            mine.iter()
                .flat_map(|w| w.2.iter().copied())
                .take(n as usize)
                .collect(),
        )
    }

    /// Workers of `job` that fit on server `s` now.
    pub fn capacity(&self, job: &Job, s: usize) -> u32 {
        let d = &job.demand;
        let gpus = self.servers[s].free_count / d.gpus_per_worker;
        gpus.min(
            self.ledger
                .tasks_that_fit(s, d.cpu_per_worker, d.mem_per_worker_gib),
        )
    }

    /// Places `workers` workers and `ps` parameter servers of `job` by `rule`, commits and
    /// returns `true`, or returns `false` and takes nothing.
    pub fn place(
        &mut self,
        job: &Job,
        workers: u32,
        ps: u32,
        rule: Placement,
        rng: &mut ChaCha8Rng,
    ) -> bool {
        if workers == 0 {
            return false;
        }
        if rule == Placement::Balanced {
            self.track_occupancy();
        }
        let mut best: Option<(f64, Vec<(usize, u32)>)> = None;
        let mut group_order: Vec<usize> = (0..self.groups.len()).collect();
        if rule == Placement::Random {
            group_order.shuffle(rng);
        }
        for gi in group_order {
            let (gpu_type, members) = &self.groups[gi];
            if !job.allows_gpu(gpu_type) {
                continue;
            }
            let plans: Vec<Vec<(usize, u32)>> = match rule {
                Placement::Consolidated => self
                    .consolidated(job, members, workers)
                    .into_iter()
                    .collect(),
                Placement::Random => self
                    .random(job, members, workers, rng)
                    .into_iter()
                    .collect(),
                Placement::Balanced => self.balanced(job, members, workers),
            };
            for plan in plans {
                if !self.ps_fit(job, &plan, ps) {
                    continue;
                }
                if rule == Placement::Random {
                    best = Some((0.0, plan));
                    break;
                }
                let speed = self.price(job, gpu_type, &plan, ps, rule == Placement::Balanced);
                if best.as_ref().is_none_or(|(b, _)| speed > *b) {
                    best = Some((speed, plan));
                }
            }
            if rule == Placement::Random && best.is_some() {
                break;
            }
        }
        let Some((_, plan)) = best else {
            return false;
        };
        let a = self.build(job, &plan, ps, (rule == Placement::Random).then_some(rng));
        self.commit(job, a);
        true
    }

    /// Speed of `job` on `plan`: alone, or (`in_context`) as the tasks the plan would place,
    /// among the assignments already placed. A price the model refuses counts as zero.
    fn price(
        &self,
        job: &Job,
        gpu_type: &str,
        plan: &[(usize, u32)],
        ps: u32,
        in_context: bool,
    ) -> f64 {
        let shape = if in_context {
            let a = self.build(job, plan, ps, None);
            let fp = a.footprint(self.occupancy.slots());
            self.occupancy.shape(&a, &fp, None)
        } else {
            let g = job.demand.gpus_per_worker;
            let workers: u32 = plan.iter().map(|(_, k)| k).sum();
            PlacementShape::isolated(workers, ps, plan.iter().map(|(_, k)| k * g).collect())
        };
        self.perf
            .speed(&JobQuery::of(job), gpu_type, &shape)
            .map_or(0.0, |s| s.iterations_per_s)
    }

    /// The consolidated rule's plan (see [`Placement::Consolidated`]) for `workers` workers of
    /// `job` on servers of `gpu_type` only: the best-fitting server if one suffices, else the
    /// servers with the most room first.
    pub fn consolidated_plan(
        &self,
        job: &Job,
        gpu_type: &str,
        workers: u32,
    ) -> Option<Vec<(usize, u32)>> {
        let (_, members) = self.groups.iter().find(|(t, _)| t == gpu_type)?;
        self.consolidated(job, members, workers)
    }

    fn consolidated(
        &self,
        job: &Job,
        members: &[usize],
        workers: u32,
    ) -> Option<Vec<(usize, u32)>> {
        let caps: Vec<(usize, u32)> = members
            .iter()
            .map(|&s| (s, self.capacity(job, s)))
            .filter(|&(_, c)| c > 0)
            .collect();
        if let Some(&(s, _)) = caps
            .iter()
            .filter(|&&(_, c)| c >= workers)
            .min_by_key(|&&(s, c)| (c, s))
        {
            return Some(vec![(s, workers)]);
        }
        let mut by_room = caps;
        if self.exclusive_distributed {
            by_room.retain(|&(s, _)| !self.has_distributed[s]);
        }
        by_room.sort_by_key(|&(s, c)| (std::cmp::Reverse(c), s));
        take_until(&by_room, workers)
    }

    fn random(
        &self,
        job: &Job,
        members: &[usize],
        workers: u32,
        rng: &mut ChaCha8Rng,
    ) -> Option<Vec<(usize, u32)>> {
        let mut caps: Vec<(usize, u32)> = members
            .iter()
            .map(|&s| (s, self.capacity(job, s)))
            .filter(|&(_, c)| c > 0)
            .collect();
        caps.shuffle(rng);
        // A random share of each server's room, so that random placement also spreads.
        let mut plan = Vec::new();
        let mut left = workers;
        for (s, c) in caps {
            if left == 0 {
                break;
            }
            let k = rng.random_range(1..=c.min(left));
            plan.push((s, k));
            left -= k;
        }
        if left > 0 {
            // Not enough random room: fill the chosen servers up before giving up.
            for (s, k) in plan.iter_mut() {
                let extra = (self.capacity(job, *s) - *k).min(left);
                *k += extra;
                left -= extra;
            }
        }
        (left == 0).then_some(plan)
    }

    fn balanced(&self, job: &Job, members: &[usize], workers: u32) -> Vec<Vec<(usize, u32)>> {
        let mut caps: Vec<(usize, u32, usize)> = members
            .iter()
            .map(|&s| (s, self.capacity(job, s), self.occupancy.workers_on(s).len()))
            .filter(|&(_, c, _)| c > 0)
            .collect();
        caps.sort_by_key(|&(s, c, load)| (load, std::cmp::Reverse(c), s));
        let mut plans = Vec::new();
        for k in 1..=workers.min(caps.len() as u32) {
            let per = workers.div_ceil(k);
            let chosen: Vec<(usize, u32)> = caps
                .iter()
                .filter(|&&(_, c, _)| c >= per)
                .take(k as usize)
                .map(|&(s, c, _)| (s, c))
                .collect();
            if chosen.len() < k as usize {
                continue;
            }
            // Even split: the first `workers % k` servers take one more.
            let base = workers / k;
            let extra = workers % k;
            plans.push(
                chosen
                    .iter()
                    .enumerate()
                    .map(|(i, &(s, _))| (s, base + u32::from((i as u32) < extra)))
                    .collect(),
            );
        }
        if plans.is_empty() {
            let mut by_room: Vec<(usize, u32)> = caps.iter().map(|&(s, c, _)| (s, c)).collect();
            by_room.sort_by_key(|&(s, c)| (std::cmp::Reverse(c), s));
            plans.extend(take_until(&by_room, workers));
        }
        plans
    }

    /// Whether `ps` PS tasks fit once the workers of `plan` are placed.
    fn ps_fit(&self, job: &Job, plan: &[(usize, u32)], ps: u32) -> bool {
        if ps == 0 {
            return true;
        }
        let (cpu, mem) = self.after_workers(job, plan);
        ps_servers(job, plan, ps, &cpu, &mem).is_some()
    }

    fn after_workers(&self, job: &Job, plan: &[(usize, u32)]) -> (Vec<f64>, Vec<f64>) {
        let d = &job.demand;
        let (mut cpu, mut mem) = self.ledger.free_columns();
        for &(s, k) in plan {
            cpu[s] -= d.cpu_per_worker * f64::from(k);
            mem[s] -= d.mem_per_worker_gib * f64::from(k);
        }
        (cpu, mem)
    }

    fn build(
        &self,
        job: &Job,
        plan: &[(usize, u32)],
        ps: u32,
        mut random_gpus: Option<&mut ChaCha8Rng>,
    ) -> Assignment {
        let g = job.demand.gpus_per_worker;
        let mut workers = Vec::new();
        for &(s, k) in plan {
            let gpus = match random_gpus.as_deref_mut() {
                Some(rng) => {
                    let on = self.free_gpus_on(s);
                    let mut free: Vec<u32> =
                        (0..on.len() as u32).filter(|&i| on[i as usize]).collect();
                    free.shuffle(rng);
                    free.truncate((k * g) as usize);
                    free
                }
                None => self.compact_gpus(s, k * g),
            };
            for chunk in gpus.chunks(g as usize) {
                workers.push(WorkerTask {
                    server: ServerIdx(s),
                    gpus: chunk.to_vec(),
                });
            }
        }
        let (cpu, mem) = self.after_workers(job, plan);
        let ps = ps_servers(job, plan, ps, &cpu, &mem)
            .unwrap_or_default()
            .into_iter()
            .map(|server| PsTask {
                server: ServerIdx(server),
            })
            .collect();
        Assignment {
            tier: 0,
            job: job.id,
            workers,
            ps,
        }
    }

    /// `n` free GPUs of server `s` under as few PCIe switches, then sockets, as possible: the
    /// tightest switch that holds all of them, else the tightest socket (its fullest switches
    /// first), else the fullest sockets.
    fn compact_gpus(&self, s: usize, n: u32) -> Vec<u32> {
        let on = self.free_gpus_on(s);
        let slots = &self.occupancy.slots()[s];
        let free: Vec<u32> = (0..on.len() as u32).filter(|&i| on[i as usize]).collect();
        let count = |pred: &dyn Fn(&GpuSlot) -> bool| {
            free.iter().filter(|&&i| pred(&slots[i as usize])).count() as u32
        };
        let switches: Vec<u32> = dedup(free.iter().map(|&i| slots[i as usize].switch));
        if let Some(sw) = switches
            .iter()
            .map(|&sw| (count(&|x: &GpuSlot| x.switch == sw), sw))
            .filter(|&(c, _)| c >= n)
            .min()
            .map(|(_, sw)| sw)
        {
            return free
                .iter()
                .copied()
                .filter(|&i| slots[i as usize].switch == sw)
                .take(n as usize)
                .collect();
        }
        let sockets: Vec<u32> = dedup(free.iter().map(|&i| slots[i as usize].socket));
        let mut socket_order: Vec<(u32, u32)> = sockets
            .iter()
            .map(|&so| (count(&|x: &GpuSlot| x.socket == so), so))
            .collect();
        // Tightest socket that holds all, else fullest sockets first.
        let fits = socket_order.iter().filter(|&&(c, _)| c >= n).min().copied();
        socket_order.sort_by_key(|&(c, so)| (std::cmp::Reverse(c), so));
        if let Some(f) = fits {
            socket_order.retain(|&x| x == f);
        }
        let mut out = Vec::with_capacity(n as usize);
        for (_, so) in socket_order {
            let mut sws: Vec<(u32, u32)> = dedup(
                free.iter()
                    .filter(|&&i| slots[i as usize].socket == so)
                    .map(|&i| slots[i as usize].switch),
            )
            .into_iter()
            .map(|sw| (count(&|x: &GpuSlot| x.switch == sw), sw))
            .collect();
            sws.sort_by_key(|&(c, sw)| (std::cmp::Reverse(c), sw));
            for (_, sw) in sws {
                for &i in free.iter().filter(|&&i| slots[i as usize].switch == sw) {
                    if out.len() < n as usize {
                        out.push(i);
                    }
                }
            }
        }
        out
    }
}
