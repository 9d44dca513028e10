//! `brunt k8s` without a cluster: the manifest is parsed as YAML (and checked
//! against the Kubernetes schemas by `kubernetes-validate`), its ConfigMap is
//! laid out as the pod would see it, and the shard script the Job runs is run
//! as local processes against the built-in demo target on 127.0.0.1 (only
//! the mount points `/profile` and `/results` are moved into a temporary
//! directory). Every load is bounded: 20 requests over 1 s per run. The
//! manifest's documents are checked field by field too (the Job, its pods'
//! control subdomain and Service, the gather pod with a shared claim).

#[path = "support/load.rs"]
mod load;

#[path = "support/cmd.rs"]
mod cmd;
use cmd::{brunt, out as text};

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

use brunt::demo::DemoConfig;
use brunt::shard::k8s::{manifest, K8sOptions};

const PROFILE: &str = r#"name: k8s-local
target:
  url: builtin
  headers: { Authorization: "Bearer {{ env.API_TOKEN }}" }
feeders:
  users: { file: data/users.csv, mode: unique }
requests:
  - path: "/cache/{{ feeder.users.id }}"
load: { model: open, workers: 1, connections: 8 }
shape: { constant: { rate: 20/s, duration: 1s } }
"#;

/// A profile directory with a 40-row feeder beside the profile.
fn profile_dir(root: &Path) -> PathBuf {
    std::fs::create_dir_all(root.join("data")).expect("mkdir");
    let mut csv = String::from("id,name\n");
    for i in 1..=40 {
        csv.push_str(&format!("u{i},user {i}\n"));
    }
    std::fs::write(root.join("data/users.csv"), csv).expect("write feeder");
    let p = root.join("shop.yaml");
    std::fs::write(&p, PROFILE).expect("write profile");
    p
}

fn docs(m: &str) -> Vec<serde_json::Value> {
    serde_saphyr::from_str_multiple::<serde_json::Value, _>(m).expect("manifest parses as YAML")
}

fn container(job: &serde_json::Value) -> &serde_json::Value {
    &job["spec"]["template"]["spec"]["containers"][0]
}

fn unix(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .expect("clock after 1970")
        .as_secs()
}

/// Lay the ConfigMap out as the pod's `/profile` volume (its `items`), under `dir`.
fn mount_config_map(docs: &[serde_json::Value], dir: &Path) {
    use base64::Engine as _;
    let cm = &docs[0];
    let job = &docs[1];
    let vol = &job["spec"]["template"]["spec"]["volumes"][0]["configMap"];
    for item in vol["items"].as_array().expect("configMap items") {
        let key = item["key"].as_str().expect("key");
        let path = dir.join(item["path"].as_str().expect("path"));
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        let bytes = match cm["data"][key].as_str() {
            Some(t) => t.as_bytes().to_vec(),
            None => base64::engine::general_purpose::STANDARD
                .decode(cm["binaryData"][key].as_str().expect("binary key"))
                .expect("base64"),
        };
        std::fs::write(path, bytes).expect("write mounted file");
    }
}

