//! CPU and node lists in the kernel's list format (`0-3,8-11`), with the
//! stride extension that taskset and numactl accept (`0-10:2`).

use std::fmt;

/// A sorted set of CPU (or NUMA node) ids without repeats.
#[derive(Debug, Clone, PartialEq, Eq, Default, Hash, serde::Serialize)]
#[serde(transparent)]
pub struct IdSet(Vec<usize>);

impl IdSet {
    pub fn new(mut ids: Vec<usize>) -> Self {
        ids.sort_unstable();
        ids.dedup();
        IdSet(ids)
    }
    pub fn ids(&self) -> &[usize] {
        &self.0
    }
    pub fn len(&self) -> usize {
        self.0.len()
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    pub fn contains(&self, id: usize) -> bool {
        self.0.binary_search(&id).is_ok()
    }
    pub fn intersects(&self, other: &IdSet) -> bool {
        self.0.iter().any(|&id| other.contains(id))
    }
    pub fn intersection(&self, other: &IdSet) -> IdSet {
        IdSet(
            self.0
                .iter()
                .copied()
                .filter(|&id| other.contains(id))
                .collect(),
        )
    }
    pub fn first(&self) -> Option<usize> {
        self.0.first().copied()
    }
}

impl FromIterator<usize> for IdSet {
    fn from_iter<I: IntoIterator<Item = usize>>(iter: I) -> Self {
        IdSet::new(iter.into_iter().collect())
    }
}

impl fmt::Display for IdSet {
    /// Compact ranges, as the kernel prints them: `0-3,8-11`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_ranges(&self.0))
    }
}

/// Formats ids (in the given order) as comma-separated runs of consecutive values.
pub fn format_ranges(ids: &[usize]) -> String {
    let mut out = String::new();
    let mut i = 0;
    while i < ids.len() {
        let start = ids[i];
        let mut end = start;
        while i + 1 < ids.len() && ids[i + 1] == end + 1 {
            end += 1;
            i += 1;
        }
        if !out.is_empty() {
            out.push(',');
        }
        if end == start {
            out.push_str(&start.to_string());
        } else {
            out.push_str(&format!("{start}-{end}"));
        }
        i += 1;
    }
    out
}

/// A parse failure with the 1-based column where the bad part starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListError {
    pub column: usize,
    pub message: String,
}

impl fmt::Display for ListError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "column {}: {}", self.column, self.message)
    }
}

/// Largest id accepted; guards against `0-99999999999` allocating a huge list.
pub const MAX_ID: usize = 1 << 16;

/// Parses `0,2,4-10:2` into ids in the order written (repeats kept, so
/// callers can refuse them). Whitespace around the list is ignored; an empty
/// list gives no ids (sysfs writes an empty line for a CPU-less node).
pub fn parse_list(text: &str) -> Result<Vec<usize>, ListError> {
    let trimmed = text.trim_end();
    let lead = trimmed.len() - trimmed.trim_start().len();
    let body = trimmed.trim_start();
    let mut ids = Vec::new();
    if body.is_empty() {
        return Ok(ids);
    }
    let mut offset = lead;
    for item in body.split(',') {
        let column = offset + 1;
        parse_item(item, column, &mut ids)?;
        offset += item.len() + 1;
    }
    Ok(ids)
}

fn parse_item(item: &str, column: usize, ids: &mut Vec<usize>) -> Result<(), ListError> {
    let err = |message: String| ListError { column, message };
    if item.trim().is_empty() {
        return Err(err("empty entry".into()));
    }
    let (range, stride) = match item.split_once(':') {
        Some((r, s)) => (r, Some(s)),
        None => (item, None),
    };
    let number = |s: &str| -> Result<usize, ListError> {
        let s = s.trim();
        let v: usize = s
            .parse()
            .map_err(|_| err(format!("'{s}' is not a number")))?;
        if v > MAX_ID {
            return Err(err(format!("{v} is larger than {MAX_ID}")));
        }
        Ok(v)
    };
    let (lo, hi) = match range.split_once('-') {
        Some((a, b)) => (number(a)?, number(b)?),
        None => {
            let v = number(range)?;
            (v, v)
        }
    };
    if hi < lo {
        return Err(err(format!("range '{}' runs backwards", range.trim())));
    }
    let step = match stride {
        Some(s) => {
            let v = number(s)?;
            if v == 0 {
                return Err(err("stride 0".into()));
            }
            v
        }
        None => 1,
    };
    ids.extend((lo..=hi).step_by(step));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn kernel_lists_parse() {
        assert_eq!(
            parse_list("0-3,8-11\n").unwrap(),
            vec![0, 1, 2, 3, 8, 9, 10, 11]
        );
        assert_eq!(parse_list("5").unwrap(), vec![5]);
        assert_eq!(parse_list("\n").unwrap(), Vec::<usize>::new());
    }

    #[test]
    fn strides_follow_taskset() {
        assert_eq!(parse_list("0,2,4-10:2").unwrap(), vec![0, 2, 4, 6, 8, 10]);
        assert_eq!(parse_list("1-7:3").unwrap(), vec![1, 4, 7]);
    }

    #[test]
    fn errors_point_at_the_bad_entry() {
        let e = parse_list("0-3,x,5").unwrap_err();
        assert_eq!(e.column, 5);
        assert!(e.message.contains("'x'"));
        assert_eq!(parse_list("0,,1").unwrap_err().column, 3);
        assert!(parse_list("7-3").unwrap_err().message.contains("backwards"));
        assert!(parse_list("0-4:0").unwrap_err().message.contains("stride"));
        assert!(parse_list("99999999999").is_err());
        // Repeats are kept, in order, for callers to refuse (--cpus "listed twice").
        assert_eq!(parse_list("1,2,1").unwrap(), vec![1, 2, 1]);
    }

    #[test]
    fn ranges_round_trip() {
        let ids = vec![0, 1, 2, 3, 8, 10, 11];
        assert_eq!(format_ranges(&ids), "0-3,8,10-11");
        assert_eq!(parse_list(&format_ranges(&ids)).unwrap(), ids);
    }

    proptest! {
        #[test]
        fn parser_never_panics(s in "\\PC{0,40}") {
            let _ = parse_list(&s);
        }

        #[test]
        fn list_like_strings_never_panic(s in "[0-9,:\\- ]{0,30}") {
            if let Ok(ids) = parse_list(&s) {
                prop_assert!(ids.iter().all(|&i| i <= MAX_ID));
            }
        }

        #[test]
        fn formatted_sets_parse_back(ids in proptest::collection::btree_set(0usize..300, 0..60)) {
            let ids: Vec<usize> = ids.into_iter().collect();
            prop_assert_eq!(parse_list(&format_ranges(&ids)).unwrap(), ids);
        }
    }
}
