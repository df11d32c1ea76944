//! The backends' shared pieces against each other: the CPU team's SIMD
//! kernels and the portable loops compute the same recurrences.
use super::*;

use crate::kernels::{Isa, StoreMode};

/// Six arrays of `len` elements, each element its own value.
fn arrays(len: usize) -> [Vec<f64>; ARRAYS] {
    std::array::from_fn(|a| (0..len).map(|i| (a * 1000 + i) as f64 * 0.25).collect())
}

fn chunk(arrays: &mut [Vec<f64>; ARRAYS], host_buffers: bool) -> Chunk<'_> {
    let mut ids = ArrayId::ALL.into_iter();
    Chunk {
        arrays: arrays.each_mut().map(|v| {
            let id = ids.next().unwrap();
            (host_buffers || !id.host_buffer()).then_some(v.as_mut_slice())
        }),
        offset: 0,
    }
}

/// The CPU team's SIMD kernels, every ISA and store mode this CPU
/// has, compute what the portable loops derive from each recurrence.
#[test]
fn the_simd_kernels_compute_each_recurrence() {
    let len = 1003;
    for isa in Isa::ALL.into_iter().filter(|i| i.supported()) {
        for stores in [StoreMode::Regular, StoreMode::Nt] {
            let Ok(fns) = KernelFns::select(isa, stores) else {
                continue;
            };
            for kernel in crate::kernels::memory_kernels() {
                let (mut simd, mut portable) = (arrays(len), arrays(len));
                let (mut s1, mut s2) = (Sums::default(), Sums::default());
                run_kernel(&fns, kernel, &mut chunk(&mut simd, false), &mut s1);
                run_portable(kernel, &mut chunk(&mut portable, false), &mut s2);
                for id in ArrayId::ALL {
                    let (x, y) = (&simd[id.index()], &portable[id.index()]);
                    let close = x
                        .iter()
                        .zip(y)
                        .all(|(x, y)| (x - y).abs() <= 1e-12 * y.abs().max(1.0));
                    assert!(close, "{kernel} {isa} {stores}: array {}", id.name());
                }
                for (got, want) in [(s1.read, s2.read), (s1.dot, s2.dot)] {
                    assert!(
                        (got - want).abs() <= 1e-9 * want.abs().max(1.0),
                        "{kernel} {isa}"
                    );
                }
            }
        }
    }
}

/// A transfer run by the portable loops copies whole arrays across,
/// and the CPU team's table runs none (its plans refuse them).
#[test]
fn a_transfer_copies_across_and_only_a_device_runs_it() {
    let mut data = arrays(10);
    run_portable(
        KernelId::Bidir,
        &mut chunk(&mut data, true),
        &mut Sums::default(),
    );
    let [a, b, h, r] = [ArrayId::A, ArrayId::B, ArrayId::H, ArrayId::R].map(ArrayId::index);
    assert_eq!(data[a], data[h]);
    assert_eq!(data[r], data[b]);
    // The device's threads move the same elements, one by one.
    let mut by_kernel = arrays(10);
    run_portable(
        KernelId::BidirKernel,
        &mut chunk(&mut by_kernel, true),
        &mut Sums::default(),
    );
    assert_eq!(by_kernel, data);
    let before = arrays(10);
    let mut cpu = arrays(10);
    let fns = KernelFns::select(Isa::Scalar, StoreMode::Regular).unwrap();
    run_kernel(
        &fns,
        KernelId::H2d,
        &mut chunk(&mut cpu, false),
        &mut Sums::default(),
    );
    assert_eq!(cpu, before);
}

/// The backends of one rank, for the spec `text`.
fn rank_backends(
    text: &str,
    rank: Option<usize>,
    size: Option<usize>,
) -> std::result::Result<Vec<Box<dyn Backend>>, String> {
    for_rank(&text.parse()?, rank, size)
}

/// Under MPI a device backend named without an index gives each local
/// rank its own device; an index, or a host backend, is the same for all.
#[test]
fn each_local_rank_gets_its_own_device() {
    assert!(rank_backends("sim", Some(3), None).is_ok());
    let past = rank_backends("sim", Some(4), None).err().unwrap();
    assert!(
        past.contains("local rank 4: there is no device sim:4"),
        "{past}"
    );
    assert!(rank_backends("sim:1", Some(4), None).is_ok());
    assert!(rank_backends("cpu", Some(4), None).is_ok());
    assert!(rank_backends("portable", None, None).is_ok());
}

/// A device set under MPI is shared out among the node's ranks in equal
/// runs: one rank per node drives them all.
#[test]
fn a_device_set_is_shared_out_among_a_nodes_ranks() {
    let set = [0, 1, 2, 3, 4, 5, 6, 7];
    assert_eq!(
        super::device_set::share_of_set(&set, Some(1), Some(4)).unwrap(),
        [2, 3]
    );
    assert_eq!(
        super::device_set::share_of_set(&set, Some(0), Some(1)).unwrap(),
        set
    );
    let uneven = super::device_set::share_of_set(&set, Some(0), Some(3)).unwrap_err();
    assert!(
        uneven.contains("8 devices do not share out evenly among the node's 3 ranks"),
        "{uneven}"
    );
    let unknown = super::device_set::share_of_set(&set, Some(0), None).unwrap_err();
    assert!(unknown.contains("does not say how many ranks"), "{unknown}");
    assert_eq!(rank_backends("sim:all", Some(1), Some(2)).unwrap().len(), 2);
    assert_eq!(rank_backends("sim:0", Some(1), Some(2)).unwrap().len(), 1);
}

