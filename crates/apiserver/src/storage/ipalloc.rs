//! Service ClusterIP and NodePort allocation (upstream's
//! `pkg/registry/core/service/{ipallocator,portallocator}` and the
//! allocation steps of the service REST storage).
//!
//! The [`ServiceAllocator`] is the Service store's [`WriteHooks`]: before a
//! Service is created or updated it allocates a ClusterIP from the service
//! CIDR (or checks the requested one: `provided IP is already allocated`)
//! and NodePorts from the node-port range for `NodePort`/`LoadBalancer`
//! Services (`provided port is already allocated`); the allocations of a
//! write that did not happen are undone, and those no longer used after a
//! committed update (type change) or delete are released. Headless
//! (`clusterIP: None`) and `ExternalName` Services get no ClusterIP.
//!
//! Dynamic ClusterIPs come from the upper band of the range first, as
//! upstream's allocator does, leaving the lower band (at most 256
//! addresses, starting at the first address — the `kubernetes` Service) for
//! static assignment; dynamic NodePorts likewise leave the lowest
//! `min(max(16, size/32), 128)` ports of the range (30000–30085 by
//! default) to requested ones (KEP-3668).
//!
//! **The store is the record**, so that several API servers on one
//! datastore never hand out the same address or port:
//!
//! - *ClusterIPs* follow 1.33's IPAddress allocator (`MultiCIDRServiceAllocator`,
//!   GA): allocating an address is creating its IPAddress object
//!   (`networking.k8s.io/v1`, named by the address, labels
//!   `ipaddress.kubernetes.io/ip-family` and
//!   `ipaddress.kubernetes.io/managed-by: ipallocator.k8s.io`,
//!   `spec.parentRef` the Service) in the store within the allocating
//!   request. The store's create-if-absent decides: AlreadyExists means
//!   taken (`provided IP is already allocated` for a requested address,
//!   the next candidate for a dynamic one). Releasing deletes the object —
//!   only while its `parentRef` still names the releasing Service.
//! - *NodePorts* get one key per allocated port,
//!   `/registry/ranges/servicenodeports/<port>` (JSON: port, `parentRef`,
//!   `creationTimestamp`), created if absent and deleted on release with
//!   the key's mod revision as precondition. Upstream keeps a single
//!   bitmap (`RangeAllocation` at `/registry/ranges/servicenodeports`)
//!   updated with compare-and-swap; per-port keys are equally exclusive
//!   (the store's create-if-absent is the same atomic step as upstream's
//!   CAS on the bitmap) and simpler: concurrent allocations of different
//!   ports never conflict or retry, each record names its owner and age,
//!   so the repair can free one leaked port with a conditional delete of
//!   its key instead of rewriting the whole bitmap under contention, and
//!   both kinds of record share one repair logic. No upstream API server
//!   ever reads an rkube datastore, so the bitmap's byte layout buys
//!   nothing.
//!
//! The in-memory sets are only a cache of what the store holds (seeded by
//! [`ServiceAllocator::load`] from the stored Services, updated by this
//! server's allocations and releases, by collisions and by every repair):
//! they pick dynamic candidates that are likely free, and a stale entry
//! costs at most one refused create (a candidate taken elsewhere) or a
//! re-read of the records (a range that looks full).
//!
//! The repair loop ([`ServiceAllocator::repair`], upstream's
//! `RepairIPAddress` and the NodePort repair, run by the API server every
//! 10 s) creates the missing records of Services that hold an address or
//! port (data from before this scheme, lost releases) and deletes records
//! no Service holds — but only once they are older than [`REPAIR_GRACE`]
//! (upstream's 60 s, the API server's request timeout), because a record
//! that an in-flight request of another API server has just created
//! exists before its Service is written.
//!
//! **Cost.** A Service create writes one IPAddress object and one key per
//! NodePort before the Service itself (upstream does the same); a delete,
//! or an update that drops a port, reads and deletes each released record
//! (two or three store calls per record). Dry runs write nothing: as
//! upstream's dry-run allocators they check requested values against the
//! ranges only and show the range's first value for dynamic ones.

