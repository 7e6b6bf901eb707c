//! The etcd v3 backend: [`EtcdStore`] implements [`Store`] over an etcd
//! cluster through `etcd-client`, the way upstream kube-apiserver's `etcd3`
//! storage does. Tested against etcd 3.4 (Debian's `etcd-server`); every RPC
//! used here exists in etcd 3.4 and later.
//!
//! # Revisions
//!
//! etcd's first write is revision 2 (revision 1 is the empty store), whereas
//! the store contract numbers the first write 1 and reports 0 for a store
//! that was never written. `EtcdStore` therefore shifts every revision by
//! one: contract revision `r` is etcd revision `r + 1`. The mapping is the
//! same for every API server sharing an etcd, so resourceVersions stay
//! consistent across them; only `etcdctl` shows numbers one higher.
//!
//! # Operations
//!
//! - `create`: one transaction, `create_revision(key) == 0` then put
//!   (else [`StoreError::AlreadyExists`]).
//! - `update`: `mod_revision(key) == expected` then put (and a keys-only get
//!   for the create revision), else get → [`StoreError::Conflict`] with the
//!   current value, or [`StoreError::NotFound`].
//! - `delete`: with `expected`, the same compare then delete with `prev_kv`;
//!   without, a plain delete with `prev_kv`.
//! - Reads are linearizable (etcd's default), served at the requested
//!   revision; `count` is etcd's count of keys in `[start, prefix_end)`.
//! - Values over [`MAX_VALUE_BYTES`] are refused before contacting etcd.
//!   **etcd must run with `--max-request-bytes` above its default** (the
//!   default, 1.5 MiB, counts the whole request, so a value of exactly 1.5 MiB
//!   would be refused): rkube recommends `--max-request-bytes=2097152`. If
//!   etcd still refuses a request as too large, the write fails with
//!   [`StoreError::ValueTooLarge`] and a warning names the flag.
//!
//! # TTLs
//!
//! Keys with a TTL are attached to etcd leases. Like kube-apiserver's lease
//! manager, a lease is reused for later writes whose TTL ends at nearly the
//! same time, and is granted a little longer than asked (5% of the TTL, at
//! most 60 s) so no key expires before its TTL. etcd raises TTLs below its
//! minimum (1.5 election timeouts rounded up to whole seconds: 2 s with the
//! default `--election-timeout=1000`) and expires leases in a background
//! loop, so deletion can lag the TTL by a few seconds.
//!
//! # Compaction
//!
//! `compact` issues etcd's (logical) compaction; compacting at or below an
//! earlier compaction is a no-op. etcd 3.4 has no RPC that reports the
//! compacted revision, and several API servers may compact the same etcd,
//! so [`Store::compacted_revision`] asks etcd itself: a read at revision `r`
//! fails exactly when `r` is below etcd's compacted revision, so a binary
//! search over count-only reads finds it (one read in the steady state,
//! since the last answer is remembered as a lower bound). Unlike
//! kube-apiserver's `compact_rev_key`, this writes nothing, so it neither
//! advances the revision nor shows up in watches of the whole keyspace.
//!
//! # Watches
//!
//! Each watch is one gRPC stream on a connection reserved for watches (so a
//! slow watch consumer cannot stall reads and writes), owned by a task that
//! reads eagerly, maps events and forwards them; dropping the [`Watch`]
//! cancels the etcd watch. A watch that loses its stream to a transient
//! failure resumes from the next revision for up to
//! [`EtcdOptions::watch_resume_timeout`], then ends with
//! [`StoreError::Unavailable`].
//!
//! Events are buffered in memory without bound until the consumer reads
//! them (as etcd's Go client does), so a slow consumer never makes etcd
//! drop or compact away its watch.
//!
//! [`Watch::request_progress`] sends etcd's `WatchProgressRequest`. etcd
//! 3.4.23 answers such a request at once with its current revision, even if
//! events up to that revision are still queued for the watch — for example
//! while a new watch replays history (etcd-io/etcd#15220); some later
//! releases instead never answer a watch that is still catching up
//! (etcd-io/etcd#17507). To keep the contract's promise (every event up to
//! the reported revision already delivered) on every version, the watch
//! task asks only once a watch that replays history has caught up (it has
//! received an event at or past the revision it was created at, or a
//! periodic progress notification, or no replayed events for 300 ms, three
//! of etcd's 100 ms sync periods), holds etcd's answer for 10 ms so events
//! queued before it arrive first, and asks again after 500 ms without an
//! answer. Kubernetes requires etcd 3.4.31+ or 3.5.13+ for consistent reads
//! from its watch cache; those are recommended here too.

use std::future::Future;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use etcd_client::{
    Client, Compare, CompareOp, ConnectOptions, DeleteOptions, EventType, GetOptions, KvClient, LeaseClient,
    PutOptions, Txn, TxnOp, TxnOpResponse, WatchClient, WatchResponse, WatchStream, Watcher,
};
use futures::StreamExt;
use tokio::sync::mpsc;
use tokio_stream::wrappers::UnboundedReceiverStream;

use crate::{
    check_value_size, prefix_end, DeleteResponse, GetResponse, KeyValue, RangeRequest, RangeResponse, Result, Revision,
    Store, StoreError, Watch, WatchEvent, WatchOptions, MAX_VALUE_BYTES,
};

/// Largest response accepted from etcd (range results, watch batches):
/// 2 GiB − 1, as kube-apiserver configures its etcd client.
const MAX_RESPONSE_BYTES: usize = i32::MAX as usize;

/// Key read (never written) for revision probes.
const PROBE_KEY: &[u8] = b"\0rkube/revision-probe";

/// Leases cached for reuse at most.
const MAX_CACHED_LEASES: usize = 16;

