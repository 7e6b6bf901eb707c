//! The legacy service-account token controller (upstream
//! `pkg/controller/serviceaccount/tokens_controller.go`,
//! `serviceaccount-token-controller`).
//!
//! Since 1.24 nothing creates legacy token Secrets automatically; this
//! controller fills the ones users create: a Secret of type
//! `kubernetes.io/service-account-token` annotated with
//! `kubernetes.io/service-account.name` (and optionally `.uid`) gets
//! `data.token` (a legacy JWT signed with the service-account key the API
//! server verifies with), `data.ca.crt` (the cluster CA) and
//! `data.namespace`, and the account's uid annotation. A token Secret
//! whose account does not exist, or exists with another uid than the
//! annotation names, is deleted — also when the account is deleted later.
//! A deleted token Secret is dropped from its account's `.secrets`.
//!
//! As upstream, it runs with the manager's own credentials (it has no
//! `system:controller:` role), and only when the manager has the signing
//! key (`--service-account-private-key-file`).

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Secret, ServiceAccount};
use k8s_openapi::ByteString;
use kube::api::{Api, DeleteParams, PostParams, Preconditions};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use rkube_pki::jws::SigningKey;
use serde_json::{json, Value};

use crate::runtime::{self, is_conflict, is_not_found, Ctx, Error, Stop};

/// The controller's name (`--controllers`), also its log component.
pub const NAME: &str = "serviceaccount-token-controller";
/// The older name `--controllers` also accepts.
pub const ALIAS: &str = "serviceaccount-token";
/// No ServiceAccount: upstream starts it with the manager's root client.
pub const SERVICE_ACCOUNT: &str = "";

/// `v1.SecretTypeServiceAccountToken`.
pub const SECRET_TYPE: &str = "kubernetes.io/service-account-token";
/// `v1.ServiceAccountNameKey`.
pub const NAME_ANNOTATION: &str = "kubernetes.io/service-account.name";
/// `v1.ServiceAccountUIDKey`.
pub const UID_ANNOTATION: &str = "kubernetes.io/service-account.uid";
/// `v1.ServiceAccountTokenKey`.
pub const TOKEN_KEY: &str = "token";
/// `v1.ServiceAccountRootCAKey`.
pub const CA_KEY: &str = "ca.crt";
/// `v1.ServiceAccountNamespaceKey`.
pub const NAMESPACE_KEY: &str = "namespace";
/// `serviceaccount.LegacyIssuer`: the `iss` of legacy tokens.
pub const LEGACY_ISSUER: &str = "kubernetes/serviceaccount";

/// Runs until `stop` over the service-account token Secrets of every
/// namespace; a change to (or the deletion of) an account requeues the
/// Secrets that name it. Without a signing key it does not start, as
/// upstream.
pub async fn run(ctx: Arc<Ctx>, stop: Stop) {
    if ctx.settings.service_account_key.is_none() {
        tracing::info!(component = NAME, "Controller is disabled because there is no private key");
        return;
    }
    let client = ctx.reader.clone();
    let secrets = watcher::Config::default().fields(&format!("type={SECRET_TYPE}"));
    let controller = Controller::new(Api::<Secret>::all(client.clone()), secrets);
    let store = controller.store();
    let controller = controller
        .watches(Api::<ServiceAccount>::all(client), watcher::Config::default(), move |sa| {
            let (ns, name) = (sa.metadata.namespace.unwrap_or_default(), sa.metadata.name.unwrap_or_default());
            store
                .state()
                .iter()
                .filter(|s| s.metadata.namespace.as_deref() == Some(&ns) && annotation(s, NAME_ANNOTATION) == name)
                .map(|s| ObjectRef::from_obj(s.as_ref()))
                .collect::<Vec<_>>()
        })
        .graceful_shutdown_on(runtime::stopped(stop.clone()));
    let deletions = remove_references_of_deleted_secrets(ctx.clone(), stop);
    let reconciler = runtime::drive(NAME, controller.run(reconcile, runtime::error_policy, ctx));
    tokio::join!(reconciler, deletions);
}

/// Upstream's cleanup when a token Secret is deleted: the account it names
/// (with the annotated uid, if any) no longer lists it in `.secrets`.
/// Reconciles see only existing objects, so deletions come from their own
/// watch.
async fn remove_references_of_deleted_secrets(ctx: Arc<Ctx>, stop: Stop) {
    use futures::StreamExt;
    let secrets = Api::<Secret>::all(ctx.reader.clone());
    let wc = watcher::Config::default().fields(&format!("type={SECRET_TYPE}"));
    let events = watcher::watcher(secrets, wc).take_until(runtime::stopped(stop));
    futures::pin_mut!(events);
    while let Some(event) = events.next().await {
        let Ok(watcher::Event::Delete(secret)) = event else { continue };
        for attempt in 0..5 {
            match remove_reference(&ctx, &secret).await {
                Ok(()) => break,
                Err(e) => {
                    tracing::warn!(component = NAME, secret = %runtime::key_of(&secret), attempt, error = %e, "removing secret reference");
                    tokio::time::sleep(std::time::Duration::from_millis(100 << attempt)).await;
                }
            }
        }
    }
}

