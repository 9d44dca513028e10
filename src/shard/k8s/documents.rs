//! The documents of the manifest as YAML trees: the ConfigMap with the
//! profile and feeders, the Indexed Job (pod template, volumes, the shard's
//! container and script) and, with a results claim, the gather pod.

use std::fmt::Write as _;

use super::inputs::Plan;
use super::yaml::{m, s, Y};
use super::K8sOptions;

/// The port of shard 1's stop endpoint.
const CONTROL_PORT: u16 = 5670;

/// The Dockerfile's non-root user; `fsGroup` makes the results volume writable for it.
fn pod_security() -> Y {
    m([
        ("runAsNonRoot", Y::B(true)),
        ("runAsUser", Y::I(10001)),
        ("runAsGroup", Y::I(10001)),
        ("fsGroup", Y::I(10001)),
    ])
}

impl Plan<'_> {
    /// No results claim: each pod keeps its run directory in an emptyDir.
    pub(super) fn emptydir(&self) -> bool {
        self.opts.results_pvc.is_none()
    }

    pub(super) fn config_map_name(&self) -> String {
        format!("{}-profile", self.job)
    }

    pub(super) fn labels(&self, component: &str) -> Y {
        m([
            ("app.kubernetes.io/name", s("brunt")),
            ("app.kubernetes.io/instance", s(&self.job)),
            ("app.kubernetes.io/component", s(component)),
        ])
    }

    pub(super) fn meta(&self, name: &str, component: &str) -> Y {
        m([
            ("name", s(name)),
            ("namespace", s(&self.opts.namespace)),
            ("labels", self.labels(component)),
        ])
    }

    /// The ConfigMap that carries the profile and its feeder files to every pod.
    pub(super) fn config_map(&self) -> Y {
        let mut data = vec![("profile.yaml".to_string(), s(&self.text))];
        let mut binary = Vec::new();
        for f in &self.feeders {
            if let Some(t) = &f.text {
                data.push((f.key.clone(), s(t)));
            }
            if let Some(b) = &f.binary {
                binary.push((f.key.clone(), s(b)));
            }
        }
        let mut doc = vec![
            ("apiVersion".to_string(), s("v1")),
            ("kind".to_string(), s("ConfigMap")),
            (
                "metadata".to_string(),
                self.meta(&self.config_map_name(), "profile"),
            ),
            ("data".to_string(), Y::M(data)),
        ];
        if !binary.is_empty() {
            doc.push(("binaryData".to_string(), Y::M(binary)));
        }
        Y::M(doc)
    }

    /// The Indexed Job: one completion per shard, all running at once.
    pub(super) fn job(&self) -> Y {
        let n = self.opts.shards;
        let deadline = self.opts.start_delay.as_secs() + self.run_secs + self.hold + 600;
        m([
            ("apiVersion", s("batch/v1")),
            ("kind", s("Job")),
            ("metadata", self.meta(&self.job, "shard")),
            (
                "spec",
                m([
                    ("completionMode", s("Indexed")),
                    ("completions", Y::I(n.into())),
                    ("parallelism", Y::I(n.into())),
                    // A retried shard would start late and skew the merge: fail instead.
                    ("backoffLimit", Y::I(0)),
                    ("activeDeadlineSeconds", Y::I(deadline as i64)),
                    ("template", self.pod_template()),
                ]),
            ),
        ])
    }

    /// The headless Service that gives shard 1's pod a name the other
    /// shards reach its stop endpoint by (`--control`, see `run::control`).
    pub(super) fn control_service_name(&self) -> String {
        format!("{}-control", self.job)
    }

    /// Shard 1's stop endpoint, as every shard's `--control` names it: the
    /// Indexed Job's pod 0 (hostname `JOB-0`) under the headless Service.
    pub(super) fn control_addr(&self) -> String {
        format!(
            "{}-0.{}:{CONTROL_PORT}",
            self.job,
            self.control_service_name()
        )
    }

    pub(super) fn control_service(&self) -> Y {
        m([
            ("apiVersion", s("v1")),
            ("kind", s("Service")),
            (
                "metadata",
                self.meta(&self.control_service_name(), "control"),
            ),
            (
                "spec",
                m([
                    ("clusterIP", s("None")),
                    // The name must resolve before the pods are ready (they never are: no probe).
                    ("publishNotReadyAddresses", Y::B(true)),
                    ("selector", self.labels("shard")),
                    (
                        "ports",
                        Y::L(vec![m([
                            ("name", s("control")),
                            ("port", Y::I(CONTROL_PORT.into())),
                        ])]),
                    ),
                ]),
            ),
        ])
    }

    /// A shard's pod: one per node, the brunt container, profile and results volumes.
    pub(super) fn pod_template(&self) -> Y {
        m([
            ("metadata", m([("labels", self.labels("shard"))])),
            (
                "spec",
                m([
                    ("subdomain", s(self.control_service_name())),
                    ("restartPolicy", s("Never")),
                    ("securityContext", pod_security()),
                    ("affinity", self.one_shard_per_node()),
                    ("containers", Y::L(vec![self.container()])),
                    ("volumes", self.volumes()),
                ]),
            ),
        ])
    }

    /// Shards on separate nodes, so they do not share a machine's CPU.
    pub(super) fn one_shard_per_node(&self) -> Y {
        let shard_selector = m([(
            "matchLabels",
            m([
                ("app.kubernetes.io/instance", s(&self.job)),
                ("app.kubernetes.io/component", s("shard")),
            ]),
        )]);
        m([(
            "podAntiAffinity",
            m([(
                "requiredDuringSchedulingIgnoredDuringExecution",
                Y::L(vec![m([
                    ("labelSelector", shard_selector),
                    ("topologyKey", s("kubernetes.io/hostname")),
                ])]),
            )]),
        )])
    }

    pub(super) fn volumes(&self) -> Y {
        let results = match &self.opts.results_pvc {
            Some(pvc) => m([
                ("name", s("results")),
                ("persistentVolumeClaim", m([("claimName", s(pvc))])),
            ]),
            None => m([("name", s("results")), ("emptyDir", m([]))]),
        };
        Y::L(vec![
            m([
                ("name", s("profile")),
                (
                    "configMap",
                    m([
                        ("name", s(self.config_map_name())),
                        // Feeder keys land where the pod's --set points.
                        (
                            "items",
                            Y::L(
                                std::iter::once(m([
                                    ("key", s("profile.yaml")),
                                    ("path", s("profile.yaml")),
                                ]))
                                .chain(
                                    self.feeders
                                        .iter()
                                        .map(|f| m([("key", s(&f.key)), ("path", s(&f.path))])),
                                )
                                .collect(),
                            ),
                        ),
                    ]),
                ),
            ]),
            results,
        ])
    }

    /// The brunt container; with an emptyDir, Ready means "finished, fetch me".
    pub(super) fn container(&self) -> Y {
        let opts = self.opts;
        let mut container = vec![
            ("name".to_string(), s("brunt")),
            ("image".to_string(), s(&opts.image)),
            (
                "command".to_string(),
                Y::L(vec![s("sh"), s("-c"), s(self.script())]),
            ),
            (
                "resources".to_string(),
                // No CPU limit: throttling a generator shows up as fake latency.
                m([
                    (
                        "requests",
                        m([("cpu", s(&opts.cpu)), ("memory", s(&opts.memory))]),
                    ),
                    ("limits", m([("memory", s(&opts.memory))])),
                ]),
            ),
            (
                "volumeMounts".to_string(),
                Y::L(vec![
                    m([
                        ("name", s("profile")),
                        ("mountPath", s("/profile")),
                        ("readOnly", Y::B(true)),
                    ]),
                    m([("name", s("results")), ("mountPath", s("/results"))]),
                ]),
            ),
        ];
        if let Some(url) = &self.target {
            container.push((
                "env".to_string(),
                Y::L(vec![m([("name", s("BRUNT_TARGET")), ("value", s(url))])]),
            ));
        }
        if let Some(sec) = &opts.secret {
            // The values stay in the Secret: the manifest only names it.
            container.push((
                "envFrom".to_string(),
                Y::L(vec![m([("secretRef", m([("name", s(sec))]))])]),
            ));
        }
        if self.emptydir() {
            container.push(("readinessProbe".to_string(), done_probe()));
        }
        Y::M(container)
    }

    /// The pod's shell script: run shard `index + 1`, record its exit code and,
    /// with an emptyDir, hold the results until they were fetched.
    pub(super) fn script(&self) -> String {
        let (n, start_at, hold) = (self.opts.shards, self.start_at, self.hold);
        let root = results_root(self.opts, start_at);
        let mut script = String::new();
        let late = self.opts.max_late.as_secs().max(1);
        let _ = writeln!(script, "i=$((JOB_COMPLETION_INDEX + 1))");
        // Only numbers and checked names here; the URL comes from the environment.
        let mut extra = String::new();
        if self.target.is_some() {
            extra.push_str(" --target \"$BRUNT_TARGET\"");
        }
        for f in &self.feeders {
            let _ = write!(extra, " --set feeders.{}.file={}", f.name, f.path);
        }
        let _ = writeln!(
            script,
            "brunt run /profile/profile.yaml --shard \"$i/{n}\" --control {} --start-at {start_at} --max-late {late}s{extra} --out \"{root}/shard-$i\" --plain",
            self.control_addr()
        );
        let _ = writeln!(script, "code=$?");
        let _ = writeln!(script, "mkdir -p {root}/exit-codes");
        let _ = writeln!(
            script,
            "if [ \"$code\" = 3 ]; then why=\" refused: ready more than {late}s after --start-at {start_at}, so it sent nothing (a late shard would skew the merge)\"; else why=; fi"
        );
        let _ = writeln!(
            script,
            "echo \"$code$why\" > \"{root}/exit-codes/shard-$i\""
        );
        if self.emptydir() {
            let _ = writeln!(
                script,
                "# Ready = finished: hold the run directory until `kubectl cp` fetched it."
            );
            let _ = writeln!(script, "touch /results/.done");
            let _ = writeln!(script, "waited=0");
            let _ = writeln!(
                script,
                "while [ ! -e /results/.collected ] && [ \"$waited\" -lt {hold} ]; do sleep 5; waited=$((waited + 5)); done"
            );
        }
        let _ = writeln!(
            script,
            "# One shard's budgets mean little (99): brunt merge judges the union."
        );
        let _ = writeln!(
            script,
            "case \"$code\" in 0|99) exit 0 ;; *) exit \"$code\" ;; esac"
        );
        script
    }

    /// With a results claim: a pod that mounts it, for `kubectl cp` after the Job.
    pub(super) fn gather_pod(&self, pvc: &str) -> Y {
        m([
            ("apiVersion", s("v1")),
            ("kind", s("Pod")),
            (
                "metadata",
                self.meta(&format!("{}-gather", self.job), "gather"),
            ),
            (
                "spec",
                m([
                    ("restartPolicy", s("Never")),
                    ("securityContext", pod_security()),
                    ("containers", Y::L(vec![self.gather_container()])),
                    (
                        "volumes",
                        Y::L(vec![m([
                            ("name", s("results")),
                            ("persistentVolumeClaim", m([("claimName", s(pvc))])),
                        ])]),
                    ),
                ]),
            ),
        ])
    }

    pub(super) fn gather_container(&self) -> Y {
        m([
            ("name", s("gather")),
            ("image", s(&self.opts.image)),
            ("command", Y::L(vec![s("sleep"), s("infinity")])),
            (
                "resources",
                m([("requests", m([("cpu", s("10m")), ("memory", s("32Mi"))]))]),
            ),
            (
                "volumeMounts",
                Y::L(vec![m([
                    ("name", s("results")),
                    ("mountPath", s("/results")),
                ])]),
            ),
        ])
    }
}

/// Ready once the script touched `/results/.done`.
fn done_probe() -> Y {
    m([
        (
            "exec",
            m([(
                "command",
                Y::L(vec![s("test"), s("-e"), s("/results/.done")]),
            )]),
        ),
        ("periodSeconds", Y::I(5)),
    ])
}

/// Where the shards write: the pod's own emptyDir, or a directory of this
/// run on a shared claim (so a reused claim never mixes two runs).
pub(super) fn results_root(opts: &K8sOptions, start_at: u64) -> String {
    match opts.results_pvc {
        None => "/results".into(),
        Some(_) => format!("/results/{start_at}"),
    }
}
