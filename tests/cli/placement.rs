//! Placement on fixture machines: the examples from the OpenMP and likwid
//! documentation and from users' experiments, table-driven, plus invariants
//! checked on random requests.

use crate::common;

use membw::placement::omp::Bind;
use membw::placement::{Request, Spec, Strategy, resolve};
use membw::topology::Topology;
use membw::topology::cpulist::{IdSet, parse_list};

fn req(spec: Spec, threads: Option<usize>, smt: bool) -> Request {
    Request {
        spec,
        threads,
        smt,
        cpu_nodes: None,
    }
}

fn places(text: &str, bind: Bind, threads: Option<usize>) -> Request {
    req(Spec::places(text, bind).unwrap(), threads, false)
}

fn pin(expr: &str) -> Request {
    req(Spec::likwid(expr).unwrap(), None, false)
}

/// A spec the grammar refuses before any topology is read, rendered as the
/// CLI does.
fn refused(spec: membw::error::Result<Spec>) -> String {
    spec.unwrap_err().render(|i| format!("--{}", i.name()))
}

fn run(machine: &str, r: &Request) -> Result<Vec<usize>, String> {
    // Rendered as the CLI does, naming inputs by their flags.
    resolve(&common::topology(machine), r).map_err(|e| e.render(|i| format!("--{}", i.name())))
}

fn list(text: &str) -> Vec<usize> {
    parse_list(text).unwrap()
}

const AMD_2X64: &str = "epyc-7h12-2s";
const AMD_NPS4: &str = "epyc-7742-2s-nps4";
const INTEL_2X12: &str = "xeon-e5-2680v3-2s";

#[test]
fn openmp_places_examples() {
    let cases: Vec<(&str, Request, &str)> = vec![
        // Every second core of a 2×64-core node.
        (AMD_2X64, places("{0:1}:64:2", Bind::Close, None), "0-126:2"),
        (AMD_2X64, places("{0}:128:1", Bind::Close, None), "0-127"),
        // 8 threads inside one NUMA node: {0:1}:8:2 versus {0:1}:8:1.
        (AMD_NPS4, places("{0:1}:8:2", Bind::Close, None), "0-14:2"),
        (AMD_NPS4, places("{0:1}:8:1", Bind::Close, None), "0-7"),
        // Places of 4 CPUs: one thread per place on its first CPU.
        (AMD_NPS4, places("{0:4}:8:4", Bind::Close, None), "0-28:4"),
        (INTEL_2X12, places("{0,1},{2,3}", Bind::Close, None), "0,2"),
        (
            INTEL_2X12,
            places("{0:12,!5}", Bind::Close, Some(3)),
            "0,1,2",
        ),
        // Abstract names with OMP_PROC_BIND.
        (
            AMD_NPS4,
            places("cores", Bind::Spread, Some(4)),
            "0,32,64,96",
        ),
        (
            AMD_NPS4,
            places("numa_domains", Bind::Close, None),
            "0-112:16",
        ),
        (
            AMD_NPS4,
            places("ll_caches", Bind::Spread, Some(8)),
            "0-112:16",
        ),
        (AMD_NPS4, places("sockets(1)", Bind::Close, Some(3)), "0-2"),
        (
            INTEL_2X12,
            places("sockets", Bind::Close, Some(8)),
            "0-3,12-15",
        ),
        (INTEL_2X12, places("sockets", Bind::Spread, Some(2)), "0,12"),
        (INTEL_2X12, places("threads", Bind::Close, Some(3)), "0-2"),
        (INTEL_2X12, places("cores", Bind::Primary, Some(1)), "0"),
    ];
    for (machine, r, want) in cases {
        let got = run(machine, &r).unwrap_or_else(|e| panic!("{machine} {r:?}: {e}"));
        let mut sorted = got.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, list(want), "{machine} {r:?}");
    }
}