/// Connection and lease tunables of [`EtcdStore`]. The defaults follow
/// kube-apiserver's etcd client.
#[derive(Clone, Debug)]
pub struct EtcdOptions {
    /// How long `connect` waits for etcd to answer a first read.
    pub connect_timeout: Duration,
    /// Deadline of each read, write, lease and compaction RPC.
    pub request_timeout: Duration,
    /// HTTP/2 keep-alive ping interval (etcd refuses pings more often than
    /// its `--grpc-keepalive-min-time`, 5 s by default).
    pub keep_alive_interval: Duration,
    /// How long an unanswered keep-alive ping may take before the
    /// connection is considered dead.
    pub keep_alive_timeout: Duration,
    /// Extra lease time granted, as a percentage of the TTL (upstream: 5).
    pub lease_reuse_percent: u32,
    /// Cap on the extra lease time (upstream: 60 s).
    pub lease_reuse_max: Duration,
    /// Keys attached to one lease at most before a new one is granted
    /// (upstream: 1000; revoking a lease deletes all its keys in one entry).
    pub lease_max_attached_keys: u64,
    /// How long a watch retries re-establishing its stream after a
    /// transient failure before it ends with `Unavailable`.
    pub watch_resume_timeout: Duration,
}

impl Default for EtcdOptions {
    fn default() -> Self {
        EtcdOptions {
            connect_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(30),
            keep_alive_interval: Duration::from_secs(30),
            keep_alive_timeout: Duration::from_secs(10),
            lease_reuse_percent: 5,
            lease_reuse_max: Duration::from_secs(60),
            lease_max_attached_keys: 1000,
            watch_resume_timeout: Duration::from_secs(30),
        }
    }
}

/// The etcd v3 backend (see the [module docs](self) for how each contract
/// operation maps onto etcd). Cheap to clone; clones share connections.
#[derive(Clone)]
pub struct EtcdStore {
    inner: Arc<Inner>,
}

struct Inner {
    endpoints: String,
    options: EtcdOptions,
    kv: KvClient,
    lease: LeaseClient,
    watch: WatchClient,
    /// The clients own the channels' endpoint discovery; keep them alive.
    _clients: (Client, Client),
    leases: Mutex<Vec<CachedLease>>,
    /// Lower bound of the compacted revision (contract numbering).
    compacted: AtomicI64,
}

#[derive(Clone, Copy, Debug)]
struct CachedLease {
    id: i64,
    expires: Instant,
    attached: u64,
}

/// etcd revision → contract revision.
fn from_etcd(rev: i64) -> Revision {
    rev - 1
}

/// Contract revision → etcd revision.
fn to_etcd(rev: Revision) -> i64 {
    rev + 1
}

/// What went wrong with an etcd RPC, before it becomes a [`StoreError`].
#[derive(Debug)]
enum Failure {
    Compacted,
    FutureRevision,
    TooLarge(String),
    LeaseNotFound,
    /// etcd could not be reached or did not answer.
    Unreachable(String),
    /// etcd answered with another error.
    Refused(String),
}

fn classify(e: etcd_client::Error) -> Failure {
    match e {
        etcd_client::Error::GRpcStatus(status) => {
            let msg = status.message().to_string();
            // tonic::Code discriminants: 1 Cancelled, 2 Unknown,
            // 4 DeadlineExceeded, 8 ResourceExhausted, 14 Unavailable.
            let code = status.code() as i32;
            if msg.contains("required revision has been compacted") {
                Failure::Compacted
            } else if msg.contains("required revision is a future revision") {
                Failure::FutureRevision
            } else if msg.contains("request is too large") || (code == 8 && msg.contains("larger than max")) {
                Failure::TooLarge(msg)
            } else if msg.contains("requested lease not found") {
                Failure::LeaseNotFound
            } else if matches!(code, 1 | 4 | 14)
                || (code == 2 && (msg.contains("transport") || msg.contains("connect")))
            {
                Failure::Unreachable(msg)
            } else {
                Failure::Refused(msg)
            }
        }
        etcd_client::Error::TransportError(e) => Failure::Unreachable(e.to_string()),
        etcd_client::Error::IoError(e) => Failure::Unreachable(e.to_string()),
        other => Failure::Refused(other.to_string()),
    }
}

fn kv_from_etcd(kv: &etcd_client::KeyValue) -> KeyValue {
    KeyValue {
        key: String::from_utf8_lossy(kv.key()).into_owned(),
        value: Bytes::copy_from_slice(kv.value()),
        create_revision: from_etcd(kv.create_revision()),
        mod_revision: from_etcd(kv.mod_revision()),
    }
}

fn kv_from_etcd_owned(kv: etcd_client::KeyValue) -> KeyValue {
    let create_revision = from_etcd(kv.create_revision());
    let mod_revision = from_etcd(kv.mod_revision());
    let (key, value) = kv.into_key_value();
    let key = match String::from_utf8(key) {
        Ok(k) => k,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    };
    KeyValue { key, value: Bytes::from(value), create_revision, mod_revision }
}

fn header_revision(h: Option<&etcd_client::ResponseHeader>) -> i64 {
    h.map(|h| h.revision()).unwrap_or(0)
}

impl EtcdStore {
    /// Connects to etcd at `endpoints` (client URLs such as
    /// `http://127.0.0.1:2379`) with [`EtcdOptions::default`], and checks
    /// that it answers. Fails with [`StoreError::Unavailable`] naming the
    /// endpoints when it cannot be reached.
    pub async fn connect(endpoints: &[String]) -> Result<EtcdStore> {
        Self::connect_with(endpoints, EtcdOptions::default()).await
    }

