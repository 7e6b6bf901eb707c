//! The lease endpoint reconciler of the `kubernetes` Service (upstream's
//! `--endpoint-reconciler-type=lease`, `pkg/controlplane/reconcilers/lease.go`),
//! so that several API servers on one datastore share the Service instead
//! of each overwriting its endpoints with its own address.
//!
//! Every API server keeps the store key `/registry/masterleases/<ip>` (its
//! advertise address) alive with a [`LEASE_TTL`] (15 s) TTL, refreshed by
//! the API server's control loop every 10 s
//! ([`crate::bootstrap::IDENTITY_LEASE_RENEW_INTERVAL`]). The value is an
//! `Endpoints` object naming that address, as upstream stores it. The
//! `kubernetes` Endpoints and EndpointSlice in `default` list the address
//! of every live lease, sorted, with this server's advertise port (upstream
//! requires every API server of a cluster to use the same port). A server
//! stopping cleanly deletes its lease and takes its address out
//! ([`withdraw`]); a server that dies is dropped once its lease expires.
//!
//! Only addresses that may be endpoints take part: a loopback, unspecified
//! or link-local advertise address writes no lease
//! ([`crate::bootstrap::special_advertise_address`]).

use std::net::IpAddr;
use std::time::Duration;

use bytes::Bytes;
use rkube_apimachinery::ApiError;
use rkube_store::{RangeRequest, SharedStore, StoreError};
use serde_json::{json, Value};

use crate::bootstrap::ClusterConfig;
use crate::rest::Api;

/// The store prefix of the API servers' leases (upstream's
/// `/registry/masterleases/`).
pub const PREFIX: &str = "/registry/masterleases/";

/// How long a lease lives without a refresh (upstream's
/// `--endpoint-reconciler` lease TTL, `masterEndpointReconcileTTL`: 15 s).
pub const LEASE_TTL: Duration = Duration::from_secs(15);

fn key(ip: IpAddr) -> String {
    format!("{PREFIX}{ip}")
}

fn unavailable(what: &str, e: StoreError) -> ApiError {
    ApiError::Internal(format!("cannot {what} the API server lease: {e}"))
}

/// Creates or refreshes the lease of the API server advertising `ip`,
/// valid for `ttl` from now.
///
/// Errors: the store failed (an `InternalError` naming the step).
pub async fn refresh(store: &SharedStore, ip: IpAddr, ttl: Duration) -> Result<(), ApiError> {
    let value = Bytes::from(
        serde_json::to_vec(&json!({
            "kind": "Endpoints", "apiVersion": "v1",
            "metadata": {"name": ip.to_string()},
            "subsets": [{"addresses": [{"ip": ip.to_string()}]}],
        }))
        .expect("JSON serializes"),
    );
    let key = key(ip);
    for _ in 0..5 {
        match store.create(&key, value.clone(), Some(ttl)).await {
            Ok(_) => return Ok(()),
            Err(StoreError::AlreadyExists { .. }) => {}
            Err(e) => return Err(unavailable("create", e)),
        }
        let current = store.get(&key, None).await.map_err(|e| unavailable("read", e))?;
        let Some(kv) = current.kv else { continue };
        match store.update(&key, value.clone(), kv.mod_revision, Some(ttl)).await {
            Ok(_) => return Ok(()),
            // Expired or rewritten meanwhile: try again.
            Err(StoreError::Conflict { .. } | StoreError::NotFound { .. }) => {}
            Err(e) => return Err(unavailable("refresh", e)),
        }
    }
    Err(ApiError::Internal(format!("cannot refresh the API server lease {key}: it kept changing")))
}

/// The addresses of every live lease, sorted (numerically, IPv4 first).
///
/// Errors: the store failed.
pub async fn live_addresses(store: &SharedStore) -> Result<Vec<IpAddr>, ApiError> {
    let range = store
        .range(RangeRequest { prefix: PREFIX.to_string(), ..Default::default() })
        .await
        .map_err(|e| unavailable("list", e))?;
    let mut ips: Vec<IpAddr> =
        range.kvs.iter().filter_map(|kv| kv.key.strip_prefix(PREFIX).and_then(|ip| ip.parse().ok())).collect();
    ips.sort();
    ips.dedup();
    Ok(ips)
}

