//! `coda report`: every results table in the docs, generated from the CSVs the benchmark
//! commands wrote, so that no number is copied by hand.
//!
//! It writes `benches/results/README.md` (every table, each with the command that made its CSV,
//! the commit and the machine, read from the nearest `machine.txt` above the CSV), the headline
//! table between the `<!-- report:headline -->` markers of the top-level `README.md`, and the
//! placement-check and fit-quality tables between the `report:placement` and `report:fit`
//! markers of `models/README.md`. With `--check` it writes nothing and exits 1 when any of the
//! three differs from what the CSVs give (the drift test runs this).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

mod cpumem;
mod distil_net;
mod gap;
mod headline;
mod ilp_light;
mod load;
mod lookahead;
mod models;
mod primal;
mod python;
mod results;
mod rl;
mod sia_sim;
mod slurm;
mod table;

use coda::Error;

use headline::headline;
use models::{fit_tables, placement_tables};
use results::results_readme;

/// Arguments of `coda report`.
#[derive(clap::Args)]
pub struct Args {
    /// The repository root (results under `benches/results/` and `formulations/results/`).
    #[arg(long, default_value = ".")]
    pub root: PathBuf,
    /// Compare instead of writing: exit 1 naming the first line that differs.
    #[arg(long)]
    pub check: bool,
}

/// The traces of the headline, in column order, with their folder under `benches/results/rl/`.
pub(super) const HEADLINE: [(&str, &str); 4] = [
    ("Philly", "philly"),
    ("ITP 06", "itp-cluster06"),
    ("ITP 02", "itp-cluster02"),
    ("Alibaba", "alibaba"),
];

/// Runs the command.
pub fn run(args: Args) -> coda::Result<ExitCode> {
    let results = args.root.join("benches/results");
    let report = results_readme(&args.root)?;
    let readme_path = args.root.join("README.md");
    let readme = read(&readme_path)?;
    let new_readme = splice(&readme, "headline", &headline(&results)?, &readme_path)?;
    let models_path = args.root.join("models/README.md");
    let models = args.root.join("models");
    let new_models = splice(
        &read(&models_path)?,
        "placement",
        &placement_tables(&models)?,
        &models_path,
    )?;
    let new_models = splice(&new_models, "fit", &fit_tables(&models)?, &models_path)?;
    let targets = [
        (results.join("README.md"), report),
        (readme_path, new_readme),
        (models_path, new_models),
    ];
    if args.check {
        let mut drift = false;
        for (path, want) in &targets {
            let have = std::fs::read_to_string(path).unwrap_or_default();
            if let Some(line) = first_difference(&have, want) {
                drift = true;
                out!(
                    "{}:{line}: differs from what the CSVs give (run `coda report`)",
                    path.display()
                );
            }
        }
        return Ok(if drift {
            ExitCode::FAILURE
        } else {
            ExitCode::SUCCESS
        });
    }
    for (path, text) in &targets {
        coda::io::write_atomic(path, text.as_bytes())?;
        out!("wrote {}", path.display());
    }
    // Plots drawn from the CSVs too (not compared by `--check`: the tables carry the numbers).
    for path in primal::draw(&args.root.join("formulations/results/primal"))? {
        out!("wrote {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// The 1-based first line where `have` and `want` differ, if any.
fn first_difference(have: &str, want: &str) -> Option<usize> {
    if have == want {
        return None;
    }
    let mut a = have.lines();
    let mut b = want.lines();
    let mut n = 1;
    loop {
        match (a.next(), b.next()) {
            (Some(x), Some(y)) if x == y => n += 1,
            (None, None) => return Some(n), // only line endings differ
            _ => return Some(n),
        }
    }
}

pub(super) fn read(path: &Path) -> coda::Result<String> {
    std::fs::read_to_string(path).map_err(|e| Error::io(path, e))
}

/// `text` with what lies between the markers `<!-- report:NAME -->` and `<!-- /report:NAME -->`
/// replaced by `table`.
fn splice(text: &str, name: &str, table: &str, path: &Path) -> coda::Result<String> {
    let begin = format!("<!-- report:{name} -->");
    let end = format!("<!-- /report:{name} -->");
    let missing = |m: &str| {
        Error::invalid(
            &path.display().to_string(),
            0,
            "report markers",
            m,
            "the file must hold the report's begin and end markers, in that order",
        )
    };
    let b = text.find(&begin).ok_or_else(|| missing(&begin))? + begin.len();
    let e = text[b..].find(&end).ok_or_else(|| missing(&end))? + b;
    Ok(format!("{}\n{}{}", &text[..b], table, &text[e..]))
}