mod repair;
#[cfg(test)]
mod tests;

pub use repair::{RepairReport, REPAIR_GRACE};

use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use rkube_apimachinery::strategy::service::{is_headless, needs_node_ports, service_type};
use rkube_apimachinery::validation::{go_string_slice, BadValue, ErrorList, FieldError, Path};
use rkube_apimachinery::{meta, ApiError};
use rkube_store::{SharedStore, StoreError};
use serde_json::{json, Value};

use super::{DeleteOptions, Preconditions, ResourceStore, WriteHooks, WriteOptions};
use crate::bootstrap::{IP_ALLOCATOR, IP_FAMILY_LABEL, MANAGED_BY_LABEL};

/// The default NodePort range (`--service-node-port-range`).
pub const NODE_PORT_RANGE: (u16, u16) = (30000, 32767);

/// The prefix of the NodePort allocation keys (`<prefix><port>`).
pub const NODE_PORT_KEY_PREFIX: &str = "/registry/ranges/servicenodeports/";

/// After how many refused candidates a dynamic allocation re-reads the
/// records instead of trusting the cache further.
const COLLISIONS_BEFORE_REFRESH: usize = 8;

/// An IPv4 service range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServiceCidr {
    /// The network address.
    pub network: Ipv4Addr,
    /// The prefix length.
    pub prefix: u8,
}

impl ServiceCidr {
    /// The number of addresses in the range.
    pub fn size(&self) -> u64 {
        1u64 << (32 - u32::from(self.prefix))
    }

    /// The address `n` places after the network address.
    pub fn nth(&self, n: u64) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(self.network).wrapping_add(n as u32))
    }

    /// The offset of `ip` in the range, if inside.
    pub fn offset(&self, ip: Ipv4Addr) -> Option<u64> {
        let off = u64::from(u32::from(ip).wrapping_sub(u32::from(self.network)));
        (u32::from(ip) >= u32::from(self.network) && off < self.size()).then_some(off)
    }

    /// The first usable address: the `kubernetes` Service's ClusterIP.
    pub fn first(&self) -> Ipv4Addr {
        self.nth(1)
    }

    /// Whether `ip` may be a ClusterIP: inside, neither the network nor
    /// the broadcast address.
    pub fn usable(&self, ip: Ipv4Addr) -> bool {
        self.offset(ip).is_some_and(|o| o != 0 && o + 1 < self.size())
    }
}

impl Default for ServiceCidr {
    /// `10.43.0.0/16`, rkube's default.
    fn default() -> Self {
        ServiceCidr { network: Ipv4Addr::new(10, 43, 0, 0), prefix: 16 }
    }
}

impl std::fmt::Display for ServiceCidr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.network, self.prefix)
    }
}

/// The cache of what the store records as taken.
#[derive(Default)]
struct Cache {
    loaded: bool,
    ips: HashSet<Ipv4Addr>,
    ports: HashSet<u16>,
}

/// What one Service holds: its ClusterIP and NodePorts.
#[derive(Debug, Default, PartialEq, Eq)]
struct Holds {
    ip: Option<Ipv4Addr>,
    ports: Vec<u16>,
}

fn holds(svc: &Value) -> Holds {
    let mut h = Holds::default();
    if service_type(svc) != "ExternalName" && !is_headless(svc) {
        h.ip = svc.pointer("/spec/clusterIP").and_then(Value::as_str).and_then(|s| s.parse().ok());
    }
    if needs_node_ports(svc) {
        if let Some(ports) = svc.pointer("/spec/ports").and_then(Value::as_array) {
            h.ports = ports
                .iter()
                .filter_map(|p| p.get("nodePort").and_then(Value::as_u64))
                .filter_map(|n| u16::try_from(n).ok())
                .filter(|n| *n != 0)
                .collect();
        }
    }
    h
}

/// The Service a record belongs to (`spec.parentRef` of an IPAddress).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Owner {
    /// The Service's namespace.
    pub namespace: String,
    /// The Service's name.
    pub name: String,
}

