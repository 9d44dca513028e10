//! The commands printed after the manifest, as YAML comments: generate and
//! apply in one pipeline, wait, gather the run directories, merge.

use std::fmt::Write as _;
use std::path::Path;

use super::documents::results_root;
use super::inputs::Plan;

/// A word for a shell command line in the printed comments: single-quoted
/// unless it is plainly safe.
fn sh_word(w: &str) -> String {
    if !w.is_empty()
        && w.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./:=@%+,".contains(&b))
    {
        w.to_string()
    } else {
        format!("'{}'", w.replace('\'', "'\\''"))
    }
}

/// The commands after the manifest. Every value in them was checked to be a
/// DNS label or a number, or is shell-quoted, so they are safe to paste.
pub(super) fn commands(plan: &Plan<'_>, profile_path: &Path) -> String {
    let (job, opts, start_at) = (plan.job.as_str(), plan.opts, plan.start_at);
    let ns = &opts.namespace;
    let n = opts.shards;
    let file = format!("{job}.yaml");
    let when = chrono::DateTime::from_timestamp(start_at as i64, 0)
        .map(|d| d.to_rfc3339())
        .unwrap_or_default();
    let delay = opts.start_delay.as_secs();
    let wait = delay + plan.run_secs + 600;
    // The command that made this manifest, to generate and apply in one go.
    let mut gen = format!(
        "brunt k8s {} --shards {n} --image {}",
        sh_word(&profile_path.display().to_string()),
        sh_word(&opts.image)
    );
    if ns != "default" {
        let _ = write!(gen, " --namespace {ns}");
    }
    if let Some(t) = &plan.target {
        let _ = write!(gen, " --target {}", sh_word(t));
    }
    if let Some(sec) = &opts.secret {
        let _ = write!(gen, " --secret {sec}");
    }
    if let Some(pvc) = &opts.results_pvc {
        let _ = write!(gen, " --results-pvc {pvc}");
    }
    if let Some(j) = &opts.job_name {
        let _ = write!(gen, " --job-name {j}");
    }
    let _ = write!(
        gen,
        " --cpu {} --memory {} --max-late {}s --start-delay {delay}s",
        sh_word(&opts.cpu),
        sh_word(&opts.memory),
        opts.max_late.as_secs().max(1)
    );
    let mut c = String::new();
    let _ = writeln!(
        c,
        "# brunt k8s: {n} shards starting together at {when} (--start-at {start_at}),"
    );
    let _ = writeln!(
        c,
        "# fixed when this was generated: then + --start-delay {delay}s. Generate and apply"
    );
    let _ = writeln!(
        c,
        "# in one pipeline, so the delay goes to scheduling pods and pulling the image:"
    );
    let _ = writeln!(c, "#");
    let _ = writeln!(c, "#   {gen} | tee {file} | kubectl apply -f -");
    let _ = writeln!(c, "#");
    let _ = writeln!(
        c,
        "# A shard ready more than {}s after the start refuses to run (exit 3, the reason",
        opts.max_late.as_secs().max(1)
    );
    let _ = writeln!(
        c,
        "# in exit-codes/shard-I) rather than skew the merge: then delete and run the pipeline again."
    );
    if let Some(sec) = &opts.secret {
        let names: Vec<&str> = plan.env.iter().map(|(n, _)| n.as_str()).collect();
        if !names.is_empty() {
            let _ = writeln!(
                c,
                "# The Secret {sec} holds the profile's environment ({}), e.g.:",
                names.join(", ")
            );
            let lits: Vec<String> = names
                .iter()
                .map(|v| format!("--from-literal={v}=…"))
                .collect();
            let _ = writeln!(
                c,
                "#   kubectl -n {ns} create secret generic {sec} {}",
                lits.join(" ")
            );
        }
    }
    let _ = writeln!(c, "#");
    match &opts.results_pvc {
        None => {
            let _ = writeln!(
                c,
                "#   # every shard has finished when all {n} pods are Ready:"
            );
            let _ = writeln!(
                c,
                "#   kubectl -n {ns} wait job/{job} --for=jsonpath='{{.status.ready}}'={n} --timeout={wait}s"
            );
            let _ = writeln!(c, "#   mkdir -p {job}/exit-codes");
            let _ = writeln!(c, "#   for i in $(seq 0 {}); do", n - 1);
            let _ = writeln!(
                c,
                "#     pod=$(kubectl -n {ns} get pods -l batch.kubernetes.io/job-name={job},batch.kubernetes.io/job-completion-index=$i -o jsonpath='{{.items[0].metadata.name}}')"
            );
            let _ = writeln!(
                c,
                "#     kubectl -n {ns} cp \"$pod:/results/shard-$((i + 1))\" \"{job}/shard-$((i + 1))\""
            );
            let _ = writeln!(
                c,
                "#     kubectl -n {ns} cp \"$pod:/results/exit-codes/shard-$((i + 1))\" \"{job}/exit-codes/shard-$((i + 1))\""
            );
            let _ = writeln!(
                c,
                "#     kubectl -n {ns} exec \"$pod\" -- touch /results/.collected"
            );
            let _ = writeln!(c, "#   done");
            let _ = writeln!(
                c,
                "#   kubectl -n {ns} wait job/{job} --for=condition=complete --timeout=120s"
            );
        }
        Some(_) => {
            let _ = writeln!(
                c,
                "#   kubectl -n {ns} wait job/{job} --for=condition=complete --timeout={wait}s"
            );
            let _ = writeln!(
                c,
                "#   kubectl -n {ns} wait pod/{job}-gather --for=condition=Ready --timeout=120s"
            );
            let root = results_root(opts, start_at);
            let _ = writeln!(c, "#   kubectl -n {ns} cp {job}-gather:{root} {job}");
        }
    }
    let _ = writeln!(
        c,
        "#   cat {job}/exit-codes/*   # 0 or 99 each; 3 = refused, started late"
    );
    let _ = writeln!(c, "#   brunt merge {job}/shard-* --out {job}/merged");
    let _ = writeln!(c, "#   kubectl delete -f {file}");
    c
}
