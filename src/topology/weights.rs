//! `--weights`: the system's weighted-interleave weights, changed for one
//! run and put back. They are system-wide (every process interleaving by
//! weight sees them), so membw writes them only when asked, only as root,
//! and restores what it found when the guard drops: at the end of the
//! run, after an error, and after the first SIGINT, SIGTERM or SIGHUP,
//! which end the run after its current repetition.

use super::Topology;
use super::tiers::WEIGHTS_DIR;
use crate::error::{Error, Input, Result};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Parses `0=3,2=1` against the topology: nodes that exist and have
/// memory, weights 1-255, each node once.
pub fn parse(text: &str, topo: &Topology) -> Result<BTreeMap<usize, u8>> {
    let err = |m: String| Error::input(Input::Weights, text, m);
    let mut weights = BTreeMap::new();
    for entry in text.split(',').map(str::trim) {
        let (node, weight) = entry
            .split_once('=')
            .ok_or_else(|| err(format!("'{entry}' is not NODE=WEIGHT (e.g. 0=3)")))?;
        let node: usize = node
            .trim()
            .parse()
            .map_err(|_| err(format!("'{node}' is not a node number")))?;
        let weight: u8 = weight
            .trim()
            .parse()
            .ok()
            .filter(|&w| w >= 1)
            .ok_or_else(|| err(format!("weight '{weight}' of node {node} is not 1-255")))?;
        // Weights are system-wide: any node with memory, in our cpuset or not.
        if topo.existing_node(node).map_err(err)?.memoryless() {
            return Err(err(format!("node {node} has no memory")));
        }
        if weights.insert(node, weight).is_some() {
            return Err(err(format!("node {node} is given twice")));
        }
    }
    Ok(weights)
}

/// Weights written for a run; dropping it writes back what was there.
#[derive(Debug)]
pub struct WeightsGuard {
    dir: PathBuf,
    /// Each changed file and its text before.
    previous: Vec<(PathBuf, String)>,
}

impl WeightsGuard {
    /// Writes `weights` under the topology's root. Refuses, changing
    /// nothing, on a kernel without weighted interleave or when not root.
    pub fn apply(topo: &Topology, weights: &BTreeMap<usize, u8>, root: bool) -> Result<Self> {
        let dir = topo.root.join(WEIGHTS_DIR);
        let text = weights
            .iter()
            .map(|(n, w)| format!("{n}={w}"))
            .collect::<Vec<_>>()
            .join(",");
        let err = |m: String| Error::input(Input::Weights, &text, m);
        if topo.memory.weighted_interleave.is_none() {
            return Err(err(format!(
                "weighted interleave needs Linux 6.9 or later (this kernel is {}; no /{WEIGHTS_DIR})",
                crate::sys::kernel_release()
            )));
        }
        if !root {
            return Err(err(format!(
                "changing the system's weights in /{WEIGHTS_DIR} needs root (membw puts them back when it ends)"
            )));
        }
        // The `auto` switch (6.16+) turns off when a weight is written;
        // remember it first so it is restored last.
        let mut files: Vec<PathBuf> = ["auto", "__auto_type"]
            .iter()
            .map(|f| dir.join(f))
            .filter(|p| p.exists())
            .collect();
        files.extend(weights.keys().map(|n| dir.join(format!("node{n}"))));
        let previous = files
            .into_iter()
            .map(|p| {
                let before = std::fs::read_to_string(&p)
                    .map_err(|e| Error::Runtime(format!("{}: {e}", p.display())))?;
                Ok((p, before.trim().to_string()))
            })
            .collect::<Result<Vec<_>>>()?;
        let guard = WeightsGuard { dir, previous };
        for (n, w) in weights {
            let path = guard.dir.join(format!("node{n}"));
            std::fs::write(&path, format!("{w}\n"))
                .map_err(|e| Error::Runtime(format!("writing {}: {e}", path.display())))?;
        }
        Ok(guard)
    }
}

impl Drop for WeightsGuard {
    fn drop(&mut self) {
        // Weights first, the auto switch last (writing `true` recomputes
        // the weights from firmware, as before).
        for (path, before) in self.previous.iter().rev() {
            match std::fs::write(path, format!("{before}\n")) {
                Ok(()) => {}
                // Without firmware bandwidth (no HMAT) the kernel starts in
                // auto mode but refuses to be switched back to it.
                Err(e) if e.raw_os_error() == Some(libc::ENODEV) => crate::say!(
                    "membw: warning: the kernel refused to switch {} back to '{before}' (no firmware bandwidth to derive weights from); the weights are as before, now marked as set by hand",
                    path.display()
                ),
                Err(e) => crate::say!(
                    "membw: warning: could not restore {} to '{before}': {e}",
                    path.display()
                ),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_parse_against_the_nodes() {
        let (_dir, cxl) = crate::topology::fixture::machine("xeon-6-cxl-1s");
        assert_eq!(parse("0=3, 1=1", &cxl).unwrap(), [(0, 3), (1, 1)].into());
        let e = |s: &str| parse(s, &cxl).unwrap_err().to_string();
        assert!(e("0=0").contains("not 1-255"));
        assert!(e("0=300").contains("not 1-255"));
        assert!(e("4=1").contains("node 4 does not exist"));
        assert!(e("0=1,0=2").contains("twice"));
        assert!(e("0").contains("NODE=WEIGHT"));
    }

    #[test]
    fn weights_are_written_and_put_back_on_a_fixture_tree() {
        let (dir, cxl) = crate::topology::fixture::machine("xeon-6-cxl-1s");
        let file = dir.path().join(WEIGHTS_DIR).join("node1");
        let auto = dir.path().join(WEIGHTS_DIR).join("auto");
        std::fs::write(&auto, "true\n").unwrap();
        let weights = [(1, 7)].into();
        assert!(
            WeightsGuard::apply(&cxl, &weights, false)
                .unwrap_err()
                .to_string()
                .contains("needs root")
        );
        {
            let _guard = WeightsGuard::apply(&cxl, &weights, true).unwrap();
            assert_eq!(std::fs::read_to_string(&file).unwrap(), "7\n");
        }
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "1\n");
        assert_eq!(std::fs::read_to_string(&auto).unwrap(), "true\n");
        // A kernel before 6.9 (the two-socket fixture has no weights).
        let (_d, old) = crate::topology::fixture::machine("xeon-e5-2680v3-2s");
        let e = WeightsGuard::apply(&old, &[(0, 1)].into(), true).unwrap_err();
        assert!(e.to_string().contains("Linux 6.9"), "{e}");
    }
}
