//! A placement as a point records it: which grammar chose the CPUs and
//! what it was given, typed, so that the same request made by `run -o`,
//! `sweep`, `tune` or `exec` is the same point, whatever flag, variable or
//! label it came from. It prints as the short label tables show (`spread`,
//! `per-l3=1`, `places cores spread`, `pin N:0-3`, `cpus 0-3`, each with
//! ` on cpunode N` and ` +smt` where they apply) and reads back from it.

use super::omp::Bind;
use super::{Request, Spec, Strategy};
use crate::topology::cpulist::{IdSet, format_ranges, parse_list};
use std::fmt;

/// The grammar that chose the CPUs, and what it was given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scheme {
    /// membw's default: one thread per core, spread (the CPUs of
    /// `--strategy spread`, which is the same point).
    Default,
    Strategy(Strategy),
    /// An explicit CPU list, in thread order.
    Cpus(Vec<usize>),
    /// OpenMP places as written, with the binding.
    Places {
        places: String,
        bind: Bind,
    },
    /// A likwid-pin expression as written.
    Pin(String),
    /// A GOMP_CPU_AFFINITY list, in thread order.
    Gomp(Vec<usize>),
    /// A KMP_AFFINITY value as written.
    Kmp(String),
    /// No binding: the scheduler placed the threads.
    Unpinned,
    /// A description recorded before placements were typed (`run -o` wrote
    /// the flags it was given); it pairs with nothing but itself.
    Recorded(String),
}

/// A point's placement: the scheme, the NUMA nodes its CPUs were limited
/// to (`--cpunode`), and whether SMT siblings were allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlacementId {
    pub scheme: Scheme,
    pub cpu_nodes: Option<IdSet>,
    pub smt: bool,
}

impl PlacementId {
    /// The identity of a request, whatever spelling it came from.
    pub fn of(request: &Request) -> PlacementId {
        let scheme = match &request.spec {
            Spec::Default | Spec::Strategy(Strategy::Spread) => Scheme::Default,
            Spec::Strategy(s) => Scheme::Strategy(*s),
            Spec::Cpus(list) => Scheme::Cpus(list.value.clone()),
            Spec::Places { places, bind } => Scheme::Places {
                places: places.text.trim().to_string(),
                bind: *bind,
            },
            Spec::Likwid(expr) => Scheme::Pin(expr.text.trim().to_string()),
            Spec::Gomp(list) => Scheme::Gomp(list.value.clone()),
            Spec::Kmp(kmp) => Scheme::Kmp(kmp.text.trim().to_string()),
            Spec::Unpinned => Scheme::Unpinned,
        };
        PlacementId {
            scheme,
            cpu_nodes: request.cpu_nodes.clone(),
            smt: request.smt,
        }
    }

    /// Reads a label back; text no scheme reads is kept as recorded.
    pub fn parse(text: &str) -> PlacementId {
        let mut rest = text.trim();
        let smt = match rest.strip_suffix(" +smt") {
            Some(r) => {
                rest = r;
                true
            }
            None => false,
        };
        let mut cpu_nodes = None;
        if let Some((base, nodes)) = rest.rsplit_once(" on cpunode ")
            && let Ok(ids) = parse_list(nodes)
        {
            cpu_nodes = Some(IdSet::new(ids));
            rest = base;
        }
        let scheme = match legacy_numa_cell(rest) {
            Some((node, scheme)) => {
                cpu_nodes = Some(IdSet::new(vec![node]));
                Some(scheme)
            }
            None => scheme(rest),
        };
        match scheme {
            Some(scheme) => PlacementId {
                scheme,
                cpu_nodes,
                smt,
            },
            None => PlacementId {
                scheme: Scheme::Recorded(text.trim().to_string()),
                cpu_nodes: None,
                smt: false,
            },
        }
    }
}

/// The scheme a label names, if any does.
fn scheme(text: &str) -> Option<Scheme> {
    // `run -o`'s description of the default, before placements were typed.
    if text == "spread" || text == "default: one thread per core, spread" {
        return Some(Scheme::Default);
    }
    if text == "unpinned" {
        return Some(Scheme::Unpinned);
    }
    if let Some(list) = text.strip_prefix("cpus ") {
        return parse_list(list).ok().map(Scheme::Cpus);
    }
    if let Some(list) = text.strip_prefix("gomp-affinity ") {
        return parse_list(list).ok().map(Scheme::Gomp);
    }
    if let Some(spec) = text.strip_prefix("kmp-affinity ") {
        return Some(Scheme::Kmp(spec.to_string()));
    }
    if let Some(expr) = text.strip_prefix("pin ") {
        return Some(Scheme::Pin(expr.to_string()));
    }
    if let Some(rest) = text.strip_prefix("places ") {
        let (places, bind) = rest.rsplit_once(' ')?;
        return Some(Scheme::Places {
            places: places.to_string(),
            bind: Bind::parse(bind)?,
        });
    }
    Strategy::parse(text).ok().map(Scheme::Strategy)
}

