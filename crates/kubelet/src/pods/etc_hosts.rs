//! The kubelet-managed `/etc/hosts` of a pod's containers (upstream's
//! `makeHostsMount`): localhost entries, the pod's own IPs under its
//! hostname (and FQDN with a subdomain), then `hostAliases`; for
//! hostNetwork pods the host's file. Written under the pod's directory and
//! mounted at `/etc/hosts` unless a container mounts something there itself.

use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::{Container, Pod};

use crate::cri::v1;

const MANAGED_HEADER: &str = "# Kubernetes-managed hosts file.\n";
const MANAGED_HOST_NETWORK_HEADER: &str = "# Kubernetes-managed hosts file (host network).\n";

/// The file's content for a pod network pod with `ips`, `hostname` and
/// the optional `domain` (`<subdomain>.<ns>.svc.<cluster-domain>`).
pub fn content(pod: &Pod, ips: &[String], hostname: &str, domain: Option<&str>) -> String {
    let mut s = String::from(MANAGED_HEADER);
    s.push_str("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n");
    s.push_str("fe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n");
    for ip in ips {
        match domain {
            Some(d) => s.push_str(&format!("{ip}\t{hostname}.{d}\t{hostname}\n")),
            None => s.push_str(&format!("{ip}\t{hostname}\n")),
        }
    }
    s.push_str(&aliases(pod));
    s
}

/// The hostNetwork variant: the host's file under the managed header.
pub fn host_network_content(pod: &Pod, host_hosts: &str) -> String {
    format!("{MANAGED_HOST_NETWORK_HEADER}{host_hosts}{}", aliases(pod))
}

fn aliases(pod: &Pod) -> String {
    let list = pod.spec.as_ref().and_then(|s| s.host_aliases.clone()).unwrap_or_default();
    if list.is_empty() {
        return String::new();
    }
    let mut s = String::from("\n# Entries added by HostAliases.\n");
    for a in list {
        s.push_str(&format!("{}\t{}\n", a.ip, a.hostnames.unwrap_or_default().join("\t")));
    }
    s
}

/// `<pod dir>/etc-hosts`: where the file is written.
pub fn path(pod_dir: &Path) -> PathBuf {
    pod_dir.join("etc-hosts")
}

/// Writes the file (replacing it atomically) and returns its path.
pub fn write(pod_dir: &Path, text: &str) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(pod_dir)?;
    let p = path(pod_dir);
    let tmp = pod_dir.join(".etc-hosts.tmp");
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, &p)?;
    Ok(p)
}

/// The mount of `hosts` at /etc/hosts, unless `c` mounts /etc/hosts itself.
pub fn mount(c: &Container, hosts: &Path) -> Option<v1::Mount> {
    if c.volume_mounts.iter().flatten().any(|m| m.mount_path.trim_end_matches('/') == "/etc/hosts") {
        return None;
    }
    Some(v1::Mount {
        container_path: "/etc/hosts".into(),
        host_path: hosts.to_string_lossy().into_owned(),
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{HostAlias, PodSpec};

    #[test]
    fn the_managed_file_lists_the_pod_under_its_names_then_aliases() {
        let pod = Pod {
            spec: Some(PodSpec {
                host_aliases: Some(vec![HostAlias {
                    ip: "1.2.3.4".into(),
                    hostnames: Some(vec!["foo".into(), "bar".into()]),
                }]),
                ..Default::default()
            }),
            ..Default::default()
        };
        let text = content(&pod, &["10.42.0.5".into()], "web-0", Some("nginx.default.svc.cluster.local"));
        assert!(text.starts_with("# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n"), "{text}");
        assert!(text.contains("\n10.42.0.5\tweb-0.nginx.default.svc.cluster.local\tweb-0\n"), "{text}");
        assert!(text.ends_with("\n# Entries added by HostAliases.\n1.2.3.4\tfoo\tbar\n"), "{text}");
        let plain = content(&Pod::default(), &["10.42.0.6".into()], "hello", None);
        assert!(plain.ends_with("fe00::2\tip6-allrouters\n10.42.0.6\thello\n"), "{plain}");
    }
}
