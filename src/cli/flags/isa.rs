//! `--isa`: the instruction set of membw's kernels, one for a run, a
//! comma-separated axis for a sweep (each ISA other code, so another
//! point), kept in a study as the string it always was where there is one.

use crate::error::{Error, Result};
use crate::kernels::Isa;
use clap::{Args, ValueEnum};

/// `--isa` (run, sweep, tune, latency).
#[derive(Args, Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct IsaArgs {
    /// Instruction set of membw's bandwidth kernels (latency: of the --loaded load threads'; the
    /// chase itself is loads); sweep: comma-separated, each a point [default: auto]
    #[arg(long, value_enum, value_delimiter = ',', help_heading = "Measurement")]
    // A study keeps one ISA as the string it always was, several as a list.
    #[serde(default, with = "super::one_or_many")]
    pub(crate) isa: Vec<IsaArg>,
}

impl IsaArgs {
    /// Each ISA given, in order, once; `auto` where none was.
    pub(crate) fn each(&self) -> Vec<IsaArg> {
        super::one_or_many::each_once(&self.isa)
    }

    /// The one ISA of a command that measures one (run, tune, latency).
    pub(crate) fn one(&self, command: &str) -> Result<IsaArg> {
        match self.each()[..] {
            [isa] => Ok(isa),
            _ => Err(Error::Usage(format!(
                "--isa: {command} takes one ISA; membw sweep --isa measures several"
            ))),
        }
    }

    /// The ISA of latency's load threads: refused where no load runs.
    pub(crate) fn for_chase(&self, loaded: bool) -> Result<IsaArg> {
        match (self.one("latency")?, loaded) {
            (isa, true) | (isa @ IsaArg::Auto, false) => Ok(isa),
            (isa, false) => Err(Error::Usage(format!(
                "--isa {}: an idle chase runs no kernels; the ISA is the load threads' (add --loaded)",
                clap::ValueEnum::to_possible_value(&isa)
                    .map_or(String::new(), |v| v.get_name().to_string())
            ))),
        }
    }
}

#[derive(
    ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum IsaArg {
    #[default]
    Auto,
    Avx512,
    Avx2,
    Sse2,
    Sve,
    Neon,
    Scalar,
}

impl IsaArg {
    pub(crate) fn isa(self) -> Option<Isa> {
        match self {
            IsaArg::Auto => None,
            IsaArg::Avx512 => Some(Isa::Avx512),
            IsaArg::Avx2 => Some(Isa::Avx2),
            IsaArg::Sse2 => Some(Isa::Sse2),
            IsaArg::Sve => Some(Isa::Sve),
            IsaArg::Neon => Some(Isa::Neon),
            IsaArg::Scalar => Some(Isa::Scalar),
        }
    }
}
