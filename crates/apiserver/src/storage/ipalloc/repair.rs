//! The allocation repair (upstream's `RepairIPAddress` controller and the
//! NodePort repair): compares the allocation records in the store with
//! the Services, at one store revision, and puts the records right.
//!
//! - A Service holding a ClusterIP in the range (or a NodePort) whose
//!   record is missing gets one (data written before the records existed,
//!   a lost write). Two Services holding the same value are logged
//!   (upstream's `ClusterIPAlreadyAllocated` / `PortAlreadyAllocated`):
//!   only recreating one of them resolves that.
//! - A record of ours (IPAddress `managed-by: ipallocator.k8s.io`, every
//!   NodePort key) whose Service is gone or does not hold that value is
//!   deleted once it is older than [`REPAIR_GRACE`], never sooner: a
//!   request in flight on another API server creates its records before
//!   its Service is written, and those must survive. Upstream waits the
//!   same 60 s for a missing Service and deletes at once when the Service
//!   exists with another ClusterIP; rkube waits in both cases, because
//!   NodePorts (unlike ClusterIPs) are added to existing Services by
//!   ordinary updates. IPAddresses that name no Service are deleted at
//!   once, as upstream. Deletes are conditional on the record read (uid
//!   and resourceVersion, or the key's mod revision), so a record freed
//!   and taken again meanwhile is left alone.
//! - The allocator's cache is replaced by what the store holds.

use std::collections::{BTreeMap, BTreeSet};
use std::net::Ipv4Addr;
use std::time::Duration;

use rkube_apimachinery::{meta, ApiError};
use rkube_store::{RangeRequest, StoreError};
use serde_json::Value;

use super::{holds, node_port_key, node_port_record, store_failed, Owner, ServiceAllocator, NODE_PORT_KEY_PREFIX};
use crate::bootstrap::{IP_ALLOCATOR, MANAGED_BY_LABEL};
use crate::storage::{DeleteOptions, Preconditions, ResourceStore};

/// How old a record without a Service holding it must be before the
/// repair deletes it (upstream's 60 s: the API server's request timeout,
/// so no request that created it can still be writing its Service).
pub const REPAIR_GRACE: Duration = Duration::from_secs(60);

/// One IPAddress object as read.
pub(super) struct IpRecord {
    obj: Value,
    managed: bool,
    owner: Option<Owner>,
}

/// One NodePort key as read.
pub(super) struct PortRecord {
    mod_revision: i64,
    owner: Option<Owner>,
    created: Option<jiff::Timestamp>,
}

/// The allocation records at one store revision.
pub(super) struct Records {
    pub(super) revision: i64,
    /// IPv4 IPAddress objects by address (any manager).
    pub(super) ips: BTreeMap<Ipv4Addr, IpRecord>,
    pub(super) ports: BTreeMap<u16, PortRecord>,
}

impl Records {
    /// Reads every IPAddress object and NodePort key, at one revision.
    pub(super) async fn read(alloc: &ServiceAllocator) -> Result<Records, ApiError> {
        let addresses = &alloc.addresses;
        let prefix = addresses.keys().collection("");
        let range = |prefix: String, revision| RangeRequest { prefix, start: None, limit: None, revision };
        let listed = addresses.store().range(range(prefix, None)).await;
        let listed = listed.map_err(|e| store_failed("list", "IPAddresses", e))?;
        let revision = listed.revision;
        let mut ips = BTreeMap::new();
        for kv in listed.kvs {
            let Ok(mut obj) = serde_json::from_slice::<Value>(&kv.value) else { continue };
            let Ok(ip) = meta::name(&obj).parse::<Ipv4Addr>() else { continue };
            meta::set(&mut obj, "resourceVersion", Value::String(kv.mod_revision.to_string()));
            let managed = obj.pointer(&format!("/metadata/labels/{}", MANAGED_BY_LABEL.replace('/', "~1")))
                == Some(&Value::String(IP_ALLOCATOR.into()));
            let owner = Owner::from_parent_ref(obj.pointer("/spec/parentRef"));
            ips.insert(ip, IpRecord { obj, managed, owner });
        }
        let listed = alloc.store.range(range(NODE_PORT_KEY_PREFIX.to_string(), Some(revision))).await;
        let listed = listed.map_err(|e| store_failed("list", "NodePort allocations", e))?;
        let mut ports = BTreeMap::new();
        for kv in listed.kvs {
            let Ok(port) = kv.key[NODE_PORT_KEY_PREFIX.len()..].parse::<u16>() else { continue };
            let v: Value = serde_json::from_slice(&kv.value).unwrap_or(Value::Null);
            let created = v.get("creationTimestamp").and_then(Value::as_str).and_then(|s| s.parse().ok());
            let owner = Owner::from_parent_ref(v.get("parentRef"));
            ports.insert(port, PortRecord { mod_revision: kv.mod_revision, owner, created });
        }
        Ok(Records { revision, ips, ports })
    }
}