impl Owner {
    fn of(svc: &Value) -> Owner {
        Owner { namespace: meta::namespace(svc).to_string(), name: meta::name(svc).to_string() }
    }

    /// The `parentRef` naming this Service.
    fn parent_ref(&self) -> Value {
        json!({"group": "", "resource": "services", "namespace": self.namespace, "name": self.name})
    }

    /// The Service a `parentRef` names, if it names a Service.
    fn from_parent_ref(parent: Option<&Value>) -> Option<Owner> {
        let p = parent?;
        let s = |k: &str| p.get(k).and_then(Value::as_str).unwrap_or("");
        (s("group").is_empty() && s("resource") == "services")
            .then(|| Owner { namespace: s("namespace").to_string(), name: s("name").to_string() })
    }
}

impl std::fmt::Display for Owner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// The IPAddress object recording `ip` as `owner`'s ClusterIP.
pub fn ip_address_object(ip: Ipv4Addr, owner: &Owner) -> Value {
    json!({
        "apiVersion": "networking.k8s.io/v1", "kind": "IPAddress",
        "metadata": {"name": ip.to_string(), "labels": {IP_FAMILY_LABEL: "IPv4", MANAGED_BY_LABEL: IP_ALLOCATOR}},
        "spec": {"parentRef": owner.parent_ref()},
    })
}

/// The store key recording NodePort `port`.
pub fn node_port_key(port: u16) -> String {
    format!("{NODE_PORT_KEY_PREFIX}{port}")
}

/// The value of a NodePort key: the port, its Service and when it was
/// allocated (RFC 3339).
fn node_port_record(port: u16, owner: &Owner) -> Bytes {
    let v = json!({"port": port, "parentRef": owner.parent_ref(), "creationTimestamp": meta::now()});
    Bytes::from(serde_json::to_vec(&v).unwrap_or_default())
}

/// What one write allocated so far (undone when it fails).
#[derive(Default)]
struct Taken {
    ips: Vec<Ipv4Addr>,
    ports: Vec<u16>,
}

/// Allocates Service ClusterIPs and NodePorts, recording each allocation
/// in the store (see the module docs).
pub struct ServiceAllocator {
    cidr: ServiceCidr,
    node_ports: (u16, u16),
    store: SharedStore,
    addresses: Arc<ResourceStore>,
    cache: Mutex<Cache>,
}

impl ServiceAllocator {
    /// An allocator over `cidr` and the default NodePort range that
    /// records ClusterIPs as objects of `addresses` (the
    /// `networking.k8s.io/v1` `ipaddresses` store) and NodePorts under
    /// [`NODE_PORT_KEY_PREFIX`] of `store`; not usable until
    /// [`ServiceAllocator::load`] ran.
    pub fn new(cidr: ServiceCidr, store: SharedStore, addresses: Arc<ResourceStore>) -> ServiceAllocator {
        ServiceAllocator { cidr, node_ports: NODE_PORT_RANGE, store, addresses, cache: Mutex::new(Cache::default()) }
    }

    /// The service range.
    pub fn cidr(&self) -> ServiceCidr {
        self.cidr
    }

    /// The NodePort range (inclusive).
    pub fn node_port_range(&self) -> (u16, u16) {
        self.node_ports
    }

