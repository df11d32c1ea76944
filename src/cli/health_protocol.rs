//! What `membw baseline` and `membw check` measure with: the protocol's
//! flags, shared by both, where no baseline fixes them.

use super::common::read_topology;
use crate::engine::Source;
use crate::error::Result;
use crate::plan::Measure;
use crate::topology::Topology;
use crate::units::ArraySize;
use clap::Args;

/// What baseline and check measure with, when no baseline fixes it.
#[derive(Args, Debug)]
pub(crate) struct ProtocolArgs {
    #[command(flatten)]
    pub(super) kernels: super::flags::Kernels,

    #[command(flatten)]
    size: super::flags::ArraySizeFlag,

    #[command(flatten)]
    pub(super) ntimes: super::flags::Ntimes,

    #[command(flatten)]
    fake: super::flags::FakeSource,

    #[command(flatten)]
    backend: super::flags::BackendArg,

    #[command(flatten)]
    sysroot: super::flags::Sysroot,
}

impl ProtocolArgs {
    pub(super) fn measure(&self) -> Measure {
        Measure {
            elements: self.size.size.map(ArraySize::elements),
            ntimes: self.ntimes.ntimes as usize,
            kernels: self.kernels.or(super::flags::Kernels::HEALTH),
            isa: None,
            hugepages: crate::memory::Hugepages::Auto,
            offset: 0,
        }
    }

    /// Whether the test's fake source measures (nothing runs on the CPUs).
    pub(super) fn fake(&self) -> bool {
        self.fake.fake_source.is_some()
    }

    /// What measures: the backend, the fake, or every device of a set
    /// (`--backend cuda:all`), one after another.
    pub(super) fn source(&self, topo: &Topology) -> Result<Box<dyn Source>> {
        if self.fake.fake_source.is_none()
            && let Some(set) = self.backend.device_set()?
        {
            let set = crate::engine::set_source::DeviceSetSource::new(set, topo)?;
            return Ok(Box::new(set));
        }
        self.backend.source(self.fake.fake_source.as_deref())
    }

    pub(super) fn topology(&self) -> Result<Topology> {
        (self.sysroot).only_for_planning(
            self.fake.fake_source.is_some(),
            "baseline and check measure this node (a tree is for membw's own tests)",
        )?;
        read_topology(self.sysroot.dir())
    }
}
