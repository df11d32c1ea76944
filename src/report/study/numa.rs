//! What a NUMA matrix of a sweep says, in words.

use crate::kernels::KernelId;
use crate::results::Record;
use std::collections::BTreeMap;

/// What a NUMA matrix says: the cost of remote memory (mean off-diagonal
/// against mean diagonal) and how symmetric it is (largest difference between
/// cpu i → mem j and cpu j → mem i), for each mode measured.
pub fn numa_findings(records: &[Record], kernel: KernelId) -> Vec<String> {
    let mut lines = Vec::new();
    for all_cores in [false, true] {
        let cells: BTreeMap<(usize, usize), f64> = records
            .iter()
            .filter_map(|r| {
                let n = r.point.numa.filter(|n| n.all_cores == all_cores)?;
                Some(((n.cpu_node, n.mem_node), r.stats.get(&kernel)?.mean))
            })
            .collect();
        if cells.is_empty() {
            continue;
        }
        let mode = if all_cores {
            "all cores of a node"
        } else {
            "one thread"
        };
        let mean = |v: Vec<f64>| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
        let local = mean(
            cells
                .iter()
                .filter(|(k, _)| k.0 == k.1)
                .map(|(_, v)| *v)
                .collect(),
        );
        let remote = mean(
            cells
                .iter()
                .filter(|(k, _)| k.0 != k.1)
                .map(|(_, v)| *v)
                .collect(),
        );
        match (local, remote) {
            (Some(l), Some(r)) => lines.push(format!(
                "NUMA matrix ({mode}): local {l:.2} GB/s, remote {r:.2} GB/s on average: remote memory costs {:.0} %",
                100.0 * (1.0 - r / l)
            )),
            (Some(l), None) => lines.push(format!("NUMA matrix ({mode}): local {l:.2} GB/s; no remote pair measured (one node)")),
            _ => {}
        }
        let worst = cells
            .iter()
            .filter(|(k, _)| k.0 < k.1)
            .filter_map(|(&(i, j), &a)| {
                let b = *cells.get(&(j, i))?;
                Some(((i, j), a, b, (a - b).abs() / ((a + b) / 2.0)))
            })
            .max_by(|x, y| x.3.total_cmp(&y.3));
        if let Some(((i, j), a, b, asym)) = worst {
            lines.push(format!(
                "NUMA matrix ({mode}): symmetric within {:.1} % (largest: cpu {i}→mem {j} {a:.2} vs cpu {j}→mem {i} {b:.2} GB/s)",
                100.0 * asym
            ));
        }
    }
    lines
}
