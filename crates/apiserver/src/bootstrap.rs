//! The objects the API server itself keeps in the cluster (upstream's
//! `pkg/controlplane` bootstrap controllers):
//!
//! - the `kubernetes` Service in `default` (ClusterIP = the first address
//!   of the service CIDR, port 443 `https` → the advertise address and
//!   port), its Endpoints and its EndpointSlice (label
//!   `kubernetes.io/service-name: kubernetes`) listing every live API
//!   server (`crate::masterleases`), reconciled every 10 s; as
//!   upstream, no endpoints are written when the advertise address may not
//!   be an endpoint (loopback, unspecified, link-local) — a warning says so;
//! - the default ServiceCIDR `kubernetes`, and the repair of the Service
//!   allocation records (IPAddress objects and NodePort keys, written
//!   within each request by `crate::storage::ipalloc`);
//! - the system PriorityClasses `system-node-critical` (2000001000) and
//!   `system-cluster-critical` (2000000000);
//! - a local APIService per built-in group-version served (`v1.`,
//!   `v1.apps`, `v2.autoscaling`, …; [`ensure_local_api_services`]);
//! - the API server identity Lease in `kube-system`
//!   (`apiserver-<hash of hostname>`, labels
//!   `apiserver.kubernetes.io/identity: kube-apiserver` (1.33's key),
//!   `k8s.io/component: kube-apiserver` (the key the seed documents and
//!   older releases select on) and `kubernetes.io/hostname`), renewed every 10 s with a 3600 s duration;
//!   expired identity leases of other API servers are deleted (checked
//!   hourly, as upstream's lease garbage collector).
//!
//! [`ClusterConfig`] carries what these need from the command line
//! (`--service-cidr`, the advertise address, `--event-ttl`).

use std::net::IpAddr;
use std::time::Duration;

use rkube_apimachinery::{meta, ApiError};
use serde_json::{json, Value};

use crate::rest::Api;
use crate::storage::ipalloc::ServiceCidr;
use crate::storage::{DeleteOptions, ListOptions, ResourceStore, UpdateKind, WriteOptions};

/// Upstream's `--event-ttl` default.
pub const DEFAULT_EVENT_TTL: Duration = Duration::from_secs(3600);
/// `IdentityLeaseDurationSeconds`.
pub const IDENTITY_LEASE_DURATION_SECONDS: i64 = 3600;
/// `IdentityLeaseRenewIntervalPeriod`.
pub const IDENTITY_LEASE_RENEW_INTERVAL: Duration = Duration::from_secs(10);
/// `IdentityLeaseGCPeriod`.
pub const IDENTITY_LEASE_GC_PERIOD: Duration = Duration::from_secs(3600);
/// The label marking API server identity leases (1.33).
pub const IDENTITY_LEASE_LABEL: &str = "apiserver.kubernetes.io/identity";
/// The older label key of identity leases, still set so that
/// `kubectl get lease -l k8s.io/component=kube-apiserver` finds them.
pub const IDENTITY_LEASE_COMPONENT_LABEL: &str = "k8s.io/component";
/// The component name in identity leases and their hash.
pub const KUBE_APISERVER: &str = "kube-apiserver";

