//! What every controller shares: the error type, per-key exponential
//! back-off (upstream's default controller rate limiter: 5 ms doubling to
//! 1000 s), the stop signal and the loop that drives a kube-runtime
//! `Controller` until it is told to stop.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use kube::runtime::controller::Action;

/// A reconcile failure.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The API answered with an error or could not be reached.
    #[error(transparent)]
    Kube(#[from] kube::Error),
    /// Anything else, in words.
    #[error("{0}")]
    Other(String),
}

pub use rkube_client::errors::{api_code, is_conflict, is_not_found};

/// A create refused because the namespace is being deleted or is gone
/// (upstream controllers do not retry those).
pub fn is_namespace_gone(e: &kube::Error) -> bool {
    match e {
        kube::Error::Api(s) => s.code == 404 || (s.code == 403 && s.message.contains("because it is being terminated")),
        _ => false,
    }
}

/// Per-key failure counts: the delay before the next retry doubles from
/// 5 ms up to 1000 s, and success forgets the key.
#[derive(Default)]
pub struct Backoff {
    failures: Mutex<HashMap<String, u32>>,
}

impl Backoff {
    /// Records a failure of `key` and returns the delay before retrying.
    pub fn failed(&self, key: &str) -> Duration {
        let mut m = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        let n = m.entry(key.to_string()).or_insert(0);
        let delay = Duration::from_millis(5).saturating_mul(1u32.checked_shl(*n).unwrap_or(u32::MAX));
        *n = n.saturating_add(1);
        delay.min(Duration::from_secs(1000))
    }

    /// Forgets the failures of `key`.
    pub fn succeeded(&self, key: &str) {
        self.failures.lock().unwrap_or_else(|e| e.into_inner()).remove(key);
    }
}

/// The stop signal handed to controllers: becomes `true` once to stop.
pub type Stop = tokio::sync::watch::Receiver<bool>;

/// A future that completes when `stop` turns true (or its sender is gone).
pub fn stopped(mut stop: Stop) -> impl std::future::Future<Output = ()> + Send + Sync + 'static {
    async move {
        let _ = stop.wait_for(|v| *v).await;
    }
}

/// What a controller's context offers the shared error policy.
pub trait HasBackoff {
    /// The controller's back-off state.
    fn backoff(&self) -> &Backoff;
    /// The controller's name (the log component).
    fn name(&self) -> &'static str;
}

/// The shared error policy: log, then retry after the key's back-off.
pub fn error_policy<K: kube::Resource, C: HasBackoff>(obj: Arc<K>, err: &Error, ctx: Arc<C>) -> Action {
    let key = key_of(obj.as_ref());
    let delay = ctx.backoff().failed(&key);
    tracing::warn!(component = ctx.name(), %key, error = %err, retry_in_ms = delay.as_millis() as u64, "reconcile failed");
    Action::requeue(delay)
}

/// `namespace/name` or `name`.
pub fn key_of<K: kube::Resource>(obj: &K) -> String {
    let m = obj.meta();
    match &m.namespace {
        Some(ns) => format!("{ns}/{}", m.name.as_deref().unwrap_or("")),
        None => m.name.clone().unwrap_or_default(),
    }
}

