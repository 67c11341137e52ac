//! The policy's two networks as plain matrices (nalgebra), read from a safetensors file: no
//! training backend is needed to decide.
//!
//! Level 1 is a deep set: every job's features go through a shared embedding `φ`, their mean
//! summarises the round, and every (job, option) row is scored by an MLP from its own features
//! and that summary — so one model serves any number of jobs and the order of jobs does not
//! matter. Level 2 scores each candidate server with an MLP on that server's row alone, so its
//! cost grows linearly with servers (and identical rows share one score).
//!
//! File layout (row-major f32, `[out, in]` weights, as libtorch writes them): `l1.mean`,
//! `l1.std` (`[L1_WIDTH]`), `l1.phi.{weight,bias}`, `l1.fc1`, `l1.fc2`, `l1.out`, `l2.mean`,
//! `l2.std`, `l2.fc1`, `l2.fc2`, `l2.out`; optionally the tier head's `tier.mean`, `tier.std`,
//! `tier.fc1`, `tier.fc2`, `tier.out`; metadata `format = coda-policy`, `version`, and the
//! feature lists (three, and `tier_features` with a tier head). The option, placement and tier
//! lists must equal the code's; the job features may be any of the code's, in any order — a
//! file trained before a job feature existed reads the ones it names, and
//! [`PolicyNet::widened`] gives the same function over every job feature (what training from
//! such a file starts from).

use std::collections::HashMap;
use std::path::Path;

use nalgebra::DVector;
use safetensors::tensor::{Dtype, SafeTensors};

use super::features::{JOB_FEATURES, L1_WIDTH, Level1Flat, OPTION_FEATURES, PLACE_FEATURES};
use super::layers::{Dense, EMBED, HIDDEN, Scratch, mlp, normalise, relu};
use super::tiers::{TIER_FEATURES, TierHead};
use crate::error::{Error, Result};

/// Version of the weights layout; a file of another version is refused.
pub const FORMAT_VERSION: &str = "1";

/// The two levels' weights and input normalisation.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyNet {
    /// The job features the network reads, as indices in [`JOB_FEATURES`] in its input order:
    /// every one, in order, for a network trained by this build; fewer for a file trained
    /// before some existed.
    pub job_inputs: Vec<usize>,
    /// Level-1 row normalisation: mean and standard deviation per feature (the job features
    /// of `job_inputs`, then [`OPTION_FEATURES`]).
    pub l1_mean: DVector<f32>,
    /// See `l1_mean`.
    pub l1_std: DVector<f32>,
    /// Job embedding.
    pub phi: Dense,
    /// Level-1 MLP: `[row, summary] → hidden → hidden → 1`.
    pub l1: [Dense; 3],
    /// Level-2 row normalisation.
    pub l2_mean: DVector<f32>,
    /// See `l2_mean`.
    pub l2_std: DVector<f32>,
    /// Level-2 MLP: `row → hidden → hidden → 1`.
    pub l2: [Dense; 3],
    /// Level 1's CPU/memory tier choice, when the file has one ([`TierHead`]).
    pub tier: Option<TierHead>,
}

impl PolicyNet {
    /// A network of the default widths with seeded random weights (uniform in ±1/√fan-in, as
    /// libtorch initialises linear layers) and identity normalisation: the trainer's starting
    /// point, and what the property tests decode with to show that validity never depends on
    /// the weights.
    pub fn untrained(seed: u64) -> Self {
        use rand::SeedableRng;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mut dense = |inputs: usize, outputs: usize| Dense::random(inputs, outputs, &mut rng);
        let nj = JOB_FEATURES.len();
        let np = PLACE_FEATURES.len();
        PolicyNet {
            job_inputs: (0..nj).collect(),
            l1_mean: DVector::zeros(L1_WIDTH),
            l1_std: DVector::from_element(L1_WIDTH, 1.0),
            phi: dense(nj, EMBED),
            l1: [
                dense(L1_WIDTH + EMBED, HIDDEN),
                dense(HIDDEN, HIDDEN),
                dense(HIDDEN, 1),
            ],
            l2_mean: DVector::zeros(np),
            l2_std: DVector::from_element(np, 1.0),
            l2: [dense(np, HIDDEN), dense(HIDDEN, HIDDEN), dense(HIDDEN, 1)],
            tier: None,
        }
    }

