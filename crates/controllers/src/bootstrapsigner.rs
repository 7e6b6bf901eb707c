//! The bootstrap signer (upstream `pkg/controller/bootstrap/bootstrapsigner.go`):
//! keeps `kube-public/cluster-info` signed with every bootstrap token that
//! allows signing, so that a joining node holding a token can trust the
//! kubeconfig (server and CA) it downloads anonymously.
//!
//! `cluster-info` holds `kubeconfig` (a kubeconfig with one cluster: the
//! server nodes reach and the CA, as `kubeadm init` publishes it) and one
//! `jws-kubeconfig-<token-id>` detached JWS per valid signing token; stale
//! signatures are removed. As with kubeadm, the ConfigMap itself is
//! created at cluster start ([`crate::joinpolicy`]); this controller only
//! updates it (its role may not create it).

use std::collections::BTreeMap;
use std::sync::Arc;

use base64::Engine;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use kube::api::{Api, ListParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;

use crate::bootstraptoken::{self as bt, CLUSTER_INFO, CLUSTER_INFO_NAMESPACE, JWS_KEY_PREFIX, KUBECONFIG_KEY};
use crate::runtime::{self, is_not_found, Ctx, Error, Stop};

/// The controller's name (`--controllers`), also its log component.
pub const NAME: &str = "bootstrap-signer-controller";
/// The older name `--controllers` also accepts.
pub const ALIAS: &str = "bootstrapsigner";
/// The kube-system ServiceAccount it runs as.
pub const SERVICE_ACCOUNT: &str = "bootstrap-signer";

/// The kubeconfig `cluster-info` publishes, in kubeadm's layout: one
/// unnamed cluster with `certificate-authority-data` and `server`, no
/// users or contexts.
pub fn cluster_info_kubeconfig(server: &str, ca_pem: &str) -> String {
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_pem.as_bytes());
    format!(
        "apiVersion: v1\nclusters:\n- cluster:\n    certificate-authority-data: {ca}\n    server: {server}\n  name: \"\"\ncontexts: null\ncurrent-context: \"\"\nkind: Config\npreferences: {{}}\nusers: null\n"
    )
}

/// The data `cluster-info` should hold: `kubeconfig` as given and one
/// signature per token, all other `jws-kubeconfig-*` keys dropped; other
/// keys are kept.
pub fn signed_data(
    current: &BTreeMap<String, String>,
    kubeconfig: &str,
    tokens: &[bt::BootstrapToken],
) -> BTreeMap<String, String> {
    let mut data: BTreeMap<String, String> =
        current.iter().filter(|(k, _)| !k.starts_with(JWS_KEY_PREFIX)).map(|(k, v)| (k.clone(), v.clone())).collect();
    data.insert(KUBECONFIG_KEY.into(), kubeconfig.into());
    for t in tokens {
        data.insert(format!("{JWS_KEY_PREFIX}{}", t.id), bt::detached_signature(kubeconfig, t));
    }
    data
}

/// Runs until `stop`. The one key is the namespace kube-public; changes to
/// `cluster-info` and to any kube-system bootstrap-token Secret requeue it.
pub async fn run(ctx: Arc<Ctx>, stop: Stop) {
    let client = ctx.reader.clone();
    let public = || Some(ObjectRef::<Namespace>::new(CLUSTER_INFO_NAMESPACE));
    let controller = Controller::new(
        Api::<Namespace>::all(client.clone()),
        watcher::Config::default().fields(&format!("metadata.name={CLUSTER_INFO_NAMESPACE}")),
    )
    .watches(
        Api::<ConfigMap>::namespaced(client.clone(), CLUSTER_INFO_NAMESPACE),
        watcher::Config::default().fields(&format!("metadata.name={CLUSTER_INFO}")),
        move |_| public(),
    )
    .watches(
        Api::<Secret>::namespaced(client, bt::NAMESPACE),
        watcher::Config::default().fields(&format!("type={}", bt::SECRET_TYPE)),
        move |_| public(),
    )
    .graceful_shutdown_on(runtime::stopped(stop));
    runtime::drive(NAME, controller.run(reconcile, runtime::error_policy, ctx)).await;
}

async fn reconcile(ns: Arc<Namespace>, ctx: Arc<Ctx>) -> Result<Action, Error> {
    let key = ns.metadata.name.clone().unwrap_or_default();
    let now = jiff::Timestamp::now();
    let secrets = Api::<Secret>::namespaced(ctx.reader.clone(), bt::NAMESPACE)
        .list(&ListParams::default().fields(&format!("type={}", bt::SECRET_TYPE)))
        .await?;
    let mut tokens: Vec<bt::BootstrapToken> =
        secrets.items.iter().filter_map(|s| bt::token_for_signing(s, now)).collect();
    tokens.sort_by(|a, b| a.id.cmp(&b.id));
    // Signatures of tokens that expire must go when they do.
    let next_expiry = secrets
        .items
        .iter()
        .filter(|s| bt::token_for_signing(s, now).is_some())
        .filter_map(|s| bt::expiration(s).and_then(Result::ok))
        .min();
    let requeue = match next_expiry {
        Some(t) => Action::requeue(
            std::time::Duration::from_secs_f64((t - now).total(jiff::Unit::Second).unwrap_or(0.0).max(0.0))
                + std::time::Duration::from_millis(100),
        ),
        None => Action::await_change(),
    };

    let api = Api::<ConfigMap>::namespaced(ctx.client.clone(), CLUSTER_INFO_NAMESPACE);
    let mut cm = match Api::<ConfigMap>::namespaced(ctx.reader.clone(), CLUSTER_INFO_NAMESPACE).get(CLUSTER_INFO).await
    {
        Ok(cm) => cm,
        // Published at start (see crate::joinpolicy); its creation requeues us.
        Err(e) if is_not_found(&e) => return ctx.done(&key, Action::await_change()),
        Err(e) => return Err(e.into()),
    };
    let current = cm.data.clone().unwrap_or_default();
    // Upstream signs the kubeconfig that is there; it only fills it in when missing.
    let kubeconfig = match current.get(KUBECONFIG_KEY) {
        Some(k) => k.clone(),
        None => cluster_info_kubeconfig(&ctx.settings.cluster_info_server, &ctx.settings.ca_pem),
    };
    let desired = signed_data(&current, &kubeconfig, &tokens);
    if desired != current {
        cm.data = Some(desired);
        api.replace(CLUSTER_INFO, &PostParams::default(), &cm).await?;
        tracing::info!(component = NAME, tokens = tokens.len(), "re-signed {CLUSTER_INFO_NAMESPACE}/{CLUSTER_INFO}");
    }
    ctx.done(&key, requeue)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_follow_the_valid_tokens() {
        let kc = cluster_info_kubeconfig("https://10.0.0.1:6443", "PEM");
        assert!(kc.contains("server: https://10.0.0.1:6443") && kc.contains("certificate-authority-data: UEVN"));
        let a = bt::BootstrapToken::parse("aaaaaa.0123456789abcdef").unwrap();
        let current = BTreeMap::from([
            ("jws-kubeconfig-zzzzzz".to_string(), "stale".to_string()),
            ("other".to_string(), "kept".to_string()),
        ]);
        let data = signed_data(&current, &kc, std::slice::from_ref(&a));
        assert_eq!(data.keys().collect::<Vec<_>>(), ["jws-kubeconfig-aaaaaa", "kubeconfig", "other"]);
        assert!(bt::verify_detached_signature(&data["jws-kubeconfig-aaaaaa"], &kc, &a));
    }
}
