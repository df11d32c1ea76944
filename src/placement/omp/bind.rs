//! OpenMP's binding (`OMP_PROC_BIND`): which place each thread goes to,
//! and the one CPU of its place membw pins it to.
//!
//! `close` puts thread i on place i (T ≤ P) or packs T/P consecutive
//! threads per place; `spread` splits the places into T equal partitions
//! and takes the first place of each; `primary` (`master`) puts every
//! thread on place 0. Within a place membw pins each thread to one CPU,
//! distinct cores first; a place given more threads than it has cores is
//! shared, as OpenMP binds each of them to the whole place.

use super::{Parsed, places};
use crate::placement::{Domains, Fault, MAX_THREADS_PER_CPU};
use crate::topology::Topology;
use crate::topology::cpulist::IdSet;
use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Bind {
    Close,
    Spread,
    Primary,
}

impl Bind {
    pub fn parse(text: &str) -> Option<Bind> {
        match text.trim().to_ascii_lowercase().as_str() {
            "close" | "true" => Some(Bind::Close),
            "spread" => Some(Bind::Spread),
            "primary" | "master" => Some(Bind::Primary),
            _ => None,
        }
    }
}

impl fmt::Display for Bind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Bind::Close => "close",
            Bind::Spread => "spread",
            Bind::Primary => "primary",
        })
    }
}

/// OpenMP's thread-to-place assignment: the place index of each thread.
pub fn assign(bind: Bind, threads: usize, places: usize) -> Vec<usize> {
    (0..threads)
        .map(|i| match bind {
            Bind::Primary => 0,
            // T > P: T/P consecutive threads per place, for both policies.
            _ if threads > places => i * places / threads,
            Bind::Close => i,
            Bind::Spread => {
                // Partitions of ⌈P/T⌉ places first, then ⌊P/T⌋; first place of each.
                let (size, rest) = (places / threads, places % threads);
                i * size + i.min(rest)
            }
        })
        .collect()
}

/// Resolves places + binding to one CPU per thread. Threads default to one
/// per place. Threads sharing a place take distinct cores of it first; two
/// threads on one core need `smt`. A place given more threads than it has
/// cores (`primary` on `cores`, or `close` with more threads than places)
/// is shared, as OpenMP binds each of those threads to the whole place:
/// they take its CPUs in turn, siblings included, and then share CPUs.
pub fn resolve(
    topo: &Topology,
    d: &Domains,
    parsed: &Parsed,
    bind: Bind,
    threads: Option<usize>,
    smt: bool,
) -> Result<Vec<usize>, Fault> {
    let places = places(topo, d, parsed)?;
    let n = threads.unwrap_or(places.len());
    let slots = assign(bind, n, places.len());
    // Per place, its CPUs with the first hardware thread of each core
    // first, and how many cores it has.
    let ordered: Vec<(Vec<usize>, usize)> = places
        .iter()
        .map(|place| {
            let cores = d.cores_within(&place.iter().copied().collect());
            let firsts = cores.iter().map(|c| c[0]);
            let rest = cores.iter().flat_map(|c| c[1..].iter().copied());
            (firsts.chain(rest).collect(), cores.len())
        })
        .collect();
    let mut given = vec![0usize; places.len()];
    for &slot in &slots {
        given[slot] += 1;
    }
    let mut used_in_place = vec![0usize; places.len()];
    let mut busy_cores: Vec<&IdSet> = Vec::new();
    let mut cpus = Vec::with_capacity(n);
    for (thread, &slot) in slots.iter().enumerate() {
        let (place_cpus, cores) = &ordered[slot];
        let k = used_in_place[slot];
        used_in_place[slot] += 1;
        if given[slot] > *cores && !place_cpus.is_empty() {
            let most = place_cpus.len() * MAX_THREADS_PER_CPU;
            if given[slot] > most {
                return Err(format!(
                    "{n} threads put {} on place {slot} {{{}}}: {} threads a CPU at most",
                    given[slot],
                    crate::topology::cpulist::format_ranges(&places[slot]),
                    MAX_THREADS_PER_CPU
                )
                .into());
            }
            cpus.push(place_cpus[k % place_cpus.len()]);
            continue;
        }
        let Some(&cpu) = place_cpus.get(k) else {
            return Err(format!(
                "{n} threads put {} on place {} {{{}}} which has no CPU",
                k + 1,
                slot,
                crate::topology::cpulist::format_ranges(&places[slot]),
            )
            .into());
        };
        let Some(siblings) = topo.cpu(cpu).map(|c| &c.siblings) else {
            return Err(format!("CPU {cpu} does not exist or is offline").into());
        };
        if !smt && busy_cores.contains(&siblings) {
            return Err(Fault {
                message: format!(
                    "thread {thread} would share a core with another thread (CPU {cpu})"
                ),
                smt_would_help: true,
            });
        }
        if cpus.contains(&cpu) {
            return Err(format!("CPU {cpu} is in two places and would run two threads").into());
        }
        busy_cores.push(siblings);
        cpus.push(cpu);
    }
    Ok(cpus)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binding_matches_openmp() {
        // 8 places, 4 threads: spread takes every second place, close the first four.
        assert_eq!(assign(Bind::Spread, 4, 8), vec![0, 2, 4, 6]);
        assert_eq!(assign(Bind::Close, 4, 8), vec![0, 1, 2, 3]);
        assert_eq!(assign(Bind::Primary, 3, 8), vec![0, 0, 0]);
        // 8 threads on 4 places: two consecutive threads per place.
        assert_eq!(assign(Bind::Close, 8, 4), vec![0, 0, 1, 1, 2, 2, 3, 3]);
        assert_eq!(assign(Bind::Spread, 8, 4), vec![0, 0, 1, 1, 2, 2, 3, 3]);
        // Uneven: partitions of 3, 3, 2.
        assert_eq!(assign(Bind::Spread, 3, 8), vec![0, 3, 6]);
    }
}
