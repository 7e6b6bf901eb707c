//! A de-duplicating work queue of object uids (the shape of client-go's
//! workqueue): an item queued several times before a worker takes it is
//! processed once, an item is never processed by two workers at once (if
//! queued while in flight it is taken again after `done`), and failures
//! come back after a per-item exponential back-off (5 ms doubling to
//! 1000 s, upstream's default controller rate limiter).

use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;

use crate::runtime::Backoff;

#[derive(Default)]
struct State {
    queue: VecDeque<String>,
    queued: HashSet<String>,
    processing: HashSet<String>,
    /// Queued again while being processed.
    dirty: HashSet<String>,
}

/// The queue; cheap to clone (clones share it).
#[derive(Clone, Default)]
pub struct WorkQueue {
    state: Arc<Mutex<State>>,
    notify: Arc<Notify>,
    backoff: Arc<Backoff>,
}

impl WorkQueue {
    /// Queues `uid` unless it is already waiting.
    pub fn add(&self, uid: &str) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if s.processing.contains(uid) {
            s.dirty.insert(uid.to_string());
            return;
        }
        if s.queued.insert(uid.to_string()) {
            s.queue.push_back(uid.to_string());
            drop(s);
            self.notify.notify_one();
        }
    }

    /// Queues `uid` after its back-off.
    pub fn add_rate_limited(&self, uid: &str) {
        let delay = self.backoff.failed(uid);
        self.add_after(uid, delay);
    }

    /// Queues `uid` after `delay`.
    pub fn add_after(&self, uid: &str, delay: Duration) {
        let q = self.clone();
        let uid = uid.to_string();
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            q.add(&uid);
        });
    }

    /// Forgets the back-off of `uid`.
    pub fn forget(&self, uid: &str) {
        self.backoff.succeeded(uid);
    }

    /// Waits for the next item and marks it in flight.
    pub async fn get(&self) -> String {
        loop {
            let notified = self.notify.notified();
            {
                let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
                if let Some(uid) = s.queue.pop_front() {
                    s.queued.remove(&uid);
                    s.processing.insert(uid.clone());
                    if !s.queue.is_empty() {
                        self.notify.notify_one();
                    }
                    return uid;
                }
            }
            notified.await;
        }
    }

    /// Marks `uid` no longer in flight (queuing it again if it was added meanwhile).
    pub fn done(&self, uid: &str) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.processing.remove(uid);
        if s.dirty.remove(uid) && s.queued.insert(uid.to_string()) {
            s.queue.push_back(uid.to_string());
            drop(s);
            self.notify.notify_one();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn duplicates_fold_and_in_flight_items_come_back_once_done() {
        let q = WorkQueue::default();
        q.add("a");
        q.add("a");
        q.add("b");
        assert_eq!(q.get().await, "a");
        q.add("a"); // in flight: deferred
        assert_eq!(q.get().await, "b");
        q.done("b");
        q.done("a");
        assert_eq!(q.get().await, "a");
        q.done("a");
        assert!(tokio::time::timeout(Duration::from_millis(50), q.get()).await.is_err());
    }
}
