//! `iotoll agent k8s-manifests`: Kubernetes manifests for a fleet of agents.
//!
//! Two shapes: an indexed Job of N agents (each pod gets a stable DNS name
//! `NAME-INDEX.NAME.NAMESPACE.svc.cluster.local` through the headless
//! Service that is its `subdomain`, so the hosts file can be written in
//! advance), or a DaemonSet (one agent per node; pod names are not known
//! in advance, so its hosts file is a template with the command that
//! fills it). Both run on the node's network (`hostNetwork`), privileged,
//! with the node's /dev: an agent measures the node's NICs and disks, not
//! a pod's overlay network or a container's overlay filesystem.
//!
//! The YAML is written by hand, not through a YAML library: its shape is
//! fixed, and every value that comes from the user is emitted as a JSON
//! string (a valid YAML double-quoted scalar), so no input can change the
//! document's structure. The hosts file is written where
//! `agent k8s-manifests --hosts-out` asks.

use std::fmt::Write;
use std::io::Write as _;
use std::path::Path;

/// The agent's default port.
pub const DEFAULT_PORT: u16 = 7575;

/// Where the key Secret is mounted in the agent's container.
pub const KEY_DIR: &str = "/etc/iotoll/key";

/// The data key of the Secret that holds the agent's key.
pub const KEY_ITEM: &str = "key";

/// The node directory mounted at the same path in the container, for
/// file targets on the node's own filesystem (`--allow-target
/// /var/lib/iotoll:rw`).
pub const SCRATCH: &str = "/var/lib/iotoll";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct K8sOptions {
    /// Name of the Service, the Job or DaemonSet, and the pods' prefix.
    pub name: String,
    pub namespace: String,
    /// The container image holding `iotoll` on its PATH (the user builds
    /// it: docs/agent-deploy.md has a Dockerfile); default
    /// `iotoll:VERSION`.
    pub image: String,
    /// Agents of the indexed Job (ignored with `daemonset`).
    pub replicas: u32,
    /// A DaemonSet (one agent per node) instead of an indexed Job.
    pub daemonset: bool,
    pub port: u16,
    /// Name of the Secret whose item `key` is the agents' key.
    pub key_secret: String,
    /// `--allow-target` of every agent (`PATH` or `PATH:rw`, paths on the
    /// node: the node's /dev and [`SCRATCH`] are mounted).
    pub allow_targets: Vec<String>,
}

impl Default for K8sOptions {
    fn default() -> Self {
        K8sOptions {
            name: "iotoll-agent".into(),
            namespace: "default".into(),
            image: default_image(),
            replicas: 1,
            daemonset: false,
            port: DEFAULT_PORT,
            key_secret: "iotoll-agent-key".into(),
            allow_targets: Vec::new(),
        }
    }
}

/// `iotoll:VERSION`, this binary's version.
pub fn default_image() -> String {
    format!("iotoll:{}", env!("CARGO_PKG_VERSION"))
}

impl K8sOptions {
    /// Whether Kubernetes would accept these names and numbers; the error
    /// names the option.
    pub fn check(&self) -> Result<(), String> {
        // Pod hostnames of an indexed Job are NAME-INDEX, a DNS label
        // (63 characters at most), as is the Service's name.
        let longest = if self.daemonset {
            self.name.clone()
        } else {
            format!("{}-{}", self.name, self.replicas.saturating_sub(1))
        };
        dns_label("name", &self.name)?;
        if longest.len() > 63 {
            return Err(format!(
                "name '{}' is too long: pod hostname '{longest}' exceeds 63 characters",
                self.name
            ));
        }
        dns_label("namespace", &self.namespace)?;
        dns_subdomain("key-secret", &self.key_secret)?;
        if self.image.is_empty() || self.image.chars().any(|c| c.is_whitespace()) {
            return Err(format!(
                "image '{}' is empty or has white space",
                self.image
            ));
        }
        if !self.daemonset && self.replicas == 0 {
            return Err("replicas must be at least 1".into());
        }
        if self.port == 0 {
            return Err("port must not be 0".into());
        }
        for t in &self.allow_targets {
            if !t.starts_with('/') {
                return Err(format!(
                    "allow-target '{t}' is not an absolute path on the node"
                ));
            }
        }
        Ok(())
    }
}

