//! `--dry-run`: what `run`, `sweep` or `tune` would measure, without
//! measuring: threads and CPUs, the arrays against the caches (STREAM's
//! rule), the code and stores, the memory policy and the reproduce lines,
//! for this node or one described by `--sysroot`.

use crate::memory::gpu_memory::GpuMemory;
use crate::placement::spellings::Spellings;
use crate::plan::Plan;
use crate::topology::Topology;
use crate::topology::cpulist::format_ranges;
use crate::units::{Bytes, ELEMENT_BYTES};
use std::fmt::Write;

/// One planned measurement, as its label and its plan.
pub struct PlannedJob<'a> {
    pub label: String,
    pub plan: &'a Plan,
    /// Why `auto` chose its stores (empty for a device).
    pub stores_reason: String,
}

/// What a command would do.
pub struct PlanView<'a> {
    pub command: &'a str,
    pub topo: &'a Topology,
    /// Where the topology came from: `this node` or the `--sysroot` tree.
    pub node: String,
    /// The placement as asked, for a single run.
    pub placement: Option<String>,
    pub jobs: Vec<PlannedJob<'a>>,
    pub reproduce: Option<&'a Spellings>,
}

/// The widest vector ISA the node's flags name, as `--isa` spells it.
fn widest_isa(topo: &Topology) -> &'static str {
    let has = |f: &str| topo.cpu_info.flags.iter().any(|x| x == f);
    [
        ("avx512f", "avx512"),
        ("avx2", "avx2"),
        ("sve", "sve"),
        ("asimd", "neon"),
        ("sse2", "sse2"),
    ]
    .into_iter()
    .find(|(flag, _)| has(flag))
    .map_or("scalar", |(_, isa)| isa)
}

/// The arrays against the caches of the plan's CPUs, in STREAM's rule's
/// own words.
fn arrays_line(plan: &Plan, topo: &Topology) -> String {
    let arrays = plan.arrays_needed().len();
    let bytes = Bytes(plan.elements as u64 * ELEMENT_BYTES);
    let total = Bytes(bytes.0 * arrays as u64);
    // A device's arrays are in no host cache: its own memory's rule made
    // its size.
    let fit = match plan.host_cpus() {
        None => where_a_device_finds_them(plan.gpu_memory, plan.target.own_memory_node()),
        Some(working) => {
            let used = working.iter().copied().collect();
            let rule = crate::results::StreamRule::for_cpus(topo, &used);
            rule.describe(plan.elements as u64, plan.arrays_needed().len() as u64)
        }
    };
    format!(
        "{arrays} × {} elements ({bytes} each, {total} in all), {fit}",
        plan.elements
    )
}

/// Where a device's arrays live, as the plan asks; `own`: the host node
/// that is the device's own memory, where its driver says one is.
fn where_a_device_finds_them(place: GpuMemory, own: Option<usize>) -> String {
    let node =
        |n: Option<usize>| n.map_or("the host thread's node".into(), |n| format!("node {n}"));
    if let Some(n) = place.node().filter(|&n| place.is_host() && Some(n) == own) {
        return format!(
            "in {} host memory on node {n}, the device's own memory as its driver says, held against its memory's peak",
            match place {
                GpuMemory::System { .. } => "pageable",
                _ => "pinned",
            }
        );
    }
    match place {
        GpuMemory::Device => "in the device's own memory".into(),
        GpuMemory::Managed { prefetch: false } => {
            "in managed memory, written first by the host (its pages migrate on the first kernel, timed apart)".into()
        }
        GpuMemory::Managed { prefetch: true } => {
            "in managed memory, written first by the host and prefetched to the device (timed apart)".into()
        }
        GpuMemory::Host { node: n } => format!(
            "in pinned host memory on {}, mapped: every access crosses the host link",
            node(n)
        ),
        GpuMemory::System { node: n } => format!(
            "in pageable host memory on {}, read through the host's page tables",
            node(n)
        ),
    }
}

/// The kernels' code: ISA and stores, and why.
fn code_line(plan: &Plan, reason: &str, isa: &str) -> String {
    let stores = plan
        .stores()
        .map_or("the device's".into(), |s| s.to_string());
    let why = if reason.is_empty() {
        String::new()
    } else {
        format!(" ({reason})")
    };
    format!("{isa}, {stores} stores{why}")
}