/// Run the Job's script for completion index `index` as a local process:
/// `/profile` and `/results` moved under `root`, `brunt` on the PATH, the
/// container's env plus `extra_env` (what the Secret would provide).
fn run_shard(
    job: &serde_json::Value,
    root: &Path,
    index: u32,
    extra_env: &[(&str, &str)],
) -> std::process::Child {
    let c = container(job);
    let script = c["command"][2].as_str().expect("script");
    let script = script
        .replace("/profile/", &format!("{}/profile/", root.display()))
        .replace("/results", &format!("{}/results", root.display()));
    let bin = root.join("bin");
    std::fs::create_dir_all(&bin).expect("mkdir bin");
    let link = bin.join("brunt");
    if !link.exists() {
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_brunt"), &link).expect("symlink brunt");
    }
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(script)
        .env("PATH", path)
        .env("JOB_COMPLETION_INDEX", index.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    for e in c["env"].as_array().into_iter().flatten() {
        cmd.env(
            e["name"].as_str().expect("env name"),
            e["value"].as_str().expect("env value"),
        );
    }
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    cmd.spawn().expect("sh runs")
}

#[test]
fn shards_run_from_the_manifest_with_its_feeders_target_and_secret() {
    let _g = load::serial();
    let server = load::demo(DemoConfig::default());
    let tmp = tempfile::tempdir().expect("tmp");
    let profile = profile_dir(&tmp.path().join("src"));
    let opts = K8sOptions {
        start_delay: Duration::from_secs(4),
        target: Some(server.base_url()),
        secret: Some("shop-env".into()),
        results_pvc: Some("results".into()),
        ..K8sOptions::new(2, "registry.example.com/brunt:1")
    };
    let text_m = manifest(&profile, &opts).expect("manifest");
    let path = tmp.path().join("m.yaml");
    std::fs::write(&path, &text_m).expect("write");
    validate(&path);
    let d = docs(&text_m);
    let (cm, job) = (&d[0], &d[1]);
    // The feeder travels in the ConfigMap, byte for byte.
    let csv = std::fs::read_to_string(tmp.path().join("src/data/users.csv")).expect("csv");
    assert_eq!(cm["data"]["feeder-users.csv"], csv.as_str());
    // Secrets by reference only; the target as an env value, not shell text.
    let c = container(job);
    assert_eq!(c["envFrom"][0]["secretRef"]["name"], "shop-env");
    assert_eq!(c["env"][0]["name"], "BRUNT_TARGET");
    assert_eq!(c["env"][0]["value"], server.base_url().as_str());
    let script = c["command"][2].as_str().expect("script");
    assert!(script.contains("--target \"$BRUNT_TARGET\""), "{script}");
    assert!(
        script.contains("--set feeders.users.file=feeders/users.csv"),
        "{script}"
    );
    assert!(script.contains("--max-late 5s"), "{script}");
    // The pipeline that generates and applies at once, with its delay.
    assert!(
        text_m.contains("--start-delay 4s | tee brunt-k8s-local.yaml | kubectl apply -f -"),
        "{text_m}"
    );
    assert!(
        text_m.contains(
            "kubectl -n default create secret generic shop-env --from-literal=API_TOKEN=…"
        ),
        "{text_m}"
    );

    // Run both shards as the pods would, at the agreed start.
    let root = tmp.path().join("pod");
    mount_config_map(&d, &root.join("profile"));
    let secret = [("API_TOKEN", "s3cret-value-42")];
    let children: Vec<_> = (0..2).map(|i| run_shard(job, &root, i, &secret)).collect();
    for (i, ch) in children.into_iter().enumerate() {
        let o = ch.wait_with_output().expect("shard finishes");
        assert_eq!(o.status.code(), Some(0), "shard {i}: {}", text(&o));
    }
    let at = unix(opts.now) + 4;
    let results = root.join(format!("results/{at}"));
    for i in 1..=2 {
        let code = std::fs::read_to_string(results.join(format!("exit-codes/shard-{i}")))
            .expect("exit code file");
        assert_eq!(code.trim(), "0", "shard {i}");
        let meta: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(results.join(format!("shard-{i}/run.json")))
                .expect("run.json"),
        )
        .expect("run.json parses");
        assert_eq!(meta["start_at"].as_f64(), Some(at as f64));
        assert_eq!(meta["shard_index"], i - 1);
    }
    // Each of the 20 requests took its own row of the shipped feeder.
    let counts = server.cache_counts();
    assert_eq!(counts.len(), 20, "{counts:?}");
    assert!(
        counts.iter().all(|(k, n)| k.starts_with('u') && *n == 1),
        "{counts:?}"
    );
    // The secret's value is in no file the shards wrote.
    for e in walk(&results) {
        let bytes = std::fs::read(&e).expect("read");
        assert!(
            !String::from_utf8_lossy(&bytes).contains("s3cret-value-42"),
            "secret in {}",
            e.display()
        );
    }
    let o = brunt()
        .arg("merge")
        .arg(results.join("shard-1"))
        .arg(results.join("shard-2"))
        .arg("--out")
        .arg(tmp.path().join("merged"))
        .output()
        .expect("merge");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).expect("read dir").flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn a_shard_that_starts_late_refuses_to_run_and_says_why() {
    let _g = load::serial();
    let server = load::demo(DemoConfig::default());
    let tmp = tempfile::tempdir().expect("tmp");
    let profile = profile_dir(&tmp.path().join("src"));
    // Generated 20 s ago with a 3 s delay: the start was 17 s ago.
    let opts = K8sOptions {
        now: SystemTime::now() - Duration::from_secs(20),
        start_delay: Duration::from_secs(3),
        target: Some(server.base_url()),
        secret: Some("shop-env".into()),
        results_pvc: Some("results".into()),
        ..K8sOptions::new(2, "brunt:1")
    };
    let d = docs(&manifest(&profile, &opts).expect("manifest"));
    let root = tmp.path().join("pod");
    mount_config_map(&d, &root.join("profile"));
    let o = run_shard(&d[1], &root, 0, &[("API_TOKEN", "x")])
        .wait_with_output()
        .expect("shard ends");
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("more than --max-late 5s: refusing to run"),
        "{err}"
    );
    let at = unix(opts.now) + 3;
    let results = root.join(format!("results/{at}"));
    let code = std::fs::read_to_string(results.join("exit-codes/shard-1")).expect("exit code file");
    assert!(
        code.starts_with(&format!(
            "3 refused: ready more than 5s after --start-at {at}"
        )),
        "{code}"
    );
    assert!(
        !results.join("shard-1/run.json").exists(),
        "nothing was run"
    );
    assert!(server.cache_counts().is_empty(), "nothing was sent");
}

