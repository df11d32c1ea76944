//! Argument groups shared by several commands (clap's flatten): placement,
//! measurement, peak and their value enums, one definition each.

use crate::engine::Source;
use crate::error::{Error, Result};
use crate::kernels::KernelId;
use crate::kernels::gpu_builds::{ShapeChoice, ShapeId};
use crate::memory::Hugepages;
use crate::peak::{self, PeakRequest};
use crate::placement::{self, omp::Bind};
use crate::plan::{Measure, StoresRequest};
use crate::units::ArraySize;
use clap::{Args, ValueEnum};

/// Where threads run, for a command that measures one placement: at most
/// one of --cpus, --places, --pin, --strategy, --gomp-affinity and
/// --kmp-affinity, each given once.
#[derive(Args, Debug, Clone)]
#[command(group(clap::ArgGroup::new("where").multiple(false).args(super::flags::WHERE)))]
pub(crate) struct PlacementArgs {
    #[command(flatten)]
    flags: super::flags::PlacementFlags,

    #[command(flatten)]
    ignore_env: super::flags::IgnoreEnv,

    #[command(flatten)]
    smt: super::flags::Smt,

    #[command(flatten)]
    cpunode: super::values::CpuNodeArg,
}

pub(crate) use super::placed::{DEFAULT_LABEL, Placement};

impl PlacementArgs {
    fn flag_spec(&self) -> Result<Option<placement::Spec>> {
        use placement::Spec;
        let one = self.flags.single()?;
        Ok(if let Some(list) = one.cpus {
            Some(Spec::cpus(list)?)
        } else if let Some(places) = one.places {
            Some(Spec::places(places, one.bind.unwrap_or(Bind::Close))?)
        } else if let Some(expr) = one.pin {
            Some(Spec::likwid(expr)?)
        } else if let Some(s) = one.strategy {
            Some(Spec::strategy(s)?)
        } else if let Some(g) = one.gomp_affinity {
            Some(Spec::gomp(g)?)
        } else {
            one.kmp_affinity.map(Spec::kmp).transpose()?
        })
    }

    /// The thread count given, if one was.
    pub(crate) fn threads(&self) -> Result<Option<u32>> {
        Ok(self.flags.single()?.threads)
    }

    /// The request from flags, and from the environment where no flag
    /// decides (unless --ignore-env).
    pub(crate) fn placement(&self, vars: &super::env::Vars) -> Result<Placement> {
        let flags = self.request()?;
        let from_flags = self.flag_spec()?.is_some();
        let env = if self.ignore_env.ignore_env {
            Default::default()
        } else {
            if let Some(e) = vars.typographic() {
                return Err(e);
            }
            super::env::placement(vars, from_flags, !self.flags.threads.is_empty())?
        };
        let mut request = flags;
        if let Some(spec) = env.spec.clone() {
            request.spec = spec;
        }
        if request.threads.is_none() {
            request.threads = env.threads;
        }
        let mut described = if env.spec.is_some() {
            format!("from environment {}", env.used.join(" "))
        } else {
            let mut d = self.describe();
            let env_threads: Vec<&String> = env
                .used
                .iter()
                .filter(|u| u.starts_with("OMP_NUM_THREADS"))
                .collect();
            if let Some(t) = env_threads.first() {
                d.push_str(&format!(", {t} from environment"));
            }
            d
        };
        if !env.unused.is_empty() {
            described.push_str(&format!("; not used: {}", env.unused.join(", ")));
        }
        Ok(Placement {
            request,
            described,
            env_inputs: env.inputs,
        })
    }

    /// The request from the flags alone.
    fn request(&self) -> Result<placement::Request> {
        let spec = self.flag_spec()?.unwrap_or(placement::Spec::Default);
        let cpu_nodes = self.cpunode.nodes()?;
        Ok(placement::Request {
            spec,
            threads: self.threads()?.map(|t| t as usize),
            smt: self.smt.smt,
            cpu_nodes,
        })
    }

