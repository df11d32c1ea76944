//! `--backend` (run, sweep, tune, baseline, check): what the arrays
//! are on and how kernels run over them, the source it makes, and the
//! studies of CPUs that a device's target refuses.

use crate::backend::BackendSpec;
use crate::error::{Error, Result};

/// What `--backend` names, made once: one backend, or a device set's.
pub(crate) enum Chosen {
    One(Box<dyn crate::backend::Backend>),
    /// A device set's backends, and the set they were made from.
    Set(
        Vec<Box<dyn crate::backend::Backend>>,
        crate::backend::PlatformSet,
    ),
}

impl Chosen {
    /// The source of one backend: membw's kernels on it.
    pub(crate) fn source(
        backend: Box<dyn crate::backend::Backend>,
    ) -> Box<dyn crate::engine::Source> {
        Box::new(crate::engine::source::StreamSource { backend })
    }
}

/// The device the source measures, where its backend's target is one
/// (its plan for the default request says): what a command whose study is
/// of CPUs (tune, the NUMA matrix, the tier study) refuses, naming itself,
/// rather than blaming a flag the user did not give.
pub(crate) fn refuse_device(
    source: &dyn crate::engine::Source,
    topo: &crate::topology::Topology,
    measure: &crate::plan::Measure,
    what: &str,
) -> Result<()> {
    match device_target(source, topo, measure) {
        Some(device) => Err(Error::Usage(format!(
            "{what} studies CPUs, and the backend's target is {device}: measure it with membw run, or membw sweep --working-sets"
        ))),
        None => Ok(()),
    }
}

/// The device the source's target is, described, where it is one (its
/// plan for the default request says).
pub(crate) fn device_target(
    source: &dyn crate::engine::Source,
    topo: &crate::topology::Topology,
    measure: &crate::plan::Measure,
) -> Option<String> {
    // What the target is does not depend on sizes or CPU settings: asked
    // with the backend's defaults, so that a size from this host's caches
    // (past the simulated device's memory) cannot hide the answer.
    let neutral = crate::plan::Measure {
        elements: None,
        isa: None,
        hugepages: crate::memory::Hugepages::Auto,
        shapes: Default::default(),
        ..measure.clone()
    };
    let settings = crate::plan::Settings::new(
        &neutral,
        crate::placement::Request {
            spec: crate::placement::Spec::Default,
            threads: None,
            smt: false,
            cpu_nodes: None,
        },
        crate::plan::StoresRequest::Auto,
        Default::default(),
    );
    // Only a target the host's threads do not describe has a line of its own.
    (source.prepare(topo, &settings).ok()).and_then(|p| p.plan.target.describe())
}

/// `--backend`: what the arrays are on and how kernels run over them,
/// for every command that measures bandwidth.
#[derive(clap::Args, Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct BackendArg {
    /// What runs the kernels, over whose memory: cpu (this node's CPUs, the pinned SIMD team);
    /// cuda:N (NVIDIA GPU N by the driver's index, its memory and its host link: membw topo
    /// lists the GPUs; cuda alone is cuda:0, or each MPI rank's own); cuda:all or cuda:0-3,6
    /// (a device set: run measures each alone, then all at once; baseline and check hold each
    /// against its baseline or its siblings); sim:N (a simulated
    /// device, sim:0 to sim:3, for tests); portable (one thread, portable loops, for tests)
    #[arg(
        long,
        value_name = "NAME[:N|:all|:LIST]",
        default_value = "cpu",
        value_parser = parse_backend,
        conflicts_with = "fake_source",
        help_heading = "What is measured"
    )]
    backend: BackendSpec,
}

/// `--backend`, parsed once: its words checked here, its devices when the
/// backends are made.
fn parse_backend(text: &str) -> std::result::Result<BackendSpec, String> {
    text.parse()
}

impl BackendArg {
    /// The value as given (`cuda:0`).
    pub(crate) fn name(&self) -> &str {
        self.backend.written()
    }

    /// What it names, parsed.
    pub(crate) fn spec(&self) -> &BackendSpec {
        &self.backend
    }

    /// A refusal of what it names, quoting it.
    fn usage(&self, why: String) -> Error {
        Error::Usage(format!("--backend {}: {why}", self.backend))
    }

    /// The backend it names.
    pub(crate) fn backend(&self) -> Result<Box<dyn crate::backend::Backend>> {
        crate::backend::make_one(&self.backend).map_err(|e| self.usage(e))
    }

    /// The backends it names, each made once (making one asks the
    /// vendor's driver for its devices): one backend, or a device set's
    /// (`cuda:all`, `sim:0-3`), one per device, with the set they were
    /// made from. For the commands that take a set; the source of one is
    /// [`Chosen::source`].
    pub(crate) fn chosen(&self) -> Result<Chosen> {
        let set = crate::backend::platform_set(&self.backend).map_err(|e| self.usage(e))?;
        let Some(gpus) = set else {
            return self.backend().map(Chosen::One);
        };
        let mut set = crate::backend::set_backends(gpus.clone());
        Ok(match set.len() {
            1 => Chosen::One(set.remove(0)),
            _ => Chosen::Set(set, gpus),
        })
    }

    /// The backends of one rank of an MPI run (`backend::for_rank`).
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    pub(crate) fn for_rank(
        &self,
        launch: &crate::ranks::launcher::RankPlace,
    ) -> Result<Vec<Box<dyn crate::backend::Backend>>> {
        crate::backend::for_rank(&self.backend, launch.local_rank, launch.local_size)
            .map_err(|e| self.usage(e))
    }

    /// The source: this backend, or the fake that `--fake-source` names.
    pub(crate) fn source(
        &self,
        fake: Option<&str>,
    ) -> Result<Box<dyn crate::engine::source::Source>> {
        match fake {
            None => Ok(Chosen::source(self.backend()?)),
            Some(spec) => crate::engine::source::FakeSource::parse(spec)
                .map(|f| Box::new(f) as Box<dyn crate::engine::source::Source>)
                .map_err(|e| Error::Usage(format!("--fake-source {e}"))),
        }
    }
}