#[test]
fn brunt_run_max_late_needs_start_at_and_refuses_a_late_start() {
    let _g = load::serial();
    let server = load::demo(DemoConfig::default());
    let tmp = tempfile::tempdir().expect("tmp");
    let profile = profile_dir(tmp.path());
    let past = (unix(SystemTime::now()) - 30).to_string();
    let o = brunt()
        .arg("run")
        .arg(&profile)
        .args(["--target", &server.base_url(), "--env", "API_TOKEN=x"])
        .args(["--start-at", &past, "--max-late", "5s", "--quiet"])
        .arg("--out")
        .arg(tmp.path().join("run"))
        .output()
        .expect("brunt run");
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    assert!(server.cache_counts().is_empty());
    // Within the limit it runs.
    let now = unix(SystemTime::now()).to_string();
    let o = brunt()
        .arg("run")
        .arg(&profile)
        .args(["--target", &server.base_url(), "--env", "API_TOKEN=x"])
        .args(["--start-at", &now, "--max-late", "5s", "--quiet"])
        .arg("--out")
        .arg(tmp.path().join("run2"))
        .output()
        .expect("brunt run");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = brunt()
        .arg("run")
        .arg(&profile)
        .args(["--max-late", "5s"])
        .output()
        .expect("brunt run");
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}

