//! The built-in demo target as a run sees it: it lives inside brunt, so
//! the collectors find it here, not by a process name.

use crate::profile::collectors::{CollectorsConfig, TransportKind};

/// The built-in target runs inside brunt: local collectors that name no
/// process watch this one (the demo's, the generator's too) and the demo's
/// port, so a shipped profile's server side is seen out of the box.
pub(super) fn watch(c: &mut CollectorsConfig, port: u16) {
    let t = &mut c.target;
    let local = c.transport.kind == TransportKind::Local && c.transport.prefix.is_empty();
    if local
        && !c.collect.is_empty()
        && t.pid.is_none()
        && t.pgrep.is_none()
        && t.jcmd_match.is_none()
    {
        t.pid = Some(std::process::id());
        t.port.get_or_insert(port);
    }
}
