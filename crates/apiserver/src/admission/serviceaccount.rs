//! ServiceAccount admission (plugin/pkg/admission/serviceaccount): a new
//! pod runs as a ServiceAccount of its namespace — `default` when it names
//! none — which must exist (403 `error looking up service account
//! <ns>/<name>: serviceaccount "<name>" not found`). Unless the pod or the
//! account sets `automountServiceAccountToken: false`, every container and
//! init container mounts the projected volume `kube-api-access-<5 random>`
//! (a bound token of 3607 s, the `kube-root-ca.crt` ConfigMap's `ca.crt`,
//! the namespace) read-only at `/var/run/secrets/kubernetes.io/serviceaccount`.
//! A pod without imagePullSecrets gets the account's. Mirror pods
//! (`kubernetes.io/config.mirror`) are not changed and may reference no
//! service account, secret or token projection.
//!
//! Not here yet: the `kubernetes.io/enforce-mountable-secrets` annotation.

use std::sync::Arc;

use async_trait::async_trait;
use rkube_apimachinery::{validation, ApiError};
use serde_json::{json, Value};

use super::builtin::forbidden;
use super::{Attributes, Operation, Plugin};
use crate::storage::ResourceStore;

/// The account a pod that names none runs as.
pub const DEFAULT_SERVICE_ACCOUNT: &str = "default";
/// Where the token volume is mounted.
pub const TOKEN_MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
/// The prefix of the token volume's name.
pub const TOKEN_VOLUME_PREFIX: &str = "kube-api-access-";
/// The projected token's lifetime in seconds (upstream's
/// `WarnOnlyBoundTokenExpirationSeconds`: 1 h + 7 s).
pub const TOKEN_EXPIRATION_SECONDS: i64 = 3607;
/// The annotation marking a mirror pod.
const MIRROR_POD_ANNOTATION: &str = "kubernetes.io/config.mirror";

/// How many live lookups of the `default` account admission makes after
/// missing it in the cache (upstream's `MaxRetry`): the ServiceAccount
/// controller creates it right after the namespace.
pub const DEFAULT_ACCOUNT_ATTEMPTS: usize = 10;

/// The ServiceAccount plugin over the ServiceAccount store.
pub struct ServiceAccount {
    accounts: Option<Arc<ResourceStore>>,
}

impl ServiceAccount {
    /// The plugin, reading accounts from `accounts` (`None`: a server
    /// without ServiceAccounts, where pods are admitted unchanged).
    pub fn new(accounts: Option<Arc<ResourceStore>>) -> ServiceAccount {
        ServiceAccount { accounts }
    }

    /// The pod's account, as upstream's `getServiceAccount`: the watch
    /// cache, then live lookups — [`DEFAULT_ACCOUNT_ATTEMPTS`] for
    /// `default`, 100–200 ms apart, one for any other. A missing account
    /// is a 403 `error looking up service account <ns>/<name>:
    /// serviceaccount "<name>" not found`. `Ok(None)`: no account store.
    async fn account(&self, attrs: &Attributes<'_>, pod: &Value, name: &str) -> Result<Option<Value>, ApiError> {
        let Some(store) = &self.accounts else { return Ok(None) };
        let ns = attrs.namespace;
        let failed =
            |e: String| forbidden(attrs, Some(pod), format!("error looking up service account {ns}/{name}: {e}"));
        if let Some(sa) = store.get_cached(ns, name) {
            return Ok(Some(sa));
        }
        let attempts = if name == DEFAULT_SERVICE_ACCOUNT { DEFAULT_ACCOUNT_ATTEMPTS } else { 1 };
        // One jittered interval for all attempts, as upstream.
        let pause = std::time::Duration::from_millis(100 + u64::from(rand_below_100()));
        for attempt in 0..attempts {
            if attempt > 0 {
                tokio::time::sleep(pause).await;
            }
            match store.get(ns, name, "").await {
                Ok(sa) => return Ok(Some(sa)),
                Err(ApiError::NotFound { .. }) => {}
                Err(e) => return Err(failed(e.to_string())),
            }
        }
        Err(failed(format!("serviceaccount \"{name}\" not found")))
    }
}

/// A number below 100 (the jitter of the retry interval).
fn rand_below_100() -> u8 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u8(0);
    (h.finish() % 100) as u8
}

fn is_mirror(pod: &Value) -> bool {
    pod.pointer("/metadata/annotations").and_then(|a| a.get(MIRROR_POD_ANNOTATION)).is_some()
}

fn is_pod_create(attrs: &Attributes<'_>) -> bool {
    attrs.operation == Operation::Create && attrs.is("", "pods", "")
}

