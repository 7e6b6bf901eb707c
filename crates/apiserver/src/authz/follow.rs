//! Following a resource for an authorizer's index: a watch of every
//! namespace with the initial state, delivered in batches (whatever
//! events are waiting), restarted with a full re-list when it ends —
//! upstream's informers feeding the RBAC and Node authorizers.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::task::JoinHandle;

use crate::storage::watch::{EventType, WatchOptions, INITIAL_EVENTS_END_ANNOTATION};
use crate::storage::ResourceStore;

/// One change a batch carries.
#[derive(Debug)]
pub enum Change<'a> {
    /// Forget everything: a new watch re-lists from scratch.
    Reset,
    /// An object was added or modified.
    Upsert(&'a Value),
    /// An object was deleted (its last state).
    Delete(&'a Value),
    /// The initial state has been delivered (the index is usable).
    Synced,
}

/// How long to wait before re-watching after a watch ended or failed.
const RETRY: Duration = Duration::from_millis(500);

/// Spawns the follower of `store`: `apply` gets every batch of changes, in
/// order, starting with [`Change::Reset`] for each new watch.
pub fn spawn(
    store: Arc<ResourceStore>,
    what: &'static str,
    mut apply: impl FnMut(&[Change<'_>]) + Send + 'static,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            let opts = WatchOptions { send_initial_events: Some(true), allow_bookmarks: true, ..Default::default() };
            match store.watch("", opts).await {
                Ok(mut rx) => {
                    let mut reset = true;
                    while let Some(first) = rx.recv().await {
                        let mut events = vec![first];
                        while let Ok(more) = rx.try_recv() {
                            events.push(more);
                        }
                        let mut changes = Vec::with_capacity(events.len() + 1);
                        if std::mem::take(&mut reset) {
                            changes.push(Change::Reset);
                        }
                        let mut failed = false;
                        for ev in &events {
                            match ev.kind {
                                EventType::Added | EventType::Modified => changes.push(Change::Upsert(&ev.object)),
                                EventType::Deleted => changes.push(Change::Delete(&ev.object)),
                                EventType::Bookmark => {
                                    let end = ev
                                        .object
                                        .pointer("/metadata/annotations")
                                        .and_then(|a| a.get(INITIAL_EVENTS_END_ANNOTATION).and_then(Value::as_str));
                                    if end == Some("true") {
                                        changes.push(Change::Synced);
                                    }
                                }
                                EventType::Error => failed = true,
                            }
                        }
                        apply(&changes);
                        if failed {
                            break;
                        }
                    }
                    tracing::debug!(component = crate::COMPONENT, what, "authorizer watch ended; re-listing");
                }
                Err(e) => {
                    tracing::warn!(component = crate::COMPONENT, what, error = %e, "authorizer watch failed; retrying");
                }
            }
            tokio::time::sleep(RETRY).await;
        }
    })
}
