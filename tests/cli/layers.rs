//! The architecture, checked on the source (docs/guide/architecture.md): modules
//! import each other without cycles, the results model imports nothing above
//! it, only the system-facing modules read /sys or /proc, the CLI builds no
//! ad-hoc JSON, no file grows past 500 lines and no function past 100 (the
//! kernel tables and their ISA files aside), the lean build links no
//! font or rasterizer, only `results` reads membw's documents, only the
//! targets (and the backends that declare them) branch on a target's kind,
//! and a target answers only what a list names.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every .rs file under `dir`.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code of a file: its unit tests and comment lines left out.
fn code(text: &str) -> String {
    let text = text.split("#[cfg(test)]").next().unwrap_or("");
    text.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

struct Tree {
    /// Path under src/ → its code.
    files: BTreeMap<String, String>,
    /// Top-level module → the top-level modules it names (`crate::x`).
    imports: BTreeMap<String, BTreeSet<String>>,
}

fn tree() -> Tree {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut paths = Vec::new();
    sources(&src, &mut paths);
    let mut files = BTreeMap::new();
    let mut imports: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for path in paths {
        let rel = path
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let text = std::fs::read_to_string(&path).unwrap();
        let top = rel
            .split('/')
            .next()
            .unwrap()
            .trim_end_matches(".rs")
            .to_string();
        let body = code(&text);
        if top != "lib" && top != "main" {
            let named = imports.entry(top.clone()).or_default();
            for part in body.split("crate::").skip(1) {
                let name: String = part
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() && name != top {
                    named.insert(name);
                }
            }
        }
        files.insert(rel, text);
    }
    Tree { files, imports }
}

/// A cycle among the modules, if there is one (depth-first search).
fn cycle(imports: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        m: &str,
        imports: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|p| p == m) {
            let mut c = path[at..].to_vec();
            c.push(m.to_string());
            return Some(c);
        }
        if done.contains(m) {
            return None;
        }
        path.push(m.to_string());
        for next in imports.get(m).into_iter().flatten() {
            if imports.contains_key(next)
                && let Some(c) = visit(next, imports, path, done)
            {
                return Some(c);
            }
        }
        path.pop();
        done.insert(m.to_string());
        None
    }
    let mut done = BTreeSet::new();
    imports
        .keys()
        .find_map(|m| visit(m, imports, &mut Vec::new(), &mut done))
}

#[test]
fn modules_import_each_other_without_cycles() {
    let t = tree();
    assert!(t.imports.len() > 10, "{:?}", t.imports.keys());
    assert_eq!(cycle(&t.imports), None);
    // The check itself finds a cycle when there is one.
    let mut with_cycle = t.imports.clone();
    with_cycle
        .entry("topology".into())
        .or_default()
        .insert("report".into());
    assert!(cycle(&with_cycle).is_some());
}

#[test]
fn the_renderers_read_records_not_ranks_or_backends() {
    let t = tree();
    let report = &t.imports["report"];
    for other in ["ranks", "backend", "engine"] {
        assert!(!report.contains(other), "report imports {other}");
    }
}

#[test]
fn the_results_model_imports_nothing_above_it() {
    let t = tree();
    let above = [
        "engine", "ranks", "cli", "latency", "backend", "protocol", "report",
    ];
    let results = &t.imports["results"];
    let wrong: Vec<&&str> = above.iter().filter(|m| results.contains(**m)).collect();
    assert!(wrong.is_empty(), "results imports {wrong:?}");
}

#[test]
fn only_the_system_facing_modules_read_sys_and_proc() {
    let t = tree();
    let allowed = ["topology/", "memory/", "sys/", "foreign/"];
    for (path, text) in &t.files {
        if allowed.iter().any(|a| path.starts_with(a)) {
            continue;
        }
        let body = code(text);
        for needle in ["\"/sys", "\"/proc", "/proc/self"] {
            assert!(!body.contains(needle), "{path} reads {needle}");
        }
    }
}

#[test]
fn the_cli_builds_no_ad_hoc_json() {
    let t = tree();
    for (path, text) in &t.files {
        if path.starts_with("cli/") {
            assert!(
                !code(text).contains("json!"),
                "{path} builds a json! document"
            );
        }
    }
}

/// The README's Layout block: each entry's path with the text beside it.
fn readme_layout() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let section = readme
        .split("\n## Layout\n")
        .nth(1)
        .expect("README has a Layout section");
    let block = section
        .split("```\n")
        .nth(1)
        .unwrap()
        .split("```")
        .next()
        .unwrap();
    let mut entries: Vec<(String, String)> = Vec::new();
    for line in block.lines() {
        if line.starts_with(' ') {
            if let Some(last) = entries.last_mut() {
                last.1.push_str(line);
            }
        } else if let Some((path, text)) = line.split_once(' ') {
            entries.push((path.to_string(), text.to_string()));
        }
    }
    entries
}