    /// [`EtcdStore::connect`] with explicit options.
    pub async fn connect_with(endpoints: &[String], options: EtcdOptions) -> Result<EtcdStore> {
        let joined = endpoints.join(",");
        if endpoints.is_empty() {
            return Err(StoreError::Unavailable(
                "no etcd endpoints given: pass --datastore-endpoint etcd://host:port[,host:port...]".into(),
            ));
        }
        let connect_options = ConnectOptions::new()
            .with_connect_timeout(options.connect_timeout)
            .with_keep_alive(options.keep_alive_interval, options.keep_alive_timeout);
        let connect = |what: &'static str| {
            let connect_options = connect_options.clone();
            let joined = joined.clone();
            async move {
                Client::connect(endpoints, Some(connect_options)).await.map_err(|e| {
                    StoreError::Unavailable(format!(
                        "cannot set up the {what} connection to etcd at {joined}: {e}; check the endpoint URLs"
                    ))
                })
            }
        };
        // Reads, writes and leases use one connection; watches another, so
        // an unread watch stream cannot stall requests (HTTP/2 flow control
        // is per connection as well as per stream).
        let kv_client = connect("request").await?;
        let watch_client = connect("watch").await?;
        let store = EtcdStore {
            inner: Arc::new(Inner {
                endpoints: joined.clone(),
                kv: kv_client
                    .kv_client()
                    .max_decoding_message_size(MAX_RESPONSE_BYTES)
                    .max_encoding_message_size(MAX_RESPONSE_BYTES),
                lease: kv_client.lease_client(),
                watch: watch_client.watch_client().max_decoding_message_size(MAX_RESPONSE_BYTES),
                _clients: (kv_client, watch_client),
                options: options.clone(),
                leases: Mutex::new(Vec::new()),
                compacted: AtomicI64::new(0),
            }),
        };
        let probe = tokio::time::timeout(options.connect_timeout, store.current_revision()).await;
        match probe {
            Ok(Ok(rev)) => {
                tracing::info!(component = "store", endpoints = %joined, revision = rev, "connected to etcd");
                Ok(store)
            }
            Ok(Err(e)) => Err(e),
            Err(_) => Err(StoreError::Unavailable(format!(
                "etcd at {joined} did not answer within {:?}; check that etcd is running and reachable from this host",
                options.connect_timeout
            ))),
        }
    }

    /// The endpoints this store talks to, comma-separated.
    pub fn endpoints(&self) -> &str {
        &self.inner.endpoints
    }
}