    /// What was asked, in the user's words (once [`Self::placement`] has
    /// held each flag to one value).
    pub(crate) fn describe(&self) -> String {
        let f = &self.flags;
        let mut parts = Vec::new();
        if let Some(c) = f.cpus.first() {
            parts.push(format!("--cpus {c}"));
        }
        if let Some(p) = f.places.first() {
            parts.push(format!(
                "--places '{p}' --bind {}",
                f.bind.unwrap_or(Bind::Close)
            ));
        }
        if let Some(p) = f.pin.first() {
            parts.push(format!("--pin {p}"));
        }
        if let Some(s) = f.strategy.first() {
            parts.push(format!("--strategy {s}"));
        }
        if f.no_pin {
            parts.push("unpinned (--no-pin): threads not bound".into());
        }
        if let Some(g) = f.gomp_affinity.first() {
            parts.push(format!("--gomp-affinity '{g}'"));
        }
        if let Some(k) = f.kmp_affinity.first() {
            parts.push(format!("--kmp-affinity {k}"));
        }
        if parts.is_empty() {
            parts.push(DEFAULT_LABEL.into());
        }
        if let Some(t) = f.threads.first() {
            parts.push(format!("--threads {t}"));
        }
        if self.smt.smt {
            parts.push("--smt".into());
        }
        if let Some(n) = &self.cpunode.cpunode {
            parts.push(format!("--cpunode {n}"));
        }
        parts.join(" ")
    }
}

/// How every run is measured: the same flags and defaults for run, sweep
/// and tune. Where sweep and tune take several values (--mem, --stores),
/// each value is a point of their search; run takes one.
#[derive(Args, Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct MeasureArgs {
    #[command(flatten)]
    #[serde(flatten)]
    pub(crate) size: super::flags::ArraySizeFlag,

    #[command(flatten)]
    #[serde(flatten)]
    pub(crate) ntimes: super::flags::Ntimes,

    #[command(flatten)]
    #[serde(flatten)]
    pub(crate) mem: super::flags::Mem,

    #[command(flatten)]
    #[serde(flatten)]
    isa: super::flags::IsaArgs,

    /// Store instructions: auto (non-temporal where STREAM's rule holds: each array at least 4 × the caches of the CPUs used), regular, nt;
    /// sweep: comma-separated, each a point; tune: auto tries both
    #[arg(
        long,
        value_delimiter = ',',
        value_enum,
        default_value = "auto",
        help_heading = "Measurement"
    )]
    stores: Vec<StoresArg>,

    #[command(flatten)]
    #[serde(flatten)]
    pages: super::flags::Pages,

    #[command(flatten)]
    #[serde(flatten)]
    pub(crate) offset: super::flags::OffsetArgs,

    #[command(flatten)]
    #[serde(flatten)]
    pub(crate) weights: super::flags::Weights,

    #[command(flatten)]
    #[serde(flatten)]
    fake: super::flags::FakeSourceArg,

    #[command(flatten)]
    #[serde(flatten)]
    backend: super::flags::BackendArg,

    /// A GPU's launch shape for every kernel, by the id `membw tune --backend DEVICE` prints (w16.u1.b1024.cover): its build, block size and grid; default: the shape measured fastest on the GPU's architecture, else the fastest of a few
    #[arg(long, value_name = "ID", value_parser = parse_shape, help_heading = "What is measured")]
    #[serde(default, skip)]
    pub(crate) shape: Option<ShapeId>,

    #[command(flatten)]
    #[serde(flatten)]
    pub(crate) gpu_memory: super::flags::GpuMemoryArgs,

    /// Started by mpirun/srun as one of several ranks: let each rank measure on its own, uncoordinated
    #[arg(long, help_heading = "Across ranks (MPI)")]
    pub(crate) independent: bool,
}

fn parse_shape(text: &str) -> std::result::Result<ShapeId, String> {
    text.parse()
        .map_err(|e: crate::kernels::gpu_builds::BadShape| e.0)
}

impl MeasureArgs {
    /// This rank's place among ranks started together that measure on
    /// their own (`--independent`): none for a lone process.
    pub(crate) fn concurrent_rank(&self) -> Result<Option<crate::results::ConcurrentRank>> {
        let launch = crate::ranks::launcher::detect(|k| std::env::var(k).ok())?;
        Ok(launch.filter(|l| self.independent && l.size > 1).map(|l| {
            crate::results::ConcurrentRank {
                rank: l.rank,
                ranks: l.size,
            }
        }))
    }

