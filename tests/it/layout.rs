//! The layers of `src/` (README, "Layout"): a module imports only from the layers below it.
//! Doc comments may link upward; code may not.

use std::path::Path;

/// Bottom to top.
const LAYERS: [&str; 10] = [
    "util",
    "model",
    "perf",
    "objective",
    "scheduler",
    "ilp",
    "policies",
    "sim",
    "workload",
    "learn",
];

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn no_layer_imports_from_a_layer_above_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut upward = Vec::new();
    for (k, layer) in LAYERS.iter().enumerate() {
        let mut files = Vec::new();
        let dir = src.join(layer);
        if dir.is_dir() {
            rust_files(&dir, &mut files);
        } else {
            files.push(src.join(format!("{layer}.rs")));
        }
        assert!(!files.is_empty(), "layer {layer} has no source");
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            for (n, line) in text.lines().enumerate() {
                let code = line.trim_start();
                if code.starts_with("//") {
                    continue;
                }
                for above in &LAYERS[k + 1..] {
                    if code.contains(&format!("crate::{above}::"))
                        || code.contains(&format!("crate::{above};"))
                        || code.contains(&format!("crate::{{{above}"))
                    {
                        upward.push(format!("{}:{}: {above}", f.display(), n + 1));
                    }
                }
            }
        }
    }
    assert!(upward.is_empty(), "upward imports: {upward:#?}");
}
