//! Speed as a function of the CPU cores and memory a GPU is given (`coda calibrate`).
//!
//! Synergy (Mohan et al., OSDI'22) profiled twelve models' single-GPU throughput on a grid of 1–24
//! cores × 20.83–250 GB (`datasets/synergy_cpu_mem_sensitivity.csv`, normalised to the fair
//! share of 3 cores and 62.5 GB per GPU). Every profile there is exactly a **Leontief surface**:
//!
//! `S(c, m) = min(G(c), H(m))`
//!
//! with `G` the best throughput reachable at `c` cores (whatever the memory) and `H` the best at
//! `m` GB: the input pipeline is bound by either the cores that decode and augment or the page
//! cache that holds the data set, never by a mix. `G` and `H` are made monotone (a running
//! maximum: more cores never slow a job) and interpolated linearly between measured levels; below
//! the smallest level the throughput falls in proportion (half the cores, half the decoding),
//! above the largest it is flat (saturated). The surface is per GPU: a worker of `g` GPUs with
//! `c·g` cores and `m·g` GB runs at `S(c, m)`.
//!
//! **Families.** A coda model takes the surface of the Synergy model of the same network
//! ([`super::SYNERGY_PROXY`]); one with no such model takes the pointwise median over all
//! Synergy models (as its demand does). Family surfaces (pointwise medians of `G` and `H` over the
//! family's models) are fitted too, and scored by predicting each model from the rest of its
//! family: the error an unprofiled model of a known family should expect.
//!
//! **Held-out error** (rows of `fit_quality.csv` with `gpu = cpu-mem`): `core-out` drops one
//! core level of one model and predicts its five points from the remaining levels; `mem-out` does
//! the same for a memory level; `model-out` predicts a model from its family's other models.
//!
//! **Tiers.** What a scheduler may give a GPU of each model is a few levels of the surface (the
//! option count must stay bounded): the job's default demand; `min`, the fewest cores and least
//! memory keeping 60 % (`MIN_TIER_SPEED`) of the default's throughput; `sat`, the fewest cores and
//! least memory reaching 99 % of the surface's maximum; and, when `sat` needs more than twice the
//! default's cores, `mid`, the measured core level whose throughput is closest to halfway.

use serde::{Deserialize, Serialize};

/// Lowest tier's throughput as a share of the default demand's. A design choice, not a
/// measurement: it bounds how far a scheduler may starve a job of cores to fit another (a `min`
/// tier at 0.6 keeps every job above 60 % of its default pace).
pub(crate) const MIN_TIER_SPEED: f64 = 0.6;

/// Share of the surface's maximum a `sat` tier reaches (the profiles are rounded to 2 digits).
const SATURATION: f64 = 0.99;

/// Synergy model → family (by input pipeline: image decoding, text tokens, audio features).
pub(crate) const SYNERGY_FAMILY: [(&str, &str); 12] = [
    ("alexnet", "image"),
    ("mobilenet", "image"),
    ("res18", "image"),
    ("res50", "image"),
    ("shufflenet", "image"),
    // VAE trains on MNIST-sized images held in memory: image data, but no decoding.
    ("vae", "image"),
    ("bert", "language"),
    ("gnmt", "language"),
    ("lstm", "language"),
    ("transformer", "language"),
    ("deepspeech", "speech"),
    ("m5", "speech"),
];

/// Key of the pointwise median over every Synergy model.
pub(crate) const ALL_MODELS: &str = "median-all";

/// A throughput surface `min(G(cores), H(memory))` per GPU (see the module docs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CpuMemSurface {
    /// Cores per GPU of the measured levels, ascending.
    pub cores: Vec<f64>,
    /// Best throughput at each core level (non-decreasing), normalised to the fair share.
    pub by_cores: Vec<f64>,
    /// Memory per GPU of the measured levels, GB (decimal, as Synergy prints), ascending.
    pub mem_gb: Vec<f64>,
    /// Best throughput at each memory level (non-decreasing).
    pub by_mem: Vec<f64>,
}

/// Piecewise-linear, proportional below the first level, flat above the last.
fn interp(xs: &[f64], ys: &[f64], x: f64) -> f64 {
    match xs.iter().position(|&l| l >= x) {
        None => *ys.last().unwrap_or(&0.0),
        Some(0) => ys[0] * (x / xs[0]).max(0.0),
        Some(i) => {
            let t = (x - xs[i - 1]) / (xs[i] - xs[i - 1]);
            ys[i - 1] + t * (ys[i] - ys[i - 1])
        }
    }
}

fn running_max(v: &[f64]) -> Vec<f64> {
    v.iter()
        .scan(f64::NEG_INFINITY, |m, &x| {
            *m = m.max(x);
            Some(*m)
        })
        .collect()
}

impl CpuMemSurface {
    /// Throughput (fair share = 1) of a GPU with `cores` cores and `mem_gb` GB.
    pub fn throughput(&self, cores: f64, mem_gb: f64) -> f64 {
        interp(&self.cores, &self.by_cores, cores).min(interp(&self.mem_gb, &self.by_mem, mem_gb))
    }