/// The NUMA matrix's cells as labelled before placements were typed:
/// `cpu node 1, 1 thread` (compact) and `cpu node 1, all cores` (spread).
fn legacy_numa_cell(text: &str) -> Option<(usize, Scheme)> {
    let (node, cell) = text.strip_prefix("cpu node ")?.split_once(", ")?;
    let scheme = match cell {
        "1 thread" => Scheme::Strategy(Strategy::Compact),
        "all cores" => Scheme::Default,
        _ => return None,
    };
    Some((node.parse().ok()?, scheme))
}

impl fmt::Display for Scheme {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scheme::Default => f.write_str("spread"),
            Scheme::Strategy(s) => write!(f, "{s}"),
            Scheme::Cpus(cpus) => write!(f, "cpus {}", format_ranges(cpus)),
            Scheme::Places { places, bind } => write!(f, "places {places} {bind}"),
            Scheme::Pin(expr) => write!(f, "pin {expr}"),
            Scheme::Gomp(cpus) => write!(f, "gomp-affinity {}", format_ranges(cpus)),
            Scheme::Kmp(spec) => write!(f, "kmp-affinity {spec}"),
            Scheme::Unpinned => f.write_str("unpinned"),
            Scheme::Recorded(text) => f.write_str(text),
        }
    }
}

impl fmt::Display for PlacementId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.scheme)?;
        if let Some(nodes) = &self.cpu_nodes {
            write!(f, " on cpunode {nodes}")?;
        }
        if self.smt {
            f.write_str(" +smt")?;
        }
        Ok(())
    }
}

impl serde::Serialize for PlacementId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for PlacementId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Ok(PlacementId::parse(&text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(spec: Spec, cpu_nodes: Option<Vec<usize>>, smt: bool) -> Request {
        Request {
            spec,
            threads: None,
            smt,
            cpu_nodes: cpu_nodes.map(IdSet::new),
        }
    }

    #[test]
    fn every_scheme_prints_a_label_that_reads_back() {
        let specs = [
            (Spec::Default, "spread"),
            (Spec::strategy("per-l3=1").unwrap(), "per-l3=1"),
            (Spec::cpus("0,2,4-10:2").unwrap(), "cpus 0,2,4,6,8,10"),
            (
                Spec::places("{0:4}:8:4", Bind::Spread).unwrap(),
                "places {0:4}:8:4 spread",
            ),
            (Spec::likwid("S0:0-3@S1:0-3").unwrap(), "pin S0:0-3@S1:0-3"),
            (Spec::gomp("0 2 4-7").unwrap(), "gomp-affinity 0,2,4-7"),
            (Spec::kmp("scatter").unwrap(), "kmp-affinity scatter"),
        ];
        for (spec, label) in specs {
            let id = PlacementId::of(&request(spec, None, false));
            assert_eq!(id.to_string(), label);
            assert_eq!(PlacementId::parse(label), id, "{label}");
            let limited = PlacementId {
                cpu_nodes: Some(IdSet::new(vec![0, 1])),
                smt: true,
                ..id
            };
            let text = limited.to_string();
            assert!(text.ends_with(" on cpunode 0-1 +smt"), "{text}");
            assert_eq!(PlacementId::parse(&text), limited);
        }
    }

    #[test]
    fn one_request_is_one_identity_whatever_its_spelling() {
        // `--strategy spread` and the default choose the same CPUs.
        let default = PlacementId::of(&request(Spec::Default, None, false));
        let spread = PlacementId::of(&request(Spec::strategy("spread").unwrap(), None, false));
        assert_eq!(default, spread);
        // `run -o` described the default in words before this type.
        assert_eq!(
            PlacementId::parse("default: one thread per core, spread"),
            default
        );
        // The NUMA matrix's old labels are its compact and spread requests.
        let cell = PlacementId::of(&request(
            Spec::strategy("compact").unwrap(),
            Some(vec![1]),
            false,
        ));
        assert_eq!(PlacementId::parse("cpu node 1, 1 thread"), cell);
        assert_eq!(
            PlacementId::parse("cpu node 1, all cores").to_string(),
            "spread on cpunode 1"
        );
        // Other old descriptions are kept, and pair only with themselves.
        let old = PlacementId::parse("--cpus 0-3 --threads 2");
        assert_eq!(
            old.scheme,
            Scheme::Recorded("--cpus 0-3 --threads 2".into())
        );
        assert_eq!(old.to_string(), "--cpus 0-3 --threads 2");
    }
}