#[test]
fn likwid_pin_examples() {
    let cases: Vec<(&str, &str, &str)> = vec![
        // N:0-23 on 2×12 cores with SMT: logical ids are physical cores first.
        (INTEL_2X12, "N:0-23", "0-23"),
        (INTEL_2X12, "S0:0-7", "0-7"),
        (INTEL_2X12, "S1:0-3", "12-15"),
        (INTEL_2X12, "S0:0-3@S1:0-3", "0-3,12-15"),
        (INTEL_2X12, "S0:12-13", "24-25"),
        (INTEL_2X12, "E:N:8:1:2", "0,2,4,6,8,10,12,14"),
        (INTEL_2X12, "E:S0:4:2:4", "0,1,4,5"),
        (AMD_NPS4, "M1:0-3", "16-19"),
        (AMD_NPS4, "C0:0-3", "0-3"),
        (AMD_NPS4, "C1:4-7", "132-135"),
        (AMD_NPS4, "D0:0-1", "0-1"),
        (INTEL_2X12, "0,2,4", "0,2,4"),
    ];
    for (machine, expr, want) in cases {
        assert_eq!(
            run(machine, &pin(expr)).unwrap(),
            list(want),
            "{machine} {expr}"
        );
    }
    // Scatter round-robins the domains, keeping the order.
    assert_eq!(
        run(AMD_NPS4, &pin("M:scatter")).unwrap()[..9],
        [0, 16, 32, 48, 64, 80, 96, 112, 1]
    );
    assert_eq!(
        run(INTEL_2X12, &pin("S:scatter")).unwrap()[..4],
        [0, 12, 1, 13]
    );
}

#[test]
fn named_strategies() {
    let strat =
        |s: &str, t: Option<usize>, smt: bool| req(Spec::Strategy(s.parse().unwrap()), t, smt);
    let cases: Vec<(&str, Request, &str)> = vec![
        // KMP_AFFINITY=compact vs scatter with 8 threads on two sockets.
        (INTEL_2X12, strat("compact", Some(8), false), "0-7"),
        (INTEL_2X12, strat("spread", Some(8), false), "0-3,12-15"),
        (INTEL_2X12, strat("compact", Some(4), true), "0,1,24,25"),
        (INTEL_2X12, strat("spread", None, false), "0-23"),
        (INTEL_2X12, strat("spread", None, true), "0-47"),
        (
            AMD_NPS4,
            strat("spread", Some(8), false),
            "0,16,32,48,64,80,96,112",
        ),
        // Spread reaches different L3 domains inside a node before reusing one.
        (AMD_NPS4, strat("spread", Some(32), false), "0-124:4"),
        (AMD_NPS4, strat("per-numa=1", None, false), "0-112:16"),
        (
            AMD_NPS4,
            strat("per-numa=2", None, false),
            "0,4,16,20,32,36,48,52,64,68,80,84,96,100,112,116",
        ),
        (AMD_NPS4, strat("per-l3=1", None, false), "0-124:4"),
        (AMD_NPS4, strat("per-socket=2", None, false), "0,64,16,80"),
        (AMD_2X64, strat("stride=2", None, false), "0-126:2"),
        // Fewer threads than K × domains: one per domain first.
        (AMD_2X64, strat("per-l3=2", Some(4), false), "0,4,64,68"),
    ];
    for (machine, r, want) in cases {
        let got = run(machine, &r).unwrap_or_else(|e| panic!("{machine} {r:?}: {e}"));
        let mut want = list(want);
        want.sort_unstable();
        assert_eq!(got, want, "{machine} {r:?}");
    }
    // spread with 8 threads on two sockets: four on each.
    let t = common::topology(AMD_2X64);
    let cpus = resolve(&t, &strat("spread", Some(8), false)).unwrap();
    let on0 = cpus
        .iter()
        .filter(|&&c| t.cpu(c).unwrap().package == 0)
        .count();
    assert_eq!(on0, 4);
}

#[test]
fn cpunode_restricts_like_numactl() {
    let mut r = req(Spec::Strategy("compact".parse().unwrap()), None, false);
    r.cpu_nodes = Some(IdSet::new(vec![1]));
    assert_eq!(run(INTEL_2X12, &r).unwrap(), list("12-23"));
    r.cpu_nodes = Some(IdSet::new(vec![7]));
    assert!(run(INTEL_2X12, &r).unwrap_err().contains("--cpunode '7'"));
}

