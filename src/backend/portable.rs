//! The smallest backend: the calling thread, portable loops (each kernel's
//! recurrence, element by element), arrays with no memory policy. It exists
//! to show what a backend is (the whole contract fits on one screen) and to
//! test the protocol through a second implementation of the seam. It
//! measures nothing membw would report as a node's bandwidth.

use super::{Backend, HostArrays, Observed, WithArrays};
use crate::error::{Error, Input, Result};
use crate::plan::Plan;
use crate::results::measurement::ThreadPlacement;

/// One thread, portable loops, arrays no policy places.
pub struct Portable;

impl Backend for Portable {
    fn name(&self) -> &'static str {
        "portable"
    }

    fn open(&mut self, plan: &Plan, work: &mut dyn WithArrays) -> Result<Observed> {
        if plan.cpus.len() != 1 {
            return Err(Error::input(
                Input::Threads,
                plan.cpus.len().to_string(),
                "the portable backend runs one thread",
            ));
        }
        let mut device = HostArrays::new(plan, &Default::default(), &plan.arrays_needed())?;
        work.run_on(&mut device)?;
        Ok(Observed {
            gpu_memory: None,
            threads: ThreadPlacement::list(&plan.cpus[..1], |_| None),
            pages: Vec::new(),
            warnings: vec![
                "the portable backend neither pins its thread nor places its pages".into(),
            ],
        })
    }
}