#[test]
fn the_readmes_layout_matches_the_source_tree() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let entries = readme_layout();
    for (path, text) in &entries {
        assert!(
            root.join(path).exists(),
            "README's Layout names {path}, which is gone"
        );
        // The files a directory's entry names must be in it.
        if path.ends_with('/') && path.starts_with("src/") {
            for word in text.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.')) {
                if word.ends_with(".rs") {
                    let file = root.join(path).join(word);
                    assert!(
                        file.exists(),
                        "README's Layout names {path}{word}, which is gone"
                    );
                }
            }
        }
    }
    // Every top-level module is in the list.
    for entry in std::fs::read_dir(root.join("src")).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if name == "lib.rs" || name == "main.rs" {
            continue;
        }
        let module = name.trim_end_matches(".rs");
        let listed = entries
            .iter()
            .any(|(p, _)| p == &format!("src/{module}.rs") || p == &format!("src/{module}/"));
        assert!(listed, "src/{name} is missing from the README's Layout");
    }
}

/// The crates a build links, by name, from `cargo tree` (offline: the
/// lock file and the downloaded sources are enough).
fn linked_crates(args: &[&str]) -> BTreeSet<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = std::process::Command::new(cargo)
        .args(["tree", "--offline", "-e", "normal", "--prefix", "none"])
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo tree runs (cargo is what runs this test)");
    crate::common::assert_success(&out);
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

#[test]
fn the_lean_build_leaves_out_the_font_and_rasterizer_crates() {
    let heavy = [
        "resvg", "usvg", "tiny-skia", "fontdb", "ttf-parser", "rustybuzz",
    ];
    let full = linked_crates(&[]);
    // The check can fail: the default build has them (PNG output).
    assert!(
        heavy.iter().any(|c| full.contains(*c)),
        "the default build lost PNG output: {full:?}"
    );
    let lean = linked_crates(&["--no-default-features"]);
    let found: Vec<&&str> = heavy.iter().filter(|c| lean.contains(**c)).collect();
    assert!(found.is_empty(), "--no-default-features links {found:?}");
    // About 40 crates fewer (52 of 95 on 2026-11-25).
    assert!(
        lean.len() + 30 < full.len(),
        "{} of {}",
        lean.len(),
        full.len()
    );
}

/// Whether a source file is a unit-test module (`tests.rs`,
/// `policy_tests.rs`), not production code.
fn is_test_file(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    name == "tests.rs" || name.ends_with("_tests.rs")
}

/// Functions longer than `max` lines in one file's code (its unit tests
/// left out): (name, lines). A function runs from its `fn` line to the
/// first line that closes it at the same indentation, as rustfmt lays
/// every function out.
fn long_functions(text: &str, max: usize) -> Vec<(String, usize)> {
    let text = text.split("#[cfg(test)]").next().unwrap_or("");
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let body = line.trim_start();
        let indent = &line[..line.len() - body.len()];
        let after_qualifiers = ["pub(crate) ", "pub(super) ", "pub ", "const ", "unsafe "]
            .iter()
            .fold(body, |b, q| b.strip_prefix(q).unwrap_or(b));
        let Some(signature) = after_qualifiers.strip_prefix("fn ") else {
            continue;
        };
        // A declaration without a body (its signature, on one line or
        // several, ends in `;` before any `{`), or a body on one line.
        let signature_end = lines[i..]
            .iter()
            .map(|l| l.trim_end())
            .find(|l| l.ends_with(';') || l.ends_with('{') || l.ends_with('}'));
        if signature_end.is_none_or(|l| l.ends_with(';')) || body.ends_with('}') {
            continue;
        }
        let name: String = signature
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let close = format!("{indent}}}");
        let end = lines[i + 1..]
            .iter()
            .position(|l| *l == close)
            .map_or(lines.len() - i, |at| at + 2);
        if end > max {
            out.push((name, end));
        }
    }
    out
}

#[test]
fn no_function_outside_the_kernels_and_tests_is_over_100_lines() {
    let t = tree();
    let mut long = Vec::new();
    for (path, text) in &t.files {
        if path.starts_with("kernels/") || is_test_file(path) {
            continue;
        }
        for (name, lines) in long_functions(text, 100) {
            long.push(format!("src/{path}: {name} ({lines} lines)"));
        }
    }
    assert!(long.is_empty(), "split these:\n{}", long.join("\n"));
    // The check finds a planted one, and measures it to its closing brace.
    let planted = format!(
        "pub(crate) fn long(x: u32) -> u32 {{\n{}    x\n}}\n\nfn short() {{}}\n",
        "    let x = x + 1;\n".repeat(100)
    );
    assert_eq!(long_functions(&planted, 100), [("long".to_string(), 103)]);
    assert!(long_functions(&planted, 103).is_empty());
    // A trait's declaration over several lines has no body to measure.
    let declared = format!(
        "pub trait T {{\n    fn f(\n        &self,\n    ) -> u32;\n{}}}\n",
        "    fn g(&self) -> u32;\n".repeat(100)
    );
    assert!(long_functions(&declared, 100).is_empty());
}

