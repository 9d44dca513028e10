//! Rendering only: what the judge put in a [`crate::judge::Summary`] shown
//! in the terminal ([`terminal`]), as a self-contained page with charts
//! ([`html`]), its gates as JUnit XML for CI ([`junit`]), and `brunt
//! analyze`'s findings ([`analysis`]); a running load as it goes ([`live`]:
//! the live view and `brunt watch`; [`dashboard`]: the live page's data and
//! page); two runs side by side ([`compare`]).
//! Nothing here judges a run, and nothing opens a file: every renderer
//! takes the [`crate::judge::Summary`] and the data its caller read through
//! [`crate::rundir`] (the charts' [`crate::rundir::RunData`]); `report.html`
//! and the JUnit file are written through `rundir`. The tables' rows are
//! laid out once for the terminal and the page (`table`). The one verdict
//! made here is `compare --fail-if`'s, on two runs' figures that only the
//! comparison has.

pub mod analysis;
pub mod compare;
pub mod dashboard;
pub mod html;
pub mod junit;
pub mod live;
mod table;
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