/// Cluster settings the API server needs beyond listening and storage.
#[derive(Clone, Debug)]
pub struct ClusterConfig {
    /// `--service-cidr`: where Service ClusterIPs come from.
    pub service_cidr: ServiceCidr,
    /// `--event-ttl`: how long Events live.
    pub event_ttl: Duration,
    /// The address the `kubernetes` Service's endpoints point at.
    pub advertise_address: IpAddr,
    /// The port the `kubernetes` Service's endpoints point at (`0`: the
    /// port the server listens on).
    pub advertise_port: u16,
    /// The host name the identity lease is derived from (`None`: the
    /// machine's).
    pub hostname: Option<String>,
    /// The service-account token signer: `--service-account-issuer` and the
    /// `sa.key` signing key (default: that issuer's default with a random
    /// key, for servers built without a PKI).
    pub service_account: std::sync::Arc<crate::serviceaccount::TokenIssuer>,
    /// The client towards kubelets for exec/attach sessions
    /// (apiserver-kubelet-client certificate); `None` only dials them.
    pub kubelet_client: Option<std::sync::Arc<crate::rest::connect::kubelet::KubeletClient>>,
    /// The authenticator chain (`--anonymous-auth`, `--token-auth-file`;
    /// the client CA is added by [`crate::ApiServer::bind`]) and its caches.
    pub authenticator: std::sync::Arc<crate::authn::Authenticator>,
    /// The audit policy and log (`--audit-policy-file`, `--audit-log-path`);
    /// `None`: nothing is audited.
    pub audit: Option<std::sync::Arc<crate::audit::Auditor>>,
    /// The `tolerationSeconds` DefaultTolerationSeconds admission gives new
    /// pods for the not-ready and unreachable NoExecute taints
    /// (`--default-not-ready-toleration-seconds`,
    /// `--default-unreachable-toleration-seconds`; 300 s each by default).
    pub default_toleration_seconds: crate::admission::tolerations::DefaultTolerationSeconds,
    /// How often the built-in metrics-server scrapes the kubelets
    /// (`--metric-resolution`, [`crate::metrics_api`]).
    pub metric_resolution: Duration,
    /// What `GET /rkube/v1/bootstrap/control-plane` serves to joining
    /// servers ([`crate::controlplane`]); `None`: that path is 404.
    pub control_plane_bundle: Option<std::sync::Arc<crate::controlplane::ControlPlaneBundle>>,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        ClusterConfig {
            service_cidr: ServiceCidr::default(),
            event_ttl: DEFAULT_EVENT_TTL,
            advertise_address: IpAddr::from([127, 0, 0, 1]),
            advertise_port: 0,
            hostname: None,
            service_account: std::sync::Arc::new(crate::serviceaccount::TokenIssuer::ephemeral(
                crate::serviceaccount::DEFAULT_ISSUER,
            )),
            kubelet_client: None,
            authenticator: std::sync::Arc::default(),
            audit: None,
            default_toleration_seconds: Default::default(),
            metric_resolution: crate::metrics_api::DEFAULT_METRIC_RESOLUTION,
            control_plane_bundle: None,
        }
    }
}

/// The machine's host name (`os.Hostname()`).
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "localhost".into())
}

/// Upstream's API server identity: `apiserver-` + the lower-case unpadded
/// base32 of the first 16 bytes of SHA-256 over the length-prefixed
/// host name and `kube-apiserver`.
pub fn apiserver_identity(hostname: &str) -> String {
    let mut data = Vec::new();
    for part in [hostname.as_bytes(), KUBE_APISERVER.as_bytes()] {
        data.extend_from_slice(&(part.len() as u16).to_be_bytes());
        data.extend_from_slice(part);
    }
    let hash = ring::digest::digest(&ring::digest::SHA256, &data);
    format!("apiserver-{}", base32_lower(&hash.as_ref()[..16]))
}

fn base32_lower(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";
    let mut out = String::new();
    let (mut buffer, mut bits) = (0u32, 0u32);
    for b in bytes {
        buffer = (buffer << 8) | u32::from(*b);
        bits += 8;
        while bits >= 5 {
            out.push(ALPHABET[((buffer >> (bits - 5)) & 31) as usize] as char);
            bits -= 5;
        }
    }
    if bits > 0 {
        out.push(ALPHABET[((buffer << (5 - bits)) & 31) as usize] as char);
    }
    out
}

/// `metav1.MicroTime` as JSON: RFC 3339 with microseconds.
pub fn micro_time(t: jiff::Timestamp) -> String {
    let secs = meta::format_time(t);
    format!("{}.{:06}Z", secs.trim_end_matches('Z'), t.subsec_microsecond())
}

fn store<'a>(api: &'a Api, group: &str, version: &str, plural: &str) -> Result<&'a ResourceStore, ApiError> {
    api.store(group, version, plural)
        .map(|s| s.as_ref())
        .ok_or_else(|| ApiError::Internal(format!("no store for {plural}.{group}")))
}

/// Creates `obj` or, when it exists and `differs` says so, replaces the
/// fields `fields` of the stored one with those of `obj`.
pub(crate) async fn ensure(
    store: &ResourceStore,
    namespace: &str,
    obj: Value,
    fields: &[&str],
) -> Result<(), ApiError> {
    let name = meta::name(&obj).to_string();
    match store.create(namespace, obj.clone(), &WriteOptions::default()).await {
        Ok(_) => return Ok(()),
        Err(ApiError::AlreadyExists { .. }) => {}
        Err(e) => return Err(e),
    }
    store
        .update(namespace, &name, UpdateKind::Main, &WriteOptions::default(), |current| {
            let mut next = current.cloned().unwrap_or_else(|| obj.clone());
            for f in fields {
                match obj.get(*f) {
                    Some(v) => next[*f] = v.clone(),
                    None => {
                        if let Some(m) = next.as_object_mut() {
                            m.remove(*f);
                        }
                    }
                }
            }
            for (k, v) in obj.pointer("/metadata/labels").and_then(Value::as_object).into_iter().flatten() {
                next["metadata"]["labels"][k] = v.clone();
            }
            meta::set(&mut next, "resourceVersion", Value::Null);
            Ok(next)
        })
        .await
        .map(|_| ())
}