impl Inner {
    /// Runs one RPC under the request deadline.
    async fn rpc<T>(
        &self,
        fut: impl Future<Output = std::result::Result<T, etcd_client::Error>>,
    ) -> std::result::Result<T, Failure> {
        match tokio::time::timeout(self.options.request_timeout, fut).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(classify(e)),
            Err(_) => Err(Failure::Unreachable(format!("no answer within {:?}", self.options.request_timeout))),
        }
    }

    /// The contract error for a failed RPC; `what` completes "cannot …",
    /// e.g. `read "/registry/pods/default/a"`.
    fn unavailable(&self, what: &str, failure: Failure) -> StoreError {
        match failure {
            Failure::Unreachable(detail) => StoreError::Unavailable(format!(
                "cannot {what}: etcd at {} is unreachable ({detail}); check that etcd is running and reachable from this host",
                self.endpoints
            )),
            Failure::Refused(detail) => {
                StoreError::Unavailable(format!("etcd at {} refused to {what}: {detail}", self.endpoints))
            }
            other => StoreError::Unavailable(format!("etcd at {} failed to {what}: {other:?}", self.endpoints)),
        }
    }

    /// Turns a failed read at `requested` (contract numbering) into the
    /// contract's error, looking up the compacted or current revision.
    async fn read_error(&self, what: &str, requested: Option<Revision>, failure: Failure) -> StoreError {
        match (failure, requested) {
            (Failure::Compacted, Some(requested)) => match self.compacted_revision().await {
                Ok(compacted) => StoreError::Compacted { requested, compacted },
                Err(e) => e,
            },
            (Failure::FutureRevision, Some(requested)) => match self.current_revision().await {
                Ok(current) => StoreError::FutureRevision { requested, current },
                Err(e) => e,
            },
            (failure, _) => self.unavailable(what, failure),
        }
    }

    fn write_error(&self, op: &str, key: &str, size: usize, failure: Failure) -> StoreError {
        match failure {
            Failure::TooLarge(detail) => {
                tracing::warn!(
                    component = "store",
                    key,
                    size,
                    detail = %detail,
                    "etcd refused a write as too large: start etcd with --max-request-bytes=2097152 so values up to 1.5 MiB fit"
                );
                StoreError::ValueTooLarge { key: key.to_string(), size, limit: MAX_VALUE_BYTES }
            }
            failure => self.unavailable(&format!("{op} {key:?}"), failure),
        }
    }

    async fn current_revision(&self) -> Result<Revision> {
        let mut kv = self.kv.clone();
        let resp = self
            .rpc(kv.get(PROBE_KEY, Some(GetOptions::new().with_count_only())))
            .await
            .map_err(|f| self.unavailable("read the current revision", f))?;
        Ok(from_etcd(header_revision(resp.header())))
    }

    /// Whether a read at etcd revision `rev` is allowed (not compacted).
    async fn readable_at(&self, rev: i64) -> Result<bool> {
        let mut kv = self.kv.clone();
        match self.rpc(kv.get(PROBE_KEY, Some(GetOptions::new().with_count_only().with_revision(rev)))).await {
            Ok(_) => Ok(true),
            Err(Failure::Compacted) => Ok(false),
            // Only asked for revisions at or below the current one.
            Err(Failure::FutureRevision) => Ok(true),
            Err(f) => Err(self.unavailable("look up the compacted revision", f)),
        }
    }

    async fn compacted_revision(&self) -> Result<Revision> {
        let known = self.compacted.load(Ordering::Acquire).max(0);
        // etcd refuses reads below its compacted revision C and serves reads
        // at C; contract compacted revision = C - 1. `known + 1 <= C`.
        let mut lo = to_etcd(known);
        if self.readable_at(lo).await? {
            return Ok(known);
        }
        let mut kv = self.kv.clone();
        let current = self
            .rpc(kv.get(PROBE_KEY, Some(GetOptions::new().with_count_only())))
            .await
            .map_err(|f| self.unavailable("read the current revision", f))?;
        // Invariant: not readable at lo, readable at hi.
        let mut hi = header_revision(current.header()).max(lo + 1);
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if self.readable_at(mid).await? {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        let compacted = from_etcd(hi);
        self.compacted.fetch_max(compacted, Ordering::AcqRel);
        Ok(compacted)
    }

    /// A lease for a key that must live `ttl`, reusing a cached one when it
    /// expires within the reuse window (kube-apiserver's lease manager).
    async fn lease_for(&self, ttl: Duration) -> Result<i64> {
        let ttl_secs = (ttl.as_secs() + u64::from(ttl.subsec_nanos() > 0)).max(1) as i64;
        let extra = ((ttl_secs as u64 * u64::from(self.options.lease_reuse_percent)) / 100)
            .min(self.options.lease_reuse_max.as_secs()) as i64;
        let now = Instant::now();
        {
            let mut leases = self.leases.lock().unwrap_or_else(|p| p.into_inner());
            leases.retain(|l| l.expires > now);
            let earliest = now + Duration::from_secs(ttl_secs as u64);
            let latest = earliest + Duration::from_secs(extra as u64);
            if let Some(l) = leases.iter_mut().find(|l| {
                l.expires > earliest && l.expires <= latest && l.attached < self.options.lease_max_attached_keys
            }) {
                l.attached += 1;
                return Ok(l.id);
            }
        }
        let mut lease = self.lease.clone();
        let resp = self
            .rpc(lease.grant(ttl_secs + extra, None))
            .await
            .map_err(|f| self.unavailable(&format!("grant a lease for a {ttl_secs} s TTL"), f))?;
        // etcd raises TTLs below its minimum; count from before the request
        // so the cached expiry is never later than etcd's.
        let granted = resp.ttl().max(ttl_secs + extra);
        tracing::debug!(component = "store", lease = resp.id(), ttl = granted, "granted etcd lease");
        let mut leases = self.leases.lock().unwrap_or_else(|p| p.into_inner());
        if leases.len() >= MAX_CACHED_LEASES {
            leases.sort_by_key(|l| l.expires);
            leases.remove(0);
        }
        leases.push(CachedLease { id: resp.id(), expires: now + Duration::from_secs(granted as u64), attached: 1 });
        Ok(resp.id())
    }

    fn forget_lease(&self, id: i64) {
        self.leases.lock().unwrap_or_else(|p| p.into_inner()).retain(|l| l.id != id);
    }

    /// Runs a write transaction built by `build(lease)`, attaching a lease
    /// for `ttl`; retries once with a fresh lease if etcd no longer knows
    /// the cached one.
    async fn write_txn(
        &self,
        op: &str,
        key: &str,
        size: usize,
        ttl: Option<Duration>,
        build: impl Fn(Option<PutOptions>) -> Txn,
    ) -> Result<etcd_client::TxnResponse> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let lease = match ttl {
                Some(ttl) => Some(self.lease_for(ttl).await?),
                None => None,
            };
            let mut kv = self.kv.clone();
            match self.rpc(kv.txn(build(lease.map(|id| PutOptions::new().with_lease(id))))).await {
                Ok(resp) => return Ok(resp),
                Err(Failure::LeaseNotFound) if attempt == 1 => {
                    if let Some(id) = lease {
                        tracing::debug!(
                            component = "store",
                            lease = id,
                            "cached etcd lease is gone; granting a new one"
                        );
                        self.forget_lease(id);
                    }
                }
                Err(f) => return Err(self.write_error(op, key, size, f)),
            }
        }
    }
}

fn range_bounds(prefix: &str) -> (Vec<u8>, Vec<u8>) {
    let key = if prefix.is_empty() { vec![0] } else { prefix.as_bytes().to_vec() };
    // An empty range end means "just the key"; "\0" means "every key from
    // `key` on" (the prefix is empty or all 0xff).
    let end = prefix_end(prefix).unwrap_or_else(|| vec![0]);
    (key, end)
}

#[async_trait::async_trait]
impl Store for EtcdStore {
    async fn current_revision(&self) -> Result<Revision> {
        self.inner.current_revision().await
    }

    /// etcd's Maintenance `Snapshot` stream, byte for byte: the member's
    /// bbolt database followed by the SHA-256 of it (the last message), so
    /// the saved file is what `etcdctl snapshot save` writes and what
    /// `etcdutl snapshot restore` verifies and restores. The RPC reports no
    /// revision; [`crate::Snapshot::revision`] is the current revision read
    /// just before, a lower bound of what the snapshot holds.
    async fn snapshot(&self) -> Result<crate::Snapshot> {
        let inner = self.inner.clone();
        let revision = inner.current_revision().await?;
        let mut maintenance = inner._clients.0.maintenance_client();
        let stream = maintenance.snapshot().await.map_err(|e| inner.unavailable("start a snapshot", classify(e)))?;
        tracing::info!(component = "store", endpoints = %inner.endpoints, revision, "streaming an etcd snapshot");
        let data = futures::stream::try_unfold((stream, inner), |(mut stream, inner)| async move {
            loop {
                match stream.message().await {
                    Ok(Some(resp)) if resp.blob().is_empty() => continue,
                    Ok(Some(resp)) => return Ok(Some((Bytes::copy_from_slice(resp.blob()), (stream, inner)))),
                    Ok(None) => return Ok(None),
                    Err(e) => return Err(inner.unavailable("stream the snapshot", classify(e))),
                }
            }
        });
        Ok(crate::Snapshot { format: crate::SnapshotFormat::Etcd, revision, size: None, data: Box::pin(data) })
    }