async fn remove_reference(ctx: &Ctx, secret: &Secret) -> Result<(), Error> {
    let ns = secret.metadata.namespace.clone().unwrap_or_default();
    let name = secret.metadata.name.clone().unwrap_or_default();
    let Some(mut sa) =
        account(ctx, &ns, annotation(secret, NAME_ANNOTATION), annotation(secret, UID_ANNOTATION)).await?
    else {
        return Ok(());
    };
    let Some(refs) = sa.secrets.as_mut() else { return Ok(()) };
    let before = refs.len();
    refs.retain(|r| r.name.as_deref() != Some(name.as_str()));
    if refs.len() == before {
        return Ok(());
    }
    let sa_name = sa.metadata.name.clone().unwrap_or_default();
    match Api::<ServiceAccount>::namespaced(ctx.client.clone(), &ns)
        .replace(&sa_name, &PostParams::default(), &sa)
        .await
    {
        Ok(_) => Ok(()),
        Err(e) if is_not_found(&e) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

fn annotation<'a>(secret: &'a Secret, key: &str) -> &'a str {
    secret.metadata.annotations.as_ref().and_then(|a| a.get(key)).map(String::as_str).unwrap_or("")
}

/// The claims of a legacy token for `secret_name` of the account
/// (upstream's `serviceaccount.LegacyClaims` plus the legacy issuer).
pub fn legacy_claims(namespace: &str, secret_name: &str, sa_name: &str, sa_uid: &str) -> Value {
    json!({
        "iss": LEGACY_ISSUER,
        "kubernetes.io/serviceaccount/namespace": namespace,
        "kubernetes.io/serviceaccount/secret.name": secret_name,
        "kubernetes.io/serviceaccount/service-account.name": sa_name,
        "kubernetes.io/serviceaccount/service-account.uid": sa_uid,
        "sub": format!("system:serviceaccount:{namespace}:{sa_name}"),
    })
}

/// Fills what `secret` lacks for `sa` (upstream's `secretUpdateNeeded` and
/// `generateTokenIfNeeded`): `ca.crt` when it differs from `root_ca`,
/// `namespace` and `token` when empty; then both account annotations.
/// Returns whether anything changed (nothing to write otherwise).
pub fn fill(secret: &mut Secret, sa: &ServiceAccount, root_ca: &[u8], key: &SigningKey) -> Result<bool, String> {
    let data = secret.data.get_or_insert_with(BTreeMap::new);
    let empty = |k: &str| data.get(k).is_none_or(|v| v.0.is_empty());
    let needs_ca = !root_ca.is_empty() && data.get(CA_KEY).map(|v| v.0.as_slice()) != Some(root_ca);
    let (needs_namespace, needs_token) = (empty(NAMESPACE_KEY), empty(TOKEN_KEY));
    if !needs_ca && !needs_namespace && !needs_token {
        return Ok(false);
    }
    let namespace = secret.metadata.namespace.clone().unwrap_or_default();
    let secret_name = secret.metadata.name.clone().unwrap_or_default();
    let sa_name = sa.metadata.name.clone().unwrap_or_default();
    let sa_uid = sa.metadata.uid.clone().unwrap_or_default();
    if needs_ca {
        data.insert(CA_KEY.into(), ByteString(root_ca.to_vec()));
    }
    if needs_namespace {
        data.insert(NAMESPACE_KEY.into(), ByteString(namespace.clone().into_bytes()));
    }
    if needs_token {
        let token = key.sign(&legacy_claims(&namespace, &secret_name, &sa_name, &sa_uid))?;
        data.insert(TOKEN_KEY.into(), ByteString(token.into_bytes()));
    }
    let annotations = secret.metadata.annotations.get_or_insert_with(BTreeMap::new);
    annotations.insert(NAME_ANNOTATION.into(), sa_name);
    annotations.insert(UID_ANNOTATION.into(), sa_uid);
    Ok(true)
}

/// The account a token Secret names, if it exists with the annotated uid
/// (none annotated: any), read live as upstream does on a cache miss.
async fn account(ctx: &Ctx, ns: &str, name: &str, uid: &str) -> Result<Option<ServiceAccount>, Error> {
    let sa = Api::<ServiceAccount>::namespaced(ctx.reader.clone(), ns).get_opt(name).await?;
    Ok(sa.filter(|sa| uid.is_empty() || sa.metadata.uid.as_deref() == Some(uid)))
}

