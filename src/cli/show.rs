//! The end of a run as the CLI prints it: the summary (PASS/FAIL in colour
//! on a terminal, honouring `NO_COLOR` and `--plain`), where the run
//! directory is, and the report as a `file://` URL a terminal can open.

use std::io::IsTerminal;
use std::path::Path;

use super::out::{out, outln};
use crate::judge::Summary;
use crate::report::{html::REPORT_FILE, terminal, width};

/// Colour on stdout: a terminal, no `NO_COLOR` (any non-empty value,
/// <https://no-color.org>), not `--plain`.
pub fn colour_on(plain: bool) -> bool {
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    !plain && !no_color && std::io::stdout().is_terminal()
}

/// The summary, coloured when `colour`.
pub fn summary(s: &Summary, colour: bool) {
    let text = terminal::render(s);
    if colour {
        out!("{}", width::colour(&text));
    } else {
        out!("{text}");
    }
}

/// `run directory: DIR` (when `dir` is given) and `report: file:///…`
/// when the page is there.
pub fn paths(run_dir: Option<&Path>, dir: &Path) {
    if let Some(d) = run_dir {
        outln!("run directory: {}", d.display());
    }
    let html = dir.join(REPORT_FILE);
    if html.exists() {
        outln!("report: {}", file_url(&html));
    }
}

/// An absolute `file://` URL of `path`, with the characters a URL cannot
/// hold percent-encoded.
pub fn file_url(path: &Path) -> String {
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut url = String::from("file://");
    for b in abs.to_string_lossy().bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            url.push(b as char);
        } else {
            url.push_str(&format!("%{b:02X}"));
        }
    }
    url
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_urls_are_absolute_and_encoded() {
        assert_eq!(
            file_url(Path::new("/tmp/a run/report.html")),
            "file:///tmp/a%20run/report.html"
        );
        let rel = file_url(Path::new("r1/report.html"));
        assert!(
            rel.starts_with("file:///") && rel.ends_with("/r1/report.html"),
            "{rel}"
        );
    }
}
