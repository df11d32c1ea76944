//! Every conclusion a study prints follows from its evidence: generated
//! points (random rates, runs and trust) against checks that read the
//! printed words and numbers back, never the code that wrote them.

use super::tests::{STEADY, point_with, run};
use super::*;
use proptest::prelude::*;

/// The trusted triad rates of a point: its runs not beside other work.
fn trusted_rates(r: &Record) -> Vec<f64> {
    (r.runs.iter())
        .filter(|run| run.interference.as_ref().is_none_or(|i| !i.busy))
        .filter_map(|run| run.best_gb_s.get(&KernelId::Triad).copied())
        .collect()
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

/// The numbers after `after` in `text`, up to the first that is not one.
fn numbers_after(text: &str, after: &str) -> Vec<f64> {
    let Some((_, rest)) = text.split_once(after) else {
        return Vec::new();
    };
    rest.split(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+'))
        .filter(|w| !w.is_empty())
        .map_while(|w| w.parse::<f64>().ok())
        .collect()
}

/// Whether `lines`, a study's conclusion for triad, says what the records
/// show: the best has the highest trusted mean of the trusted points and
/// prints it, its counts are the runs used, and "resolved" or "not
/// resolved" agrees with the interval printed beside it.
pub(super) fn check(records: &[Record], lines: &[String]) -> Result<(), String> {
    let text = lines.join("\n");
    let trusted: Vec<(&Record, Vec<f64>)> = (records.iter())
        .map(|r| (r, trusted_rates(r)))
        .filter(|(_, t)| !t.is_empty())
        .collect();
    if trusted.is_empty() {
        return match text.is_empty() {
            true => Ok(()),
            false => Err(format!("a best without a trusted run: {text}")),
        };
    }
    let top = trusted
        .iter()
        .map(|(_, t)| mean(t))
        .fold(f64::MIN, f64::max);
    let shown = numbers_after(&text, "is\n  ")
        .first()
        .copied()
        .or_else(|| numbers_after(&text, ": ").first().copied())
        .ok_or(format!("no mean printed: {text}"))?;
    if (shown - top).abs() > 0.006 {
        return Err(format!(
            "best printed {shown}, highest trusted mean {top}: {text}"
        ));
    }
    // "(k of n runs trusted)": the best point's own counts.
    if let Some(counts) = text.split_once(" runs trusted)").map(|(a, _)| a) {
        let k_of_n = numbers_after(counts.rsplit_once('(').map_or("", |(_, c)| c), "");
        let best = (trusted.iter())
            .find(|(_, t)| (mean(t) - top).abs() < 1e-9)
            .map(|(r, t)| (t.len(), r.runs.len()));
        let printed = (k_of_n.first().copied(), text.contains(" of "));
        if let (Some((k, n)), (Some(first), true)) = (best, printed)
            && (first as usize != k || !counts.ends_with(&format!("{k} of {n}")))
        {
            return Err(format!("counts printed '{counts}', used {k} of {n}"));
        }
    }
    // The runner-up against the best: "+x % (95 % CI lo to hi %)".
    let resolved = text.contains("resolved: the best is ahead of it");
    let unresolved = text.contains("not resolved");
    if resolved && unresolved {
        return Err(format!("both resolved and not: {text}"));
    }
    if let Some([_, lo, hi]) = (numbers_after(&text, "GB/s, ").get(..1))
        .and_then(|_| {
            let ci = numbers_after(&text, "% CI ");
            let change = numbers_after(&text, "GB/s, ");
            Some([*change.last()?, *ci.first()?, *ci.get(1)?])
        })
        .as_ref()
    {
        // The runner-up over the best: ahead means its whole interval is
        // below 0 (to the printed tenth); within the noise, it reaches 0.
        if resolved && *hi > 0.05 {
            return Err(format!("resolved, but the interval reaches {hi} %: {text}"));
        }
        if unresolved && *hi < -0.05 && !text.contains("one trusted run each") {
            return Err(format!(
                "not resolved, but the interval ends at {hi} %: {text}"
            ));
        }
        if lo > hi {
            return Err(format!("interval {lo} to {hi}: {text}"));
        }
    }
    Ok(())
}

/// Runs at these triad rates, each beside other work where `busy`.
fn point(threads: usize, runs: &[(f64, bool)]) -> Record {
    let runs = (runs.iter())
        .map(|&(rate, busy)| run(rate, rate, STEADY, busy.then_some("CPU 1 was busy")))
        .collect();
    point_with(threads, runs)
}

fn conclusion(records: &[Record]) -> Vec<String> {
    StudyConclusion::find(records, KernelId::Triad).map_or(Vec::new(), |c| c.lines())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    #[test]
    fn a_studys_conclusion_follows_from_its_runs(
        points in prop::collection::vec(
            prop::collection::vec((5.0f64..60.0, prop::bool::weighted(0.2)), 1..6),
            1..6,
        )
    ) {
        let records: Vec<Record> = (points.iter().enumerate())
            .map(|(i, runs)| point(i + 1, runs))
            .collect();
        let lines = conclusion(&records);
        prop_assert!(check(&records, &lines).is_ok(), "{:?}", check(&records, &lines));
    }
}

#[test]
fn a_planted_contradiction_is_caught() {
    let records = vec![
        point(1, &[(50.0, false), (50.2, false), (49.9, false)]),
        point(2, &[(40.0, false), (40.1, false), (39.8, false)]),
    ];
    let lines = conclusion(&records);
    assert!(check(&records, &lines).is_ok(), "{lines:?}");
    // The same words with a mean that is not the best's.
    let wrong_mean: Vec<String> = lines.iter().map(|l| l.replace("50.03", "40.0")).collect();
    assert!(check(&records, &wrong_mean).is_err(), "{wrong_mean:?}");
    // "resolved" beside an interval that reaches the best.
    let crossing: Vec<String> = (lines.iter())
        .map(|l| match l.split_once("% CI ") {
            Some((head, _)) => format!("{head}% CI -30.0 to +2.0 %)"),
            None => l.clone(),
        })
        .collect();
    assert!(check(&records, &crossing).is_err(), "{crossing:?}");
    // An untrusted point called best.
    let busy = vec![point(1, &[(90.0, true)]), point(2, &[(40.0, false)])];
    let mut planted = conclusion(&busy);
    planted[0] = planted[0].replace("40.00", "90.00");
    assert!(check(&busy, &planted).is_err(), "{planted:?}");
}
