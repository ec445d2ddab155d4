//! `iotoll agent k8s-manifests`: the manifests of a fleet of agents on
//! Kubernetes on stdout, and their hosts file.

use crate::usage;
use anyhow::{Context, Result};
use iotoll_agent::k8s::{self, HostsFileError, K8sOptions};
use std::io::Write;
use std::path::PathBuf;

#[derive(clap::Args)]
#[command(after_help = "Examples:
  iotoll agent k8s-manifests --replicas 4 --image registry.example/iotoll:0.1.0 \\
      --allow-target /dev/nvme1n1:rw --hosts-out hosts.toml | kubectl apply -f -
  iotoll agent k8s-manifests --daemonset --namespace perf --image registry.example/iotoll:0.1.0

The agents' key comes from a Secret (--key-secret), made beforehand:
  head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \\n' > agent.key
  kubectl create secret generic iotoll-agent-key --from-file=key=agent.key
The image must have iotoll on its PATH (a Dockerfile: docs/agent-deploy.md).
Exit status: 0 printed, 2 a bad option or the hosts file exists (without --force).")]
pub struct K8sArgs {
    /// Name of the headless Service and of the Job or DaemonSet; the Job's pods are NAME-0, NAME-1, ...
    #[arg(long, default_value = "iotoll-agent")]
    pub name: String,
    /// The Kubernetes namespace.
    #[arg(long, short = 'n', default_value = "default")]
    pub namespace: String,
    /// Container image with iotoll on its PATH [default: iotoll:VERSION].
    #[arg(long)]
    pub image: Option<String>,
    /// Agents of the indexed Job, each on its own node.
    #[arg(long, default_value_t = 1, conflicts_with = "daemonset")]
    pub replicas: u32,
    /// One agent on every node (a DaemonSet) instead of an indexed Job.
    #[arg(long)]
    pub daemonset: bool,
    /// Port the agents listen on (on the node's network).
    #[arg(long, default_value_t = k8s::DEFAULT_PORT)]
    pub port: u16,
    /// Name of the Secret holding the agents' key (item `key`).
    #[arg(long, default_value = "iotoll-agent-key")]
    pub key_secret: String,
    /// A target the agents may test: a path on the node (its /dev and /var/lib/iotoll are mounted); `:rw` allows writes (repeatable).
    #[arg(long = "allow-target", value_name = "PATH[:rw]")]
    pub allow_targets: Vec<String>,
    /// Also write the hosts file of the agents (for `suite run --hosts`); a template for --daemonset.
    #[arg(long, value_name = "FILE")]
    pub hosts_out: Option<PathBuf>,
    /// Overwrite the --hosts-out file if it exists.
    #[arg(long, requires = "hosts_out")]
    pub force: bool,
}

impl K8sArgs {
    fn options(&self) -> K8sOptions {
        K8sOptions {
            name: self.name.clone(),
            namespace: self.namespace.clone(),
            image: self.image.clone().unwrap_or_else(k8s::default_image),
            replicas: self.replicas,
            daemonset: self.daemonset,
            port: self.port,
            key_secret: self.key_secret.clone(),
            allow_targets: self.allow_targets.clone(),
        }
    }
}

/// Prints the manifests; writes the hosts file first, so a refused or
/// failed write prints nothing to apply.
pub fn run(args: &K8sArgs) -> Result<()> {
    let o = args.options();
    o.check().map_err(|e| usage(format!("--{e}")))?;
    if let Some(path) = &args.hosts_out {
        let at = format!("--hosts-out {}", path.display());
        k8s::write_hosts_file(&o, path, args.force).map_err(|e| match e {
            HostsFileError::Exists => {
                usage(format!("{at}: the file exists (--force overwrites it)"))
            }
            e => anyhow::Error::new(e).context(at),
        })?;
        let what = if o.daemonset {
            "a template to fill in once the DaemonSet's pods run".to_string()
        } else {
            format!("{} agents", o.replicas)
        };
        eprintln!("iotoll: wrote the hosts file {} ({what})", path.display());
    }
    let mut out = std::io::stdout().lock();
    out.write_all(k8s::manifests(&o).as_bytes())
        .and_then(|()| out.flush())
        .context("writing the manifests to stdout")
}
