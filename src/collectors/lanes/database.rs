//! The database probes' share of a lane (`collectors/postgres.yaml`): the
//! `{psql}` / `{db_*}` placeholders, the password sent on the command's
//! standard input (never on its command line, never into the run
//! directory), the check before the load that the database answers, and
//! the gaps while it does not (a database gone mid-run is a gap of its
//! probe, never a stall of the load).

use super::{Lane, Probe};
use crate::collectors::definition::{render, ProbeDef};
use crate::collectors::error::CollectorError;
use crate::collectors::transport::{ExecOutput, Transport};
use crate::collectors::GapInfo;
use crate::profile::collectors::DatabaseConfig;

/// Where a database probe has been failing since.
pub(super) struct ProbeDown {
    from_t: f64,
    reason: String,
    missed: u64,
}

/// The value of a `collectors.database` placeholder.
pub(crate) fn db_value(db: Option<&DatabaseConfig>, name: &str) -> Option<String> {
    let db = db?;
    Some(match name {
        "psql" => db.psql.clone(),
        "db_host" => db.host.clone(),
        "db_port" => db.port.to_string(),
        "db_user" => db.user.clone(),
        "db_name" => db.dbname.clone(),
        _ => return None,
    })
}

/// The password line followed by the probe's `input`.
fn stdin_of(input: &str, password: &str) -> Vec<u8> {
    let mut v = Vec::with_capacity(password.len() + 1 + input.len());
    v.extend_from_slice(password.as_bytes());
    v.push(b'\n');
    v.extend_from_slice(input.as_bytes());
    v
}

/// Run a probe's filled `cmd`, its `input` (with the password line) on
/// standard input when it has one.
pub(super) fn exec_probe(
    t: &mut dyn Transport,
    def: &ProbeDef,
    cmd: &str,
    password: &str,
) -> Result<ExecOutput, CollectorError> {
    match &def.input {
        Some(input) => t.exec_input(cmd, &stdin_of(input, password)),
        None => t.exec(cmd),
    }
}

/// Before the load: run each enabled database probe once and refuse to
/// start when the database answers with an error (a bad password, an
/// unknown role or database, nothing listening): the user learns it now,
/// not from an empty report. A broken link to the host is not judged here
/// (the lanes reconnect and record a gap).
pub(crate) fn preflight(
    t: &mut dyn Transport,
    defs: &[crate::collectors::definition::Definition],
    db: Option<&DatabaseConfig>,
    password: &str,
) -> Result<(), CollectorError> {
    // SSH connects lazily; an unreachable host is the lanes' gap, not an error here.
    if !t.is_connected() && t.reconnect().is_err() {
        return Ok(());
    }
    for p in defs
        .iter()
        .flat_map(|d| &d.probes)
        .filter(|p| p.enabled() && p.uses_database())
    {
        let cmd = render(&p.command, &|k| db_value(db, k));
        let res = exec_probe(t, p, &cmd, password).and_then(|o| o.check(&cmd));
        match res {
            Ok(_) => {}
            Err(e) if e.is_link() => return Ok(()),
            Err(CollectorError::Command { stderr, .. }) => {
                return Err(CollectorError::Database(format!(
                    "probe {} could not query the database before the load: {stderr}",
                    p.name
                )))
            }
            Err(e) => {
                return Err(CollectorError::Database(format!(
                    "probe {} could not query the database before the load: {e}",
                    p.name
                )))
            }
        }
    }
    Ok(())
}

impl Lane {
    /// A database probe's outcome: a failure opens (or extends) its gap,
    /// a success closes it.
    pub(super) fn db_outcome(&mut self, i: usize, err: Option<&CollectorError>) {
        let now = self.now();
        let p: &mut Probe = &mut self.probes[i];
        match (err, p.down.as_mut()) {
            (Some(_), Some(d)) => d.missed += 1,
            (Some(e), None) => {
                p.down = Some(ProbeDown {
                    from_t: now,
                    reason: e.to_string(),
                    missed: 1,
                })
            }
            (None, Some(_)) => self.close_db_gap(i, now, ""),
            (None, None) => {}
        }
    }

    /// Record probe `i`'s open gap as ending at `to_t`.
    pub(super) fn close_db_gap(&mut self, i: usize, to_t: f64, note: &str) {
        if let Some(d) = self.probes[i].down.take() {
            self.rep.gaps.push(GapInfo {
                lane: self.lane.to_string(),
                from_t: d.from_t,
                to_t,
                reason: format!("{}{note}", d.reason),
                missed: d.missed,
                probe: Some(self.probes[i].def.name.clone()),
            });
        }
    }
}
