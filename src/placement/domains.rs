//! The placement domains of one set of allowed CPUs, built once per
//! resolution and shared by every grammar: the allowed cores in order, and
//! the sockets, dies, NUMA nodes and last-level-cache domains as lists of
//! those cores. OMP_PLACES, likwid-pin and the named strategies only index
//! into these lists (as likwid's `affinity.c` builds its domains once and
//! `cpustring.c` indexes them).

use crate::topology::Topology;
use crate::topology::cpulist::IdSet;

/// One physical core as placement sees it: its allowed hardware threads and
/// where it sits.
#[derive(Debug, Clone)]
pub struct Core {
    /// Allowed hardware threads, lowest first.
    pub cpus: Vec<usize>,
    pub package: usize,
    pub die: usize,
    pub node: usize,
    /// Index into [`Domains::llcs`], when known.
    pub llc: Option<usize>,
}

/// The kinds of domain, as likwid-pin names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `N`: every allowed CPU.
    Node,
    /// `S`: a socket (package).
    Socket,
    /// `D`: a die.
    Die,
    /// `M`: a NUMA memory domain.
    Memory,
    /// `C`: a last-level cache domain.
    Cache,
}

impl Kind {
    pub fn from_letter(c: char) -> Option<Kind> {
        Some(match c {
            'N' => Kind::Node,
            'S' => Kind::Socket,
            'D' => Kind::Die,
            'M' => Kind::Memory,
            'C' => Kind::Cache,
            _ => return None,
        })
    }

    /// The letter likwid-pin writes it with.
    pub fn letter(self) -> char {
        match self {
            Kind::Node => 'N',
            Kind::Socket => 'S',
            Kind::Die => 'D',
            Kind::Memory => 'M',
            Kind::Cache => 'C',
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Kind::Node => "node",
            Kind::Socket => "socket",
            Kind::Die => "die",
            Kind::Memory => "memory domain",
            Kind::Cache => "cache domain",
        }
    }
}

/// The allowed cores and the domains over them. A domain keeps its place in
/// the machine's numbering even when none of its CPUs is allowed (then it
/// is empty), so `S1` means the second socket on any cpuset.
#[derive(Debug, Clone)]
pub struct Domains {
    pub allowed: IdSet,
    /// Allowed cores, ordered by first CPU.
    pub cores: Vec<Core>,
    /// Per socket, per die, per NUMA node, per LLC: indices into `cores`.
    sockets: Vec<Vec<usize>>,
    dies: Vec<Vec<usize>>,
    nodes: Vec<Vec<usize>>,
    llcs: Vec<Vec<usize>>,
}

impl Domains {
    pub fn new(topo: &Topology, allowed: &IdSet) -> Domains {
        let llc_sets = topo.llc_domains();
        let cores: Vec<Core> = topo
            .cores()
            .into_iter()
            .filter_map(|siblings| {
                let cpus: Vec<usize> = siblings
                    .ids()
                    .iter()
                    .copied()
                    .filter(|&c| allowed.contains(c))
                    .collect();
                let first = topo.cpu(*cpus.first()?)?;
                Some(Core {
                    package: first.package,
                    die: first.die,
                    node: first.node,
                    llc: llc_sets.iter().position(|l| l.contains(first.id)),
                    cpus,
                })
            })
            .collect();
        let members = |keys: &[usize], key: &dyn Fn(&Core) -> Option<usize>| -> Vec<Vec<usize>> {
            keys.iter()
                .map(|&k| {
                    (0..cores.len())
                        .filter(|&i| key(&cores[i]) == Some(k))
                        .collect()
                })
                .collect()
        };
        let mut die_keys: Vec<(usize, usize)> =
            topo.cpus.iter().map(|c| (c.package, c.die)).collect();
        die_keys.sort_unstable();
        die_keys.dedup();
        let dies = die_keys
            .iter()
            .map(|&d| {
                (0..cores.len())
                    .filter(|&i| (cores[i].package, cores[i].die) == d)
                    .collect()
            })
            .collect();
        let node_ids: Vec<usize> = topo.nodes.iter().map(|n| n.id).collect();
        let llc_ids: Vec<usize> = (0..llc_sets.len()).collect();
        Domains {
            allowed: allowed.clone(),
            sockets: members(&topo.packages(), &|c| Some(c.package)),
            dies,
            nodes: members(&node_ids, &|c| Some(c.node)),
            llcs: members(&llc_ids, &|c| c.llc),
            cores,
        }
    }

    /// Every domain of one kind, each as indices into [`Domains::cores`].
    pub fn of_kind(&self, kind: Kind) -> Vec<Vec<usize>> {
        match kind {
            Kind::Node => vec![(0..self.cores.len()).collect()],
            Kind::Socket => self.sockets.clone(),
            Kind::Die => self.dies.clone(),
            Kind::Memory => self.nodes.clone(),
            Kind::Cache => self.llcs.clone(),
        }
    }