    /// Seeds the cache from every stored Service and starts allocating
    /// (call once before serving writes; the repair loop creates the
    /// records these Services lack).
    pub fn load<'a>(&self, services: impl IntoIterator<Item = &'a Value>) {
        let mut c = self.lock();
        for svc in services {
            let h = holds(svc);
            c.ips.extend(h.ip);
            c.ports.extend(h.ports);
        }
        c.loaded = true;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Cache> {
        self.cache.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A random address that the cache does not know as taken, from the
    /// upper band first; marked taken in the cache.
    fn pick_ip(&self, c: &mut Cache) -> Option<Ipv4Addr> {
        let size = self.cidr.size();
        if size < 4 {
            return None;
        }
        // Usable offsets 1..=size-2; static band 1..=band, dynamic the rest.
        let band = (size / 16).clamp(16, 256).min(size - 2);
        let pick = |lo: u64, hi: u64, c: &mut Cache| -> Option<Ipv4Addr> {
            if hi < lo {
                return None;
            }
            let span = hi - lo + 1;
            let start = random_u64() % span;
            (0..span).map(|i| self.cidr.nth(lo + (start + i) % span)).find(|ip| c.ips.insert(*ip))
        };
        pick(band + 1, size - 2, c).or_else(|| pick(1, band, c))
    }

    /// A random port that the cache does not know as taken, from the upper
    /// band first (upstream's static subrange, KEP-3668: the lowest
    /// `min(max(16, size/32), 128)` ports are left for requested ones);
    /// marked taken.
    fn pick_port(&self, c: &mut Cache) -> Option<u16> {
        let (lo, hi) = self.node_ports;
        let size = u64::from(hi - lo) + 1;
        let band = if size < 16 { 0 } else { (size / 32).clamp(16, 128) };
        let pick = |from: u64, to: u64, c: &mut Cache| -> Option<u16> {
            if to < from {
                return None;
            }
            let span = to - from + 1;
            let start = random_u64() % span;
            (0..span).map(|i| lo + (from + (start + i) % span) as u16).find(|p| c.ports.insert(*p))
        };
        pick(band, size - 1, c).or_else(|| if band == 0 { None } else { pick(0, band - 1, c) })
    }

    /// Creates the IPAddress object of `ip` for `owner`: `Ok(false)` when
    /// it exists already (taken).
    async fn record_ip(&self, ip: Ipv4Addr, owner: &Owner) -> Result<bool, ApiError> {
        match self.addresses.create("", ip_address_object(ip, owner), &WriteOptions::default()).await {
            Ok(_) => Ok(true),
            Err(ApiError::AlreadyExists { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Creates the key of NodePort `port` for `owner`: `Ok(false)` when it
    /// exists already (taken).
    async fn record_port(&self, port: u16, owner: &Owner) -> Result<bool, ApiError> {
        match self.store.create(&node_port_key(port), node_port_record(port, owner), None).await {
            Ok(_) => Ok(true),
            Err(StoreError::AlreadyExists { .. }) => Ok(false),
            Err(e) => Err(store_failed("record NodePort", &port.to_string(), e)),
        }
    }

    /// Allocates a free ClusterIP for `owner` (upstream's
    /// `AllocateNextService`): candidates from the cache, the store's
    /// create-if-absent deciding.
    async fn allocate_next_ip(&self, owner: &Owner) -> Result<Ipv4Addr, ApiError> {
        let mut collisions = 0;
        let mut refreshed = false;
        loop {
            let candidate = self.pick_ip(&mut self.lock());
            let Some(ip) = candidate else {
                if refreshed {
                    return Err(ApiError::Internal("failed to allocate a serviceIP: range is full".into()));
                }
                self.refresh_cache().await?;
                refreshed = true;
                continue;
            };
            match self.record_ip(ip, owner).await {
                Ok(true) => return Ok(ip),
                Ok(false) => {
                    tracing::debug!(component = crate::COMPONENT, %ip, "ClusterIP taken by another API server; trying another");
                    collisions += 1;
                    if collisions == COLLISIONS_BEFORE_REFRESH && !refreshed {
                        self.refresh_cache().await?;
                        refreshed = true;
                    }
                }
                Err(e) => {
                    self.lock().ips.remove(&ip);
                    return Err(e);
                }
            }
        }
    }

    /// Allocates a free NodePort for `owner`, as [`Self::allocate_next_ip`].
    async fn allocate_next_port(&self, owner: &Owner) -> Result<u16, ApiError> {
        let mut collisions = 0;
        let mut refreshed = false;
        loop {
            let candidate = self.pick_port(&mut self.lock());
            let Some(port) = candidate else {
                if refreshed {
                    return Err(ApiError::Internal("failed to allocate a nodePort: range is full".into()));
                }
                self.refresh_cache().await?;
                refreshed = true;
                continue;
            };
            match self.record_port(port, owner).await {
                Ok(true) => return Ok(port),
                Ok(false) => {
                    tracing::debug!(
                        component = crate::COMPONENT,
                        port,
                        "NodePort taken by another API server; trying another"
                    );
                    collisions += 1;
                    if collisions == COLLISIONS_BEFORE_REFRESH && !refreshed {
                        self.refresh_cache().await?;
                        refreshed = true;
                    }
                }
                Err(e) => {
                    self.lock().ports.remove(&port);
                    return Err(e);
                }
            }
        }
    }

    /// Replaces the cache with the records in the store.
    async fn refresh_cache(&self) -> Result<(), ApiError> {
        let records = repair::Records::read(self).await?;
        let mut c = self.lock();
        c.ips = records.ips.keys().copied().collect();
        c.ports = records.ports.keys().copied().collect();
        Ok(())
    }

    /// Allocates what `obj` needs beyond what `old` holds; on error nothing
    /// stays allocated.
    async fn allocate(&self, obj: &mut Value, old: Option<&Value>, dry_run: bool) -> Result<(), ApiError> {
        if !self.lock().loaded {
            return Err(ApiError::ServiceUnavailable(
                "the Service IP and port allocator is not ready yet; retry shortly".into(),
            ));
        }
        let old_holds = old.map(holds).unwrap_or_default();
        let mut taken = Taken::default();
        let result = self.allocate_into(obj, &old_holds, dry_run, &mut taken).await;
        if result.is_err() {
            let owner = Owner::of(obj);
            for ip in taken.ips {
                self.release_ip(ip, &owner).await;
            }
            for port in taken.ports {
                self.release_port(port, &owner).await;
            }
        }
        result
    }

    async fn allocate_into(
        &self,
        obj: &mut Value,
        old_holds: &Holds,
        dry_run: bool,
        taken: &mut Taken,
    ) -> Result<(), ApiError> {
        let name = meta::name(obj).to_string();
        let owner = Owner::of(obj);
        let spec = Path::new("spec");
        check_families(obj, &name)?;
        let needs_ip = service_type(obj) != "ExternalName" && !is_headless(obj);
        if needs_ip {
            let requested = obj.pointer("/spec/clusterIP").and_then(Value::as_str).unwrap_or("").to_string();
            if requested.is_empty() {
                let ip = if dry_run {
                    // Upstream's dry-run allocator: "Don't bother finding a
                    // free value. It's racy and not worth the effort".
                    self.cidr.network
                } else {
                    let ip = self.allocate_next_ip(&owner).await?;
                    taken.ips.push(ip);
                    ip
                };
                obj["spec"]["clusterIP"] = json!(ip.to_string());
                obj["spec"]["clusterIPs"] = json!([ip.to_string()]);
            } else {
                let ip: Ipv4Addr = match requested.parse::<IpAddr>() {
                    Ok(IpAddr::V4(ip)) => ip,
                    _ => return Ok(()), // validation reports malformed addresses
                };
                if old_holds.ip != Some(ip) {
                    let reason = if !self.cidr.usable(ip) {
                        Some(format!(
                            "the provided IP ({ip}) is not in the valid range. The range of valid IPs is {}",
                            self.cidr
                        ))
                    } else if dry_run {
                        None
                    } else if self.record_ip(ip, &owner).await? {
                        self.lock().ips.insert(ip);
                        taken.ips.push(ip);
                        None
                    } else {
                        self.lock().ips.insert(ip);
                        Some("provided IP is already allocated".to_string())
                    };
                    if let Some(reason) = reason {
                        let ips: Vec<String> = obj
                            .pointer("/spec/clusterIPs")
                            .and_then(Value::as_array)
                            .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
                            .unwrap_or_else(|| vec![requested.clone()]);
                        let value = BadValue::Raw(go_string_slice(&ips, false));
                        let detail = format!("failed to allocate IP {requested}: {reason}");
                        let errs = ErrorList(vec![FieldError::invalid(&spec.child("clusterIPs"), value, &detail)]);
                        return Err(errs.into_invalid("", "Service", &name));
                    }
                }
            }
        }
        if needs_node_ports(obj) {
            let count = obj.pointer("/spec/ports").and_then(Value::as_array).map_or(0, Vec::len);
            for i in 0..count {
                let np = obj["spec"]["ports"][i].get("nodePort").and_then(Value::as_i64).unwrap_or(0);
                if np == 0 {
                    let p = if dry_run {
                        // Upstream's dry-run port allocator: the range's base.
                        self.node_ports.0
                    } else {
                        let p = self.allocate_next_port(&owner).await?;
                        taken.ports.push(p);
                        p
                    };
                    obj["spec"]["ports"][i]["nodePort"] = json!(p);
                    continue;
                }
                let Ok(np16) = u16::try_from(np) else { continue };
                if old_holds.ports.contains(&np16) || taken.ports.contains(&np16) {
                    continue;
                }
                let (lo, hi) = self.node_ports;
                let reason = if !(lo..=hi).contains(&np16) {
                    Some(format!("provided port is not in the valid range. The range of valid ports is {lo}-{hi}"))
                } else if dry_run {
                    None
                } else if self.record_port(np16, &owner).await? {
                    self.lock().ports.insert(np16);
                    taken.ports.push(np16);
                    None
                } else {
                    self.lock().ports.insert(np16);
                    Some("provided port is already allocated".to_string())
                };
                if let Some(reason) = reason {
                    let path = spec.child("ports").index(i).child("nodePort");
                    let errs = ErrorList(vec![FieldError::invalid(&path, np, &reason)]);
                    return Err(errs.into_invalid("", "Service", &name));
                }
            }
        }
        Ok(())
    }

    /// Releases what `from` holds and `keep` does not.
    async fn release_difference(&self, from: Option<&Value>, keep: Option<&Value>) {
        let Some(from) = from else { return };
        let owner = Owner::of(from);
        let (from, keep) = (holds(from), keep.map(holds).unwrap_or_default());
        if let Some(ip) = from.ip.filter(|ip| keep.ip != Some(*ip)) {
            self.release_ip(ip, &owner).await;
        }
        for p in from.ports.iter().filter(|p| !keep.ports.contains(p)) {
            self.release_port(*p, &owner).await;
        }
    }

    /// Deletes the IPAddress of `ip` if it still belongs to `owner`
    /// (upstream's `Release`; failures are logged, the repair loop
    /// collects what stays behind).
    async fn release_ip(&self, ip: Ipv4Addr, owner: &Owner) {
        let name = ip.to_string();
        let current = match self.addresses.get("", &name, "").await {
            Ok(obj) => obj,
            Err(ApiError::NotFound { .. }) => {
                self.lock().ips.remove(&ip);
                return;
            }
            Err(e) => {
                tracing::warn!(component = crate::COMPONENT, %ip, service = %owner, error = %e,
                    "cannot release the ClusterIP; the repair loop frees it later");
                return;
            }
        };
        if Owner::from_parent_ref(current.pointer("/spec/parentRef")).as_ref() != Some(owner) {
            return; // someone else's record: not ours to free
        }
        let opts = DeleteOptions {
            preconditions: Preconditions {
                uid: Some(meta::uid(&current).to_string()),
                resource_version: Some(meta::resource_version(&current).to_string()),
            },
            ..Default::default()
        };
        match self.addresses.delete("", &name, &opts).await {
            Ok(_) | Err(ApiError::NotFound { .. }) => {
                self.lock().ips.remove(&ip);
            }
            Err(ApiError::Conflict { .. }) => {} // changed meanwhile: no longer ours
            Err(e) => {
                tracing::warn!(component = crate::COMPONENT, %ip, service = %owner, error = %e,
                    "cannot release the ClusterIP; the repair loop frees it later");
            }
        }
    }

    /// Deletes the key of NodePort `port` if it still belongs to `owner`.
    async fn release_port(&self, port: u16, owner: &Owner) {
        let key = node_port_key(port);
        let warn = |e: &dyn std::fmt::Display| {
            tracing::warn!(component = crate::COMPONENT, port, service = %owner, error = %e,
                "cannot release the NodePort; the repair loop frees it later");
        };
        let kv = match self.store.get(&key, None).await {
            Ok(resp) => resp.kv,
            Err(e) => return warn(&e),
        };
        let Some(kv) = kv else {
            self.lock().ports.remove(&port);
            return;
        };
        let record: Value = serde_json::from_slice(&kv.value).unwrap_or(Value::Null);
        if Owner::from_parent_ref(record.get("parentRef")).as_ref() != Some(owner) {
            return;
        }
        match self.store.delete(&key, Some(kv.mod_revision)).await {
            Ok(_) | Err(StoreError::NotFound { .. }) => {
                self.lock().ports.remove(&port);
            }
            Err(StoreError::Conflict { .. }) => {}
            Err(e) => warn(&e),
        }
    }

    /// Whether the store records `ip` as allocated (an IPAddress object
    /// exists).
    pub async fn ip_allocated(&self, ip: Ipv4Addr) -> Result<bool, ApiError> {
        match self.addresses.get("", &ip.to_string(), "").await {
            Ok(_) => Ok(true),
            Err(ApiError::NotFound { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Whether the store records NodePort `port` as allocated.
    pub async fn port_allocated(&self, port: u16) -> Result<bool, ApiError> {
        let resp = self.store.get(&node_port_key(port), None).await;
        Ok(resp.map_err(|e| store_failed("read NodePort", &port.to_string(), e))?.kv.is_some())
    }

    /// The Service owning NodePort `port` according to the store.
    pub async fn port_owner(&self, port: u16) -> Result<Option<Owner>, ApiError> {
        let resp = self.store.get(&node_port_key(port), None).await;
        let kv = resp.map_err(|e| store_failed("read NodePort", &port.to_string(), e))?.kv;
        Ok(kv.and_then(|kv| {
            let v: Value = serde_json::from_slice(&kv.value).ok()?;
            Owner::from_parent_ref(v.get("parentRef"))
        }))
    }
}

#[async_trait::async_trait]
impl WriteHooks for ServiceAllocator {
    async fn before_write(&self, obj: &mut Value, old: Option<&Value>, dry_run: bool) -> Result<(), ApiError> {
        self.allocate(obj, old, dry_run).await
    }
    async fn abort(&self, obj: &Value, old: Option<&Value>, dry_run: bool) {
        if !dry_run {
            self.release_difference(Some(obj), old).await;
        }
    }
    async fn committed(&self, new: Option<&Value>, old: Option<&Value>) {
        self.release_difference(old, new).await;
    }
}

/// A store failure while reading or writing an allocation record.
fn store_failed(what: &str, name: &str, e: StoreError) -> ApiError {
    match e {
        StoreError::Unavailable(msg) => {
            ApiError::ServiceUnavailable(format!("cannot {what} {name}: storage unavailable: {msg}; retry shortly"))
        }
        e => ApiError::Internal(format!("cannot {what} {name}: {e}")),
    }
}

/// This cluster serves IPv4 Services only: IPv6 families and required
/// dual stack are refused in upstream's words.
fn check_families(obj: &Value, name: &str) -> Result<(), ApiError> {
    let spec = Path::new("spec");
    let mut errs = ErrorList::new();
    if obj.pointer("/spec/ipFamilyPolicy").and_then(Value::as_str) == Some("RequireDualStack") {
        errs.push(FieldError::invalid(
            &spec.child("ipFamilyPolicy"),
            "RequireDualStack",
            "this cluster is not configured for dual-stack services",
        ));
    }
    for (i, family) in obj.pointer("/spec/ipFamilies").and_then(Value::as_array).into_iter().flatten().enumerate() {
        if let Some(f) = family.as_str().filter(|f| *f != "IPv4") {
            errs.push(FieldError::invalid(&spec.child("ipFamilies").index(i), f, "not configured on this cluster"));
        }
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(errs.into_invalid("", "Service", name))
    }
}

/// A random number from the OS-seeded hasher (no extra dependency).
fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos()));
    h.finish()
}
