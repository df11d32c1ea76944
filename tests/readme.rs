//! Every command the README shows in a code block (```sh blocks, and `$ `
//! lines of text blocks) runs as written. A `membw` wrapper on PATH adds
//! the fake source (and a small size) to run, sweep and tune, so the
//! examples check the command line, files and pipes, not this VM's speed.

mod common;

use std::path::Path;

fn examples(readme: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fence: Option<String> = None;
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
            .is_some_and(|w| w == "membw" || w == "gcc")
    });
    out
}

#[test]
fn readme_examples_run_verbatim() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let commands = examples(&readme);
    assert!(commands.len() >= 8, "{commands:?}");
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    let home = dir.path().join("home");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::create_dir_all(home.join(".local/share/bash-completion/completions")).unwrap();
    let wrapper = bin.join("membw");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/bash\nextra=()\ncase \"$1\" in run|sweep|tune|baseline|check) extra=(--fake-source 4); \
             [[ \" $* \" == *' --size '* ]] || extra+=(--size 1M);; esac\nexec {} \"$@\" \"${{extra[@]}}\"\n",
            common::membw_argv().join(" ")
        ),
    )
    .unwrap();
    std::process::Command::new("chmod")
        .args(["+x", wrapper.to_str().unwrap()])
        .status()
        .unwrap();
    // The examples use paths relative to the repository.
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    for d in ["tests", "docs", "bench"] {
        std::os::unix::fs::symlink(root.join(d), work.join(d)).unwrap();
    }
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mbind = common::mbind_works();
    for cmd in &commands {
        // `man` itself may be absent; the page must at least exist.
        let script = format!(
            "set -eo pipefail; command -v man >/dev/null || man() {{ test -s \"$1\"; }}; {cmd}"
        );
        if !mbind && (cmd.contains("--mem ") || cmd.contains("--numa-matrix")) {
            common::skip(format!("no mbind under qemu-user: {cmd}"));
            continue;
        }
        let out = std::process::Command::new("bash")
            .arg("-c")
            .arg(&script)
            .current_dir(&work)
            .env("PATH", &path)
            .env("HOME", &home)
            .env("MANPAGER", "cat")
            .env("PAGER", "cat")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "README example failed: {cmd}\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