    /// The multi-rank launch this process belongs to, when it is to be
    /// measured as one (`run` on an MPI build). Several ranks anywhere else
    /// would fight over the node: that is an error, unless --independent.
    pub(crate) fn launch(
        &self,
        command: &str,
    ) -> Result<Option<crate::ranks::launcher::RankPlace>> {
        let Some(launch) = crate::ranks::launcher::detect(|k| std::env::var(k).ok())? else {
            return Ok(None);
        };
        if launch.size < 2 || self.independent {
            return Ok(None);
        }
        let started = format!(
            "started as rank {} of {} ({}={})",
            launch.rank, launch.size, launch.size_variable, launch.size
        );
        if !cfg!(feature = "mpi") {
            return Err(Error::Usage(format!(
                "{started}, but this membw was built without MPI: {}, or pass --independent to let each rank measure on its own",
                mpi_build_hint()
            )));
        }
        if command != "run" {
            return Err(Error::Usage(format!(
                "{started}: `membw {command}` does not run across ranks; use `mpirun ... membw run` for each point, or pass --independent"
            )));
        }
        Ok(Some(launch))
    }

    /// `--backend` as given (`cuda:0`).
    pub(crate) fn backend_name(&self) -> &str {
        self.backend.name()
    }

    /// The settings every measurement of the command shares.
    pub(crate) fn measure(&self, kernels: Vec<KernelId>) -> Measure {
        Measure {
            elements: self.size.size.map(ArraySize::elements),
            ntimes: self.ntimes.ntimes as usize,
            kernels,
            // A sweep sets each point's own (`isas`).
            isa: self.isa.each()[0].isa(),
            hugepages: self.pages.or(Hugepages::Auto)[0],
            // A sweep sets each point's own (`offsets`).
            offset: self.offset.each()[0],
            shapes: self.shape.map_or(ShapeChoice::Default, ShapeChoice::One),
            // A sweep sets each point's own (`gpu_memories`).
            gpu_memory: self.gpu_memory.each()[0],
        }
    }

    /// The memory policies, as given, in order; `local` when none. An
    /// empty `--mem ''` or an empty item (`local;;bind:0`) is refused.
    pub(crate) fn mems(&self) -> Result<Vec<String>> {
        let mut mems = Vec::new();
        for given in &self.mem.mem {
            for item in given.split(';') {
                if item.trim().is_empty() {
                    return Err(Error::input(
                        crate::error::Input::Mem,
                        given,
                        "an empty policy: give local, bind:N, interleave:N,M, ... (items separated by ;)",
                    ));
                }
                mems.push(item.trim().to_string());
            }
        }
        if mems.is_empty() {
            mems.push(crate::memory::inherited::policy().unwrap_or_else(|| "local".into()));
        }
        Ok(mems)
    }

    /// The store modes, in order, each once.
    pub(crate) fn stores(&self) -> Vec<StoresRequest> {
        let mut out: Vec<StoresRequest> = Vec::new();
        for s in &self.stores {
            if !out.contains(&s.request()) {
                out.push(s.request());
            }
        }
        out
    }

    /// The one memory policy of a command that measures under one (and
    /// one page size, one offset, one place of a GPU's arrays).
    pub(crate) fn one_mem(&self, command: &str) -> Result<String> {
        self.offset.one(command)?;
        self.gpu_memory.one(command)?;
        if self.page_sizes().len() > 1 {
            return Err(Error::Usage(format!(
                "--hugepages: {command} takes one page size; membw sweep --hugepages measures several"
            )));
        }
        match self.mems()?.as_slice() {
            [one] => Ok(one.clone()),
            many => Err(Error::Usage(format!(
                "--mem: {command} takes one policy, not {}; membw sweep --mem measures several",
                many.len()
            ))),
        }
    }

    /// The page sizes, in order, each once.
    pub(crate) fn page_sizes(&self) -> Vec<Hugepages> {
        let mut out: Vec<Hugepages> = Vec::new();
        for h in self.pages.or(Hugepages::Auto) {
            if !out.contains(&h) {
                out.push(h);
            }
        }
        out
    }

