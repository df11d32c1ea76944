//! A bandwidth results file read point by point: records of the same point
//! on the same host (a daily `run -o` appended for a year, every node of a
//! job appending to one file) become one record whose runs are all of
//! theirs, so a report holds one record per point, however long the file.

use super::Record;
use super::file::{Collect, Lines};
use std::collections::HashMap;

/// Records folded by point as they are read.
pub(super) struct ByPoint {
    pub lines: Lines<Record>,
    /// (host, the point's whole JSON) → its index in `lines.items`.
    index: HashMap<(String, String), usize>,
    /// Indices of records that took in another's runs.
    pooled: Vec<usize>,
}

impl ByPoint {
    pub fn new() -> ByPoint {
        ByPoint {
            lines: Lines {
                items: Vec::new(),
                torn: None,
            },
            index: HashMap::new(),
            pooled: Vec::new(),
        }
    }

    /// The records, each pooled one's statistics over all its runs.
    pub fn finish(mut self) -> Lines<Record> {
        self.pooled.sort_unstable();
        self.pooled.dedup();
        for &i in &self.pooled {
            let r = &mut self.lines.items[i];
            r.payload.stats = Record::stats_of(&r.runs);
        }
        self.lines
    }
}

/// Records of several results files as one file of them all would read:
/// the same point on the same host pooled into one record of all its runs.
pub fn pooled(records: impl IntoIterator<Item = Record>) -> Vec<Record> {
    let mut by_point = ByPoint::new();
    for record in records {
        by_point.push(record);
    }
    by_point.finish().items
}

impl Collect<Record> for ByPoint {
    fn push(&mut self, record: Record) {
        // The whole point, sizes included (a program's key leaves them out).
        let point = serde_json::to_string(&record.point).unwrap_or_default();
        let key = (record.host.hostname.clone(), point);
        match self.index.get(&key) {
            Some(&i) => {
                let kept = &mut self.lines.items[i];
                kept.payload.runs.extend(record.payload.runs);
                kept.timestamp = record.timestamp;
                self.pooled.push(i);
            }
            None => {
                self.index.insert(key, self.lines.items.len());
                self.lines.items.push(record);
            }
        }
    }

    fn torn(&mut self, at: (usize, u64)) {
        self.lines.torn = Some(at);
    }
}
