//! A fleet's history: the check verdicts and run documents of many nodes
//! over many dates, reduced to one rate per node and date, then each node
//! held against its own past and against the fleet (median and MAD, which
//! one broken node cannot drag, unlike mean and standard deviation).

use crate::kernels::KernelId;
use crate::results::typed::FleetDocument;
use std::collections::BTreeMap;

/// One node's rate at one time.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub host: String,
    /// Seconds since the epoch.
    pub time: f64,
    pub gb_s: f64,
}

/// The samples in one document: a check verdict (its node scope, when it
/// could judge the node) or a `membw run` document (the whole run); none
/// when it has no rate of `kernel` or a time that cannot be read.
pub fn samples(doc: &FleetDocument, kernel: KernelId) -> Vec<Sample> {
    let (host, timestamp, gb_s) = match doc {
        // A check that could not judge measured something else.
        FleetDocument::Check(c) if !c.judged => return Vec::new(),
        FleetDocument::Check(c) => (
            &c.host.hostname,
            &c.timestamp,
            c.rates
                .iter()
                .find(|r| r.scope == "node" && r.kernel == kernel)
                .map(|r| r.gb_s),
        ),
        FleetDocument::Run(r) => (
            &r.host.hostname,
            &r.timestamp,
            r.measurement
                .results
                .iter()
                .find(|k| k.kernel == kernel)
                .map(|k| k.best_gb_s()),
        ),
    };
    let time = humantime::parse_rfc3339(timestamp)
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_secs_f64());
    match (time, gb_s) {
        (Some(time), Some(gb_s)) => vec![Sample {
            host: host.clone(),
            time,
            gb_s,
        }],
        _ => Vec::new(),
    }
}

/// One node, judged.
#[derive(Debug, Clone, PartialEq)]
pub struct Trend {
    pub host: String,
    /// Its samples, oldest first: (time, GB/s).
    pub samples: Vec<(f64, f64)>,
    pub latest: f64,
    /// The median of its earlier samples.
    pub own_median: Option<f64>,
    /// Latest over its own median.
    pub vs_own: Option<f64>,
    /// 0.6745 (latest − fleet median) / MAD: the modified z-score.
    pub robust_z: Option<f64>,
    pub slower_than_history: bool,
    pub far_from_fleet: bool,
}

/// The fleet: the median and MAD of the nodes' latest rates, each node's trend.
#[derive(Debug, Clone, PartialEq)]
pub struct Fleet {
    pub median: f64,
    /// The fleet median's 95 % interval (order statistics of the nodes'
    /// latest rates); `None` under 6 nodes.
    pub median_ci: Option<crate::results::estimate::Interval>,
    pub mad: f64,
    pub trends: Vec<Trend>,
}

/// A modified z-score below this is an outlier (Iglewicz and Hoaglin's 3.5).
pub const OUTLIER_Z: f64 = -3.5;