fn dns_label(what: &str, s: &str) -> Result<(), String> {
    if iotoll_model::text::is_label(s, 63) {
        return Ok(());
    }
    Err(format!(
        "{what} '{s}' is not a DNS label (a-z, 0-9, '-', 1 to 63 characters, \
         starting and ending with a letter or digit)"
    ))
}

fn dns_subdomain(what: &str, s: &str) -> Result<(), String> {
    if s.len() <= 253 && s.split('.').all(|l| iotoll_model::text::is_label(l, 63)) {
        return Ok(());
    }
    Err(format!(
        "{what} '{s}' is not a DNS subdomain (dot-separated labels of a-z, 0-9, '-')"
    ))
}

/// `s` as a YAML scalar that is always a string.
fn q(s: &str) -> String {
    serde_json::Value::from(s).to_string()
}

/// The Service, then the Job or the DaemonSet, as YAML documents.
pub fn manifests(o: &K8sOptions) -> String {
    let mut y = String::new();
    let kind = if o.daemonset { "DaemonSet" } else { "Job" };
    let _ = writeln!(
        y,
        "# iotoll agents: {} {} in namespace {}, port {}.\n\
         # Made by `iotoll agent k8s-manifests`; needs the Secret {} (item '{KEY_ITEM}'):\n\
         #   kubectl -n {} create secret generic {} --from-file={KEY_ITEM}=agent.key",
        kind, o.name, o.namespace, o.port, o.key_secret, o.namespace, o.key_secret
    );
    service(&mut y, o);
    y.push_str("---\n");
    if o.daemonset {
        daemonset(&mut y, o);
    } else {
        job(&mut y, o);
    }
    y
}

fn metadata(y: &mut String, o: &K8sOptions, indent: &str) {
    let _ = writeln!(y, "{indent}labels:");
    labels(y, o, &format!("{indent}  "));
}

fn labels(y: &mut String, o: &K8sOptions, indent: &str) {
    let _ = writeln!(y, "{indent}app.kubernetes.io/name: iotoll-agent");
    let _ = writeln!(y, "{indent}app.kubernetes.io/instance: {}", q(&o.name));
}

fn service(y: &mut String, o: &K8sOptions) {
    let why = if o.daemonset {
        "# Headless: no virtual IP, only DNS records of the agents' pods (one A\n\
         # record per node's agent under NAME.NAMESPACE.svc.cluster.local)."
    } else {
        "# Headless: no virtual IP, only DNS records of the agents' pods\n\
         # (NAME-INDEX.NAME.NAMESPACE.svc.cluster.local for the Job's pods,\n\
         # which name this Service as theirs)."
    };
    let _ = writeln!(y, "---\n{why}");
    head(y, o, "v1", "Service");
    let _ = writeln!(y, "spec:\n  clusterIP: None\n  selector:");
    labels(y, o, "    ");
    let _ = writeln!(
        y,
        "  ports:\n    - name: agent\n      port: {p}\n      targetPort: {p}\n      protocol: TCP",
        p = o.port
    );
}

/// A document's first lines: its kind, name, namespace and labels.
fn head(y: &mut String, o: &K8sOptions, api: &str, kind: &str) {
    let _ = writeln!(
        y,
        "apiVersion: {api}\nkind: {kind}\nmetadata:\n  name: {}\n  namespace: {}",
        q(&o.name),
        q(&o.namespace)
    );
    metadata(y, o, "  ");
}

fn job(y: &mut String, o: &K8sOptions) {
    head(y, o, "batch/v1", "Job");
    let _ = writeln!(
        y,
        "spec:\n  # Indexed: pod i is named NAME-i and gets the hostname NAME-i, so with\n  \
         # the Service as subdomain its DNS name is known before it starts.\n  \
         completionMode: Indexed\n  completions: {n}\n  parallelism: {n}\n  \
         # An agent runs until the Job is deleted; a crash restarts it in place.\n  \
         backoffLimit: 6\n  template:\n    metadata:",
        n = o.replicas
    );
    metadata(y, o, "      ");
    let _ = writeln!(
        y,
        "    spec:\n      subdomain: {}\n      restartPolicy: OnFailure",
        q(&o.name)
    );
    pod_spec(y, o);
}

