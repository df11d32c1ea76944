//! Every command the README and the guide (docs/guide) show in a code block (```sh blocks, and `$ `
//! lines of text blocks) runs as written. A `membw` wrapper on PATH adds
//! the fake source (and a small size) to run, sweep and tune, so the
//! examples check the command line, files and pipes, not this VM's speed.

use crate::common;

use std::path::Path;

fn examples(readme: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fence: Option<String> = None;
    // A sample's command (`<!-- sample: CMD -->`) is not among them: the
    // samples' test runs it as written and checks what it prints.
    for line in readme.lines() {
        if let Some(tag) = line.strip_prefix("```") {
            fence = match fence {
                None => Some(tag.trim().to_string()),
                Some(_) => None,
            };
            continue;
        }
        match fence.as_deref() {
            Some("sh") if !line.trim().is_empty() && !line.starts_with("cargo ") => {
                out.push(line.to_string())
            }
            Some("text") => {
                if let Some(cmd) = line.strip_prefix("$ ") {
                    out.push(cmd.to_string());
                }
            }
            _ => {}
        }
    }
    // membw's own commands (after any VAR=value prefixes) and the gcc builds
    // they use; the QEMU test bed and the benchmarks have tests of their own.
    out.retain(|cmd| {
        cmd.split_whitespace()
            .find(|w| !w.contains('='))
            .is_some_and(|w| w == "membw" || w == "gcc" || w == "mkdir")
    });
    out
}

