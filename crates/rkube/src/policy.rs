//! rkube's own RBAC objects — not upstream's bootstrap policy, which the
//! API server reconciles itself — applied by every server once its API is
//! ready, with the admin credential, creating what is missing: the cluster
//! DNS server's role (`rkube:cluster-dns`) and NetworkPolicy enforcement's
//! (`rkube:network-policy`, for `system:kube-proxy` on every node, also
//! when this server runs neither DNS nor an agent).

use std::time::Duration;

use rkube_apiserver::health::Health;
use rkube_client::client::ApiEndpoint;
use rkube_pki::CertAndKey;

const COMPONENT: &str = "rkube";

/// The task applying the objects, and whether it has.
pub struct Policy {
    /// Abort it to give up (at shutdown).
    pub task: tokio::task::JoinHandle<()>,
    applied: tokio::sync::watch::Receiver<bool>,
}

impl Policy {
    /// Resolves once the objects exist, or after `limit` (the components
    /// that need them then start anyway and retry their refused requests),
    /// so that cluster DNS and NetworkPolicy enforcement do not begin a
    /// fresh server's life with 403s.
    pub fn applied(&self, limit: Duration) -> impl std::future::Future<Output = ()> + Send + 'static {
        let mut applied = self.applied.clone();
        async move {
            let _ = tokio::time::timeout(limit, applied.wait_for(|done| *done)).await;
        }
    }
}

/// Applies the objects once `/readyz` passes, retrying every 2 s until it
/// succeeds.
pub fn spawn(endpoint: ApiEndpoint, admin: CertAndKey, health: Health) -> Policy {
    let (done, applied) = tokio::sync::watch::channel(false);
    let task = tokio::spawn(async move {
        if !crate::ready::wait_until_ready(&health, &mut std::future::pending::<()>()).await {
            return;
        }
        let client = match rkube_client::client::with_certificate(&endpoint, &admin.cert_pem, &admin.key_pem) {
            Ok(c) => c,
            Err(e) => {
                tracing::error!(component = COMPONENT, "cannot build the admin client for rkube's RBAC objects: {e}");
                return;
            }
        };
        loop {
            let applied = async {
                rkube_dns::ensure_rbac(&client).await?;
                rkube_netpol::ensure_rbac(&client).await
            };
            match applied.await {
                Ok(()) => {
                    let _ = done.send(true);
                    return;
                }
                Err(e) => {
                    tracing::warn!(
                        component = COMPONENT,
                        "cannot apply the cluster DNS and NetworkPolicy RBAC objects (retrying in 2s): {e}"
                    );
                    tokio::time::sleep(Duration::from_secs(2)).await;
                }
            }
        }
    });
    Policy { task, applied }
}
