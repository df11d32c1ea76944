//! Where a health rate was measured, as people read it and files spell
//! it, and which scopes a target has (its backend supplies them).

use crate::kernels::{ArrayId, KernelId};
use crate::memory::gpu_memory::GpuMemory;
use crate::topology::Topology;
use serde::{Deserialize, Serialize};

/// The NUMA domains a host scope is measured in: those with CPUs and
/// memory this process may use. One domain is the node itself, so none is
/// listed then.
pub fn domains(topo: &Topology) -> Vec<usize> {
    let ids: Vec<usize> = (topo.nodes.iter())
        .filter(|n| n.cpus.intersects(&topo.allowed_cpus) && topo.allowed_mems.contains(n.id))
        .map(|n| n.id)
        .collect();
    if ids.len() < 2 { Vec::new() } else { ids }
}

/// The NUMA domain whose cores are nearest node `m`'s memory (the
/// firmware's distances; the lowest id among equals), of those this
/// process may use; none where no distance is known.
fn nearest_cpus(topo: &Topology, m: usize) -> Option<usize> {
    (topo.nodes.iter())
        .filter(|n| n.cpus.intersects(&topo.allowed_cpus))
        .filter_map(|n| Some((topo.distance(n.id, m)?, n.id)))
        .min()
        .map(|(_, id)| id)
}

/// Where a rate was measured: every allowed core on local memory, or the
/// cores of one NUMA domain on that domain's memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scope {
    Node,
    Numa(usize),
    /// Device I's own memory (the backend's target), measured whole.
    Device(u32),
    /// Device I's host link, to and from host buffers on NUMA node N.
    HostLink(u32, usize),
    /// The cores of NUMA domain C on the memory of node M, a node without
    /// CPUs (a superchip's HBM, a CXL expander) that C is nearest.
    NumaOn(usize, usize),
    /// Device I's kernels over host memory on a node (`system:N` or
    /// `host:N`): a superchip's GPU over its CPU's memory.
    DeviceOn(u32, GpuMemory),
}

impl std::fmt::Display for Scope {
    /// As people read it: `node`, `NUMA node 3`, `device 2`, `device 2
    /// link from node 0`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Scope::Node => f.write_str("node"),
            Scope::Numa(n) => write!(f, "NUMA node {n}"),
            Scope::Device(i) => write!(f, "device {i}"),
            Scope::HostLink(i, n) => write!(f, "device {i} link from node {n}"),
            Scope::NumaOn(c, m) => write!(f, "NUMA node {c} on node {m}'s memory"),
            Scope::DeviceOn(i, place) => match (place, place.node()) {
                (GpuMemory::System { .. }, Some(n)) => {
                    write!(f, "device {i} on node {n}'s pageable memory")
                }
                (GpuMemory::Host { .. }, Some(n)) => {
                    write!(f, "device {i} on node {n}'s pinned memory")
                }
                _ => write!(f, "device {i} on {place}"),
            },
        }
    }
}

impl Scope {
    /// As files spell it: `node`, `numa:3`, `device:2`, `device:2/link:0`.
    pub fn key(&self) -> String {
        match self {
            Scope::Node => "node".into(),
            Scope::Numa(n) => format!("numa:{n}"),
            Scope::Device(i) => format!("device:{i}"),
            Scope::HostLink(i, n) => format!("device:{i}/link:{n}"),
            Scope::NumaOn(c, m) => format!("numa:{c}/mem:{m}"),
            Scope::DeviceOn(i, place) => format!("device:{i}/{place}"),
        }
    }