/// What one repair pass changed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RepairReport {
    /// IPAddress objects created for Services that lacked them.
    pub created_ips: Vec<Ipv4Addr>,
    /// IPAddress objects deleted (no Service holds them).
    pub deleted_ips: Vec<Ipv4Addr>,
    /// NodePort records created for Services that lacked them.
    pub created_ports: Vec<u16>,
    /// NodePort records deleted (no Service holds them).
    pub deleted_ports: Vec<u16>,
    /// Records no Service holds, kept because they are younger than the
    /// grace period (an allocation of a request still in flight).
    pub waiting: usize,
}

impl RepairReport {
    /// Whether the pass changed nothing.
    pub fn is_empty(&self) -> bool {
        self.created_ips.is_empty()
            && self.deleted_ips.is_empty()
            && self.created_ports.is_empty()
            && self.deleted_ports.is_empty()
    }
}

/// Whether a record created at `created` (unknown: long ago) is older
/// than `grace`; one from the future (another server's clock is ahead)
/// is young.
fn older_than(created: Option<jiff::Timestamp>, grace: Duration) -> bool {
    let Some(created) = created else { return true };
    let age = jiff::Timestamp::now().duration_since(created);
    grace.is_zero() || (!age.is_negative() && age.unsigned_abs() >= grace)
}

