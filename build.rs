//! Records the commit membw is built from (`membw version`), where the
//! source is membw's own git checkout; a tarball's build says "unknown".

use std::path::Path;

fn main() {
    let manifest = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .current_dir(&manifest)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    // Not the commit of a repository the source tarball was unpacked in.
    let own = git(&["rev-parse", "--show-toplevel"]).is_some_and(|top| {
        Path::new(&top).canonicalize().ok() == Path::new(&manifest).canonicalize().ok()
    });
    let commit = own
        .then(|| git(&["rev-parse", "--short=12", "HEAD"]))
        .flatten()
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=MEMBW_COMMIT={commit}");
    // A commit or checkout moves HEAD or the branch it names.
    let head = Path::new(&manifest).join(".git/HEAD");
    if let Ok(text) = std::fs::read_to_string(&head) {
        println!("cargo:rerun-if-changed={}", head.display());
        if let Some(branch) = text.trim().strip_prefix("ref: ") {
            println!("cargo:rerun-if-changed={manifest}/.git/{branch}");
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
