//! `membw latency`: idle latency by pointer chasing over working sets from
//! L1 to DRAM, pinned to one CPU, with the memory placed by `--mem`.

use super::print;
use crate::error::{Error, Input, Result};
use crate::latency::{self, LatencyPlan, LatencyPoint};
use crate::memory::policy as mempolicy;
use crate::units::Bytes;
use clap::Args;
use std::fmt::Write;
use std::time::Duration;

#[derive(Args, Debug)]
pub(crate) struct LatencyArgs {
    /// The CPU that chases [default: the first allowed CPU]
    #[arg(long)]
    cpu: Option<usize>,

    /// Working sets: a list (32KiB,1MiB,256MiB) or a doubling range (4KiB..1GiB)
    #[arg(long, default_value = "4KiB..256MiB")]
    sizes: String,

    /// Memory policy of the working set (local, bind:N, interleave:all, preferred:N)
    #[arg(long, default_value = "local")]
    mem: String,

    /// Page size: transparent hugepages (thp) or base pages (never)
    #[arg(long, value_parser = ["thp", "never"], default_value = "thp")]
    hugepages: String,

    /// Timed chasing per working set
    #[arg(long, default_value = "300ms", value_parser = humantime::parse_duration)]
    time: Duration,

    /// Core clock in GHz, to show cycles per load [default: cpufreq's maximum, else /proc/cpuinfo's cpu MHz]
    #[arg(long)]
    ghz: Option<f64>,

    /// Output format
    #[arg(long, value_parser = ["text", "json"], default_value = "text")]
    format: String,
}

/// The most memory one working set may take: a pointer chase over more
/// than this says nothing new and takes minutes.
const MAX_WORKING_SET: u64 = 64 << 30;

/// The CPU's clock, GHz: cpufreq's maximum, else /proc/cpuinfo's `cpu MHz`
/// for that CPU (inside a VM, the host's nominal clock).
fn clock_ghz(cpu: usize) -> Option<f64> {
    let path = format!("/sys/devices/system/cpu/cpu{cpu}/cpufreq/cpuinfo_max_freq");
    let from_cpufreq = std::fs::read_to_string(path)
        .ok()
        .and_then(|t| t.trim().parse::<f64>().ok())
        .map(|khz| khz / 1e6);
    from_cpufreq
        .or_else(|| {
            let text = std::fs::read_to_string("/proc/cpuinfo").ok()?;
            let block = text.split("\n\n").find(|b| {
                b.lines().any(|l| {
                    l.split_once(':').is_some_and(|(k, v)| {
                        k.trim() == "processor" && v.trim().parse() == Ok(cpu)
                    })
                })
            })?;
            let mhz: f64 = block.lines().find_map(|l| {
                let (k, v) = l.split_once(':')?;
                (k.trim() == "cpu MHz").then(|| v.trim().parse().ok())?
            })?;
            Some(mhz / 1e3)
        })
        .filter(|g| *g > 0.0)
}

pub(crate) fn latency(args: LatencyArgs) -> Result<()> {
    let topo = super::read_topology(None)?;
    let cpu = match args.cpu {
        Some(c) if topo.allowed_cpus.contains(c) => c,
        Some(c) => {
            return Err(Error::Usage(format!(
                "--cpu {c}: not among the CPUs this process may use ({})",
                topo.allowed_cpus
            )));
        }
        None => *topo
            .allowed_cpus
            .ids()
            .first()
            .ok_or_else(|| Error::Runtime("no CPU may be used".into()))?,
    };
    let sizes = crate::engine::sweep::parse_sizes(&args.sizes)
        .map_err(|e| Error::Usage(format!("--sizes {e}")))?;
    if let Some(&bad) = sizes
        .iter()
        .find(|&&s| !(128..=MAX_WORKING_SET).contains(&s))
    {
        return Err(Error::Usage(format!(
            "--sizes {}: each working set must be between 128 B and {}",
            Bytes(bad),
            Bytes(MAX_WORKING_SET)
        )));
    }
    // The largest set is mapped and touched whole: refuse what cannot fit
    // before allocating, as run does.
    let room = [
        topo.memory.available,
        topo.memory
            .cgroup_limit
            .map(|l| Bytes(l.0.saturating_sub(topo.memory.cgroup_usage.map_or(0, |u| u.0)))),
    ]
    .into_iter()
    .flatten()
    .map(|b| b.0)
    .min();
    // Building the permutation takes two words per 64-byte line besides.
    if let (Some(room), Some(&largest)) = (room, sizes.iter().max())
        && largest + largest / 4 > room
    {
        return Err(Error::Usage(format!(
            "--sizes {}: more than the {} of memory available",
            Bytes(largest),
            Bytes(room)
        )));
    }
    if sizes.len() > 64 {
        return Err(Error::Usage("--sizes: at most 64 working sets".into()));
    }
    let policy = mempolicy::parse(&args.mem, &topo)?;
    let whole = policy.arrays[0].clone();
    if policy.arrays.iter().any(|p| *p != whole) {
        return Err(Error::about(
            Input::Mem,
            "a per-array policy does not apply to a single working set",
        ));
    }
    if args
        .ghz
        .is_some_and(|g| !(g.is_finite() && g > 0.0 && g < 20.0))
    {
        return Err(Error::Usage(
            "--ghz: a clock rate between 0 and 20 GHz".into(),
        ));
    }
    let plan = LatencyPlan {
        cpu,
        sizes,
        hugepages: args.hugepages == "thp",
        policy: whole,
        time_per_size: args.time,
        clock_ghz: args.ghz.or_else(|| clock_ghz(cpu)),
    };
    let points = latency::measure(&plan)?;
    print(&if args.format == "json" {
        let doc = serde_json::json!({
            "schema_version": crate::results::SCHEMA_VERSION,
            "experiment": "latency",
            "timestamp": crate::engine::now(),
            "host": crate::results::Host::describe(&topo),
            "cpu": cpu,
            "mem": plan.policy.to_string(),
            "hugepages": args.hugepages,
            "clock_ghz": plan.clock_ghz,
            "points": points,
        });
        serde_json::to_string_pretty(&doc).expect("plain data serializes") + "\n"
    } else {
        render(&plan, &args.hugepages, &points)
    })
}

fn render(plan: &LatencyPlan, hugepages: &str, points: &[LatencyPoint]) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "Latency: dependent loads through a random cycle of cache lines · CPU {} · memory {} · pages: {hugepages}{}",
        plan.cpu,
        plan.policy,
        plan.clock_ghz
            .map_or(String::new(), |g| format!(" · clock {g:.2} GHz"))
    );
    let _ = writeln!(
        o,
        "\n  {:>10} {:>9} {:>9} {:>9} {:>9} {:>8} {:>7}",
        "working set", "min ns", "p50 ns", "p90 ns", "p99 ns", "cycles", "huge"
    );
    for p in points {
        let _ = writeln!(
            o,
            "  {:>10} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>8} {:>7}",
            Bytes(p.bytes).to_string(),
            p.min_ns,
            p.p50_ns,
            p.p90_ns,
            p.p99_ns,
            p.p50_cycles.map_or("-".into(), |c| format!("{c:.1}")),
            p.huge_share
                .map_or("-".into(), |h| format!("{:.0}%", 100.0 * h))
        );
    }
    let _ = writeln!(
        o,
        "\nns per load over {}-load chunks; cycles = p50 × clock; huge = share of the working set in transparent hugepages",
        points.first().map_or(0, |p| p.loads_per_chunk)
    );
    o
}