impl ServiceAllocator {
    /// One repair pass over `services` (the Service store) and the
    /// allocation records (see the module docs); `grace` is
    /// [`REPAIR_GRACE`] outside tests. Errors come from the store; what
    /// was repaired before stays repaired.
    pub async fn repair(&self, services: &ResourceStore, grace: Duration) -> Result<RepairReport, ApiError> {
        let records = Records::read(self).await?;
        let req = RangeRequest {
            prefix: services.keys().collection(""),
            start: None,
            limit: None,
            revision: Some(records.revision),
        };
        let listed = match services.store().range(req.clone()).await {
            // Compacted right away: a newer view only makes records look
            // held that are not yet, which is the safe side.
            Err(StoreError::Compacted { .. }) => services.store().range(RangeRequest { revision: None, ..req }).await,
            other => other,
        };
        let listed = listed.map_err(|e| store_failed("list", "Services", e))?;
        let mut held_ips: BTreeMap<Ipv4Addr, BTreeSet<Owner>> = BTreeMap::new();
        let mut held_ports: BTreeMap<u16, BTreeSet<Owner>> = BTreeMap::new();
        for kv in &listed.kvs {
            let Ok(svc) = serde_json::from_slice::<Value>(&kv.value) else { continue };
            let h = holds(&svc);
            let owner = Owner::of(&svc);
            if let Some(ip) = h.ip {
                held_ips.entry(ip).or_default().insert(owner.clone());
            }
            for p in h.ports {
                held_ports.entry(p).or_default().insert(owner.clone());
            }
        }

        let mut report = RepairReport::default();
        let mut ips_left: BTreeSet<Ipv4Addr> = records.ips.keys().copied().collect();
        for (ip, rec) in &records.ips {
            if !rec.managed {
                continue;
            }
            let holders = held_ips.get(ip);
            let held_by_owner = rec.owner.as_ref().is_some_and(|o| holders.is_some_and(|h| h.contains(o)));
            if held_by_owner {
                continue;
            }
            let created = rec.obj.pointer("/metadata/creationTimestamp").and_then(Value::as_str);
            let created = created.and_then(|s| s.parse().ok());
            if rec.owner.is_some() && !older_than(created, grace) {
                report.waiting += 1;
                continue;
            }
            let why = match &rec.owner {
                None => "does not reference a Service".to_string(),
                Some(o) => format!("is not held by its Service {o}"),
            };
            if self.delete_ip_record(*ip, &rec.obj).await? {
                tracing::warn!(component = crate::COMPONENT, %ip, "IPAddress {ip} {why} (leaked): cleaning up");
                report.deleted_ips.push(*ip);
                ips_left.remove(ip);
            }
        }
        for (ip, holders) in &held_ips {
            if !self.cidr.usable(*ip) {
                continue; // out of range (upstream logs ClusterIPOutOfRange)
            }
            if holders.len() > 1 {
                let names: Vec<String> = holders.iter().map(Owner::to_string).collect();
                tracing::warn!(component = crate::COMPONENT, %ip, services = ?names,
                    "ClusterIP {ip} was assigned to multiple services; please recreate all but one of them");
            }
            if ips_left.contains(ip) {
                continue;
            }
            let owner = holders.iter().next().expect("holders are never empty");
            if self.record_ip(*ip, owner).await? {
                tracing::warn!(component = crate::COMPONENT, %ip, service = %owner,
                    "ClusterIP {ip} of Service {owner} is not allocated; repairing");
                report.created_ips.push(*ip);
            }
            ips_left.insert(*ip);
        }

        let mut ports_left: BTreeSet<u16> = records.ports.keys().copied().collect();
        for (port, rec) in &records.ports {
            let holders = held_ports.get(port);
            if rec.owner.as_ref().is_some_and(|o| holders.is_some_and(|h| h.contains(o))) {
                continue;
            }
            if rec.owner.is_some() && !older_than(rec.created, grace) {
                report.waiting += 1;
                continue;
            }
            match self.store.delete(&node_port_key(*port), Some(rec.mod_revision)).await {
                Ok(_) => {
                    tracing::warn!(
                        component = crate::COMPONENT,
                        port,
                        "NodePort {port} is not held by any Service (leaked): cleaning up"
                    );
                    report.deleted_ports.push(*port);
                    ports_left.remove(port);
                }
                Err(StoreError::NotFound { .. }) => {
                    ports_left.remove(port);
                }
                Err(StoreError::Conflict { .. }) => {}
                Err(e) => return Err(store_failed("delete NodePort", &port.to_string(), e)),
            }
        }
        let (lo, hi) = self.node_ports;
        for (port, holders) in &held_ports {
            if holders.len() > 1 {
                let names: Vec<String> = holders.iter().map(Owner::to_string).collect();
                tracing::warn!(component = crate::COMPONENT, port, services = ?names,
                    "NodePort {port} was assigned to multiple services; please recreate all but one of them");
            }
            if ports_left.contains(port) || !(lo..=hi).contains(port) {
                continue;
            }
            let owner = holders.iter().next().expect("holders are never empty");
            match self.store.create(&node_port_key(*port), node_port_record(*port, owner), None).await {
                Ok(_) => {
                    tracing::warn!(component = crate::COMPONENT, port, service = %owner,
                        "NodePort {port} of Service {owner} is not allocated; repairing");
                    report.created_ports.push(*port);
                }
                Err(StoreError::AlreadyExists { .. }) => {}
                Err(e) => return Err(store_failed("record NodePort", &port.to_string(), e)),
            }
            ports_left.insert(*port);
        }

        let mut c = self.lock();
        c.ips = ips_left.into_iter().collect();
        c.ports = ports_left.into_iter().collect();
        Ok(report)
    }

    /// Deletes the IPAddress `obj` (as read) unless it changed since;
    /// whether it was deleted.
    async fn delete_ip_record(&self, ip: Ipv4Addr, obj: &Value) -> Result<bool, ApiError> {
        let opts = DeleteOptions {
            preconditions: Preconditions {
                uid: Some(meta::uid(obj).to_string()),
                resource_version: Some(meta::resource_version(obj).to_string()),
            },
            ..Default::default()
        };
        match self.addresses.delete("", &ip.to_string(), &opts).await {
            Ok(_) => Ok(true),
            Err(ApiError::NotFound { .. }) | Err(ApiError::Conflict { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }
}
