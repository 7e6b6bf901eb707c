//! The ServiceAccount controller (upstream
//! `pkg/controller/serviceaccount/serviceaccounts_controller.go`): every
//! active namespace has a ServiceAccount named `default`, recreated when
//! it is deleted.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use kube::api::{Api, ObjectMeta, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;

use crate::runtime::{self, is_conflict, is_namespace_gone, is_not_found, Ctx, Error, Stop};

/// The controller's name (`--controllers`), also its log component.
pub const NAME: &str = "serviceaccount-controller";
/// The older name `--controllers` also accepts.
pub const ALIAS: &str = "serviceaccount";
/// The kube-system ServiceAccount it runs as.
pub const SERVICE_ACCOUNT: &str = "service-account-controller";
/// The account every namespace gets.
pub const DEFAULT_ACCOUNT: &str = "default";

/// Whether a namespace is active: not being deleted.
pub fn is_active(ns: &Namespace) -> bool {
    ns.metadata.deletion_timestamp.is_none()
        && ns.status.as_ref().and_then(|s| s.phase.as_deref()).unwrap_or("Active") == "Active"
}

/// Runs until `stop`: namespaces are the keys; a change to any `default`
/// account requeues its namespace.
pub async fn run(ctx: Arc<Ctx>, stop: Stop) {
    let client = ctx.reader.clone();
    let accounts = watcher::Config::default().fields(&format!("metadata.name={DEFAULT_ACCOUNT}"));
    let controller = Controller::new(Api::<Namespace>::all(client.clone()), watcher::Config::default())
        .watches(Api::<ServiceAccount>::all(client), accounts, |sa| {
            sa.metadata.namespace.map(|ns| ObjectRef::<Namespace>::new(&ns))
        })
        .graceful_shutdown_on(runtime::stopped(stop));
    runtime::drive(NAME, controller.run(reconcile, runtime::error_policy, ctx)).await;
}

async fn reconcile(ns: Arc<Namespace>, ctx: Arc<Ctx>) -> Result<Action, Error> {
    let name = ns.metadata.name.clone().unwrap_or_default();
    if !is_active(&ns) {
        return ctx.done(&name, Action::await_change());
    }
    let api = Api::<ServiceAccount>::namespaced(ctx.client.clone(), &name);
    match Api::<ServiceAccount>::namespaced(ctx.reader.clone(), &name).get(DEFAULT_ACCOUNT).await {
        Ok(_) => return ctx.done(&name, Action::await_change()),
        Err(e) if is_not_found(&e) => {}
        Err(e) => return Err(e.into()),
    }
    let sa = ServiceAccount {
        metadata: ObjectMeta { name: Some(DEFAULT_ACCOUNT.into()), ..Default::default() },
        ..Default::default()
    };
    match api.create(&PostParams::default(), &sa).await {
        Ok(_) => tracing::info!(component = NAME, namespace = %name, "created the default ServiceAccount"),
        // Someone else created it, or the namespace is going away: nothing to retry.
        Err(e) if is_conflict(&e) || is_namespace_gone(&e) => {}
        Err(e) => return Err(e.into()),
    }
    ctx.done(&name, Action::await_change())
}
