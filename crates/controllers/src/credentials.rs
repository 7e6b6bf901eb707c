//! Each controller's own identity (upstream `--use-service-account-credentials`).
//!
//! The manager authenticates as `system:kube-controller-manager` and, for
//! each controller, ensures the ServiceAccount `kube-system/<name>`,
//! obtains a token for it through the TokenRequest API
//! (`serviceaccounts/token`, one hour) and renews it when 80% of its
//! lifetime has passed, as client-go's dynamic controller client builder.
//!
//! Each new token is checked once with a SelfSubjectReview, so that a
//! token the server refuses shows up as an error (and a retry) when the
//! controller starts rather than as failing requests later.

use std::collections::HashMap;
use std::time::Duration;

use k8s_openapi::api::authentication::v1::{SelfSubjectReview, TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::ServiceAccount;
use kube::api::{Api, ObjectMeta, PostParams};
use tokio::sync::Mutex;

use crate::client::{self, ApiEndpoint, SharedToken};
use crate::runtime::{is_conflict, is_not_found, Error};

/// The namespace of the controllers' ServiceAccounts.
pub const NAMESPACE: &str = "kube-system";
/// Lifetime requested for controller tokens.
pub const TOKEN_LIFETIME: Duration = Duration::from_secs(3600);
const COMPONENT: &str = "kube-controller-manager";

/// The user name of a kube-system ServiceAccount.
pub fn service_account_user(name: &str) -> String {
    format!("system:serviceaccount:{NAMESPACE}:{name}")
}

/// When to renew a token issued for `lifetime`: after 80% of it.
pub fn renew_after(lifetime: Duration) -> Duration {
    lifetime.mul_f64(0.8)
}

/// Clients per controller ServiceAccount, with their token renewals.
pub struct Credentials {
    endpoint: ApiEndpoint,
    manager: kube::Client,
    clients: Mutex<HashMap<String, kube::Client>>,
    renewals: std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

impl Drop for Credentials {
    fn drop(&mut self) {
        for h in self.renewals.lock().unwrap_or_else(|e| e.into_inner()).drain(..) {
            h.abort();
        }
    }
}

impl Credentials {
    /// `manager` is the manager's own client, which creates the
    /// ServiceAccounts and requests their tokens.
    pub fn new(endpoint: ApiEndpoint, manager: kube::Client) -> Self {
        Credentials {
            endpoint,
            manager,
            clients: Mutex::new(HashMap::new()),
            renewals: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// The client of the ServiceAccount `kube-system/<name>`, created on
    /// first use (ServiceAccount, token, renewal task).
    pub async fn client_for(&self, name: &str) -> Result<kube::Client, Error> {
        let mut clients = self.clients.lock().await;
        if let Some(c) = clients.get(name) {
            return Ok(c.clone());
        }
        self.ensure_service_account(name).await?;
        let (token, lifetime) = self.request_token(name).await?;
        let shared = SharedToken::new(token);
        let token_client =
            client::with_token(&self.endpoint, shared.clone()).map_err(|e| Error::Other(e.to_string()))?;
        self.probe(&token_client).await?;
        self.spawn_renewal(name, shared, lifetime);
        let client = token_client;
        clients.insert(name.to_string(), client.clone());
        Ok(client)
    }

    async fn ensure_service_account(&self, name: &str) -> Result<(), Error> {
        let api = Api::<ServiceAccount>::namespaced(self.manager.clone(), NAMESPACE);
        match api.get(name).await {
            Ok(_) => return Ok(()),
            Err(e) if is_not_found(&e) => {}
            Err(e) => return Err(e.into()),
        }
        let sa = ServiceAccount {
            metadata: ObjectMeta { name: Some(name.into()), ..Default::default() },
            ..Default::default()
        };
        match api.create(&PostParams::default(), &sa).await {
            Ok(_) => {
                tracing::info!(component = COMPONENT, service_account = %name, "created the controller's ServiceAccount");
                Ok(())
            }
            Err(e) if is_conflict(&e) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    async fn request_token(&self, name: &str) -> Result<(String, Duration), Error> {
        request_token(&self.manager, name).await
    }

    async fn probe(&self, client: &kube::Client) -> Result<(), Error> {
        Api::<SelfSubjectReview>::all(client.clone())
            .create(&PostParams::default(), &SelfSubjectReview::default())
            .await?;
        Ok(())
    }

    fn spawn_renewal(&self, name: &str, token: SharedToken, lifetime: Duration) {
        let manager = self.manager.clone();
        let name = name.to_string();
        let handle = tokio::spawn(async move {
            let mut wait = renew_after(lifetime);
            loop {
                tokio::time::sleep(wait).await;
                match request_token(&manager, &name).await {
                    Ok((t, lifetime)) => {
                        token.set(t);
                        wait = renew_after(lifetime);
                        tracing::debug!(component = COMPONENT, service_account = %name, "renewed the controller's token");
                    }
                    Err(e) => {
                        tracing::warn!(component = COMPONENT, service_account = %name, error = %e, "cannot renew the controller's token; retrying in 10s");
                        wait = Duration::from_secs(10);
                    }
                }
            }
        });
        self.renewals.lock().unwrap_or_else(|e| e.into_inner()).push(handle);
    }
}

/// A TokenRequest for `kube-system/<name>` (API audience, one hour).
/// Returns the token and the lifetime the server granted.
async fn request_token(manager: &kube::Client, name: &str) -> Result<(String, Duration), Error> {
    let api = Api::<ServiceAccount>::namespaced(manager.clone(), NAMESPACE);
    let tr = TokenRequest {
        spec: TokenRequestSpec {
            audiences: Vec::new(),
            expiration_seconds: Some(TOKEN_LIFETIME.as_secs() as i64),
            ..Default::default()
        },
        ..Default::default()
    };
    let answer = api.create_token_request(name, &PostParams::default(), &tr).await?;
    let status = answer.status.ok_or_else(|| Error::Other("the TokenRequest answer has no status".into()))?;
    let left = (status.expiration_timestamp.0 - jiff::Timestamp::now()).total(jiff::Unit::Second).unwrap_or(0.0);
    let lifetime = Duration::from_secs_f64(left.clamp(60.0, TOKEN_LIFETIME.as_secs_f64() * 24.0));
    Ok((status.token, lifetime))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_renewed_after_80_percent_of_their_life() {
        assert_eq!(renew_after(Duration::from_secs(3600)), Duration::from_secs(2880));
        assert_eq!(service_account_user("token-cleaner"), "system:serviceaccount:kube-system:token-cleaner");
    }
}
