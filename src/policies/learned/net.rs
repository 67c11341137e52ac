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
//! feature lists (three, and `tier_features` with a tier head), which must equal the code's.

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
    /// Level-1 row normalisation: mean and standard deviation per feature.
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

    /// [`PolicyNet::level1_logits`] of rows laid end to end.
    pub(crate) fn level1_logits_flat(&self, flat: &Level1Flat) -> Vec<Vec<f32>> {
        let nj = JOB_FEATURES.len();
        let n = flat.counts.len();
        let mut s = Scratch::default();
        s.input.extend_from_slice(&flat.jobs);
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
        let rows = flat.counts.iter().sum();
        s.input.clear();
        s.input.reserve(rows * (L1_WIDTH + e));
        for r in flat.rows.chunks(L1_WIDTH) {
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
        mlp(&self.l1, rows, &mut s, &mut out);
        let mut it = out.iter().copied();
        flat.counts
            .iter()
            .map(|&c| it.by_ref().take(c).collect())
            .collect()
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

    /// The network from named tensors (shapes checked against each other and against the
    /// feature lists); `origin` names the source in errors.
    pub fn from_tensors(
        tensors: &HashMap<String, (Vec<usize>, Vec<f32>)>,
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
        let l1_mean = vector("l1.mean", L1_WIDTH)?;
        let l1_std = vector("l1.std", L1_WIDTH)?;
        positive("l1.std", &l1_std)?;
        let phi = dense("l1.phi", JOB_FEATURES.len())?;
        let fc1 = dense("l1.fc1", L1_WIDTH + phi.outputs())?;
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
        debug_assert_eq!(net.phi.inputs(), JOB_FEATURES.len());
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
        for (k, names) in [
            ("job_features", &JOB_FEATURES[..]),
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
        Self::from_tensors(&map, origin)
    }

    /// The network from a safetensors file.
    pub fn load(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        Self::from_safetensors(&bytes, &path.display().to_string())
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
            ("job_features".to_string(), JOB_FEATURES.join(",")),
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