#[test]
fn k8s_refuses_what_would_run_wrong() {
    let tmp = tempfile::tempdir().expect("tmp");
    let profile = profile_dir(tmp.path());
    let k8s = |extra: &[&str]| {
        brunt()
            .arg("k8s")
            .arg(&profile)
            .args(["--shards", "2", "--image", "brunt:1"])
            .args(extra)
            .output()
            .expect("brunt k8s")
    };
    // builtin without --target.
    let o = k8s(&["--secret", "s"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("the target is `builtin`"), "{}", text(&o));
    // An env var without a default and no Secret.
    let o = k8s(&["--target", "http://127.0.0.1:9"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("reads API_TOKEN from the environment")
            && text(&o).contains("--secret NAME"),
        "{}",
        text(&o)
    );
    for bad in [
        vec!["--target", "http://127.0.0.1:99999", "--secret", "s"],
        vec!["--target", "http://127.0.0.1:9", "--secret", "Not A Name"],
        vec![
            "--target",
            "http://127.0.0.1:9",
            "--secret",
            "s",
            "--max-late",
            "0s",
        ],
    ] {
        let o = k8s(&bad);
        assert_eq!(o.status.code(), Some(2), "{bad:?}: {}", text(&o));
    }
    let ok = ["--target", "http://127.0.0.1:9", "--secret", "s"];
    assert_eq!(k8s(&ok).status.code(), Some(0));
    // A feeder past what a ConfigMap holds.
    let big = "id,name\n".to_string() + &"u1,someone with a long name\n".repeat(40_000);
    std::fs::write(tmp.path().join("data/users.csv"), big).expect("write");
    let o = k8s(&ok);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("over the 1000000 a ConfigMap can carry"),
        "{}",
        text(&o)
    );
    // Bytes that are not text travel as binaryData.
    std::fs::write(tmp.path().join("data/users.csv"), b"id\n\xff\xfe\n").expect("write");
    let o = k8s(&ok);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let d = docs(&String::from_utf8_lossy(&o.stdout));
    assert_eq!(d[0]["binaryData"]["feeder-users.csv"], "aWQK//4K");
}

const K8S_PROFILE: &str = r#"
name: "Checkout: peak's & \"quotes\""
target: { url: "https://staging.example.com" }
requests: [ { path: "/api/items/7?x='1'" } ]
shape: { constant: { rate: 2000/s, duration: 10m } }
budgets: [ "p99 < 500ms" ]
"#;

fn k8s(profile: &Path, extra: &[&str]) -> String {
    let o = brunt()
        .arg("k8s")
        .arg(profile)
        .args(["--shards", "4", "--image", "registry.example.com/brunt:0.1"])
        .args(extra)
        .output()
        .expect("brunt k8s");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    String::from_utf8(o.stdout).expect("utf-8 manifest")
}

/// `kubernetes-validate` (PyPI, ships the API schemas, works offline), run
/// as a module of the `python3` that `tests/setup.sh` installed it into.
fn validate(manifest: &Path) {
    let o = Command::new("python3")
        .args(["-m", "kubernetes_validate", "--strict", "--kubernetes-version", "1.37.0"])
        .arg(manifest)
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "kubernetes-validate not runnable ({e}): install it with `pip install kubernetes-validate==1.37.0` (tests/setup.sh does)"
            )
        });
    assert!(
        o.status.success(),
        "{}\n(if kubernetes_validate is missing: pip install kubernetes-validate==1.37.0, as tests/setup.sh does)",
        text(&o)
    );
    assert!(
        text(&o).contains("passed for resource job/"),
        "{}",
        text(&o)
    );
}

fn start_at_of(script: &str) -> u64 {
    script
        .split("--start-at ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no --start-at number in {script}"))
}

