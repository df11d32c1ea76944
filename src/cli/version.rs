//! `membw --version` and `membw version`: what this build can do, so a
//! user learns that it lacks MPI or a GPU library before `mpirun` or
//! `--backend` fails.

use crate::kernels::Isa;
use std::sync::OnceLock;

/// The commit the binary was built from ("unknown" for a tarball's build).
pub(crate) const COMMIT: &str = env!("MEMBW_COMMIT");

/// The optional features compiled in.
fn features() -> String {
    let on = |yes: bool| if yes { "yes" } else { "no" };
    format!(
        "mpi {} · png {}",
        on(cfg!(feature = "mpi")),
        on(cfg!(feature = "png"))
    )
}

/// `--version`'s text: the version, commit, features and target, with a
/// pointer to the full account.
pub(crate) fn long() -> &'static str {
    static TEXT: OnceLock<String> = OnceLock::new();
    TEXT.get_or_init(|| {
        format!(
            "{} (commit {COMMIT}; {}; {}-linux)\nmembw version: this node's kernels and GPU libraries",
            env!("CARGO_PKG_VERSION"),
            features(),
            std::env::consts::ARCH,
        )
    })
}

/// The kernel sets compiled for this architecture, widest first.
fn compiled() -> Vec<Isa> {
    let arch = std::env::consts::ARCH;
    Isa::ALL
        .into_iter()
        .filter(|isa| match isa {
            Isa::Avx512 | Isa::Avx2 | Isa::Sse2 => arch == "x86_64",
            Isa::Sve | Isa::Neon => arch == "aarch64",
            Isa::Scalar => true,
        })
        .collect()
}

/// Whether a GPU platform's library loads here (the first of its names
/// that does), or why not (its first name's reason).
fn library(lib: &crate::backend::gpu::runtime::Library) -> String {
    let mut first = None;
    for name in lib.names {
        match crate::sys::why_not_loadable(name) {
            None => return format!("  {:<9} {name} loads: {}", lib.label, lib.gives),
            Some(why) => {
                first.get_or_insert(why);
            }
        }
    }
    let names = match lib.names {
        [one] => format!("{one} does not load"),
        many => format!("none of {} loads", many.join(", ")),
    };
    format!(
        "  {:<9} {names} ({}): {}",
        lib.label,
        first.unwrap_or_default(),
        lib.gives
    )
}

/// `membw version`: the build and what it finds on this node.
pub(crate) fn text() -> String {
    let names = |isas: &[Isa]| isas.iter().map(|i| i.name()).collect::<Vec<_>>().join(", ");
    let built = compiled();
    let usable: Vec<Isa> = built.iter().copied().filter(|i| i.supported()).collect();
    let mpi = match cfg!(feature = "mpi") {
        true => "yes: mpirun -np N membw run measures across ranks".to_string(),
        false => "no: ranks measure only with --independent; for MPI build with --features mpi (docs/guide/install.md)".to_string(),
    };
    [
        format!("membw {}", env!("CARGO_PKG_VERSION")),
        format!("  commit    {COMMIT}"),
        format!("  target    {}-linux", std::env::consts::ARCH),
        format!("  features  {}", features()),
        format!("  mpi       {mpi}"),
        format!(
            "  kernels   {} compiled; this CPU runs {} (default {})",
            names(&built),
            names(&usable),
            Isa::best().name()
        ),
    ]
    .into_iter()
    .chain(
        (crate::backend::PLATFORMS.iter())
            .flat_map(|p| p.id().libraries)
            .map(library),
    )
    .chain(["  sim       built in: --backend sim:N, a simulated device".to_string()])
    .collect::<Vec<_>>()
    .join("\n")
        + "\n"
}
