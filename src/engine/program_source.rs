//! Another program as a measurement source (`membw exec`): it runs under the
//! plan's placement and memory policy, its output gives the rates, and what
//! membw saw of its threads and pages becomes the verification. A program
//! that fails (exits non-zero, is killed, prints a failed validation or
//! nothing membw understands) is a failed measurement with the reason, not
//! an error of membw's.

use super::Source;
use crate::error::{Error, Input, Result};
use crate::foreign::{self, Invocation, parse};
use crate::memory::Hugepages;
use crate::memory::policy::{self, PagePlacement, Policy};
use crate::plan::Plan;
use crate::results::Measurement;
use crate::results::measurement::{
    KernelResult, ProgramRun, SourceDetail, ThreadPlacement, TimerCheck, Validation,
};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

pub struct ExecSource {
    pub argv: Vec<String>,
    pub timeout: Duration,
    /// Placement variables the user set: passed through untouched.
    pub keep: BTreeSet<String>,
    /// Pass the program's output through as it runs.
    pub show_output: bool,
}

impl Source for ExecSource {
    fn name(&self) -> &'static str {
        "exec"
    }

    fn measure(&mut self, plan: &Plan, stop: &crate::sys::Stop) -> Result<Measurement> {
        if !plan.mem.is_uniform() {
            return Err(Error::input(
                Input::Mem,
                plan.mem.to_string(),
                "another program's arrays cannot be told apart: give one policy for the whole process",
            ));
        }
        let policy = plan.mem.get(crate::kernels::ArrayId::A).clone();
        let ran = foreign::run(&Invocation {
            argv: &self.argv,
            cpus: &plan.cpus,
            pinned: plan.pinned,
            policy: policy.mbind_args(),
            keep: &self.keep,
            timeout: self.timeout,
            sample_every: Duration::from_millis(100),
            show_output: self.show_output,
            stop,
        })
        .map_err(|e| Error::Runtime(format!("cannot run {}", e.0)))?;
        Ok(measurement(plan, &policy, &ran))
    }
}

/// Why a run failed, if it did: the exit, a timeout, or the output.
fn failure(
    ran: &foreign::Ran,
    parsed: &std::result::Result<parse::ForeignOutput, parse::NotUnderstood>,
) -> Option<String> {
    let tail = if ran.stderr_tail.is_empty() {
        String::new()
    } else {
        format!("; its stderr ended: {}", ran.stderr_tail.join(" | "))
    };
    if ran.timed_out {
        return Some(format!(
            "timed out after {:.0} s and was killed{tail}",
            ran.wall_s
        ));
    }
    if let Some(sig) = ran.signal {
        return Some(format!("was killed by signal {sig}{tail}"));
    }
    if ran.code != Some(0) {
        return Some(format!(
            "exited with status {}{tail}",
            ran.code.unwrap_or(-1)
        ));
    }
    match parsed {
        Err(e) => Some(e.to_string()),
        Ok(o) if o.validated == Some(false) => Some(format!("reported a failed validation{tail}")),
        Ok(o) if o.rates.iter().all(|r| r.kernel.is_none()) => {
            Some("printed no Copy, Scale, Add or Triad rate".into())
        }
        Ok(_) => None,
    }
}