/// What a long flag means to a reader of `--help`: the value it names
/// and whether it takes one (none, optional, required). A list of the
/// same values (sweep's axes) means the same as one value.
fn flag_meanings(cmd: &clap::Command) -> BTreeMap<String, BTreeMap<String, String>> {
    let mut out: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for sub in cmd.get_subcommands() {
        for arg in sub.get_arguments() {
            let Some(long) = arg.get_long() else { continue };
            let takes = arg.get_num_args().unwrap_or_default();
            let meaning = match arg.get_action() {
                clap::ArgAction::Set | clap::ArgAction::Append => format!(
                    "{} <{}>",
                    if takes.min_values() == 0 {
                        "optional"
                    } else {
                        "value"
                    },
                    arg.get_value_names()
                        .unwrap_or_default()
                        .iter()
                        .map(|n| n.as_str())
                        .collect::<Vec<_>>()
                        .join(" ")
                ),
                _ => "switch".to_string(),
            };
            let names = std::iter::once(long).chain(arg.get_all_aliases().unwrap_or_default());
            for name in names {
                out.entry(name.to_string())
                    .or_default()
                    .insert(sub.get_name().to_string(), meaning.clone());
            }
        }
    }
    out
}

/// The long flags whose meaning differs between commands, each with its
/// meaning per command.
fn flags_with_two_meanings(cmd: &clap::Command) -> Vec<String> {
    flag_meanings(cmd)
        .into_iter()
        .filter(|(_, by_command)| by_command.values().collect::<BTreeSet<_>>().len() > 1)
        .map(|(flag, by_command)| format!("--{flag}: {by_command:?}"))
        .collect()
}

#[test]
fn a_long_flag_means_one_thing_in_every_command() {
    use clap::CommandFactory;
    let cli = membw::cli::Cli::command();
    let two = flags_with_two_meanings(&cli);
    assert!(two.is_empty(), "{}", two.join("\n"));
    // Sizes are spelled so that an array's and a working set's cannot be
    // confused; the older spellings still work.
    let meanings = flag_meanings(&cli);
    assert!(meanings["array-size"].contains_key("run"));
    assert!(meanings["working-sets"].contains_key("sweep"));
    assert!(meanings["working-sets"].contains_key("latency"));
    assert_eq!(meanings["size"], meanings["array-size"]);
    // The check catches a flag planted with a second meaning: a switch in
    // one command, a value in another.
    let planted = clap::Command::new("membw")
        .subcommand(clap::Command::new("a").arg(clap::Arg::new("x").long("sizes")))
        .subcommand(
            clap::Command::new("b").arg(
                clap::Arg::new("x")
                    .long("sizes")
                    .action(clap::ArgAction::SetTrue),
            ),
        );
    assert_eq!(flags_with_two_meanings(&planted).len(), 1);
}

/// Files outside `results` that parse JSON: each one reads something that
/// is not a document membw writes, and says what.
const NOT_DOCUMENTS: [(&str, &str); 2] = [
    ("ranks/mpi.rs", "messages between the ranks of one run"),
    (
        "topology/machine_spec.rs",
        "machine descriptions people write for fixture trees",
    ),
];

/// The files whose code (unit tests aside) parses JSON outside `results`,
/// the one reader of membw's documents.
fn readers_outside_results(files: &BTreeMap<String, String>) -> Vec<String> {
    files
        .iter()
        .filter(|(path, _)| !path.starts_with("results/"))
        .filter(|(path, _)| !NOT_DOCUMENTS.iter().any(|(p, _)| p == path))
        .filter(|(_, text)| {
            let body = code(text);
            [
                "serde_json::from_", "Deserializer::from_", "serde_path_to_error::",
                // A document's kind guessed from its text.
                r#"\"membw-"#,
            ]
            .iter()
            .any(|reader| body.contains(reader))
        })
        .map(|(path, _)| format!("src/{path}"))
        .collect()
}

#[test]
fn only_results_reads_membws_documents() {
    let t = tree();
    assert_eq!(readers_outside_results(&t.files), Vec::<String>::new());
    // A planted reader (fleet history walking a verdict itself) is caught.
    let mut planted = t.files.clone();
    planted.insert(
        "health/history.rs".into(),
        "fn read(t: &str) { let v: serde_json::Value = serde_json::from_str(t).unwrap(); }".into(),
    );
    assert_eq!(readers_outside_results(&planted), ["src/health/history.rs"]);
    // So is a kind sniffed from a file's text (how the CLI once told
    // verdicts from runs).
    planted.insert(
        "cli/documents.rs".into(),
        r#"fn is_check(t: &str) -> bool { t.contains("\"membw-check\"") }"#.into(),
    );
    assert_eq!(readers_outside_results(&planted).len(), 2);
}

/// Where the kinds of target are known: the targets themselves, and the
/// backends that declare theirs.
const TARGET_MODULES: [&str; 2] = ["results/targets/", "backend/"];

