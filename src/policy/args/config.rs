//! Options a modelled program takes from a file or a variable no word of the command
//! names, in the bridge's environment, which its agent inherits: ripgrep's
//! `RIPGREP_CONFIG_PATH` (a user's `--hidden` or `--follow` there makes `rg SECRET` read
//! `.env`). They are read as the program reads them, before the command's own words.

use std::ffi::OsString;
use std::path::Path;

/// The environment a model or a lookup reads (the bridge's, which its agent inherits).
pub(crate) type Env<'a> = &'a dyn Fn(&str) -> Option<OsString>;

/// The arguments ripgrep reads from the file `RIPGREP_CONFIG_PATH` names, as ripgrep reads
/// them: each line one argument, trimmed of white space; empty lines and lines starting
/// with `#` skipped. None when the variable is unset or empty, or the file is not there
/// (ripgrep then reads none). A file that cannot be read whole (not a regular file, more
/// than 1 MiB, not UTF-8, a FIFO, which is never waited on) is an error: it may hold
/// anything.
pub(crate) fn ripgrep(env: Env<'_>) -> Result<Vec<String>, String> {
    let Some(path) = env("RIPGREP_CONFIG_PATH").filter(|p| !p.is_empty()) else {
        return Ok(Vec::new());
    };
    let path = Path::new(&path);
    let bytes = match crate::policy::file::bounded::read_file(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => {
            return Err(format!(
                "ripgrep's configuration file {} (RIPGREP_CONFIG_PATH) cannot be read: {e}",
                path.display()
            ))
        }
    };
    let text = String::from_utf8(bytes).map_err(|_| {
        format!(
            "ripgrep's configuration file {} (RIPGREP_CONFIG_PATH) is not UTF-8",
            path.display()
        )
    })?;
    Ok(text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_owned)
        .collect())
}
