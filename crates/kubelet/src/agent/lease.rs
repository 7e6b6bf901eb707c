//! The node's heartbeat Lease `kube-node-lease/<node>`, renewed as
//! upstream's kubelet does: every 10 s (a quarter of the 40 s duration),
//! retried after a failure with a back-off of 200 ms doubling to 7 s,
//! owned by the Node so that it goes when the Node goes.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta, OwnerReference};
use kube::api::{Api, PostParams};
use tokio::sync::watch;

/// The namespace of node leases.
pub const NAMESPACE: &str = "kube-node-lease";
/// `leaseDurationSeconds` (upstream's `nodeLeaseDurationSeconds`).
pub const DURATION_SECONDS: i32 = 40;
/// How often the lease is renewed.
pub const RENEW_INTERVAL: Duration = Duration::from_secs(10);
const BACKOFF_START: Duration = Duration::from_millis(200);
const BACKOFF_MAX: Duration = Duration::from_secs(7);

/// The lease of `node` (whose Node has `node_uid`) renewed at `now`:
/// holder = the node name, 40 s, owner = the Node.
pub fn lease_object(node: &str, node_uid: &str, now: jiff::Timestamp) -> Lease {
    Lease {
        metadata: ObjectMeta {
            name: Some(node.into()),
            namespace: Some(NAMESPACE.into()),
            owner_references: Some(vec![OwnerReference {
                api_version: "v1".into(),
                kind: "Node".into(),
                name: node.into(),
                uid: node_uid.into(),
                ..Default::default()
            }]),
            ..Default::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some(node.into()),
            lease_duration_seconds: Some(DURATION_SECONDS),
            renew_time: Some(MicroTime(now)),
            ..Default::default()
        }),
    }
}

/// Renews the lease until `stop` turns true.
pub async fn run(client: kube::Client, node: String, node_uid: String, mut stop: watch::Receiver<bool>) {
    let api: Api<Lease> = Api::namespaced(client, NAMESPACE);
    let mut cached: Option<Lease> = None;
    let mut backoff = BACKOFF_START;
    loop {
        let wait = match renew(&api, &node, &node_uid, &mut cached).await {
            Ok(()) => {
                backoff = BACKOFF_START;
                RENEW_INTERVAL
            }
            Err(e) => {
                tracing::warn!(component = "kubelet", node = %node, "failed to update lease, will retry in {backoff:?}: {e}");
                cached = None;
                let w = backoff;
                backoff = (backoff * 2).min(BACKOFF_MAX);
                w
            }
        };
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = stop.wait_for(|s| *s) => return,
        }
    }
}

async fn renew(api: &Api<Lease>, node: &str, uid: &str, cached: &mut Option<Lease>) -> Result<(), kube::Error> {
    let now = jiff::Timestamp::now();
    let current = match cached.take() {
        Some(l) => Some(l),
        None => api.get_opt(node).await?,
    };
    let mut desired = lease_object(node, uid, now);
    let updated = match current {
        None => api.create(&PostParams::default(), &desired).await?,
        Some(cur) => {
            desired.metadata.resource_version = cur.metadata.resource_version.clone();
            desired.metadata.labels = cur.metadata.labels.clone();
            desired.metadata.annotations = cur.metadata.annotations.clone();
            api.replace(node, &PostParams::default(), &desired).await?
        }
    };
    *cached = Some(updated);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lease_shape() {
        let l = lease_object("n1", "uid-1", jiff::Timestamp::UNIX_EPOCH);
        assert_eq!(l.metadata.namespace.as_deref(), Some("kube-node-lease"));
        let owner = &l.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!((owner.kind.as_str(), owner.name.as_str(), owner.uid.as_str()), ("Node", "n1", "uid-1"));
        let spec = l.spec.unwrap();
        assert_eq!(spec.holder_identity.as_deref(), Some("n1"));
        assert_eq!(spec.lease_duration_seconds, Some(40));
    }
}
