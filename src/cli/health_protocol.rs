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
    fake: super::flags::FakeSourceArg,

    #[command(flatten)]
    backend: super::flags::BackendArg,

    /// Arrays under STREAM's rule (a --size that fits in or near the caches): measured, not
    /// refused, and each scope's band (cache bandwidth, caches may still help) named in the
    /// baseline and every verdict; a check compares only with a baseline of the same size
    #[arg(long, help_heading = "What is measured")]
    pub(super) small: bool,

    /// With no --backend on a GPU node: the CPUs only (by default baseline and check cover the
    /// CPUs and every GPU of the first GPU runtime that loads and sees one)
    #[arg(long, help_heading = "What is measured")]
    no_gpus: bool,

    /// Whether --backend was on the command line (set after parsing).
    #[arg(skip)]
    pub(super) backend_given: bool,

    #[command(flatten)]
    pub(super) dry_run: super::flags::DryRun,

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
            shapes: Default::default(),
            gpu_memory: Default::default(),
        }
    }

    /// Whether the test's fake source measures (nothing runs on the CPUs).
    pub(super) fn fake(&self) -> bool {
        self.fake.fake_source.is_some()
    }

    /// What measures, resolved once (each driver asked for its devices
    /// once): the backend, the fake, or every device of a set (the node's
    /// GPUs, or `--backend cuda:all`), one after another; with the set
    /// whose pairs are probed after the rounds.
    pub(super) fn source(
        &self,
        topo: &Topology,
    ) -> Result<(Box<dyn Source>, Option<crate::backend::PlatformSet>)> {
        use super::flags::Chosen;
        use crate::engine::set_source::DeviceSetSource;
        if let Some(gpus) = self.node_gpus(topo) {
            let set = crate::backend::set_backends(gpus.clone());
            return Ok((Box::new(DeviceSetSource::with_host(set, topo)?), Some(gpus)));
        }
        if self.fake() {
            return Ok((self.backend.source(self.fake.fake_source.as_deref())?, None));
        }
        Ok(match self.backend.chosen()? {
            Chosen::Set(set, gpus) => (Box::new(DeviceSetSource::new(set, topo)?), Some(gpus)),
            Chosen::One(backend) => (Chosen::source(backend), None),
        })
    }

    /// The GPUs a node's check covers beside its CPUs: every GPU of the
    /// first runtime (in the registry's order) that loads and sees one,
    /// where --backend was not given (nor --no-gpus); none where no
    /// runtime loads or none sees a GPU. The GPUs on the PCI bus it leaves
    /// out (another maker's, a runtime that does not load) are named on
    /// stderr, with the --backend that checks them where there is one.
    /// The tests' simulated node stands for them where `MEMBW_SIM_DEVICE`
    /// sets it up.
    fn node_gpus(&self, topo: &Topology) -> Option<crate::backend::PlatformSet> {
        if self.backend_given || self.no_gpus || self.fake() {
            return None;
        }
        let simulated = std::env::var_os(crate::backend::sim::SETUP_VARIABLE).is_some();
        let (found, left_out) = crate::backend::node_gpus(topo, simulated);
        for line in left_out {
            crate::say!("membw: this check leaves out {line}");
        }
        found
    }

    /// The GPU↔GPU pairs of `set` (the one [`Self::source`] found), copy
    /// engine one way, three repetitions each of `elements` doubles (at
    /// most 64 MiB): nothing for one device, the host or the fake.
    pub(super) fn pairs(
        &self,
        topo: &Topology,
        set: Option<crate::backend::PlatformSet>,
        elements: usize,
        stop: &crate::sys::Stop,
    ) -> Result<Vec<crate::results::peers::PeerCell>> {
        use crate::backend::gpu::peers;
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
        let mut cells: Vec<_> = times.iter().map(peers::PairTimes::cell).collect();
        let described = (devices.iter())
            .map(|&i| platform.describe(i, topo).map(|d| d.device))
            .collect::<std::result::Result<Vec<_>, String>>()
            .map_err(crate::error::Error::Runtime)?;
        crate::results::peers::add_paths(&mut cells, &described);
        Ok(cells)
    }

    /// The scopes of a new baseline (or a check without one) of every
    /// device `source` measures, with this protocol.
    pub(super) fn scope_jobs(
        &self,
        topo: &Topology,
        source: &dyn Source,
    ) -> Result<Vec<crate::engine::scopes::ScopeJob>> {
        crate::engine::scopes::every_device(topo, &self.measure(), source, self.small)
    }

    /// `--dry-run`: the scopes `jobs` would measure, printed; nothing
    /// measured.
    pub(super) fn show_plan(
        &self,
        command: &str,
        jobs: &[crate::engine::scopes::ScopeJob],
    ) -> Result<()> {
        let node = (self.sysroot.dir()).map_or("this node".into(), |d| d.display().to_string());
        let jobs: Vec<(String, &crate::plan::Plan)> = (jobs.iter())
            .map(|j| (j.scope.to_string(), &j.plan))
            .collect();
        super::common::print(crate::report::plan::render_scopes(command, &node, &jobs))
    }

    pub(super) fn topology(&self) -> Result<Topology> {
        (self.sysroot).only_for_planning(
            self.fake.fake_source.is_some() || self.dry_run.dry_run,
            "baseline and check measure this node (add --dry-run to see what they would)",
        )?;
        read_topology(self.sysroot.dir())
    }
}
