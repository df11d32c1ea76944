//! A device set's GPU↔GPU pairs in a health check: each ordered pair's copy
//! held against its baseline or, without one, against the node's other
//! pairs (the one pair whose NVLink is down among identical ones), and a
//! pair the driver only stages through host memory where the others have a
//! direct path. Pure functions of the cells, as the rules are.

use crate::results::peers::PeerCell;
use crate::results::targets::Device;

/// Devices whose NVLink links are not all up. Among siblings (the set's
/// devices of the same model), a device with fewer links up than the
/// most any of them has; alone, a device with some links up and some
/// down (a PCIe card without bridges has none up, and is not at fault).
pub fn links_down(devices: &[Device]) -> Vec<String> {
    let mut out = Vec::new();
    for d in devices {
        let Some(f) = &d.facts.fabric else { continue };
        let siblings = (devices.iter())
            .filter(|o| o.id != d.id && o.facts.model == d.facts.model)
            .filter_map(|o| o.facts.fabric.as_ref().map(|f| f.up()))
            .max();
        match siblings {
            Some(most) if f.up() < most.min(f.links) => out.push(format!(
                "{}: {} of its {} {} links are up where its siblings have {most}: a link down (cable, bridge, NVSwitch port)",
                d.id.name,
                f.up(),
                f.links,
                f.name
            )),
            None => out.extend(f.degraded().map(|why| format!("{}: {why}", d.id.name))),
            _ => {}
        }
    }
    out
}

/// The least tolerance of a pair against its siblings: identical pairs
/// still differ by their place on the switches and by the host's noise in
/// a short probe, and a link that is down costs far more (an NVLink pair
/// staged through PCIe and host memory keeps a tenth or less).
pub const SIBLING_TOLERANCE: f64 = 0.5;
/// The least tolerance of a pair against its own baseline.
pub const BASELINE_TOLERANCE: f64 = 0.25;

/// What is wrong with the pairs, one line each: hardware findings.
pub fn against_siblings(cells: &[PeerCell], tolerance: f64) -> Vec<String> {
    let tolerance = tolerance.max(SIBLING_TOLERANCE);
    let mut out = staged_among_direct(cells);
    for c in cells {
        let Some(rate) = c.best_gb_s else { continue };
        let others: Vec<f64> = (cells.iter())
            .filter(|o| !(o.from == c.from && o.to == c.to && o.method == c.method))
            .filter(|o| o.method == c.method)
            .filter_map(|o| o.best_gb_s)
            .collect();
        let Some(median) = crate::results::median(&others) else {
            continue;
        };
        if short(c, rate, (1.0 - tolerance) * median) {
            out.push(format!(
                "pair {} → {} {} {rate:.1} GB/s is {:.0} % of the other pairs' {median:.1} GB/s (tolerance {:.0} %): a peer link down or degraded (NVLink, a PCIe switch)",
                c.from,
                c.to,
                c.method,
                100.0 * rate / median,
                100.0 * tolerance
            ));
        }
    }
    out
}

/// Each pair against the same pair and method of the baseline.
pub fn against_baseline(cells: &[PeerCell], baseline: &[PeerCell], tolerance: f64) -> Vec<String> {
    let tolerance = tolerance.max(BASELINE_TOLERANCE);
    let mut out = Vec::new();
    for b in baseline {
        let here =
            (cells.iter()).find(|c| c.from == b.from && c.to == b.to && c.method == b.method);
        let Some(c) = here else {
            out.push(format!(
                "pair {} → {} {} is in the baseline and was not measured here",
                b.from, b.to, b.method
            ));
            continue;
        };
        if b.path == "direct" && c.path != "direct" {
            out.push(format!(
                "pair {} → {}: no direct path (copies staged through host memory), direct in the baseline: peer access lost (NVLink down, P2P disabled)",
                c.from, c.to
            ));
            continue;
        }
        if let Some(was) = &b.fabric {
            let now = c.fabric.as_ref().map_or(0, |p| p.links);
            if now < was.links {
                out.push(format!(
                    "pair {} → {} crosses {now} {} links, {} in the baseline: a link down (cable, bridge, NVSwitch port)",
                    c.from, c.to, was.name, was.links
                ));
            }
        }
        if let (Some(rate), Some(was)) = (c.best_gb_s, b.best_gb_s)
            && short(c, rate, (1.0 - tolerance) * was)
        {
            out.push(format!(
                "pair {} → {} {} {rate:.1} GB/s is {:.0} % of its baseline {was:.1} GB/s (tolerance {:.0} %): a peer link down or degraded",
                c.from,
                c.to,
                c.method,
                100.0 * rate / was,
                100.0 * tolerance
            ));
        }
    }
    out
}

/// Whether a pair's rate is short of `line` beyond its noise: its best
/// repetition below it, and the whole 95 % interval of its mean too where
/// there is one (a pair within its noise is not resolved, not short).
fn short(c: &PeerCell, best: f64, line: f64) -> bool {
    let interval = c.rates.as_ref().and_then(crate::results::Stats::interval);
    best < line && interval.is_none_or(|i| i.high < line)
}