/// Lines outside the targets that branch on a target's kind: a pattern of
/// one of its variants, or a device asked for other than to be kept.
fn target_branches(files: &BTreeMap<String, String>) -> Vec<String> {
    let mut found = Vec::new();
    for (path, text) in files {
        // Tests build targets of every kind to test what renders them.
        if TARGET_MODULES.iter().any(|m| path.starts_with(m)) || is_test_file(path) {
            continue;
        }
        for (i, line) in code(text).lines().enumerate() {
            let variant = ["Target::Cpu", "Target::Device", "Target::Program"]
                .iter()
                .any(|v| line.contains(v));
            let pattern = ["=>", "if let", "matches!", "let Target::", "while let"]
                .iter()
                .any(|p| line.contains(p));
            // A device may be kept (a baseline's scope) or passed on to be
            // described, never tested or taken apart.
            let asked = line.match_indices(".device()").any(|(at, m)| {
                let rest = &line[at + m.len()..];
                !(rest.starts_with(".cloned()") || rest.starts_with(')'))
            });
            if (variant && pattern) || asked || line.contains("Target::Device(") || kind_shape(line)
            {
                found.push(format!("src/{path}:{}: {}", i + 1, line.trim()));
            }
        }
    }
    found
}

/// A line that asks what kind of target ran by another name: whether it
/// is "on the host" or "placed on host CPUs", who does the work, whether a
/// point has a target at all, or a figure whose zero means "a device" (no
/// sockets used, no working CPUs, no threads). What a target has is read
/// off its method (clock, setup, observers) and its host part
/// (`Plan::host_cpus`, `Point::host`, `Measurement::host_threads`),
/// present only where host CPUs did the work.
fn kind_shape(line: &str) -> bool {
    let compact: String = line.chars().filter(|c| !c.is_whitespace()).collect();
    let zero_tests = ["==0", "!=0", ">0", "<1", ">=1"];
    let by_name = [
        ".on_host(", "on_host_cpus(", "placed_on_host_cpus", "checked_by_numa_domain",
        "working_cpus(", "method().work", "target.is_none()", "target.is_some()",
    ];
    // `Work::` as a word (not `OtherWork::`).
    let work = compact
        .match_indices("Work::")
        .any(|(at, _)| !compact[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_'));
    work || by_name.iter().any(|n| compact.contains(n))
        || (compact.contains("sockets_used") && zero_tests.iter().any(|z| compact.contains(z)))
        || (compact.contains("working_cpus(") && compact.contains(".is_empty()"))
        || (compact.contains("threads()")
            && zero_tests
                .iter()
                .any(|z| compact.contains(&format!("threads(){z}"))))
}

/// Lines outside the health scopes and the rules that word their findings
/// which take a scope apart by its variant: the rest asks a scope for
/// what it has (`device_index`, `cpu_node`, `memory_node`,
/// `whole_memory`, `labels`).
fn scope_branches(files: &BTreeMap<String, String>) -> Vec<String> {
    let mut found = Vec::new();
    for (path, text) in files {
        if ["results/scope.rs", "health/rules.rs"].contains(&path.as_str()) || is_test_file(path) {
            continue;
        }
        for (i, line) in code(text).lines().enumerate() {
            let variant = ["Scope::Numa(", "Scope::Device(", "Scope::HostLink("]
                .iter()
                .any(|v| line.contains(v));
            let pattern = ["=>", "if let", "matches!", "let Scope::", "while let"]
                .iter()
                .any(|p| line.contains(p));
            if variant && pattern && !exhaustively_checked(text, i) {
                found.push(format!("src/{path}:{}: {}", i + 1, line.trim()));
            }
        }
    }
    found
}

/// The lint that makes a match on an enum name every variant, so a new
/// one is a compile error there.
const EXHAUSTIVE: &str = "deny(clippy::wildcard_enum_match_arm)";

/// Whether line `at` of `text` lies where the compiler holds every match
/// to name each variant: a file under the lint, or a function with it.
fn exhaustively_checked(text: &str, at: usize) -> bool {
    if text.contains(&format!("#![{EXHAUSTIVE}]")) {
        return true;
    }
    let lines: Vec<&str> = text.lines().collect();
    let Some(f) = (0..=at.min(lines.len().saturating_sub(1)))
        .rev()
        .find(|&i| lines[i].trim_start().starts_with("fn ") || lines[i].contains(" fn "))
    else {
        return false;
    };
    lines[f.saturating_sub(3)..f]
        .iter()
        .any(|l| l.contains(&format!("#[{EXHAUSTIVE}]")))
}

/// Places outside the kinds' own module that match on the kind
/// ([`Measured`]) where the compiler does not hold the match to name
/// every kind, and places that carry a kind as a string (`== "device"`,
/// `"cpu" =>`): what the enum itself cannot catch.
fn unchecked_kind_decisions(files: &BTreeMap<String, String>) -> Vec<String> {
    let mut found = Vec::new();
    for (path, text) in files {
        // The kinds' own module, and the parsers of words from outside
        // (the kernel's, a backend's registry name, a scope's name).
        let words = ["topology/", "backend/", "cli/", "results/scope.rs"];
        if path.starts_with("results/targets/") || is_test_file(path) {
            continue;
        }
        let parses_words = words.iter().any(|w| path.starts_with(w));
        let code = code(text);
        for (i, line) in code.lines().enumerate() {
            let compact: String = line.chars().filter(|c| !c.is_whitespace()).collect();
            let matched = compact.contains("Measured::") && compact.contains("=>");
            let as_string = !parses_words
                && ["\"device\"", "\"cpu\"", "\"program\""].iter().any(|k| {
                    [format!("=={k}"), format!("!={k}"), format!("{k}=>")]
                        .iter()
                        .any(|shape| compact.contains(shape.as_str()))
                });
            if (matched && !exhaustively_checked(&code, i)) || as_string {
                found.push(format!("src/{path}:{}: {}", i + 1, line.trim()));
            }
        }
    }
    found
}

#[test]
fn each_decision_by_kind_names_every_kind() {
    let t = tree();
    assert_eq!(unchecked_kind_decisions(&t.files), Vec::<String>::new());
    // Planted: a match on the kind outside the lint, a kind as a string.
    for planted in [
        "fn f(m: Measured<'_, ()>) -> u8 {\n    match m {\n        Measured::Device(_) => 1,\n        _ => 0,\n    }\n}",
        "fn f(who: &str) -> bool {\n    who == \"device\"\n}",
        "fn f(t: &str) -> u8 {\n    match t {\n        \"cpu\" => 1,\n        _ => 0,\n    }\n}",
    ] {
        let mut files = t.files.clone();
        files.insert("report/csv.rs".into(), planted.into());
        assert_eq!(unchecked_kind_decisions(&files).len(), 1, "{planted}");
    }
    // The same match under the lint passes.
    let mut files = t.files.clone();
    files.insert(
        "report/csv.rs".into(),
        format!("#[{EXHAUSTIVE}]\nfn f(m: Measured<'_, ()>) -> u8 {{\n    match m {{\n        Measured::Device(_) => 1,\n        Measured::Team(_) | Measured::Program(..) => 0,\n    }}\n}}"),
    );
    assert_eq!(unchecked_kind_decisions(&files), Vec::<String>::new());
}

#[test]
fn only_the_scopes_take_a_scope_apart() {
    let t = tree();
    assert_eq!(scope_branches(&t.files), Vec::<String>::new());
    let mut files = t.files.clone();
    files.insert(
        "report/csv.rs".into(),
        "fn f(s: Scope) -> bool { matches!(s, Scope::Device(_) | Scope::HostLink(..)) }".into(),
    );
    assert_eq!(scope_branches(&files).len(), 1);
}

#[test]
fn only_the_targets_branch_on_a_targets_kind() {
    let t = tree();
    assert_eq!(target_branches(&t.files), Vec::<String>::new());
    // Planted branches (a renderer asking whether a device ran, one
    // matching the CPU variant) are caught.
    for planted in [
        "fn cell(m: &M) -> String { if m.target().device().is_some() { String::new() } else { x() } }",
        "fn cell(t: &Target) -> u8 { match t { Target::Cpu(_) => 1, _ => 0 } }",
        "fn f(t: &Target) -> bool { matches!(t, Target::Program { .. }) }",
        // By name and by shape: whether it ran on the host, or a figure
        // whose zero means a device.
        "fn f(p: &Plan) -> bool { p.target.on_host() }",
        "fn f(p: &PeakUse) -> bool { p.sockets_used == 0 }",
        "fn f(p: &Plan) -> bool { p.target.working_cpus(&p.cpus).is_empty() }",
        "fn f(p: &Plan) -> bool { p.threads() == 0 }",
        "fn f(p: &Point) -> bool { p.placed_on_host_cpus() }",
        "fn f(m: &M) -> bool { m.target().method().work == Work::Driven }",
        "fn f(r: &Record) -> bool { r.point.target.is_none() }",
    ] {
        let mut files = t.files.clone();
        files.insert("report/csv.rs".into(), planted.into());
        assert_eq!(target_branches(&files).len(), 1, "{planted}");
    }
}

/// Where the attribute `text` starts with (`#[...]`) ends: the index of
/// its closing bracket.
fn closing(text: &str) -> usize {
    let mut depth = 0i32;
    for (i, c) in text.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            _ => continue,
        }
        if depth == 0 {
            return i;
        }
    }
    text.len() - 1
}

