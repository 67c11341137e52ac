//! An option's speeds and terms: what the performance model says of each (workers, PS, mode,
//! GPU type, tier) a job could run at, and the arithmetic that turns those speeds into the
//! objective's coefficients ([`OptionTerms`]).

use super::{
    ClusterShape, Colocation, JobOption, Mode, Objective, OptionShape, OptionTerms, colocation,
    full_pace,
};
use crate::model::{Architecture, ClusterSnapshot, GpuType, Job};
use crate::perf::{JobQuery, PerfModel, PlacementShape, ServerSize, Speed};

/// The speeds one option's terms are made of (the performance model's answers for its shape
/// alone, at its other PS-locality end, with one PCIe sharer, with one NIC sharer and, where
/// the objective reads it, next to a full server). They depend on the job's model, demand
/// and tiers, not on its progress: [`PricingCache`](super::PricingCache) keeps them across
/// rounds and only the arithmetic of the terms is redone.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct OptionSpeeds {
    /// The option's shape alone.
    alone: Speed,
    /// A PS job's speed at the other end of the locality interpolation.
    other_end: Option<Speed>,
    /// Whether `alone` is the all-local end (a PS job on one server).
    all_local: bool,
    /// With one job sharing its PCIe switches.
    one_pcie: Speed,
    /// With one NIC sharer (multi-server options).
    one_nic: Option<Speed>,
    /// Next to a full server of co-runners of its own model, and the PerfModel's slowdown
    /// factor `F(n)` of that server ([`Colocation::Progress`]'s coefficient).
    full_server: Option<(Speed, f64)>,
}

impl Objective {
    /// The shape an option is priced with. `Multi` is priced at its dearest split: the most
    /// GPUs one server can hold (`K − 1`, or a whole server of `server`), the rest elsewhere —
    /// every server all-reduces inside itself before the servers exchange, so the fullest one
    /// sets the intra-server part.
    fn shape(
        job: &Job,
        o: &OptionShape,
        ps_local: f64,
        server: Option<ServerSize>,
    ) -> Option<PlacementShape> {
        let (workers, ps, mode) = (o.workers, o.ps, o.mode);
        let g = job.demand.gpus_per_worker.max(1);
        let gpus = workers * g;
        let mut shape = match (job.arch, mode) {
            // A worker's GPUs share a server, so spreading needs two workers.
            (Architecture::AllReduce, Mode::Multi) if workers < 2 => return None,
            (Architecture::AllReduce, Mode::Multi) => {
                // Whole workers per server, the fullest server as full as it can be.
                let per = server.map_or(workers - 1, |s| (s.gpus / g).clamp(1, workers - 1));
                let split = if per == workers - 1 {
                    vec![per * g, g]
                } else {
                    crate::perf::packed(workers, per)
                        .into_iter()
                        .map(|w| w * g)
                        .collect()
                };
                PlacementShape::isolated(workers, 0, split)
            }
            (Architecture::AllReduce, Mode::CrossSocket) if gpus < 2 => return None,
            (Architecture::ParameterServer, Mode::CrossSocket) => return None,
            _ => PlacementShape::isolated(workers, ps, vec![gpus]),
        };
        shape.cross_socket_servers = u32::from(mode == Mode::CrossSocket);
        shape.ps_colocated_fraction = ps_local;
        shape.server = server;
        Some(shape)
    }

    /// Coefficients of option `o` of `job` on servers of `server`'s size (the largest of its
    /// GPU type; `None`: one large enough for all its GPUs), its workers at the option's
    /// CPU/memory tier, or `None` if the option is impossible or outside what the performance
    /// model prices (a tier the job lacks included). The in-service credit is measured against
    /// the option's own speed, as if it were the job's fastest; a
    /// [`RoundPricing`](super::RoundPricing) measures every option of a job against the job's
    /// full pace ([`RoundPricing::pace`](super::RoundPricing::pace)) — the same terms at
    /// `κ = 0`.
    pub fn option_terms(
        &self,
        perf: &dyn PerfModel,
        job: &Job,
        o: OptionShape,
        server: Option<ServerSize>,
    ) -> Option<OptionTerms> {
        self.option_terms_at_pace(perf, job, o, server, None)
    }

    /// [`Objective::option_terms`] with the in-service credit measured against `pace`, the
    /// job's full pace, if given (what a [`RoundPricing`](super::RoundPricing) does for an
    /// option outside the job's list), else against the option's own speed.
    pub(crate) fn option_terms_at_pace(
        &self,
        perf: &dyn PerfModel,
        job: &Job,
        o: OptionShape,
        server: Option<ServerSize>,
        pace: Option<f64>,
    ) -> Option<OptionTerms> {
        let speeds = Self::option_speeds(perf, job, &o, server, self.reads_full_server())?;
        let pace = pace.unwrap_or(speeds.alone.iterations_per_s);
        Some(self.terms_at(job, &o, &speeds, pace))
    }

