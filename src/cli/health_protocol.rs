//! What `membw baseline` and `membw check` measure with: the protocol's
//! flags, shared by both, where no baseline fixes them.

use super::args::{KernelList, parse_kernel_list};
use super::common::read_topology;
use crate::engine::Source;
use crate::error::Result;
use crate::plan::Measure;
use crate::topology::Topology;
use crate::units::ArraySize;
use clap::Args;
use std::path::PathBuf;

/// What baseline and check measure with, when no baseline fixes it.
#[derive(Args, Debug)]
pub(crate) struct ProtocolArgs {
    /// Kernels to measure in every scope
    #[arg(long, value_parser = parse_kernel_list, default_value = "copy,triad")]
    pub(super) kernels: KernelList,

    /// Elements or bytes per array [default: STREAM's rule for the cores of each scope]
    #[arg(long = "array-size", visible_alias = "size", value_name = "SIZE", value_parser = super::values::parse_one_array_size)]
    size: Option<ArraySize>,

    /// Timed repetitions of each kernel per scope and round (the first is not counted)
    #[arg(long, default_value_t = 5, value_parser = super::values::parse_check_ntimes)]
    pub(super) ntimes: u32,

    /// Measure nothing: fixed rates (GB/s per thread[,slow=CPUS@SHARE]); for tests
    #[arg(long, hide = true, value_name = "RATE")]
    fake_source: Option<String>,

    #[command(flatten)]
    backend: super::common::BackendArg,

    /// Read the topology under DIR (with --fake-source only: nothing is pinned); for tests
    #[arg(long, hide = true, value_name = "DIR", requires = "fake_source")]
    sysroot: Option<PathBuf>,
}

impl ProtocolArgs {
    pub(super) fn measure(&self) -> Measure {
        Measure {
            elements: self.size.map(ArraySize::elements),
            ntimes: self.ntimes as usize,
            kernels: self.kernels.0.clone(),
            isa: None,
            hugepages: crate::memory::Hugepages::Auto,
        }
    }

    pub(super) fn source(&self) -> Result<Box<dyn Source>> {
        self.backend.source(self.fake_source.as_deref())
    }

    pub(super) fn topology(&self) -> Result<Topology> {
        read_topology(self.sysroot.as_ref())
    }
}
