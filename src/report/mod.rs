//! Rendering only: what the judge put in a [`crate::judge::Summary`] shown
//! in the terminal ([`terminal`]), as a self-contained page with charts
//! ([`html`]), two runs side by side with a regression gate ([`compare`]), the gates
//! as JUnit XML for CI ([`junit`]), and `brunt analyze`'s
//! findings ([`analysis`]). Nothing here judges, and nothing re-reads the
//! run directory behind the judge's back: the HTML charts read the files
//! the summary describes through [`crate::rundir`].

pub mod analysis;
pub mod compare;
pub mod html;
pub mod junit;
pub mod live;
pub mod terminal;

use std::path::PathBuf;

use thiserror::Error;

#[derive(Debug, Error)]
pub enum ReportError {
    #[error("report.html: {0}")]
    Html(String),
    #[error("JUnit report: {0}")]
    Junit(String),
    #[error(transparent)]
    Rundir(#[from] crate::rundir::RundirError),
    #[error(transparent)]
    Hlog(#[from] crate::metrics::hlog::HlogError),
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}