fn measurement(plan: &Plan, policy: &Policy, ran: &foreign::Ran) -> Measurement {
    let parsed = parse::parse(&ran.stdout);
    let failed = failure(ran, &parsed);
    let out = parsed.ok();
    let elements = out.as_ref().and_then(|o| o.array_elements).unwrap_or(0);
    let element_bytes = out.as_ref().and_then(|o| o.element_bytes).unwrap_or(8);
    let results = kernel_results(out.as_ref());
    let mut warnings = Vec::new();
    if let Some(why) = &failed {
        warnings.push(format!("the program {why}"));
    }
    warnings.extend(strays(plan, ran));
    // Thread i of the placement against the i-th thread seen (task ids in
    // creation order: the main thread first, as OpenMP numbers them).
    let threads = ThreadPlacement::list(&plan.cpus, |i| {
        ran.threads
            .get(i)
            .filter(|t| t.cpus.len() == 1)
            .map(|t| t.cpus[0])
    });
    let pages = page_placement(policy, &ran.pages_per_node, ran.pages_absent, &mut warnings);
    // Threads whose own mask, at the last sample, allowed several CPUs.
    let unpinned = || ran.threads.iter().filter(|t| t.allowed.len() > 1);
    let mut interference = ran.interference.clone();
    warnings.extend(crate::results::measurement::add_spread_finding(
        &mut interference, &results,
    ));
    Measurement {
        gpu_memory: None,
        in_caches: None,
        caches_unknown: None,
        offset: 0,
        array_elements: elements,
        bytes_per_array: elements * element_bytes,
        arrays: 3,
        ntimes: out.as_ref().and_then(|o| o.ntimes).unwrap_or(0) as usize,
        inner_repeats: 1,
        target: Some(crate::results::targets::Target::Program { label: None }),
        isa: None,
        stores: None,
        hugepages: Hugepages::Auto,
        mem_policy: policy.to_string(),
        held_back: None,
        pinned: true,
        bound_by: None,
        threads,
        pages,
        results,
        validation: Validation {
            passed: failed.is_none(),
            epsilon: 0.0,
            arrays: Vec::new(),
            read_rel_error: None,
            dot_rel_error: None,
            sum_tolerance: crate::protocol::EPSILON,
        },
        timer: TimerCheck {
            granularity_ns: 0.0,
            timing_test_us: 0.0,
            min_kernel_ticks: 0.0,
            barrier_us: None,
            device_clock: None,
            repetition_floor_us: None,
        },
        setup_s: 0.0,
        total_s: ran.wall_s,
        warnings,
        interference: Some(interference),
        detail: Some(SourceDetail::Program(ProgramRun {
            exit_code: ran.code,
            signal: ran.signal,
            timed_out: ran.timed_out,
            format: out.as_ref().map(|o| o.format.name().to_string()),
            stdout_tail: {
                let lines: Vec<&str> = ran.stdout.lines().collect();
                let from = lines.len().saturating_sub(20);
                lines[from..].iter().map(|l| l.to_string()).collect()
            },
            stderr_tail: ran.stderr_tail.clone(),
            watch_cpu_s: ran.watch_cpu_s,
            threads_seen: ran.threads.len(),
            threads_unpinned: unpinned().count(),
            // A pinned thread may be seen elsewhere before the runtime pins
            // it (OpenMP's main thread starts on the whole mask): only the
            // unpinned ones' moves count.
            threads_moved: unpinned().filter(|t| t.cpus.len() > 1).count(),
            cpu_changes: unpinned().map(|t| t.cpus.len().saturating_sub(1)).sum(),
            array_elements: out.as_ref().and_then(|o| o.array_elements),
            element_bytes: out.as_ref().and_then(|o| o.element_bytes),
            ntimes: out.as_ref().and_then(|o| o.ntimes).map(|n| n as usize),
        })),
    }
}

/// The rates the program printed, as membw's kernel results (no
/// repetition times: the program keeps them).
fn kernel_results(out: Option<&parse::ForeignOutput>) -> Vec<KernelResult> {
    out.iter()
        .flat_map(|o| &o.rates)
        .filter_map(|r| {
            let kernel = r.kernel?;
            let bytes = kernel.spec().bytes_counted();
            let min = r.min_time_s.unwrap_or(0.0);
            let max = r.max_time_s.unwrap_or(min);
            Some(KernelResult {
                kernel,
                bytes_per_element: bytes,
                dram_bytes_per_element: bytes,
                best_rate_mb_s: r.best_mb_s,
                avg_time_s: r.avg_time_s.unwrap_or(min),
                min_time_s: min,
                max_time_s: max,
                spread: if min > 0.0 { max / min } else { 1.0 },
                times_s: Vec::new(),
                thread_times_s: Vec::new(),
                repetitions: None,
                launch: None,
                stores: None,
            })
        })
        .collect()
}

/// A warning for each thread seen outside the placement's CPUs.
fn strays(plan: &Plan, ran: &foreign::Ran) -> Vec<String> {
    let mut out = Vec::new();
    // Every thread seen must have stayed inside the placement's CPUs.
    let allowed: BTreeSet<usize> = plan.cpus.iter().copied().collect();
    for t in &ran.threads {
        if t.cpus.iter().any(|c| !allowed.contains(c)) {
            out.push(format!(
                "thread {} ran on CPUs {}, outside the placement's {}",
                t.tid,
                crate::topology::cpulist::format_ranges(&t.cpus),
                crate::topology::cpulist::format_ranges(&plan.cpus)
            ));
        }
    }
    out
}

/// The process's pages per node against its policy.
fn page_placement(
    policy: &Policy,
    pages: &BTreeMap<usize, u64>,
    absent: u64,
    warnings: &mut Vec<String>,
) -> Vec<PagePlacement> {
    let total: u64 = pages.values().sum();
    if total == 0 {
        warnings.push(
            "the program ended before its pages could be sampled (it ran under 0.1 s)".into(),
        );
        return Vec::new();
    }
    let shares: BTreeMap<usize, f64> = pages
        .iter()
        .map(|(&n, &p)| (n, p as f64 / total as f64))
        .collect();
    let (held, why) = policy::judge(policy, &shares, None);
    if let Some(why) = why {
        warnings.push(format!(
            "memory policy {policy} did not hold for the program: {why}"
        ));
    }
    vec![PagePlacement {
        array: "program".into(),
        policy: policy.to_string(),
        pages_sampled: total as usize,
        pages_missing: absent as usize,
        nodes: shares,
        local_share: None,
        held,
        kernel_page_kib: None,
        huge_share: None,
    }]
}