    async fn get(&self, key: &str, revision: Option<Revision>) -> Result<GetResponse> {
        let inner = &self.inner;
        let revision = revision.filter(|r| *r >= 0);
        let mut opts = GetOptions::new();
        if let Some(r) = revision {
            opts = opts.with_revision(to_etcd(r));
        }
        let mut kv = inner.kv.clone();
        let mut resp = match inner.rpc(kv.get(key, Some(opts))).await {
            Ok(resp) => resp,
            Err(f) => return Err(inner.read_error(&format!("read {key:?}"), revision, f).await),
        };
        let served = revision.unwrap_or_else(|| from_etcd(header_revision(resp.header())));
        Ok(GetResponse { kv: resp.take_kvs().into_iter().next().map(kv_from_etcd_owned), revision: served })
    }

    async fn range(&self, req: RangeRequest) -> Result<RangeResponse> {
        let inner = &self.inner;
        let revision = req.revision.filter(|r| *r >= 0);
        let (prefix_key, end) = range_bounds(&req.prefix);
        let key = match req.start {
            Some(start) if start.as_bytes() > prefix_key.as_slice() => start.into_bytes(),
            _ => prefix_key,
        };
        let empty_range = end != [0] && key.as_slice() >= end.as_slice();
        let mut opts = GetOptions::new().with_range(end);
        if let Some(r) = revision {
            opts = opts.with_revision(to_etcd(r));
        }
        if empty_range {
            // Nothing can match; still validate the revision.
            opts = opts.with_count_only();
        } else if let Some(limit) = req.limit.filter(|l| *l > 0) {
            opts = opts.with_limit(limit as i64);
        }
        let probe_key = if empty_range { PROBE_KEY.to_vec() } else { key };
        let mut kv = inner.kv.clone();
        let mut resp = match inner.rpc(kv.get(probe_key, Some(opts))).await {
            Ok(resp) => resp,
            Err(f) => return Err(inner.read_error(&format!("list keys under {:?}", req.prefix), revision, f).await),
        };
        let served = revision.unwrap_or_else(|| from_etcd(header_revision(resp.header())));
        if empty_range {
            return Ok(RangeResponse { kvs: Vec::new(), more: false, count: 0, revision: served });
        }
        let more = resp.more();
        let count = resp.count().max(0) as u64;
        let kvs = resp.take_kvs().into_iter().map(kv_from_etcd_owned).collect();
        Ok(RangeResponse { kvs, more, count, revision: served })
    }

    async fn create(&self, key: &str, value: Bytes, ttl: Option<Duration>) -> Result<KeyValue> {
        check_value_size(key, &value)?;
        let inner = &self.inner;
        let resp = inner
            .write_txn("create", key, value.len(), ttl, |put| {
                Txn::new().when([Compare::create_revision(key, CompareOp::Equal, 0)]).and_then([TxnOp::put(
                    key,
                    value.to_vec(),
                    put,
                )])
            })
            .await?;
        if !resp.succeeded() {
            return Err(StoreError::AlreadyExists { key: key.to_string() });
        }
        let rev = from_etcd(header_revision(resp.header()));
        Ok(KeyValue { key: key.to_string(), value, create_revision: rev, mod_revision: rev })
    }

    async fn update(&self, key: &str, value: Bytes, expected: Revision, ttl: Option<Duration>) -> Result<KeyValue> {
        check_value_size(key, &value)?;
        let inner = &self.inner;
        let resp = inner
            .write_txn("update", key, value.len(), ttl, |put| {
                Txn::new()
                    .when([Compare::mod_revision(key, CompareOp::Equal, to_etcd(expected))])
                    .and_then([
                        TxnOp::put(key, value.to_vec(), put),
                        TxnOp::get(key, Some(GetOptions::new().with_keys_only())),
                    ])
                    .or_else([TxnOp::get(key, None)])
            })
            .await?;
        let mod_revision = from_etcd(header_revision(resp.header()));
        let succeeded = resp.succeeded();
        let got = resp.op_responses().into_iter().find_map(|r| match r {
            TxnOpResponse::Get(mut g) => g.take_kvs().into_iter().next(),
            _ => None,
        });
        if succeeded {
            let create_revision = got.map(|kv| from_etcd(kv.create_revision())).ok_or_else(|| {
                StoreError::Unavailable(format!(
                    "etcd at {} updated {key:?} but returned no key in the same transaction",
                    inner.endpoints
                ))
            })?;
            return Ok(KeyValue { key: key.to_string(), value, create_revision, mod_revision });
        }
        match got {
            None => Err(StoreError::NotFound { key: key.to_string() }),
            Some(kv) => {
                Err(StoreError::Conflict { key: key.to_string(), expected, current: Some(kv_from_etcd_owned(kv)) })
            }
        }
    }

