//! One definition per shared flag, as ripgrep's `flags/defs.rs` keeps
//! them: each flag that several commands take is defined here once (its
//! name, value, range, default, help and the commands it applies to) and
//! every command flattens that definition. A command that cannot honour a
//! value refuses it in one line (`one_policy`, `IsaArgs::for_chase`, ...), so
//! a flag never means one thing in one command and another elsewhere.
//! `tests/cli/layers.rs` fails on a second definition site of any name here.

use crate::error::{Error, Result};
use crate::kernels::KernelId;
use crate::memory::Hugepages;
use clap::Args;
use std::time::Duration;

mod backend;
mod gpu_memory;
mod isa;
mod offset;
mod one_or_many;
mod output;
mod placement;
pub(crate) use backend::*;
pub(crate) use gpu_memory::*;
pub(crate) use isa::*;
pub(crate) use offset::*;
pub(crate) use output::*;
pub(crate) use placement::*;

/// `--ntimes` (run, sweep, tune, baseline, check).
#[derive(Args, Debug, Clone, Copy, serde::Serialize, serde::Deserialize)]
pub(crate) struct Ntimes {
    /// Timed repetitions of each kernel per run (baseline, check: per scope and round), 2 to
    /// 100000; the first is not counted, as in STREAM
    #[arg(long, value_name = "N", default_value_t = 10, allow_negative_numbers = true, value_parser = parse_ntimes, help_heading = "Measurement")]
    pub(crate) ntimes: u32,
}

fn parse_ntimes(text: &str) -> std::result::Result<u32, String> {
    super::values::count(
        text,
        "repetitions (the first is not counted)",
        2,
        crate::protocol::MAX_NTIMES as u32,
    )
}

/// `--repeat` (sweep, tune, exec): runs measured afresh, for a mean and its
/// interval. One run by default; two of each of tune's candidates, so that
/// its race starts from a spread.
#[derive(Args, Debug, Clone, Copy, serde::Serialize, serde::Deserialize)]
pub(crate) struct Repeat {
    /// Independent runs, each afresh (sweep: per point, fresh arrays; tune: of each candidate
    /// before the race; exec: the program started again), for the mean and its 95 % confidence
    /// interval [default: 1; tune: 2]
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = super::values::parse_runs)]
    // A sweep's study keeps the runs it asked for, 1 where none was given.
    #[serde(serialize_with = "one_when_unset")]
    repeat: Option<u32>,
}

impl Repeat {
    /// One run: sweep's points, exec's program.
    pub(crate) const DEFAULT: u32 = 1;
    /// Two runs of each of tune's candidates.
    pub(crate) const TUNE: u32 = 2;

    /// The runs given, or the command's default.
    pub(crate) fn or(self, default: u32) -> u32 {
        self.repeat.unwrap_or(default)
    }
}

fn one_when_unset<S: serde::Serializer>(
    runs: &Option<u32>,
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_u32(runs.unwrap_or(Repeat::DEFAULT))
}

/// `--kernels` (run, sweep, baseline, check).
#[derive(Args, Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct Kernels {
    /// Kernels to run, comma-separated (each repetition runs them in this order): copy, scale,
    /// add, triad, read, write, init, update, daxpy, striad, sdaxpy, nstream, dot, and a device's
    /// transfers h2d, d2h, bidir (by its copy engine) and h2d-kernel, d2h-kernel, bidir-kernel (by
    /// its threads); or a group: stream (the first four), tbb (TheBandwidthBenchmark's),
    /// babelstream, all (every memory kernel), transfers; membw kernels shows each loop and its
    /// bytes [default: stream; baseline, check: copy,triad in every scope]
    #[arg(long, value_parser = super::values::parse_kernel_list)]
    // A sweep's study keeps the kernels it ran, STREAM's where none were given.
    #[serde(serialize_with = "stream_when_unset")]
    kernels: Option<super::values::KernelList>,
}

impl Kernels {
    /// STREAM's four (the `stream` group): run's and sweep's.
    pub(crate) const STREAM: &[KernelId] = &crate::kernels::STREAM_KERNELS;
    /// A health check's two, in every scope.
    pub(crate) const HEALTH: &[KernelId] = &[KernelId::Copy, KernelId::Triad];

    /// The kernels given, or the command's default.
    pub(crate) fn or(&self, default: &[KernelId]) -> Vec<KernelId> {
        match &self.kernels {
            Some(given) => given.0.clone(),
            None => default.to_vec(),
        }
    }
}