    /// Level-1 logits: per job, one per candidate row (its options, then wait).
    pub fn level1_logits(&self, jobs: &[Vec<f32>], candidates: &[Vec<Vec<f32>>]) -> Vec<Vec<f32>> {
        let nj = JOB_FEATURES.len();
        let flat = Level1Flat {
            jobs: jobs.iter().flat_map(|r| r[..nj].iter().copied()).collect(),
            rows: candidates
                .iter()
                .flatten()
                .flat_map(|r| r[..L1_WIDTH].iter().copied())
                .collect(),
            counts: candidates.iter().map(Vec::len).collect(),
        };
        self.level1_logits_flat(&flat)
    }

    /// Whether the network reads every job feature of this build, in order (its rows are then
    /// read as the features give them).
    fn reads_all_jobs(&self) -> bool {
        self.job_inputs.len() == JOB_FEATURES.len()
            && self.job_inputs.iter().enumerate().all(|(i, &c)| i == c)
    }

    /// [`PolicyNet::level1_logits`] of rows laid end to end.
    pub(crate) fn level1_logits_flat(&self, flat: &Level1Flat) -> Vec<Vec<f32>> {
        if self.reads_all_jobs() {
            return self.level1_forward(&flat.jobs, &flat.rows, &flat.counts);
        }
        // A network of fewer job features: its own columns of every job and row.
        let nj = JOB_FEATURES.len();
        let pick = |job: &[f32], out: &mut Vec<f32>| {
            out.extend(self.job_inputs.iter().map(|&c| job[c]));
        };
        let mut jobs = Vec::with_capacity(flat.counts.len() * self.job_inputs.len());
        for job in flat.jobs.chunks(nj) {
            pick(job, &mut jobs);
        }
        let width = self.job_inputs.len() + OPTION_FEATURES.len();
        let mut rows = Vec::with_capacity(flat.rows.len() / L1_WIDTH * width);
        for r in flat.rows.chunks(L1_WIDTH) {
            pick(&r[..nj], &mut rows);
            rows.extend_from_slice(&r[nj..]);
        }
        self.level1_forward(&jobs, &rows, &flat.counts)
    }

    /// Level 1 on rows of the network's own features (`job_inputs`, then the options').
    fn level1_forward(&self, jobs: &[f32], rows: &[f32], counts: &[usize]) -> Vec<Vec<f32>> {
        let nj = self.job_inputs.len();
        let width = nj + OPTION_FEATURES.len();
        let n = counts.len();
        let mut s = Scratch::default();
        s.input.extend_from_slice(jobs);
        normalise(
            &mut s.input,
            &self.l1_mean.as_slice()[..nj],
            &self.l1_std.as_slice()[..nj],
        );
        let mut h = Vec::new();
        self.phi.forward_rows(&s.input, n, &mut h);
        relu(&mut h);
        // The deep set's summary: the mean embedding (each column summed in job order).
        let e = self.phi.outputs();
        let summary: Vec<f32> = (0..e)
            .map(|c| {
                if n == 0 {
                    return 0.0;
                }
                h.iter().skip(c).step_by(e).fold(0.0, |a, &b| a + b) / n as f32
            })
            .collect();
        let total = counts.iter().sum();
        s.input.clear();
        s.input.reserve(total * (width + e));
        for r in rows.chunks(width) {
            let at = s.input.len();
            s.input.extend_from_slice(r);
            normalise(
                &mut s.input[at..],
                self.l1_mean.as_slice(),
                self.l1_std.as_slice(),
            );
            s.input.extend_from_slice(&summary);
        }
        let mut out = Vec::new();
        mlp(&self.l1, total, &mut s, &mut out);
        let mut it = out.iter().copied();
        counts
            .iter()
            .map(|&c| it.by_ref().take(c).collect())
            .collect()
    }