    async fn delete(&self, key: &str, expected: Option<Revision>) -> Result<DeleteResponse> {
        let inner = &self.inner;
        let mut kv = inner.kv.clone();
        let Some(expected) = expected else {
            let mut resp = inner
                .rpc(kv.delete(key, Some(DeleteOptions::new().with_prev_key())))
                .await
                .map_err(|f| inner.unavailable(&format!("delete {key:?}"), f))?;
            let revision = from_etcd(header_revision(resp.header()));
            return match resp.take_prev_kvs().into_iter().next() {
                Some(prev) => Ok(DeleteResponse { revision, prev: kv_from_etcd_owned(prev) }),
                None => Err(StoreError::NotFound { key: key.to_string() }),
            };
        };
        let txn = Txn::new()
            .when([Compare::mod_revision(key, CompareOp::Equal, to_etcd(expected))])
            .and_then([TxnOp::delete(key, Some(DeleteOptions::new().with_prev_key()))])
            .or_else([TxnOp::get(key, None)]);
        let resp = inner.rpc(kv.txn(txn)).await.map_err(|f| inner.unavailable(&format!("delete {key:?}"), f))?;
        let revision = from_etcd(header_revision(resp.header()));
        let succeeded = resp.succeeded();
        let found = resp.op_responses().into_iter().find_map(|r| match r {
            TxnOpResponse::Delete(mut d) => d.take_prev_kvs().into_iter().next(),
            TxnOpResponse::Get(mut g) => g.take_kvs().into_iter().next(),
            _ => None,
        });
        match (succeeded, found) {
            (true, Some(prev)) => Ok(DeleteResponse { revision, prev: kv_from_etcd_owned(prev) }),
            // The compare matched but nothing was deleted: cannot happen for
            // a key with a mod revision; report it as absent.
            (true, None) | (false, None) => Err(StoreError::NotFound { key: key.to_string() }),
            (false, Some(current)) => {
                Err(StoreError::Conflict { key: key.to_string(), expected, current: Some(kv_from_etcd_owned(current)) })
            }
        }
    }

    async fn watch(&self, prefix: &str, start: Revision, opts: WatchOptions) -> Result<Watch> {
        let (key, range_end) = range_bounds(prefix);
        let (events_tx, events_rx) = mpsc::unbounded_channel();
        let (progress_tx, progress_rx) = mpsc::unbounded_channel();
        let mut task = WatchTask {
            inner: self.inner.clone(),
            prefix: prefix.to_string(),
            key,
            range_end,
            progress_notify: opts.progress_notify,
            // Contract revision of the first event still to deliver; 0 = from
            // the next write.
            next: start.max(0),
            last_event: 0,
            last_emitted: 0,
            tx: events_tx,
            progress_rx,
            progress: ProgressState::default(),
        };
        let stream = task.establish().await?;
        tokio::spawn(task.run(stream));
        Ok(Watch::new(Box::pin(UnboundedReceiverStream::new(events_rx)), progress_tx))
    }

    async fn compact(&self, revision: Revision) -> Result<()> {
        let inner = &self.inner;
        if revision <= 0 || revision <= inner.compacted.load(Ordering::Acquire) {
            return Ok(());
        }
        let mut kv = inner.kv.clone();
        match inner.rpc(kv.compact(to_etcd(revision), None)).await {
            Ok(_) => {
                inner.compacted.fetch_max(revision, Ordering::AcqRel);
                tracing::info!(component = "store", revision, "compacted etcd history");
                Ok(())
            }
            // At or below an earlier compaction (perhaps by another API
            // server): nothing to do.
            Err(Failure::Compacted) => {
                tracing::debug!(component = "store", revision, "etcd history already compacted past this revision");
                Ok(())
            }
            Err(Failure::FutureRevision) => {
                Err(StoreError::FutureRevision { requested: revision, current: inner.current_revision().await? })
            }
            Err(f) => Err(inner.unavailable(&format!("compact history at revision {revision}"), f)),
        }
    }

    async fn compacted_revision(&self) -> Result<Revision> {
        self.inner.compacted_revision().await
    }
}

/// How long a watch that replays history must go without receiving replayed
/// events (counting from its creation) before it is assumed to have caught
/// up: etcd sends history in batches and moves caught-up watches to its live
/// set every 100 ms.
const SYNC_GRACE: Duration = Duration::from_millis(300);
/// How long a progress answer is held so events etcd queued before it are
/// delivered first.
const PROGRESS_SETTLE: Duration = Duration::from_millis(10);
/// How long to wait for etcd to answer a progress request before asking again.
const PROGRESS_RETRY: Duration = Duration::from_millis(500);

/// The task behind one [`Watch`]: owns the etcd watcher and its stream.
struct WatchTask {
    inner: Arc<Inner>,
    prefix: String,
    key: Vec<u8>,
    range_end: Vec<u8>,
    progress_notify: bool,
    /// Events below this contract revision are not delivered (0: none seen
    /// yet and the watch started "from now").
    next: Revision,
    /// Revision of the last event delivered.
    last_event: Revision,
    /// Highest revision delivered so far (events or progress).
    last_emitted: Revision,
    tx: mpsc::UnboundedSender<Result<WatchEvent>>,
    progress_rx: mpsc::UnboundedReceiver<()>,
    progress: ProgressState,
}

/// Where the watch stands with requested progress notifications.
#[derive(Default)]
struct ProgressState {
    /// A request not yet sent to etcd.
    wanted: bool,
    /// Sent to etcd, not answered yet.
    in_flight: bool,
    /// etcd's answer (an etcd revision), held for `PROGRESS_SETTLE`.
    held: Option<i64>,
    /// When to deliver `held`.
    emit_at: Option<Instant>,
    /// When to (re)send the request.
    ask_at: Option<Instant>,
}

impl ProgressState {
    /// The state for a new etcd stream: anything owed is asked again (an
    /// answer from the old stream may precede events the new one replays).
    fn carry_over(&self) -> ProgressState {
        ProgressState { wanted: self.wanted || self.in_flight || self.held.is_some(), ..Default::default() }
    }
}

