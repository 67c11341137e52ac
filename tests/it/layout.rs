//! The layers of `src/` (`src/lib.rs`, README "Layout"): a module imports only from the layers
//! below it, and no two sibling modules import each other, directly or round a cycle.
//!
//! Every path a file names is read — `use` declarations with their nested groups over any number
//! of lines, and `crate::…` / `super::…` paths written inline in code — after comments are
//! removed (doc comments may link anywhere; code may not). Names re-exported at the crate root
//! (`crate::Schedule`) count as the module they come from.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Bottom to top: the data (`model`), its prices (`perf`, `objective`), the deciders
/// (`scheduler`, `ilp`, `policies`), the simulator and what feeds and drives it (`sim`, `plots`,
/// `workload`, `replay`), and learning from all of it (`learn`) on top.
const LAYERS: [&str; 16] = [
    "id",
    "violation",
    "error",
    "util",
    "model",
    "perf",
    "objective",
    "scheduler",
    "ilp",
    "policies",
    "sim",
    "lookahead",
    "plots",
    "workload",
    "replay",
    "learn",
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The module path of a file: `src/ilp/formulation/mod.rs` → `["ilp", "formulation"]`.
fn module_of(file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src()).unwrap();
    let mut parts: Vec<String> = rel
        .iter()
        .map(|c| c.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap();
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" && stem != "lib" {
        parts.push(stem.to_string());
    }
    parts
}

/// The text with `//` and `/* */` comments and the contents of string literals removed.
fn code_only(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
            i += 2;
            while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                i += 1;
            }
            i += 2;
        } else if b[i] == b'"' {
            // Skip the literal (escapes included); raw strings hold no `"` in this crate's paths.
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push_str("\"\"");
        } else if b[i] == b'\'' && b.get(i + 2) == Some(&b'\'') {
            // A char literal such as '"' or '{'.
            i += 3;
        } else {
            out.push(b[i] as char);
            i += 1;
        }
    }
    out
}

/// Every path of a `use` tree: `crate::{a::{b, c}, d}` → `crate::a::b`, `crate::a::c`, `crate::d`.
fn expand_use(tree: &str, prefix: &str, out: &mut Vec<String>) {
    let tree = tree.trim();
    if let Some(open) = tree.find('{') {
        let head = tree[..open].trim().trim_end_matches("::");
        let close = tree.rfind('}').unwrap();
        let inner = &tree[open + 1..close];
        let base = join(prefix, head);
        let mut depth = 0;
        let mut start = 0;
        for (i, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    expand_use(&inner[start..i], &base, out);
                    start = i + 1;
                }
                _ => {}
            }
        }
        expand_use(&inner[start..], &base, out);
    } else if !tree.is_empty() {
        let item = tree.split(" as ").next().unwrap().trim();
        out.push(join(prefix, item));
    }
}

fn join(a: &str, b: &str) -> String {
    match (a.is_empty(), b.is_empty()) {
        (true, _) => b.to_string(),
        (_, true) => a.to_string(),
        _ => format!("{a}::{b}"),
    }
}

