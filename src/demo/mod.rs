//! placeholder: replaced by the demo branch
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use std::time::Duration;
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DemoConfig {
    pub listen: SocketAddr,
    pub threads: usize,
    #[serde(with = "humantime_serde")]
    pub slow: Duration,
    #[serde(with = "humantime_serde")]
    pub contended_hold: Duration,
    pub shed_cap: usize,
    #[serde(with = "humantime_serde")]
    pub shed_work: Duration,
    #[serde(with = "humantime_serde")]
    pub stall_every: Option<Duration>,
    #[serde(with = "humantime_serde")]
    pub stall_for: Duration,
}
impl Default for DemoConfig {
    fn default() -> Self {
        DemoConfig { listen: ([127, 0, 0, 1], 0).into(), threads: 1, slow: Duration::from_millis(200), contended_hold: Duration::from_millis(2), shed_cap: 32, shed_work: Duration::from_millis(5), stall_every: None, stall_for: Duration::from_secs(1) }
    }
}
