//! rkube's NetworkPolicy controller: enforces networking.k8s.io/v1
//! NetworkPolicies for the pods of one node in an nftables table, as
//! kube-router's netpol controller does inside k3s.
//!
//! It is an API client (identity `system:kube-proxy`, see [`ensure_rbac`])
//! that watches NetworkPolicies, Pods (all namespaces: peers can be
//! anywhere) and Namespaces, recomputes the node's ruleset on every change
//! ([`ruleset::compute`], a pure function) and replaces its own nft table
//! (family inet) atomically with `nft -f`. The enforcement point is a chain
//! on the forward hook: pod-to-pod traffic on one node crosses the bridge
//! and reaches the IPv4 forward hook through br_netfilter
//! (`net.bridge.bridge-nf-call-iptables=1`); traffic between nodes is
//! routed; Service traffic is DNAT'd before forward, so the real pod IP is
//! seen. Traffic the node itself originates (kubelet probes) is not
//! forwarded and so stays allowed. A second chain on the input hook applies
//! the same egress verdicts to traffic from pods to the node's own
//! addresses (delivered locally, so never forwarded), as kube-router
//! filters INPUT too.

pub mod nft;
pub mod ruleset;

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Namespace, Pod};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, RoleRef, Subject};
use kube::api::{Api, ObjectMeta, PostParams};
use kube::runtime::reflector::{self, Store};
use kube::runtime::watcher::{self, Event};
use kube::runtime::WatchStreamExt;
use serde::de::DeserializeOwned;
use tokio::sync::Notify;

const COMPONENT: &str = "network-policy";

/// What the controller needs.
pub struct NetworkPolicyConfig {
    /// API client; authenticates as `system:kube-proxy`, which
    /// [`ensure_rbac`] lets get/list/watch networkpolicies, pods, namespaces.
    pub client: kube::Client,
    /// Only pods with `spec.nodeName` equal to this are policed here (both
    /// ingress to and egress from them).
    pub node_name: String,
    /// The nft table (family inet) this controller owns and alone touches;
    /// `[A-Za-z][A-Za-z0-9_-]*`, at most 64 bytes.
    pub table: String,
}

/// Errors of the controller.
#[derive(Debug, thiserror::Error)]
pub enum NetpolError {
    /// The table name is not an nft identifier.
    #[error(
        "invalid nft table name {0:?}: use letters, digits, '_' and '-', starting with a letter, at most 64 bytes"
    )]
    InvalidTable(String),
    /// Running `nft` failed (not installed, not permitted, or it rejected the ruleset).
    #[error("nft {action} failed: {detail}; check that nftables is installed and that rkube runs with CAP_NET_ADMIN")]
    Nft { action: String, detail: String },
    /// An informer's store was dropped before it synced.
    #[error("the {0} informer stopped before its initial list completed")]
    Informer(&'static str),
}

/// The ClusterRole (and binding) name.
pub const RBAC_NAME: &str = "rkube:network-policy";
/// The user the controller authenticates as.
pub const USER: &str = "system:kube-proxy";

/// The ClusterRole `rkube:network-policy` (get/list/watch networkpolicies,
/// pods, namespaces) and its ClusterRoleBinding to user `system:kube-proxy`.
pub fn rbac_objects() -> (ClusterRole, ClusterRoleBinding) {
    const RBAC: &str = "rbac.authorization.k8s.io";
    let verbs = || vec!["get".to_string(), "list".into(), "watch".into()];
    let role = ClusterRole {
        metadata: ObjectMeta { name: Some(RBAC_NAME.into()), ..Default::default() },
        rules: Some(vec![
            PolicyRule {
                api_groups: Some(vec!["networking.k8s.io".into()]),
                resources: Some(vec!["networkpolicies".into()]),
                verbs: verbs(),
                ..Default::default()
            },
            PolicyRule {
                api_groups: Some(vec!["".into()]),
                resources: Some(vec!["pods".into(), "namespaces".into()]),
                verbs: verbs(),
                ..Default::default()
            },
        ]),
        aggregation_rule: None,
    };
    let binding = ClusterRoleBinding {
        metadata: ObjectMeta { name: Some(RBAC_NAME.into()), ..Default::default() },
        role_ref: RoleRef { api_group: RBAC.into(), kind: "ClusterRole".into(), name: RBAC_NAME.into() },
        subjects: Some(vec![Subject {
            kind: "User".into(),
            name: USER.into(),
            api_group: Some(RBAC.into()),
            namespace: None,
        }]),
    };
    (role, binding)
}

async fn create_if_missing<K>(api: Api<K>, obj: &K) -> Result<(), kube::Error>
where
    K: kube::Resource + Clone + DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    match api.create(&PostParams::default(), obj).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
        Err(e) => Err(e),
    }
}

/// Creates, with admin credentials, whichever of [`rbac_objects`] is
/// missing (an existing object is left as it is).
pub async fn ensure_rbac(admin: &kube::Client) -> Result<(), kube::Error> {
    let (role, binding) = rbac_objects();
    create_if_missing(Api::<ClusterRole>::all(admin.clone()), &role).await?;
    create_if_missing(Api::<ClusterRoleBinding>::all(admin.clone()), &binding).await
}