fn daemonset(y: &mut String, o: &K8sOptions) {
    head(y, o, "apps/v1", "DaemonSet");
    let _ = writeln!(y, "spec:\n  selector:\n    matchLabels:");
    labels(y, o, "      ");
    let _ = writeln!(y, "  template:\n    metadata:");
    metadata(y, o, "      ");
    let _ = writeln!(y, "    spec:\n      restartPolicy: Always");
    pod_spec(y, o);
}

/// The pod spec after `restartPolicy`, at the template's spec indentation.
fn pod_spec(y: &mut String, o: &K8sOptions) {
    let (listen, key) = (
        format!("0.0.0.0:{}", o.port),
        format!("{KEY_DIR}/{KEY_ITEM}"),
    );
    let args: Vec<String> = crate::agent_args(&listen, &key, &o.allow_targets)
        .map(q)
        .collect();
    let _ = writeln!(
        y,
        "      # The node's network: network tests measure its NICs, not an overlay.\n      \
         hostNetwork: true\n      \
         # ...while still resolving cluster names (the other agents').\n      \
         dnsPolicy: ClusterFirstWithHostNet\n      \
         terminationGracePeriodSeconds: 10"
    );
    if !o.daemonset {
        // hostNetwork agents on one node would contend for the port (the
        // hostPort below makes the scheduler refuse that anyway); say it.
        let _ = writeln!(
            y,
            "      # One agent per node: two on one node would share its port and its CPUs.\n      \
             affinity:\n        podAntiAffinity:\n          \
             requiredDuringSchedulingIgnoredDuringExecution:\n            \
             - topologyKey: kubernetes.io/hostname\n              labelSelector:\n                \
             matchLabels:"
        );
        labels(y, o, "                  ");
    }
    let _ = writeln!(
        y,
        "      containers:\n        - name: agent\n          image: {}\n          \
         command: [\"iotoll\"]\n          args: [{}]\n          ports:\n            \
         - name: agent\n              containerPort: {p}\n              hostPort: {p}\n              \
         protocol: TCP\n          \
         # Ready once it listens: the Service publishes its DNS record then.\n          \
         readinessProbe:\n            tcpSocket:\n              port: {p}\n            \
         periodSeconds: 5",
        q(&o.image),
        args.join(", "),
        p = o.port
    );
    let _ = writeln!(
        y,
        "          # Privileged, not a list of capabilities: block devices are opened\n          \
         # through the device cgroup, which only a privileged container has\n          \
         # open to the node's devices (SYS_ADMIN/SYS_RAWIO do not lift it), and\n          \
         # privileged also brings CAP_IPC_LOCK (io_uring rings are charged to\n          \
         # RLIMIT_MEMLOCK on kernels before 5.12, and a pod cannot raise that\n          \
         # limit) and NET_ADMIN. Container runtimes' default seccomp profiles\n          \
         # block io_uring_setup; a privileged container runs Unconfined anyway,\n          \
         # and the profile says so rather than leave it implied.\n          \
         securityContext:\n            privileged: true\n            \
         allowPrivilegeEscalation: true\n            \
         seccompProfile:\n              type: Unconfined\n          \
         volumeMounts:\n            \
         - name: key\n              mountPath: {KEY_DIR}\n              readOnly: true\n            \
         # The node's /dev, live (a privileged container's own /dev is a copy\n            \
         # made at its start): block devices named with --allow-target.\n            \
         - name: dev\n              mountPath: /dev\n            \
         # File targets on the node's disk rather than the container's overlay.\n            \
         - name: scratch\n              mountPath: {SCRATCH}\n      \
         volumes:\n        \
         - name: key\n          secret:\n            secretName: {}\n            \
         # 0400 (decimal here: YAML 1.2 reads 0400 as 400): the key is root's only.\n            \
         defaultMode: 256\n        \
         - name: dev\n          hostPath:\n            path: /dev\n            type: Directory\n        \
         - name: scratch\n          hostPath:\n            path: {SCRATCH}\n            \
         type: DirectoryOrCreate",
        q(&o.key_secret)
    );
}

