//! `brunt k8s`: its arguments and the manifest it prints (the manifest
//! itself is `shard::k8s`'s).

use super::out::out;
use std::path::PathBuf;

use super::{flag_duration, shard_failure, Failure};
use crate::vocab::exit;

#[derive(clap::Args)]
pub struct K8sArgs {
    profile: PathBuf,
    /// Number of shards (pods, each on its own node).
    #[arg(long)]
    shards: u32,
    /// The brunt image (build it with the Dockerfile at the repository top).
    #[arg(long)]
    image: String,
    #[arg(long, default_value = "default")]
    namespace: String,
    /// Time from now to the shared start: enough to schedule the pods and pull the image.
    #[arg(long, default_value = "60s")]
    start_delay: String,
    /// CPU request per shard.
    #[arg(long, default_value = "2")]
    cpu: String,
    /// Memory request and limit per shard.
    #[arg(long, default_value = "1Gi")]
    memory: String,
    /// A ReadWriteMany PersistentVolumeClaim for the run directories (default: an emptyDir per pod, fetched with kubectl cp).
    #[arg(long)]
    results_pvc: Option<String>,
    /// Without --results-pvc: how long a finished pod keeps its run directory for kubectl cp.
    #[arg(long, default_value = "30m")]
    hold: String,
    /// Job name (default brunt-<profile name>).
    #[arg(long)]
    job_name: Option<String>,
    /// The URL the shards load, overriding the profile's target.url (required when it is `builtin`).
    #[arg(long)]
    target: Option<String>,
    /// A Kubernetes Secret whose keys are the profile's {{ env.X }} variables (values never go into the manifest).
    #[arg(long)]
    secret: Option<String>,
    /// A shard ready later than this after the shared start refuses to run (exit 3) rather than skew the merge.
    #[arg(long, default_value = "5s")]
    max_late: String,
}

pub fn k8s(a: K8sArgs) -> Result<i32, Failure> {
    let opts = crate::shard::k8s::K8sOptions {
        namespace: a.namespace,
        start_delay: flag_duration("--start-delay", &a.start_delay)?,
        cpu: a.cpu,
        memory: a.memory,
        results_pvc: a.results_pvc,
        hold: flag_duration("--hold", &a.hold)?,
        job_name: a.job_name,
        target: a.target,
        secret: a.secret,
        max_late: flag_duration("--max-late", &a.max_late)?,
        ..crate::shard::k8s::K8sOptions::new(a.shards, &a.image)
    };
    let text = crate::shard::k8s::manifest(&a.profile, &opts).map_err(shard_failure)?;
    out!("{text}");
    Ok(exit::PASS)
}