/// Every long flag's definition sites in the CLI's source: each `#[arg]`
/// with a long name (or alias), by name, as `file:line`.
fn flag_definition_sites(files: &BTreeMap<String, String>) -> BTreeMap<String, Vec<String>> {
    let mut sites: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (path, text) in files.iter().filter(|(p, _)| p.starts_with("cli/")) {
        let body = code(text);
        let mut from = 0;
        while let Some(at) = body[from..].find("#[arg(").map(|i| i + from) {
            // The attribute, to its closing bracket.
            let end = at + closing(&body[at..]);
            let attr = &body[at..end];
            from = end;
            if !attr.contains("long") {
                continue;
            }
            // The field the attribute is on: the identifier before the
            // next `:` once other attributes are passed.
            let mut rest = body[end + 1..].trim_start();
            while rest.starts_with("#[") {
                rest = rest[closing(rest) + 1..].trim_start();
            }
            let field = rest
                .split(':')
                .next()
                .unwrap_or("")
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .rfind(|w| !w.is_empty())
                .unwrap_or("")
                .replace('_', "-");
            let quoted = |key: &str| -> Vec<String> {
                attr.match_indices(key)
                    .filter_map(|(i, _)| {
                        let after = attr[i + key.len()..].trim_start().strip_prefix('=')?;
                        let value = after.trim_start().strip_prefix('"')?;
                        Some(value[..value.find('"')?].to_string())
                    })
                    .collect()
            };
            let mut names = quoted("long");
            if names.is_empty() {
                names.push(field);
            }
            names.extend(quoted("alias")); // visible_alias too
            let line = body[..at].lines().count() + 1;
            for name in names {
                sites
                    .entry(name)
                    .or_default()
                    .push(format!("src/{path}:{line}"));
            }
        }
    }
    sites
}