    /// The ISAs a sweep measures, each a point (`None`: the widest).
    pub(crate) fn isas(&self) -> Vec<Option<crate::kernels::Isa>> {
        self.isa
            .each()
            .into_iter()
            .map(super::flags::IsaArg::isa)
            .collect()
    }

    /// The one memory policy and store mode of a single run.
    pub(crate) fn single(&self, command: &str) -> Result<(String, StoresRequest)> {
        self.isa.one(command)?;
        let stores = self.stores();
        if stores.len() > 1 {
            return Err(Error::Usage(format!(
                "--stores: {command} takes one store mode; membw sweep --stores measures several"
            )));
        }
        Ok((self.one_mem(command)?, stores[0]))
    }

    /// The backend `--backend` names for one rank of an MPI run: a
    /// device's by the rank's local rank where it names no index.
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    pub(crate) fn rank_backends(
        &self,
        launch: &crate::ranks::launcher::RankPlace,
    ) -> Result<Vec<Box<dyn crate::backend::Backend>>> {
        self.backend.for_rank(launch)
    }

    /// The backends --backend names, made once, where membw's kernels
    /// measure in this process alone (not the fake, not one of `ranks`).
    pub(crate) fn chosen(&self, ranks: bool) -> Result<Option<super::flags::Chosen>> {
        match ranks || self.fakes() {
            true => Ok(None),
            false => self.backend.chosen().map(Some),
        }
    }

    /// Whether the hidden fake source measures (tests).
    pub(crate) fn fakes(&self) -> bool {
        self.fake.fake_source.is_some()
    }

    /// The measurement source: membw's kernels, or the hidden fake.
    pub(crate) fn source(&self) -> Result<Box<dyn Source>> {
        self.backend.source(self.fake.fake_source.as_deref())
    }
}

/// How the theoretical peak is given, when the user knows it.
#[derive(Args, Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct PeakArgs {
    /// Theoretical peak of the whole node: 409.6GB/s, 0.4TB/s (a bare number is GB/s)
    #[arg(long, value_parser = peak::parse_peak, conflicts_with_all = ["channels", "mts"], help_heading = "Theoretical peak")]
    peak: Option<peak::GivenRate>,

    /// Memory channels per socket (with --mts)
    #[arg(long, requires = "mts", allow_negative_numbers = true, value_parser = super::values::parse_channels, help_heading = "Theoretical peak")]
    channels: Option<u32>,

    /// Memory transfer rate in MT/s, e.g. 3200 for DDR4-3200 (with --channels)
    #[arg(long, requires = "channels", allow_negative_numbers = true, value_parser = super::values::parse_mts, help_heading = "Theoretical peak")]
    mts: Option<u32>,
}

impl PeakArgs {
    pub(crate) fn request(&self) -> PeakRequest {
        match (self.peak, self.channels, self.mts) {
            (Some(gb_s), _, _) => PeakRequest::Node(gb_s),
            (None, Some(channels), Some(mts)) => PeakRequest::Channels { channels, mts },
            _ => PeakRequest::Detect,
        }
    }
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum StoresArg {
    /// Non-temporal when each array is larger than the last-level cache
    Auto,
    /// Ordinary stores (write-allocate)
    Regular,
    /// Non-temporal (streaming) stores
    Nt,
}

impl StoresArg {
    pub(crate) fn request(self) -> StoresRequest {
        match self {
            StoresArg::Auto => StoresRequest::Auto,
            StoresArg::Regular => StoresRequest::Regular,
            StoresArg::Nt => StoresRequest::Nt,
        }
    }
}

/// How to get a membw with MPI: the install form when this one was
/// installed by cargo (rebuilding in the tree would not replace it).
fn mpi_build_hint() -> String {
    let installed = std::env::current_exe()
        .ok()
        .is_some_and(|p| p.components().any(|c| c.as_os_str() == ".cargo"));
    if installed {
        "install it with MPI from the membw source directory: `cargo install --locked --path . --features mpi` (Debian: apt-get install libopenmpi-dev openmpi-bin libclang-dev)".into()
    } else {
        "build it with `cargo build --release --features mpi` (Debian: apt-get install libopenmpi-dev openmpi-bin libclang-dev)".into()
    }
}
