//! The Node object the agent registers (pure): the labels and taints of
//! upstream's kubelet (`--node-labels`, `--register-with-taints`, checked as
//! upstream checks them), the attach/detach annotation, and the parts of
//! the status known before the first status update.

use std::collections::BTreeMap;
use std::net::IpAddr;

use k8s_openapi::api::core::v1::{Node, NodeAddress, NodeSpec, NodeStatus, Taint};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// The label servers carry (kubeadm's control-plane role label).
pub const CONTROL_PLANE_LABEL: &str = "node-role.kubernetes.io/control-plane";

/// Labels in the kubernetes.io / k8s.io namespaces a kubelet may set on
/// its own Node (upstream's kubeletapis allowed set).
const ALLOWED_LABELS: [&str; 11] = [
    "beta.kubernetes.io/arch",
    "beta.kubernetes.io/instance-type",
    "beta.kubernetes.io/os",
    "failure-domain.beta.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone",
    "kubernetes.io/arch",
    "kubernetes.io/hostname",
    "kubernetes.io/os",
    "node.kubernetes.io/instance-type",
    "topology.kubernetes.io/region",
    "topology.kubernetes.io/zone",
];
/// Label namespaces (and their subdomains) a kubelet may use.
const ALLOWED_NAMESPACES: [&str; 2] = ["kubelet.kubernetes.io", "node.kubernetes.io"];

/// What the registered Node is built from.
#[derive(Clone, Debug)]
pub struct NodeIdentity {
    /// `metadata.name`, also the hostname label and the Hostname address.
    pub name: String,
    /// The InternalIP address (`--node-ip`).
    pub node_ip: IpAddr,
    /// `--node-labels`.
    pub extra_labels: BTreeMap<String, String>,
    /// `--register-with-taints`.
    pub taints: Vec<Taint>,
    /// Go's name of the architecture (`amd64`, …).
    pub arch: String,
}

/// The default node name: the hostname, lowercased (as upstream).
pub fn default_node_name() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most buf.len() bytes into buf.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    let name = if rc == 0 {
        let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
        String::from_utf8_lossy(&buf[..end]).into_owned()
    } else {
        String::new()
    };
    name.trim().to_lowercase()
}

/// Parses `--node-labels` (`key=value,key=value`). Keys in the
/// kubernetes.io or k8s.io namespaces must be in the kubelet's allowed set
/// or namespaces, as upstream's kubelet refuses to start otherwise.
pub fn parse_node_labels(s: &str) -> Result<BTreeMap<String, String>, String> {
    let mut labels = BTreeMap::new();
    let mut unknown = Vec::new();
    for pair in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').ok_or_else(|| format!("invalid label {pair:?}: expected key=value"))?;
        let (k, v) = (k.trim(), v.trim());
        if k.is_empty() {
            return Err(format!("invalid label {pair:?}: empty key"));
        }
        let ns = k.split_once('/').map_or("", |(ns, _)| ns);
        let kube_ns =
            ns == "kubernetes.io" || ns.ends_with(".kubernetes.io") || ns == "k8s.io" || ns.ends_with(".k8s.io");
        let allowed = ALLOWED_LABELS.contains(&k)
            || ALLOWED_NAMESPACES.iter().any(|a| ns == *a || ns.ends_with(&format!(".{a}")));
        if kube_ns && !allowed {
            unknown.push(k.to_string());
        }
        labels.insert(k.to_string(), v.to_string());
    }
    if !unknown.is_empty() {
        return Err(format!(
            "unknown 'kubernetes.io' or 'k8s.io' labels specified with --node-labels: {unknown:?}; --node-labels in \
             the 'kubernetes.io' namespace must begin with an allowed prefix ({}) or be in the specifically allowed \
             set ({})",
            ALLOWED_NAMESPACES.join(", "),
            ALLOWED_LABELS.join(", ")
        ));
    }
    Ok(labels)
}

/// Parses `--register-with-taints` (`key=value:Effect` or `key:Effect`,
/// comma-separated; effects NoSchedule, PreferNoSchedule, NoExecute).
pub fn parse_taints(s: &str) -> Result<Vec<Taint>, String> {
    let mut out: Vec<Taint> = Vec::new();
    for spec in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (kv, effect) = spec.rsplit_once(':').ok_or_else(|| format!("invalid taint spec: {spec}"))?;
        if !matches!(effect, "NoSchedule" | "PreferNoSchedule" | "NoExecute") {
            return Err(format!("invalid taint effect: {effect}, unsupported taint effect"));
        }
        let (key, value) = match kv.split_once('=') {
            Some((k, v)) => (k, Some(v.to_string())),
            None => (kv, None),
        };
        if key.is_empty() {
            return Err(format!("invalid taint spec: {spec}"));
        }
        if out.iter().any(|t| t.key == key && t.effect == effect) {
            return Err(format!("duplicated taints with the same key and effect: {key}:{effect}"));
        }
        out.push(Taint { key: key.into(), value, effect: effect.into(), time_added: None });
    }
    Ok(out)
}