/// Names defined at more than one site.
fn second_definitions(files: &BTreeMap<String, String>) -> Vec<String> {
    flag_definition_sites(files)
        .into_iter()
        .filter(|(_, sites)| sites.len() > 1)
        .map(|(name, sites)| format!("--{name}: {}", sites.join(", ")))
        .collect()
}

#[test]
fn a_shared_flag_is_defined_once() {
    let t = tree();
    assert_eq!(second_definitions(&t.files), Vec::<String>::new());
    let sites = flag_definition_sites(&t.files);
    // The flags that had several meanings or several sites live in
    // cli/flags/, one definition each.
    for name in [
        "ntimes", "hugepages", "numa-matrix", "budget", "mem", "isa", "format", "output",
        "threads", "pin", "places", "fake-source",
    ] {
        assert!(sites.contains_key(name), "--{name} has no definition");
        assert_eq!(sites[name], [sites[name][0].clone()], "--{name}");
        assert!(sites[name][0].starts_with("src/cli/flags/"), "--{name}");
    }
    // A second definition of a name is caught, with the same meaning too.
    let mut planted = t.files.clone();
    let site = "#[derive(Args)]\nstruct X {\n    /// Repetitions\n    #[arg(long, default_value_t = 10)]\n    ntimes: u32,\n}\n";
    planted.insert("cli/planted.rs".into(), site.into());
    assert_eq!(second_definitions(&planted).len(), 1);
    let aliased =
        "struct Y {\n    #[arg(long = \"repeats\", visible_alias = \"budget\")]\n    n: u32,\n}\n";
    planted.insert("cli/planted.rs".into(), aliased.into());
    assert_eq!(second_definitions(&planted).len(), 1);
}

/// Tools that skip Cargo's build folder skip every folder named `target`
/// (structure tools, some editors' searches): none under `src/`.
#[test]
fn no_source_folder_is_named_as_cargos_build_folder() {
    let mut files = Vec::new();
    sources(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut files,
    );
    let named: BTreeSet<String> = (files.iter())
        .flat_map(|f| f.ancestors().skip(1))
        .filter(|d| d.file_name().is_some_and(|n| n == "target"))
        .map(|d| d.display().to_string())
        .collect();
    assert!(named.is_empty(), "folders named target: {named:?}");
    assert!(files.len() > 100, "the walk found the sources");
}

/// The module path of a file under src/: `report/study/mod.rs` →
/// `[report, study]`.
fn module_path(rel: &str) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .trim_end_matches(".rs")
        .split('/')
        .map(str::to_string)
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// The paths a file's code names: `crate::a::b` and `super::…::x` made
/// absolute.
fn named_paths(module: &[String], body: &str) -> BTreeSet<Vec<String>> {
    let word = |s: &str| -> Vec<String> {
        let path: String = s
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == ':')
            .collect();
        path.split("::")
            .filter(|w| !w.is_empty())
            .map(str::to_string)
            .collect()
    };
    let mut out = BTreeSet::new();
    for part in body.split("crate::").skip(1) {
        out.insert(word(part));
    }
    for (at, _) in body.match_indices("super::") {
        let preceded = body[..at].ends_with("super::")
            || body[..at]
                .chars()
                .last()
                .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
        if preceded {
            continue;
        }
        let (mut ups, mut rest) = (0, &body[at..]);
        while let Some(tail) = rest.strip_prefix("super::") {
            (ups, rest) = (ups + 1, tail);
        }
        let Some(base) = module.len().checked_sub(ups) else {
            continue;
        };
        let mut path = module[..base].to_vec();
        path.extend(word(rest));
        out.insert(path);
    }
    out
}

/// Circles between the files and folders of one folder: sibling A names
/// something of sibling B and B of A, directly or round a longer circle.
/// Each is the folder and its members, sorted.
fn sibling_circles(files: &BTreeMap<String, String>) -> BTreeSet<String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let member_exists = |folder: &[String], m: &str| {
        let dir = folder.iter().fold(src.clone(), |p, f| p.join(f));
        dir.join(format!("{m}.rs")).is_file() || dir.join(m).is_dir()
    };
    // (folder, member) → (folder, member) it names.
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    // A test module may use any sibling: it ties no production code.
    for (rel, body) in files.iter().filter(|(rel, _)| !is_test_file(rel)) {
        let module = module_path(rel);
        for path in named_paths(&module, &code(body)) {
            for depth in 0..module.len() {
                let (folder, mine) = (&module[..depth], &module[depth]);
                if path.len() <= depth || path[..depth] != *folder || path[depth] == *mine {
                    continue;
                }
                if member_exists(folder, &path[depth]) {
                    let key = |m: &str| format!("{}:{m}", folder.join("/"));
                    edges
                        .entry(key(mine))
                        .or_default()
                        .insert(key(&path[depth]));
                }
            }
        }
    }
    // Members that reach each other, one circle per group.
    let reach = |from: &str| {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.to_string()];
        while let Some(m) = todo.pop() {
            for n in edges.get(&m).into_iter().flatten() {
                if seen.insert(n.clone()) {
                    todo.push(n.clone());
                }
            }
        }
        seen
    };
    let reached: BTreeMap<&String, BTreeSet<String>> =
        edges.keys().map(|m| (m, reach(m))).collect();
    let mut circles = BTreeSet::new();
    for (m, from_m) in &reached {
        if !from_m.contains(*m) {
            continue;
        }
        let group: BTreeSet<&str> = from_m
            .iter()
            .filter(|n| reached.get(n).is_some_and(|r| r.contains(*m)))
            .map(|n| n.split(':').nth(1).unwrap_or(n))
            .collect();
        let folder = m.split(':').next().unwrap_or("");
        let names: Vec<&str> = group.into_iter().collect();
        circles.insert(format!("{}: {}", folder, names.join(" ")));
    }
    circles
}

