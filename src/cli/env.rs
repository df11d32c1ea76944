//! The OpenMP, GNU and Intel environment variables people set for STREAM,
//! read when no placement flag is given, with their runtimes' meanings:
//! `OMP_NUM_THREADS`, `OMP_PLACES`, `OMP_PROC_BIND`, `GOMP_CPU_AFFINITY`,
//! `KMP_AFFINITY`. A flag wins over the variable it replaces, and the header
//! says so; a value membw cannot parse is an error naming the variable.

use crate::error::{Error, Input, Result};
use crate::placement::{Spec, Written, omp, omp::Bind, runtime};

/// The variables membw reads, in the order it prefers them for placement:
/// the OpenMP standard's first, then GNU's, then Intel's.
pub(crate) const PLACEMENT_VARS: [&str; 4] = [
    "OMP_PLACES", "OMP_PROC_BIND", "GOMP_CPU_AFFINITY", "KMP_AFFINITY",
];

/// Other OpenMP runtimes' placement variables, which membw does not read:
/// named as not used (never ignored silently), with what says the same.
pub(crate) const OTHER_RUNTIMES_VARS: [(&str, &str); 4] = [
    ("O64_OMP_AFFINITY", "Open64's"),
    ("O64_OMP_AFFINITY_MAP", "Open64's"),
    ("MP_BIND", "NVIDIA HPC SDK's (PGI)"),
    ("MP_BLIST", "NVIDIA HPC SDK's (PGI)"),
];

/// What likwid-pin leaves in its child's environment (its CPU list): the
/// OpenMP variables beside it are then likwid-pin's, which the header says.
const WRAPPER_VAR: &str = "LIKWID_PIN";