/// The labels the kubelet sets on its Node: hostname, os, arch (and their
/// beta twins), then `--node-labels` (which may not override them).
pub fn node_labels(id: &NodeIdentity) -> BTreeMap<String, String> {
    let mut labels = id.extra_labels.clone();
    for (k, v) in [
        ("kubernetes.io/hostname", id.name.as_str()),
        ("kubernetes.io/os", "linux"),
        ("kubernetes.io/arch", id.arch.as_str()),
        ("beta.kubernetes.io/os", "linux"),
        ("beta.kubernetes.io/arch", id.arch.as_str()),
    ] {
        labels.insert(k.into(), v.into());
    }
    labels
}

/// The addresses in `status.addresses`: InternalIP, then Hostname.
pub fn addresses(id: &NodeIdentity) -> Vec<NodeAddress> {
    vec![
        NodeAddress { type_: "InternalIP".into(), address: id.node_ip.to_string() },
        NodeAddress { type_: "Hostname".into(), address: id.name.clone() },
    ]
}

/// The Node to create: name, labels, the controller-managed attach/detach
/// annotation, the registration taints, and the addresses.
pub fn initial_node(id: &NodeIdentity) -> Node {
    Node {
        metadata: ObjectMeta {
            name: Some(id.name.clone()),
            labels: Some(node_labels(id)),
            annotations: Some(BTreeMap::from([(
                "volumes.kubernetes.io/controller-managed-attach-detach".to_string(),
                "true".to_string(),
            )])),
            ..Default::default()
        },
        spec: Some(NodeSpec { taints: (!id.taints.is_empty()).then(|| id.taints.clone()), ..Default::default() }),
        status: Some(NodeStatus { addresses: Some(addresses(id)), ..Default::default() }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id() -> NodeIdentity {
        NodeIdentity {
            name: "node-a".into(),
            node_ip: "10.0.0.5".parse().unwrap(),
            extra_labels: parse_node_labels("team=a, node.kubernetes.io/pool=x").unwrap(),
            taints: parse_taints("dedicated=infra:NoSchedule,gpu:NoExecute").unwrap(),
            arch: "amd64".into(),
        }
    }

    #[test]
    fn node_has_upstream_labels_taints_and_addresses() {
        let n = initial_node(&id());
        let labels = n.metadata.labels.unwrap();
        assert_eq!(labels["kubernetes.io/hostname"], "node-a");
        assert_eq!(labels["kubernetes.io/os"], "linux");
        assert_eq!(labels["kubernetes.io/arch"], "amd64");
        assert_eq!(labels["beta.kubernetes.io/os"], "linux");
        assert_eq!(labels["beta.kubernetes.io/arch"], "amd64");
        assert_eq!(labels["team"], "a");
        assert_eq!(labels["node.kubernetes.io/pool"], "x");
        assert!(!labels.contains_key(CONTROL_PLANE_LABEL), "a kubelet may not set role labels itself");
        let taints = n.spec.unwrap().taints.unwrap();
        assert_eq!(taints.len(), 2);
        assert_eq!(
            (taints[0].key.as_str(), taints[0].value.as_deref(), taints[0].effect.as_str()),
            ("dedicated", Some("infra"), "NoSchedule")
        );
        assert_eq!(
            (taints[1].key.as_str(), taints[1].value.as_deref(), taints[1].effect.as_str()),
            ("gpu", None, "NoExecute")
        );
        let addrs = n.status.unwrap().addresses.unwrap();
        assert_eq!((addrs[0].type_.as_str(), addrs[0].address.as_str()), ("InternalIP", "10.0.0.5"));
        assert_eq!((addrs[1].type_.as_str(), addrs[1].address.as_str()), ("Hostname", "node-a"));
    }

    #[test]
    fn flags_are_checked_as_upstream() {
        let e = parse_node_labels("node-role.kubernetes.io/worker=").unwrap_err();
        assert!(e.starts_with("unknown 'kubernetes.io' or 'k8s.io' labels specified with --node-labels"), "{e}");
        assert!(parse_node_labels("example.com/x=y,kubelet.kubernetes.io/a=b,topology.kubernetes.io/zone=z").is_ok());
        assert!(parse_node_labels("novalue").is_err());
        assert!(parse_taints("a=b:Sometimes").unwrap_err().contains("invalid taint effect"));
        assert!(parse_taints("a=b").is_err());
        assert!(parse_taints("a:NoSchedule,a=x:NoSchedule").unwrap_err().contains("duplicated"));
        assert!(parse_taints("").unwrap().is_empty());
        let name = default_node_name();
        assert!(!name.is_empty() && name == name.to_lowercase());
    }
}