    /// A key as files spell it. The keys of files from before device sets
    /// (`device`, `link:N`) name device 0 here; a baseline's scopes take
    /// their device's index from the device they record.
    pub fn parse(text: &str) -> Option<Scope> {
        let link = |t: &str| t.strip_prefix("link:")?.parse().ok();
        match text {
            "node" => Some(Scope::Node),
            "device" => Some(Scope::Device(0)),
            _ => {
                if let Some(n) = text.strip_prefix("numa:") {
                    return match n.split_once("/mem:") {
                        None => n.parse().ok().map(Scope::Numa),
                        Some((c, m)) => Some(Scope::NumaOn(c.parse().ok()?, m.parse().ok()?)),
                    };
                }
                if let Some(n) = link(text) {
                    return Some(Scope::HostLink(0, n));
                }
                let rest = text.strip_prefix("device:")?;
                match rest.split_once('/') {
                    None => rest.parse().ok().map(Scope::Device),
                    Some((i, l)) if l.starts_with("link:") => {
                        Some(Scope::HostLink(i.parse().ok()?, link(l)?))
                    }
                    // Only host memory on a named node is a scope.
                    Some((i, place)) => (place.parse::<GpuMemory>().ok())
                        .filter(|p| p.is_host() && p.node().is_some())
                        .map(|p| Some(Scope::DeviceOn(i.parse().ok()?, p)))?,
                }
            }
        }
    }

    /// The host CPUs' scopes, as a backend that works on them supplies
    /// them: the whole node, then each NUMA domain's cores on its memory,
    /// then each node of memory without CPUs (a GH200's HBM, a CXL
    /// expander) with the cores of the domain nearest it.
    pub fn of_host(topo: &Topology) -> Vec<Scope> {
        let domains = domains(topo).into_iter().map(Scope::Numa);
        let without_cpus = (topo.nodes.iter())
            .filter(|n| n.cpus.is_empty() && !n.memoryless() && topo.allowed_mems.contains(n.id))
            .filter_map(|m| Some(Scope::NumaOn(nearest_cpus(topo, m.id)?, m.id)));
        (std::iter::once(Scope::Node).chain(domains))
            .chain(without_cpus)
            .collect()
    }

    /// Device `index`'s scopes, as its backend supplies them: its own
    /// memory, then its host link from each memory node this process may
    /// use.
    pub fn of_device_at(index: u32, topo: &Topology) -> Vec<Scope> {
        let links = (topo.nodes.iter())
            .filter(|n| topo.allowed_mems.contains(n.id) && !n.memoryless())
            .map(|n| Scope::HostLink(index, n.id));
        std::iter::once(Scope::Device(index)).chain(links).collect()
    }

    /// A superchip GPU's scopes beyond [`Self::of_device_at`]'s, its
    /// memory being host node `own`: where that node has no CPUs (a
    /// GH200's HBM), its kernels over the memory of the CPUs nearest it
    /// (its Grace's LPDDR), as ported code reaches it: pageable memory
    /// where the device `reads_pageable`, else pinned and mapped. An APU's
    /// memory is its CPUs' own (an MI300A's): nothing more to cover.
    pub fn of_superchip_device(
        index: u32,
        own: usize,
        reads_pageable: bool,
        topo: &Topology,
    ) -> Vec<Scope> {
        let apu = topo.nodes.iter().any(|n| n.id == own && !n.cpus.is_empty());
        let cpus = nearest_cpus(topo, own).filter(|&n| !apu && topo.allowed_mems.contains(n));
        (cpus.into_iter())
            .map(|n| {
                let node = Some(n);
                Scope::DeviceOn(
                    index,
                    match reads_pageable {
                        true => GpuMemory::System { node },
                        false => GpuMemory::Host { node },
                    },
                )
            })
            .collect()
    }

    /// The kernels a new baseline measures in this scope, of those
    /// `asked`: a device's memory and the host's take those over memory
    /// (none, and the scope is left out), a link those over host buffers
    /// (the copy engine's three where none is asked).
    pub fn kernels(&self, asked: &[KernelId]) -> Vec<KernelId> {
        let on_link = |k: &&KernelId| k.spec().arrays().any(ArrayId::host_buffer);
        match self {
            Scope::Node
            | Scope::Numa(_)
            | Scope::NumaOn(..)
            | Scope::Device(_)
            | Scope::DeviceOn(..) => asked.iter().filter(|k| !on_link(k)).copied().collect(),
            Scope::HostLink(..) => {
                let link: Vec<KernelId> = asked.iter().filter(on_link).copied().collect();
                match link.is_empty() {
                    true => vec![KernelId::H2d, KernelId::D2h, KernelId::Bidir],
                    false => link,
                }
            }
        }
    }