async fn reconcile(secret: Arc<Secret>, ctx: Arc<Ctx>) -> Result<Action, Error> {
    let key = runtime::key_of(secret.as_ref());
    let Some(signing_key) = ctx.settings.service_account_key.clone() else {
        return ctx.done(&key, Action::await_change());
    };
    if secret.type_.as_deref() != Some(SECRET_TYPE) || secret.metadata.deletion_timestamp.is_some() {
        return ctx.done(&key, Action::await_change());
    }
    let ns = secret.metadata.namespace.clone().unwrap_or_default();
    let name = secret.metadata.name.clone().unwrap_or_default();
    let sa_name = annotation(&secret, NAME_ANNOTATION);
    if sa_name.is_empty() {
        return ctx.done(&key, Action::await_change());
    }
    let api = Api::<Secret>::namespaced(ctx.client.clone(), &ns);
    let Some(sa) = account(&ctx, &ns, sa_name, annotation(&secret, UID_ANNOTATION)).await? else {
        // Only the Secret we judged: a recreated one is judged anew.
        let dp = DeleteParams {
            preconditions: Some(Preconditions { uid: secret.metadata.uid.clone(), resource_version: None }),
            ..DeleteParams::default()
        };
        match api.delete(&name, &dp).await {
            Ok(_) => {
                tracing::info!(component = NAME, secret = %key, service_account = sa_name, "service account does not exist, deleted its token")
            }
            Err(e) if is_not_found(&e) || is_conflict(&e) => {}
            Err(e) => return Err(e.into()),
        }
        return ctx.done(&key, Action::await_change());
    };
    // The live Secret, not the cached one, decides what is missing.
    let Some(mut live) = api.get_opt(&name).await? else { return ctx.done(&key, Action::await_change()) };
    if live.metadata.uid != secret.metadata.uid {
        return ctx.done(&key, Action::await_change());
    }
    if !fill(&mut live, &sa, ctx.settings.ca_pem.as_bytes(), &signing_key).map_err(Error::Other)? {
        return ctx.done(&key, Action::await_change());
    }
    match api.replace(&name, &PostParams::default(), &live).await {
        Ok(_) => {
            tracing::info!(component = NAME, secret = %key, service_account = sa_name, "filled service account token")
        }
        Err(e) if is_not_found(&e) => {}
        // A conflict is retried with the newer Secret.
        Err(e) => return Err(e.into()),
    }
    ctx.done(&key, Action::await_change())
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use base64::Engine as _;
    use kube::api::ObjectMeta;

    fn secret(data: &[(&str, &str)]) -> Secret {
        Secret {
            metadata: ObjectMeta {
                name: Some("robot-token".into()),
                namespace: Some("ns1".into()),
                annotations: Some([(NAME_ANNOTATION.to_string(), "robot".to_string())].into()),
                ..Default::default()
            },
            type_: Some(SECRET_TYPE.into()),
            data: Some(data.iter().map(|(k, v)| (k.to_string(), ByteString(v.as_bytes().to_vec()))).collect()),
            ..Default::default()
        }
    }

    fn robot() -> ServiceAccount {
        ServiceAccount {
            metadata: ObjectMeta {
                name: Some("robot".into()),
                namespace: Some("ns1".into()),
                uid: Some("uid-1".into()),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn an_empty_token_secret_gets_token_ca_namespace_and_uid() {
        let key = SigningKey::generate();
        let mut s = secret(&[]);
        assert!(fill(&mut s, &robot(), b"CA", &key).unwrap());
        let data = s.data.as_ref().unwrap();
        assert_eq!(data[CA_KEY].0, b"CA");
        assert_eq!(data[NAMESPACE_KEY].0, b"ns1");
        let annotations = s.metadata.annotations.as_ref().unwrap();
        assert_eq!(annotations[UID_ANNOTATION], "uid-1");
        assert_eq!(annotations[NAME_ANNOTATION], "robot");
        let token = String::from_utf8(data[TOKEN_KEY].0.clone()).unwrap();
        let (signed, sig) = token.rsplit_once('.').unwrap();
        assert!(key.verify_signature(signed.as_bytes(), &URL_SAFE_NO_PAD.decode(sig).unwrap()));
        let payload = URL_SAFE_NO_PAD.decode(token.split('.').nth(1).unwrap()).unwrap();
        let claims: Value = serde_json::from_slice(&payload).unwrap();
        assert_eq!(
            claims,
            json!({
                "iss": "kubernetes/serviceaccount",
                "kubernetes.io/serviceaccount/namespace": "ns1",
                "kubernetes.io/serviceaccount/secret.name": "robot-token",
                "kubernetes.io/serviceaccount/service-account.name": "robot",
                "kubernetes.io/serviceaccount/service-account.uid": "uid-1",
                "sub": "system:serviceaccount:ns1:robot",
            })
        );
        // Filled: nothing more to do.
        assert!(!fill(&mut s, &robot(), b"CA", &key).unwrap());
    }

    #[test]
    fn only_missing_or_stale_fields_are_rewritten() {
        let key = SigningKey::generate();
        let mut s = secret(&[(TOKEN_KEY, "user-token"), (NAMESPACE_KEY, "ns1"), (CA_KEY, "old")]);
        assert!(fill(&mut s, &robot(), b"new", &key).unwrap());
        let data = s.data.as_ref().unwrap();
        assert_eq!(data[TOKEN_KEY].0, b"user-token");
        assert_eq!(data[CA_KEY].0, b"new");
        // No root CA configured: ca.crt is left alone.
        let mut s = secret(&[(TOKEN_KEY, "t"), (NAMESPACE_KEY, "ns1")]);
        assert!(!fill(&mut s, &robot(), b"", &key).unwrap());
    }
}
