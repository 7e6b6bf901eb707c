//! Static pods (upstream's kubelet file source and mirror pods): every
//! manifest in `<data-dir>/agent/manifests` (YAML or JSON, one Pod each)
//! runs on this node without the API server deciding anything. The pod is
//! named `<name>-<node>`, gets a UID that hashes its content, the node and
//! the file (so an edited manifest is a new pod), and the annotations
//! `kubernetes.io/config.hash`, `config.seen` and `config.source: file`.
//! Its mirror in the API carries `kubernetes.io/config.mirror: <hash>` and
//! a controller owner reference to the Node; a mirror deleted through the
//! API is created again, and one whose manifest is gone is deleted.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::{Pod, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

/// Annotation: the static pod's hash (its UID).
pub const CONFIG_HASH: &str = "kubernetes.io/config.hash";
/// Annotation: when the kubelet first saw the manifest.
pub const CONFIG_SEEN: &str = "kubernetes.io/config.seen";
/// Annotation: where the pod came from (`file`, or `api` for pods from the API server).
pub const CONFIG_SOURCE: &str = "kubernetes.io/config.source";
/// Annotation on a mirror pod: the static pod's hash.
pub const CONFIG_MIRROR: &str = "kubernetes.io/config.mirror";

/// `<data-dir>/agent/manifests`: the static pod directory.
pub fn manifests_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("agent").join("manifests")
}

/// Whether `pod` is a mirror pod (the API's copy of a static pod).
pub fn is_mirror(pod: &Pod) -> bool {
    pod.metadata.annotations.as_ref().is_some_and(|a| a.contains_key(CONFIG_MIRROR))
}

/// The static pod of one manifest on `node`. Err: what is wrong with the
/// file (not a Pod, unreadable YAML, no name).
pub fn from_manifest(bytes: &[u8], node: &str, source: &Path) -> Result<Pod, String> {
    let value: serde_json::Value =
        serde_yaml::from_slice(bytes).map_err(|e| format!("{}: invalid YAML or JSON: {e}", source.display()))?;
    if value.get("kind").and_then(|k| k.as_str()) != Some("Pod") {
        return Err(format!("{}: a static pod manifest must hold one object of kind Pod", source.display()));
    }
    let mut pod: Pod =
        serde_json::from_value(value).map_err(|e| format!("{}: not a valid Pod: {e}", source.display()))?;
    let name = pod
        .metadata
        .name
        .clone()
        .filter(|n| !n.is_empty())
        .ok_or_else(|| format!("{}: the Pod has no metadata.name", source.display()))?;
    // upstream: the hash covers the decoded pod, the node and the file.
    let mut input = serde_json::to_vec(&pod).unwrap_or_default();
    input.extend_from_slice(format!("host:{node}file:{}", source.display()).as_bytes());
    let digest = ring::digest::digest(&ring::digest::SHA256, &input);
    let hash: String = digest.as_ref()[..16].iter().map(|b| format!("{b:02x}")).collect();
    pod.metadata.name = Some(format!("{name}-{node}"));
    pod.metadata.namespace =
        Some(pod.metadata.namespace.clone().filter(|n| !n.is_empty()).unwrap_or_else(|| "default".into()));
    pod.metadata.uid = Some(hash.clone());
    let annotations = pod.metadata.annotations.get_or_insert_with(BTreeMap::new);
    annotations.insert(CONFIG_HASH.into(), hash);
    annotations.insert(CONFIG_SOURCE.into(), "file".into());
    annotations.entry(CONFIG_SEEN.into()).or_insert_with(|| jiff::Timestamp::now().to_string());
    let spec = pod.spec.get_or_insert_with(Default::default);
    spec.node_name = Some(node.to_string());
    // upstream: static pods tolerate every NoExecute taint.
    spec.tolerations.get_or_insert_with(Vec::new).push(Toleration {
        operator: Some("Exists".into()),
        effect: Some("NoExecute".into()),
        ..Default::default()
    });
    pod.status = None;
    Ok(pod)
}