/// Deletes the lease of `ip` (absent: nothing to do).
///
/// Errors: the store failed.
pub async fn remove(store: &SharedStore, ip: IpAddr) -> Result<(), ApiError> {
    match store.delete(&key(ip), None).await {
        Ok(_) | Err(StoreError::NotFound { .. }) => Ok(()),
        Err(e) => Err(unavailable("delete", e)),
    }
}

fn raw_store(api: &Api) -> Result<&SharedStore, ApiError> {
    api.store("", "v1", "endpoints")
        .map(|s| s.store())
        .ok_or_else(|| ApiError::Internal("no store for endpoints".into()))
}

/// This server's part of the `kubernetes` Service's endpoints: its lease
/// refreshed, then the Endpoints and EndpointSlice set to every live
/// lease's address (this server's included even if its lease expired a
/// moment ago) with `cluster.advertise_port`. Nothing is done for an
/// advertise address [`crate::bootstrap::special_advertise_address`]
/// refuses.
///
/// Errors: the store or an object write failed.
pub async fn reconcile(api: &Api, cluster: &ClusterConfig) -> Result<(), ApiError> {
    let ip = cluster.advertise_address;
    if crate::bootstrap::special_advertise_address(&ip.to_string()).is_some() {
        return Ok(());
    }
    let store = raw_store(api)?;
    refresh(store, ip, LEASE_TTL).await?;
    let mut ips = live_addresses(store).await?;
    if !ips.contains(&ip) {
        ips.push(ip);
        ips.sort();
    }
    write_endpoints(api, &ips, cluster.advertise_port).await
}

/// At a clean shutdown: deletes this server's lease and writes the
/// `kubernetes` endpoints without its address (upstream's
/// `RemoveEndpoints`). With no live lease left the Endpoints keep no
/// address, as upstream's reconciler leaves them.
///
/// Errors: the store or an object write failed.
pub async fn withdraw(api: &Api) -> Result<(), ApiError> {
    let cluster = api.cluster();
    let ip = cluster.advertise_address;
    if crate::bootstrap::special_advertise_address(&ip.to_string()).is_some() {
        return Ok(());
    }
    let store = raw_store(api)?;
    remove(store, ip).await?;
    let ips: Vec<IpAddr> = live_addresses(store).await?.into_iter().filter(|a| *a != ip).collect();
    write_endpoints(api, &ips, cluster.advertise_port).await?;
    tracing::info!(component = crate::COMPONENT, address = %ip, "removed this API server from the kubernetes Service endpoints");
    Ok(())
}

/// The `kubernetes` Endpoints and EndpointSlice for `ips` (sorted) and `port`.
pub fn endpoints_objects(ips: &[IpAddr], port: u16) -> (Value, Value) {
    let subsets = if ips.is_empty() {
        json!([])
    } else {
        let addresses: Vec<Value> = ips.iter().map(|ip| json!({"ip": ip.to_string()})).collect();
        json!([{"addresses": addresses, "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}])
    };
    let endpoints = json!({
        "apiVersion": "v1", "kind": "Endpoints",
        "metadata": {"name": "kubernetes", "namespace": "default",
            "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"}},
        "subsets": subsets,
    });
    let family = if ips.first().is_none_or(IpAddr::is_ipv4) { "IPv4" } else { "IPv6" };
    let slice_endpoints: Vec<Value> = ips
        .iter()
        .filter(|ip| ip.is_ipv4() == (family == "IPv4"))
        .map(|ip| json!({"addresses": [ip.to_string()], "conditions": {"ready": true}}))
        .collect();
    let slice = json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": "kubernetes", "namespace": "default",
            "labels": {"kubernetes.io/service-name": "kubernetes"}},
        "addressType": family,
        "endpoints": slice_endpoints,
        "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
    });
    (endpoints, slice)
}