/// Each node against its own earlier samples (`tolerance` below their
/// median is slower than its history) and against the fleet (a modified
/// z-score under [`OUTLIER_Z`]; where most nodes agree exactly, MAD is 0
/// and `tolerance` below the median decides).
pub fn fleet(samples: &[Sample], tolerance: f64) -> Fleet {
    let mut by_host: BTreeMap<&str, Vec<(f64, f64)>> = BTreeMap::new();
    for s in samples {
        by_host.entry(&s.host).or_default().push((s.time, s.gb_s));
    }
    let latest: Vec<f64> = by_host
        .values_mut()
        .filter_map(|v| {
            v.sort_by(|a, b| a.0.total_cmp(&b.0));
            v.last().map(|l| l.1)
        })
        .collect();
    let median = crate::results::median(&latest).unwrap_or(0.0);
    let mut sorted = latest.clone();
    sorted.sort_by(f64::total_cmp);
    let median_ci =
        crate::results::estimate::Interval::of_median(&sorted, crate::results::estimate::LEVEL);
    let deviations: Vec<f64> = latest.iter().map(|x| (x - median).abs()).collect();
    let mad = crate::results::median(&deviations).unwrap_or(0.0);
    let trends = by_host
        .into_iter()
        .filter_map(|(host, samples)| {
            let &(_, last) = samples.last()?;
            let earlier: Vec<f64> = samples[..samples.len() - 1].iter().map(|s| s.1).collect();
            let own_median = crate::results::median(&earlier).filter(|&m| m > 0.0);
            let vs_own = own_median.map(|m| last / m);
            let robust_z = (mad > 0.0).then(|| 0.6745 * (last - median) / mad);
            let far_from_fleet = match robust_z {
                Some(z) => z < OUTLIER_Z,
                None => last < median * (1.0 - tolerance),
            };
            Some(Trend {
                host: host.to_string(),
                latest: last,
                own_median,
                vs_own,
                robust_z,
                slower_than_history: vs_own.is_some_and(|r| r < 1.0 - tolerance),
                far_from_fleet,
                samples,
            })
        })
        .collect();
    Fleet {
        median,
        median_ci,
        mad,
        trends,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(host: &str, time: f64, gb_s: f64) -> Sample {
        Sample {
            host: host.into(),
            time,
            gb_s,
        }
    }

    #[test]
    fn a_node_below_its_own_past_and_one_far_from_the_fleet_are_flagged() {
        let mut all = Vec::new();
        for (i, host) in ["n1", "n2", "n3", "n4", "n5", "n6"].iter().enumerate() {
            for day in 0..5 {
                all.push(s(host, day as f64, 100.0 + i as f64));
            }
        }
        // n2 drops by 20 % on the last day; n6 was always slow.
        all.push(s("n2", 10.0, 81.0));
        all.iter_mut()
            .filter(|x| x.host == "n6")
            .for_each(|x| x.gb_s = 60.0);
        let f = fleet(&all, 0.1);
        let flagged = |pick: fn(&Trend) -> bool| {
            f.trends
                .iter()
                .filter(|t| pick(t))
                .map(|t| t.host.as_str())
                .collect::<Vec<_>>()
        };
        assert_eq!(flagged(|t| t.slower_than_history), ["n2"]);
        assert_eq!(flagged(|t| t.far_from_fleet), ["n2", "n6"]);
        let n2 = f.trends.iter().find(|t| t.host == "n2").unwrap();
        assert_eq!((n2.latest, n2.own_median), (81.0, Some(101.0)));
        assert_eq!(n2.samples.len(), 6);
    }

    #[test]
    fn identical_nodes_have_no_spread_and_the_tolerance_decides() {
        let mut all: Vec<Sample> = (0..5).map(|i| s(&format!("n{i}"), 0.0, 50.0)).collect();
        all.push(s("slow", 0.0, 44.0));
        let f = fleet(&all, 0.1);
        assert_eq!(f.mad, 0.0);
        let far: Vec<&str> = f
            .trends
            .iter()
            .filter(|t| t.far_from_fleet)
            .map(|t| t.host.as_str())
            .collect();
        assert_eq!(far, ["slow"]);
        assert!(f.trends.iter().all(|t| t.own_median.is_none()));
    }

    #[test]
    fn samples_come_from_checks_and_runs() {
        use crate::results::typed::{FleetDocument, fleet_documents};
        let one = |text: &str| fleet_documents(text).unwrap().remove(0);
        let check = one(include_str!("../../tests/fixtures/documents/check.json"));
        let at = |s: &[Sample]| {
            s.iter()
                .map(|s| (s.host.clone(), s.gb_s))
                .collect::<Vec<_>>()
        };
        // Its node scope, not the NUMA domains'.
        assert_eq!(
            at(&samples(&check, KernelId::Triad)),
            [("vm".to_string(), 100.0)]
        );
        assert!(samples(&check, KernelId::Scale).is_empty());
        // A check that could not judge the node is a document without a sample.
        let FleetDocument::Check(mut busy) = check else {
            panic!("not a check")
        };
        busy.judged = false;
        assert!(samples(&FleetDocument::Check(busy), KernelId::Triad).is_empty());
        let run = one(include_str!("../../tests/fixtures/documents/run.json"));
        let from_run = samples(&run, KernelId::Triad);
        assert_eq!(from_run.len(), 1);
        assert!(
            from_run[0].gb_s > 1.0 && from_run[0].time > 1.7e9,
            "{from_run:?}"
        );
    }
}