/// The README and every page of the guide: (name from the root, text).
fn documents() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("README.md")];
    let mut guide: Vec<_> = std::fs::read_dir(root.join("docs/guide"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    guide.sort();
    files.extend(guide);
    files
        .into_iter()
        .map(|f| {
            let text = std::fs::read_to_string(&f).unwrap();
            (f.strip_prefix(root).unwrap().display().to_string(), text)
        })
        .collect()
}

/// The README and every page of the guide, with their commands.
fn pages() -> Vec<(String, Vec<String>)> {
    documents()
        .into_iter()
        .map(|(name, text)| (name, examples(&text)))
        .collect()
}

/// A PATH whose first entry, `dir`, holds a `membw` script running `body`
/// (the binary under test, with or without the fake source).
fn path_with_membw(dir: &Path, body: &str) -> String {
    let wrapper = dir.join("membw");
    std::fs::write(&wrapper, format!("#!/bin/bash\n{body}")).unwrap();
    std::process::Command::new("chmod")
        .args(["+x", wrapper.to_str().unwrap()])
        .status()
        .unwrap();
    format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// Memory policies (given or inherited from numactl) need mbind, which
/// qemu-user does not emulate.
fn needs_mbind(cmd: &str) -> bool {
    cmd.contains("--mem ") || cmd.contains("--numa-matrix") || cmd.contains("numactl ")
}

#[test]
fn the_readme_is_read_in_two_minutes_and_links_every_guide_page() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(
        lines <= 250,
        "the README has {lines} lines; the guide takes the rest"
    );
    for (page, _) in pages().iter().skip(1) {
        assert!(
            readme.contains(&format!("]({page}")),
            "the README does not link {page}"
        );
    }
}

#[test]
fn readme_and_guide_examples_run_verbatim() {
    // About 25 s of both cores here: every page's commands, one by one.
    if !common::slow_tests("the README and guide examples test") {
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let pages = pages();
    let total: usize = pages.iter().map(|(_, c)| c.len()).sum();
    assert!(total >= 25, "{pages:?}");
    let dir = crate::common::scratch_dir();
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let path = path_with_membw(
        &bin,
        &format!(
            "extra=()\ncase \"$1\" in run|sweep|tune) extra=(--fake-source 4); \
             [[ \" $* \" == *' --backend '* ]] && extra=(); \
             [[ \" $* \" == *' --size '* ]] || extra+=(--size 1M);; \
             baseline|check) extra=(--fake-source 4);; esac\n\
             # `sweep --resume FILE` alone continues the file's study, fake source and size included.\n\
             [[ \"$1 $2\" == 'sweep --resume' && $# == 3 ]] && extra=()\n\
             exec {} \"$@\" \"${{extra[@]}}\"\n",
            common::membw_argv().join(" ")
        ),
    );
    let mbind = common::mbind_works();
    for (page, commands) in &pages {
        // Each page in its own directory and a fresh home (nothing made
        // beforehand, as on a newcomer's machine); paths as in the repository.
        let work = dir.path().join(page.replace('/', "_"));
        let home = work.join("home");
        std::fs::create_dir_all(&home).unwrap();
        for d in ["tests", "docs", "bench"] {
            std::os::unix::fs::symlink(root.join(d), work.join(d)).unwrap();
        }
        for cmd in commands {
            // `man` itself may be absent; the page must at least exist.
            let script = format!(
                "set -eo pipefail; command -v man >/dev/null || man() {{ test -n \"$1\"; }}; {cmd}"
            );
            if !mbind && needs_mbind(cmd) {
                common::skip(format!("no mbind under qemu-user: {cmd}"));
                continue;
            }
            let out = std::process::Command::new("bash")
                .arg("-c")
                .arg(&script)
                .current_dir(&work)
                .env("TMPDIR", &work)
                .env("PATH", &path)
                .env("HOME", &home)
                .env("MANPAGER", "cat")
                .env("PAGER", "cat")
                .env("MANPATH", home.join(".local/share/man"))
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{page} example failed: {cmd}\n{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

/// The structure of an output, line by line: top-level lines (column 0)
/// by their first word (digits masked), and header rows (indented, letters
/// only) whole. What depends on
/// the machine or the moment is left out: warnings, trust findings, the
/// best point's decision, and indented detail rows.
fn structure(text: &str) -> Vec<String> {
    let masked = |l: &str| -> String {
        let mut out = String::new();
        let mut chars = l.chars().peekable();
        while let Some(c) = chars.next() {
            // A figure's sign is the moment's too (an interval's low end
            // below zero on a noisy host): `-1.2` masks as `1.2` does.
            let starts_field = out.is_empty() || out.ends_with([',', ' ']);
            if c == '-' && starts_field && chars.peek().is_some_and(char::is_ascii_digit) {
                continue;
            }
            if c.is_ascii_digit() {
                if !out.ends_with('#') {
                    out.push('#');
                }
            } else {
                out.push(c);
            }
        }
        out.split_whitespace().collect::<Vec<_>>().join(" ")
    };
    // Lines that come and go with the moment: trust findings, verdicts,
    // and the legend's lines on trust (a doubted run adds them).
    let variable = [
        "warning", "TRUSTED", "trusted", "resolved", "runner-up", "▶", "trust: each run",
        "doubts the whole run", "never the best",
    ];
    text.lines()
        .filter(|l| !variable.iter().any(|v| l.contains(v)))
        .filter_map(|l| {
            let first = l.chars().next()?;
            if first.is_ascii_alphabetic() || first == '-' {
                // The first word only: what follows can depend on the
                // machine (`Peak       204.8 GB/s …` where the table knows
                // the CPU, `Peak       unknown: …` where it does not).
                Some(masked(l).split(' ').next()?.to_string())
            } else if l.starts_with("  ")
                && l.split_whitespace().count() >= 3
                && !l.chars().any(|c| c.is_ascii_digit())
                && l.chars().any(|c| c.is_ascii_lowercase())
                && !l.contains(':')
            {
                Some(masked(l))
            } else {
                None
            }
        })
        .collect()
}

/// Every `<!-- sample: CMD -->` of the README and the guide, with the text
/// block under it.
fn samples() -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    for (name, text) in documents() {
        let mut lines = text.lines();
        while let Some(line) = lines.next() {
            if let Some(cmd) = line
                .strip_prefix("<!-- sample: ")
                .and_then(|l| l.strip_suffix(" -->"))
            {
                assert_eq!(lines.next(), Some("```text"), "{name}: {cmd}");
                let body: Vec<&str> = lines.by_ref().take_while(|l| *l != "```").collect();
                out.push((name.clone(), cmd.to_string(), body.join("\n")));
            }
        }
    }
    out
}

#[test]
fn every_output_block_is_a_sample_or_says_where_it_was_recorded() {
    // Output blocks are ```text; each follows `<!-- sample: CMD -->` (the
    // script rewrites it) or `<!-- recorded: WHERE -->` (a machine or setup
    // this one cannot be: MPI nodes, a QEMU guest, a health check's history).
    for (page, text) in documents() {
        let lines: Vec<&str> = text.lines().collect();
        for (i, l) in lines.iter().enumerate() {
            if *l == "```text" {
                let before = if i > 0 { lines[i - 1] } else { "" };
                assert!(
                    before.starts_with("<!-- sample: ") || before.starts_with("<!-- recorded: "),
                    "{page}:{}: an output block without `<!-- sample: CMD -->` or \
                     `<!-- recorded: WHERE -->` above it",
                    i + 1
                );
            }
        }
    }
}

/// A tool other than membw that a sample's command starts and this host
/// lacks, with its Debian package.
fn missing_tool(cmd: &str) -> Option<(&'static str, &'static str)> {
    const TOOLS: [(&str, &str); 4] = [
        ("numactl", "numactl"),
        ("likwid-pin", "likwid"),
        ("taskset", "util-linux"),
        ("hwloc-ls", "hwloc"),
    ];
    TOOLS.into_iter().find(|(tool, _)| {
        cmd.split(|c: char| c.is_whitespace() || c == '|' || c == ';')
            .any(|word| word == *tool)
            && !std::process::Command::new("sh")
                .args(["-c", &format!("command -v {tool}")])
                .stdout(std::process::Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
    })
}

#[test]
fn samples_have_the_structure_the_binary_prints_today() {
    // About 20 s here: real measurements, as the pages show them.
    if !common::slow_tests("the guide samples test") {
        return;
    }
    // Numbers may differ (this is another machine, another moment); the
    // lines, labels and headers may not. The command runs as written, with
    // the membw under test first on PATH, from the repository's root.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = crate::common::scratch_dir();
    let path = path_with_membw(
        dir.path(),
        &format!("exec {} \"$@\"\n", common::membw_argv().join(" ")),
    );
    // In a scratch directory showing the repository's docs, tests and bench,
    // as docs/regenerate-samples.sh runs them: what a sample writes lands there.
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    for d in ["tests", "docs", "bench"] {
        std::os::unix::fs::symlink(root.join(d), work.join(d)).unwrap();
    }
    let samples = samples();
    assert!(samples.len() >= 10, "{samples:?}");
    let mbind = common::mbind_works();
    for (page, cmd, body) in samples {
        if !mbind && needs_mbind(&cmd) {
            common::skip(format!("no mbind under qemu-user: {cmd}"));
            continue;
        }
        if let Some((tool, package)) = missing_tool(&cmd) {
            common::unavailable(
                format!("{tool} not installed (Debian package {package}): {cmd}"),
                format!(".ci/run must install Debian package {package}"),
            );
            continue;
        }
        let out = std::process::Command::new("bash")
            .arg("-c")
            .arg(format!("set -eo pipefail; {cmd}"))
            .current_dir(&work)
            // `mktemp -d` in a sample: inside the scratch directory.
            .env("TMPDIR", &work)
            .env("PATH", &path)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{page}: {cmd}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let now = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let (want, got) = (structure(&body), structure(&now));
        // The sample's structure, in order, within today's output.
        let mut at = got.iter();
        for line in &want {
            assert!(
                at.any(|g| g == line),
                "{page}: `{cmd}`: the sample's `{line}` is not in today's output, in order; \
                 run docs/regenerate-samples.sh\ntoday:\n{now}"
            );
        }
    }
}
