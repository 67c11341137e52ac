//! `coda report`: the committed results tables are what their CSVs give, and any edit to a
//! table or to the data under it is caught.

use std::path::Path;
use std::process::Command;

use crate::common::coda_bin;

fn root() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn check(dir: &Path) -> std::process::Output {
    Command::new(coda_bin())
        .args(["report", "--check", "--root"])
        .arg(dir)
        .output()
        .unwrap()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

/// A copy of what the report reads: the results, the formulation results, the model's fit
/// tables and the two READMEs it writes into.
fn copy_of_repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(
        &root().join("benches/results"),
        &dir.path().join("benches/results"),
    );
    copy_dir(
        &root().join("formulations/results"),
        &dir.path().join("formulations/results"),
    );
    std::fs::create_dir_all(dir.path().join("models")).unwrap();
    for f in ["README.md", "fit_quality.csv", "placement_check.csv"] {
        std::fs::copy(
            root().join("models").join(f),
            dir.path().join("models").join(f),
        )
        .unwrap();
    }
    std::fs::copy(root().join("README.md"), dir.path().join("README.md")).unwrap();
    dir
}

#[test]
fn committed_tables_are_what_their_csvs_give() {
    let out = check(&root());
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn an_edited_number_in_a_table_fails_the_check() {
    let dir = copy_of_repo();
    let path = dir.path().join("benches/results/README.md");
    let text = std::fs::read_to_string(&path).unwrap();
    // The first table row of the headline, its first number nudged.
    let (i, line) = text
        .lines()
        .enumerate()
        .find(|(_, l)| l.starts_with("| fifo |"))
        .unwrap();
    let edited = line.replacen('.', ",", 1);
    assert_ne!(edited, line);
    std::fs::write(&path, text.replacen(line, &edited, 1)).unwrap();
    let out = check(dir.path());
    assert_eq!(out.status.code(), Some(1));
    let msg = String::from_utf8_lossy(&out.stdout);
    assert!(
        msg.contains(&format!("benches/results/README.md:{}:", i + 1)),
        "{msg}"
    );
    assert_eq!(msg.lines().count(), 1, "only the edited file drifts: {msg}");
}

#[test]
fn an_edited_csv_fails_the_check_of_both_files() {
    let dir = copy_of_repo();
    // A replay the headline reads (the load sweep's, newer than `rl/` where both ran a policy).
    let path = dir
        .path()
        .join("benches/results/load/philly-64xdgx-1-v100/comparison.csv");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let col = lines[0].split(',').position(|h| h == "avg_jct_s").unwrap();
    let mut fields: Vec<String> = lines[1].split(',').map(str::to_string).collect();
    let v: f64 = fields[col].parse().unwrap();
    fields[col] = (v + 3600.0).to_string();
    lines[1] = fields.join(",");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let out = check(dir.path());
    assert_eq!(out.status.code(), Some(1));
    let msg = String::from_utf8_lossy(&out.stdout);
    assert!(msg.contains("benches/results/README.md:"), "{msg}");
    assert!(
        msg.lines()
            .any(|l| !l.contains("benches/results") && l.contains("README.md:")),
        "{msg}"
    );
    // Regenerating brings both back in line.
    let ok = Command::new(coda_bin())
        .args(["report", "--root"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(ok.status.success());
    assert!(check(dir.path()).status.success());
}

#[test]
fn a_bad_field_is_named_with_its_file_and_line() {
    let dir = copy_of_repo();
    let path = dir.path().join("benches/results/gap/gap.csv");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let col = lines[0].split(',').position(|h| h == "gap").unwrap();
    let mut fields: Vec<String> = lines[2].split(',').map(str::to_string).collect();
    fields[col] = "lots".into();
    lines[2] = fields.join(",");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let out = check(dir.path());
    assert_eq!(out.status.code(), Some(2));
    let msg = String::from_utf8_lossy(&out.stderr);
    assert!(msg.contains("gap.csv:3: field `gap` = \"lots\""), "{msg}");
}