/// Drives a controller's result stream to the end, logging failures of
/// the machinery itself (watch errors, queue overflow) at debug level
/// (reconcile errors are logged by [`error_policy`]).
pub async fn drive<S, T, E>(name: &'static str, stream: S)
where
    S: futures::Stream<Item = Result<T, E>>,
    E: std::fmt::Display,
{
    tracing::info!(component = name, "starting controller");
    stream
        .for_each(|r| async move {
            if let Err(e) = r {
                tracing::debug!(component = name, error = %e, "controller event");
            }
        })
        .await;
    tracing::info!(component = name, "controller stopped");
}

/// The readiness of an informer's store (its first list applied), which
/// any number of tasks may await at once, unlike kube-runtime's
/// `Store::wait_until_ready`: that one parks every caller on a single
/// oneshot receiver, which keeps only the waker of the last task that
/// polled it, so when several reconciles wait for the initial sync
/// together (one per key, as after a restart with existing objects) only
/// the last one is woken and the others wait forever, leaving their keys
/// never reconciled again. This wraps the one wait in a shared future
/// that wakes every waiter (upstream controllers wait for
/// `cache.WaitForCacheSync` once before starting their workers).
///
/// Create it once per store and let nothing else call the store's
/// `wait_until_ready` (another poller would take the single waker).
#[derive(Clone)]
pub struct StoreReady(futures::future::Shared<futures::future::BoxFuture<'static, bool>>);

impl StoreReady {
    /// Readiness of `store`.
    pub fn new<K>(store: &kube::runtime::reflector::Store<K>) -> StoreReady
    where
        K: kube::Resource + Clone + Send + Sync + 'static,
        K::DynamicType: Eq + std::hash::Hash + Clone + Send + Sync,
    {
        let store = store.clone();
        StoreReady(futures::FutureExt::shared(futures::FutureExt::boxed(async move {
            store.wait_until_ready().await.is_ok()
        })))
    }

    /// Waits until the store has applied its first list: `true`, or
    /// `false` if its writer was dropped before that (the informer stopped).
    pub async fn wait(&self) -> bool {
        self.0.clone().await
    }
}

/// The context every controller's reconcile gets: its own client (its
/// identity), its back-off state and the manager's settings.
pub struct Ctx {
    /// The controller's name, also its log component.
    pub name: &'static str,
    /// A client authenticated as the controller's ServiceAccount: every write.
    pub client: kube::Client,
    /// The manager's own client (`system:kube-controller-manager`): the
    /// informers and reads, as upstream's shared informers use the
    /// manager's identity while each controller writes as itself.
    pub reader: kube::Client,
    /// Per-key failure counts.
    pub backoff: Backoff,
    /// What the manager was configured with.
    pub settings: Arc<crate::manager::Settings>,
    /// Posts the controller's events (as its own client, component = its name).
    pub recorder: crate::events::Recorder,
}

impl Ctx {
    /// A context for controller `name`.
    pub fn new(
        name: &'static str,
        client: kube::Client,
        reader: kube::Client,
        settings: Arc<crate::manager::Settings>,
    ) -> Arc<Ctx> {
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname").map(|h| h.trim().to_string()).unwrap_or_default();
        let recorder = crate::events::Recorder::new(client.clone(), name, &host);
        Arc::new(Ctx { name, client, reader, backoff: Backoff::default(), settings, recorder })
    }

    /// Marks `key` reconciled and returns `action`.
    pub fn done(&self, key: &str, action: Action) -> Result<Action, Error> {
        self.backoff.succeeded(key);
        Ok(action)
    }
}

impl HasBackoff for Ctx {
    fn backoff(&self) -> &Backoff {
        &self.backoff
    }
    fn name(&self) -> &'static str {
        self.name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Several reconciles waiting for the initial sync at once are all
    /// released by it (with `Store::wait_until_ready` only the last
    /// poller was woken).
    #[tokio::test]
    async fn every_waiter_of_a_store_is_released_by_its_initial_sync() {
        use k8s_openapi::api::core::v1::Pod;
        use kube::runtime::{reflector, watcher};
        let (store, mut writer) = reflector::store::<Pod>();
        let ready = StoreReady::new(&store);
        let waiters: Vec<_> = (0..4)
            .map(|_| {
                let ready = ready.clone();
                tokio::spawn(async move { ready.wait().await })
            })
            .collect();
        // Let every waiter poll (and park) before the sync.
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        assert!(waiters.iter().all(|w| !w.is_finished()), "nobody is released before the initial list");
        writer.apply_watcher_event(&watcher::Event::Init);
        writer.apply_watcher_event(&watcher::Event::InitDone);
        for w in waiters {
            let released = tokio::time::timeout(Duration::from_secs(10), w).await;
            assert!(matches!(released, Ok(Ok(true))), "a waiter was not released: {released:?}");
        }
        // Later callers pass at once.
        assert!(ready.wait().await);
    }

    #[tokio::test]
    async fn a_store_whose_writer_is_dropped_is_never_ready() {
        use k8s_openapi::api::core::v1::Pod;
        let (store, writer) = kube::runtime::reflector::store::<Pod>();
        let ready = StoreReady::new(&store);
        drop(writer);
        assert!(!ready.wait().await);
    }

    #[test]
    fn backoff_doubles_from_5ms_to_1000s_per_key() {
        let b = Backoff::default();
        assert_eq!(b.failed("a"), Duration::from_millis(5));
        assert_eq!(b.failed("a"), Duration::from_millis(10));
        assert_eq!(b.failed("b"), Duration::from_millis(5));
        for _ in 0..40 {
            b.failed("a");
        }
        assert_eq!(b.failed("a"), Duration::from_secs(1000));
        b.succeeded("a");
        assert_eq!(b.failed("a"), Duration::from_millis(5));
    }
}