#[test]
fn no_circle_between_sibling_files() {
    let t = tree();
    let circles = sibling_circles(&t.files);
    assert!(
        circles.is_empty(),
        "circles between sibling files (a piece both need goes to the lower one, or to a file of its own): {circles:?}"
    );
    // The check finds a circle where there is one.
    let mut with = t.files.clone();
    with.insert("units.rs".into(), "crate::error::X".into());
    with.insert("error.rs".into(), "crate::units::Y".into());
    let found = sibling_circles(&with);
    assert!(found.iter().any(|c| c == ": error units"), "{found:?}");
}

/// What a `Target` answers outside the targets, method by method: each
/// gives something the target has (its code, its device's facts, its
/// peaks, its words for a report), never which kind it is. A new public
/// method fails the test until it is listed here with what it answers.
const TARGET_ANSWERS: [(&str, &str); 24] = [
    ("cpu", "makes the CPU team's target of a code"),
    (
        "measured",
        "its kind with the part only that kind has: what code matches on where behaviour differs",
    ),
    ("of_schema1", "reads a record written before targets were"),
    ("identity", "what a point is keyed by"),
    ("in_point", "what a point keeps of its plan's target"),
    (
        "cpu_code",
        "the CPU team's part: the ISA and stores its kernels ran with",
    ),
    (
        "device",
        "the device part, for rendering its name and facts and keeping them",
    ),
    ("no_peak_reason", "why no peak holds its rates"),
    ("method", "its clock, setup, observers"),
    ("memory_peak", "the peak a memory rate is a share of"),
    ("host_link_peak", "the peak of its host link"),
    ("peak_of", "the peak of what a kernel's bytes cross"),
    ("named_peak", "that peak, by name, where it names its peaks"),
    ("attached_node", "the host node a device hangs off"),
    (
        "own_memory_node",
        "the host node that is a device's own memory, as its driver says",
    ),
    ("device_index", "which member of a device set ran"),
    ("device_name", "the device column"),
    ("label", "one or two words for CSV and labels"),
    (
        "describe",
        "a header line where threads do not say what ran",
    ),
    ("labels", "metric labels that name it"),
    ("stores_label", "the stores a point's runs used"),
    ("with_stores", "the same target with the stores a run used"),
    (
        "same_device",
        "whether a check measures a baseline's device",
    ),
    ("what_is_measured", "what a check says it measures"),
];

/// The public methods of `impl Target` blocks in `files`, with whether
/// each returns a bare `bool`.
fn target_methods(files: &BTreeMap<String, String>) -> BTreeMap<String, bool> {
    let mut methods = BTreeMap::new();
    for (path, text) in files {
        if !path.starts_with("results/targets/") {
            continue;
        }
        for block in text.split("\nimpl Target {\n").skip(1) {
            let body = block.split("\n}\n").next().unwrap_or("");
            for signature in body.split("    pub fn ").skip(1) {
                let name: String = signature
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                let head = signature.split('{').next().unwrap_or("");
                methods.insert(name, head.trim_end().ends_with("-> bool"));
            }
        }
    }
    methods
}

/// Methods of `Target` not on the list, or that answer yes or no (other
/// than a comparison of two devices' identities).
fn unlisted_target_answers(files: &BTreeMap<String, String>) -> Vec<String> {
    let listed: BTreeMap<&str, &str> = TARGET_ANSWERS.into_iter().collect();
    (target_methods(files).into_iter())
        .filter(|(name, yes_or_no)| {
            !listed.contains_key(name.as_str()) || (*yes_or_no && name != "same_device")
        })
        .map(|(name, _)| name)
        .collect()
}

