//! Watches: in-process fan-out of committed batches, with history replay
//! from the log.
//!
//! Each watch is one tokio task. It subscribes to the writer's broadcast
//! *first*, then replays the log from its start revision up to the
//! published revision it read after subscribing, then forwards live batches,
//! skipping every revision it already delivered. Because the writer stores
//! the published revision before it broadcasts a batch, any batch the replay
//! did not cover is guaranteed to arrive on the subscription: the stream is
//! ordered, gap-free and duplicate-free.
//!
//! A watcher that falls more than the broadcast capacity behind (its
//! consumer is slow) gets `Lagged` and recovers the same way: it replays the
//! log from the last revision it delivered, then resumes live. It never
//! silently loses events; if the history it needs was compacted meanwhile,
//! the stream ends with `StoreError::Compacted`, as an etcd watcher would.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::broadcast::error::RecvError;
use tokio::sync::{broadcast, mpsc};
use tokio::time::Instant;
use tokio_stream::wrappers::ReceiverStream;

use super::read::{self, ReadPool};
use super::writer::{Batch, Shared};
use crate::{Result, Revision, Watch, WatchEvent, WatchOptions};

/// What a watch task needs from the store.
pub(crate) struct WatchContext {
    pub readers: Arc<ReadPool>,
    pub shared: Arc<Shared>,
    /// Idle time after which `progress_notify` sends a progress event.
    pub progress_interval: Duration,
    /// Events buffered between the task and the consumer.
    pub buffer: usize,
    /// Log rows read per replay query.
    pub replay_chunk: usize,
}

/// Starts a watch task. `rx` must have been subscribed before this call;
/// `start == 0` means "after the published revision as of now".
pub(crate) fn spawn(
    ctx: WatchContext,
    rx: broadcast::Receiver<Arc<Batch>>,
    prefix: &str,
    start: Revision,
    opts: WatchOptions,
) -> Watch {
    let (out, events) = mpsc::channel(ctx.buffer.max(1));
    let (progress_tx, progress_rx) = mpsc::unbounded_channel();
    let (synced, start) = if start > 0 {
        (start - 1, start)
    } else {
        let published = ctx.shared.current.load(Ordering::SeqCst);
        (published, published + 1)
    };
    let (lo, hi) = read::key_bounds(prefix, None);
    let task = WatchTask {
        readers: ctx.readers,
        shared: ctx.shared,
        prefix: prefix.to_string(),
        lo,
        hi,
        start,
        synced,
        out,
        replay_chunk: ctx.replay_chunk.max(1),
    };
    tokio::spawn(task.run(rx, progress_rx, opts.progress_notify, ctx.progress_interval));
    Watch::new(Box::pin(ReceiverStream::new(events)), progress_tx)
}

struct WatchTask {
    readers: Arc<ReadPool>,
    shared: Arc<Shared>,
    prefix: String,
    lo: Vec<u8>,
    hi: Vec<u8>,
    /// Events below this revision are never delivered.
    start: Revision,
    /// Every event of this watch with a revision up to here was delivered.
    synced: Revision,
    out: mpsc::Sender<Result<WatchEvent>>,
    replay_chunk: usize,
}

/// The consumer dropped the stream.
struct Gone;

impl WatchTask {
    async fn run(
        mut self,
        mut rx: broadcast::Receiver<Arc<Batch>>,
        mut progress_rx: mpsc::UnboundedReceiver<()>,
        progress_notify: bool,
        interval: Duration,
    ) {
        if !self.catch_up_or_fail().await {
            return;
        }
        let mut progress_pending = false;
        let mut progress_open = true;
        let idle = tokio::time::sleep(interval);
        tokio::pin!(idle);
        loop {
            if progress_pending {
                let current = self.shared.current.load(Ordering::SeqCst);
                if self.synced >= current {
                    if self.out.send(Ok(WatchEvent::Progress { revision: current })).await.is_err() {
                        return;
                    }
                    progress_pending = false;
                    idle.as_mut().reset(Instant::now() + interval);
                }
            }
            tokio::select! {
                _ = self.out.closed() => return,
                msg = rx.recv() => match msg {
                    Ok(batch) => match self.deliver(&batch).await {
                        Ok(true) => idle.as_mut().reset(Instant::now() + interval),
                        Ok(false) => {}
                        Err(Gone) => return,
                    },
                    Err(RecvError::Lagged(missed)) => {
                        tracing::debug!(component = "store", prefix = %self.prefix, missed, synced = self.synced,
                            "watcher fell behind; replaying from the log");
                        if !self.catch_up_or_fail().await {
                            return;
                        }
                    }
                    Err(RecvError::Closed) => return,
                },
                req = progress_rx.recv(), if progress_open => match req {
                    Some(()) => progress_pending = true,
                    None => progress_open = false,
                },
                _ = &mut idle, if progress_notify => {
                    progress_pending = true;
                    idle.as_mut().reset(Instant::now() + interval);
                }
            }
        }
    }

    /// Replays the log; on error, sends it as the stream's last item.
    /// Returns whether the watch goes on.
    async fn catch_up_or_fail(&mut self) -> bool {
        match self.catch_up().await {
            Ok(Ok(())) => true,
            Ok(Err(Gone)) => false,
            Err(e) => {
                let _ = self.out.send(Err(e)).await;
                false
            }
        }
    }

    /// Delivers every event after `synced` up to the published revision,
    /// read from the log in chunks.
    async fn catch_up(&mut self) -> Result<std::result::Result<(), Gone>> {
        let target = self.shared.current.load(Ordering::SeqCst);
        let mut next = (self.synced + 1).max(self.start);
        while next <= target {
            let (lo, hi, limit) = (self.lo.clone(), self.hi.clone(), self.replay_chunk);
            let chunk = self
                .readers
                .run("replaying watch history", move |tx| read::history(tx, next, target, &lo, &hi, limit))
                .await?;
            for ev in chunk.events {
                if self.out.send(Ok(ev)).await.is_err() {
                    return Ok(Err(Gone));
                }
            }
            self.synced = self.synced.max(chunk.scanned_through);
            next = chunk.scanned_through + 1;
        }
        self.synced = self.synced.max(target);
        Ok(Ok(()))
    }

    /// Forwards the events of a live batch this watch has not delivered yet.
    /// Returns whether any event was sent.
    async fn deliver(&mut self, batch: &Batch) -> std::result::Result<bool, Gone> {
        if batch.last <= self.synced {
            return Ok(false);
        }
        let mut sent = false;
        for ev in &batch.events {
            let rev = ev.revision();
            if rev <= self.synced || rev < self.start {
                continue;
            }
            let key = match ev {
                WatchEvent::Put { kv, .. } => &kv.key,
                WatchEvent::Delete { key, .. } => key,
                WatchEvent::Progress { .. } => continue,
            };
            if !key.as_bytes().starts_with(self.prefix.as_bytes()) {
                continue;
            }
            if self.out.send(Ok(ev.clone())).await.is_err() {
                return Err(Gone);
            }
            sent = true;
        }
        self.synced = batch.last;
        Ok(sent)
    }
}