    /// Whether this objective's terms read an option's speed next to a full server
    /// ([`Colocation::Progress`]).
    pub(crate) fn reads_full_server(&self) -> bool {
        self.colocation == Colocation::Progress
    }

    /// The speeds option `o`'s terms are made of (see [`OptionSpeeds`]; the one next to a full
    /// server if `full_server`), or `None` if the option is impossible or unpriced. They read
    /// the job's model, demand and tiers, never its progress.
    fn option_speeds(
        perf: &dyn PerfModel,
        job: &Job,
        o: &OptionShape,
        server: Option<ServerSize>,
        full_server: bool,
    ) -> Option<OptionSpeeds> {
        job.worker_share(o.tier)?;
        let q = JobQuery::of(job);
        // The whole step scales with the tier's speed (as the simulator runs it), so every
        // term below is priced at the cores and memory the option grants.
        let f = crate::perf::tier_speed(perf, job, o.tier);
        let speed = |sh: &PlacementShape| perf.speed(&q, &o.gpu_type, sh).map(|x| x.scaled(f));
        // PS jobs on one server have every PS next to every worker.
        let all_local = job.arch == Architecture::ParameterServer && o.mode == Mode::Single;
        let f_mode = if all_local { 1.0 } else { 0.0 };
        let shape = Self::shape(job, o, f_mode, server)?;
        let s = speed(&shape).ok()?;
        // A PS job's locality slope interpolates to the other end (no PS local, or all).
        let other_end = if job.arch == Architecture::ParameterServer {
            let end = if all_local { 0.0 } else { 1.0 };
            Some(speed(&Self::shape(job, o, end, server)?).ok()?)
        } else {
            None
        };
        let mut one_pcie = shape.clone();
        one_pcie.pcie_sharing_jobs = 1;
        let one_pcie = speed(&one_pcie).ok()?;
        // One NIC sharer, first-order: a sharer like this job itself (its own communication
        // share sets how often their transfers meet).
        let one_nic = if o.mode == Mode::Multi {
            let mut sh = shape.clone();
            sh.nic_competing_flows = perf.nic_competition(s.inter_comm_s / s.step_time_s);
            Some(speed(&sh).ok()?)
        } else {
            None
        };
        // Asked for only where a term reads it (a speed per option is a quarter of pricing),
        // and not where co-location slows nothing: the term is then zero whatever its
        // coefficient.
        let full_server = if full_server {
            let n = colocation::full_server_co_runners(server);
            let factor = perf.colocation_slowdown_among(&job.model, &job.model, &o.gpu_type, n);
            if factor > 1.0 {
                let mut sh = shape.clone();
                sh.co_runners = vec![vec![job.model.clone(); n as usize]];
                Some((speed(&sh).ok()?, factor))
            } else {
                None
            }
        } else {
            None
        };
        Some(OptionSpeeds {
            alone: s,
            other_end,
            all_local,
            one_pcie,
            one_nic,
            full_server,
        })
    }

    /// Option `o`'s terms for `job` as it stands now (its remaining work) from the option's
    /// speeds: arithmetic only, so that a policy pricing the same job round after round asks
    /// the performance model once ([`PricingCache`](super::PricingCache)).
    fn terms_at(&self, job: &Job, o: &OptionShape, sp: &OptionSpeeds, pace: f64) -> OptionTerms {
        let s = &sp.alone;
        // Every term of the option is a difference of values measured against the same full
        // pace, so contention costs credit too.
        let at = |x: &Speed| self.value(job, x, pace);
        let here = self.value(job, s, pace);
        let (base, slope) = match &sp.other_end {
            // One end of the interpolation is the shape priced alone.
            Some(other) => {
                let (b0, b1) = if sp.all_local {
                    (at(other), here)
                } else {
                    (here, at(other))
                };
                (b0, (b1 - b0) / f64::from(o.workers * o.ps))
            }
            None => (here, 0.0),
        };
        let uncapped = s.iterations_per_s * self.round_s < job.remaining_iterations();
        let coloc_coef = match (self.colocation, &sp.full_server) {
            // The secant of the value lost: `(F − 1) · A` is what a full server of its own
            // model takes from the option (a capped job, finishing anyway, loses nothing).
            (Colocation::Progress, Some((full, factor))) => {
                ((here - at(full)) / (factor - 1.0)).max(0.0)
            }
            (Colocation::Progress, None) => 0.0,
            _ if uncapped => here * s.compute_s / s.step_time_s,
            _ => 0.0,
        };
        OptionTerms {
            base,
            local_pair_slope: slope,
            coloc_coef,
            pcie_coef: here - at(&sp.one_pcie),
            nic_coef: sp.one_nic.as_ref().map_or(0.0, |x| here - at(x)),
        }
    }

