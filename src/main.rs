//! The `membw` binary: runs the CLI and turns its error into one line on
//! stderr and the documented exit code.

fn main() {
    // A child a GPU runtime started to try a call that may crash.
    if let Some(code) = membw::backend::probe_child() {
        std::process::exit(code);
    }
    // A file-size limit (ulimit -f) then fails the write, which truncates
    // the results file back to its last whole line, instead of killing.
    membw::sys::ignore_file_size_limit_signal();
    if let Err(e) = membw::cli::main() {
        // One of several ranks says which, as every rank shares one stderr.
        let rank = membw::ranks::launcher::detect(|k| std::env::var(k).ok())
            .ok()
            .flatten()
            .filter(|l| l.size > 1)
            .map_or(String::new(), |l| {
                format!("rank {} ({}): ", l.rank, membw::sys::hostname())
            });
        match e {
            membw::error::Error::Interrupted { .. } | membw::error::Error::Unhealthy(_) => {
                membw::say!("membw: {rank}{e}")
            }
            _ => membw::say!("membw: error: {rank}{e}"),
        }
        std::process::exit(e.exit_code());
    }
}
