fn main() {
    if let Err(e) = membw::cli::main() {
        eprintln!("membw: error: {e}");
        std::process::exit(e.exit_code());
    }
}
