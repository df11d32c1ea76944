//! The `membw` binary: runs the CLI and turns its error into one line on
//! stderr and the documented exit code.

fn main() {
    if let Err(e) = membw::cli::main() {
        match e {
            membw::error::Error::Interrupted { .. } => membw::say!("membw: {e}"),
            _ => membw::say!("membw: error: {e}"),
        }
        std::process::exit(e.exit_code());
    }
}