    /// The same function over every job feature of this build, in order: the features the
    /// network did not read get zero weights (and mean 0, standard deviation 1), so the logits
    /// are the same. What training from an older file starts from.
    pub fn widened(&self) -> PolicyNet {
        if self.reads_all_jobs() {
            return self.clone();
        }
        let (nj, no) = (JOB_FEATURES.len(), OPTION_FEATURES.len());
        let mut mean = DVector::zeros(nj + no);
        let mut std = DVector::from_element(nj + no, 1.0);
        for (i, &c) in self.job_inputs.iter().enumerate() {
            mean[c] = self.l1_mean[i];
            std[c] = self.l1_std[i];
        }
        let own = self.job_inputs.len();
        for k in 0..no {
            mean[nj + k] = self.l1_mean[own + k];
            std[nj + k] = self.l1_std[own + k];
        }
        // Column `i` of the old input goes to column `to(i)` of the new one.
        let to = |i: usize| match i {
            i if i < own => self.job_inputs[i],
            i => i - own + nj,
        };
        let widen = |d: &Dense, inputs: usize| {
            let w = d.weight();
            let mut out = nalgebra::DMatrix::zeros(w.nrows(), inputs);
            for i in 0..w.ncols() {
                out.set_column(to(i), &w.column(i));
            }
            Dense::new(out, d.bias().to_vec())
        };
        let mut net = self.clone();
        net.job_inputs = (0..nj).collect();
        net.l1_mean = mean;
        net.l1_std = std;
        net.phi = widen(&self.phi, nj);
        net.l1[0] = widen(&self.l1[0], nj + no + self.phi.outputs());
        net
    }

    /// Level-2 scores of `rows`, [`PLACE_FEATURES`] values each, one row after another.
    pub fn level2_scores(&self, rows: &[f32]) -> Vec<f32> {
        let mut out = Vec::new();
        self.level2_scores_into(rows, &mut Scratch::default(), &mut out);
        out
    }

    /// [`PolicyNet::level2_scores`] into `out`, with buffers kept by the caller.
    pub(crate) fn level2_scores_into(&self, rows: &[f32], s: &mut Scratch, out: &mut Vec<f32>) {
        let w = PLACE_FEATURES.len();
        let n = rows.len() / w;
        s.input.clear();
        s.input.extend_from_slice(&rows[..n * w]);
        normalise(
            &mut s.input,
            self.l2_mean.as_slice(),
            self.l2_std.as_slice(),
        );
        mlp(&self.l2, n, s, out);
    }

    /// Every tensor by its file name, with its shape and row-major data (what a trainer
    /// exports, what [`PolicyNet::from_tensors`] reads).
    pub fn tensors(&self) -> Vec<(String, Vec<usize>, Vec<f32>)> {
        let mut out = Vec::new();
        let vec = |out: &mut Vec<_>, name: &str, v: &DVector<f32>| {
            out.push((name.to_string(), vec![v.len()], v.iter().copied().collect()));
        };
        let dense = |out: &mut Vec<_>, name: &str, d: &Dense| out.extend(d.named(name));
        vec(&mut out, "l1.mean", &self.l1_mean);
        vec(&mut out, "l1.std", &self.l1_std);
        dense(&mut out, "l1.phi", &self.phi);
        for (d, n) in self.l1.iter().zip(["l1.fc1", "l1.fc2", "l1.out"]) {
            dense(&mut out, n, d);
        }
        vec(&mut out, "l2.mean", &self.l2_mean);
        vec(&mut out, "l2.std", &self.l2_std);
        for (d, n) in self.l2.iter().zip(["l2.fc1", "l2.fc2", "l2.out"]) {
            dense(&mut out, n, d);
        }
        if let Some(t) = &self.tier {
            out.extend(t.tensors());
        }
        out
    }

    /// The network from named tensors of this build's features (shapes checked against each
    /// other and against the feature lists); `origin` names the source in errors.
    pub fn from_tensors(
        tensors: &HashMap<String, (Vec<usize>, Vec<f32>)>,
        origin: &str,
    ) -> Result<Self> {
        Self::reading(tensors, (0..JOB_FEATURES.len()).collect(), origin)
    }

