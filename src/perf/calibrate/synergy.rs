//! The CPU/memory throughput surfaces fitted to `synergy_cpu_mem_sensitivity.csv`, with their
//! held-out errors (the surface itself and the tiers: [`crate::perf::cpumem`]).

use std::collections::BTreeMap;
use std::path::Path;

use super::median;
use crate::error::{Error, Result};
use crate::perf::cpumem::{ALL_MODELS, CPU_MEM_PROFILE, CpuMemSurface, SYNERGY_FAMILY};
use crate::perf::params::FitQuality;
use crate::util::csvio::CsvFile;

/// The pointwise median of surfaces measured on the same levels.
fn median_of(parts: &[&CpuMemSurface]) -> CpuMemSurface {
    let med = |f: &dyn Fn(&CpuMemSurface) -> &Vec<f64>| -> Vec<f64> {
        (0..f(parts[0]).len())
            .map(|i| median(&parts.iter().map(|s| f(s)[i]).collect::<Vec<_>>()))
            .collect()
    };
    CpuMemSurface {
        cores: parts[0].cores.clone(),
        by_cores: med(&|s| &s.by_cores),
        mem_gb: parts[0].mem_gb.clone(),
        by_mem: med(&|s| &s.by_mem),
    }
}

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
        extra.insert(format!("family-{fam}"), median_of(&parts));
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
            let pred = median_of(&rest);
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
    extra.insert(ALL_MODELS.to_string(), median_of(&all));
    for (m, (cores, mems, grid)) in &grids {
        let fit = &surfaces[m];
        let train = mean_or_zero(&apes(fit, &grids[m]));
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

fn mean_or_zero(v: &[f64]) -> f64 {
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
        mape: (!held.is_empty()).then(|| mean_or_zero(held)),
        median_ape: (!held.is_empty()).then(|| median(held)),
        train_mape: Some(train),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perf::cpumem::{MIN_TIER_SPEED, TierKind, tiers};

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
