//! The root CA certificate publisher (upstream
//! `pkg/controller/certificates/rootcacertpublisher`): every namespace has
//! the ConfigMap `kube-root-ca.crt` whose `ca.crt` is the cluster CA, with
//! upstream's description annotation; it is restored when deleted or
//! changed.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, ObjectMeta, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;

use crate::runtime::{self, is_conflict, is_namespace_gone, is_not_found, Ctx, Error, Stop};

/// The controller's name (`--controllers`), also its log component.
pub const NAME: &str = "root-ca-certificate-publisher-controller";
/// The older name `--controllers` also accepts.
pub const ALIAS: &str = "root-ca-cert-publisher";
/// The kube-system ServiceAccount it runs as.
pub const SERVICE_ACCOUNT: &str = "root-ca-cert-publisher";
/// `RootCACertConfigMapName`.
pub const CONFIG_MAP: &str = "kube-root-ca.crt";
/// The data key holding the CA bundle.
pub const CA_KEY: &str = "ca.crt";
/// `DescriptionAnnotation`.
pub const DESCRIPTION_ANNOTATION: &str = "kubernetes.io/description";
/// Upstream's description, verbatim (clients may display it).
pub const DESCRIPTION: &str = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.";

/// Runs until `stop`: namespaces are the keys; a change to any
/// `kube-root-ca.crt` requeues its namespace.
pub async fn run(ctx: Arc<Ctx>, stop: Stop) {
    let client = ctx.reader.clone();
    let maps = watcher::Config::default().fields(&format!("metadata.name={CONFIG_MAP}"));
    let controller = Controller::new(Api::<Namespace>::all(client.clone()), watcher::Config::default())
        .watches(Api::<ConfigMap>::all(client), maps, |cm| {
            cm.metadata.namespace.map(|ns| ObjectRef::<Namespace>::new(&ns))
        })
        .graceful_shutdown_on(runtime::stopped(stop));
    runtime::drive(NAME, controller.run(reconcile, runtime::error_policy, ctx)).await;
}

/// The data the ConfigMap must hold.
pub fn desired_data(ca_pem: &str) -> BTreeMap<String, String> {
    BTreeMap::from([(CA_KEY.to_string(), ca_pem.to_string())])
}

async fn reconcile(ns: Arc<Namespace>, ctx: Arc<Ctx>) -> Result<Action, Error> {
    let name = ns.metadata.name.clone().unwrap_or_default();
    if !crate::serviceaccount::is_active(&ns) {
        return ctx.done(&name, Action::await_change());
    }
    let api = Api::<ConfigMap>::namespaced(ctx.client.clone(), &name);
    let data = desired_data(&ctx.settings.ca_pem);
    let existing = match Api::<ConfigMap>::namespaced(ctx.reader.clone(), &name).get(CONFIG_MAP).await {
        Ok(cm) => cm,
        Err(e) if is_not_found(&e) => {
            let cm = ConfigMap {
                metadata: ObjectMeta {
                    name: Some(CONFIG_MAP.into()),
                    annotations: Some(BTreeMap::from([(DESCRIPTION_ANNOTATION.into(), DESCRIPTION.into())])),
                    ..Default::default()
                },
                data: Some(data),
                ..Default::default()
            };
            match api.create(&PostParams::default(), &cm).await {
                Ok(_) => tracing::info!(component = NAME, namespace = %name, "published {CONFIG_MAP}"),
                Err(e) if is_conflict(&e) || is_namespace_gone(&e) => {}
                Err(e) => return Err(e.into()),
            }
            return ctx.done(&name, Action::await_change());
        }
        Err(e) => return Err(e.into()),
    };
    let described = existing
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(DESCRIPTION_ANNOTATION))
        .is_some_and(|d| !d.is_empty());
    if existing.data.as_ref() == Some(&data) && described {
        return ctx.done(&name, Action::await_change());
    }
    let mut cm = existing;
    cm.data = Some(data);
    cm.metadata.annotations.get_or_insert_with(BTreeMap::new).insert(DESCRIPTION_ANNOTATION.into(), DESCRIPTION.into());
    api.replace(CONFIG_MAP, &PostParams::default(), &cm).await?;
    tracing::info!(component = NAME, namespace = %name, "restored {CONFIG_MAP}");
    ctx.done(&name, Action::await_change())
}
