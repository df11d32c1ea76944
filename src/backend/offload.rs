//! What every device target shares (the simulated device, a CUDA GPU):
//! refusing what only the host's CPU team has, and the host buffers of
//! its transfers: placed by the plan's memory policy before any page
//! exists, pinned, and checked page by page afterwards.

use super::HostArrays;
use crate::error::{Error, Input, Result};
use crate::kernels::{ArrayId, KernelId};
use crate::memory::policy::{MemPolicy, PagePlacement};
use crate::plan::{Plan, Settings, StoresRequest};

/// Refuses what a device (`kind`: "a simulated device", "a CUDA GPU") does
/// not have: threads, a placement, an ISA, store instructions, host page
/// sizes; and a memory policy where no host buffer is placed, or one per
/// array.
pub(super) fn refuse_what_cpus_have(kind: &str, s: &Settings) -> Result<()> {
    let refuse = |input: Input, given: String, what: &str| {
        Err(Error::input(
            input,
            given,
            format!("{kind} has no {what} (it is not the CPU team)"),
        ))
    };
    let p = &s.placement;
    if let Some(n) = p.threads {
        return refuse(Input::Threads, n.to_string(), "CPU threads");
    }
    if let Some(nodes) = &p.cpu_nodes {
        return refuse(Input::CpuNode, nodes.to_string(), "CPU nodes");
    }
    if p.spec != crate::placement::Spec::Default {
        let (input, text) = p.spec.input();
        return refuse(input, text, "CPU placement");
    }
    // Its own memory takes no policy; its host buffers (the transfers'
    // h and r) go where the policy puts them.
    if s.mem != Default::default() && !host_buffers(&s.measure.kernels) {
        return Err(Error::input(
            Input::Mem,
            s.mem.to_string(),
            format!(
                "{kind}'s own memory takes no policy: it places the host buffers of the transfers (--kernels transfers: h2d, d2h, bidir and their -kernel forms)"
            ),
        ));
    }
    // A per-array policy names STREAM's arrays, none of which is host
    // memory here: refused rather than dropped.
    if !s.mem.is_uniform() {
        return Err(Error::input(
            Input::Mem,
            s.mem.to_string(),
            format!("{kind}'s host buffers take one policy for both (bind:1), not one per array"),
        ));
    }
    if let Some(isa) = s.measure.isa {
        return refuse(Input::Isa, isa.to_string(), "CPU instruction set");
    }
    if s.stores != StoresRequest::Auto {
        return refuse(Input::Stores, s.stores.to_string(), "CPU stores");
    }
    if !s.measure.hugepages.is_auto() {
        let pages = s.measure.hugepages.to_string();
        return refuse(Input::Hugepages, pages, "host page sizes");
    }
    Ok(())
}

/// Whether the kernels move data over the host link, from and to host
/// buffers.
pub(super) fn host_buffers(kernels: &[KernelId]) -> bool {
    (kernels.iter()).any(|k| k.spec().arrays().any(ArrayId::host_buffer))
}

/// The arrays that are the device's own memory among those the plan's
/// kernels use.
pub(super) fn device_arrays(kernels: &[KernelId]) -> u64 {
    (crate::kernels::arrays_used(kernels).iter())
        .filter(|a| !a.host_buffer())
        .count() as u64
}

/// The host buffers of a plan, mapped under its policy (both the same),
/// not yet touched: the device's own arrays are not mapped here.
pub(super) struct HostBuffers {
    pub(super) arrays: HostArrays,
    pub(super) policy: MemPolicy,
}

impl HostBuffers {
    /// The plan's host buffers (h and r, where its kernels use them),
    /// placed by its policy before any page exists.
    pub(super) fn map(plan: &Plan) -> Result<HostBuffers> {
        let mut policy = MemPolicy::default();
        for id in ArrayId::ALL.into_iter().filter(|a| a.host_buffer()) {
            policy.arrays[id.index()] = plan.mem.get(id).clone();
        }
        let mut needed = plan.arrays_needed();
        needed.retain(|a| a.host_buffer());
        Ok(HostBuffers {
            arrays: HostArrays::new(plan, &policy, &needed)?,
            policy,
        })
    }

    /// Where the host buffers' pages are, checked page by page.
    pub(super) fn pages(&self, host_node: Option<usize>) -> (Vec<PagePlacement>, Vec<String>) {
        host_buffer_pages(&self.arrays.arrays, &self.policy, host_node)
    }
}

/// Where the host buffers among `arrays` have their pages, checked page
/// by page against their policy; a device's own memory is not the host's
/// to report.
pub(super) fn host_buffer_pages(
    arrays: &crate::memory::Arrays,
    policy: &MemPolicy,
    host_node: Option<usize>,
) -> (Vec<PagePlacement>, Vec<String>) {
    let buffers: Vec<ArrayId> = (ArrayId::ALL.into_iter())
        .filter(|a| a.host_buffer() && arrays.array(*a).is_some())
        .collect();
    arrays.page_placement_of(
        &buffers,
        policy,
        std::slice::from_ref(&(0..arrays.elements)),
        &[host_node],
    )
}

/// A device's plan: its arrays and kernels, the target it declares, and
/// the host CPU that drives it (no CPU of the host's does a device's
/// work; the memory policy places only the transfers' host buffers, and a
/// device's memory has no host caches to stay in or to calibrate for).
pub(super) struct DevicePlan {
    pub(super) elements: usize,
    pub(super) inner_repeats: usize,
    pub(super) kernels: Vec<KernelId>,
    pub(super) device: crate::results::target::Device,
    pub(super) host_cpu: Option<usize>,
}

impl DevicePlan {
    pub(super) fn prepared(
        self,
        topo: &crate::topology::Topology,
        s: &Settings,
    ) -> crate::plan::Prepared {
        let plan = Plan {
            elements: self.elements,
            ntimes: s.measure.ntimes,
            kernels: self.kernels,
            target: crate::results::target::Target::Device(Box::new(self.device)),
            cpus: self.host_cpu.into_iter().collect(),
            cpu_nodes: (self.host_cpu)
                .map(|c| topo.cpu(c).map(|x| x.node))
                .into_iter()
                .collect(),
            hugepages: s.measure.hugepages,
            mem: s.mem.clone(),
            inner_repeats: self.inner_repeats,
            calibrate: false,
            in_caches: None,
        };
        crate::plan::Prepared {
            plan,
            stores_reason: String::new(),
        }
    }
}

/// Runs `body` on a thread of its own pinned to `cpu`, as a device's host
/// thread (a GPU's context is current on one thread; the host buffers are
/// first touched there, near the device).
pub(super) fn on_host_thread<T: Send>(
    name: &str,
    cpu: Option<usize>,
    body: impl FnOnce() -> Result<T> + Send,
) -> Result<T> {
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                if let Some(cpu) = cpu {
                    crate::sys::pin_current_thread(cpu).map_err(|e| {
                        Error::Runtime(format!("pinning {name}'s host thread: {e}"))
                    })?;
                }
                body()
            })
            .join()
            .unwrap_or_else(|_| Err(Error::Runtime(format!("{name}'s host thread panicked"))))
    })
}