/// The label kube-aggregator's autoregister controller puts on the
/// APIServices it manages; `onstart` marks those synced when the server
/// starts (`AutoRegisterManagedLabel`, `manageOnStart`).
pub const AUTO_REGISTER_MANAGED_LABEL: &str = "kube-aggregator.kubernetes.io/automanaged";

/// The aggregator's own API group, which gets no local APIService.
const AGGREGATOR_GROUP: &str = "apiregistration.k8s.io";

/// The local APIServices kube-apiserver registers at start (upstream's
/// `apiServicesToRegister`/`makeAPIService` with the autoregister
/// controller): one per group-version that is both served and in the
/// built-in priority table ([`rkube_apimachinery::registry::builtin_group_priorities`]),
/// except `apiregistration.k8s.io` itself (upstream registers only the
/// delegated servers' group-versions; the aggregator serves its own group
/// and lists it first in `/apis` without an APIService), named
/// `<version>.<group>` (`v1.` for the core group), labelled
/// [`AUTO_REGISTER_MANAGED_LABEL`]`: onstart`, with no `spec.service` and
/// the table's `groupPriorityMinimum` and `versionPriority`. As upstream's
/// available-condition controller does for a local APIService, the status
/// holds `Available=True`, reason `Local`, message `Local APIServices are
/// always available`. Existing ones get the spec and label back (the
/// autoregister sync); other APIServices are left alone.
pub async fn ensure_local_api_services(api: &Api) -> Result<(), ApiError> {
    let services = store(api, "apiregistration.k8s.io", "v1", "apiservices")?;
    // metrics.k8s.io is served in-process too (the built-in metrics-server), so it is Local here.
    let metrics = std::iter::once(&rkube_apimachinery::registry::METRICS_GROUP_PRIORITY);
    for priority in rkube_apimachinery::registry::builtin_group_priorities().iter().chain(metrics) {
        if priority.group == AGGREGATOR_GROUP {
            continue;
        }
        for (version, version_priority) in priority.versions {
            if !api.registry().serves(priority.group, version) {
                continue;
            }
            let name = format!("{version}.{}", priority.group);
            let obj = json!({
                "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
                "metadata": {"name": name, "labels": {AUTO_REGISTER_MANAGED_LABEL: "onstart"}},
                "spec": {"group": priority.group, "version": version,
                    "groupPriorityMinimum": priority.priority, "versionPriority": version_priority},
            });
            ensure(services, "", obj, &["spec"]).await?;
            services
                .update("", &name, UpdateKind::Status, &WriteOptions::default(), |current| {
                    let mut next =
                        current.cloned().ok_or_else(|| ApiError::Internal(format!("APIService {name} vanished")))?;
                    let available = next.pointer("/status/conditions").and_then(Value::as_array).and_then(|cs| {
                        cs.iter().find(|c| c["type"] == "Available" && c["status"] == "True" && c["reason"] == "Local")
                    });
                    if available.is_none() {
                        next["status"] = json!({"conditions": [{
                            "type": "Available", "status": "True", "lastTransitionTime": meta::now(),
                            "reason": "Local", "message": "Local APIServices are always available",
                        }]});
                    }
                    meta::set(&mut next, "resourceVersion", Value::Null);
                    Ok(next)
                })
                .await?;
        }
    }
    Ok(())
}

