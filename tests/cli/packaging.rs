//! The packaging files agree with the crate without EasyBuild or Spack:
//! every crate of Cargo.lock in each easyconfig with Cargo.lock's checksum,
//! the Spack variants are the Cargo features, and every version is
//! Cargo.toml's. (The tarballs' checksums are checked in CI by
//! `contrib/release/release.sh --check`, which needs the tarballs.)

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;

/// The release tarball leaves the packaging files out (.gitattributes: they
/// hold its checksum), so a build from it has nothing to check here.
fn packaging_files_here() -> bool {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let here = root.join("contrib/easybuild").is_dir() && root.join("contrib/spack").is_dir();
    if !here {
        common::unavailable(
            "no contrib/easybuild or contrib/spack (a release tarball leaves them out)",
            "a git checkout has them",
        );
    }
    here
}

fn read(path: &str) -> String {
    let full = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{}: {e}", full.display()))
}

/// The value of `key = "value"` in a TOML block of lines.
fn toml_value<'a>(block: &'a str, key: &str) -> Option<&'a str> {
    block.lines().find_map(|line| {
        let rest = line.strip_prefix(key)?.trim_start().strip_prefix('=')?;
        Some(rest.trim().trim_matches('"'))
    })
}

/// Cargo.lock's crates from crates.io: name-version → checksum.
fn locked_crates() -> BTreeMap<String, String> {
    let lock = read("Cargo.lock");
    lock.split("[[package]]")
        .skip(1)
        .filter(|block| toml_value(block, "source").is_some())
        .map(|block| {
            let name = toml_value(block, "name").unwrap();
            let version = toml_value(block, "version").unwrap();
            let checksum = toml_value(block, "checksum").unwrap();
            (format!("{name}-{version}"), checksum.to_string())
        })
        .collect()
}

fn crate_version() -> String {
    let manifest = read("Cargo.toml");
    toml_value(&manifest, "version").unwrap().to_string()
}

/// The quoted strings of each line that starts with `prefix` (after spaces).
fn quoted_after<'a>(text: &'a str, prefix: &str) -> Vec<Vec<&'a str>> {
    text.lines()
        .filter_map(|l| l.trim_start().strip_prefix(prefix))
        .map(|rest| rest.split(['\'', '"']).skip(1).step_by(2).collect())
        .collect()
}

#[test]
fn each_easyconfig_lists_every_locked_crate_with_its_checksum() {
    if !packaging_files_here() {
        return;
    }
    let version = crate_version();
    let locked = locked_crates();
    assert!(
        locked.len() > 50,
        "Cargo.lock read as {} crates",
        locked.len()
    );
    for suffix in ["", "-mpi"] {
        let path = format!("contrib/easybuild/membw-{version}{suffix}.eb");
        let eb = read(&path);
        assert!(eb.contains(&format!("version = '{version}'")), "{path}");
        assert!(eb.contains("easyblock = 'Cargo'"), "{path}");
        let crates: Vec<String> = quoted_after(&eb, "(")
            .into_iter()
            .filter(|q| q.len() == 2 && q[1].starts_with(|c: char| c.is_ascii_digit()))
            .map(|q| format!("{}-{}", q[0], q[1]))
            .filter(|c| !c.starts_with("Rust-") && !c.starts_with("LLVM-"))
            .collect();
        let missing: Vec<&String> = locked.keys().filter(|c| !crates.contains(c)).collect();
        let extra: Vec<&String> = crates.iter().filter(|c| !locked.contains_key(*c)).collect();
        assert!(
            missing.is_empty() && extra.is_empty(),
            "{path}: missing {missing:?}, not locked {extra:?}"
        );
        assert_eq!(crates.len(), locked.len(), "{path}: a crate listed twice");
        // {'name-version.tar.gz': 'sha256'}, the source tarball first.
        let sums: BTreeMap<&str, &str> = quoted_after(&eb, "{")
            .into_iter()
            .map(|q| (q[0].trim_end_matches(".tar.gz"), q[1]))
            .collect();
        assert!(
            sums.contains_key("%(name)s-%(version)s"),
            "{path}: no source checksum"
        );
        for (name, checksum) in &locked {
            assert_eq!(
                sums.get(name.as_str()),
                Some(&checksum.as_str()),
                "{path}: {name}"
            );
        }
        assert_eq!(sums.len(), locked.len() + 1, "{path}: checksums");
    }
}

#[test]
fn spack_variants_are_the_cargo_features_and_its_version_is_the_crates() {
    if !packaging_files_here() {
        return;
    }
    let package = read("contrib/spack/packages/membw/package.py");
    let manifest = read("Cargo.toml");
    let features = manifest.split("[features]").nth(1).unwrap();
    let features = features.split("\n[").next().unwrap();
    let default: Vec<&str> = quoted_after(features, "default")[0].clone();
    let mut names: Vec<&str> = features
        .lines()
        .filter_map(|l| l.split_once(" = ").map(|(k, _)| k.trim()))
        .filter(|k| !k.starts_with('#') && *k != "default")
        .collect();
    names.sort();
    let mut variants: Vec<(&str, bool)> = package
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("variant(\""))
        .map(|rest| {
            let name = rest.split('"').next().unwrap();
            (name, rest.contains("default=True"))
        })
        .collect();
    variants.sort();
    let expected: Vec<(&str, bool)> = names.iter().map(|n| (*n, default.contains(n))).collect();
    assert_eq!(
        variants, expected,
        "Spack variants (name, default) against Cargo features"
    );
    let version = crate_version();
    assert!(
        package.contains(&format!("version(\"{version}\", sha256=\"")),
        "package.py has no version({version})"
    );
    assert!(
        package.contains(&format!("when=\"@{version}\"")),
        "package.py: vendor resource"
    );
}
