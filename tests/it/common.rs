//! Helpers shared by the tests.

use std::path::PathBuf;

use coda::model::Assignment;
use coda::model::ServerIdx;
use coda::model::{PsTask, WorkerTask};
use coda::{ClusterSnapshot, Schedule};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The repository's `datasets/`.
pub fn datasets() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("datasets")
}

/// The first `n` jobs of the Philly window, converted with the default trace options.
pub fn philly(n: usize) -> Vec<coda::model::Job> {
    philly_with(n, &coda::workload::trace::TraceOptions::default())
}

/// The first `n` jobs of the Philly window, converted with `opts`.
pub fn philly_with(n: usize, opts: &coda::workload::trace::TraceOptions) -> Vec<coda::model::Job> {
    use coda::workload::trace::{self, TraceFilter, TraceFormat};
    let t = trace::load(
        &datasets().join(TraceFormat::Philly.shipped_file()),
        TraceFormat::Philly,
        &TraceFilter::default(),
    )
    .unwrap();
    trace::to_jobs(&t.jobs[..n], opts, coda::CalibratedPerf::shipped()).unwrap()
}

/// A random schedule that satisfies every constraint: jobs in random order, each given a random
/// worker count in its range (fewer if its PS tasks would not fit) and random free GPUs of
/// allowed servers; a job that does not fit waits. Built independently of `validate`, so the
/// property test means something.
pub fn random_valid_schedule(s: &ClusterSnapshot, seed: u64) -> Schedule {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut free: Vec<Vec<u32>> = s
        .cluster
        .servers
        .iter()
        .map(|x| (0..x.num_gpus()).collect())
        .collect();
    for f in &mut free {
        f.shuffle(&mut rng);
    }
    let mut cpu: Vec<f64> = s.cluster.servers.iter().map(|x| x.cpu_cores).collect();
    let mut mem: Vec<f64> = s.cluster.servers.iter().map(|x| x.memory_gib).collect();
    let mut order: Vec<usize> = (0..s.jobs.len()).collect();
    order.shuffle(&mut rng);
    let mut out = Schedule::default();
    for k in order {
        let job = &s.jobs[k];
        let d = job.demand;
        let want_w = rng.random_range(job.workers.min..=job.workers.max);
        let want_p = rng.random_range(job.ps.min..=job.ps.max);
        // One GPU type per job, drawn among the allowed types present.
        let mut types: Vec<&str> = s
            .cluster
            .servers
            .iter()
            .map(|x| x.gpu_type.as_str())
            .filter(|t| job.allows_gpu(t))
            .collect();
        types.sort_unstable();
        types.dedup();
        let Some(&gpu_type) = types.get(rng.random_range(0..types.len().max(1))) else {
            continue;
        };
        // Fewer workers when the drawn count leaves no room for the PS tasks.
        for w in (job.workers.min..=want_w).rev() {
            let (mut f2, mut c2, mut m2) = (free.clone(), cpu.clone(), mem.clone());
            let mut a = Assignment {
                tier: 0,
                job: job.id,
                workers: vec![],
                ps: vec![],
            };
            for _ in 0..w {
                let cands: Vec<usize> = (0..f2.len())
                    .filter(|&i| {
                        s.cluster.servers[i].gpu_type == gpu_type
                            && f2[i].len() as u32 >= d.gpus_per_worker
                            && c2[i] >= d.cpu_per_worker
                            && m2[i] >= d.mem_per_worker_gib
                    })
                    .collect();
                let Some(&i) = cands.get(rng.random_range(0..cands.len().max(1))) else {
                    break;
                };
                let gpus = f2[i].drain(..d.gpus_per_worker as usize).collect();
                c2[i] -= d.cpu_per_worker;
                m2[i] -= d.mem_per_worker_gib;
                a.workers.push(WorkerTask {
                    server: ServerIdx(i),
                    gpus,
                });
            }
            for _ in 0..want_p {
                let cands: Vec<usize> = (0..c2.len())
                    .filter(|&i| c2[i] >= d.cpu_per_ps && m2[i] >= d.mem_per_ps_gib)
                    .collect();
                let Some(&i) = cands.get(rng.random_range(0..cands.len().max(1))) else {
                    break;
                };
                c2[i] -= d.cpu_per_ps;
                m2[i] -= d.mem_per_ps_gib;
                a.ps.push(PsTask {
                    server: ServerIdx(i),
                });
            }
            if job.workers.contains(a.workers.len() as u32) && job.ps.contains(a.ps.len() as u32) {
                (free, cpu, mem) = (f2, c2, m2);
                out.assignments.push(a);
                break;
            }
        }
    }
    out
}

/// Path of the built `coda` binary.
pub fn coda_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_coda"))
}

/// Runs the `coda` binary with `args` and returns its output, failing the test (with its
/// stderr) unless it exits 0.
pub fn coda_ok<I, S>(args: I) -> std::process::Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    let out = std::process::Command::new(coda_bin())
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}