#[test]
fn smt_is_suggested_only_where_cores_have_it() {
    let r = req(Spec::Strategy("compact".parse().unwrap()), Some(25), false);
    assert!(run("xeon-e5-2680v3-2s", &r).unwrap_err().contains("--smt"));
    let e = run("xeon-e5-2650v3-2s-noht", &r).unwrap_err();
    assert!(!e.contains("--smt"), "{e}");
    // spread is the default placement: past the cores it goes on to the
    // siblings (and says so in its label) instead of asking for --smt.
    let spread = req(Spec::Strategy("spread".parse().unwrap()), Some(25), false);
    let cpus = run("xeon-e5-2680v3-2s", &spread).unwrap();
    assert_eq!(cpus.len(), 25);
    assert_eq!(cpus[..24], list("0-23")[..], "every core before a sibling");
}

#[test]
fn errors_name_the_bad_part() {
    let err = |m: &str, r: Request| run(m, &r).unwrap_err();
    assert!(refused(Spec::places("{0:4}:8:x", Bind::Close)).contains("column 9"));
    assert!(
        err(INTEL_2X12, places("{0}:4:100", Bind::Close, None)).contains("CPU 100 does not exist")
    );
    // Two places on one core's two CPUs without --smt.
    let e = err(INTEL_2X12, places("{0},{24}", Bind::Close, None));
    crate::common::assert_contains(&e, "--smt");
    // Two threads per core place: OpenMP binds both to the core, so they
    // take its two CPUs, --smt or not; and stacked past its CPUs, share.
    for smt in [false, true] {
        let cpus = run(
            INTEL_2X12,
            &req(Spec::places("cores", Bind::Close).unwrap(), Some(48), smt),
        )
        .unwrap();
        assert_eq!(cpus[..4], [0, 24, 1, 25]);
    }
    let stacked = run(INTEL_2X12, &places("{0}", Bind::Close, Some(2))).unwrap();
    assert_eq!(stacked, [0, 0]);
    assert!(err(INTEL_2X12, places("{0}", Bind::Close, Some(9))).contains("8 threads a CPU"));
    assert!(err(INTEL_2X12, pin("S5:0")).contains("no such socket"));
    // The id list is at fault, not the domain: its column, and what it may hold.
    let e = err(INTEL_2X12, pin("S0:0-99"));
    crate::common::assert_contains(
        &e,
        "column 4: logical id 24 is beyond S0's 24 CPUs (logical ids 0-23)",
    );
    assert!(refused(Spec::likwid("S0:0@@S1:0")).contains("column 6"));
    assert!(err(INTEL_2X12, pin("0,0")).contains("twice"));
    assert!(refused(Spec::likwid("X:0")).contains("unknown domain"));
    assert!(
        err(
            INTEL_2X12,
            req(Spec::Strategy("stride=2".parse().unwrap()), Some(13), false)
        )
        .contains("--smt")
    );
    assert!(
        err(
            INTEL_2X12,
            req(Spec::Strategy("per-numa=13".parse().unwrap()), None, false)
        )
        .contains("fewer than 13")
    );
    // A strategy is parsed once, before anything resolves it.
    assert!(
        Strategy::parse("zigzag")
            .unwrap_err()
            .contains("unknown strategy")
    );
    assert!(
        Strategy::parse("stride=0")
            .unwrap_err()
            .contains("positive")
    );
    for spelling in [
        "compact", "spread", "per-socket=2", "per-numa=1", "per-l3=4", "stride=3",
    ] {
        assert_eq!(Strategy::parse(spelling).unwrap().to_string(), spelling);
    }
    assert!(err(INTEL_2X12, req(Spec::cpus("0-3,99").unwrap(), None, false)).contains("CPU 99"));
}