/// One established etcd watch.
struct Established {
    watcher: Watcher,
    stream: WatchStream,
    /// etcd revision when the watch was created.
    created_at_rev: i64,
    /// Creation time, or when the last replayed events arrived.
    quiet_since: Instant,
    /// Whether every event up to the current revision is known to have been
    /// queued to us (false while a replaying watch may still be catching up).
    synced: bool,
}

/// What the pump loop decided.
enum Next {
    /// The stream broke; try to resume.
    Resume(String),
    /// Done (error delivered or consumer gone).
    Stop,
}

impl WatchTask {
    /// Creates the etcd watch for events from `self.next` on.
    async fn establish(&mut self) -> Result<Established> {
        let mut options = etcd_client::WatchOptions::new().with_range(self.range_end.clone()).with_prev_key();
        if self.progress_notify {
            options = options.with_progress_notify();
        }
        // Start one etcd revision early (contract `next` = etcd `next + 1`)
        // so etcd itself refuses a start at the compacted revision, as the
        // contract requires (etcd only refuses starts *below* it); events of
        // that extra revision are dropped.
        let etcd_start = self.next;
        if etcd_start > 0 {
            options = options.with_start_revision(etcd_start);
        } else {
            // "From the next write": etcd starts after its revision at
            // creation. Remember a revision at or below that one, so a
            // resumed stream continues from there rather than from the
            // beginning of history.
            self.next = self.inner.current_revision().await? + 1;
        }
        let mut client = self.inner.watch.clone();
        let (watcher, stream) = self
            .inner
            .rpc(client.watch(self.key.clone(), Some(options)))
            .await
            .map_err(|f| self.inner.unavailable(&format!("watch keys under {:?}", self.prefix), f))?;
        // etcd-client consumes the creation answer (and the revision in its
        // header); a watch replaying history reads the revision again, an
        // upper bound of the creation revision, to tell when it caught up.
        let (created_at_rev, synced) = if etcd_start == 0 {
            (to_etcd(self.next - 1), true)
        } else {
            let rev = to_etcd(self.inner.current_revision().await?);
            (rev, etcd_start > rev)
        };
        tracing::debug!(component = "store", prefix = %self.prefix, start = self.next, watch_id = watcher.watch_id(), "etcd watch created");
        Ok(Established { watcher, stream, created_at_rev, quiet_since: Instant::now(), synced })
    }

    async fn run(mut self, first: Established) {
        let mut est = first;
        loop {
            match self.pump(&mut est).await {
                Next::Stop => {
                    let _ = est.watcher.cancel().await;
                    return;
                }
                Next::Resume(why) => {
                    let _ = est.watcher.cancel().await;
                    match self.resume(&why).await {
                        Some(new) => est = new,
                        None => return,
                    }
                }
            }
        }
    }