/// Loads the Service allocator from the stored Services, then creates or
/// reconciles the `kubernetes` Service, its Endpoints and EndpointSlice,
/// the system PriorityClasses and the local APIServices.
pub async fn ensure_system_objects(api: &Api, cluster: &ClusterConfig) -> Result<(), ApiError> {
    let services = store(api, "", "v1", "services")?;
    if let Some(alloc) = api.service_allocator() {
        let prefix = services.keys().collection("");
        let range = services
            .store()
            .range(rkube_store::RangeRequest { prefix, start: None, limit: None, revision: None })
            .await
            .map_err(|e| ApiError::Internal(format!("cannot list services: {e}")))?;
        let objs: Vec<Value> = range.kvs.iter().filter_map(|kv| serde_json::from_slice(&kv.value).ok()).collect();
        alloc.load(objs.iter());
    }

    reconcile_kubernetes_service(api, cluster).await?;
    ensure_service_cidr(api, cluster).await?;
    reconcile_ip_addresses(api, cluster).await?;

    let classes = store(api, "scheduling.k8s.io", "v1", "priorityclasses")?;
    for (name, value, description) in [
        (
            "system-node-critical",
            2_000_001_000i64,
            "Used for system critical pods that must not be moved from their current node.",
        ),
        (
            "system-cluster-critical",
            2_000_000_000,
            "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.",
        ),
    ] {
        let pc = json!({
            "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": name}, "value": value, "globalDefault": false,
            "description": description, "preemptionPolicy": "PreemptLowerPriority",
        });
        match classes.create("", pc, &WriteOptions::default()).await {
            Ok(_) | Err(ApiError::AlreadyExists { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    ensure_local_api_services(api).await
}

/// Creates or puts back the `kubernetes` Service, its Endpoints and its
/// EndpointSlice (upstream's lease endpoint reconciler, every 10 s: the
/// endpoints list every live API server, [`crate::masterleases`]). The
/// endpoints are left out, with one warning per process, when the
/// advertise address is one [`special_advertise_address`] refuses.
pub async fn reconcile_kubernetes_service(api: &Api, cluster: &ClusterConfig) -> Result<(), ApiError> {
    let services = store(api, "", "v1", "services")?;
    let ip = cluster.service_cidr.first().to_string();
    let port = cluster.advertise_port;
    let labels = json!({"component": "apiserver", "provider": "kubernetes"});
    let svc = json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "kubernetes", "namespace": "default", "labels": labels},
        "spec": {
            "type": "ClusterIP", "clusterIP": ip, "clusterIPs": [ip], "sessionAffinity": "None",
            "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": port}],
        }
    });
    ensure_service(services, svc).await?;

    let address = cluster.advertise_address.to_string();
    if let Some(reason) = special_advertise_address(&address) {
        // Upstream's endpoint reconciler fails validation here and leaves the
        // endpoints absent; say so once instead of every 10 s.
        if !SPECIAL_ADDRESS_WARNED.swap(true, std::sync::atomic::Ordering::Relaxed) {
            tracing::warn!(
                component = crate::COMPONENT,
                advertise_address = %address,
                "the advertise address {reason}, so the kubernetes Service in namespace default gets no \
                 Endpoints or EndpointSlice and clients inside the cluster cannot reach the API server \
                 through it: set --advertise-address to a routable address of this host"
            );
        }
        return Ok(());
    }
    // Every live API server's address (upstream's lease reconciler), so
    // that several servers on one datastore do not overwrite each other.
    crate::masterleases::reconcile(api, cluster).await
}