/// A fixture whose process may use only CPUs 4-11: nothing lands outside.
#[test]
fn the_allowed_mask_is_never_left() {
    let dir = common::tree(INTEL_2X12);
    std::fs::write(
        dir.path().join("proc/self/status"),
        "Cpus_allowed_list:\t4-11\nMems_allowed_list:\t0-1\n",
    )
    .unwrap();
    let t = Topology::read(dir.path()).unwrap();
    assert_eq!(
        resolve(&t, &req(Spec::Default, None, false)).unwrap(),
        list("4-11")
    );
    assert_eq!(resolve(&t, &pin("N:0-1")).unwrap(), list("4-5"));
    assert_eq!(
        resolve(&t, &places("cores", Bind::Close, None)).unwrap(),
        list("4-11")
    );
    let e = resolve(&t, &places("{0}", Bind::Close, None))
        .unwrap_err()
        .to_string();
    crate::common::assert_contains(&e, "outside the allowed set 4-11");
    assert!(resolve(&t, &req(Spec::cpus("3").unwrap(), None, false)).is_err());
}

mod properties {
    //! Requests generated valid by construction for each fixture machine (so
    //! every case reaches the assertions), and requests generated invalid by
    //! construction, each of which must be refused with exit code 2.
    use super::*;
    use membw::placement::Domains;
    use membw::placement::domains::Kind;
    use proptest::prelude::*;

    fn check(t: &Topology, r: &Request, cpus: &[usize]) -> Result<(), TestCaseError> {
        let mut seen = std::collections::HashSet::new();
        for &c in cpus {
            prop_assert!(
                t.allowed_cpus.contains(c),
                "CPU {} outside the allowed set",
                c
            );
            prop_assert!(seen.insert(c), "CPU {} repeated", c);
        }
        if let Some(n) = r.threads {
            prop_assert_eq!(cpus.len(), n);
        }
        if !r.smt {
            let cores: std::collections::HashSet<_> = cpus
                .iter()
                .map(|&c| t.cpu(c).unwrap().siblings.clone())
                .collect();
            prop_assert_eq!(
                cores.len(),
                cpus.len(),
                "two threads share a core without smt"
            );
        }
        Ok(())
    }

    fn resolved(t: &Topology, r: &Request) -> Result<Vec<usize>, TestCaseError> {
        let cpus =
            resolve(t, r).map_err(|e| TestCaseError::fail(format!("{r:?} was refused: {e}")))?;
        check(t, r, &cpus)?;
        Ok(cpus)
    }