/// The account the pod names (the deprecated `serviceAccount` when
/// `serviceAccountName` is empty, as the v1 conversion reads it).
fn account_name(pod: &Value) -> String {
    ["serviceAccountName", "serviceAccount"]
        .iter()
        .filter_map(|f| pod.pointer(&format!("/spec/{f}")).and_then(Value::as_str))
        .find(|s| !s.is_empty())
        .unwrap_or("")
        .to_string()
}

/// The pod's `automountServiceAccountToken`, else the account's, else true.
fn should_automount(sa: &Value, pod: &Value) -> bool {
    pod.pointer("/spec/automountServiceAccountToken")
        .and_then(Value::as_bool)
        .or_else(|| sa.get("automountServiceAccountToken").and_then(Value::as_bool))
        .unwrap_or(true)
}

/// The projected volume source of the service-account token.
pub fn token_volume_source() -> Value {
    json!({
        "defaultMode": 420,
        "sources": [
            {"serviceAccountToken": {"expirationSeconds": TOKEN_EXPIRATION_SECONDS, "path": "token"}},
            {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {"downwardAPI": {"items": [{"path": "namespace",
                "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}
        ]
    })
}

/// Mounts the token volume in every container and init container that
/// mounts nothing at the token path, adding the volume when one does.
fn mount_token(pod: &mut Value) {
    let existing = pod
        .pointer("/spec/volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| v.get("name").and_then(Value::as_str))
        .find(|n| n.starts_with(TOKEN_VOLUME_PREFIX))
        .map(str::to_string);
    let volume_name = existing.clone().unwrap_or_else(|| validation::generate_name(TOKEN_VOLUME_PREFIX));
    let mount = json!({"name": volume_name, "readOnly": true, "mountPath": TOKEN_MOUNT_PATH});
    let mut needs_volume = false;
    for field in ["initContainers", "containers"] {
        let Some(list) = pod.pointer_mut(&format!("/spec/{field}")).and_then(Value::as_array_mut) else { continue };
        for c in list {
            let mounted = c
                .get("volumeMounts")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .any(|m| m.get("mountPath").and_then(Value::as_str) == Some(TOKEN_MOUNT_PATH));
            if mounted {
                continue;
            }
            if !c["volumeMounts"].is_array() {
                c["volumeMounts"] = json!([]);
            }
            c["volumeMounts"].as_array_mut().expect("array").push(mount.clone());
            needs_volume = true;
        }
    }
    if existing.is_none() && needs_volume {
        let volumes = &mut pod["spec"]["volumes"];
        if !volumes.is_array() {
            *volumes = json!([]);
        }
        volumes.as_array_mut().expect("array").push(json!({"name": volume_name, "projected": token_volume_source()}));
    }
}

/// Whether the pod references any secret (upstream's `VisitPodSecretNames`).
fn references_secrets(pod: &Value) -> bool {
    let spec = &pod["spec"];
    let non_empty = |v: Option<&Value>| v.and_then(Value::as_array).is_some_and(|a| !a.is_empty());
    if non_empty(spec.get("imagePullSecrets")) {
        return true;
    }
    let containers = ["initContainers", "containers", "ephemeralContainers"]
        .iter()
        .flat_map(|k| spec.get(*k).and_then(Value::as_array).into_iter().flatten());
    for c in containers {
        let env = c.get("env").and_then(Value::as_array).into_iter().flatten();
        if env.into_iter().any(|e| e.pointer("/valueFrom/secretKeyRef").is_some()) {
            return true;
        }
        let env_from = c.get("envFrom").and_then(Value::as_array).into_iter().flatten();
        if env_from.into_iter().any(|e| e.get("secretRef").is_some()) {
            return true;
        }
    }
    let refs = [
        "/secret",
        "/azureFile",
        "/cephfs/secretRef",
        "/cinder/secretRef",
        "/flexVolume/secretRef",
        "/iscsi/secretRef",
        "/rbd/secretRef",
        "/scaleIO/secretRef",
        "/storageos/secretRef",
        "/csi/nodePublishSecretRef",
    ];
    spec.get("volumes").and_then(Value::as_array).into_iter().flatten().any(|v| {
        refs.iter().any(|r| v.pointer(r).is_some_and(|x| !x.is_null()))
            || v.pointer("/projected/sources")
                .and_then(Value::as_array)
                .is_some_and(|s| s.iter().any(|p| p.get("secret").is_some()))
    })
}

/// What a mirror pod may not reference.
fn mirror_pod_error(pod: &Value) -> Option<&'static str> {
    if !account_name(pod).is_empty() {
        return Some("a mirror pod may not reference service accounts");
    }
    if references_secrets(pod) {
        return Some("a mirror pod may not reference secrets");
    }
    let projections = pod
        .pointer("/spec/volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| v.pointer("/projected/sources").and_then(Value::as_array))
        .flatten();
    for p in projections {
        if p.get("serviceAccountToken").is_some() {
            return Some("a mirror pod may not use ServiceAccountToken volume projections");
        }
        if p.get("clusterTrustBundle").is_some() {
            return Some("a mirror pod may not use ClusterTrustBundle volume projections");
        }
    }
    None
}

#[async_trait]
impl Plugin for ServiceAccount {
    fn name(&self) -> &'static str {
        "ServiceAccount"
    }

    async fn admit(&self, attrs: &Attributes<'_>, object: Option<&mut Value>) -> Result<(), ApiError> {
        let Some(pod) = object else { return Ok(()) };
        if !is_pod_create(attrs) || is_mirror(pod) {
            return Ok(());
        }
        let mut name = account_name(pod);
        if name.is_empty() {
            name = DEFAULT_SERVICE_ACCOUNT.to_string();
        }
        // v1 keeps the deprecated field in step with the name.
        pod["spec"]["serviceAccountName"] = json!(name);
        pod["spec"]["serviceAccount"] = json!(name);
        let Some(sa) = self.account(attrs, pod, &name).await? else { return Ok(()) };
        if should_automount(&sa, pod) {
            mount_token(pod);
        }
        let own = pod.pointer("/spec/imagePullSecrets").and_then(Value::as_array).is_some_and(|a| !a.is_empty());
        let theirs: Vec<Value> = sa
            .get("imagePullSecrets")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|s| json!({"name": s.get("name").cloned().unwrap_or(json!(""))}))
            .collect();
        if !own && !theirs.is_empty() {
            pod["spec"]["imagePullSecrets"] = json!(theirs);
        }
        Ok(())
    }

    async fn validate(&self, attrs: &Attributes<'_>, object: Option<&Value>) -> Result<(), ApiError> {
        let Some(pod) = object else { return Ok(()) };
        if !is_pod_create(attrs) {
            return Ok(());
        }
        if is_mirror(pod) {
            return match mirror_pod_error(pod) {
                Some(msg) => Err(forbidden(attrs, Some(pod), msg)),
                None => Ok(()),
            };
        }
        let name = account_name(pod);
        self.account(attrs, pod, &name).await.map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_container_mounts_one_token_volume() {
        let mut pod = json!({"spec": {
            "initContainers": [{"name": "i"}],
            "containers": [{"name": "a"}, {"name": "b", "volumeMounts": [{"name": "own", "mountPath": TOKEN_MOUNT_PATH}]}]}});
        mount_token(&mut pod);
        let volumes = pod["spec"]["volumes"].as_array().unwrap();
        assert_eq!(volumes.len(), 1);
        let name = volumes[0]["name"].as_str().unwrap();
        assert!(name.starts_with("kube-api-access-") && name.len() == "kube-api-access-".len() + 5, "{name}");
        assert_eq!(volumes[0]["projected"], token_volume_source());
        let mount = json!([{"name": name, "readOnly": true, "mountPath": TOKEN_MOUNT_PATH}]);
        assert_eq!(pod["spec"]["initContainers"][0]["volumeMounts"], mount);
        assert_eq!(pod["spec"]["containers"][0]["volumeMounts"], mount);
        assert_eq!(pod["spec"]["containers"][1]["volumeMounts"].as_array().unwrap().len(), 1, "its own mount stays");
    }

    #[test]
    fn automount_follows_pod_then_account() {
        let sa_off = json!({"automountServiceAccountToken": false});
        assert!(!should_automount(&sa_off, &json!({"spec": {}})));
        assert!(should_automount(&sa_off, &json!({"spec": {"automountServiceAccountToken": true}})));
        assert!(should_automount(&json!({}), &json!({"spec": {}})));
    }

    #[test]
    fn mirror_pods_reference_nothing() {
        let sa = json!({"spec": {"serviceAccountName": "x"}});
        assert_eq!(mirror_pod_error(&sa), Some("a mirror pod may not reference service accounts"));
        let secret = json!({"spec": {"volumes": [{"name": "v", "secret": {"secretName": "s"}}]}});
        assert_eq!(mirror_pod_error(&secret), Some("a mirror pod may not reference secrets"));
        let token = json!({"spec": {"volumes": [{"name": "v", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}]}}]}});
        assert_eq!(mirror_pod_error(&token), Some("a mirror pod may not use ServiceAccountToken volume projections"));
        assert_eq!(mirror_pod_error(&json!({"spec": {"containers": [{"name": "c"}]}})), None);
    }
}