/// The pod DNS names of the indexed Job's agents.
pub fn job_hosts(o: &K8sOptions) -> Vec<(String, String)> {
    (0..o.replicas)
        .map(|i| {
            let pod = format!("{}-{i}", o.name);
            let addr = format!(
                "{pod}.{}.{}.svc.cluster.local:{}",
                o.name, o.namespace, o.port
            );
            (pod, addr)
        })
        .collect()
}

/// The hosts file (TOML) of the agents: for the Job, each pod by its DNS
/// name; for the DaemonSet, a template (pod names are made at scheduling
/// time) with the command that lists the nodes' agents.
pub fn hosts_file(o: &K8sOptions) -> String {
    let mut t = String::new();
    if o.daemonset {
        let _ = writeln!(
            t,
            "# iotoll hosts: the agents of DaemonSet {name} in namespace {ns}, port {p}.\n\
             # Its pods are named when they are scheduled, so this is a template: the\n\
             # agents use the nodes' network, so each one is reached at its node's\n\
             # address (the pod IP). Fill [hosts] with one line per node, e.g. from\n\
             #\n\
             #   kubectl -n {ns} get pods -l app.kubernetes.io/instance={name} \\\n\
             #     -o jsonpath='{{range .items[*]}}\"{{.spec.nodeName}}\" = \"{{.status.podIP}}:{p}\"{{\"\\n\"}}{{end}}'\n\
             #\n\
             [hosts]\n\
             # \"node-1\" = \"10.0.0.11:{p}\"\n\
             # \"node-2\" = \"10.0.0.12:{p}\"",
            name = o.name,
            ns = o.namespace,
            p = o.port
        );
    } else {
        let _ = writeln!(
            t,
            "# iotoll hosts: the {n} agents of Job {name} in namespace {ns} by their pod DNS\n\
             # names (resolvable inside the cluster: run the console in a pod there).\n\
             [hosts]",
            n = o.replicas,
            name = o.name,
            ns = o.namespace
        );
        for (pod, addr) in job_hosts(o) {
            let _ = writeln!(t, "{} = {}", q(&pod), q(&addr));
        }
    }
    t
}

/// Why the hosts file was not written.
#[derive(Debug, thiserror::Error)]
pub enum HostsFileError {
    /// The file exists and overwriting it was not asked for.
    #[error("the file exists")]
    Exists,
    #[error(transparent)]
    Create(std::io::Error),
    #[error("writing")]
    Write(#[source] std::io::Error),
}

/// Writes the fleet's hosts file at `path`, synced, never over an existing
/// file unless `force`: the check and the creation are one step, so a file
/// that appears in between is not overwritten either.
pub fn write_hosts_file(o: &K8sOptions, path: &Path, force: bool) -> Result<(), HostsFileError> {
    let mut f = std::fs::OpenOptions::new();
    f.write(true);
    match force {
        true => f.create(true).truncate(true),
        false => f.create_new(true),
    };
    let mut file = f.open(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::AlreadyExists => HostsFileError::Exists,
        _ => HostsFileError::Create(e),
    })?;
    (file.write_all(hosts_file(o).as_bytes()))
        .and_then(|()| file.sync_all())
        .map_err(HostsFileError::Write)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job3() -> K8sOptions {
        K8sOptions {
            replicas: 3,
            allow_targets: vec!["/dev/nvme1n1:rw".into(), "/var/lib/iotoll:rw".into()],
            ..K8sOptions::default()
        }
    }

    #[test]
    fn defaults_are_the_documented_ones() {
        let o = K8sOptions::default();
        assert_eq!(o.name, "iotoll-agent");
        assert_eq!(o.namespace, "default");
        assert_eq!(o.image, format!("iotoll:{}", env!("CARGO_PKG_VERSION")));
        assert_eq!((o.replicas, o.daemonset, o.port), (1, false, 7575));
        assert_eq!(o.key_secret, "iotoll-agent-key");
        assert!(o.check().is_ok());
    }