fn stream_when_unset<S: serde::Serializer>(
    kernels: &Option<super::values::KernelList>,
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    use serde::Serialize;
    match kernels {
        Some(given) => given.serialize(s),
        None => Kernels::STREAM.serialize(s),
    }
}

/// `--smt` (run, sweep, tune): placements may put two threads on a core.
#[derive(Args, Debug, Clone, Copy, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct Smt {
    /// Allow more than one thread per core (SMT hardware threads); sweep: at every point
    #[arg(long, help_heading = "Placement")]
    pub(crate) smt: bool,
}

/// `--ignore-env` (run, sweep, tune): the OpenMP variables are not read.
#[derive(Args, Debug, Clone, Copy, Default)]
pub(crate) struct IgnoreEnv {
    /// Do not read OMP_NUM_THREADS, OMP_PLACES, OMP_PROC_BIND, GOMP_CPU_AFFINITY, KMP_AFFINITY
    #[arg(long, help_heading = "Placement")]
    pub(crate) ignore_env: bool,
}

/// `--budget` (tune, check).
#[derive(Args, Debug, Clone, Copy)]
pub(crate) struct Budget {
    /// Time to spend, 1s to 24h: tune searches for that long [default: 2m]; check keeps measuring
    /// that long while something is short, and a pass stops at once [default: 20s]
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true, value_parser = parse_budget)]
    budget: Option<Duration>,
}

impl Budget {
    /// How long tune searches where `--budget` does not say.
    pub(crate) const TUNE: Duration = Duration::from_secs(120);
    /// How long check keeps measuring while something is short.
    pub(crate) const CHECK: Duration = Duration::from_secs(20);

    /// The budget given, or the command's own default.
    pub(crate) fn or(self, default: Duration) -> Duration {
        self.budget.unwrap_or(default)
    }
}

fn parse_budget(text: &str) -> std::result::Result<Duration, String> {
    let d = humantime::parse_duration(text).map_err(|e| format!("'{text}': {e}"))?;
    if !(Duration::from_secs(1)..=Duration::from_secs(24 * 3600)).contains(&d) {
        return Err(format!("'{text}': must be between 1s and 24h"));
    }
    Ok(d)
}

/// `--hugepages` (run, sweep, tune, latency).
#[derive(Args, Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct Pages {
    /// Page size of the arrays (latency: of the working set): auto (the system's THP setting, no
    /// advice), thp (advised), never (4 KiB), or explicit huge pages from the reserved pool, 2M or
    /// 1G; sweep and latency: comma-separated, each a point [default: auto; latency: thp, so that
    /// DRAM latency is not TLB misses']
    #[arg(
        long,
        value_delimiter = ',',
        value_parser = super::values::parse_hugepages,
        help_heading = "Measurement"
    )]
    // A study keeps the page sizes it measured, `auto` where none was given
    // (as files from before this definition hold it).
    #[serde(serialize_with = "auto_when_empty")]
    hugepages: Vec<Hugepages>,
}

impl Pages {
    /// The chase's default: THP, so that a DRAM latency is the memory's and
    /// not the TLB's.
    pub(crate) const LATENCY: Hugepages = Hugepages::Thp;

    /// The page sizes given, or the command's default.
    pub(crate) fn or(&self, default: Hugepages) -> Vec<Hugepages> {
        match self.hugepages.is_empty() {
            true => vec![default],
            false => self.hugepages.clone(),
        }
    }
}

fn auto_when_empty<S: serde::Serializer>(
    pages: &[Hugepages],
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    use serde::Serialize;
    match pages {
        [] => [Hugepages::Auto].serialize(s),
        given => given.serialize(s),
    }
}

/// `--mem` (run, sweep, tune, latency, exec, place).
#[derive(Args, Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct Mem {
    /// NUMA memory policy of the arrays: local, bind:1, interleave:all, preferred:2, or per array
    /// a=bind:0,b=bind:1,c=local (d: striad's 4th array); sweep, tune: several, each a point (repeat
    /// the flag or separate them with ';') [default: local: first touch, under the policy membw
    /// was started with (numactl's)]
    #[arg(long, value_name = "POLICY", help_heading = "Measurement")]
    pub(crate) mem: Vec<String>,
}