async fn write_endpoints(api: &Api, ips: &[IpAddr], port: u16) -> Result<(), ApiError> {
    let (endpoints, slice) = endpoints_objects(ips, port);
    let store = |g: &str, p: &str| {
        api.store(g, "v1", p).map(|s| s.as_ref()).ok_or_else(|| ApiError::Internal(format!("no store for {p}.{g}")))
    };
    crate::bootstrap::ensure(store("", "endpoints")?, "default", endpoints, &["subsets"]).await?;
    crate::bootstrap::ensure(store("discovery.k8s.io", "endpointslices")?, "default", slice, &["endpoints", "ports"])
        .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    use rkube_apimachinery::registry::Registry;
    use rkube_store::sqlite::{SqliteOptions, SqliteStore};

    fn server(store: &SharedStore, ip: &str) -> Api {
        let cluster =
            ClusterConfig { advertise_address: ip.parse().unwrap(), advertise_port: 6443, ..ClusterConfig::default() };
        Api::with_cluster(Registry::builtin(), store.clone(), cluster)
    }

    async fn endpoint_ips(api: &Api) -> (Vec<String>, Vec<String>) {
        let get = |g: &str, p: &str| api.store(g, "v1", p).unwrap().clone();
        let ep = get("", "endpoints").get("default", "kubernetes", "").await.unwrap();
        let slice = get("discovery.k8s.io", "endpointslices").get("default", "kubernetes", "").await.unwrap();
        let from_ep = ep["subsets"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|s| s["addresses"].as_array().cloned().unwrap_or_default())
            .map(|a| a["ip"].as_str().unwrap().to_string())
            .collect();
        let from_slice = slice["endpoints"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["addresses"][0].as_str().unwrap().to_string())
            .collect();
        (from_ep, from_slice)
    }

    #[tokio::test]
    async fn two_servers_share_the_kubernetes_endpoints_and_one_leaving_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let opts = SqliteOptions { progress_interval: Duration::from_millis(200), ..Default::default() };
        let store: SharedStore = Arc::new(SqliteStore::open_with(&dir.path().join("state.db"), opts).await.unwrap());
        let second = server(&store, "10.0.0.20");
        let first = server(&store, "10.0.0.3");
        reconcile(&second, second.cluster()).await.unwrap();
        reconcile(&first, first.cluster()).await.unwrap();
        let both = vec!["10.0.0.3".to_string(), "10.0.0.20".to_string()];
        assert_eq!(endpoint_ips(&first).await, (both.clone(), both.clone()), "sorted numerically");
        // A refresh by either keeps both.
        reconcile(&second, second.cluster()).await.unwrap();
        assert_eq!(endpoint_ips(&first).await, (both.clone(), both));

        withdraw(&first).await.unwrap();
        let one = vec!["10.0.0.20".to_string()];
        assert_eq!(endpoint_ips(&second).await, (one.clone(), one.clone()));
        assert_eq!(live_addresses(&store).await.unwrap(), vec!["10.0.0.20".parse::<IpAddr>().unwrap()]);
        reconcile(&second, second.cluster()).await.unwrap();
        assert_eq!(endpoint_ips(&second).await, (one.clone(), one));
    }

    #[tokio::test]
    async fn loopback_servers_take_no_lease() {
        let dir = tempfile::tempdir().unwrap();
        let store: SharedStore = Arc::new(SqliteStore::open(&dir.path().join("state.db")).await.unwrap());
        let api = server(&store, "127.0.0.1");
        reconcile(&api, api.cluster()).await.unwrap();
        assert!(live_addresses(&store).await.unwrap().is_empty());
    }

    #[test]
    fn no_address_leaves_empty_subsets() {
        let (ep, slice) = endpoints_objects(&[], 6443);
        assert_eq!(ep["subsets"], json!([]));
        assert_eq!(slice["endpoints"], json!([]));
    }
}
