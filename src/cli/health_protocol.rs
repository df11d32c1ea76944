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

    /// A device set's GPU↔GPU pairs, copy engine one way, three
    /// repetitions each of `elements` doubles (at most 64 MiB): nothing
    /// for one device, the host or the fake.
    pub(super) fn pairs(
        &self,
        topo: &Topology,
        elements: usize,
        stop: &crate::sys::Stop,
    ) -> Result<Vec<crate::results::peers::PeerCell>> {
        use crate::backend::gpu::peers;
        let set = crate::backend::platform_set(self.backend.spec())
            .ok()
            .flatten();
        let Some((platform, devices)) = set.filter(|(_, d)| d.len() > 1 && !self.fake()) else {
            return Ok(Vec::new());
        };
        let plan = peers::PeerPlan {
            elements: elements.clamp(1024, 1 << 23),
            ntimes: 3,
        };
        let times = peers::measure(
            platform,
            topo,
            &devices,
            plan,
            &[peers::PeerMethod::CeWrite],
            stop,
        )
        .map_err(|e| crate::error::Error::Runtime(format!("peer copies: {e}")))?;
        Ok(times.iter().map(peers::PairTimes::cell).collect())
    }

    pub(super) fn topology(&self) -> Result<Topology> {
        (self.sysroot).only_for_planning(
            self.fake.fake_source.is_some(),
            "baseline and check measure this node (a tree is for membw's own tests)",
        )?;
        read_topology(self.sysroot.dir())
    }
}