impl Mem {
    /// The one policy of a command that takes one (latency, exec, place):
    /// where none was given, the one membw was started with (numactl's),
    /// named as `run` names it, or `local`.
    pub(crate) fn one_policy(&self, command: &str) -> Result<String> {
        match self.mem.as_slice() {
            [] => Ok(crate::memory::inherited::policy().unwrap_or_else(|| "local".into())),
            [one] => Ok(one.clone()),
            [_, second, ..] => Err(Error::input(
                crate::error::Input::Mem,
                second.clone(),
                format!(
                    "{command} takes one policy; a study of several is membw sweep --mem A --mem B"
                ),
            )),
        }
    }
}

/// What `--numa-matrix` puts in each CPU node's cells.
#[derive(
    clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum NumaCells {
    /// One thread: the node's first allowed CPU
    Single,
    /// All cores of the node
    All,
    /// Both, each a cell
    Both,
}

/// `--numa-matrix` (sweep, latency).
#[derive(Args, Debug, Clone, Copy, serde::Serialize, serde::Deserialize)]
pub(crate) struct NumaMatrix {
    /// Every CPU node × memory node pair, CPU-less nodes included, from one thread of each CPU
    /// node (single), all its cores (all, sweep only), or both
    #[arg(long, num_args = 0..=1, default_missing_value = "single", value_enum, help_heading = "Studies")]
    pub(crate) numa_matrix: Option<NumaCells>,
}

impl NumaMatrix {
    /// Whether the study was asked for.
    pub(crate) fn is_some(&self) -> bool {
        self.numa_matrix.is_some()
    }

    /// Latency's matrix: a chase is one thread, so `single` only.
    pub(crate) fn for_chase(&self) -> Result<bool> {
        match self.numa_matrix {
            None => Ok(false),
            Some(NumaCells::Single) => Ok(true),
            Some(other) => Err(Error::Usage(format!(
                "--numa-matrix {}: a chase is one thread, so latency's matrix is single; the bandwidth of all cores per cell is membw sweep --numa-matrix all",
                clap::ValueEnum::to_possible_value(&other)
                    .map_or(String::new(), |v| v.get_name().to_string())
            ))),
        }
    }
}

/// `--array-size` (run, sweep, tune, baseline, check).
#[derive(Args, Debug, Clone, Copy, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct ArraySizeFlag {
    /// Elements per array (80M, 800000000) or bytes per array (512MB, 6GiB) [default: STREAM's
    /// rule, 4 × the caches of the CPUs used (sweep: of every CPU its points use; tune: of all
    /// allowed CPUs; baseline, check: of each scope's), at least 10M]
    #[arg(long = "array-size", visible_alias = "size", value_name = "SIZE", value_parser = super::values::parse_one_array_size, help_heading = "Measurement")]
    pub(crate) size: Option<crate::units::ArraySize>,
}

/// `--weights` (run, sweep, tune, latency).
#[derive(Args, Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct Weights {
    /// Set the system's weighted-interleave weights for this run (root; put back when it ends),
    /// e.g. 0=3,2=1
    #[arg(long, value_name = "NODE=WEIGHT,...", help_heading = "Measurement")]
    pub(crate) weights: Option<String>,
}

/// `--sysroot` (topo, place, run, sweep, tune, baseline, check).
#[derive(Args, Debug, Clone, Default)]
pub(crate) struct Sysroot {
    /// Read the node from DIR/sys and DIR/proc (a tree from `membw topo --capture DIR`, or a
    /// fixture) instead of this machine; run, sweep, tune: with --dry-run, as nothing can be pinned
    /// on another node; baseline, check: for membw's own tests only (they measure this node)
    #[arg(long, value_name = "DIR")]
    sysroot: Option<std::path::PathBuf>,
}

impl Sysroot {
    /// The tree to read, if one was given.
    pub(crate) fn dir(&self) -> Option<&std::path::PathBuf> {
        self.sysroot.as_ref()
    }

    /// Refuses another node's tree where `planning` is false: what runs
    /// is pinned on this machine.
    pub(crate) fn only_for_planning(&self, planning: bool, how: &str) -> Result<()> {
        match (&self.sysroot, planning) {
            (Some(dir), false) => Err(Error::Usage(format!(
                "--sysroot {}: another node's tree can only be planned for: {how}",
                dir.display()
            ))),
            _ => Ok(()),
        }
    }
}

