//! What every report section reads and writes: a CSV read whole with located errors, the
//! provenance line of a results folder, number formats and Markdown tables.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use coda::Error;

use super::read;

/// A CSV file read whole: its header and its rows with their line numbers.
pub(super) struct Table {
    pub(super) file: String,
    pub(super) header: Vec<String>,
    pub(super) rows: Vec<(u64, csv::StringRecord)>,
}

impl Table {
    pub(super) fn read(path: &Path) -> coda::Result<Table> {
        let file = path.display().to_string();
        let mut r = csv::Reader::from_path(path).map_err(|e| Error::MalformedRow {
            file: file.clone(),
            line: 1,
            message: e.to_string(),
        })?;
        let header = r
            .headers()
            .map_err(|e| Error::MalformedRow {
                file: file.clone(),
                line: 1,
                message: e.to_string(),
            })?
            .iter()
            .map(str::to_string)
            .collect();
        let mut rows = Vec::new();
        for rec in r.records() {
            let rec = rec.map_err(|e| Error::MalformedRow {
                file: file.clone(),
                line: e.position().map_or(0, |p| p.line()),
                message: e.to_string(),
            })?;
            let line = rec.position().map_or(0, |p| p.line());
            rows.push((line, rec));
        }
        Ok(Table { file, header, rows })
    }

    pub(super) fn col(&self, name: &str) -> coda::Result<usize> {
        self.header
            .iter()
            .position(|h| h == name)
            .ok_or_else(|| Error::MissingColumn {
                file: self.file.clone(),
                column: name.into(),
            })
    }

    pub(super) fn str(&self, row: usize, name: &str) -> coda::Result<&str> {
        let c = self.col(name)?;
        let (line, rec) = &self.rows[row];
        rec.get(c).ok_or_else(|| Error::MalformedRow {
            file: self.file.clone(),
            line: *line,
            message: format!("no field `{name}`"),
        })
    }

    /// A number (`NaN` allowed: some columns are undefined on some rows).
    pub(super) fn num(&self, row: usize, name: &str) -> coda::Result<f64> {
        let v = self.str(row, name)?;
        v.trim()
            .parse::<f64>()
            .map_err(|_| Error::invalid(&self.file, self.rows[row].0, name, v, "not a number"))
    }

    pub(super) fn len(&self) -> usize {
        self.rows.len()
    }
}

/// Where a CSV came from: the nearest `machine.txt` at or above its folder (up to `stop`), as
/// one line: command, commit, machine, date.
pub(super) fn provenance(dir: &Path, stop: &Path) -> coda::Result<String> {
    let mut d = Some(dir);
    while let Some(p) = d {
        let f = p.join("machine.txt");
        if f.is_file() {
            let text = read(&f)?;
            let key = |k: &str| {
                text.lines()
                    .find_map(|l| l.strip_prefix(&format!("{k}: ")))
                    .map(str::trim)
                    .unwrap_or("not recorded")
                    .to_string()
            };
            let mut s = format!(
                "Made by `{}` at commit `{}` on {} ({})",
                key("command"),
                key("commit"),
                key("machine"),
                key("date")
            );
            if let Some(note) = text.lines().find_map(|l| l.strip_prefix("runs: ")) {
                let _ = write!(s, "; {}", note.trim());
            }
            s.push('.');
            return Ok(s);
        }
        if p == stop {
            break;
        }
        d = p.parent();
    }
    Ok("Provenance not recorded (no machine.txt above this file).".into())
}

pub(super) fn hours(s: f64) -> String {
    format!("{:.2}", s / 3600.0)
}

pub(super) fn pct(x: f64) -> String {
    if x.is_nan() {
        "–".into()
    } else {
        format!("{:.1} %", 100.0 * x)
    }
}

pub(super) fn md_table(head: &[&str], rows: &[Vec<String>]) -> String {
    let mut s = format!("| {} |\n|{}\n", head.join(" | "), "---|".repeat(head.len()));
    for r in rows {
        let _ = writeln!(s, "| {} |", r.join(" | "));
    }
    s
}

/// A table of text cells keyed by (row, column), both kept in first-seen order.
#[derive(Default)]
pub(super) struct Pivot {
    rows: Vec<String>,
    cols: Vec<String>,
    cells: BTreeMap<(String, String), String>,
}

impl Pivot {
    pub(super) fn add(&mut self, row: &str, col: &str, text: String) {
        if !self.rows.iter().any(|r| r == row) {
            self.rows.push(row.to_string());
        }
        if !self.cols.iter().any(|c| c == col) {
            self.cols.push(col.to_string());
        }
        self.cells.insert((row.to_string(), col.to_string()), text);
    }

    /// The Markdown table, `corner` heading the row names; missing cells are "–".
    pub(super) fn markdown(&self, corner: &str) -> String {
        let mut head = vec![corner];
        head.extend(self.cols.iter().map(String::as_str));
        let rows: Vec<Vec<String>> = self
            .rows
            .iter()
            .map(|r| {
                let mut out = vec![r.clone()];
                out.extend(self.cols.iter().map(|c| {
                    self.cells
                        .get(&(r.clone(), c.clone()))
                        .cloned()
                        .unwrap_or_else(|| "–".into())
                }));
                out
            })
            .collect();
        md_table(&head, &rows)
    }
}

pub(super) fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        0.5 * (v[n / 2 - 1] + v[n / 2])
    }
}
