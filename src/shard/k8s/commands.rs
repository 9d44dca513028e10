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
    let late = opts.max_late.as_secs().max(1);
    let mut c = format!(
        "# brunt k8s: {n} shards starting together at {when} (--start-at {start_at}),\n\
         # fixed when this was generated: then + --start-delay {delay}s. Generate and apply\n\
         # in one pipeline, so the delay goes to scheduling pods and pulling the image:\n\
         #\n\
         #   {gen} | tee {file} | kubectl apply -f -\n\
         #\n\
         # A shard ready more than {late}s after the start refuses to run (exit 3, the reason\n\
         # in exit-codes/shard-I) rather than skew the merge: then delete and run the pipeline again.\n"
    );
    if let Some(sec) = &opts.secret {
        let names: Vec<&str> = plan.env.iter().map(|(n, _)| n.as_str()).collect();
        if !names.is_empty() {
            let lits: Vec<String> = names
                .iter()
                .map(|v| format!("--from-literal={v}=…"))
                .collect();
            let _ = write!(
                c,
                "# The Secret {sec} holds the profile's environment ({}), e.g.:\n\
                 #   kubectl -n {ns} create secret generic {sec} {}\n",
                names.join(", "),
                lits.join(" ")
            );
        }
    }
    c.push_str("#\n");
    match &opts.results_pvc {
        None => {
            let last = n - 1;
            let _ = write!(
                c,
                "#   # every shard has finished when all {n} pods are Ready:\n\
                 #   kubectl -n {ns} wait job/{job} --for=jsonpath='{{.status.ready}}'={n} --timeout={wait}s\n\
                 #   mkdir -p {job}/exit-codes\n\
                 #   for i in $(seq 0 {last}); do\n\
                 #     pod=$(kubectl -n {ns} get pods -l batch.kubernetes.io/job-name={job},batch.kubernetes.io/job-completion-index=$i -o jsonpath='{{.items[0].metadata.name}}')\n\
                 #     kubectl -n {ns} cp \"$pod:/results/shard-$((i + 1))\" \"{job}/shard-$((i + 1))\"\n\
                 #     kubectl -n {ns} cp \"$pod:/results/exit-codes/shard-$((i + 1))\" \"{job}/exit-codes/shard-$((i + 1))\"\n\
                 #     kubectl -n {ns} exec \"$pod\" -- touch /results/.collected\n\
                 #   done\n\
                 #   kubectl -n {ns} wait job/{job} --for=condition=complete --timeout=120s\n"
            );
        }
        Some(_) => {
            let root = results_root(opts, start_at);
            let _ = write!(
                c,
                "#   kubectl -n {ns} wait job/{job} --for=condition=complete --timeout={wait}s\n\
                 #   kubectl -n {ns} wait pod/{job}-gather --for=condition=Ready --timeout=120s\n\
                 #   kubectl -n {ns} cp {job}-gather:{root} {job}\n"
            );
        }
    }
    let _ = write!(
        c,
        "#   cat {job}/exit-codes/*   # 0 or 99 each; 3 = refused, started late\n\
         #   brunt merge {job}/shard-* --out {job}/merged\n\
         #   kubectl delete -f {file}\n"
    );
    c
}