    /// Throughput given `given` (cores, GiB per GPU) relative to `base`, of which the share
    /// `transfer` ([`super::Estimates::cpu_mem_transfer`]) carries over.
    pub fn relative_speed(&self, transfer: f64, base: (f64, f64), given: (f64, f64)) -> f64 {
        let at = |(c, m): (f64, f64)| self.throughput(c, m / GIB_PER_GB);
        let b = at(base);
        if b > 0.0 {
            (1.0 + transfer * (at(given) / b - 1.0)).max(1e-3)
        } else {
            1.0
        }
    }

    /// The highest throughput the surface reaches.
    pub fn max_throughput(&self) -> f64 {
        let g = self.by_cores.last().copied().unwrap_or(0.0);
        g.min(self.by_mem.last().copied().unwrap_or(0.0))
    }

    /// Fewest measured cores whose `G` reaches `level` (the largest level when none does).
    fn cores_for(&self, level: f64) -> f64 {
        let i = self.by_cores.iter().position(|&g| g >= level);
        self.cores[i.unwrap_or(self.cores.len() - 1)]
    }

    /// Least measured memory whose `H` reaches `level`.
    fn mem_for(&self, level: f64) -> f64 {
        let i = self.by_mem.iter().position(|&h| h >= level);
        self.mem_gb[i.unwrap_or(self.mem_gb.len() - 1)]
    }

    /// From a grid of measured points (every core level × every memory level).
    pub(crate) fn from_grid(cores: Vec<f64>, mem_gb: Vec<f64>, tput: &[Vec<f64>]) -> Self {
        let g: Vec<f64> = (0..cores.len())
            .map(|i| tput[i].iter().copied().fold(0.0, f64::max))
            .collect();
        let h: Vec<f64> = (0..mem_gb.len())
            .map(|j| tput.iter().map(|r| r[j]).fold(0.0, f64::max))
            .collect();
        CpuMemSurface {
            by_cores: running_max(&g),
            by_mem: running_max(&h),
            cores,
            mem_gb,
        }
    }
}

/// Which level of the surface a tier is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TierKind {
    /// Fewest cores and least memory keeping 60 % (`MIN_TIER_SPEED`) of the default's
    /// throughput.
    Min,
    /// Halfway (in throughput) between the default and `sat`.
    Mid,
    /// Fewest cores and least memory reaching the surface's maximum.
    Sat,
}

/// An alternative to a model's default per-GPU demand.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CpuMemTier {
    /// Which level.
    pub kind: TierKind,
    /// Cores per GPU.
    pub cpu_per_gpu: f64,
    /// Memory per GPU, GiB.
    pub mem_gib_per_gpu: f64,
    /// Throughput relative to the default demand's.
    pub speed: f64,
}

/// The tiers of a surface around a default per-GPU demand of `cpu` cores and `mem_gb` GB,
/// ordered by cores (`min` first); the default itself is not listed.
pub(crate) fn tiers(s: &CpuMemSurface, cpu: f64, mem_gb: f64) -> Vec<CpuMemTier> {
    let base = s.throughput(cpu, mem_gb);
    if base <= 0.0 {
        return Vec::new();
    }
    let at = |kind, level: f64| {
        let (c, m) = (s.cores_for(level), s.mem_for(level));
        CpuMemTier {
            kind,
            cpu_per_gpu: c,
            mem_gib_per_gpu: m * GIB_PER_GB,
            speed: s.throughput(c, m) / base,
        }
    };
    let mut out = Vec::new();
    let min = at(TierKind::Min, MIN_TIER_SPEED * base);
    if min.cpu_per_gpu < cpu || min.mem_gib_per_gpu < mem_gb * GIB_PER_GB - 1e-9 {
        out.push(min);
    }
    let top = s.max_throughput();
    let sat = at(TierKind::Sat, SATURATION * top);
    if sat.speed > 1.0 + 1e-9 {
        if sat.cpu_per_gpu > 2.0 * cpu {
            let half = 0.5 * (base + top);
            let mid = s
                .cores
                .iter()
                .zip(&s.by_cores)
                .filter(|&(&c, &g)| c > cpu && c < sat.cpu_per_gpu && g > base)
                .min_by(|a, b| (a.1 - half).abs().total_cmp(&(b.1 - half).abs()));
            if let Some((&c, &g)) = mid {
                let m = s.mem_for(g);
                out.push(CpuMemTier {
                    kind: TierKind::Mid,
                    cpu_per_gpu: c,
                    mem_gib_per_gpu: m * GIB_PER_GB,
                    speed: s.throughput(c, m) / base,
                });
            }
        }
        out.push(sat);
    }
    out
}

/// GiB per decimal GB (Synergy prints GB).
pub(crate) const GIB_PER_GB: f64 = 1e9 / (1u64 << 30) as f64;

/// The `gpu` column of the CPU/memory surfaces' rows in the fit-quality table.
pub const CPU_MEM_PROFILE: &str = "cpu-mem";
