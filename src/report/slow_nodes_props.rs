//! Every slow-node decision follows from the numbers printed beside it:
//! generated nodes (random repetitions, a random outlier share) against a
//! check that reads the words back. The headline's slow nodes, which the
//! exit code of `report --outlier` is made of, are those the decisions
//! call slow, and no other.

use crate::kernels::KernelId;
use crate::results::ranks::{RankRun, Ranks};
use proptest::prelude::*;

/// One rank on `host` that moved 1 GB a repetition at these rates (the
/// first repetition, STREAM's uncounted one, at 1 GB/s).
fn node(rank: usize, host: &str, rates: &[f64]) -> RankRun {
    let mut times = vec![1.0];
    times.extend(rates.iter().map(|r| 1.0 / r));
    RankRun {
        rank,
        local_rank: None,
        host: host.into(),
        cpus: vec![0],
        affinity: Vec::new(),
        bound_by: None,
        device: None,
        validated: true,
        validation_error: None,
        pages_held: true,
        elements: 1 << 20,
        best_gb_s: [(KernelId::Triad, rates.iter().copied().fold(0.0, f64::max))].into(),
        times_s: [(KernelId::Triad, times.clone())].into(),
        synced_s: [(KernelId::Triad, times)].into(),
        bytes: [(KernelId::Triad, 1e9)].into(),
        node_peak_gb_s: None,
        warnings: vec![],
        untrusted: None,
    }
}

/// The numbers in `line` after `after`.
fn numbers(line: &str, after: &str) -> Vec<f64> {
    let rest = line.split_once(after).map_or("", |(_, r)| r);
    rest.split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .filter_map(|w| w.parse().ok())
        .collect()
}

/// Whether the printed decisions agree with their own numbers and with
/// the headline: `repetitions` is each host's count of counted ones.
pub(super) fn check(text: &str, repetitions: &[(String, usize)]) -> Result<(), String> {
    let mut called_slow = Vec::new();
    // A decision is two lines: the host's, and the line it is held to.
    let joined = text
        .replace(",\n    ", ", ")
        .replace("repetitions\n    ", "repetitions ");
    for line in joined.lines().map(str::trim) {
        let Some((host, words)) = line.split_once(": ") else {
            continue;
        };
        let Some(&(_, reps)) = repetitions.iter().find(|(h, _)| h == host) else {
            continue;
        };
        if words.contains("too few repetitions") {
            called_slow.push(host.to_string());
            continue;
        }
        let [n, mean, half, ..] = numbers(words, "mean of ")[..] else {
            continue;
        };
        let line_at = *numbers(words, "GB/s ± ")
            .get(1)
            .ok_or(format!("no line: {line}"))?;
        if n as usize != reps {
            return Err(format!("{host}: {n} repetitions printed, {reps} measured"));
        }
        // Printed to the hundredth: a tolerance of one.
        let (low, high) = (mean - half, mean + half);
        let ok = match words {
            w if w.starts_with("slow, resolved") => high < line_at + 0.011,
            w if w.starts_with("slow, not resolved") => {
                low <= line_at + 0.011 && high >= line_at - 0.011
            }
            w if w.starts_with("not slow") => low >= line_at - 0.011,
            _ => return Err(format!("unknown decision: {line}")),
        };
        if !ok {
            return Err(format!(
                "{host}: {low:.2} to {high:.2} against {line_at}: {line}"
            ));
        }
        if words.starts_with("slow") {
            called_slow.push(host.to_string());
        }
    }
    let headline = (text.lines())
        .find_map(|l| l.strip_prefix("Slow nodes: "))
        .ok_or("no headline")?;
    let named: Vec<String> = match headline.starts_with("none") {
        true => Vec::new(),
        false => (headline.split(" (").next().unwrap_or(""))
            .split(", ")
            .map(String::from)
            .collect(),
    };
    called_slow.sort();
    let mut named_sorted = named.clone();
    named_sorted.sort();
    match named_sorted == called_slow {
        true => Ok(()),
        false => Err(format!(
            "headline names {named:?}, decisions {called_slow:?}"
        )),
    }
}

fn rendered(nodes: &[Vec<f64>], outlier: f64) -> (Ranks, String) {
    let ranks = (nodes.iter().enumerate())
        .map(|(i, rates)| node(i, &format!("n{i}"), rates))
        .collect();
    let r = Ranks::summarize("files", ranks, outlier).expect("a kernel ran");
    let text = super::ranks::render(&r);
    (r, text)
}

fn counts(nodes: &[Vec<f64>]) -> Vec<(String, usize)> {
    (nodes.iter().enumerate())
        .map(|(i, rates)| (format!("n{i}"), rates.len()))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    #[test]
    fn every_slow_node_decision_follows_from_its_numbers(
        nodes in prop::collection::vec(prop::collection::vec(5.0f64..15.0, 1..6), 2..7),
        outlier in 0.8f64..0.99,
    ) {
        let (r, text) = rendered(&nodes, outlier);
        let verdict = check(&text, &counts(&nodes));
        prop_assert!(verdict.is_ok(), "{:?}\n{}", verdict, text);
        // The exit code's comparison is the headline's.
        prop_assert_eq!(r.slow_hosts().is_empty(), text.contains("Slow nodes: none"));
    }
}

#[test]
fn a_planted_contradiction_is_caught() {
    let nodes = vec![
        vec![11.0, 11.0, 11.1, 10.9],
        vec![11.0, 11.1, 10.9, 11.0],
        vec![5.0, 5.1, 4.9, 5.0],
    ];
    let (_, text) = rendered(&nodes, 0.9);
    assert!(check(&text, &counts(&nodes)).is_ok(), "{text}");
    assert!(text.contains("n2: slow, resolved"), "{text}");
    // Resolved words over an interval that reaches the line.
    let planted = text.replacen("GB/s ± 0.", "GB/s ± 9.", 1);
    assert!(check(&planted, &counts(&nodes)).is_err(), "{planted}");
    // A headline that names no slow node while a decision calls one slow.
    let planted = text.replacen("Slow nodes: n2", "Slow nodes: none", 1);
    assert!(check(&planted, &counts(&nodes)).is_err(), "{planted}");
    // Another count of repetitions than measured.
    let planted = text.replacen("mean of 4", "mean of 9", 1);
    assert!(check(&planted, &counts(&nodes)).is_err(), "{planted}");
}
