//! `brunt completions SHELL`, `brunt man` and `brunt schema`: shell
//! completions (`clap_complete`) and a man page (`clap_mangen`) generated
//! from the same argument definitions the CLI parses, and the profiles'
//! JSON Schema from the profile's own types, so none drifts from its source.

use clap::CommandFactory;

use super::out::out;
use super::{Cli, Failure};

/// Completions for `shell` on stdout.
pub fn completions(shell: clap_complete::Shell) -> Result<i32, Failure> {
    let mut cmd = Cli::command();
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut cmd, "brunt", &mut buf);
    out!("{}", String::from_utf8_lossy(&buf));
    Ok(0)
}

/// The man page (roff) on stdout, subcommands included.
pub fn man() -> Result<i32, Failure> {
    let cmd = Cli::command();
    let mut buf = Vec::new();
    clap_mangen::Man::new(cmd.clone())
        .render(&mut buf)
        .map_err(|e| Failure::Other(anyhow::anyhow!("man page: {e}")))?;
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        // One section per subcommand, after the top page.
        clap_mangen::Man::new(sub.clone())
            .title(format!("brunt-{}", sub.get_name()))
            .render(&mut buf)
            .map_err(|e| Failure::Other(anyhow::anyhow!("man page: {e}")))?;
    }
    out!("{}", String::from_utf8_lossy(&buf));
    Ok(0)
}

/// The profiles' JSON Schema on stdout.
pub fn schema() -> Result<i32, Failure> {
    out!("{}\n", crate::profile::schema::profile_schema());
    Ok(0)
}
