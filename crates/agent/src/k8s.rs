//! `iotoll agent k8s-manifests`: Kubernetes manifests for a fleet of agents.
