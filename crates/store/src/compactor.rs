//! Periodic compaction, as the Kubernetes API server does for etcd: at each
//! tick, compact to the revision that was current at the previous tick, so
//! watchers and paginated lists always have at least one interval of history.

use std::time::Duration;

use tokio::task::JoinHandle;

use crate::{Revision, SharedStore};

/// Upstream's default `--etcd-compaction-interval`.
pub const DEFAULT_COMPACTION_INTERVAL: Duration = Duration::from_secs(5 * 60);

/// Spawns the compaction loop; abort the handle to stop it. Failures are
/// logged and retried at the next tick.
pub fn spawn_compactor(store: SharedStore, interval: Duration) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut ticker = tokio::time::interval(interval);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        ticker.tick().await; // the first tick fires at once
        let mut previous: Option<Revision> = None;
        loop {
            ticker.tick().await;
            let current = match store.current_revision().await {
                Ok(rev) => rev,
                Err(e) => {
                    tracing::warn!(component = "store", error = %e, "compaction skipped: cannot read the current revision; retrying next interval");
                    continue;
                }
            };
            if let Some(target) = previous.filter(|&r| r > 0) {
                match store.compact(target).await {
                    Ok(()) => tracing::debug!(component = "store", revision = target, "compacted history"),
                    Err(e) => {
                        tracing::warn!(component = "store", revision = target, error = %e, "compaction failed; retrying next interval")
                    }
                }
            }
            previous = Some(current);
        }
    })
}