/// The plan of a target driven by one host thread (a device), in its own
/// words: what it is and where it hangs, the host thread that queues its
/// work, its arrays and kernels, its setup; no CPU placement, ISA or page
/// policy, which do not reach its memory.
fn driven_plan(o: &mut String, topo: &Topology, p: &Plan) {
    let cpus = match p.cpus.len() {
        1 => "CPU",
        _ => "CPUs",
    };
    let _ = writeln!(
        o,
        "  target     {}",
        p.target.describe().unwrap_or_else(|| p.target.label())
    );
    let _ = writeln!(
        o,
        "  host       {} thread on {cpus} {} (it queues the target's work)",
        p.cpus.len(),
        format_ranges(&p.cpus)
    );
    let _ = writeln!(o, "  arrays     {}", arrays_line(p, topo));
    let kernels: Vec<&str> = p.kernels.iter().map(|k| k.spec().name).collect();
    let _ = writeln!(
        o,
        "  kernels    {}, {} repetitions",
        kernels.join(", "),
        p.ntimes
    );
    let _ = writeln!(o, "  setup      {}", p.target.method().setup);
}

pub fn render(v: &PlanView) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "Plan of membw {} on {} (nothing measured; --dry-run)",
        v.command, v.node
    );
    let isa = match v.node.as_str() {
        "this node" => None,
        // The node's own widest, not this host's: the plan was made here.
        _ => Some(format!(
            "{} (the node's widest, from its flags)",
            widest_isa(v.topo)
        )),
    };
    if let [job] = v.jobs.as_slice()
        && let Some(cpus) = job.plan.host_cpus()
    {
        let p = job.plan;
        if let Some(placement) = &v.placement {
            let _ = writeln!(o, "  placement  {placement}");
        }
        let _ = writeln!(
            o,
            "  threads    {} on CPUs {}",
            cpus.len(),
            format_ranges(cpus)
        );
        let _ = writeln!(o, "  arrays     {}", arrays_line(p, v.topo));
        let kernels: Vec<&str> = p.kernels.iter().map(|k| k.spec().name).collect();
        let _ = writeln!(
            o,
            "  kernels    {}, {} repetitions",
            kernels.join(", "),
            p.ntimes
        );
        let isa =
            isa.unwrap_or_else(|| (p.target.cpu_code()).map_or("-".into(), |c| c.isa.to_string()));
        let _ = writeln!(o, "  code       {}", code_line(p, &job.stores_reason, &isa));
        let _ = writeln!(o, "  memory     {} · pages {}", p.mem, p.hugepages);
    } else if let [job] = v.jobs.as_slice() {
        // What its host's threads do not describe: the device's own plan.
        driven_plan(&mut o, v.topo, job.plan);
    } else {
        if let Some(isa) = &isa {
            let _ = writeln!(o, "  code       {isa}");
        }
        let _ = writeln!(o, "  {} points:", v.jobs.len());
        for job in &v.jobs {
            let p = job.plan;
            let _ = writeln!(
                o,
                "    {:<40} CPUs {:<12} {:>12} el.  {:<7} {}",
                job.label,
                format_ranges(&p.cpus),
                p.elements,
                p.stores().map_or("-".into(), |s| s.to_string()),
                match p.in_caches {
                    Some(_) => "caches",
                    None => "memory",
                }
            );
        }
        let _ = writeln!(
            o,
            "  (el.: elements per array; caches: each array under 4 × the caches of the point's CPUs, STREAM's rule)"
        );
    }
    if let Some(s) = v.reproduce {
        o.push_str(&super::reproduce_block("Reproduce this placement:", s));
    }
    o
}

/// `baseline --dry-run`, `check --dry-run`: each scope a health check
/// measures, on which processor over which memory, with its kernels and
/// elements.
pub fn render_scopes(command: &str, node: &str, jobs: &[(String, &Plan)]) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "Plan of membw {command} on {node} (nothing measured; --dry-run): {} scopes",
        jobs.len()
    );
    let rows: Vec<[String; 5]> = (jobs.iter())
        .map(|(scope, p)| {
            let kernels: Vec<&str> = p.kernels.iter().map(|k| k.spec().name).collect();
            let buffers = (p.kernels.iter())
                .any(|k| k.spec().arrays().any(crate::kernels::ArrayId::host_buffer));
            let (on, memory) = match p.host_cpus() {
                Some(cpus) => (format!("CPUs {}", format_ranges(cpus)), p.mem.to_string()),
                None if buffers => (p.target.label(), format!("host buffers {}", p.mem)),
                None => (p.target.label(), format!("--gpu-memory {}", p.gpu_memory)),
            };
            [
                scope.clone(),
                on,
                memory,
                kernels.join(","),
                p.elements.to_string(),
            ]
        })
        .collect();
    let header = ["scope", "on", "memory", "kernels", "elements"].map(String::from);
    let widths: Vec<usize> = (0..5)
        .map(|c| {
            (rows.iter().chain([&header]))
                .map(|r| r[c].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for row in std::iter::once(&header).chain(&rows) {
        let cells: Vec<String> = (row.iter().zip(&widths))
            .map(|(cell, &w)| format!("{cell:<w$}"))
            .collect();
        let _ = writeln!(o, "  {}", cells.join("  ").trim_end());
    }
    o
}
