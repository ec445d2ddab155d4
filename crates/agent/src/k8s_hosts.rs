//! The hosts file of a Kubernetes fleet of agents, written where
//! `agent k8s-manifests --hosts-out` asks.

use crate::k8s::{hosts_file, K8sOptions};
use std::io::Write;
use std::path::Path;

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
