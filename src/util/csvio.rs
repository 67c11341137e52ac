//! Reading CSV files with errors that name the file, the line and the column.

use std::path::Path;

use crate::error::{Error, Result};

/// A CSV file read whole, with its header checked for the required columns.
pub(crate) struct CsvFile {
    pub(crate) name: String,
    columns: Vec<String>,
    rows: Vec<(u64, csv::StringRecord)>,
}

/// One data row, with the context to report a bad field.
pub(crate) struct Row<'a> {
    file: &'a CsvFile,
    pub(crate) line: u64,
    rec: &'a csv::StringRecord,
}

impl CsvFile {
    /// Reads `path`; every name in `required` must be a column.
    pub(crate) fn open(path: &Path, required: &[&str]) -> Result<Self> {
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        Self::from_bytes(&bytes, &path.display().to_string(), required)
    }

    /// Parses CSV text; `name` is used in errors.
    pub(crate) fn from_bytes(bytes: &[u8], name: &str, required: &[&str]) -> Result<Self> {
        let mut rdr = csv::ReaderBuilder::new()
            .has_headers(true)
            .from_reader(bytes);
        let malformed = |e: csv::Error| {
            let line = e.position().map_or(0, |p| p.line());
            Error::MalformedRow {
                file: name.to_string(),
                line,
                message: e.to_string(),
            }
        };
        let columns: Vec<String> = rdr
            .headers()
            .map_err(malformed)?
            .iter()
            .map(|h| h.trim().to_string())
            .collect();
        for &c in required {
            if !columns.iter().any(|h| h == c) {
                return Err(Error::MissingColumn {
                    file: name.to_string(),
                    column: c.to_string(),
                });
            }
        }
        let mut rows = Vec::new();
        for rec in rdr.records() {
            let rec = rec.map_err(malformed)?;
            let line = rec.position().map_or(0, |p| p.line());
            rows.push((line, rec));
        }
        Ok(CsvFile {
            name: name.to_string(),
            columns,
            rows,
        })
    }

    /// The data rows in file order.
    pub(crate) fn rows(&self) -> impl Iterator<Item = Row<'_>> {
        self.rows.iter().map(move |(line, rec)| Row {
            file: self,
            line: *line,
            rec,
        })
    }

    pub(crate) fn has_column(&self, c: &str) -> bool {
        self.columns.iter().any(|h| h == c)
    }

    fn index(&self, c: &str) -> usize {
        self.columns
            .iter()
            .position(|h| h == c)
            .expect("required columns are checked on open")
    }
}

impl Row<'_> {
    /// Raw text of a column (trimmed).
    pub(crate) fn str(&self, col: &str) -> &str {
        self.rec.get(self.file.index(col)).unwrap_or("").trim()
    }

    /// An error about `col` on this row.
    pub(crate) fn bad(&self, col: &str, reason: impl Into<crate::error::Expected>) -> Error {
        Error::invalid(&self.file.name, self.line, col, self.str(col), reason)
    }

    /// A finite number.
    pub(crate) fn f64(&self, col: &str) -> Result<f64> {
        let s = self.str(col);
        let v: f64 = s.parse().map_err(|_| self.bad(col, "not a number"))?;
        if !v.is_finite() {
            return Err(self.bad(col, "must be finite"));
        }
        Ok(v)
    }

    /// A finite number `>= 0`.
    pub(crate) fn nonneg(&self, col: &str) -> Result<f64> {
        let v = self.f64(col)?;
        if v < 0.0 {
            return Err(self.bad(col, "must be >= 0"));
        }
        Ok(v)
    }

    /// A finite number `> 0`.
    pub(crate) fn positive(&self, col: &str) -> Result<f64> {
        let v = self.f64(col)?;
        if v <= 0.0 {
            return Err(self.bad(col, "must be > 0"));
        }
        Ok(v)
    }

    /// A time in seconds in `[0, max]` (`positive`: `(0, max]`): bounds keep a simulated run's
    /// length, and so its number of rounds, finite and small.
    pub(crate) fn seconds(&self, col: &str, positive: bool, max: f64) -> Result<f64> {
        let v = if positive {
            self.positive(col)?
        } else {
            self.nonneg(col)?
        };
        if v > max {
            return Err(self.bad(col, format!("must be at most {max:e} s")));
        }
        Ok(v)
    }

    /// A whole number in `u32` (written as `3` or `3.0`).
    pub(crate) fn count(&self, col: &str) -> Result<u32> {
        let v = self.f64(col)?;
        if v < 0.0 || v.fract() != 0.0 || v > f64::from(u32::MAX) {
            return Err(self.bad(col, "must be a whole number >= 0"));
        }
        Ok(v as u32)
    }

    /// A whole number `>= 1`.
    pub(crate) fn positive_count(&self, col: &str) -> Result<u32> {
        let v = self.count(col)?;
        if v == 0 {
            return Err(self.bad(col, "must be >= 1"));
        }
        Ok(v)
    }
}

/// Writes `rows` as CSV with a header from their field names, atomically (nothing is left half
/// written if serialising or writing fails).
pub fn write_csv<T: serde::Serialize>(path: &Path, rows: &[T]) -> Result<()> {
    let mut w = csv::Writer::from_writer(Vec::new());
    for r in rows {
        w.serialize(r)
            .map_err(|e| Error::io(path, std::io::Error::other(e.to_string())))?;
    }
    let bytes = w
        .into_inner()
        .map_err(|e| Error::io(path, std::io::Error::other(e.to_string())))?;
    crate::util::write_atomic(path, &bytes)
}
