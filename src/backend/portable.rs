//! The smallest backend: the calling thread, portable loops (no SIMD, no
//! streaming stores), arrays on the heap with no memory policy. It exists
//! to show what a backend is (the whole contract fits on one screen) and to
//! test the protocol through a second implementation of the seam. It
//! measures nothing membw would report as a node's bandwidth.

use super::{ArrayErrors, Backend, Device, Driver, Observed, ReadBack, Sums};
use crate::error::{Error, Input, Result};
use crate::kernels::{ARRAYS, ArrayId, Isa, KernelFns, KernelId, StoreMode};
use crate::memory::Chunk;
use crate::plan::Plan;
use crate::results::measurement::ThreadPlacement;

/// One thread, portable loops, heap arrays.
pub struct Portable;

impl Backend for Portable {
    fn name(&self) -> &'static str {
        "portable"
    }

    fn open(&mut self, plan: &Plan, driver: &mut Driver<'_>) -> Result<Observed> {
        if plan.cpus.len() != 1 {
            return Err(Error::input(
                Input::Threads,
                plan.cpus.len().to_string(),
                "the portable backend runs one thread",
            ));
        }
        let mut arrays: [Option<Vec<f64>>; ARRAYS] = Default::default();
        for id in plan.arrays_needed() {
            let mut v = Vec::new();
            v.try_reserve_exact(plan.elements).map_err(|e| {
                Error::Runtime(format!("cannot allocate {} elements: {e}", plan.elements))
            })?;
            v.resize(plan.elements, 0.0);
            arrays[id.index()] = Some(v);
        }
        let mut device = Heap {
            fns: KernelFns::select(Isa::Scalar, StoreMode::Regular)?,
            arrays,
            sums: Sums::default(),
        };
        driver(&mut device)?;
        Ok(Observed {
            threads: vec![ThreadPlacement {
                thread: 0,
                cpu: plan.cpus[0],
                observed_cpu: None,
            }],
            pages: Vec::new(),
            warnings: vec![
                "the portable backend neither pins its thread nor places its pages".into(),
            ],
        })
    }
}

struct Heap {
    fns: KernelFns,
    arrays: [Option<Vec<f64>>; ARRAYS],
    sums: Sums,
}

impl Heap {
    /// The whole arrays as one chunk.
    fn chunk(&mut self) -> Chunk<'_> {
        let [a, b, c, d] = &mut self.arrays;
        Chunk {
            arrays: [a, b, c, d].map(|v| v.as_deref_mut()),
            offset: 0,
        }
    }
}

impl Device for Heap {
    fn init(&mut self, values: [f64; ARRAYS]) {
        for (id, value) in ArrayId::ALL.into_iter().zip(values) {
            if let Some(v) = &mut self.arrays[id.index()] {
                v.fill(value);
            }
        }
    }
    fn double_a(&mut self) {
        super::double_chunk(&mut self.chunk());
    }
    fn sync(&mut self) {}
    fn run(&mut self, kernel: KernelId, repeats: usize) {
        let (fns, mut sums) = (self.fns, self.sums);
        let mut chunk = self.chunk();
        for _ in 0..repeats {
            super::run_kernel(&fns, kernel, &mut chunk, &mut sums);
        }
        self.sums = sums;
    }
    fn read_back(&mut self, want: [f64; ARRAYS], errors: ArrayErrors) -> ReadBack {
        let sums = self.sums;
        super::read_back_chunk(&self.chunk(), sums, want, errors)
    }
}