    #[test]
    fn the_job_is_indexed_with_the_headless_service_as_subdomain() {
        let y = manifests(&job3());
        for want in [
            "kind: Service",
            "clusterIP: None",
            "kind: Job",
            "completionMode: Indexed",
            "completions: 3",
            "parallelism: 3",
            "subdomain: \"iotoll-agent\"",
            "hostNetwork: true",
            "dnsPolicy: ClusterFirstWithHostNet",
            "privileged: true",
            "type: Unconfined",
            "secretName: \"iotoll-agent-key\"",
            "args: [\"agent\", \"--listen\", \"0.0.0.0:7575\", \"--auth-key\", \"/etc/iotoll/key/key\", \
             \"--allow-target\", \"/dev/nvme1n1:rw\", \"--allow-target\", \"/var/lib/iotoll:rw\"]",
            "topologyKey: kubernetes.io/hostname",
        ] {
            assert!(y.contains(want), "{want:?} not in\n{y}");
        }
        assert!(!y.contains("DaemonSet"));
        // Two documents: the Service and the Job.
        assert_eq!(y.lines().filter(|l| *l == "---").count(), 2, "{y}");
    }

    #[test]
    fn the_daemonset_has_no_job_fields() {
        let o = K8sOptions {
            daemonset: true,
            port: 7600,
            ..job3()
        };
        let y = manifests(&o);
        assert!(
            y.contains("kind: DaemonSet") && y.contains("containerPort: 7600"),
            "{y}"
        );
        for absent in [
            "completionMode",
            "subdomain",
            "podAntiAffinity",
            "kind: Job",
        ] {
            assert!(!y.contains(absent), "{absent} in\n{y}");
        }
    }

    #[test]
    fn user_values_cannot_change_the_yaml_structure() {
        let o = K8sOptions {
            image: "reg.example/iotoll:1\"\n  evil: true".into(),
            allow_targets: vec!["/x\", \"--oops".into()],
            ..K8sOptions::default()
        };
        let y = manifests(&o);
        assert!(
            y.contains(r#"image: "reg.example/iotoll:1\"\n  evil: true""#),
            "{y}"
        );
        assert!(!y.contains("\n  evil: true"));
        assert!(y.contains(r#""/x\", \"--oops""#));
    }

    #[test]
    fn job_hosts_are_the_pods_dns_names() {
        let o = K8sOptions {
            namespace: "perf".into(),
            ..job3()
        };
        let h = hosts_file(&o);
        assert!(h.contains("[hosts]\n"), "{h}");
        for i in 0..3 {
            let line = format!(
                "\"iotoll-agent-{i}\" = \"iotoll-agent-{i}.iotoll-agent.perf.svc.cluster.local:7575\"\n"
            );
            assert!(h.contains(&line), "{line:?} not in\n{h}");
        }
        assert!(!h.contains("iotoll-agent-3"));
    }

    #[test]
    fn the_daemonset_hosts_file_is_a_commented_template() {
        let o = K8sOptions {
            daemonset: true,
            ..K8sOptions::default()
        };
        let h = hosts_file(&o);
        let active: Vec<&str> = h
            .lines()
            .filter(|l| !l.trim_start().starts_with('#') && !l.trim().is_empty())
            .collect();
        assert_eq!(active, ["[hosts]"], "{h}");
        assert!(
            h.contains("kubectl -n default get pods -l app.kubernetes.io/instance=iotoll-agent")
        );
    }

    #[test]
    fn bad_options_name_the_option() {
        type Change = fn(&mut K8sOptions);
        let cases: [(Change, &str); 8] = [
            (
                |o| o.name = "Agent".into(),
                "name 'Agent' is not a DNS label",
            ),
            (
                |o| (o.name, o.replicas) = ("a".repeat(62), 10),
                "exceeds 63",
            ),
            (|o| o.namespace = "-x".into(), "namespace '-x'"),
            (|o| o.key_secret = "a..b".into(), "key-secret 'a..b'"),
            (|o| o.image = "a b".into(), "image 'a b'"),
            (|o| o.replicas = 0, "replicas"),
            (|o| o.port = 0, "port"),
            (|o| o.allow_targets = vec!["dev/sda".into()], "absolute"),
        ];
        for (change, want) in cases {
            let mut o = K8sOptions::default();
            change(&mut o);
            let e = o.check().unwrap_err();
            assert!(e.contains(want), "{want:?} not in {e}");
        }
        let ok = |change: Change| {
            let mut o = K8sOptions::default();
            change(&mut o);
            o.check()
        };
        assert!(ok(|o| (o.replicas, o.daemonset) = (0, true)).is_ok());
        assert!(ok(|o| o.key_secret = "a.b-c".into()).is_ok());
    }
}
