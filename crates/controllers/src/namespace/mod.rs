//! The namespace controller (upstream `pkg/controller/namespace`): a
//! namespace with a `deletionTimestamp` is emptied — every namespaced
//! object of every resource discovery offers, custom resources included —
//! and then released by removing the `kubernetes` finalizer from
//! `spec.finalizers` through the `namespaces/{name}/finalize` subresource
//! (the API server deletes the namespace once its finalizers are gone).
//!
//! While content remains, the namespace's status carries the conditions of
//! [`conditions`] and the namespace is looked at again after half the
//! estimated time plus one second (upstream's `ResourcesRemainingError`
//! handling); failures retry with the shared back-off.

pub mod conditions;
pub mod deleter;

use std::sync::Arc;

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;

use crate::runtime::{self, is_conflict, is_not_found, Ctx, Error, Stop};

/// The controller's name (`--controllers`), also its log component.
pub const NAME: &str = "namespace-controller";
/// The older name `--controllers` also accepts.
pub const ALIAS: &str = "namespace";
/// The kube-system ServiceAccount it runs as.
pub const SERVICE_ACCOUNT: &str = "namespace-controller";
/// The `spec.finalizers` token this controller owns (`v1.FinalizerKubernetes`).
pub const FINALIZER: &str = "kubernetes";

/// Runs until `stop`.
pub async fn run(ctx: Arc<Ctx>, stop: Stop) {
    let controller = Controller::new(Api::<Namespace>::all(ctx.reader.clone()), watcher::Config::default())
        .graceful_shutdown_on(runtime::stopped(stop));
    runtime::drive(NAME, controller.run(reconcile, runtime::error_policy, ctx)).await;
}

async fn reconcile(ns: Arc<Namespace>, ctx: Arc<Ctx>) -> Result<Action, Error> {
    let name = ns.metadata.name.clone().unwrap_or_default();
    if ns.metadata.deletion_timestamp.is_none() {
        return ctx.done(&name, Action::await_change());
    }
    let api = Api::<Namespace>::all(ctx.client.clone());
    // The latest state: several writers touch a terminating namespace.
    let mut ns = match api.get(&name).await {
        Ok(ns) => ns,
        Err(e) if is_not_found(&e) => return ctx.done(&name, Action::await_change()),
        Err(e) => return Err(e.into()),
    };
    let Some(deleted_at) = ns.metadata.deletion_timestamp.clone() else {
        return ctx.done(&name, Action::await_change());
    };
    if ns.status.as_ref().and_then(|s| s.phase.as_deref()) != Some("Terminating") {
        ns.status.get_or_insert_with(Default::default).phase = Some("Terminating".into());
        ns = match api.replace_status(&name, &PostParams::default(), &ns).await {
            Ok(ns) => ns,
            Err(e) if is_not_found(&e) => return ctx.done(&name, Action::await_change()),
            Err(e) => return Err(e.into()),
        };
    }
    let finalizers = ns.spec.as_ref().and_then(|s| s.finalizers.clone()).unwrap_or_default();
    if finalizers.is_empty() {
        return ctx.done(&name, Action::await_change());
    }

    let since = (jiff::Timestamp::now() - deleted_at.0).get_seconds().max(0);
    let mut outcome = conditions::Outcome::default();
    // A partial discovery still empties what it found, as upstream.
    let estimate = match deleter::discover(&ctx.client).await {
        Ok((targets, error)) => {
            outcome.discovery_error = error;
            deleter::delete_all_content(&ctx.client, &name, &targets, since, &mut outcome).await
        }
        Err(e) => {
            outcome.discovery_error = Some(e.to_string());
            0
        }
    };
    let failed = outcome.discovery_error.is_some() || !outcome.content_errors.is_empty();
    let mut status = ns.status.clone().unwrap_or_default();
    if conditions::update(&mut status, &conditions::failing_conditions(&outcome)) {
        let mut updated = ns.clone();
        updated.status = Some(status);
        match api.replace_status(&name, &PostParams::default(), &updated).await {
            Ok(n) => ns = n,
            Err(e) if is_not_found(&e) => return ctx.done(&name, Action::await_change()),
            // Conditions are advisory: a lost race is settled on the next pass.
            Err(e) => {
                tracing::debug!(component = NAME, namespace = %name, error = %e, "cannot update namespace status")
            }
        }
    }
    if failed {
        let why = outcome.discovery_error.clone().unwrap_or_else(|| outcome.content_errors.join(", "));
        return Err(Error::Other(why));
    }
    if estimate > 0 {
        tracing::debug!(component = NAME, namespace = %name, estimate, "some content remains in the namespace");
        ctx.backoff.succeeded(&name);
        return Ok(Action::requeue(std::time::Duration::from_secs((estimate / 2 + 1) as u64)));
    }
    finalize(&api, ns).await?;
    tracing::info!(component = NAME, namespace = %name, "namespace emptied and finalized");
    ctx.done(&name, Action::await_change())
}

/// Removes [`FINALIZER`] from `spec.finalizers` through `/finalize`,
/// retrying on conflicts with the latest namespace (upstream
/// `retryOnConflictError` + `finalizeNamespace`).
async fn finalize(api: &Api<Namespace>, mut ns: Namespace) -> Result<(), Error> {
    let name = ns.metadata.name.clone().unwrap_or_default();
    loop {
        let spec = ns.spec.get_or_insert_with(Default::default);
        let mut rest: Vec<String> = spec.finalizers.take().unwrap_or_default();
        rest.retain(|f| f != FINALIZER);
        rest.sort();
        rest.dedup();
        spec.finalizers = Some(rest);
        match api.replace_subresource("finalize", &name, &PostParams::default(), &ns).await {
            Ok(_) => return Ok(()),
            Err(e) if is_not_found(&e) => return Ok(()),
            Err(e) if is_conflict(&e) => {
                let uid = ns.metadata.uid.clone();
                ns = match api.get(&name).await {
                    Ok(n) => n,
                    Err(e) if is_not_found(&e) => return Ok(()),
                    Err(e) => return Err(e.into()),
                };
                if ns.metadata.uid != uid {
                    return Err(Error::Other("namespace uid has changed across retries".into()));
                }
            }
            Err(e) => return Err(e.into()),
        }
    }
}