    /// A domain's CPUs, all hardware threads of each core together.
    pub fn cpus_of(&self, domain: &[usize]) -> Vec<usize> {
        let mut cpus: Vec<usize> = domain
            .iter()
            .flat_map(|&i| self.cores[i].cpus.iter().copied())
            .collect();
        cpus.sort_unstable();
        cpus
    }

    /// The CPUs of some cores in tiers: the first hardware thread of each
    /// core (in the given order), then the second of each, and so on;
    /// without `smt`, the first tier only. This is likwid's logical order.
    pub fn tiers(&self, cores: &[usize], smt: bool) -> Vec<usize> {
        let depth = if smt {
            cores
                .iter()
                .map(|&i| self.cores[i].cpus.len())
                .max()
                .unwrap_or(0)
        } else {
            1
        };
        (0..depth)
            .flat_map(|t| {
                cores
                    .iter()
                    .filter_map(move |&i| self.cores[i].cpus.get(t).copied())
            })
            .collect()
    }

    /// The cores that hold any CPU of `set`, restricted to those CPUs.
    pub fn cores_within(&self, set: &IdSet) -> Vec<Vec<usize>> {
        self.cores
            .iter()
            .map(|c| {
                c.cpus
                    .iter()
                    .copied()
                    .filter(|&cpu| set.contains(cpu))
                    .collect::<Vec<usize>>()
            })
            .filter(|cpus| !cpus.is_empty())
            .collect()
    }

    /// Cores dealt across sockets, then NUMA nodes, then L3 domains: the
    /// first N of this order are as far apart as the machine allows.
    pub fn spread_order(&self) -> Vec<usize> {
        let all: Vec<usize> = (0..self.cores.len()).collect();
        let c = &self.cores;
        let per_socket: Vec<Vec<usize>> = group_by(&all, |&i| c[i].package)
            .iter()
            .map(|socket| {
                let nodes: Vec<Vec<usize>> = group_by(socket, |&i| c[i].node)
                    .iter()
                    .map(|node| interleave(&group_by(node, |&i| c[i].llc)))
                    .collect();
                interleave(&nodes)
            })
            .collect();
        interleave(&per_socket)
    }

    /// The smallest number of allowed cores in any non-empty domain of a kind.
    pub fn fewest_cores(&self, kind: Kind) -> usize {
        self.of_kind(kind)
            .iter()
            .map(Vec::len)
            .filter(|&n| n > 0)
            .min()
            .unwrap_or(0)
    }
}

/// Round-robin over groups: the first of each group, then the second, ...
pub fn interleave<T: Clone>(groups: &[Vec<T>]) -> Vec<T> {
    let longest = groups.iter().map(Vec::len).max().unwrap_or(0);
    (0..longest)
        .flat_map(|i| groups.iter().filter_map(move |g| g.get(i).cloned()))
        .collect()
}

/// Groups items by a key, keeping first-seen order of keys and items.
pub fn group_by<T: Clone, K: PartialEq>(items: &[T], key: impl Fn(&T) -> K) -> Vec<Vec<T>> {
    let mut keys: Vec<K> = Vec::new();
    let mut groups: Vec<Vec<T>> = Vec::new();
    for item in items {
        let k = key(item);
        match keys.iter().position(|x| *x == k) {
            Some(i) => groups[i].push(item.clone()),
            None => {
                keys.push(k);
                groups.push(vec![item.clone()]);
            }
        }
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interleave_deals_round_robin() {
        assert_eq!(
            interleave(&[vec![1, 2, 3], vec![10], vec![20, 21]]),
            vec![1, 10, 20, 2, 21, 3]
        );
        assert_eq!(
            group_by(&[1, 2, 3, 4, 5], |x| x % 2),
            vec![vec![1, 3, 5], vec![2, 4]]
        );
    }

    #[test]
    fn domains_cover_every_allowed_cpu_once() {
        // 2 sockets, 4 NUMA nodes each (NPS4), SMT.
        let (_dir, topo) = crate::topology::fixture::machine("epyc-7742-2s-nps4");
        let d = Domains::new(&topo, &topo.allowed_cpus);
        assert_eq!(d.of_kind(Kind::Socket).len(), 2);
        assert_eq!(d.of_kind(Kind::Memory).len(), 8);
        let all = d.cpus_of(&d.of_kind(Kind::Node)[0]);
        assert_eq!(all, topo.allowed_cpus.ids().to_vec());
        for kind in [Kind::Socket, Kind::Memory, Kind::Die] {
            let mut cpus: Vec<usize> = d.of_kind(kind).iter().flat_map(|x| d.cpus_of(x)).collect();
            cpus.sort_unstable();
            assert_eq!(cpus, all, "{kind:?}");
        }
        assert_eq!(d.spread_order().len(), d.cores.len());
    }
}
