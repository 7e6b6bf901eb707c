//! The CRI `ContainerConfig` of one container instance (upstream's
//! `generateContainerConfig`): command and args with `$(VAR)` expansion,
//! env, mounts, labels and annotations, the log path, stdin/tty, resources
//! and the security context.

use std::collections::HashMap;

use k8s_openapi::api::core::v1::{Container, Pod};

use crate::cri::v1;

use super::labels;

/// Paths upstream masks in every unprivileged container
/// (`securitycontext.DefaultMaskedPaths`).
const MASKED_PATHS: &[&str] = &[
    "/proc/asound",
    "/proc/acpi",
    "/proc/kcore",
    "/proc/keys",
    "/proc/latency_stats",
    "/proc/timer_list",
    "/proc/timer_stats",
    "/proc/sched_debug",
    "/proc/scsi",
    "/sys/firmware",
    "/sys/devices/virtual/powercap",
];
/// Paths upstream mounts read-only in every unprivileged container.
const READONLY_PATHS: &[&str] = &["/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"];

/// A short hash of the container's spec: a change (e.g. a new image)
/// means the running instance must be replaced (upstream's container hash).
pub fn hash(c: &Container) -> String {
    let json = serde_json::to_vec(c).unwrap_or_default();
    let digest = ring::digest::digest(&ring::digest::SHA256, &json);
    digest.as_ref()[..4].iter().map(|b| format!("{b:02x}")).collect()
}

/// Everything that varies per instance.
pub struct Instance<'a> {
    /// The restart count this instance gets (metadata.attempt).
    pub attempt: u32,
    /// Resolved environment, in order.
    pub env: &'a [(String, String)],
    /// Volume mounts.
    pub mounts: Vec<v1::Mount>,
    /// Resources.
    pub resources: v1::LinuxContainerResources,
}

fn labels_for(pod: &Pod, c: &Container) -> HashMap<String, String> {
    HashMap::from([
        (labels::POD_NAME.into(), pod.metadata.name.clone().unwrap_or_default()),
        (labels::POD_NAMESPACE.into(), pod.metadata.namespace.clone().unwrap_or_default()),
        (labels::POD_UID.into(), pod.metadata.uid.clone().unwrap_or_default()),
        (labels::CONTAINER_NAME.into(), c.name.clone()),
    ])
}

/// The container config of `c` in `pod`.
pub fn config(pod: &Pod, c: &Container, inst: Instance) -> v1::ContainerConfig {
    let spec = pod.spec.clone().unwrap_or_default();
    let psc = spec.security_context.clone().unwrap_or_default();
    let sc = c.security_context.clone().unwrap_or_default();
    let privileged = sc.privileged == Some(true);
    let env = inst.env;
    let lookup = |k: &str| env.iter().rev().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    let expand = |s: &String| super::env::expand(s, lookup);
    let annotations = HashMap::from([
        (labels::CONTAINER_HASH.to_string(), hash(c)),
        (labels::CONTAINER_RESTART_COUNT.to_string(), inst.attempt.to_string()),
        (
            labels::CONTAINER_TERMINATION_MESSAGE_PATH.to_string(),
            c.termination_message_path.clone().unwrap_or_else(|| "/dev/termination-log".into()),
        ),
        (
            labels::CONTAINER_TERMINATION_MESSAGE_POLICY.to_string(),
            c.termination_message_policy.clone().unwrap_or_else(|| "File".into()),
        ),
        (
            labels::POD_TERMINATION_GRACE_PERIOD.to_string(),
            spec.termination_grace_period_seconds.unwrap_or(30).to_string(),
        ),
    ]);
    let caps = sc.capabilities.clone().unwrap_or_default();
    let mut supplemental: Vec<i64> = psc.supplemental_groups.clone().unwrap_or_default();
    if let Some(g) = psc.fs_group {
        supplemental.push(g);
    }
    let seccomp_type = match sc.seccomp_profile.as_ref().or(psc.seccomp_profile.as_ref()).map(|p| p.type_.as_str()) {
        Some("Unconfined") => v1::security_profile::ProfileType::Unconfined,
        // RuntimeDefault is the kubelet's default (SeccompDefault, GA since 1.27 but off by
        // default upstream); rkube always applies it, as the issue asks.
        _ => v1::security_profile::ProfileType::RuntimeDefault,
    };
    let ns = super::sandbox::namespace_options(pod);
    v1::ContainerConfig {
        metadata: Some(v1::ContainerMetadata { name: c.name.clone(), attempt: inst.attempt }),
        image: Some(v1::ImageSpec { image: c.image.clone().unwrap_or_default(), ..Default::default() }),
        command: c.command.iter().flatten().map(expand).collect(),
        args: c.args.iter().flatten().map(expand).collect(),
        working_dir: c.working_dir.clone().unwrap_or_default(),
        envs: inst.env.iter().map(|(k, v)| v1::KeyValue { key: k.clone(), value: v.clone() }).collect(),
        mounts: inst.mounts,
        labels: labels_for(pod, c),
        annotations,
        log_path: labels::container_log_path(&c.name, inst.attempt),
        stdin: c.stdin == Some(true),
        stdin_once: c.stdin_once == Some(true),
        tty: c.tty == Some(true),
        linux: Some(v1::LinuxContainerConfig {
            resources: Some(inst.resources),
            security_context: Some(v1::LinuxContainerSecurityContext {
                capabilities: Some(v1::Capability {
                    add_capabilities: caps.add.unwrap_or_default(),
                    drop_capabilities: caps.drop.unwrap_or_default(),
                    add_ambient_capabilities: Vec::new(),
                }),
                privileged,
                namespace_options: Some(ns),
                run_as_user: sc.run_as_user.or(psc.run_as_user).map(|value| v1::Int64Value { value }),
                run_as_group: sc.run_as_group.or(psc.run_as_group).map(|value| v1::Int64Value { value }),
                readonly_rootfs: sc.read_only_root_filesystem == Some(true),
                supplemental_groups: supplemental,
                no_new_privs: sc.allow_privilege_escalation == Some(false),
                masked_paths: if privileged {
                    Vec::new()
                } else {
                    MASKED_PATHS.iter().map(|s| s.to_string()).collect()
                },
                readonly_paths: if privileged {
                    Vec::new()
                } else {
                    READONLY_PATHS.iter().map(|s| s.to_string()).collect()
                },
                seccomp: Some(v1::SecurityProfile { profile_type: seccomp_type as i32, localhost_ref: String::new() }),
                ..Default::default()
            }),
        }),
        ..Default::default()
    }
}
