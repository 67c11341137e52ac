//! Slurm host lists (`n[1-3,7]`, `gpu-[01-02],login`): expanded to node names, and written back.

use crate::error::{Error, Expected, Result};

/// The node names of a Slurm host list, in order. Ranges keep their zero padding
/// (`gpu-[08-10]` → `gpu-08 gpu-09 gpu-10`). An empty list is no node.
///
/// ```
/// use coda::slurm::expand_hostlist;
/// assert_eq!(expand_hostlist("n[1-3,7],login").unwrap(), ["n1", "n2", "n3", "n7", "login"]);
/// ```
pub fn expand_hostlist(list: &str) -> Result<Vec<String>> {
    let bad = |why: &str| Error::InvalidField {
        file: "<slurm>".into(),
        line: 0,
        field: "nodes".into(),
        value: list.to_string(),
        expected: Expected::Other(why.to_string()),
    };
    let mut names = Vec::new();
    let mut rest = list.trim();
    while !rest.is_empty() {
        // One item: a prefix, then optionally `[ranges]` and a suffix, up to a comma outside brackets.
        let mut depth = 0i32;
        let end = rest
            .char_indices()
            .find(|&(_, c)| {
                match c {
                    '[' => depth += 1,
                    ']' => depth -= 1,
                    _ => {}
                }
                c == ',' && depth == 0
            })
            .map_or(rest.len(), |(i, _)| i);
        let item = &rest[..end];
        rest = rest.get(end + 1..).unwrap_or("");
        match item.find('[') {
            None if item.contains(']') => return Err(bad("a `]` without its `[`")),
            None => names.push(item.to_string()),
            Some(open) => {
                let close = item.find(']').ok_or_else(|| bad("a `[` without its `]`"))?;
                if close < open {
                    return Err(bad("a `]` before its `[`"));
                }
                let (prefix, ranges, suffix) =
                    (&item[..open], &item[open + 1..close], &item[close + 1..]);
                for range in ranges.split(',') {
                    let (lo, hi) = range.split_once('-').unwrap_or((range, range));
                    let width = lo.len();
                    let parse = |s: &str| {
                        s.parse::<u64>()
                            .map_err(|_| bad("ranges of whole numbers inside `[...]`"))
                    };
                    let (a, b) = (parse(lo)?, parse(hi)?);
                    if b < a || b - a > 100_000 {
                        return Err(bad("ranges low-high with high >= low"));
                    }
                    for k in a..=b {
                        names.push(format!("{prefix}{k:0width$}{suffix}"));
                    }
                }
            }
        }
    }
    Ok(names)
}

/// GPU indices of a Slurm index list (`0-1,4`); an empty or `N/A` list is none.
pub(crate) fn expand_indices(list: &str) -> Option<Vec<u32>> {
    let list = list.trim();
    if list.is_empty() || list == "N/A" {
        return Some(Vec::new());
    }
    let mut out = Vec::new();
    for part in list.split(',') {
        let (lo, hi) = part.split_once('-').unwrap_or((part, part));
        let (a, b): (u32, u32) = (lo.trim().parse().ok()?, hi.trim().parse().ok()?);
        if b < a || b - a > 4096 {
            return None;
        }
        out.extend(a..=b);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_lists_expand_with_their_padding() {
        assert_eq!(expand_hostlist("n1").unwrap(), ["n1"]);
        assert_eq!(expand_hostlist("n[1-2]").unwrap(), ["n1", "n2"]);
        assert_eq!(
            expand_hostlist("gpu-[08-10]x,a").unwrap(),
            ["gpu-08x", "gpu-09x", "gpu-10x", "a"]
        );
        assert!(expand_hostlist("").unwrap().is_empty());
        assert!(expand_hostlist("n[1-").is_err());
        assert!(expand_hostlist("n[3-1]").is_err());
        assert!(expand_hostlist("n[a-b]").is_err());
    }

    #[test]
    fn index_lists_expand() {
        assert_eq!(expand_indices("0-1,4"), Some(vec![0, 1, 4]));
        assert_eq!(expand_indices("N/A"), Some(vec![]));
        assert_eq!(expand_indices("x"), None);
    }
}
