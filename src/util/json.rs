//! JSON instance files: parsing with the failing field's path, and atomic writes.

use std::path::Path;

use serde::Serialize;

use crate::error::{Error, Result};

/// Parses JSON with the path of the failing field in the error.
pub(crate) fn parse_json<T: serde::de::DeserializeOwned>(text: &str, origin: &str) -> Result<T> {
    let de = &mut serde_json::Deserializer::from_str(text);
    let value = serde_path_to_error::deserialize(&mut *de).map_err(|e| {
        let field = e.path().to_string();
        let inner = e.into_inner();
        Error::Json {
            file: origin.to_string(),
            line: inner.line(),
            column: inner.column(),
            field,
            message: inner.to_string(),
        }
    })?;
    // Anything after the value (a second object, stray text) is an error, not silently dropped.
    de.end().map_err(|e| Error::Json {
        file: origin.to_string(),
        line: e.line(),
        column: e.column(),
        field: "(after the value)".into(),
        message: format!("{e}: a JSON file holds one value"),
    })?;
    Ok(value)
}

/// Writes `value` as pretty JSON next to `path` and renames it into place.
pub(crate) fn write_json_atomic<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    let text = serde_json::to_string_pretty(value).expect("model types always serialize");
    write_atomic(path, text.as_bytes())
}

/// Writes bytes to a temporary sibling of `path`, then renames it over `path`, so that an
/// interrupted or failed write never leaves a truncated file where a good one was. Errors name
/// `path`, the file asked for, not the temporary.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = temporary(path);
    std::fs::write(&tmp, bytes).map_err(|e| Error::io(path, e))?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        Error::io(path, e)
    })
}

/// Fails now, naming `path`, if [`write_atomic`] could not write it later: its folder is missing
/// or not writable. Commands call it before long work so that a bad `--out` costs nothing.
pub fn check_writable(path: &Path) -> Result<()> {
    let tmp = temporary(path);
    std::fs::write(&tmp, b"").map_err(|e| Error::io(path, e))?;
    std::fs::remove_file(&tmp).map_err(|e| Error::io(path, e))
}

fn temporary(path: &Path) -> std::path::PathBuf {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    tmp.into()
}

/// The 1-based line of the value at `path` (`cluster.servers[1].cpu_cores`, `jobs[3]`) in the
/// JSON `text`, found by one scan that tracks keys and array positions; `None` if it is absent.
/// Semantic checks run on the parsed value and know only the path; this points them back at
/// the line a person would edit.
pub(crate) fn line_of(text: &str, path: &str) -> Option<u64> {
    let target = split_path(path)?;
    let b = text.as_bytes();
    // One frame per open container: `Err(index)` for arrays, `Ok(key)` for objects.
    let mut frames: Vec<std::result::Result<String, usize>> = Vec::new();
    let mut expecting_key = false;
    let at_target = |frames: &[std::result::Result<String, usize>]| {
        frames.len() == target.len()
            && frames.iter().zip(&target).all(|(f, t)| match (f, t) {
                (Ok(k), Ok(t)) => k == t,
                (Err(i), Err(t)) => i == t,
                _ => false,
            })
    };
    let line = |i: usize| 1 + b[..i].iter().filter(|&&c| c == b'\n').count() as u64;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        match c {
            b' ' | b'\t' | b'\r' | b'\n' => {}
            b'{' | b'[' => {
                if at_target(&frames) {
                    return Some(line(i));
                }
                frames.push(if c == b'{' { Ok(String::new()) } else { Err(0) });
                expecting_key = c == b'{';
            }
            b'}' | b']' => {
                frames.pop();
                expecting_key = false;
            }
            b',' => match frames.last_mut() {
                Some(Err(idx)) => *idx += 1,
                Some(Ok(_)) => expecting_key = true,
                None => {}
            },
            b':' => expecting_key = false,
            b'"' => {
                let start = i + 1;
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                let s = &text[start..i.min(b.len())];
                if expecting_key {
                    if let Some(Ok(k)) = frames.last_mut() {
                        *k = s.to_string();
                    }
                } else if at_target(&frames) {
                    return Some(line(start - 1));
                }
            }
            _ => {
                if at_target(&frames) {
                    return Some(line(i));
                }
                while i + 1 < b.len() && !b",]} \t\r\n".contains(&b[i + 1]) {
                    i += 1;
                }
            }
        }
        i += 1;
    }
    None
}

/// `a.b[2].c` → `[Ok(a), Ok(b), Err(2), Ok(c)]`.
fn split_path(path: &str) -> Option<Vec<std::result::Result<String, usize>>> {
    let mut out = Vec::new();
    for part in path.split('.') {
        let (key, rest) = part.split_once('[').unwrap_or((part, ""));
        if !key.is_empty() {
            out.push(Ok(key.to_string()));
        }
        for idx in rest.split('[').filter(|r| !r.is_empty()) {
            out.push(Err(idx.trim_end_matches(']').parse().ok()?));
        }
    }
    Some(out)
}

/// Gives an [`Error::InvalidField`] raised on parsed `text` (line 0) the line of its field.
pub(crate) fn with_line(err: Error, text: &str) -> Error {
    match err {
        Error::InvalidField {
            file,
            line: 0,
            field,
            value,
            expected,
        } => Error::InvalidField {
            line: line_of(text, &field).unwrap_or(0),
            file,
            field,
            value,
            expected,
        },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_of_finds_nested_fields_and_array_items() {
        let text = "{\n  \"a\": 1,\n  \"cluster\": {\"servers\": [\n    {\"x\": \"[,]\"},\n    {\"x\": 2,\n     \"cpu\": -1}\n  ]}\n}";
        assert_eq!(line_of(text, "a"), Some(2));
        assert_eq!(line_of(text, "cluster.servers[0]"), Some(4));
        assert_eq!(line_of(text, "cluster.servers[1].cpu"), Some(6));
        assert_eq!(line_of(text, "cluster.servers[1].x"), Some(5));
        assert_eq!(line_of(text, "cluster.servers[2]"), None);
        assert_eq!(line_of(text, "nosuch"), None);
    }
}
