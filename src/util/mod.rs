//! Small helpers every layer uses: a totally ordered `f64`, CSV reading with located errors,
//! JSON parsing with the failing field's path, and atomic file writes.

pub(crate) mod csvio;
pub(crate) mod json;
pub(crate) mod total;

pub use csvio::write_csv;
pub use json::{check_writable, write_atomic};
