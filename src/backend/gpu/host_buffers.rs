//! A device's host buffers: the transfers' `h` (sent to the device) and
//! `r` (received from it), placed by the plan's memory policy before any
//! page exists, first touched by the device's pinned host thread, and
//! checked page by page afterwards; and their pageable twins, placed and
//! touched the same way but never registered with the runtime.

use crate::backend::{ArrayErrors, HostArrays, ReadBack, TargetArrays};
use crate::error::Result;
use crate::kernels::{ARRAYS, ArrayId};
use crate::memory::policy::{MemPolicy, PagePlacement, Policy};
use crate::plan::Plan;
use crate::topology::cpulist::IdSet;

/// The host buffers of a plan, mapped under its policy (both the same):
/// the device's own arrays are not mapped here.
pub(crate) struct HostBuffers {
    arrays: HostArrays,
    policy: MemPolicy,
}

impl HostBuffers {
    /// The plan's host buffers (h and r, where its kernels use them),
    /// placed by its policy before any page exists, not yet touched; and
    /// the device's own arrays where the plan puts them in host memory
    /// (`--gpu-memory host:N`, `system:N`), bound to that node.
    pub(crate) fn map(plan: &Plan) -> Result<HostBuffers> {
        let mut policy = MemPolicy::default();
        for id in ArrayId::ALL.into_iter().filter(|a| a.host_buffer()) {
            policy.arrays[id.index()] = plan.mem.get(id).clone();
        }
        let in_host_memory = plan.gpu_memory.is_host();
        if in_host_memory {
            let on = match plan.gpu_memory.node() {
                Some(node) => Policy::Bind(IdSet::new(vec![node])),
                None => Policy::Local,
            };
            // The device's own arrays: every one but the host buffers.
            for id in ArrayId::ALL.into_iter().filter(|a| !a.host_buffer()) {
                policy.arrays[id.index()] = on.clone();
            }
        }
        let mut needed = plan.arrays_needed();
        needed.retain(|a| a.host_buffer() || in_host_memory);
        Ok(HostBuffers {
            arrays: HostArrays::new(plan, &policy, &needed)?,
            policy,
        })
    }

    /// Pageable twins of the plan's host buffers, under the same policy,
    /// first touched from this thread; nothing registers them.
    pub(crate) fn pageable_twins(plan: &Plan) -> std::result::Result<HostBuffers, String> {
        let mut twins = HostBuffers::map(plan).map_err(|e| e.to_string())?;
        for id in [ArrayId::H, ArrayId::R] {
            if let Some(slice) = twins.slice_mut(id) {
                slice.fill(0.0);
            }
        }
        Ok(twins)
    }

    /// Host buffer `id`, where the plan has it.
    pub(crate) fn slice_mut(&mut self, id: ArrayId) -> Option<&mut [f64]> {
        (self.arrays.arrays.array_mut(id)).map(|a| a.as_mut_slice())
    }

    /// Where `h` and `r` start, for the copy engine (none where the plan
    /// has no such buffer).
    pub(crate) fn pointers(&mut self) -> (Option<*const f64>, Option<*mut f64>) {
        let h = self.slice_mut(ArrayId::H).map(|s| s.as_ptr());
        let r = self.slice_mut(ArrayId::R).map(|s| s.as_mut_ptr());
        (h, r)
    }

    /// Every host buffer set to its value.
    pub(crate) fn init(&mut self, values: [f64; ARRAYS]) {
        self.arrays.init(values);
    }

    /// The host buffers read back through the protocol's rule.
    pub(crate) fn read_back(&mut self, want: [f64; ARRAYS], errors: ArrayErrors) -> ReadBack {
        self.arrays.read_back(want, errors)
    }

    /// Where the host buffers' pages are (and the device's arrays', where
    /// they are host memory), checked page by page against their policy;
    /// a device's own memory is not the host's to report.
    pub(crate) fn pages(&self, host_node: Option<usize>) -> (Vec<PagePlacement>, Vec<String>) {
        let arrays = &self.arrays.arrays;
        let buffers: Vec<ArrayId> = (ArrayId::ALL.into_iter())
            .filter(|a| arrays.array(*a).is_some())
            .collect();
        arrays.page_placement_of(
            &buffers,
            &self.policy,
            std::slice::from_ref(&(0..arrays.elements)),
            &[host_node],
        )
    }
}
