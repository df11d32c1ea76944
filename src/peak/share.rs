//! Whether a peak given for whole sockets belongs to the CPUs this process
//! may use. A socket's channels serve all of its CPUs: a virtual machine's
//! CPUs, a cgroup or a job allocation get an unknown share of them, so a
//! figure for whole sockets (SMBIOS, the built-in table, the firmware's)
//! is no peak of theirs, while the user's figure is, by definition. One
//! rule, used by every command that prints a share of the peak.

use super::{Peak, PeakSource};
use crate::topology::Topology;

/// The CPUs this process may use, as a share of the sockets they are on:
/// what decides whether a peak given for whole sockets applies to them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Share {
    /// Every CPU of `sockets` sockets.
    WholeSockets { sockets: usize },
    /// A virtual machine: its sockets are a slice of the host's, whose
    /// size the guest cannot see.
    VirtualMachine,
    /// Some of the CPUs of the sockets they are on (a cgroup, a Slurm
    /// allocation, taskset).
    SomeCpus { allowed: usize, of: usize },
}

/// How a reason that a whole-socket peak is not these CPUs' says so.
const NOT_THEIRS: &str = "is not theirs";

/// Whether a recorded reason for no peak (`peak_unknown`) is that the
/// known one is not these CPUs' rather than that none is known: the lines
/// that print it head it "no share of the peak", not "unknown".
pub fn is_not_theirs(reason: &str) -> bool {
    reason.contains(NOT_THEIRS)
}

/// The peak the node's triad is held against, or why none can be: the
/// user's figure always stands for what this process may use; a figure
/// for whole sockets (SMBIOS, the built-in table) only where it has whole
/// sockets, since a slice of a socket gets an unknown share of its channels.
pub fn peak_to_judge(peak: &Peak, share: Share) -> Result<f64, String> {
    // The user's figure, or a device's own: the whole of what is measured.
    if matches!(peak.source, PeakSource::User | PeakSource::Device) {
        return Ok(peak.node_gb_s());
    }
    let whole = format!(
        "{:.1} GB/s peak ({}) {NOT_THEIRS}",
        peak.for_sockets(peak.sockets),
        peak.source_name()
    );
    match share {
        Share::WholeSockets { sockets } => Ok(peak.for_sockets(sockets)),
        Share::VirtualMachine => Err(format!(
            "this virtual machine's CPUs are a slice of the host's sockets, whose {whole}"
        )),
        Share::SomeCpus { allowed, of } => Err(format!(
            "this process may use {allowed} of the {of} CPUs of its sockets (a cgroup, a job allocation or taskset), and the sockets' {whole}"
        )),
    }
}

/// Why `peak` is not the peak of the CPUs this process may use, where it
/// is not: a figure for whole sockets on a slice of them. The line ends
/// with what to give instead.
pub fn not_theirs(peak: &Peak, topo: &Topology) -> Option<String> {
    let why = peak_to_judge(peak, Share::of(topo)).err()?;
    Some(format!(
        "{why}: no share of it is printed; give the peak of what this process may use (--peak 100GB/s)"
    ))
}

impl Share {
    /// The CPUs this process may use against the sockets they are on.
    pub fn of(topo: &Topology) -> Share {
        if topo.has_flag("hypervisor") {
            return Share::VirtualMachine;
        }
        let packages: std::collections::BTreeSet<usize> = topo
            .cpus
            .iter()
            .filter(|c| topo.allowed_cpus.contains(c.id))
            .map(|c| c.package)
            .collect();
        let of = topo
            .cpus
            .iter()
            .filter(|c| packages.contains(&c.package))
            .count();
        let allowed = topo.allowed_cpus.len();
        if allowed < of {
            Share::SomeCpus { allowed, of }
        } else {
            Share::WholeSockets {
                sockets: packages.len(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::cpulist::IdSet;

    #[test]
    fn the_share_of_sockets_tells_a_slice_from_whole_sockets() {
        let (_dir, mut topo) = crate::topology::fixture::machine("xeon-e5-2680v3-2s");
        assert_eq!(Share::of(&topo), Share::WholeSockets { sockets: 2 });
        let socket0: Vec<usize> = topo
            .cpus
            .iter()
            .filter(|c| c.package == 0)
            .map(|c| c.id)
            .collect();
        topo.allowed_cpus = IdSet::new(socket0.clone());
        assert_eq!(Share::of(&topo), Share::WholeSockets { sockets: 1 });
        topo.allowed_cpus = IdSet::new(socket0[..4].to_vec());
        assert_eq!(
            Share::of(&topo),
            Share::SomeCpus {
                allowed: 4,
                of: socket0.len()
            }
        );
        topo.cpu_info.flags.push("hypervisor".into());
        assert_eq!(Share::of(&topo), Share::VirtualMachine);
    }

    #[test]
    fn a_peak_for_whole_sockets_judges_only_whole_sockets() {
        let table = Peak {
            per_socket_gb_s: 204.8,
            sockets: 2,
            channels_per_socket: Some(8),
            mts: Some(3200),
            source: PeakSource::Table,
            detail: String::new(),
        };
        assert_eq!(
            peak_to_judge(&table, Share::WholeSockets { sockets: 2 }),
            Ok(409.6)
        );
        // One socket of two: that socket's channels.
        assert_eq!(
            peak_to_judge(&table, Share::WholeSockets { sockets: 1 }),
            Ok(204.8)
        );
        let vm = peak_to_judge(&table, Share::VirtualMachine).unwrap_err();
        assert!(
            vm.starts_with("this virtual machine's CPUs are a slice of the host's sockets")
                && vm.contains("409.6 GB/s peak (from the built-in table)"),
            "{vm}"
        );
        let some = peak_to_judge(
            &table,
            Share::SomeCpus {
                allowed: 8,
                of: 128,
            },
        )
        .unwrap_err();
        assert!(some.contains("may use 8 of the 128 CPUs"), "{some}");
        // The user's figure is for what this process may use.
        let user = Peak {
            source: PeakSource::User,
            per_socket_gb_s: 12.0,
            sockets: 1,
            ..table
        };
        assert_eq!(peak_to_judge(&user, Share::VirtualMachine), Ok(12.0));
    }

    /// `run`, `sweep`, `tune` and `exec` take their peak through this rule:
    /// a VM's slice of a socket gets no share of the table's figure, and
    /// says why; the user's figure stands.
    #[test]
    fn a_virtual_machines_slice_gets_no_share_of_the_sockets_peak() {
        let (_dir, mut topo) = crate::topology::fixture::machine("xeon-e5-2680v3-2s");
        let detect = crate::peak::PeakRequest::Detect;
        assert!(matches!(
            crate::peak::for_cpus_used(&topo, &detect),
            Ok(Some(_))
        ));
        topo.cpu_info.flags.push("hypervisor".into());
        let why = crate::peak::for_cpus_used(&topo, &detect).unwrap_err();
        assert!(
            why.starts_with("this virtual machine's CPUs are a slice of the host's sockets")
                && why.contains("--peak"),
            "{why}"
        );
        assert_eq!(crate::peak::unknown_reason(&topo), why);
        let given = crate::peak::PeakRequest::Node(crate::peak::GivenRate {
            gb_s: 50.0,
            unit: true,
        });
        let peak = crate::peak::for_cpus_used(&topo, &given).unwrap().unwrap();
        assert_eq!(peak.node_gb_s(), 50.0);
    }
}
