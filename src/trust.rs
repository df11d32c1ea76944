//! Whether a measurement can be trusted: what else ran on the CPUs while it
//! ran. A snapshot of every CPU's busy, idle and steal ticks and of membw's
//! own threads is taken when the timed work starts and again when it ends;
//! on each CPU, busy time less membw's own is other work. Other work on a
//! measured CPU takes time from a measured thread; on any other CPU it
//! takes memory bandwidth; steal is a hypervisor running someone else. Each
//! finding is one line with its figure, and the figures go into JSON.

mod conclusion;
mod held_back;

pub use conclusion::Trust;
pub use held_back::HeldBack;

use crate::sys::{CpuTicks, TaskTicks};
use crate::topology::cpulist::format_ranges;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Instant;

/// Other work on a measured CPU worth a line: a tenth of its time.
pub const OTHER_ON_MEASURED: f64 = 0.10;
/// Other work on a CPU that is not measured: a quarter of its time (it
/// competes for memory bandwidth, not for the measured threads' time).
pub const OTHER_ELSEWHERE: f64 = 0.25;
/// Steal on any CPU: a twentieth of its time.
pub const STEAL: f64 = 0.05;
/// Fewer ticks than this are the counters' granularity, not a finding.
pub const MIN_TICKS: u64 = 3;
/// A kernel whose slowest counted repetition took this much longer than
/// its fastest did not run steadily.
pub const SPREAD: f64 = 1.5;

/// What other work does to the figures, for the findings' last words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// Bandwidth: `results may be low`.
    Bandwidth,
    /// Latency: `latencies may be high`.
    Latency,
}

impl Effect {
    /// The findings' last words.
    pub fn words(self) -> &'static str {
        match self {
            Effect::Bandwidth => "results may be low",
            Effect::Latency => "latencies may be high",
        }
    }
}

/// The counters at one moment.
#[derive(Debug, Clone)]
pub struct Snapshot {
    at: Instant,
    cpus: Vec<CpuTicks>,
    own: Vec<TaskTicks>,
    /// The threads of the other ranks of this process's launch on this
    /// node (empty outside one).
    siblings: Vec<TaskTicks>,
}

impl Snapshot {
    /// Every CPU's counters and this process's threads, now.
    pub fn take() -> Snapshot {
        Snapshot {
            at: Instant::now(),
            cpus: crate::sys::cpu_ticks(),
            own: crate::sys::own_task_ticks(),
            siblings: crate::sys::sibling_task_ticks(),
        }
    }

    /// What ran between `self` and `end` besides this process's threads,
    /// on the CPUs `scope` covers. `extra_own_ticks` is CPU time of
    /// membw's that the thread list misses (a child program that has
    /// ended), charged to the measured CPUs.
    pub fn until(
        &self,
        end: &Snapshot,
        scope: JudgedCpus,
        extra_own_ticks: u64,
        effect: Effect,
    ) -> Interference {
        let mut own = own_by_cpu(&self.own, &end.own);
        spread_over(&mut own, scope.measured, extra_own_ticks);
        let window_s = (end.at - self.at).as_secs_f64();
        // One rank of several (an MPI run, or ranks that measure on their
        // own with --independent): its siblings' time is the job's own,
        // never other work; on a CPU this rank measured it is a finding of
        // its own (two ranks took turns on one CPU: each figure a share).
        let siblings = own_by_cpu(&self.siblings, &end.siblings);
        for (&cpu, &ticks) in &siblings {
            *own.entry(cpu).or_insert(0) += ticks;
        }
        let mut seen = judge(&self.cpus, &end.cpus, &own, scope, window_s, effect);
        if let Some(f) = siblings_finding(&siblings, scope.measured, window_s, effect) {
            seen.busy = true;
            seen.findings.push(f);
        }
        seen
    }
}

/// Which CPUs a judgment covers: the measured ones, and whether work on
/// the others counts (it shares the memory) or may be the job's own.
#[derive(Debug, Clone, Copy)]
pub struct JudgedCpus<'a> {
    pub measured: &'a [usize],
    pub elsewhere: bool,
}