/// `--working-sets` (sweep, latency).
#[derive(Args, Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct WorkingSetArgs {
    /// Working sets, each a point: a list (32KiB,1MiB,256MiB) or a doubling range (4KiB..1GiB);
    /// sweep: bytes of all arrays per thread; latency: the chase's [default: 4KiB..256MiB], one
    /// (the largest) for --numa-matrix and --loaded
    #[arg(long = "working-sets", visible_alias = "sizes", value_name = "SIZES", value_parser = super::values::parse_working_sets, help_heading = "Studies")]
    #[serde(default, with = "super::values::working_sets_joined")]
    pub(crate) sizes: Vec<super::values::WorkingSets>,
}

impl WorkingSetArgs {
    /// The chase's default: from L1 to DRAM.
    pub(crate) const LATENCY: &'static str = "4KiB..256MiB";

    /// The bytes of each working set given, or of the command's default.
    pub(crate) fn or(&self, default: &str) -> Result<Vec<u64>> {
        match self.sizes.is_empty() {
            false => super::values::WorkingSets::joined(&self.sizes),
            true => {
                let parsed = super::values::parse_working_sets(default).map_err(Error::Usage)?;
                super::values::WorkingSets::joined(&[parsed])
            }
        }
    }
}

/// `--timeout` (exec, sweep --exec).
#[derive(Args, Debug, Clone, Copy, Default)]
pub(crate) struct Timeout {
    /// Kill a program membw runs (exec; sweep --exec) and everything it started after this long
    /// (30s, 10m) [default: 1h]
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    timeout: Option<Duration>,
}

impl Timeout {
    /// The time a program is given where `--timeout` does not say.
    const DEFAULT: Duration = Duration::from_secs(3600);

    pub(crate) fn given(&self) -> bool {
        self.timeout.is_some()
    }

    pub(crate) fn or_default(&self) -> Duration {
        self.timeout.unwrap_or(Self::DEFAULT)
    }
}

/// `--kernel` (tune, report, compare).
#[derive(Args, Debug, Clone, Copy, Default)]
pub(crate) struct Kernel {
    /// The one kernel: tune maximizes it; report and compare tabulate and plot it [default: triad
    /// (report, compare: when measured)]
    #[arg(long, value_parser = super::values::parse_kernel)]
    pub(crate) kernel: Option<crate::kernels::KernelId>,
}

/// `--fake-source` (run, sweep, tune, baseline, check; hidden): measure
/// nothing and report fixed rates, for tests of what is not the
/// measurement; one grammar everywhere (`engine::FakeSource::parse`).
#[derive(Args, Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct FakeSourceArg {
    /// Measure nothing: report fixed rates
    /// (GB/s per thread[,delay=DURATION][,slow=CPUS@SHARE][,busy=PCT][,cap=GBS][,noise=PCT][,seed=N]);
    /// for tests
    #[arg(long, hide = true, value_name = "RATE")]
    pub(crate) fake_source: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ntimes_and_budget_are_bounded_alike_in_every_command() {
        assert_eq!(parse_ntimes("100000"), Ok(100_000));
        assert_eq!(
            parse_ntimes("100001").unwrap_err(),
            "out of range: a whole number of repetitions (the first is not counted) from 2 to 100000"
        );
        assert!(parse_ntimes("1").is_err());
        assert_eq!(parse_budget("24h"), Ok(Duration::from_secs(24 * 3600)));
        assert!(
            parse_budget("500ms")
                .unwrap_err()
                .contains("between 1s and 24h")
        );
        let none = Budget { budget: None };
        assert_eq!(none.or(Duration::from_secs(20)), Duration::from_secs(20));
    }

    #[test]
    fn a_command_refuses_in_one_line_what_it_cannot_honour() {
        let two = Mem {
            mem: vec!["local".into(), "bind:1".into()],
        };
        assert!(
            two.one_policy("exec")
                .unwrap_err()
                .to_string()
                .contains("exec takes one policy")
        );
        assert_eq!(Mem::default().one_policy("latency").unwrap(), "local");
        let all = NumaMatrix {
            numa_matrix: Some(NumaCells::All),
        };
        assert!(
            all.for_chase()
                .unwrap_err()
                .to_string()
                .contains("--numa-matrix all")
        );
        let scalar = IsaArgs {
            isa: vec![IsaArg::Scalar],
        };
        assert!(scalar.for_chase(false).is_err());
        assert_eq!(scalar.for_chase(true).unwrap(), IsaArg::Scalar);
    }
}
