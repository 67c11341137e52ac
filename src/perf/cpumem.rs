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
//! memory keeping [`MIN_TIER_SPEED`] of the default's throughput; `sat`, the fewest cores and
//! least memory reaching 99 % of the surface's maximum; and, when `sat` needs more than twice the
//! default's cores, `mid`, the measured core level whose throughput is closest to halfway.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::params::FitQuality;
use crate::error::{Error, Result};
use crate::util::csvio::CsvFile;

/// Lowest tier's throughput as a share of the default demand's. A design choice, not a
/// measurement: it bounds how far a scheduler may starve a job of cores to fit another (a `min`
/// tier at 0.6 keeps every job above 60 % of its default pace).
pub const MIN_TIER_SPEED: f64 = 0.6;

/// Share of the surface's maximum a `sat` tier reaches (the profiles are rounded to 2 digits).
const SATURATION: f64 = 0.99;

/// Synergy model → family (by input pipeline: image decoding, text tokens, audio features).
pub const SYNERGY_FAMILY: [(&str, &str); 12] = [
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
pub const ALL_MODELS: &str = "median-all";

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
    fn from_grid(cores: Vec<f64>, mem_gb: Vec<f64>, tput: &[Vec<f64>]) -> Self {
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

    /// The pointwise median of surfaces measured on the same levels.
    fn median_of(parts: &[&CpuMemSurface]) -> Self {
        let med = |f: &dyn Fn(&CpuMemSurface) -> &Vec<f64>| -> Vec<f64> {
            (0..f(parts[0]).len())
                .map(|i| {
                    super::calibrate::median(&parts.iter().map(|s| f(s)[i]).collect::<Vec<_>>())
                })
                .collect()
        };
        CpuMemSurface {
            cores: parts[0].cores.clone(),
            by_cores: med(&|s| &s.by_cores),
            mem_gb: parts[0].mem_gb.clone(),
            by_mem: med(&|s| &s.by_mem),
        }
    }
}

/// Which level of the surface a tier is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TierKind {
    /// Fewest cores and least memory keeping [`MIN_TIER_SPEED`] of the default's throughput.
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

/// Every Synergy model's surface, the family and all-model medians, and their held-out errors.
pub(crate) fn fit_surfaces(
    dir: &Path,
) -> Result<(BTreeMap<String, CpuMemSurface>, Vec<FitQuality>)> {
    let path = dir.join("synergy_cpu_mem_sensitivity.csv");
    let f = CsvFile::open(&path, &["model", "cpus", "mem_gb", "norm_throughput"])?;
    let mut points: BTreeMap<String, BTreeMap<(u64, u64), f64>> = BTreeMap::new();
    for r in f.rows() {
        let (c, m, t) = (
            r.positive("cpus")?,
            r.positive("mem_gb")?,
            r.nonneg("norm_throughput")?,
        );
        points
            .entry(r.str("model").to_string())
            .or_default()
            .insert((c.to_bits(), m.to_bits()), t);
    }
    let mut grids = BTreeMap::new();
    for (model, pts) in &points {
        let mut cores: Vec<f64> = pts.keys().map(|k| f64::from_bits(k.0)).collect();
        let mut mems: Vec<f64> = pts.keys().map(|k| f64::from_bits(k.1)).collect();
        for v in [&mut cores, &mut mems] {
            v.sort_by(f64::total_cmp);
            v.dedup();
        }
        let grid: Option<Vec<Vec<f64>>> = cores
            .iter()
            .map(|c| {
                mems.iter()
                    .map(|m| pts.get(&(c.to_bits(), m.to_bits())).copied())
                    .collect()
            })
            .collect();
        let grid = grid.ok_or_else(|| Error::Calibration {
            model: model.clone(),
            reason: format!(
                "{}: not every cores × memory level is measured",
                path.display()
            ),
        })?;
        grids.insert(model.clone(), (cores, mems, grid));
    }
    let mut surfaces: BTreeMap<String, CpuMemSurface> = grids
        .iter()
        .map(|(m, (c, g, t))| (m.clone(), CpuMemSurface::from_grid(c.clone(), g.clone(), t)))
        .collect();
    let same_levels =
        |a: &CpuMemSurface, b: &CpuMemSurface| a.cores == b.cores && a.mem_gb == b.mem_gb;
    let first = surfaces
        .values()
        .next()
        .cloned()
        .ok_or_else(|| Error::Calibration {
            model: "cpu-mem".into(),
            reason: format!("{}: no rows", path.display()),
        })?;
    if let Some((m, _)) = surfaces.iter().find(|(_, s)| !same_levels(s, &first)) {
        return Err(Error::Calibration {
            model: m.clone(),
            reason: format!("{}: measured on other levels than the rest", path.display()),
        });
    }
    let family_of = |m: &str| {
        SYNERGY_FAMILY
            .iter()
            .find(|(k, _)| *k == m)
            .map(|(_, f)| *f)
    };
    let mut quality = Vec::new();
    let mut families: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for m in grids.keys() {
        families
            .entry(family_of(m).unwrap_or("other"))
            .or_default()
            .push(m);
    }
    let mut extra = BTreeMap::new();
    for (fam, members) in &families {
        let parts: Vec<&CpuMemSurface> = members.iter().map(|m| &surfaces[*m]).collect();
        extra.insert(format!("family-{fam}"), CpuMemSurface::median_of(&parts));
        // Each member predicted from the rest of its family.
        let mut held = Vec::new();
        for m in members {
            let rest: Vec<&CpuMemSurface> = members
                .iter()
                .filter(|o| *o != m)
                .map(|o| &surfaces[*o])
                .collect();
            if rest.is_empty() {
                continue;
            }
            let pred = CpuMemSurface::median_of(&rest);
            held.extend(apes(&pred, &grids[*m]));
        }
        quality.push(row(
            &format!("family-{fam}"),
            "model-out",
            members.len() * 45,
            &held,
            0.0,
        ));
    }
    let all: Vec<&CpuMemSurface> = surfaces.values().collect();
    extra.insert(ALL_MODELS.to_string(), CpuMemSurface::median_of(&all));
    for (m, (cores, mems, grid)) in &grids {
        let fit = &surfaces[m];
        let train = mean(&apes(fit, &grids[m]));
        let mut core_out = Vec::new();
        for i in 0..cores.len() {
            let keep: Vec<usize> = (0..cores.len()).filter(|&k| k != i).collect();
            let s = CpuMemSurface::from_grid(
                keep.iter().map(|&k| cores[k]).collect(),
                mems.clone(),
                &keep.iter().map(|&k| grid[k].clone()).collect::<Vec<_>>(),
            );
            core_out
                .extend((0..mems.len()).map(|j| ape(s.throughput(cores[i], mems[j]), grid[i][j])));
        }
        let mut mem_out = Vec::new();
        for j in 0..mems.len() {
            let keep: Vec<usize> = (0..mems.len()).filter(|&k| k != j).collect();
            let s = CpuMemSurface::from_grid(
                cores.clone(),
                keep.iter().map(|&k| mems[k]).collect(),
                &grid
                    .iter()
                    .map(|r| keep.iter().map(|&k| r[k]).collect())
                    .collect::<Vec<_>>(),
            );
            mem_out
                .extend((0..cores.len()).map(|i| ape(s.throughput(cores[i], mems[j]), grid[i][j])));
        }
        let n = cores.len() * mems.len();
        quality.push(row(m, "core-out", n, &core_out, train));
        quality.push(row(m, "mem-out", n, &mem_out, train));
    }
    surfaces.extend(extra);
    Ok((surfaces, quality))
}

fn ape(pred: f64, obs: f64) -> f64 {
    (pred - obs).abs() / obs.max(1e-12)
}

fn apes(s: &CpuMemSurface, (cores, mems, grid): &(Vec<f64>, Vec<f64>, Vec<Vec<f64>>)) -> Vec<f64> {
    let mut out = Vec::with_capacity(cores.len() * mems.len());
    for (i, c) in cores.iter().enumerate() {
        for (j, m) in mems.iter().enumerate() {
            out.push(ape(s.throughput(*c, *m), grid[i][j]));
        }
    }
    out
}

fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

fn row(model: &str, split: &str, rows: usize, held: &[f64], train: f64) -> FitQuality {
    FitQuality {
        model: model.to_string(),
        gpu: CPU_MEM_PROFILE.into(),
        split: split.into(),
        rows,
        mape: (!held.is_empty()).then(|| mean(held)),
        median_ape: (!held.is_empty()).then(|| super::calibrate::median(held)),
        train_mape: Some(train),
    }
}

/// The `gpu` column of the CPU/memory surfaces' rows in the fit-quality table.
pub const CPU_MEM_PROFILE: &str = "cpu-mem";

#[cfg(test)]
mod tests {
    use super::*;

    fn datasets() -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets")
    }

    #[test]
    fn surfaces_reproduce_the_profiles_and_are_monotone() {
        let (s, q) = fit_surfaces(&datasets()).unwrap();
        for r in q.iter().filter(|r| r.split == "core-out") {
            // Every profile is exactly Leontief: the in-sample error is nil.
            assert!(
                r.train_mape.unwrap() < 1e-12,
                "{}: {:?}",
                r.model,
                r.train_mape
            );
        }
        for (m, surf) in &s {
            let mut last = 0.0;
            for c in [0.5, 1.0, 1.5, 2.0, 3.0, 4.5, 7.0, 12.0, 30.0] {
                let t = surf.throughput(c, 250.0);
                assert!(t + 1e-12 >= last, "{m}: not monotone in cores at {c}");
                last = t;
            }
            assert!(surf.throughput(100.0, 1000.0) <= surf.max_throughput() + 1e-12);
        }
        // alexnet: 2.94× at 12 cores and 125 GB, 0.1 at 1 core and 20.83 GB.
        let a = &s["alexnet"];
        assert!((a.throughput(12.0, 125.0) - 2.94).abs() < 1e-12);
        assert!((a.throughput(1.0, 20.83) - 0.1).abs() < 1e-12);
        assert!((a.throughput(1.5, 250.0) - 0.48).abs() < 1e-12);
    }

    #[test]
    fn tiers_bracket_the_default_and_keep_their_promises() {
        let (s, _) = fit_surfaces(&datasets()).unwrap();
        // An image model at the fair share: a cheaper tier, and more cores buy speed.
        let t = tiers(&s["alexnet"], 3.0, 62.5);
        let kinds: Vec<TierKind> = t.iter().map(|t| t.kind).collect();
        assert_eq!(kinds, [TierKind::Min, TierKind::Mid, TierKind::Sat]);
        assert!(t[0].speed >= MIN_TIER_SPEED && t[0].speed < 1.0);
        assert!((t[2].speed - 2.94).abs() < 1e-9 && t[2].cpu_per_gpu == 12.0);
        assert!(t[1].speed > 1.0 && t[1].speed < t[2].speed);
        // A language model at 1 core and the least memory: nothing to buy, nothing to give.
        assert!(tiers(&s["bert"], 1.0, 20.83).is_empty());
    }
}
