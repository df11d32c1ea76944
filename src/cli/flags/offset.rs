//! `--offset`: STREAM's OFFSET, the elements between the arrays' starts.
//! It moves where the arrays fall in cache sets and pages, so each offset
//! is another point: one for a run, a comma-separated axis for a sweep.

use crate::error::{Error, Result};
use clap::Args;

/// The most elements `--offset` moves an array: 8 MiB, past any alignment
/// and cache-set effect, far below any array.
const MAX_OFFSET: u32 = 1 << 20;

/// `--offset` (run, sweep, tune).
#[derive(Args, Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct OffsetArgs {
    /// STREAM's OFFSET (-DOFFSET=N): array b starts N elements, c 2N, past a's 2 MiB alignment, 0 to 1048576;
    /// sweep: comma-separated, each a point
    #[arg(long, value_name = "N", value_delimiter = ',', default_value = "0", allow_negative_numbers = true, value_parser = parse_offset, help_heading = "Measurement")]
    // A study keeps one offset as the number it always was, several as a list.
    #[serde(default, with = "super::one_or_many")]
    offset: Vec<usize>,
}

impl OffsetArgs {
    /// Each offset given, in order, once; 0 where none was.
    pub(crate) fn each(&self) -> Vec<usize> {
        super::one_or_many::each_once(&self.offset)
    }

    /// The one offset of a command that measures one layout.
    pub(crate) fn one(&self, command: &str) -> Result<usize> {
        match self.each()[..] {
            [offset] => Ok(offset),
            _ => Err(Error::Usage(format!(
                "--offset: {command} takes one offset; membw sweep --offset measures several"
            ))),
        }
    }
}

fn parse_offset(text: &str) -> std::result::Result<usize, String> {
    super::super::values::count(text, "elements", 0, MAX_OFFSET).map(|n| n as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offsets(values: &[usize]) -> OffsetArgs {
        OffsetArgs {
            offset: values.to_vec(),
        }
    }

    #[test]
    fn each_offset_is_a_point_once_and_one_command_takes_one() {
        assert_eq!(offsets(&[]).each(), [0]);
        assert_eq!(offsets(&[0, 1840, 0]).each(), [0, 1840]);
        assert_eq!(offsets(&[1840, 1840]).one("run").unwrap(), 1840);
        let e = offsets(&[0, 1840]).one("run").unwrap_err().to_string();
        assert!(e.contains("--offset: run takes one offset"), "{e}");
    }

    #[test]
    fn a_study_keeps_one_offset_as_a_number_and_several_as_a_list() {
        let one = serde_json::to_string(&offsets(&[64])).unwrap();
        assert_eq!(one, r#"{"offset":64}"#);
        let many = serde_json::to_string(&offsets(&[0, 64])).unwrap();
        assert_eq!(many, r#"{"offset":[0,64]}"#);
        for text in [one, many, "{}".to_string()] {
            let back: OffsetArgs = serde_json::from_str(&text).unwrap();
            assert!(!back.each().is_empty(), "{text}");
        }
        let old: OffsetArgs = serde_json::from_str(r#"{"offset":1840}"#).unwrap();
        assert_eq!(old.each(), [1840]);
    }

    #[test]
    fn an_offset_past_the_bound_is_refused_with_the_range() {
        assert_eq!(parse_offset("1048576"), Ok(1 << 20));
        let e = parse_offset("1048577").unwrap_err();
        assert!(e.contains("0 to 1048576"), "{e}");
    }
}