/// The backends `spec` names, one per device of a set, as `--backend`
/// makes them.
fn set_by_name(text: &str) -> std::result::Result<Vec<Box<dyn Backend>>, String> {
    let spec: BackendSpec = text.parse()?;
    match platform_set(&spec)? {
        Some(set) => Ok(set_backends(set)),
        None => make_one(&spec).map(|b| vec![b]),
    }
}

#[test]
fn a_device_set_is_every_device_or_a_list_in_the_order_written() {
    let names = |spec: &str| -> Vec<String> {
        (set_by_name(spec).unwrap().iter())
            .map(|b| b.name().to_string())
            .collect()
    };
    // Four simulated devices unless MEMBW_SIM_DEVICE says otherwise.
    assert_eq!(names("sim:all").len(), 4);
    assert_eq!(names("sim:2,0-1,1").len(), 3);
    assert_eq!(names("sim:1").len(), 1);
    assert_eq!(names("cpu").len(), 1);
    let err = |spec: &str| set_by_name(spec).err().unwrap_or_default();
    assert!(err("sim:0,7").contains("sim:7"), "{}", err("sim:0,7"));
    assert!(err("sim:a-b").contains("'a-b'"));
    assert!(err("cpu:all").contains("no devices to number"));
    // One device's commands name the set they cannot take.
    let one = super::by_name("sim:all").err().unwrap_or_default();
    assert!(one.contains("names a set of devices"), "{one}");
}

#[test]
fn every_fabric_is_registered_once_and_names_its_paths_as_its_tools_do() {
    let kinds = fabric_kinds();
    let names: Vec<&str> = kinds.iter().map(|k| k.name).collect();
    assert_eq!(names, ["NVLink", "xGMI"], "one each, the registry's order");
    let nvlink = fabric_kind("NVLink").unwrap();
    assert_eq!(nvlink.path_name(18, false), "NV18");
    assert_eq!(nvlink.path_name(16, true), "NV16 switch");
    let xgmi = fabric_kind("xGMI").unwrap();
    assert_eq!(xgmi.path_name(2, false), "xGMI 2");
    assert!(!xgmi.counts_down && nvlink.counts_down);
    assert_eq!(fabric_kind("Infinity"), None);
}

/// Where a health check measures is the backend's to say: the CPU team's
/// scopes are the host's, a device's its memory and its links.
#[test]
fn each_backend_supplies_its_health_scopes() {
    use crate::results::scope::Scope;
    let topo = crate::topology::fixture::machine("xeon-e5-2680v3-2s").1;
    let scopes = |name: &str| super::by_name(name).unwrap().health_scopes(&topo);
    assert_eq!(scopes("cpu"), Scope::of_host(&topo));
    assert_eq!(scopes("portable"), Scope::of_host(&topo));
    assert_eq!(scopes("sim:2"), Scope::of_device_at(2, &topo));
    assert_eq!(scopes("sim:2")[0], Scope::Device(2));
}

/// A node check covers one platform's GPUs and names every other GPU on
/// the PCI bus it leaves out: a second maker's (with the --backend that
/// checks them), a runtime that does not load here, a maker membw has no
/// backend for. Whichever runtimes this host has, no maker goes unsaid.
#[test]
fn a_node_check_names_every_gpu_on_the_bus_it_leaves_out() {
    use crate::topology::pci::{GpuVendor, PciGpu};
    let (_dir, mut topo) = crate::topology::fixture::machine("xeon-e5-2680v3-2s");
    let gpu = |i: u8, vendor: u16| PciGpu {
        address: format!("0000:{i:02x}:00.0"),
        vendor,
        device: 0x1234,
        class: 0x0302,
        numa_node: Some(0),
        local_cpus: Default::default(),
        driver: None,
        link: None,
    };
    topo.gpus = vec![
        gpu(0x18, 0x10de),
        gpu(0x19, 0x10de),
        gpu(0x3a, 0x1002),
        gpu(0x5b, 0x8086),
    ];
    let (found, left_out) = super::node_gpus(&topo, false);
    let found_name = found.as_ref().map(|(p, _)| p.name());
    let said = |what: &str| left_out.iter().any(|l| l.contains(what));
    for (maker, some) in [
        (GpuVendor::Nvidia, "2 NVIDIA GPUs"),
        (GpuVendor::Amd, "AMD GPU"),
    ] {
        let measured = found
            .as_ref()
            .is_some_and(|(p, _)| p.vendor() == Some(maker));
        let named = said(&format!("the {some} on its PCI bus: "));
        assert!(measured != named, "{maker:?}: {found_name:?} {left_out:?}");
    }
    if found.is_some() {
        assert!(said("checks them"), "{left_out:?}");
    }
    assert!(
        said("the Intel GPU on its PCI bus: membw has no backend for them"),
        "{left_out:?}"
    );
    // The simulated node stands for them all, and leaves nothing out.
    let (sim, none) = super::node_gpus(&topo, true);
    assert_eq!(sim.map(|(p, d)| (p.name(), d.len())), Some(("sim", 4)));
    assert!(none.is_empty(), "{none:?}");
}