impl<'a> JudgedCpus<'a> {
    /// The whole node: other work anywhere counts.
    pub fn node(measured: &'a [usize]) -> JudgedCpus<'a> {
        JudgedCpus {
            measured,
            elsewhere: true,
        }
    }

    /// One rank of several: the other CPUs may run the job's other ranks,
    /// which are not other work, so only the rank's own CPUs are judged.
    pub fn rank(measured: &'a [usize]) -> JudgedCpus<'a> {
        JudgedCpus {
            measured,
            elsewhere: false,
        }
    }
}

/// What other work did to a measurement, with one line per finding.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Interference {
    /// Seconds between the two snapshots.
    pub window_s: f64,
    /// Each measured CPU, and each other CPU with other work or steal.
    pub cpus: Vec<CpuLoad>,
    /// One line per finding; none when nothing else ran and the
    /// repetitions were steady.
    pub findings: Vec<String>,
    /// Whether other work or steal (not only an unsteady spread) was found:
    /// the node was busy, which says nothing of its memory.
    #[serde(default)]
    pub busy: bool,
    /// Why the counters could not judge the window (it was shorter than
    /// the ticks a finding needs), where they could not: no finding then
    /// means nothing, and the window is neither trusted nor not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_judged: Option<String>,
}

/// One CPU's share of the window taken by others.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CpuLoad {
    pub cpu: usize,
    pub measured: bool,
    /// Percent of the CPU's time that other processes ran.
    pub other_pct: f64,
    /// Percent of the CPU's time the hypervisor stole.
    pub steal_pct: f64,
    /// Busy ticks less membw's own, below zero where the two counters
    /// disagree by a tick: a [`Tally`] sums these, so that such noise
    /// cancels instead of adding up as other work (a tally's own result
    /// holds the sum, less what it leaves to rounding).
    #[serde(skip)]
    pub other_ticks: i64,
}

impl Interference {
    /// Whether nothing else was seen (or nothing could be read).
    pub fn clean(&self) -> bool {
        self.findings.is_empty()
    }

    /// The first finding without its last words (`CPU 1 was 38 % busy
    /// with other work during the run`), for a line that says instead what
    /// the interference stopped.
    pub fn cause(&self) -> Option<&str> {
        let first = self.findings.first()?;
        let cause = [Effect::Bandwidth, Effect::Latency]
            .iter()
            .find_map(|e| first.strip_suffix(e.words())?.strip_suffix(": "));
        Some(cause.unwrap_or(first))
    }

    /// What the counters saw of a clean window, for the trust line:
    /// `no other work on CPUs 0-1 and no steal`.
    pub fn quiet_part(&self) -> String {
        let measured: Vec<usize> = (self.cpus.iter())
            .filter(|c| c.measured)
            .map(|c| c.cpu)
            .collect();
        format!(
            "no other work on CPU{} {} and no steal",
            if measured.len() == 1 { "" } else { "s" },
            format_ranges(&measured)
        )
    }

    /// The line for people when the run was clean.
    pub fn quiet_line(&self) -> String {
        let measured: Vec<usize> = self
            .cpus
            .iter()
            .filter(|c| c.measured)
            .map(|c| c.cpu)
            .collect();
        format!(
            "no other work on CPU{} {} and no steal during the {:.2} s measured",
            if measured.len() == 1 { "" } else { "s" },
            format_ranges(&measured),
            self.window_s
        )
    }
}

/// Where the other ranks of this rank's launch ran on its measured CPUs
/// for a tenth of the window or more: the CPUs were shared within the job.
fn siblings_finding(
    siblings: &BTreeMap<usize, u64>,
    measured: &[usize],
    window_s: f64,
    effect: Effect,
) -> Option<String> {
    let window_ticks = window_s * crate::sys::ticks_per_second();
    let shared: Vec<(usize, f64)> = (siblings.iter())
        .filter(|(cpu, ticks)| measured.contains(cpu) && **ticks >= MIN_TICKS)
        .map(|(&cpu, &ticks)| (cpu, 100.0 * ticks as f64 / window_ticks.max(1.0)))
        .filter(|(_, pct)| *pct >= OTHER_ON_MEASURED * 100.0)
        .collect();
    let cpus: Vec<usize> = shared.iter().map(|s| s.0).collect();
    let most = shared.iter().map(|s| s.1).fold(0.0, f64::max).min(100.0);
    (!cpus.is_empty()).then(|| format!(
        "other ranks of this launch ran on {} beside this one (up to {most:.0} % of the run): the ranks shared CPUs, bind each to CPUs of its own (mpirun --map-by core --bind-to core on separate cores): {}",
        cpus_text(&cpus),
        effect.words()
    ))
}