/// Pairs without a direct path on a node where others have one.
fn staged_among_direct(cells: &[PeerCell]) -> Vec<String> {
    let direct = cells.iter().filter(|c| c.path == "direct").count();
    if direct == 0 {
        return Vec::new();
    }
    let mut pairs: Vec<(u32, u32)> = (cells.iter())
        .filter(|c| c.path != "direct")
        .map(|c| (c.from.min(c.to), c.from.max(c.to)))
        .collect();
    pairs.sort_unstable();
    pairs.dedup();
    (pairs.into_iter())
        .map(|(a, b)| {
            format!(
                "pair {a} ↔ {b}: no direct path (copies staged through host memory) where the node's other pairs have one: NVLink down or P2P disabled"
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(from: u32, to: u32, gb_s: f64, path: &str) -> PeerCell {
        PeerCell {
            from,
            to,
            method: "ce-write".into(),
            path: path.into(),
            bytes: 1 << 20,
            best_gb_s: Some(gb_s),
            rates: None,
            wrong: None,
            skipped: None,
            fabric: None,
        }
    }

    fn node(down: (u32, u32)) -> Vec<PeerCell> {
        let mut cells = Vec::new();
        for a in 0..8 {
            for b in (0..8).filter(|&b| b != a) {
                let is_down = (a, b) == down || (b, a) == down;
                let (rate, path) = if is_down {
                    (20.0, "staged")
                } else {
                    (380.0, "direct")
                };
                cells.push(cell(a, b, rate, path));
            }
        }
        cells
    }

    #[test]
    fn siblings_name_the_one_pair_that_is_down() {
        let found = against_siblings(&node((2, 6)), 0.1);
        assert_eq!(found.len(), 3, "{found:?}");
        assert!(
            found[0].starts_with("pair 2 ↔ 6: no direct path"),
            "{found:?}"
        );
        assert!(found[1].starts_with(
            "pair 2 → 6 ce-write 20.0 GB/s is 5 % of the other pairs' 380.0 GB/s (tolerance 50 %)"
        ));
        assert!(found[2].starts_with("pair 6 → 2 ce-write"));
        assert!(against_siblings(&node((9, 9)), 0.1).is_empty());
    }

    #[test]
    fn a_pair_short_within_its_noise_is_not_named() {
        let mut cells = node((9, 9));
        let noisy = [200.0, 330.0, 400.0];
        cells[0].best_gb_s = Some(330.0);
        cells[0].rates = crate::results::Stats::of(&noisy);
        assert!(against_siblings(&cells, 0.1).is_empty());
        let steady = [150.0, 151.0, 152.0];
        cells[0].best_gb_s = Some(152.0);
        cells[0].rates = crate::results::Stats::of(&steady);
        assert_eq!(against_siblings(&cells, 0.1).len(), 1);
    }

    #[test]
    fn a_baseline_names_a_lost_path_and_a_slow_pair() {
        let baseline = node((9, 9));
        let mut here = node((9, 9));
        here[0].best_gb_s = Some(200.0);
        here[1].path = "staged".into();
        let found = against_baseline(&here, &baseline, 0.1);
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(
            found[0].starts_with("pair 0 → 1 ce-write 200.0 GB/s is 53 % of its baseline 380.0")
        );
        assert!(
            found[1].starts_with("pair 0 → 2: no direct path"),
            "{found:?}"
        );
        assert_eq!(against_baseline(&here[2..], &baseline[..1], 0.1).len(), 1);
    }

    fn gpu(index: u32, up: u32) -> Device {
        let mut d = Device {
            id: crate::results::targets::DeviceId {
                backend: "cuda".into(),
                index,
                name: format!("cuda{index}"),
            },
            facts: Default::default(),
        };
        d.facts.model = Some("H100".into());
        d.facts.fabric = Some(crate::results::targets::Fabric {
            name: "NVLink".into(),
            version: None,
            links: 18,
            up_to: vec!["switch".into(); up as usize],
            link_gb_s: Some(25.0),
        });
        d
    }

    #[test]
    fn a_device_with_links_down_is_named_against_its_siblings_or_its_count() {
        let node: Vec<Device> = (0..8)
            .map(|i| gpu(i, if i == 5 { 16 } else { 18 }))
            .collect();
        let found = links_down(&node);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0]
                .starts_with("cuda5: 16 of its 18 NVLink links are up where its siblings have 18")
        );
        // Cards without bridges: none up on every one, nothing wrong.
        assert!(links_down(&[gpu(0, 0), gpu(1, 0)]).is_empty());
        assert!(links_down(&[gpu(0, 0)]).is_empty());
        // Alone, against the count it has.
        assert!(links_down(&[gpu(0, 17)])[0].contains("17 of its 18 NVLink links are up (1 down)"));
    }

    #[test]
    fn a_pair_with_fewer_links_than_its_baseline_is_named() {
        let path = |links| crate::results::targets::FabricPath {
            name: "NVLink".into(),
            links,
            switched: true,
            peak_gb_s: None,
        };
        let mut baseline = node((9, 9));
        let mut here = node((9, 9));
        baseline[0].fabric = Some(path(18));
        here[0].fabric = Some(path(16));
        baseline[1].fabric = Some(path(18));
        here[1].fabric = Some(path(18));
        let found = against_baseline(&here, &baseline, 0.1);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].starts_with("pair 0 → 1 crosses 16 NVLink links, 18 in the baseline"));
    }
}