    /// The kernels a check measures in this scope: a device's scopes each
    /// keep their own (`recorded`: its memory's, its link's), the host's
    /// the baseline's protocol's that run on CPUs (a node's baseline also
    /// names its devices' transfers).
    pub fn checked_kernels(&self, recorded: &[KernelId], protocol: &[KernelId]) -> Vec<KernelId> {
        match self {
            Scope::Device(_) | Scope::HostLink(..) | Scope::DeviceOn(..) => recorded.to_vec(),
            Scope::Node | Scope::Numa(_) | Scope::NumaOn(..) => self.kernels(protocol),
        }
    }

    /// The stores a check asks for in this scope, where the baseline
    /// recorded `stores`: the same on the host's CPUs; none for a device,
    /// which has no CPU stores to ask for.
    pub fn checked_stores(
        &self,
        stores: crate::kernels::StoreMode,
    ) -> Option<crate::kernels::StoreMode> {
        match self {
            Scope::Device(_) | Scope::HostLink(..) | Scope::DeviceOn(..) => None,
            Scope::Node | Scope::Numa(_) | Scope::NumaOn(..) => Some(stores),
        }
    }

    /// The device a scope measures, for a device's scopes.
    pub fn device_index(&self) -> Option<u32> {
        match self {
            Scope::Device(i) | Scope::HostLink(i, _) | Scope::DeviceOn(i, _) => Some(*i),
            Scope::Node | Scope::Numa(_) | Scope::NumaOn(..) => None,
        }
    }

    /// The NUMA node whose cores a scope runs on, where it is one
    /// domain's.
    pub fn cpu_node(&self) -> Option<usize> {
        match self {
            Scope::Numa(n) | Scope::NumaOn(n, _) => Some(*n),
            Scope::Node | Scope::Device(_) | Scope::HostLink(..) | Scope::DeviceOn(..) => None,
        }
    }

    /// The NUMA node whose memory a scope binds, where it binds one: a
    /// domain's own or the node it is on, or the host buffers of a
    /// device's link from it. (A device's arrays on host memory are
    /// placed by [`Self::gpu_memory`].)
    pub fn memory_node(&self) -> Option<usize> {
        match self {
            Scope::Numa(n) | Scope::HostLink(_, n) | Scope::NumaOn(_, n) => Some(*n),
            Scope::Node | Scope::Device(_) | Scope::DeviceOn(..) => None,
        }
    }

    /// The memory node a scope's CPUs reach that is not theirs (the cores
    /// nearest a node without CPUs: an HBM or CXL node): its peak is the
    /// firmware's figure for that node, not the sockets'.
    pub fn other_memory_node(&self) -> Option<usize> {
        match self {
            Scope::NumaOn(_, m) => Some(*m),
            Scope::Node
            | Scope::Numa(_)
            | Scope::Device(_)
            | Scope::HostLink(..)
            | Scope::DeviceOn(..) => None,
        }
    }

    /// Where a device's arrays live in this scope: host memory on a node
    /// for its kernels over it, else its own.
    pub fn gpu_memory(&self) -> GpuMemory {
        match self {
            Scope::DeviceOn(_, place) => *place,
            Scope::Node
            | Scope::Numa(_)
            | Scope::NumaOn(..)
            | Scope::Device(_)
            | Scope::HostLink(..) => GpuMemory::Device,
        }
    }

    /// Whether it measures a whole memory (the node's, a device's): what a
    /// share of the theoretical peak judges.
    pub fn whole_memory(&self) -> bool {
        matches!(self, Scope::Node | Scope::Device(_))
    }

    /// What a message calls it: `this node`, `NUMA node 3`, `device 2`.
    pub fn named(&self) -> String {
        match self {
            Scope::Node => "this node".into(),
            other => other.to_string(),
        }
    }