    /// [`PolicyNet::from_tensors`] of a network reading the job features `job_inputs`
    /// (indices in [`JOB_FEATURES`], distinct).
    fn reading(
        tensors: &HashMap<String, (Vec<usize>, Vec<f32>)>,
        job_inputs: Vec<usize>,
        origin: &str,
    ) -> Result<Self> {
        let bad = |reason: String| Error::ModelFile {
            path: origin.to_string(),
            reason,
        };
        let get = |name: &str| {
            tensors
                .get(name)
                .ok_or_else(|| bad(format!("missing tensor `{name}`")))
        };
        let vector = |name: &str, len: usize| -> Result<DVector<f32>> {
            let (shape, data) = get(name)?;
            if shape != &[len] {
                return Err(bad(format!(
                    "tensor `{name}` has shape {shape:?}, expected [{len}]"
                )));
            }
            Ok(DVector::from_vec(data.clone()))
        };
        let dense = |name: &str, inputs: usize| Dense::from_named(tensors, name, inputs, origin);
        let positive = |name: &str, v: &DVector<f32>| -> Result<()> {
            if v.iter().all(|x| x.is_finite() && *x > 0.0) {
                Ok(())
            } else {
                Err(bad(format!("tensor `{name}` must be finite and positive")))
            }
        };
        let width = job_inputs.len() + OPTION_FEATURES.len();
        let l1_mean = vector("l1.mean", width)?;
        let l1_std = vector("l1.std", width)?;
        positive("l1.std", &l1_std)?;
        let phi = dense("l1.phi", job_inputs.len())?;
        let fc1 = dense("l1.fc1", width + phi.outputs())?;
        let fc2 = dense("l1.fc2", fc1.outputs())?;
        let out1 = dense("l1.out", fc2.outputs())?;
        let l2_mean = vector("l2.mean", PLACE_FEATURES.len())?;
        let l2_std = vector("l2.std", PLACE_FEATURES.len())?;
        positive("l2.std", &l2_std)?;
        let g1 = dense("l2.fc1", PLACE_FEATURES.len())?;
        let g2 = dense("l2.fc2", g1.outputs())?;
        let out2 = dense("l2.out", g2.outputs())?;
        for (name, d) in [("l1.out", &out1), ("l2.out", &out2)] {
            if d.outputs() != 1 {
                return Err(bad(format!(
                    "`{name}` must have one output, has {}",
                    d.outputs()
                )));
            }
        }
        let net = PolicyNet {
            job_inputs,
            l1_mean,
            l1_std,
            phi,
            l1: [fc1, fc2, out1],
            l2_mean,
            l2_std,
            l2: [g1, g2, out2],
            tier: TierHead::from_tensors(tensors, origin)?,
        };
        if net
            .tensors()
            .iter()
            .any(|(_, _, d)| d.iter().any(|x| !x.is_finite()))
        {
            return Err(bad("a weight is not finite".into()));
        }
        Ok(net)
    }

