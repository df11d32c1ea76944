//! A device set measured one device at a time (`membw check --backend
//! cuda:all`): one source per device, each plan measured on the device it
//! names. Health checks a set through it, scope by scope; `together.rs`
//! measures a set at once.

use super::source::{Source, StreamSource};
use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::plan::{Plan, Prepared, Settings};
use crate::results::Measurement;
use crate::topology::Topology;

/// Every device of a set, each behind its own backend, and the host's
/// CPUs where a node's check covers them too (index `None`).
pub struct DeviceSetSource {
    members: Vec<(Option<u32>, StreamSource)>,
}

impl DeviceSetSource {
    /// The set's backends, in the order the set names them; each one's
    /// index is its device's on the node.
    pub fn new(backends: Vec<Box<dyn Backend>>, topo: &Topology) -> Result<DeviceSetSource> {
        let members = backends
            .into_iter()
            .map(|backend| {
                let source = StreamSource { backend };
                let index = device_index(&source, topo)?;
                Ok((Some(index), source))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(DeviceSetSource { members })
    }

    /// The host's CPUs first (the node's own scopes), then every device.
    pub fn with_host(backends: Vec<Box<dyn Backend>>, topo: &Topology) -> Result<DeviceSetSource> {
        let mut set = DeviceSetSource::new(backends, topo)?;
        set.members.insert(0, (None, StreamSource::default()));
        Ok(set)
    }

    fn member(&self, device: Option<u32>) -> Result<&StreamSource> {
        match self.members.iter().find(|(d, _)| *d == device) {
            Some((_, s)) => Ok(s),
            None => Err(Error::Usage(match device {
                Some(i) => format!("device {i} is not in this set (devices {})", self.list()),
                None => "the host's memory is not measured by a device set".into(),
            })),
        }
    }

    fn list(&self) -> String {
        let ids: Vec<String> = (self.members.iter())
            .filter_map(|(i, _)| i.map(|i| i.to_string()))
            .collect();
        ids.join(", ")
    }
}

/// A backend's device index, as its plans name it.
fn device_index(source: &StreamSource, topo: &Topology) -> Result<u32> {
    let measure = crate::plan::Measure {
        elements: None,
        ntimes: 2,
        kernels: vec![crate::kernels::KernelId::Copy],
        isa: None,
        hugepages: crate::memory::Hugepages::Auto,
        offset: 0,
        shapes: Default::default(),
        gpu_memory: Default::default(),
    };
    let request = crate::placement::Request {
        spec: crate::placement::Spec::Default,
        threads: None,
        smt: false,
        cpu_nodes: None,
    };
    let probe = Settings::new(
        &measure,
        request,
        crate::plan::StoresRequest::Auto,
        Default::default(),
    );
    let plan = source.prepare(topo, &probe)?.plan;
    (plan.target.device_index()).ok_or_else(|| {
        Error::Usage(format!(
            "{} is not a device: a set holds devices",
            source.backend.name()
        ))
    })
}

impl Source for DeviceSetSource {
    fn name(&self) -> &'static str {
        "stream"
    }
    /// A plan for the set's first device (what a set's plans look like).
    fn prepare(&self, topo: &Topology, settings: &Settings) -> Result<Prepared> {
        self.prepare_on(self.members.first().and_then(|(i, _)| *i), topo, settings)
    }
    fn measure(&mut self, plan: &Plan, stop: &crate::sys::Stop) -> Result<Measurement> {
        let index = plan.target.device_index();
        let at = (self.members.iter()).position(|(i, _)| *i == index);
        match at {
            Some(at) => self.members[at].1.measure(plan, stop),
            None => Err(Error::Runtime(format!(
                "a plan for {} reached a set of devices {}",
                crate::results::targets::Target::what_is_measured(plan.target.device()),
                self.list()
            ))),
        }
    }
    fn devices(&self) -> Vec<Option<u32>> {
        self.members.iter().map(|(i, _)| *i).collect()
    }
    fn scopes(&self, device: Option<u32>, topo: &Topology) -> Vec<crate::health::Scope> {
        self.member(device)
            .map_or_else(|_| Vec::new(), |s| s.scopes(device, topo))
    }
    fn prepare_on(
        &self,
        device: Option<u32>,
        topo: &Topology,
        settings: &Settings,
    ) -> Result<Prepared> {
        self.member(device)?.prepare(topo, settings)
    }
}
