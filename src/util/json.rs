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
/// interrupted or failed write never leaves a truncated file where a good one was.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = std::path::PathBuf::from(tmp);
    std::fs::write(&tmp, bytes).map_err(|e| Error::io(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| Error::io(path, e))
}
