//! The token cleaner (upstream `pkg/controller/bootstrap/tokencleaner.go`):
//! deletes bootstrap-token Secrets in kube-system once their `expiration`
//! has passed, checking again at the expiry of those still valid.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DeleteParams, Preconditions};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;

use crate::bootstraptoken::{self, NAMESPACE, SECRET_TYPE};
use crate::runtime::{self, is_not_found, Ctx, Error, Stop};

/// The controller's name (`--controllers`), also its log component.
pub const NAME: &str = "token-cleaner-controller";
/// The older name `--controllers` also accepts.
pub const ALIAS: &str = "tokencleaner";
/// The kube-system ServiceAccount it runs as.
pub const SERVICE_ACCOUNT: &str = "token-cleaner";

/// Runs until `stop` over the bootstrap-token Secrets of kube-system.
pub async fn run(ctx: Arc<Ctx>, stop: Stop) {
    let secrets = Api::<Secret>::namespaced(ctx.reader.clone(), NAMESPACE);
    let wc = watcher::Config::default().fields(&format!("type={SECRET_TYPE}"));
    let controller = Controller::new(secrets, wc).graceful_shutdown_on(runtime::stopped(stop));
    runtime::drive(NAME, controller.run(reconcile, runtime::error_policy, ctx)).await;
}

/// What to do with a bootstrap-token Secret at `now`: `None` = delete it,
/// `Some(d)` = look again in `d` (or never, for tokens without expiry).
pub fn next_check(secret: &Secret, now: jiff::Timestamp) -> Option<Option<Duration>> {
    match bootstraptoken::expiration(secret) {
        None => Some(None),
        Some(Ok(t)) if t > now => {
            let left = (t - now).total(jiff::Unit::Second).unwrap_or(0.0).max(0.0);
            Some(Some(Duration::from_secs_f64(left) + Duration::from_millis(100)))
        }
        // Expired, or an expiry that does not parse (never trusted).
        Some(_) => None,
    }
}

async fn reconcile(secret: Arc<Secret>, ctx: Arc<Ctx>) -> Result<Action, Error> {
    let key = runtime::key_of(secret.as_ref());
    if secret.type_.as_deref() != Some(SECRET_TYPE) {
        return ctx.done(&key, Action::await_change());
    }
    match next_check(&secret, jiff::Timestamp::now()) {
        Some(None) => ctx.done(&key, Action::await_change()),
        Some(Some(wait)) => ctx.done(&key, Action::requeue(wait)),
        None => {
            let name = secret.metadata.name.clone().unwrap_or_default();
            let api = Api::<Secret>::namespaced(ctx.client.clone(), NAMESPACE);
            // Only the Secret we judged, as we saw it: a recreated or
            // extended one is a conflict, retried with the newer state.
            let dp = DeleteParams {
                preconditions: Some(Preconditions {
                    uid: secret.metadata.uid.clone(),
                    resource_version: secret.metadata.resource_version.clone(),
                }),
                ..DeleteParams::default()
            };
            match api.delete(&name, &dp).await {
                Ok(_) => tracing::info!(component = NAME, secret = %name, "deleted expired bootstrap token"),
                Err(e) if is_not_found(&e) => {}
                Err(e) => return Err(e.into()),
            }
            ctx.done(&key, Action::await_change())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bootstraptoken::BootstrapToken;

    #[test]
    fn expired_tokens_are_deleted_and_valid_ones_checked_at_expiry() {
        let now: jiff::Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let token = BootstrapToken::generate();
        let later = token.to_secret(Some("2026-01-01T01:00:00Z".parse().unwrap()), None);
        let wait = next_check(&later, now).unwrap().unwrap();
        assert!(wait >= Duration::from_secs(3600) && wait < Duration::from_secs(3601), "{wait:?}");
        let past = token.to_secret(Some("2025-12-31T23:59:59Z".parse().unwrap()), None);
        assert_eq!(next_check(&past, now), None);
        assert_eq!(next_check(&token.to_secret(None, None), now), Some(None));
    }
}