    fn domains(machine: usize) -> (Topology, Domains) {
        let t = common::topology(common::MACHINES[machine]);
        let d = Domains::new(&t, &t.allowed_cpus);
        (t, d)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        /// K per domain with K no larger than the smallest domain, and any
        /// thread count the strategy can give.
        #[test]
        fn valid_strategies_resolve_and_keep_the_invariants(
            machine in 0usize..common::MACHINES.len(),
            which in 0usize..6,
            k_pick in 0usize..1000,
            threads_pick in prop::option::of(0usize..1000),
            smt: bool,
        ) {
            let (t, d) = domains(machine);
            let per_core = if smt { t.threads_per_core() } else { 1 };
            let cores = d.cores.len();
            let (name, yields) = match which {
                0 => ("compact".to_string(), cores * per_core),
                1 => ("spread".to_string(), cores * per_core),
                2..=4 => {
                    let (label, kind) = [("per-numa", Kind::Memory), ("per-l3", Kind::Cache), ("per-socket", Kind::Socket)][which - 2];
                    let fewest = d.fewest_cores(kind) * per_core;
                    let k = 1 + k_pick % fewest;
                    let groups = d.of_kind(kind).iter().filter(|g| !g.is_empty()).count();
                    (format!("{label}={k}"), k * groups)
                }
                _ => {
                    let stride = 1 + k_pick % cores;
                    (format!("stride={stride}"), cores.div_ceil(stride) * per_core)
                }
            };
            let threads = threads_pick.map(|n| 1 + n % yields);
            let r = req(Spec::Strategy(name.parse().unwrap()), threads, smt);
            let cpus = resolved(&t, &r)?;
            prop_assert_eq!(cpus.len(), threads.unwrap_or(yields));
        }

        /// OMP_PLACES intervals inside the machine and abstract names with
        /// counts it has; every thread lands in the place OpenMP assigns it.
        #[test]
        fn valid_omp_places_put_each_thread_in_its_place(
            machine in 0usize..common::MACHINES.len(),
            start_pick in 0usize..1000, len_pick in 0usize..1000, stride in 1usize..5,
            abstract_pick in prop::option::of(0usize..4),
            threads_pick in prop::option::of(0usize..1000),
            bind in prop::sample::select(vec![Bind::Close, Bind::Spread, Bind::Primary]),
        ) {
            let (t, d) = domains(machine);
            let n = t.cpus.len();
            let (text, places): (String, Vec<Vec<usize>>) = match abstract_pick {
                Some(i) => {
                    let (name, kind) = [("cores", None), ("sockets", Some(Kind::Socket)), ("numa_domains", Some(Kind::Memory)), ("ll_caches", Some(Kind::Cache))][i];
                    let all: Vec<Vec<usize>> = match kind {
                        None => d.cores.iter().map(|c| c.cpus.clone()).collect(),
                        Some(k) => d.of_kind(k).iter().map(|g| d.cpus_of(g)).filter(|p| !p.is_empty()).collect(),
                    };
                    let count = 1 + len_pick % all.len();
                    (format!("{name}({count})"), all[..count].to_vec())
                }
                None => {
                    let start = start_pick % n;
                    let len = 1 + len_pick % ((n - 1 - start) / stride + 1);
                    (format!("{{{start}}}:{len}:{stride}"), (0..len).map(|i| vec![start + i * stride]).collect())
                }
            };
            // One thread per place at most, so that no two share a core,
            // but primary, which stacks every thread on place 0 as OpenMP
            // does, however few CPUs it has.
            let threads = threads_pick.map(|p| 1 + p % places.len());
            let r = Request { spec: Spec::places(&text, bind).unwrap(), threads, smt: true, cpu_nodes: None };
            let n = threads.unwrap_or(places.len());
            let cpus = if bind == Bind::Primary {
                let stacked = resolve(&t, &r);
                if n > places[0].len() * membw::placement::MAX_THREADS_PER_CPU {
                    let e = stacked.err().map(|e| e.to_string()).unwrap_or_default();
                    prop_assert!(e.contains("threads a CPU at most"), "{}", e);
                    return Ok(());
                }
                stacked.map_err(|e| TestCaseError::fail(format!("{r:?} was refused: {e}")))?
            } else {
                resolved(&t, &r)?
            };
            prop_assert_eq!(cpus.len(), n);
            let slots = membw::placement::omp::assign(bind, cpus.len(), places.len());
            for (thread, (&cpu, &slot)) in cpus.iter().zip(&slots).enumerate() {
                prop_assert!(places[slot].contains(&cpu), "thread {} on CPU {} outside place {}", thread, cpu, slot);
            }
            // A shared place: its CPUs in turn, none idle while another
            // runs two threads.
            let distinct: std::collections::HashSet<_> = cpus.iter().collect();
            prop_assert_eq!(distinct.len(), cpus.len().min(if bind == Bind::Primary { places[0].len() } else { cpus.len() }));
        }

        /// likwid-pin: a range of logical ids in one socket, an expression
        /// with a stride over the node, or a scatter.
        #[test]
        fn valid_likwid_expressions_pin_in_order(
            machine in 0usize..common::MACHINES.len(),
            form in 0usize..3,
            a in 0usize..1000, b in 0usize..1000, stride in 1usize..4,
        ) {
            let (t, d) = domains(machine);
            let sockets = d.of_kind(Kind::Socket);
            let (expr, expected): (String, Option<Vec<usize>>) = match form {
                0 => {
                    let s = a % sockets.len();
                    let order = d.tiers(&sockets[s], true);
                    let lo = b % order.len();
                    let hi = lo + (a / 7) % (order.len() - lo);
                    (format!("S{s}:{lo}-{hi}"), Some(order[lo..=hi].to_vec()))
                }
                1 => {
                    let order = d.tiers(&(0..d.cores.len()).collect::<Vec<_>>(), true);
                    let count = 1 + a % ((order.len() - 1) / stride + 1);
                    let want = (0..count).map(|i| order[i * stride]).collect();
                    (format!("E:N:{count}:1:{stride}"), Some(want))
                }
                _ => (format!("{}:scatter", ['S', 'M', 'C'][a % 3]), None),
            };
            let r = req(Spec::likwid(&expr).unwrap(), None, true);
            let cpus = resolved(&t, &r)?;
            if let Some(want) = expected {
                prop_assert_eq!(cpus, want);
            } else {
                prop_assert_eq!(cpus.len(), t.allowed_cpus.len());
            }
        }
    }