/// Every static pod in `dir` by UID; unreadable manifests are logged and
/// skipped (as upstream, one bad file does not stop the others).
pub fn read_dir(dir: &Path, node: &str, previous: &BTreeMap<String, Pod>) -> BTreeMap<String, Pod> {
    let mut out = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir(dir) else { return out };
    let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    paths.sort();
    for path in paths {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if name.starts_with('.') || !path.is_file() {
            continue;
        }
        let Ok(bytes) = std::fs::read(&path) else { continue };
        match from_manifest(&bytes, node, &path) {
            Ok(mut pod) => {
                let uid = pod.metadata.uid.clone().unwrap_or_default();
                // Keep the first-seen time of an unchanged manifest.
                if let Some(seen) =
                    previous.get(&uid).and_then(|p| p.metadata.annotations.as_ref()?.get(CONFIG_SEEN).cloned())
                {
                    pod.metadata.annotations.get_or_insert_with(BTreeMap::new).insert(CONFIG_SEEN.into(), seen);
                }
                out.insert(uid, pod);
            }
            Err(e) => tracing::warn!(component = "kubelet", "skipping static pod manifest: {e}"),
        }
    }
    out
}

/// The mirror pod of `pod` on the node `node_uid`: the pod with the mirror
/// annotation and a controller reference to its Node, without UID or status.
pub fn mirror_of(pod: &Pod, node: &str, node_uid: &str) -> Pod {
    let mut m = pod.clone();
    m.metadata.uid = None;
    m.metadata.resource_version = None;
    let hash = pod.metadata.uid.clone().unwrap_or_default();
    m.metadata.annotations.get_or_insert_with(BTreeMap::new).insert(CONFIG_MIRROR.into(), hash);
    m.metadata.owner_references = Some(vec![OwnerReference {
        api_version: "v1".into(),
        kind: "Node".into(),
        name: node.into(),
        uid: node_uid.into(),
        controller: Some(true),
        block_owner_deletion: None,
    }]);
    m.status = None;
    m
}

/// The static pod hash a mirror pod stands for.
pub fn mirror_hash(pod: &Pod) -> Option<&str> {
    pod.metadata.annotations.as_ref()?.get(CONFIG_MIRROR).map(String::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MANIFEST: &str =
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n  - name: c\n    image: busybox:1\n";

    #[test]
    fn a_manifest_becomes_a_static_pod_named_after_the_node() {
        let p = from_manifest(MANIFEST.as_bytes(), "n1", Path::new("/m/web.yaml")).unwrap();
        assert_eq!(p.metadata.name.as_deref(), Some("web-n1"));
        assert_eq!(p.metadata.namespace.as_deref(), Some("default"));
        let a = p.metadata.annotations.as_ref().unwrap();
        assert_eq!(a[CONFIG_SOURCE], "file");
        assert_eq!(Some(&a[CONFIG_HASH]), p.metadata.uid.as_ref());
        assert_eq!(p.spec.as_ref().unwrap().node_name.as_deref(), Some("n1"));
        // The same manifest on another node, or edited, is another pod.
        let other = from_manifest(MANIFEST.as_bytes(), "n2", Path::new("/m/web.yaml")).unwrap();
        assert_ne!(other.metadata.uid, p.metadata.uid);
        let edited =
            from_manifest(MANIFEST.replace("busybox:1", "busybox:2").as_bytes(), "n1", Path::new("/m/web.yaml"))
                .unwrap();
        assert_ne!(edited.metadata.uid, p.metadata.uid);
        let again = from_manifest(MANIFEST.as_bytes(), "n1", Path::new("/m/web.yaml")).unwrap();
        assert_eq!(again.metadata.uid, p.metadata.uid);
    }

    #[test]
    fn bad_manifests_say_what_is_wrong() {
        let e = from_manifest(b"kind: Service\n", "n1", Path::new("/m/x.yaml")).unwrap_err();
        assert!(e.contains("kind Pod"), "{e}");
        let e = from_manifest(b"kind: Pod\nspec: {containers: []}\n", "n1", Path::new("/m/x.yaml")).unwrap_err();
        assert!(e.contains("metadata.name"), "{e}");
    }

    #[test]
    fn the_mirror_points_at_its_node_and_static_pod() {
        let p = from_manifest(MANIFEST.as_bytes(), "n1", Path::new("/m/web.yaml")).unwrap();
        let m = mirror_of(&p, "n1", "node-uid");
        assert!(is_mirror(&m));
        assert_eq!(mirror_hash(&m), p.metadata.uid.as_deref());
        let o = &m.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!(
            (o.kind.as_str(), o.name.as_str(), o.uid.as_str(), o.controller),
            ("Node", "n1", "node-uid", Some(true))
        );
        assert!(m.metadata.uid.is_none());
    }
}