static SPECIAL_ADDRESS_WARNED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Why `address` cannot be an endpoint (upstream's `ValidateEndpointIP`:
/// unspecified, loopback, link-local), or `None` when it can.
pub fn special_advertise_address(address: &str) -> Option<String> {
    let path = rkube_apimachinery::validation::Path::new("ip");
    let errs = rkube_apimachinery::strategy::endpoints::validate_endpoint_ip(address, &path);
    errs.iter().next().map(|e| e.detail.clone())
}

/// Label naming the IP family of an IPAddress.
pub const IP_FAMILY_LABEL: &str = "ipaddress.kubernetes.io/ip-family";
/// Label naming who manages an IPAddress.
pub const MANAGED_BY_LABEL: &str = "ipaddress.kubernetes.io/managed-by";
/// The manager of the IPAddresses of Service ClusterIPs.
pub const IP_ALLOCATOR: &str = "ipallocator.k8s.io";

/// The default ServiceCIDR `kubernetes` (spec.cidrs = `--service-cidr`,
/// Ready).
pub async fn ensure_service_cidr(api: &Api, cluster: &ClusterConfig) -> Result<(), ApiError> {
    let cidrs = store(api, "networking.k8s.io", "v1", "servicecidrs")?;
    let obj = json!({
        "apiVersion": "networking.k8s.io/v1", "kind": "ServiceCIDR",
        "metadata": {"name": "kubernetes"},
        "spec": {"cidrs": [cluster.service_cidr.to_string()]},
    });
    match cidrs.create("", obj, &WriteOptions::default()).await {
        Ok(_) | Err(ApiError::AlreadyExists { .. }) => {}
        Err(e) => return Err(e),
    }
    cidrs
        .update("", "kubernetes", UpdateKind::Status, &WriteOptions::default(), |current| {
            let mut next = current.cloned().unwrap_or(Value::Null);
            let ready = next
                .pointer("/status/conditions")
                .and_then(Value::as_array)
                .is_some_and(|c| c.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"));
            if !ready {
                next["status"] = json!({"conditions": [{"type": "Ready", "status": "True", "reason": "",
                    "message": "Kubernetes Service CIDR is ready", "lastTransitionTime": meta::now()}]});
            }
            meta::set(&mut next, "resourceVersion", Value::Null);
            Ok(next)
        })
        .await
        .map(|_| ())
}

/// The Service allocation repair (upstream's `RepairIPAddress` and the
/// NodePort repair; [`crate::storage::ipalloc::ServiceAllocator::repair`]):
/// creates the IPAddress objects and NodePort records that Services
/// holding an address or port lack, and deletes those no Service holds
/// once they are older than [`crate::storage::ipalloc::REPAIR_GRACE`] (an
/// in-flight request of another API server writes its records before its
/// Service). Run at start and every 10 s; `cluster` is the allocator's.
pub async fn reconcile_ip_addresses(api: &Api, cluster: &ClusterConfig) -> Result<(), ApiError> {
    let Some(alloc) = api.service_allocator() else { return Ok(()) };
    debug_assert_eq!(alloc.cidr(), cluster.service_cidr);
    let services = store(api, "", "v1", "services")?;
    let report = alloc.repair(services, crate::storage::ipalloc::REPAIR_GRACE).await?;
    if report.waiting > 0 {
        tracing::debug!(
            component = crate::COMPONENT,
            records = report.waiting,
            "Service allocation records without their Service yet, within the grace period"
        );
    }
    Ok(())
}

/// The `kubernetes` Service: created, or its ports and ClusterIP put back
/// as they must be. A stored one with another ClusterIP (the service CIDR
/// changed) is replaced.
async fn ensure_service(services: &ResourceStore, svc: Value) -> Result<(), ApiError> {
    match services.get("default", "kubernetes", "").await {
        Ok(current) => {
            let ip = current.pointer("/spec/clusterIP");
            if ip != svc.pointer("/spec/clusterIP") {
                services.delete("default", "kubernetes", &DeleteOptions::default()).await?;
            } else {
                let want = svc["spec"]["ports"].clone();
                if current.pointer("/spec/ports") != Some(&want) {
                    services
                        .update("default", "kubernetes", UpdateKind::Main, &WriteOptions::default(), |cur| {
                            let mut next = cur.cloned().unwrap_or_else(|| svc.clone());
                            next["spec"]["ports"] = want.clone();
                            meta::set(&mut next, "resourceVersion", Value::Null);
                            Ok(next)
                        })
                        .await?;
                }
                return Ok(());
            }
        }
        Err(ApiError::NotFound { .. }) => {}
        Err(e) => return Err(e),
    }
    match services.create("default", svc, &WriteOptions::default()).await {
        Ok(_) | Err(ApiError::AlreadyExists { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

/// The API server's own control loops, every 10 s until aborted: the
/// identity Lease renewed (expired ones of other API servers collected
/// hourly) and the `kubernetes` Service's endpoints reconciled.
pub async fn run_control_loops(api: std::sync::Arc<Api>, hostname: String) {
    let name = apiserver_identity(&hostname);
    let holder = format!("{name}_{}", meta::new_uid());
    let mut last_gc: Option<std::time::Instant> = None;
    loop {
        if let Some(leases) = api.store("coordination.k8s.io", "v1", "leases") {
            if let Err(e) = renew_lease(leases, &name, &holder, &hostname).await {
                tracing::warn!(component = crate::COMPONENT, error = %e, lease = %name, "cannot renew the API server identity lease");
            }
            if last_gc.is_none_or(|t| t.elapsed() >= IDENTITY_LEASE_GC_PERIOD) {
                last_gc = Some(std::time::Instant::now());
                if let Err(e) = collect_expired_leases(leases, &name).await {
                    tracing::warn!(component = crate::COMPONENT, error = %e, "cannot collect expired API server identity leases");
                }
            }
        }
        if let Err(e) = reconcile_kubernetes_service(&api, api.cluster()).await {
            tracing::warn!(component = crate::COMPONENT, error = %e, "cannot reconcile the kubernetes Service endpoints");
        }
        if let Err(e) = reconcile_ip_addresses(&api, api.cluster()).await {
            tracing::warn!(component = crate::COMPONENT, error = %e, "cannot reconcile the Service IPAddresses");
        }
        tokio::time::sleep(IDENTITY_LEASE_RENEW_INTERVAL).await;
    }
}

async fn renew_lease(leases: &ResourceStore, name: &str, holder: &str, hostname: &str) -> Result<(), ApiError> {
    let now = micro_time(jiff::Timestamp::now());
    let lease = json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": name, "namespace": "kube-system",
            "labels": {IDENTITY_LEASE_LABEL: KUBE_APISERVER, IDENTITY_LEASE_COMPONENT_LABEL: KUBE_APISERVER, "kubernetes.io/hostname": hostname}},
        "spec": {"holderIdentity": holder, "leaseDurationSeconds": IDENTITY_LEASE_DURATION_SECONDS,
            "acquireTime": now, "renewTime": now},
    });
    match leases.create("kube-system", lease.clone(), &WriteOptions::default()).await {
        Ok(_) => return Ok(()),
        Err(ApiError::AlreadyExists { .. }) => {}
        Err(e) => return Err(e),
    }
    leases
        .update("kube-system", name, UpdateKind::Main, &WriteOptions::default(), |current| {
            let mut next = current.cloned().unwrap_or_else(|| lease.clone());
            if next.pointer("/spec/holderIdentity").and_then(Value::as_str) != Some(holder) {
                next["spec"] = lease["spec"].clone();
            }
            next["spec"]["renewTime"] = json!(now);
            next["spec"]["leaseDurationSeconds"] = json!(IDENTITY_LEASE_DURATION_SECONDS);
            next["metadata"]["labels"] = lease["metadata"]["labels"].clone();
            meta::set(&mut next, "resourceVersion", Value::Null);
            Ok(next)
        })
        .await
        .map(|_| ())
}

/// Whether an identity lease has expired at `now` (renewTime +
/// leaseDurationSeconds in the past).
pub fn lease_expired(lease: &Value, now: jiff::Timestamp) -> bool {
    let renew =
        lease.pointer("/spec/renewTime").and_then(Value::as_str).and_then(|s| s.parse::<jiff::Timestamp>().ok());
    let duration = lease.pointer("/spec/leaseDurationSeconds").and_then(Value::as_i64).unwrap_or(0);
    match renew {
        Some(t) => t + jiff::SignedDuration::from_secs(duration) < now,
        None => true,
    }
}

async fn collect_expired_leases(leases: &ResourceStore, own: &str) -> Result<(), ApiError> {
    let selector = format!("{IDENTITY_LEASE_LABEL}={KUBE_APISERVER}");
    let predicate = crate::storage::Predicate::parse(Some(&selector), None, "Lease", "coordination.k8s.io")?;
    let opts = ListOptions { predicate, ..Default::default() };
    let list = leases.list("kube-system", &opts).await?;
    let now = jiff::Timestamp::now();
    for lease in &list.items {
        let name = meta::name(lease);
        if name != own && lease_expired(lease, now) {
            let _ = leases.delete("kube-system", name, &DeleteOptions::default()).await;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn special_advertise_addresses_get_no_endpoints() {
        assert_eq!(
            special_advertise_address("127.0.0.1").as_deref(),
            Some("may not be in the loopback range (127.0.0.0/8, ::1/128)")
        );
        assert!(special_advertise_address("0.0.0.0").is_some() && special_advertise_address("fe80::1").is_some());
        assert_eq!(special_advertise_address("10.1.2.3"), None);
    }

    #[test]
    fn identity_is_the_hash_of_the_hostname() {
        let id = apiserver_identity("node-1");
        assert!(id.starts_with("apiserver-"));
        assert_eq!(id.len(), "apiserver-".len() + 26, "{id}");
        assert_eq!(id, apiserver_identity("node-1"));
        assert_ne!(id, apiserver_identity("node-2"));
        assert_eq!(base32_lower(b"foobar"), "mzxw6ytboi");
    }

    #[test]
    fn lease_expiry() {
        let now = jiff::Timestamp::now();
        let fresh = json!({"spec": {"renewTime": micro_time(now), "leaseDurationSeconds": 3600}});
        assert!(!lease_expired(&fresh, now));
        let old = now - jiff::SignedDuration::from_secs(7200);
        let stale = json!({"spec": {"renewTime": micro_time(old), "leaseDurationSeconds": 3600}});
        assert!(lease_expired(&stale, now));
        assert!(micro_time(now).ends_with('Z') && micro_time(now).contains('.'));
    }
}
