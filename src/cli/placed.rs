//! A placement as the CLI resolved it: the request, how it was asked for
//! (flags or variables), and the label the header shows once the CPUs are
//! known.

use crate::error::{Error, Input};
use crate::placement;

/// How the default placement is described while every thread has a core.
pub(crate) const DEFAULT_LABEL: &str = "default: one thread per core, spread";

/// A placement request and where its parts came from.
pub(crate) struct Placement {
    pub request: placement::Request,
    /// For the header: the flags or variables used, and those not used.
    pub described: String,
    /// Inputs that came from environment variables.
    pub(super) env_inputs: Vec<(Input, &'static str)>,
}

impl Placement {
    /// The header's label once the CPUs are known: what was asked, and
    /// when threads share cores, that they do (the default then promises
    /// one thread per core no longer).
    pub(crate) fn label(&self, topo: &crate::topology::Topology, cpus: &[usize]) -> String {
        let Some(note) = placement::shared_cores(topo, cpus) else {
            return self.described.clone();
        };
        let described = self.described.replace(
            DEFAULT_LABEL,
            "default: spread over the cores, then their siblings",
        );
        // The note belongs to the placement, before the variables not used.
        match described.split_once("; not used:") {
            Some((asked, unused)) => format!("{asked} ({note}); not used:{unused}"),
            None => format!("{described} ({note})"),
        }
    }

    /// Names an input error by the variable it came from, when it did.
    pub(crate) fn name_error(&self, e: Error) -> Error {
        match &e {
            Error::Input { input, .. } => match self.env_inputs.iter().find(|(i, _)| i == input) {
                Some((_, var)) => Error::Usage(
                    e.render(|_| format!("environment {var}"))
                        + " (--ignore-env ignores the environment)",
                ),
                None => e,
            },
            _ => e,
        }
    }
}
