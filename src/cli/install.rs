//! What an installed membw brings besides itself: shell completion and man
//! pages, both from the command-line definition.

use super::common::print;
use crate::error::{Error, Result};
use std::path::Path;

/// `membw completions SHELL`: the completion script on stdout.
pub(crate) fn completions(shell: clap_complete::Shell) -> Result<()> {
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut super::command(), "membw", &mut out);
    print(out)
}

/// `membw man`: the main page on stdout; with a directory, it and one page
/// per subcommand (the pages the main page names) written there.
pub(crate) fn man(dir: Option<&Path>) -> Result<()> {
    if let Some(dir) = dir {
        std::fs::create_dir_all(dir)
            .and_then(|()| clap_mangen::generate_to(super::command(), dir))
            .map_err(|e| Error::Runtime(format!("{}: {e}", dir.display())))?;
        crate::say!("membw: man pages in {} (man membw-run)", dir.display());
        return Ok(());
    }
    let mut out = Vec::new();
    clap_mangen::Man::new(super::command())
        .render(&mut out)
        .map_err(|e| Error::Runtime(format!("rendering the man page: {e}")))?;
    print(out)
}