/// Every crate-internal path the code names, as written (`crate::…`, `super::…`, `self::…`).
fn paths_named(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    // `use` declarations, over as many lines as they take.
    let mut rest = code;
    while let Some(i) = find_word(rest, "use") {
        let after = &rest[i + 3..];
        let end = after.find(';').unwrap_or(after.len());
        expand_use(&after[..end], "", &mut out);
        rest = &after[end..];
    }
    // Inline paths.
    for root in ["crate::", "super::"] {
        let mut at = 0;
        while let Some(i) = code[at..].find(root) {
            let s = at + i;
            let boundary = s == 0 || {
                let c = code.as_bytes()[s - 1];
                !(c.is_ascii_alphanumeric() || c == b'_' || c == b':')
            };
            let tail: String = code[s..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            let tail = tail.trim_end_matches(':');
            // A bare `crate::{` or `super::*` starts a group the `use` reader expands.
            if boundary && tail.contains("::") {
                out.push(tail.to_string());
            }
            at = s + root.len();
        }
    }
    out.retain(|p| p.starts_with("crate") || p.starts_with("super") || p.starts_with("self"));
    out
}

/// The first `use` keyword in `s` that starts a declaration (not part of another word).
fn find_word(s: &str, w: &str) -> Option<usize> {
    let b = s.as_bytes();
    let mut from = 0;
    while let Some(i) = s[from..].find(w) {
        let i = from + i;
        let before = i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
        let after = b.get(i + w.len()).is_some_and(|c| c.is_ascii_whitespace());
        if before && after {
            return Some(i);
        }
        from = i + w.len();
    }
    None
}

/// A path as absolute module segments (`super::x` from `ilp::codec` → `ilp::x`).
fn absolute(path: &str, module: &[String], is_mod_file: bool) -> Vec<String> {
    let mut segs: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
    let mut base: Vec<String> = module.to_vec();
    // In `foo.rs` (or `foo/mod.rs`), `self` is `foo` and `super` its parent.
    let _ = is_mod_file;
    match segs.first() {
        Some(&"crate") => {
            base.clear();
            segs.remove(0);
        }
        Some(&"self") => {
            segs.remove(0);
        }
        _ => {}
    }
    while segs.first() == Some(&"super") {
        base.pop();
        segs.remove(0);
    }
    base.extend(segs.iter().map(|s| s.to_string()));
    base
}

/// Root re-exports of `src/lib.rs`: name → the module it comes from.
fn root_reexports() -> BTreeMap<String, String> {
    let code = code_only(&std::fs::read_to_string(src().join("lib.rs")).unwrap());
    let mut out = BTreeMap::new();
    let mut rest = code.as_str();
    while let Some(i) = rest.find("pub use ") {
        let after = &rest[i + 8..];
        let end = after.find(';').unwrap();
        let mut paths = Vec::new();
        expand_use(&after[..end], "", &mut paths);
        for p in paths {
            let segs: Vec<&str> = p.split("::").collect();
            out.insert(segs.last().unwrap().to_string(), segs[0].to_string());
        }
        rest = &after[end..];
    }
    out
}

struct Scan {
    /// (file, its module, the absolute module paths it names)
    files: Vec<(PathBuf, Vec<String>, Vec<Vec<String>>)>,
}

fn scan() -> Scan {
    let mut files = Vec::new();
    let mut all = Vec::new();
    rust_files(&src(), &mut all);
    let roots = root_reexports();
    for f in all {
        if f.starts_with(src().join("bin")) {
            continue;
        }
        let module = module_of(&f);
        let is_mod = f.file_name().is_some_and(|n| n == "mod.rs");
        let code = code_only(&std::fs::read_to_string(&f).unwrap());
        let mut named = Vec::new();
        for p in paths_named(&code) {
            let mut abs = absolute(&p, &module, is_mod);
            // A root re-export names the module it comes from.
            if abs.len() == 1
                && let Some(m) = roots.get(&abs[0])
            {
                abs = vec![m.clone(), abs[0].clone()];
            }
            if !abs.is_empty() {
                named.push(abs);
            }
        }
        files.push((f, module, named));
    }
    Scan { files }
}

#[test]
fn no_layer_imports_from_a_layer_above_it() {
    let scan = scan();
    let rank = |m: &str| LAYERS.iter().position(|l| *l == m);
    let mut upward = Vec::new();
    for (f, module, named) in &scan.files {
        let Some(own) = module.first().and_then(|m| rank(m)) else {
            continue; // the crate root (lib.rs) sits above every layer
        };
        for p in named {
            if let Some(r) = rank(&p[0])
                && r > own
            {
                upward.push(format!("{}: {}", f.display(), p.join("::")));
            }
        }
    }
    upward.sort();
    upward.dedup();
    assert!(upward.is_empty(), "upward imports: {upward:#?}");
}

/// The crate root re-exports a few names for users (`coda::Schedule`); inside the crate every
/// module names the module an item lives in (`crate::model::Schedule`), so that the import graph
/// never runs through the root, which sits above every layer.
#[test]
fn no_module_names_a_root_reexport() {
    let roots = root_reexports();
    let mut all = Vec::new();
    rust_files(&src(), &mut all);
    let mut through_root = Vec::new();
    for f in all {
        if f.starts_with(src().join("bin")) || f == src().join("lib.rs") {
            continue;
        }
        let code = code_only(&std::fs::read_to_string(&f).unwrap());
        for p in paths_named(&code) {
            let segs: Vec<&str> = p.split("::").collect();
            if segs.len() == 2 && segs[0] == "crate" && roots.contains_key(segs[1]) {
                through_root.push(format!("{}: {p}", f.display()));
            }
        }
    }
    through_root.sort();
    through_root.dedup();
    assert!(
        through_root.is_empty(),
        "root re-exports named inside the crate: {through_root:#?}"
    );
}

/// Within one folder, the files (sibling modules) must not import each other round a cycle:
/// what two modules both need belongs in a module below both.
#[test]
fn no_two_sibling_modules_import_each_other() {
    let scan = scan();
    // parent module → sibling → siblings it names
    let mut edges: BTreeMap<Vec<String>, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    let mut modules: BTreeSet<Vec<String>> = BTreeSet::new();
    for (_, module, _) in &scan.files {
        modules.insert(module.clone());
    }
    for (_, module, named) in &scan.files {
        for p in named {
            // The longest common prefix; the edge joins the two children of that parent.
            let common = module.iter().zip(p).take_while(|(a, b)| a == b).count();
            if common >= module.len() || common >= p.len() {
                continue; // a module naming itself, an ancestor or a descendant
            }
            let parent = module[..common].to_vec();
            let mut target = parent.clone();
            target.push(p[common].clone());
            if !modules.contains(&target) {
                continue; // an item defined in the parent, not a sibling module
            }
            edges
                .entry(parent)
                .or_default()
                .entry(module[common].clone())
                .or_default()
                .insert(p[common].clone());
        }
    }
    let mut cycles = Vec::new();
    for (parent, g) in &edges {
        // Depth-first search for a back edge, reporting the cycle found.
        fn visit(
            n: &str,
            g: &BTreeMap<String, BTreeSet<String>>,
            stack: &mut Vec<String>,
            done: &mut BTreeSet<String>,
            out: &mut Vec<Vec<String>>,
        ) {
            if let Some(i) = stack.iter().position(|s| s == n) {
                let mut c = stack[i..].to_vec();
                c.push(n.to_string());
                out.push(c);
                return;
            }
            if done.contains(n) {
                return;
            }
            stack.push(n.to_string());
            for m in g.get(n).into_iter().flatten() {
                visit(m, g, stack, done, out);
            }
            stack.pop();
            done.insert(n.to_string());
        }
        let mut done = BTreeSet::new();
        let mut found = Vec::new();
        for n in g.keys() {
            visit(n, g, &mut Vec::new(), &mut done, &mut found);
        }
        for c in found {
            cycles.push(format!("{}: {}", parent.join("::"), c.join(" → ")));
        }
    }
    assert!(cycles.is_empty(), "sibling modules in a cycle: {cycles:#?}");
}

/// The reader itself: nested groups over several lines, inline paths, and comments ignored.
#[test]
fn the_path_reader_sees_groups_and_inline_paths() {
    let code = code_only(
        "use crate::{model::Job,\n    sim::{Simulator, metrics}};\n// use crate::learn::x;\nfn f() { crate::ilp::solve(); let s = \"crate::workload\"; }\n",
    );
    let mut p = paths_named(&code);
    p.sort();
    p.dedup();
    assert_eq!(
        p,
        vec![
            "crate::ilp::solve",
            "crate::model::Job",
            "crate::sim::Simulator",
            "crate::sim::metrics"
        ]
    );
}

/// The layout's size limit: no source file over 700 lines (a longer one is split along its
/// seams, as `sim/`, `perf/calibrate/` and `policies/learned/` were).
#[test]
fn no_source_file_is_over_700_lines() {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut long: Vec<(usize, String)> = files
        .iter()
        .map(|f| {
            let n = std::fs::read_to_string(f).unwrap().lines().count();
            (n, f.strip_prefix(src()).unwrap().display().to_string())
        })
        .filter(|(n, _)| *n > 700)
        .collect();
    long.sort();
    assert!(long.is_empty(), "files over 700 lines: {long:?}");
}