    /// Its labels for a metric (`scope="numa",numa_node="3"`); a device's
    /// scope carries its device's labels (`device`: by index).
    pub fn labels(&self, device: impl Fn(u32) -> String) -> String {
        match self {
            Scope::Node => "scope=\"node\"".into(),
            Scope::Numa(n) => format!("scope=\"numa\",numa_node=\"{n}\""),
            Scope::Device(i) => device(*i),
            Scope::HostLink(i, n) => format!("{},host_node=\"{n}\"", device(*i)),
            Scope::NumaOn(c, m) => format!("scope=\"numa\",numa_node=\"{c}\",memory_node=\"{m}\""),
            Scope::DeviceOn(i, place) => format!("{},gpu_memory=\"{place}\"", device(*i)),
        }
    }

    /// Why a recorded scope's threads and device do not fit it, as (the
    /// field, its problem): a device's scope names its device and has no
    /// CPU threads; the host's have threads.
    pub fn check_recorded(
        &self,
        threads: usize,
        names_device: bool,
    ) -> Result<(), (&'static str, String)> {
        match (self.device_index(), threads, names_device) {
            (Some(_), _, false) => Err(("device", "is missing".into())),
            (Some(_), 0, true) => Ok(()),
            (Some(_), n, true) => Err(("threads", format!("is {n}: a device has no threads"))),
            (None, 0, _) => Err(("threads", "is 0".into())),
            (None, _, _) => Ok(()),
        }
    }

    /// The same scope of device `index`.
    pub fn of_device(self, index: u32) -> Scope {
        match self {
            Scope::Device(_) => Scope::Device(index),
            Scope::HostLink(_, n) => Scope::HostLink(index, n),
            Scope::DeviceOn(_, place) => Scope::DeviceOn(index, place),
            other => other,
        }
    }

    /// Scopes that measure the same thing on identical hardware, and so
    /// must show the same rate: the NUMA domains, the devices' memories,
    /// the devices' links from one host node.
    pub fn siblings(&self) -> Option<Siblings> {
        match self {
            Scope::Node => None,
            Scope::Numa(_) => Some(Siblings::Domains),
            Scope::Device(_) => Some(Siblings::Devices),
            Scope::HostLink(_, n) => Some(Siblings::Links(*n)),
            // Each is its own pairing of processor and memory.
            Scope::NumaOn(..) | Scope::DeviceOn(..) => None,
        }
    }
}

/// A class of [`Scope::siblings`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Siblings {
    Domains,
    Devices,
    /// The devices' links from this host node.
    Links(usize),
}

impl Serialize for Scope {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.key())
    }
}

impl<'de> Deserialize<'de> for Scope {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Scope, D::Error> {
        let text = String::deserialize(d)?;
        Scope::parse(&text).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "scope '{text}' (node, numa:N, numa:N/mem:M, device:I, device:I/link:N or device:I/system:N)"
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::StoreMode;

    fn two_sockets() -> Topology {
        // Written and read once: each tree costs a second of file I/O.
        static MACHINE: std::sync::OnceLock<Topology> = std::sync::OnceLock::new();
        (MACHINE.get_or_init(|| crate::topology::fixture::machine("xeon-e5-2680v3-2s").1)).clone()
    }

    #[test]
    fn the_host_has_the_node_and_each_domain_a_device_its_memory_and_a_link_per_node() {
        let topo = two_sockets();
        assert_eq!(
            Scope::of_host(&topo),
            [Scope::Node, Scope::Numa(0), Scope::Numa(1)]
        );
        assert_eq!(
            Scope::of_device_at(3, &topo),
            [
                Scope::Device(3),
                Scope::HostLink(3, 0),
                Scope::HostLink(3, 1)
            ]
        );
    }