#[test]
fn k8s_manifest_is_a_valid_indexed_job_of_the_shards() {
    let d = tempfile::tempdir().expect("tempdir");
    let profile = d.path().join("checkout.yaml");
    std::fs::write(&profile, K8S_PROFILE).expect("write");
    let before = unix(SystemTime::now());
    let manifest = k8s(&profile, &["--start-delay", "90s", "--namespace", "load"]);
    let path = d.path().join("k8s.yaml");
    std::fs::write(&path, &manifest).expect("write");
    validate(&path);

    let docs: Vec<serde_json::Value> =
        serde_saphyr::from_str_multiple::<serde_json::Value, _>(&manifest)
            .expect("manifest parses as YAML");
    // ConfigMap, Job, the shards' control Service.
    assert_eq!(docs.len(), 3, "{manifest}");
    assert_eq!(docs[2]["kind"], "Service");
    assert_eq!(docs[2]["spec"]["clusterIP"], "None");
    let (cm, job) = (&docs[0], &docs[1]);
    assert_eq!(cm["kind"], "ConfigMap");
    // The profile travels byte for byte, however it is quoted.
    assert_eq!(cm["data"]["profile.yaml"], K8S_PROFILE);
    assert_eq!(job["kind"], "Job");
    assert_eq!(job["metadata"]["namespace"], "load");
    let name = job["metadata"]["name"].as_str().expect("job name");
    assert_eq!(name, "brunt-checkout-peak-s-quotes");
    let spec = &job["spec"];
    assert_eq!(spec["completionMode"], "Indexed");
    assert_eq!(spec["completions"], 4);
    assert_eq!(spec["parallelism"], 4);
    let pod = &spec["template"]["spec"];
    let anti =
        &pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0];
    assert_eq!(anti["topologyKey"], "kubernetes.io/hostname");
    let c = &pod["containers"][0];
    assert_eq!(c["image"], "registry.example.com/brunt:0.1");
    assert_eq!(c["resources"]["requests"]["cpu"], "2");
    assert_eq!(c["resources"]["requests"]["memory"], "1Gi");
    let script = c["command"][2].as_str().expect("script");
    assert!(
        script.contains("i=$((JOB_COMPLETION_INDEX + 1))"),
        "{script}"
    );
    assert!(
        script.contains("brunt run /profile/profile.yaml --shard \"$i/4\" --control brunt-checkout-peak-s-quotes-0.brunt-checkout-peak-s-quotes-control:5670"),
        "{script}"
    );
    assert_eq!(
        pod["subdomain"], "brunt-checkout-peak-s-quotes-control",
        "pod 0's name resolves under the Service"
    );
    assert!(
        script.contains("--out \"/results/shard-$i\" --plain"),
        "{script}"
    );
    let at = start_at_of(script);
    assert!(
        (before + 89..=unix(SystemTime::now()) + 91).contains(&at),
        "start {at}"
    );
    assert_eq!(pod["volumes"][1]["emptyDir"], serde_json::json!({}));
    // The commands to finish the job follow as comments.
    for want in [
        "| tee brunt-checkout-peak-s-quotes.yaml | kubectl apply -f -",
        "--start-delay 90s",
        "kubectl -n load wait job/brunt-checkout-peak-s-quotes --for=condition=complete",
        "kubectl -n load cp",
        "#   brunt merge brunt-checkout-peak-s-quotes/shard-* --out",
    ] {
        assert!(manifest.contains(want), "missing {want:?} in\n{manifest}");
    }

    // With a shared claim: a gather pod instead of kubectl cp from each shard.
    let manifest = k8s(
        &profile,
        &[
            "--results-pvc",
            "brunt-results",
            "--cpu",
            "3500m",
            "--memory",
            "2Gi",
        ],
    );
    let path = d.path().join("k8s-pvc.yaml");
    std::fs::write(&path, &manifest).expect("write");
    validate(&path);
    let docs: Vec<serde_json::Value> =
        serde_saphyr::from_str_multiple::<serde_json::Value, _>(&manifest).expect("YAML");
    assert_eq!(docs.len(), 4);
    let pod = &docs[1]["spec"]["template"]["spec"];
    assert_eq!(
        pod["volumes"][1]["persistentVolumeClaim"]["claimName"],
        "brunt-results"
    );
    assert_eq!(
        pod["containers"][0]["resources"]["requests"]["cpu"],
        "3500m"
    );
    assert_eq!(docs[2]["kind"], "Pod");
    // On a shared claim each run writes under its own start time.
    let script = pod["containers"][0]["command"][2].as_str().expect("script");
    let at = start_at_of(script);
    assert!(
        script.contains(&format!("--out \"/results/{at}/shard-$i\"")),
        "{script}"
    );
    assert!(
        manifest.contains(&format!("-gather:/results/{at} ")),
        "{manifest}"
    );

    // Bad arguments exit 2.
    for bad in [
        vec!["--namespace", "Not_A_Label"],
        vec!["--cpu", "lots"],
        vec!["--start-delay", "soon"],
        vec!["--results-pvc", "a b"],
        vec!["--hold", "0s"],
    ] {
        let o = brunt()
            .arg("k8s")
            .arg(&profile)
            .args(["--shards", "4", "--image", "brunt:1"])
            .args(&bad)
            .output()
            .expect("brunt k8s");
        assert_eq!(o.status.code(), Some(2), "{bad:?}: {}", text(&o));
    }
}