    /// Every option of a job on this cluster: workers and PS in range, each mode, each allowed
    /// GPU type present, each CPU/memory tier the job offers (the demand's options first, then
    /// tier 1's, …: a job without tiers has exactly the options it always had), priced by the
    /// performance model.
    pub fn job_options(
        &self,
        perf: &dyn PerfModel,
        snapshot: &ClusterSnapshot,
        job: &Job,
    ) -> Vec<JobOption> {
        self.for_round(snapshot)
            .job_options_in(perf, &ClusterShape::of(&snapshot.cluster), job)
    }

    /// [`Objective::job_options`] on a cluster summarised once (what a round priced for many
    /// jobs does: the summary is the only part that reads every server).
    pub(crate) fn job_options_in(
        &self,
        perf: &dyn PerfModel,
        shape: &ClusterShape,
        job: &Job,
    ) -> Vec<JobOption> {
        self.options_at(
            job,
            &Self::option_speeds_in(perf, shape, job, self.reads_full_server()),
        )
    }

    /// A job's options with their terms at its progress now, from their speeds
    /// ([`Objective::option_speeds_in`]).
    pub(crate) fn options_at(
        &self,
        job: &Job,
        speeds: &[(OptionShape, OptionSpeeds)],
    ) -> Vec<JobOption> {
        let pace = full_pace(speeds.iter().map(|(_, sp)| sp.alone.iterations_per_s));
        speeds
            .iter()
            .map(|(o, sp)| JobOption {
                workers: o.workers,
                ps: o.ps,
                mode: o.mode,
                gpu_type: o.gpu_type,
                tier: o.tier,
                iterations_per_s: sp.alone.iterations_per_s,
                terms: self.terms_at(job, o, sp, pace),
            })
            .collect()
    }

    /// The options of [`Objective::job_options_in`] (in its order) with the speeds their terms
    /// are made of (the one next to a full server if `full_server`): what does not change
    /// while the job runs.
    pub(crate) fn option_speeds_in(
        perf: &dyn PerfModel,
        shape: &ClusterShape,
        job: &Job,
        full_server: bool,
    ) -> Vec<(OptionShape, OptionSpeeds)> {
        let g = job.demand.gpus_per_worker;
        let types: Vec<&(GpuType, Vec<(u32, u64)>)> = shape
            .types
            .iter()
            .filter(|(t, sizes)| job.allows_gpu(t) && sizes.iter().any(|&(n, _)| n >= g))
            .collect();
        let modes: &[Mode] = match job.arch {
            Architecture::AllReduce if shape.multi_socket => {
                &[Mode::Single, Mode::CrossSocket, Mode::Multi]
            }
            Architecture::AllReduce => &[Mode::Single, Mode::Multi],
            Architecture::ParameterServer => &[Mode::Single, Mode::Multi],
        };
        let (measured_w, measured_p) = perf.task_limits(job).unwrap_or((u32::MAX, u32::MAX));
        let p_hi = job
            .ps
            .max
            .min(u32::try_from(shape.ps_slots(job)).unwrap_or(u32::MAX))
            .min(measured_p)
            .max(job.ps.min);
        let mut out = Vec::new();
        for tier in 0..=u8::try_from(job.tiers.len()).unwrap_or(u8::MAX) {
            for (t, sizes) in &types {
                let slots: u64 = sizes
                    .iter()
                    .map(|&(n, c)| c * u64::from(n / g.max(1)))
                    .sum();
                let w_hi = job
                    .workers
                    .max
                    .min(u32::try_from(slots).unwrap_or(u32::MAX))
                    .min(measured_w);
                for w in job.workers.min..=w_hi {
                    for p in job.ps.min..=p_hi {
                        for &mode in modes {
                            if mode == Mode::Multi && !shape.multi_server {
                                continue;
                            }
                            let o = OptionShape {
                                workers: w,
                                ps: p,
                                mode,
                                gpu_type: *t,
                                tier,
                            };
                            if let Some(sp) =
                                Self::option_speeds(perf, job, &o, shape.largest(t), full_server)
                            {
                                out.push((o, sp));
                            }
                        }
                    }
                }
            }
        }
        out
    }
}