    #[test]
    fn each_scope_takes_its_own_kernels_of_those_asked() {
        use KernelId::*;
        let asked = [Copy, Triad, H2d];
        assert_eq!(Scope::Node.kernels(&asked), [Copy, Triad]);
        assert_eq!(Scope::Numa(1).kernels(&asked), [Copy, Triad]);
        assert_eq!(Scope::Device(0).kernels(&asked), [Copy, Triad]);
        assert_eq!(Scope::HostLink(0, 1).kernels(&asked), [H2d]);
        // A link asked nothing of its own runs the copy engine's three; a
        // device's memory asked nothing of its own is left out.
        assert_eq!(Scope::HostLink(0, 0).kernels(&[Triad]), [H2d, D2h, Bidir]);
        assert!(Scope::Device(0).kernels(&[H2d]).is_empty());
    }

    #[test]
    fn a_check_asks_a_device_for_its_recorded_kernels_and_no_cpu_stores() {
        let (recorded, protocol) = ([KernelId::Triad], [KernelId::Copy, KernelId::Triad]);
        assert_eq!(
            Scope::Device(1).checked_kernels(&recorded, &protocol),
            recorded
        );
        assert_eq!(
            Scope::Numa(0).checked_kernels(&recorded, &protocol),
            protocol
        );
        // A node's baseline names its devices' transfers too: not the CPUs'.
        let node = [
            KernelId::Copy,
            KernelId::Triad,
            KernelId::H2d,
            KernelId::Bidir,
        ];
        assert_eq!(Scope::Node.checked_kernels(&recorded, &node), protocol);
        assert_eq!(Scope::HostLink(1, 0).checked_stores(StoreMode::Nt), None);
        assert_eq!(
            Scope::Node.checked_stores(StoreMode::Nt),
            Some(StoreMode::Nt)
        );
    }

    /// Two sockets whose second node lost its CPUs: node 1 is memory
    /// without CPUs, as a GH200's HBM node is (in memory: a superchip's
    /// fixture tree costs seconds to write and read).
    fn cpu_and_hbm() -> Topology {
        let mut topo = two_sockets();
        topo.nodes[1].cpus = crate::topology::cpulist::IdSet::new(Vec::new());
        topo
    }

    #[test]
    fn a_superchip_adds_the_cpus_over_hbm_and_the_gpu_over_the_cpus_memory() {
        let gh200 = cpu_and_hbm();
        // No domains (one node of CPUs); the HBM node with the cores
        // nearest it.
        assert_eq!(Scope::of_host(&gh200), [Scope::Node, Scope::NumaOn(0, 1)]);
        let system = GpuMemory::System { node: Some(0) };
        assert_eq!(
            Scope::of_superchip_device(0, 1, true, &gh200),
            [Scope::DeviceOn(0, system)]
        );
        let pinned = GpuMemory::Host { node: Some(0) };
        assert_eq!(
            Scope::of_superchip_device(2, 1, false, &gh200),
            [Scope::DeviceOn(2, pinned)]
        );
        // An APU's memory is its CPUs' own: nothing more.
        let apus = two_sockets();
        assert!(Scope::of_superchip_device(1, 1, true, &apus).is_empty());
        assert_eq!(Scope::of_host(&apus).len(), 3);
    }

    #[test]
    fn the_new_scopes_keep_their_keys_and_refuse_what_is_not_host_memory() {
        let system = Scope::DeviceOn(1, GpuMemory::System { node: Some(0) });
        for scope in [Scope::NumaOn(0, 2), system] {
            assert_eq!(Scope::parse(&scope.key()), Some(scope), "{}", scope.key());
        }
        assert_eq!(system.key(), "device:1/system:0");
        assert_eq!(Scope::NumaOn(0, 2).key(), "numa:0/mem:2");
        assert_eq!(system.to_string(), "device 1 on node 0's pageable memory");
        assert_eq!(system.gpu_memory(), GpuMemory::System { node: Some(0) });
        assert_eq!(Scope::Device(1).gpu_memory(), GpuMemory::Device);
        assert_eq!(Scope::NumaOn(0, 2).memory_node(), Some(2));
        assert_eq!(Scope::NumaOn(0, 2).cpu_node(), Some(0));
        for bad in [
            "device:0/managed", "device:0/system", "device:0/device", "numa:0/mem:x",
        ] {
            assert_eq!(Scope::parse(bad), None, "{bad}");
        }
    }
}