    /// Invalid by construction: an index, count or CPU past what the machine
    /// has, a grammar slip, or a thread count above what the request yields.
    fn invalid(machine: usize, k: usize, form: usize) -> Vec<String> {
        let (t, d) = domains(machine);
        let n = t.cpus.len();
        let sockets = d.of_kind(Kind::Socket).len();
        let fewest_numa = d.fewest_cores(Kind::Memory) * t.threads_per_core();
        let flags: Vec<String> = match form {
            0 => vec!["--pin".into(), format!("S{}:0", sockets + k)],
            1 => vec!["--pin".into(), format!("N:0-{}", n + k)],
            2 => vec!["--pin".into(), format!("E:N:{}:1:1", n + 1 + k)],
            3 => vec!["--places".into(), format!("{{{}}}:2", n + k)],
            4 => vec![
                "--places".into(),
                format!("cores({})", d.cores.len() + 1 + k),
            ],
            5 => vec![
                "--strategy".into(),
                format!("per-numa={}", fewest_numa + 1 + k),
                "--smt".into(),
            ],
            6 => vec![
                "--strategy".into(),
                "spread".into(),
                "--threads".into(),
                (n + 1 + k).to_string(),
            ],
            7 => vec!["--cpus".into(), format!("0,{}", n + k)],
            8 => vec!["--places".into(), format!("{{0:{}", k + 1)],
            _ => vec!["--pin".into(), format!("S0:{k}@@S0:0")],
        };
        flags
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(40))]

        #[test]
        fn invalid_requests_fail_with_exit_code_2(machine in 0usize..common::MACHINES.len(), k in 0usize..50, form in 0usize..10) {
            let root = common::shared_tree(common::MACHINES[machine]);
            let mut args = vec!["place".to_string(), "--sysroot".into(), root.to_string_lossy().into_owned()];
            args.extend(invalid(machine, k, form));
            let out = common::membw().args(&args).output().unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            prop_assert_eq!(out.status.code(), Some(2), "{:?}: {}", args, stderr);
            prop_assert_eq!(stderr.trim_end().lines().count(), 1, "{}", stderr);
        }
    }
}

/// `numactl --membind 0 membw run`, `numactl --interleave=all membw run`:
/// without `--mem`, membw measures under the policy it was started with and
/// names it in the header and the JSON.
#[test]
fn an_inherited_memory_policy_is_named() {
    // qemu-user implements neither mbind nor get_mempolicy.
    if !common::mbind_works() {
        return;
    }
    let membw = common::membw_argv();
    for (policy, expect) in [
        ("--membind=0", "bind:0"),
        ("--interleave=all", "interleave:"),
    ] {
        let mut cmd = std::process::Command::new("numactl");
        cmd.arg(policy)
            .args(&membw)
            .args(["run", "--size", "1M", "--ntimes", "2"]);
        let Some(out) = common::tool(&mut cmd, "numactl") else {
            return;
        };
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.lines()
                .any(|l| l.starts_with(&format!("Memory policy: {expect}"))
                    && l.contains("inherited (numactl or the parent process)")),
            "{text}"
        );
        let mut cmd = std::process::Command::new("numactl");
        cmd.arg(policy)
            .args(&membw)
            .args(["run", "--size", "1M", "--ntimes", "2", "--json"]);
        let out = common::tool(&mut cmd, "numactl").unwrap();
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let inherited = doc["request"]["inherited_mem_policy"]
            .as_str()
            .unwrap_or("");
        assert!(inherited.starts_with(expect), "{doc}");
        assert_eq!(doc["measurement"]["mem_policy"].as_str(), Some(inherited));
    }
    // --mem given: the policy is membw's own, not inherited.
    let mut cmd = std::process::Command::new("numactl");
    cmd.arg("--membind=0")
        .args(&membw)
        .args(["run", "--size", "1M", "--ntimes", "2", "--mem", "local"]);
    let out = common::tool(&mut cmd, "numactl").unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Memory policy: local (") && !text.contains("inherited"),
        "{text}"
    );
}
