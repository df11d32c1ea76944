//! `membw exec`'s text: another program's run under membw's placement and
//! memory policy, with what was verified.

use crate::results::{Record, RunResult};
use std::collections::BTreeMap;
use std::fmt::Write;

/// What `membw exec` shows besides the record: the command line, the
/// placement as asked, its CPUs, and the user's own variables passed through.
pub struct ExecView<'a> {
    pub program: &'a [String],
    pub placement: &'a str,
    pub cpus: &'a [usize],
    /// The user's placement variables, passed to the program untouched,
    /// with their values.
    pub kept: &'a std::collections::BTreeMap<String, String>,
    pub record: &'a Record,
}

/// The text form: setup, the rates (mean ± 95 % CI over the runs), what
/// watching cost, and what was verified.
pub fn text(view: &ExecView) -> String {
    let (placement, cpus, kept, r) = (view.placement, view.cpus, view.kept, view.record);
    let mut o = String::new();
    let _ = writeln!(o, "Program:   {}", view.program.join(" "));
    let _ = writeln!(o, "Placement: {placement}");
    let _ = writeln!(o, "Memory:    {}", r.point.mem_text());
    let _ = writeln!(
        o,
        "CPUs:      {} ({})",
        crate::topology::cpulist::format_ranges(cpus),
        crate::units::plural(cpus.len(), "thread")
    );
    let set: Vec<String> = crate::foreign::placement_env(cpus, r.point.pinned())
        .into_iter()
        .filter(|(k, _)| !kept.contains_key(*k))
        .map(|(k, v)| format!("{k}='{v}'"))
        .collect();
    let mask = match r.point.pinned() {
        true => "the affinity mask",
        false => "no binding (unpinned)",
    };
    let _ = writeln!(o, "membw set: {mask}, {}", set.join(" "));
    if !kept.is_empty() {
        let kept: Vec<String> = kept.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let _ = writeln!(
            o,
            "yours:     {} (passed through as you set them)",
            kept.join(" ")
        );
    }
    // One run has no interval: the header says what the column holds.
    let header = match r.runs.len() {
        1 => "GB/s (1 run: no interval)".to_string(),
        n => format!("GB/s (mean ± 95 % CI, n = {n} runs)"),
    };
    let _ = writeln!(o, "\n  kernel   {header:<31}  min      max");
    if r.stats.is_empty() {
        let _ = writeln!(o, "  (no rates: see the error)");
    }
    for (k, s) in &r.stats {
        let _ = writeln!(
            o,
            "  {:<7}  {:>16}  {:>8.2}  {:>8.2}",
            k.spec().name,
            // One run has no spread to show.
            if s.n == 1 {
                format!("{:.2}", s.mean)
            } else {
                format!(
                    "{:.2} ± {:.2}",
                    s.mean,
                    s.interval().map_or(0.0, |i| i.half_width())
                )
            },
            s.min,
            s.max
        );
    }
    let _ = writeln!(o, "{}", watch_line(&r.runs, cpus.len()));
    let _ = writeln!(o, "Verified:  {}", verified(&r.runs));
    let judged: Vec<_> = r
        .runs
        .iter()
        .filter_map(|run| run.interference.as_ref())
        .collect();
    // Each finding once, with the runs (1-based) it was made in.
    let mut findings: BTreeMap<&String, Vec<usize>> = BTreeMap::new();
    for (n, run) in r.runs.iter().enumerate() {
        for f in run.interference.iter().flat_map(|i| &i.findings) {
            findings.entry(f).or_default().push(n + 1);
        }
    }
    match (judged.first(), findings.is_empty()) {
        (None, _) => {}
        (Some(i), true) => {
            let _ = writeln!(o, "Trusted:   {}", i.quiet_line());
        }
        (Some(_), false) => {
            for (f, runs) in findings {
                let _ = writeln!(o, "NOT TRUSTED: {}: {f}", which_runs(&runs, r.runs.len()));
            }
        }
    }
    o
}