/// Each CPU's ticks of membw's own threads between two thread lists: a
/// thread is charged to the CPU it last ran on (membw's are pinned).
fn own_by_cpu(before: &[TaskTicks], after: &[TaskTicks]) -> BTreeMap<usize, u64> {
    let mut own = BTreeMap::new();
    for t in after {
        let earlier = before
            .iter()
            .find(|b| b.tid == t.tid)
            .map_or(0, |b| b.ticks);
        *own.entry(t.cpu).or_insert(0) += t.ticks.saturating_sub(earlier);
    }
    own
}

/// Charges `ticks` evenly to the measured CPUs.
fn spread_over(own: &mut BTreeMap<usize, u64>, measured: &[usize], ticks: u64) {
    if measured.is_empty() || ticks == 0 {
        return;
    }
    let share = ticks / measured.len() as u64;
    for &cpu in measured {
        *own.entry(cpu).or_insert(0) += share;
    }
}

/// The rule, on two `/proc/stat` samples and membw's own ticks per CPU.
pub fn judge(
    before: &[CpuTicks],
    after: &[CpuTicks],
    own: &BTreeMap<usize, u64>,
    scope: JudgedCpus,
    window_s: f64,
    effect: Effect,
) -> Interference {
    let mut seen = Vec::new();
    for a in after {
        let Some(b) = before.iter().find(|b| b.cpu == a.cpu) else {
            continue;
        };
        let total = a.total().saturating_sub(b.total());
        if total == 0 {
            continue;
        }
        let busy = a.busy.saturating_sub(b.busy);
        let own = own.get(&a.cpu).copied().unwrap_or(0);
        let other = busy.saturating_sub(own);
        let steal = a.steal.saturating_sub(b.steal);
        let pct = |ticks: u64| ticks as f64 * 100.0 / total as f64;
        seen.push(Seen {
            load: CpuLoad {
                cpu: a.cpu,
                measured: scope.measured.contains(&a.cpu),
                other_pct: pct(other),
                steal_pct: pct(steal),
                other_ticks: busy as i64 - own as i64,
            },
            steal,
        });
    }
    conclude(&seen, scope.elsewhere, window_s, effect)
}

/// One CPU over a window: its shares, and the stolen ticks behind them
/// (the other ticks are in the load); too few ticks are the counters'
/// granularity, whatever the share.
struct Seen {
    load: CpuLoad,
    steal: u64,
}

/// The findings on what each CPU saw.
fn conclude(seen: &[Seen], elsewhere: bool, window_s: f64, effect: Effect) -> Interference {
    let then = effect.words();
    let mut cpus = Vec::new();
    let (mut busy_here, mut busy_elsewhere, mut stolen) = (Vec::new(), Vec::new(), Vec::new());
    for s in seen {
        let load = s.load;
        let threshold = if load.measured {
            OTHER_ON_MEASURED
        } else {
            OTHER_ELSEWHERE
        };
        if load.other_ticks >= MIN_TICKS as i64 && load.other_pct >= threshold * 100.0 {
            if load.measured {
                busy_here.push(load);
            } else {
                busy_elsewhere.push(load);
            }
        }
        if s.steal >= MIN_TICKS && load.steal_pct >= STEAL * 100.0 {
            stolen.push(load);
        }
        if load.measured || load.other_pct > 0.0 || load.steal_pct > 0.0 {
            cpus.push(load);
        }
    }
    let mut findings = Vec::new();
    if !busy_here.is_empty() {
        findings.push(format!(
            "{} busy with other work during the run: {then}",
            were(&busy_here, |l| l.other_pct)
        ));
    }
    if elsewhere && !busy_elsewhere.is_empty() {
        findings.push(format!(
            "{} busy with other work during the run (not measured, but sharing the memory): {then}",
            were(&busy_elsewhere, |l| l.other_pct)
        ));
    }
    if !stolen.is_empty() {
        let (cpus, range) = figures(&stolen, |l| l.steal_pct);
        findings.push(format!(
            "the hypervisor took {range} of {cpus}'s time (steal): {then}"
        ));
    }
    Interference {
        window_s,
        cpus,
        busy: !findings.is_empty(),
        findings,
        not_judged: None,
    }
}

/// Many measurements' interference judged as one window, as a check's
/// rounds are: each CPU's other work and steal summed over the windows, so
/// a competitor shows even where each round is too short for the tick
/// counters. Each window was taken while membw's threads were pinned and
/// alive, so their time is already told apart; other work is summed with
/// its sign, because each window's share, clipped at zero, would add the
/// counters' one-tick disagreements up as other work. membw's own time is
/// read in whole ticks, rounded down, so a quarter tick per window and CPU
/// is left to that (quiet 15 ms rounds here read 4-13 % other work without).
#[derive(Debug)]
pub struct Tally {
    ticks_per_second: f64,
    window_s: f64,
    /// CPU → (measured in some window, other ticks, windows, stolen seconds).
    cpus: BTreeMap<usize, (bool, i64, u32, f64)>,
}

