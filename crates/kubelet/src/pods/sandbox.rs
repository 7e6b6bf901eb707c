//! The CRI `PodSandboxConfig` of a pod (upstream's
//! `generatePodSandboxConfig`): metadata, hostname, DNS, log directory,
//! host ports, labels and annotations, the pod's cgroup parent, its
//! namespaces (hostNetwork, hostPID, hostIPC, shareProcessNamespace),
//! sysctls and the sandbox security context.

use std::collections::HashMap;

use k8s_openapi::api::core::v1::Pod;

use crate::cri::v1;

use super::context::NodeContext;
use super::labels;

/// Upstream's `kubernetes.io/config.source`-style sandbox label set: the
/// pod's labels plus the three io.kubernetes.pod.* labels.
pub fn sandbox_labels(pod: &Pod) -> HashMap<String, String> {
    let mut l: HashMap<String, String> = pod.metadata.labels.clone().unwrap_or_default().into_iter().collect();
    l.insert(labels::POD_NAME.into(), pod.metadata.name.clone().unwrap_or_default());
    l.insert(labels::POD_NAMESPACE.into(), pod.metadata.namespace.clone().unwrap_or_default());
    l.insert(labels::POD_UID.into(), pod.metadata.uid.clone().unwrap_or_default());
    l
}

fn mode(node: bool) -> i32 {
    if node {
        v1::NamespaceMode::Node as i32
    } else {
        v1::NamespaceMode::Pod as i32
    }
}

/// The namespaces of the pod's sandbox (and its containers).
pub fn namespace_options(pod: &Pod) -> v1::NamespaceOption {
    let spec = pod.spec.clone().unwrap_or_default();
    let pid = if spec.host_pid == Some(true) {
        v1::NamespaceMode::Node as i32
    } else if spec.share_process_namespace == Some(true) {
        v1::NamespaceMode::Pod as i32
    } else {
        v1::NamespaceMode::Container as i32
    };
    v1::NamespaceOption {
        network: mode(spec.host_network == Some(true)),
        pid,
        ipc: mode(spec.host_ipc == Some(true)),
        ..Default::default()
    }
}

/// Host ports of every container (upstream: `makePortMappings`).
fn port_mappings(pod: &Pod) -> Vec<v1::PortMapping> {
    let spec = pod.spec.clone().unwrap_or_default();
    let mut out = Vec::new();
    for c in spec.containers.iter().chain(spec.init_containers.iter().flatten()) {
        for p in c.ports.iter().flatten() {
            let Some(host_port) = p.host_port.filter(|h| *h > 0) else { continue };
            let protocol = match p.protocol.as_deref() {
                Some("UDP") => v1::Protocol::Udp,
                Some("SCTP") => v1::Protocol::Sctp,
                _ => v1::Protocol::Tcp,
            };
            out.push(v1::PortMapping {
                protocol: protocol as i32,
                container_port: p.container_port,
                host_port,
                host_ip: p.host_ip.clone().unwrap_or_default(),
            });
        }
    }
    out
}

/// The sandbox config of `pod` for sandbox attempt `attempt`. Errors are
/// the DNS/hostname errors upstream reports as FailedCreatePodSandBox.
pub fn config(pod: &Pod, attempt: u32, node: &NodeContext) -> Result<v1::PodSandboxConfig, String> {
    let meta = &pod.metadata;
    let (name, namespace, uid) = (
        meta.name.clone().unwrap_or_default(),
        meta.namespace.clone().unwrap_or_default(),
        meta.uid.clone().unwrap_or_default(),
    );
    let spec = pod.spec.clone().unwrap_or_default();
    let hostname = super::dns::sandbox_hostname(pod, &node.dns.cluster_domain).map_err(|e| e.to_string())?;
    let dns_config = super::dns::sandbox_dns_config(pod, &node.dns).map_err(|e| e.to_string())?;
    let mut annotations: HashMap<String, String> = meta.annotations.clone().unwrap_or_default().into_iter().collect();
    annotations.insert(
        labels::POD_TERMINATION_GRACE_PERIOD.into(),
        spec.termination_grace_period_seconds.unwrap_or(30).to_string(),
    );
    let psc = spec.security_context.clone().unwrap_or_default();
    let privileged = spec
        .containers
        .iter()
        .chain(spec.init_containers.iter().flatten())
        .any(|c| c.security_context.as_ref().and_then(|s| s.privileged) == Some(true));
    let sysctls: HashMap<String, String> =
        psc.sysctls.clone().unwrap_or_default().into_iter().map(|s| (s.name, s.value)).collect();
    let mut supplemental: Vec<i64> = psc.supplemental_groups.clone().unwrap_or_default();
    if let Some(g) = psc.fs_group {
        supplemental.push(g);
    }
    Ok(v1::PodSandboxConfig {
        metadata: Some(v1::PodSandboxMetadata { name, uid: uid.clone(), namespace: namespace.clone(), attempt }),
        hostname: if spec.host_network == Some(true) { String::new() } else { hostname },
        log_directory: labels::pod_log_dir(&namespace, meta.name.as_deref().unwrap_or(""), &uid)
            .to_string_lossy()
            .into_owned(),
        dns_config,
        port_mappings: port_mappings(pod),
        labels: sandbox_labels(pod),
        annotations,
        linux: Some(v1::LinuxPodSandboxConfig {
            cgroup_parent: super::resources::pod_cgroup_parent(&node.node_name, pod, node.cgroup_driver),
            security_context: Some(v1::LinuxSandboxSecurityContext {
                namespace_options: Some(namespace_options(pod)),
                run_as_user: psc.run_as_user.map(|value| v1::Int64Value { value }),
                run_as_group: psc.run_as_group.map(|value| v1::Int64Value { value }),
                supplemental_groups: supplemental,
                privileged,
                seccomp: Some(v1::SecurityProfile {
                    profile_type: v1::security_profile::ProfileType::RuntimeDefault as i32,
                    localhost_ref: String::new(),
                }),
                ..Default::default()
            }),
            sysctls,
            ..Default::default()
        }),
        windows: None,
    })
}
