//! Every controller upstream kube-controller-manager 1.33 knows
//! (`cmd/kube-controller-manager/names` plus the cloud-provider ones it
//! registers), with the older name (alias) each still accepts.
//! `--controllers` accepts all of them, as upstream does, whether or not
//! rkube implements them yet.

/// `(name, alias)`; an empty alias: the controller has none.
pub const UPSTREAM_CONTROLLERS: &[(&str, &str)] = &[
    ("serviceaccount-token-controller", "serviceaccount-token"),
    ("endpoints-controller", "endpoint"),
    ("endpointslice-controller", "endpointslice"),
    ("endpointslice-mirroring-controller", "endpointslicemirroring"),
    ("replicationcontroller-controller", "replicationcontroller"),
    ("pod-garbage-collector-controller", "podgc"),
    ("resourcequota-controller", "resourcequota"),
    ("namespace-controller", "namespace"),
    ("serviceaccount-controller", "serviceaccount"),
    ("garbage-collector-controller", "garbagecollector"),
    ("daemonset-controller", "daemonset"),
    ("job-controller", "job"),
    ("deployment-controller", "deployment"),
    ("replicaset-controller", "replicaset"),
    ("horizontal-pod-autoscaler-controller", "horizontalpodautoscaling"),
    ("disruption-controller", "disruption"),
    ("statefulset-controller", "statefulset"),
    ("cronjob-controller", "cronjob"),
    ("certificatesigningrequest-signing-controller", "csrsigning"),
    ("certificatesigningrequest-approving-controller", "csrapproving"),
    ("certificatesigningrequest-cleaner-controller", "csrcleaner"),
    ("ttl-controller", "ttl"),
    ("bootstrap-signer-controller", "bootstrapsigner"),
    ("token-cleaner-controller", "tokencleaner"),
    ("node-ipam-controller", "nodeipam"),
    ("node-lifecycle-controller", "nodelifecycle"),
    ("taint-eviction-controller", ""),
    ("service-lb-controller", "service"),
    ("node-route-controller", "route"),
    ("cloud-node-lifecycle-controller", "cloud-node-lifecycle"),
    ("persistentvolume-binder-controller", "persistentvolume-binder"),
    ("persistentvolume-attach-detach-controller", "attachdetach"),
    ("persistentvolume-expander-controller", "persistentvolume-expander"),
    ("clusterrole-aggregation-controller", "clusterrole-aggregation"),
    ("persistentvolumeclaim-protection-controller", "pvc-protection"),
    ("persistentvolume-protection-controller", "pv-protection"),
    ("volumeattributesclass-protection-controller", ""),
    ("ttl-after-finished-controller", "ttl-after-finished"),
    ("root-ca-certificate-publisher-controller", "root-ca-cert-publisher"),
    ("kube-apiserver-serving-clustertrustbundle-publisher-controller", ""),
    ("ephemeral-volume-controller", "ephemeral-volume"),
    ("storageversion-garbage-collector-controller", "storage-version-gc"),
    ("resourceclaim-controller", "resource-claim-controller"),
    ("device-taint-eviction-controller", ""),
    ("legacy-serviceaccount-token-cleaner-controller", "legacy-service-account-token-cleaner"),
    ("validatingadmissionpolicy-status-controller", ""),
    ("service-cidr-controller", ""),
    ("storage-version-migrator-controller", ""),
    ("selinux-warning-controller", ""),
];

/// The canonical name of `name` (a name or an alias), if upstream knows it.
pub fn canonical(name: &str) -> Option<&'static str> {
    UPSTREAM_CONTROLLERS.iter().find(|(n, a)| *n == name || (!a.is_empty() && *a == name)).map(|(n, _)| *n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_upstreams_conventions_and_are_unique() {
        let mut seen = std::collections::BTreeSet::new();
        for (name, alias) in UPSTREAM_CONTROLLERS {
            // Upstream's TestControllerNamesConsistency.
            assert!(name.ends_with("-controller"), "{name}");
            assert!(name.chars().all(|c| c.is_ascii_lowercase() || c == '-'), "{name}");
            assert!(seen.insert(*name), "{name} twice");
            if !alias.is_empty() {
                assert!(seen.insert(*alias), "{alias} twice");
            }
        }
        assert_eq!(canonical("podgc"), Some("pod-garbage-collector-controller"));
        assert_eq!(canonical("node-ipam-controller"), Some("node-ipam-controller"));
        assert_eq!(canonical(""), None);
        assert_eq!(canonical("nope"), None);
    }
}