    /// The network from safetensors bytes; `origin` names the source in errors.
    pub fn from_safetensors(bytes: &[u8], origin: &str) -> Result<Self> {
        let bad = |reason: String| Error::ModelFile {
            path: origin.to_string(),
            reason,
        };
        let (_, meta) = SafeTensors::read_metadata(bytes)
            .map_err(|e| bad(format!("not a safetensors file: {e}")))?;
        let md = meta.metadata().clone().unwrap_or_default();
        let field = |k: &str| md.get(k).map(String::as_str).unwrap_or("");
        if field("format") != "coda-policy" {
            return Err(bad(format!(
                "metadata `format` = {:?}, expected \"coda-policy\"",
                field("format")
            )));
        }
        if field("version") != FORMAT_VERSION {
            return Err(bad(format!(
                "metadata `version` = {:?}, this build reads version {FORMAT_VERSION}",
                field("version")
            )));
        }
        let mut job_inputs = Vec::new();
        for name in field("job_features").split(',') {
            match JOB_FEATURES.iter().position(|f| *f == name) {
                Some(c) if !job_inputs.contains(&c) => job_inputs.push(c),
                _ => {
                    return Err(bad(format!(
                        "metadata `job_features` = {:?}: `{name}` is not one of this build's \
                         job features ({}), or is named twice",
                        field("job_features"),
                        JOB_FEATURES.join(",")
                    )));
                }
            }
        }
        for (k, names) in [
            ("option_features", &OPTION_FEATURES[..]),
            ("place_features", &PLACE_FEATURES[..]),
        ] {
            if field(k) != names.join(",") {
                return Err(bad(format!(
                    "metadata `{k}` = {:?} differs from this build's features ({})",
                    field(k),
                    names.join(",")
                )));
            }
        }
        let st = SafeTensors::deserialize(bytes).map_err(|e| bad(e.to_string()))?;
        let has_tier = st.names().iter().any(|n| n.starts_with("tier."));
        if has_tier && field("tier_features") != TIER_FEATURES.join(",") {
            return Err(bad(format!(
                "metadata `tier_features` = {:?} differs from this build's features ({})",
                field("tier_features"),
                TIER_FEATURES.join(",")
            )));
        }
        let mut map = HashMap::new();
        for (name, view) in st.tensors() {
            if view.dtype() != Dtype::F32 {
                return Err(bad(format!(
                    "tensor `{name}` is {:?}, expected F32",
                    view.dtype()
                )));
            }
            let data: Vec<f32> = view
                .data()
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect();
            map.insert(name, (view.shape().to_vec(), data));
        }
        Self::reading(&map, job_inputs, origin)
    }

    /// The network from a safetensors file.
    pub fn load(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        Self::from_safetensors(&bytes, &path.display().to_string())
    }

    /// The names of the job features the network reads, in its input order.
    pub fn job_feature_names(&self) -> Vec<&'static str> {
        self.job_inputs.iter().map(|&c| JOB_FEATURES[c]).collect()
    }

    /// The file's bytes, with `extra` metadata (training facts) added to the layout's own.
    /// Written by hand in the safetensors layout (an 8-byte little-endian header length, a JSON
    /// header with sorted keys padded to 8 bytes, then the tensors' bytes in name order), so
    /// that the same weights always give the same bytes.
    pub fn to_safetensors(&self, extra: &[(&str, String)]) -> Result<Vec<u8>> {
        use std::collections::BTreeMap;
        let mut meta: BTreeMap<String, String> = BTreeMap::from([
            ("format".to_string(), "coda-policy".to_string()),
            ("version".to_string(), FORMAT_VERSION.to_string()),
            (
                "job_features".to_string(),
                self.job_feature_names().join(","),
            ),
            ("option_features".to_string(), OPTION_FEATURES.join(",")),
            ("place_features".to_string(), PLACE_FEATURES.join(",")),
        ]);
        if self.tier.is_some() {
            meta.insert("tier_features".to_string(), TIER_FEATURES.join(","));
        }
        for (k, v) in extra {
            meta.insert((*k).to_string(), v.clone());
        }
        let mut tensors = self.tensors();
        tensors.sort_by(|a, b| a.0.cmp(&b.0));
        let mut header = serde_json::Map::new();
        header.insert(
            "__metadata__".into(),
            serde_json::to_value(&meta).expect("strings serialise"),
        );
        let mut data: Vec<u8> = Vec::new();
        for (name, shape, values) in &tensors {
            let start = data.len();
            data.extend(values.iter().flat_map(|x| x.to_le_bytes()));
            header.insert(
                name.clone(),
                serde_json::json!({"dtype": "F32", "shape": shape, "data_offsets": [start, data.len()]}),
            );
        }
        let mut text = serde_json::to_string(&header).expect("a JSON map serialises");
        while !text.len().is_multiple_of(8) {
            text.push(' ');
        }
        let mut out = Vec::with_capacity(8 + text.len() + data.len());
        out.extend((text.len() as u64).to_le_bytes());
        out.extend(text.as_bytes());
        out.extend(data);
        Ok(out)
    }
}