/// A snapshot of the variables (tests pass their own).
#[derive(Debug, Clone, Default)]
pub(crate) struct Vars(pub Vec<(&'static str, String)>);

impl Vars {
    pub(crate) fn from_process() -> Vars {
        let names = ["OMP_NUM_THREADS", WRAPPER_VAR]
            .into_iter()
            .chain(PLACEMENT_VARS)
            .chain(OTHER_RUNTIMES_VARS.map(|(name, _)| name));
        Vars(
            names
                .filter_map(|n| Some((n, std::env::var(n).ok()?)))
                .filter(|(_, v)| !v.trim().is_empty())
                .collect(),
        )
    }

    /// The first variable holding a typographic quote or dash, as an error.
    pub(crate) fn typographic(&self) -> Option<Error> {
        self.0.iter().find_map(|(name, value)| {
            super::values::typographic_error(&format!("environment {name}"), value)
                .map(|e| Error::Usage(format!("{e} (--ignore-env ignores the environment)")))
        })
    }

    pub(crate) fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }

    fn show(&self, name: &str) -> Option<String> {
        self.get(name).map(|v| format!("{name}={v}"))
    }
}

/// What the environment contributes to a placement request.
#[derive(Debug, Clone, Default)]
pub(crate) struct FromEnv {
    pub spec: Option<Spec>,
    pub threads: Option<usize>,
    /// `OMP_PLACES=cores OMP_PROC_BIND=spread`: the variables used.
    pub used: Vec<String>,
    /// Variables set but not used, with why.
    pub unused: Vec<String>,
    /// Which input came from which variable, to name it in errors.
    pub inputs: Vec<(Input, &'static str)>,
}

fn env_error(var: &str, value: &str, message: impl std::fmt::Display) -> Error {
    Error::Usage(format!(
        "environment {var} '{value}': {message} (--ignore-env ignores the environment)"
    ))
}

/// `8` or `8,4` (nested levels: the outermost counts).
fn threads(value: &str) -> Result<usize> {
    value
        .split(',')
        .next()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&n| n >= 1)
        .ok_or_else(|| env_error("OMP_NUM_THREADS", value, "not a positive thread count"))
}

/// `spread`, `close,spread`, `true`, `false`, `primary`, `master`: the
/// outermost level; `None` for `false`.
fn bind(value: &str) -> Result<Option<Bind>> {
    let first = value.split(',').next().unwrap_or("").trim();
    match first.to_ascii_lowercase().as_str() {
        "false" => Ok(None),
        other => Bind::parse(other).map(Some).ok_or_else(|| {
            env_error(
                "OMP_PROC_BIND",
                value,
                "expected true, false, close, spread or primary",
            )
        }),
    }
}

/// For sweep and tune, whose axes decide placement: a note naming the
/// variables they do not use, so none is ignored silently.
pub(crate) fn note_unused(vars: &Vars, command: &str) {
    let set: Vec<String> = (vars.0.iter())
        .filter(|(n, _)| *n != WRAPPER_VAR)
        .map(|(n, v)| format!("{n}={v}"))
        .collect();
    if !set.is_empty() {
        crate::say!(
            "membw: note: {command} places threads by its own axes; not used: {}",
            set.join(" ")
        );
    }
}

/// Reads the placement the environment asks for. `placement_flag` and
/// `threads_flag` say whether flags already decide those.
pub(crate) fn placement(vars: &Vars, placement_flag: bool, threads_flag: bool) -> Result<FromEnv> {
    let mut out = FromEnv::default();
    if let Some(v) = vars.get("OMP_NUM_THREADS") {
        if threads_flag {
            out.unused
                .push(format!("OMP_NUM_THREADS={v} (--threads wins)"));
        } else {
            out.threads = Some(threads(v)?);
            out.used.push(format!("OMP_NUM_THREADS={v}"));
            out.inputs.push((Input::Threads, "OMP_NUM_THREADS"));
        }
    }
    for (name, runtime) in OTHER_RUNTIMES_VARS {
        if let Some(shown) = vars.show(name) {
            out.unused.push(format!(
                "{shown} ({runtime} runtime: membw does not read it; OMP_PLACES or --cpus say the same)"
            ));
        }
    }
    let set: Vec<&str> = PLACEMENT_VARS
        .into_iter()
        .filter(|n| vars.get(n).is_some())
        .collect();
    if placement_flag {
        out.unused.extend(
            set.iter()
                .filter_map(|n| vars.show(n))
                .map(|s| format!("{s} (the placement flag wins)")),
        );
        return Ok(out);
    }
    let places = vars.get("OMP_PLACES");
    let binding = vars.get("OMP_PROC_BIND").map(bind).transpose()?;
    let mut chosen: Vec<&str> = Vec::new();
    match (places, binding) {
        // Binding off: threads left unbound, as an OpenMP runtime leaves
        // them (the places mean nothing then).
        (_, Some(None)) => {
            out.spec = Some(Spec::Unpinned);
            out.inputs.push((Input::NoPin, "OMP_PROC_BIND"));
            if places.is_some() {
                out.unused
                    .push("OMP_PLACES (unused while binding is off)".into());
            }
            chosen.extend(["OMP_PLACES", "OMP_PROC_BIND"]);
        }
        (Some(p), b) => {
            let places = Written::parse(p, |t| omp::parse(t).map_err(|e| e.to_string()))
                .map_err(|m| env_error("OMP_PLACES", p, m))?;
            out.spec = Some(Spec::Places {
                places,
                bind: b.flatten().unwrap_or(Bind::Close),
            });
            out.inputs.push((Input::Places, "OMP_PLACES"));
            chosen.extend(["OMP_PLACES", "OMP_PROC_BIND"]);
        }
        (None, Some(Some(b))) => {
            // Binding without places: one place per core.
            let cores = Written {
                text: "cores".into(),
                value: omp::Parsed::Abstract {
                    name: "cores".into(),
                    count: None,
                },
            };
            out.spec = Some(Spec::Places {
                places: cores,
                bind: b,
            });
            out.inputs.push((Input::Places, "OMP_PROC_BIND"));
            chosen.push("OMP_PROC_BIND");
        }
        (None, None) => runtime_affinity(vars, &mut out, &mut chosen)?,
    }
    for name in &set {
        let shown = vars.show(name).unwrap_or_default();
        if chosen.contains(name) {
            if out.spec.is_some() {
                out.used.push(shown);
            }
        } else if *name == "KMP_AFFINITY" && vars.get(WRAPPER_VAR).is_some() {
            out.unused
                .push(format!("{shown} (likwid-pin's, for Intel's runtime)"));
        } else {
            out.unused.push(format!(
                "{shown} (the OpenMP standard's variables, then GOMP's, then KMP's: the first set wins)"
            ));
        }
    }
    if vars.get(WRAPPER_VAR).is_some() {
        name_the_wrapper(&mut out.used);
    }
    Ok(out)
}

/// Under likwid-pin, the variables it sets for the OpenMP runtime it
/// wraps, said to be its own.
fn name_the_wrapper(used: &mut [String]) {
    for used in used {
        if used.starts_with("KMP_AFFINITY=") {
            used.push_str(" (set by likwid-pin, which pins the threads itself)");
        } else if used.starts_with("OMP_NUM_THREADS=") {
            used.push_str(" (likwid-pin sets it to its CPU count where you did not)");
        }
    }
}

/// GOMP_CPU_AFFINITY, else KMP_AFFINITY, when no OpenMP standard variable
/// is set: the one chosen goes into `chosen`.
fn runtime_affinity(vars: &Vars, out: &mut FromEnv, chosen: &mut Vec<&str>) -> Result<()> {
    if let Some(g) = vars.get("GOMP_CPU_AFFINITY") {
        let listed = Written::parse(g, runtime::parse_gomp)
            .map_err(|m| env_error("GOMP_CPU_AFFINITY", g, m))?;
        out.spec = Some(Spec::Gomp(listed));
        out.inputs.push((Input::Gomp, "GOMP_CPU_AFFINITY"));
        chosen.push("GOMP_CPU_AFFINITY");
    } else if let Some(k) = vars.get("KMP_AFFINITY") {
        let kmp =
            Written::parse(k, runtime::parse_kmp).map_err(|m| env_error("KMP_AFFINITY", k, m))?;
        match kmp.value {
            // Intel's runtime binds nothing: nor does membw.
            runtime::Kmp::None => {
                out.spec = Some(Spec::Unpinned);
                out.inputs.push((Input::NoPin, "KMP_AFFINITY"));
            }
            _ => {
                out.spec = Some(Spec::Kmp(kmp));
                out.inputs.push((Input::Kmp, "KMP_AFFINITY"));
            }
        }
        chosen.push("KMP_AFFINITY");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&'static str, &str)]) -> Vars {
        Vars(pairs.iter().map(|(n, v)| (*n, v.to_string())).collect())
    }

    #[test]
    fn openmp_variables_become_places() {
        let e = placement(
            &vars(&[
                ("OMP_PLACES", "cores"),
                ("OMP_PROC_BIND", "spread"),
                ("OMP_NUM_THREADS", "8,2"),
            ]),
            false,
            false,
        )
        .unwrap();
        assert_eq!(e.spec, Some(Spec::places("cores", Bind::Spread).unwrap()));
        assert_eq!(e.threads, Some(8));
        assert_eq!(
            e.used,
            [
                "OMP_NUM_THREADS=8,2", "OMP_PLACES=cores", "OMP_PROC_BIND=spread"
            ]
        );
        // Binding alone: one place per core.
        let e = placement(&vars(&[("OMP_PROC_BIND", "close")]), false, false).unwrap();
        assert!(
            matches!(e.spec, Some(Spec::Places { ref places, bind: Bind::Close }) if places.text == "cores")
        );
    }

    #[test]
    fn flags_win_and_the_rest_is_named() {
        let e = placement(
            &vars(&[("OMP_NUM_THREADS", "1"), ("KMP_AFFINITY", "compact")]),
            true,
            true,
        )
        .unwrap();
        assert!(e.spec.is_none() && e.threads.is_none() && e.used.is_empty());
        assert_eq!(e.unused.len(), 2, "{:?}", e.unused);
        // OMP_PLACES is preferred over GOMP_CPU_AFFINITY, which is named.
        let e = placement(
            &vars(&[("OMP_PLACES", "{0}"), ("GOMP_CPU_AFFINITY", "1")]),
            false,
            false,
        )
        .unwrap();
        assert!(matches!(e.spec, Some(Spec::Places { .. })));
        assert!(
            e.unused[0].starts_with("GOMP_CPU_AFFINITY=1"),
            "{:?}",
            e.unused
        );
    }

    #[test]
    fn other_runtimes_variables_are_named_as_not_read() {
        let e = placement(
            &vars(&[("O64_OMP_AFFINITY", "TRUE"), ("MP_BLIST", "0,2")]),
            false,
            false,
        )
        .unwrap();
        assert!(e.spec.is_none() && e.used.is_empty());
        assert_eq!(e.unused.len(), 2, "{:?}", e.unused);
        assert!(
            e.unused[0]
                .starts_with("O64_OMP_AFFINITY=TRUE (Open64's runtime: membw does not read it")
                && e.unused[1].starts_with("MP_BLIST=0,2 (NVIDIA HPC SDK's (PGI) runtime"),
            "{:?}",
            e.unused
        );
        // Beside a variable that is read, and under a placement flag, too.
        for flag in [false, true] {
            let e = placement(
                &vars(&[("OMP_PLACES", "{0}"), ("O64_OMP_AFFINITY_MAP", "0")]),
                flag,
                false,
            )
            .unwrap();
            assert!(
                e.unused
                    .iter()
                    .any(|u| u.starts_with("O64_OMP_AFFINITY_MAP=0 (Open64's")),
                "{:?}",
                e.unused
            );
        }
    }

    #[test]
    fn runtime_variables_and_bad_values() {
        let e = placement(&vars(&[("GOMP_CPU_AFFINITY", "0 2 4-10:2")]), false, false).unwrap();
        assert_eq!(e.spec, Some(Spec::gomp("0 2 4-10:2").unwrap()));
        // Intel's runtime binding nothing: neither does membw.
        let e = placement(&vars(&[("KMP_AFFINITY", "none")]), false, false).unwrap();
        assert_eq!(e.spec, Some(Spec::Unpinned));
        let e = placement(&vars(&[("OMP_PROC_BIND", "false")]), false, false).unwrap();
        assert_eq!(e.spec, Some(Spec::Unpinned));
        for (name, value) in [
            ("OMP_NUM_THREADS", "0"),
            ("OMP_NUM_THREADS", "lots"),
            ("OMP_PROC_BIND", "sideways"),
            ("GOMP_CPU_AFFINITY", "0 x"),
            ("OMP_PLACES", "{0}:4:"),
            ("KMP_AFFINITY", "compactt"),
        ] {
            let err = placement(&vars(&[(name, value)]), false, false)
                .unwrap_err()
                .to_string();
            assert!(
                err.contains(&format!("environment {name} '{value}'")),
                "{err}"
            );
        }
    }
}