/// Deletes table `table` (family inet) if present; idempotent.
pub fn cleanup(table: &str) -> Result<(), NetpolError> {
    if !ruleset::valid_table_name(table) {
        return Err(NetpolError::InvalidTable(table.into()));
    }
    nft::apply(&cleanup_script(table))
}

/// The `nft -f` script [`cleanup`] applies: declare the table (a no-op when
/// it exists) and delete it, in one transaction, so that it succeeds
/// whether or not the table exists.
pub fn cleanup_script(table: &str) -> String {
    format!("table inet {table}\ndelete table inet {table}\n")
}

/// Starts a reflector over all namespaces; each event wakes `notify`.
fn informer<K>(
    client: &kube::Client,
    notify: Arc<Notify>,
    kind: &'static str,
) -> (Store<K>, tokio::task::JoinHandle<()>)
where
    K: kube::Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
{
    let (store, writer) = reflector::store::<K>();
    let api: Api<K> = Api::all(client.clone());
    let stream = reflector::reflector(writer, watcher::watcher(api, watcher::Config::default()).default_backoff());
    let task = tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        while let Some(ev) = stream.next().await {
            match ev {
                Ok(Event::Apply(_) | Event::Delete(_) | Event::InitDone) => notify.notify_one(),
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(component = COMPONENT, kind, error = %e, "watch failed; retrying with backoff")
                }
            }
        }
    });
    (store, task)
}

fn snapshot<K>(s: &Store<K>) -> Vec<K>
where
    K: kube::Resource<DynamicType = ()> + Clone + 'static,
{
    s.state().iter().map(|o| (**o).clone()).collect()
}

/// Runs the controller until `stop` completes: waits for the three
/// informers' initial lists, then after every burst of changes recomputes
/// the ruleset and, when it differs from the last applied one, replaces the
/// table with `nft -f`. A failed apply is logged and retried every 5 s
/// until it succeeds. The table is left in place when `stop` completes (as
/// kube-router leaves its rules on restart); [`cleanup`] removes it.
///
/// Errors: [`NetpolError::InvalidTable`] for an unusable table name,
/// [`NetpolError::Informer`] if an informer ends before syncing.
pub async fn run(
    config: NetworkPolicyConfig,
    stop: impl std::future::Future<Output = ()> + Send,
) -> Result<(), NetpolError> {
    if !ruleset::valid_table_name(&config.table) {
        return Err(NetpolError::InvalidTable(config.table));
    }
    let notify = Arc::new(Notify::new());
    let (policies, t1) = informer::<NetworkPolicy>(&config.client, notify.clone(), "NetworkPolicy");
    let (pods, t2) = informer::<Pod>(&config.client, notify.clone(), "Pod");
    let (namespaces, t3) = informer::<Namespace>(&config.client, notify.clone(), "Namespace");
    let tasks = [t1, t2, t3];
    let result = async {
        let mut stop = std::pin::pin!(stop);
        let ready = async {
            policies.wait_until_ready().await.map_err(|_| NetpolError::Informer("NetworkPolicy"))?;
            pods.wait_until_ready().await.map_err(|_| NetpolError::Informer("Pod"))?;
            namespaces.wait_until_ready().await.map_err(|_| NetpolError::Informer("Namespace"))
        };
        tokio::select! {
            r = ready => r?,
            _ = &mut stop => return Ok(()),
        }
        tracing::info!(component = COMPONENT, node = %config.node_name, table = %config.table, "informers synced; enforcing NetworkPolicies");
        let mut last: Option<String> = None;
        let mut failed = false;
        loop {
            let script = ruleset::compute(
                &config.table,
                &config.node_name,
                &snapshot(&policies),
                &snapshot(&pods),
                &snapshot(&namespaces),
            );
            let rendered = script.render();
            if last.as_deref() != Some(rendered.as_str()) {
                let to_apply = rendered.clone();
                let applied = tokio::task::spawn_blocking(move || nft::apply(&to_apply))
                    .await
                    .unwrap_or_else(|e| Err(NetpolError::Nft { action: "apply".into(), detail: e.to_string() }));
                match applied {
                    Ok(()) => {
                        tracing::info!(component = COMPONENT, table = %config.table, isolated_pods = script.pods.len(), "ruleset applied");
                        last = Some(rendered);
                        failed = false;
                    }
                    Err(e) => {
                        tracing::error!(component = COMPONENT, table = %config.table, error = %e, "applying the ruleset failed; retrying in 5s");
                        failed = true;
                    }
                }
            }
            let retry = async {
                if failed {
                    tokio::time::sleep(Duration::from_secs(5)).await
                } else {
                    std::future::pending::<()>().await
                }
            };
            tokio::select! {
                _ = notify.notified() => {}
                _ = retry => {}
                _ = &mut stop => return Ok(()),
            }
            // Coalesce a burst (e.g. a Deployment's pods getting IPs).
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(100)) => {}
                _ = &mut stop => return Ok(()),
            }
        }
    }
    .await;
    for t in tasks {
        t.abort();
    }
    result
}
