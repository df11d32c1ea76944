//! `--gpu-memory`: where a GPU's kernels find their arrays. Each place is
//! another memory behind the same kernels, so each is a point: one for a
//! run, a comma-separated axis for a sweep.

use crate::error::{Error, Result};
use crate::memory::gpu_memory::{BadGpuMemory, GpuMemory};
use clap::Args;

/// `--gpu-memory` (run, sweep, tune).
#[derive(Args, Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct GpuMemoryArgs {
    /// Where a GPU's arrays live: device (its own memory), managed (migrated on demand, first
    /// written by the host; managed:prefetch moves them to the device first), host[:NODE] (pinned
    /// on a host NUMA node, the GPU's own by default, mapped: kernels cross the link),
    /// system[:NODE] (pageable memory, where the GPU reads it: HMM, ATS, XNACK); sweep:
    /// comma-separated, each a point [default: device]
    #[arg(long, value_name = "WHERE", value_delimiter = ',', value_parser = parse_gpu_memory, help_heading = "What is measured")]
    // A study keeps one place as its name, several as a list; device memory is not written.
    #[serde(
        default,
        with = "super::one_or_many",
        skip_serializing_if = "only_device"
    )]
    gpu_memory: Vec<GpuMemory>,
}

fn only_device(places: &[GpuMemory]) -> bool {
    places.iter().all(|p| *p == GpuMemory::Device)
}

impl GpuMemoryArgs {
    /// Each place given, in order, once; device memory where none was.
    pub(crate) fn each(&self) -> Vec<GpuMemory> {
        super::one_or_many::each_once(&self.gpu_memory)
    }

    /// The one place of a command that measures one.
    pub(crate) fn one(&self, command: &str) -> Result<GpuMemory> {
        match self.each()[..] {
            [place] => Ok(place),
            _ => Err(Error::Usage(format!(
                "--gpu-memory: {command} takes one place; membw sweep --gpu-memory measures several"
            ))),
        }
    }
}

fn parse_gpu_memory(text: &str) -> std::result::Result<GpuMemory, String> {
    text.parse().map_err(|e: BadGpuMemory| e.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn places(values: &[&str]) -> GpuMemoryArgs {
        GpuMemoryArgs {
            gpu_memory: values.iter().map(|v| v.parse().unwrap()).collect(),
        }
    }

    #[test]
    fn each_place_is_a_point_once_and_one_command_takes_one() {
        assert_eq!(places(&[]).each(), [GpuMemory::Device]);
        let two = places(&["managed", "host:1", "managed"]);
        assert_eq!(two.each().len(), 2);
        let e = two.one("run").unwrap_err().to_string();
        assert!(e.contains("--gpu-memory: run takes one place"), "{e}");
        assert_eq!(
            places(&["system:0"]).one("run").unwrap(),
            GpuMemory::System { node: Some(0) }
        );
    }

    #[test]
    fn a_study_writes_no_device_memory_and_reads_back_what_it_wrote() {
        assert_eq!(serde_json::to_string(&places(&[])).unwrap(), "{}");
        let one = serde_json::to_string(&places(&["managed:prefetch"])).unwrap();
        assert_eq!(one, r#"{"gpu_memory":"managed:prefetch"}"#);
        let many = serde_json::to_string(&places(&["device", "host:0"])).unwrap();
        assert_eq!(many, r#"{"gpu_memory":["device","host:0"]}"#);
        for text in [one, many, "{}".to_string()] {
            let back: GpuMemoryArgs = serde_json::from_str(&text).unwrap();
            assert!(!back.each().is_empty(), "{text}");
        }
    }
}