/// `run 2 of 3`, `runs 1, 3 of 3`, or `the run` where there was one.
fn which_runs(runs: &[usize], of: usize) -> String {
    let list = runs.iter().map(usize::to_string).collect::<Vec<_>>();
    match (of, runs.len()) {
        (1, _) => "the run".into(),
        (_, 1) => format!("run {} of {of}", list[0]),
        _ if runs.len() == of => format!("every run of {of}"),
        _ => format!("runs {} of {of}", list.join(", ")),
    }
}

/// What membw verified of the program's placement: only what it sampled.
fn verified(runs: &[RunResult]) -> String {
    let seen = runs
        .iter()
        .all(|run| run.program().is_none_or(|p| p.threads_seen > 0));
    let pinned = runs.iter().all(|run| {
        run.warnings
            .iter()
            .all(|w| !w.contains("outside the placement"))
    });
    let sampled = runs.iter().all(|run| run.pages_sampled > 0);
    let held = runs.iter().all(|run| run.pages_held);
    let programs: Vec<&crate::results::measurement::ProgramRun> =
        runs.iter().filter_map(|run| run.program()).collect();
    let max = |f: fn(&crate::results::measurement::ProgramRun) -> usize| {
        programs.iter().map(|p| f(p)).max().unwrap_or(0)
    };
    let (unpinned, moved, changes) = (
        max(|p| p.threads_unpinned),
        max(|p| p.threads_moved),
        programs.iter().map(|p| p.cpu_changes).sum::<usize>(),
    );
    let threads = match (seen, pinned) {
        (false, _) => "threads not seen (the program ended before the first sample)".into(),
        (true, false) => "threads LEFT their CPUs (see the warnings)".into(),
        // Pinned: each thread's own mask is one CPU, and it was seen there.
        (true, true) if unpinned == 0 && moved == 0 => {
            "threads pinned, each stayed on its CPU".into()
        }
        (true, true) if moved == 0 => format!(
            "threads NOT pinned ({} could run on any CPU of the placement); none was seen to move",
            crate::units::plural(unpinned, "thread")
        ),
        (true, true) => format!(
            "threads NOT pinned: {} of them moved between CPUs ({} seen)",
            crate::units::plural(moved, "thread"),
            crate::units::plural(changes, "CPU change")
        ),
    };
    let pages = match (sampled, held) {
        (false, _) => "pages not sampled (the program ended within 0.1 s)",
        (true, true) => "pages as the policy asks",
        (true, false) => "pages NOT as the policy asks (see the warnings)",
    };
    format!("{threads} · {pages}")
}

/// What watching the program cost: membw's own CPU time over the CPU time
/// the program's CPUs had while it ran.
fn watch_line(runs: &[RunResult], cpus: usize) -> String {
    let (watch, wall) = runs
        .iter()
        .filter_map(|run| Some((run.program()?.watch_cpu_s, run.total_s)))
        .fold((0.0, 0.0), |(w, t), (rw, rt)| (w + rw, t + rt));
    let share = if wall > 0.0 {
        100.0 * watch / (wall * cpus.max(1) as f64)
    } else {
        0.0
    };
    format!(
        "\nWatching:  membw used {:.1} ms of CPU in {:.2} s ({share:.3} % of the program's CPUs)",
        watch * 1e3,
        wall
    )
}

#[cfg(test)]
mod tests {
    use super::which_runs;

    #[test]
    fn a_finding_names_the_runs_it_was_made_in() {
        assert_eq!(which_runs(&[1], 1), "the run");
        assert_eq!(which_runs(&[2], 3), "run 2 of 3");
        assert_eq!(which_runs(&[1, 3], 3), "runs 1, 3 of 3");
        assert_eq!(which_runs(&[1, 2, 3], 3), "every run of 3");
    }
}