/// The ticks per window and CPU a tally leaves to rounding.
const TALLY_ALLOWANCE: f64 = 0.25;

impl Tally {
    pub fn new(ticks_per_second: f64) -> Tally {
        Tally {
            ticks_per_second,
            window_s: 0.0,
            cpus: BTreeMap::new(),
        }
    }

    pub fn add(&mut self, part: &Interference) {
        self.window_s += part.window_s;
        for c in &part.cpus {
            let e = self.cpus.entry(c.cpu).or_default();
            e.0 |= c.measured;
            e.1 += c.other_ticks;
            e.2 += 1;
            e.3 += c.steal_pct / 100.0 * part.window_s;
        }
    }

    /// The findings over every window added; `elsewhere` as [`JudgedCpus`]'s.
    pub fn judge(&self, elsewhere: bool, effect: Effect) -> Interference {
        let pct = |s: f64| {
            if self.window_s > 0.0 {
                s * 100.0 / self.window_s
            } else {
                0.0
            }
        };
        let seen: Vec<Seen> = self
            .cpus
            .iter()
            .map(|(&cpu, &(measured, other_ticks, windows, steal_s))| {
                let other = (other_ticks as f64 - TALLY_ALLOWANCE * windows as f64).max(0.0);
                Seen {
                    load: CpuLoad {
                        cpu,
                        measured,
                        other_pct: pct(other / self.ticks_per_second),
                        steal_pct: pct(steal_s),
                        other_ticks: other as i64,
                    },
                    steal: (steal_s * self.ticks_per_second).round() as u64,
                }
            })
            .collect();
        let mut judged = conclude(&seen, elsewhere, self.window_s, effect);
        let shortest = MIN_TICKS as f64 / self.ticks_per_second;
        // No window at all: nothing was watched (a fake source), which
        // the caller tells apart by having added none.
        if self.window_s > 0.0 && self.window_s < shortest {
            judged.not_judged = Some(format!(
                "the CPUs' tick counters cannot judge the {:.3} s measured in all (they need {shortest:.2} s at least)",
                self.window_s
            ));
        }
        judged
    }
}

/// `CPU 1 was 38 %` or `CPUs 0-1 were 12-38 %`.
fn were(loads: &[CpuLoad], figure: fn(&CpuLoad) -> f64) -> String {
    let (cpus, range) = figures(loads, figure);
    let verb = if loads.len() == 1 { "was" } else { "were" };
    format!("{cpus} {verb} {range}")
}

/// (`CPU 1` or `CPUs 0-1`, `38 %` or `12-38 %`).
fn figures(loads: &[CpuLoad], figure: fn(&CpuLoad) -> f64) -> (String, String) {
    let ids: Vec<usize> = loads.iter().map(|l| l.cpu).collect();
    let lo = loads.iter().map(figure).fold(f64::INFINITY, f64::min);
    let hi = loads.iter().map(figure).fold(0.0, f64::max);
    let range = if hi.round() == lo.round() {
        format!("{hi:.0} %")
    } else {
        format!("{lo:.0}-{hi:.0} %")
    };
    (cpus_text(&ids), range)
}

/// `CPU 1` or `CPUs 0-1`.
fn cpus_text(ids: &[usize]) -> String {
    match ids {
        [one] => format!("CPU {one}"),
        _ => format!("CPUs {}", format_ranges(ids)),
    }
}

/// The spread finding: the kernel whose repetitions varied most, when its
/// max/min time is at least [`SPREAD`].
pub fn spread_finding<'a>(spreads: impl IntoIterator<Item = (&'a str, f64)>) -> Option<String> {
    let (kernel, spread) = spreads
        .into_iter()
        .filter(|(_, s)| s.is_finite())
        .max_by(|a, b| a.1.total_cmp(&b.1))?;
    (spread >= SPREAD).then(|| format!("{kernel}'s repetitions varied {spread:.2}×{SPREAD_TAIL}"))
}

/// How every spread finding ends (to find it again).
pub const SPREAD_TAIL: &str =
    " (max/min time): the node was not steady; run again or look for other work";

#[cfg(test)]
mod tests;