#[test]
fn a_target_answers_only_what_the_list_names() {
    let t = tree();
    let methods = target_methods(&t.files);
    let listed: BTreeSet<String> = TARGET_ANSWERS.iter().map(|(n, _)| n.to_string()).collect();
    assert_eq!(
        methods.keys().cloned().collect::<BTreeSet<_>>(),
        listed,
        "Target's public methods and TARGET_ANSWERS differ: list a new one with what it answers \
         (never which kind the target is)"
    );
    assert_eq!(unlisted_target_answers(&t.files), Vec::<String>::new());
    // A planted question, by a name the list lacks or as a yes or no, fails.
    for planted in [
        "pub fn runs_on_a_gpu(&self) -> Option<()> {",
        "pub fn label(&self) -> bool {",
    ] {
        let mut files = t.files.clone();
        files.insert(
            "results/targets/planted.rs".into(),
            format!("use x;\nimpl Target {{\n    {planted}\n        None\n    }}\n}}\n"),
        );
        assert_eq!(unlisted_target_answers(&files).len(), 1, "{planted}");
    }
}

/// Each type name defined in `files` (a struct, enum or trait anywhere, a
/// type alias at a module's top; an impl's associated types are not
/// definitions), with the files that define it more than once.
fn types_defined_twice(files: &BTreeMap<String, String>) -> Vec<String> {
    let mut sites: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (path, text) in files {
        for line in code(text).lines() {
            let top = !line.starts_with(char::is_whitespace);
            let mut words = line.split_whitespace().skip_while(|w| w.starts_with("pub"));
            let (Some(kind), Some(name)) = (words.next(), words.next()) else {
                continue;
            };
            let defines = ["struct", "enum", "trait"].contains(&kind) || (kind == "type" && top);
            let name: String = name
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if defines && name.starts_with(|c: char| c.is_ascii_uppercase()) {
                sites.entry(name).or_default().push(path.clone());
            }
        }
    }
    (sites.into_iter())
        .filter(|(_, at)| at.len() > 1)
        .map(|(name, at)| format!("{name}: {}", at.join(", ")))
        .collect()
}

#[test]
fn no_type_name_is_defined_twice() {
    let t = tree();
    assert_eq!(types_defined_twice(&t.files), Vec::<String>::new());
    let mut files = t.files.clone();
    files.insert(
        "report/planted.rs".into(),
        "pub enum Point {\n    A,\n}\nimpl X for Y {\n    type Target = u8;\n}\n".into(),
    );
    assert_eq!(types_defined_twice(&files).len(), 1, "Point, not Target");
}

/// The `src/` paths a list of the guide names, between `<!-- files: WHAT
/// -->` and `<!-- end -->`.
fn guide_list(guide: &str, what: &str) -> BTreeSet<String> {
    let start = guide
        .find(&format!("<!-- files: {what} -->"))
        .unwrap_or_else(|| panic!("architecture.md has no list of the files {what} touches"));
    let list = &guide[start..];
    let list = &list[..list.find("<!-- end -->").expect("the list's end")];
    (list.split('`').skip(1).step_by(2))
        .filter(|span| span.starts_with("src/"))
        .map(str::to_string)
        .collect()
}

/// The files each match on the kind stands in (a new kind's compile
/// errors), and those that name a vendor outside its folder (HIP's: its
/// registration), as `src/` paths; a vendor's folder as `<vendor>`.
fn files_a_new_kind_and_vendor_touch(
    files: &BTreeMap<String, String>,
) -> (BTreeSet<String>, BTreeSet<String>) {
    let matches_kind = |code: &str| {
        ["Measured::Team", "Measured::Program", "Measured::Device"]
            .iter()
            .any(|arm| code.contains(arm))
    };
    let names_hip = |code: &str| {
        code.split(|c: char| !c.is_ascii_alphanumeric())
            .any(|word| word.eq_ignore_ascii_case("hip"))
    };
    let mut kind = BTreeSet::new();
    let mut vendor = BTreeSet::from(["src/backend/<vendor>/".to_string()]);
    for (rel, text) in files {
        let body = code(text);
        if matches_kind(&body) {
            kind.insert(format!("src/{rel}"));
        }
        if !rel.starts_with("backend/hip/") && names_hip(&body) {
            vendor.insert(format!("src/{rel}"));
        }
    }
    (kind, vendor)
}

#[test]
fn the_guide_lists_the_files_a_new_kind_and_a_new_vendor_touch() {
    let guide = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/guide/architecture.md"),
    )
    .unwrap();
    let t = tree();
    let (kind, vendor) = files_a_new_kind_and_vendor_touch(&t.files);
    assert_eq!(guide_list(&guide, "a new kind"), kind);
    assert_eq!(guide_list(&guide, "a new vendor"), vendor);
    assert!(vendor.contains("src/backend/registry.rs"), "{vendor:?}");
    // A match on the kind in another file, or a vendor named outside its
    // folder, is a file the guide does not list.
    let mut files = t.files.clone();
    files.insert(
        "report/csv.rs".into(),
        "fn f(m: Measured<'_, ()>) -> u8 {\n    match m {\n        Measured::Device(_) => 1,\n        Measured::Team(_) | Measured::Program(..) => 0,\n    }\n}".into(),
    );
    files.insert(
        "report/topo.rs".into(),
        "const DRIVER: &str = \"hip\";".into(),
    );
    let (kind, vendor) = files_a_new_kind_and_vendor_touch(&files);
    assert_ne!(guide_list(&guide, "a new kind"), kind);
    assert_ne!(guide_list(&guide, "a new vendor"), vendor);
}