    /// Re-creates the etcd watch after a transient failure, from the next
    /// undelivered revision; gives up after `watch_resume_timeout`.
    async fn resume(&mut self, why: &str) -> Option<Established> {
        tracing::warn!(component = "store", prefix = %self.prefix, next = self.next, reason = why, "etcd watch stream broke; resuming");
        let deadline = Instant::now() + self.inner.options.watch_resume_timeout;
        let mut backoff = Duration::from_millis(100);
        loop {
            if self.tx.is_closed() {
                return None;
            }
            match self.establish().await {
                Ok(est) => return Some(est),
                Err(e) if Instant::now() + backoff < deadline => {
                    tracing::debug!(component = "store", prefix = %self.prefix, error = %e, "etcd watch not resumed yet");
                }
                Err(e) => {
                    let _ = self.tx.send(Err(StoreError::Unavailable(format!(
                        "watch on {:?} lost its etcd stream ({why}) and could not resume within {:?}: {e}",
                        self.prefix, self.inner.options.watch_resume_timeout
                    ))));
                    return None;
                }
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(Duration::from_secs(2));
        }
    }

    fn emit(&mut self, item: Result<WatchEvent>) -> bool {
        if let Ok(ev) = &item {
            self.last_emitted = self.last_emitted.max(ev.revision());
        }
        self.tx.send(item).is_ok()
    }

    fn emit_progress(&mut self, etcd_rev: i64) -> bool {
        let revision = from_etcd(etcd_rev).max(self.last_event).max(self.last_emitted);
        self.emit(Ok(WatchEvent::Progress { revision }))
    }

    /// Forwards events until the stream ends or breaks.
    async fn pump(&mut self, est: &mut Established) -> Next {
        self.progress = self.progress.carry_over();
        loop {
            if !est.synced && est.quiet_since.elapsed() >= SYNC_GRACE {
                est.synced = true;
            }
            let p = &mut self.progress;
            // Send a wanted progress request once it is safe to.
            if p.wanted && !p.in_flight && p.held.is_none() {
                if est.synced {
                    if est.watcher.request_progress().await.is_err() {
                        return Next::Resume("cannot send a progress request".into());
                    }
                    p.wanted = false;
                    p.in_flight = true;
                    p.ask_at = Some(Instant::now() + PROGRESS_RETRY);
                } else {
                    p.ask_at = Some(est.quiet_since + SYNC_GRACE);
                }
            }
            let wake = match (p.emit_at, p.ask_at) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            let sleep = async {
                match wake {
                    Some(t) => tokio::time::sleep_until(t.into()).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                req = self.progress_rx.recv() => match req {
                    None => return Next::Stop,
                    Some(()) => {
                        while self.progress_rx.try_recv().is_ok() {}
                        // An answer already in flight may predate this
                        // request; ask (again) after it.
                        self.progress.wanted = true;
                    }
                },
                _ = self.tx.closed() => return Next::Stop,
                msg = est.stream.next() => match msg {
                    None => return Next::Resume("etcd closed the watch stream".into()),
                    Some(Err(e)) => match classify(e) {
                        Failure::Unreachable(detail) | Failure::Refused(detail) => return Next::Resume(detail),
                        other => return Next::Resume(format!("{other:?}")),
                    },
                    Some(Ok(resp)) => {
                        if !self.handle(est, resp).await {
                            return Next::Stop;
                        }
                    }
                },
                _ = sleep => {
                    let now = Instant::now();
                    let p = &mut self.progress;
                    if p.emit_at.is_some_and(|t| t <= now) {
                        p.emit_at = None;
                        if let Some(h) = p.held.take() {
                            if !self.emit_progress(h) {
                                return Next::Stop;
                            }
                        }
                    }
                    let p = &mut self.progress;
                    if p.ask_at.is_some_and(|t| t <= now) {
                        p.ask_at = None;
                        if p.in_flight {
                            // No answer (etcd 3.4.24–3.4.30 ignore requests
                            // while a watch catches up): ask again.
                            p.in_flight = false;
                            p.wanted = true;
                        }
                    }
                }
            }
        }
    }

    /// Handles one message of the etcd stream; false when the watch is over.
    async fn handle(&mut self, est: &mut Established, resp: WatchResponse) -> bool {
        let header_rev = header_revision(resp.header());
        if resp.canceled() {
            self.canceled(&resp).await;
            return false;
        }
        if resp.created() {
            return true;
        }
        if resp.events().is_empty() {
            let p = &mut self.progress;
            if resp.watch_id() == est.watcher.watch_id() {
                // Periodic progress notification: etcd sends it through the
                // watch's own queue, and only once the watch has caught up,
                // so it is always safe. It also answers a request whose
                // answer is being held, if it is at least as recent.
                est.synced = true;
                if p.held.is_some_and(|h| h <= header_rev) {
                    p.held = None;
                    p.emit_at = None;
                }
                return self.emit_progress(header_rev);
            }
            if p.in_flight {
                // etcd's answer to our request (watch id -1): hold it
                // briefly so events queued before it arrive first.
                p.held = Some(header_rev);
                p.emit_at = Some(Instant::now() + PROGRESS_SETTLE);
                p.ask_at = None;
                p.in_flight = false;
            }
            return true;
        }
        for ev in resp.events() {
            let rev = ev.kv().map(|kv| from_etcd(kv.mod_revision())).unwrap_or(0);
            if rev < self.next {
                // The extra revision before the start (see `establish`).
                continue;
            }
            if let Some(h) = self.progress.held {
                if rev > from_etcd(h) {
                    // Everything up to the held answer has arrived.
                    self.progress.held = None;
                    self.progress.emit_at = None;
                    if !self.emit_progress(h) {
                        return false;
                    }
                }
            }
            match self.map_event(ev).await {
                Ok(event) => {
                    self.last_event = rev;
                    if !self.emit(Ok(event)) {
                        return false;
                    }
                }
                Err(e) => {
                    let _ = self.emit(Err(e));
                    return false;
                }
            }
        }
        if let Some(last) = resp.events().last().and_then(|e| e.kv()) {
            self.next = self.next.max(from_etcd(last.mod_revision()) + 1);
        }
        match resp.events().last().and_then(|e| e.kv()) {
            // Past the creation revision: everything older has arrived.
            Some(last) if last.mod_revision() >= est.created_at_rev => est.synced = true,
            // Still replaying (etcd sends history in batches of at most 1000
            // revisions every sync period): restart the quiet period.
            _ => est.quiet_since = Instant::now(),
        }
        true
    }

    /// Delivers the error a server-side cancellation stands for.
    async fn canceled(&mut self, resp: &WatchResponse) {
        let err = if resp.compact_revision() > 0 {
            let requested = self.next;
            StoreError::Compacted { requested, compacted: from_etcd(resp.compact_revision()) }
        } else {
            let reason = if resp.cancel_reason().is_empty() { "no reason given" } else { resp.cancel_reason() };
            StoreError::Unavailable(format!(
                "etcd at {} canceled the watch on {:?}: {reason}",
                self.inner.endpoints, self.prefix
            ))
        };
        tracing::debug!(component = "store", prefix = %self.prefix, error = %err, "etcd watch canceled");
        let _ = self.emit(Err(err));
    }

    async fn map_event(&self, ev: &etcd_client::Event) -> Result<WatchEvent> {
        let Some(kv) = ev.kv() else {
            return Err(StoreError::Unavailable(format!(
                "etcd at {} sent a watch event without a key on {:?}",
                self.inner.endpoints, self.prefix
            )));
        };
        let rev = from_etcd(kv.mod_revision());
        let prev = ev.prev_kv().map(kv_from_etcd);
        match ev.event_type() {
            EventType::Put => {
                // A key at version > 1 had a previous value; etcd leaves
                // prev_kv out only when that revision was compacted away.
                if prev.is_none() && kv.version() > 1 {
                    return Err(self.missing_prev(rev).await);
                }
                Ok(WatchEvent::Put { kv: kv_from_etcd(kv), prev })
            }
            EventType::Delete => match prev {
                Some(prev) => {
                    Ok(WatchEvent::Delete { key: String::from_utf8_lossy(kv.key()).into_owned(), revision: rev, prev })
                }
                None => Err(self.missing_prev(rev).await),
            },
        }
    }

    async fn missing_prev(&self, rev: Revision) -> StoreError {
        match self.inner.compacted_revision().await {
            Ok(compacted) => StoreError::Compacted { requested: rev, compacted: compacted.max(rev - 1) },
            Err(e) => e,
        }
    }
}
