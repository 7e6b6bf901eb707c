//! `pods|services|nodes/{name}/proxy[/path]`: upstream's `ProxyREST` and
//! `UpgradeAwareHandler` with the rewriting transport.
//!
//! The name is `name`, `name:port` or `scheme:name:port` (scheme `http` or
//! `https`; `invalid pod request "…"` otherwise). Where it goes:
//! - a pod: its first `status.podIPs` address, which must be a global
//!   unicast IP (`address not allowed`), at the port given or the first
//!   declared container port;
//! - a service: a port given by number is first mapped to the service
//!   port's name (503 `no service port N found for service "x"`); then an
//!   address of the service's Endpoints whose port has that name and whose
//!   target pod (same namespace) still has that IP (503 `no endpoints
//!   available for service "x"`) — rkube picks the first valid address where
//!   upstream starts at a random one;
//! - a node: its kubelet (TLS with the apiserver-kubelet-client
//!   certificate) when no port or the kubelet port is given, else
//!   `scheme://address:port` as for pods.
//!
//! The request then goes to `{location}{path after /proxy}` with the
//! client's query, method, body and headers except the hop-by-hop ones and
//! the client's credentials, with `X-Forwarded-For` (client IP appended) and
//! `X-Forwarded-Uri` (the API path of the target) — `X-Forwarded-Host`/
//! `-Proto` stay unset as upstream's server-side request URL has neither.
//! The answer streams back without hop-by-hop and CORS headers; a
//! `Location` naming the backend (or an absolute path) is rewritten to go
//! through the proxy path again. Upstream also rewrites links inside
//! `text/html` bodies; rkube does not. A GET or HEAD with an empty path is
//! redirected (301) to the same path with `/`. Upgrade requests are passed
//! through ([`super::upgrade`]); a backend that cannot be reached is 503
//! `error trying to reach service: dial tcp …`.

use std::net::IpAddr;

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use axum::response::Response;
use rkube_apimachinery::registry::ResourceInfo;
use rkube_apimachinery::ApiError;
use serde_json::Value;

use super::backend::{insecure_tls, Backend, Security};
use super::location::kubelet_endpoint;
use super::{upgrade, Raw};
use crate::rest::request::RequestInfo;
use crate::rest::Api;

/// Headers that belong to one connection (Go's `httputil` hop-by-hop list).
const HOP_BY_HOP: [&str; 9] = [
    "connection",
    "proxy-connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];
/// Response headers upstream's `corsRemovingTransport` drops.
const CORS_HEADERS: [&str; 4] = [
    "access-control-allow-credentials",
    "access-control-allow-headers",
    "access-control-allow-methods",
    "access-control-allow-origin",
];

/// Serves a proxy request (see the module docs).
pub async fn serve(
    api: &Api,
    info: &ResourceInfo,
    request: &RequestInfo,
    headers: HeaderMap,
    body: Body,
    raw: Raw,
) -> Result<Response, ApiError> {
    let kind = match info.plural {
        "pods" => "pod",
        "services" => "service",
        _ => "node",
    };
    let (scheme, name, port) = split_scheme_name_port(&request.name)
        .ok_or_else(|| ApiError::BadRequest(format!("invalid {kind} request {:?}", request.name)))?;
    let store = api
        .store(info.group, info.version, info.plural)
        .ok_or_else(|| ApiError::Internal(format!("no store for {}", info.plural)))?;
    let obj = store.get(&request.namespace, name, "").await?;
    let backend = match info.plural {
        "nodes" => node_backend(api, &obj, scheme, port).await?,
        "pods" => pod_backend(&obj, scheme, port)?,
        _ => service_backend(api, &request.namespace, &obj, scheme, name, port, &request.name).await?,
    };
    let req_path = raw.uri.path();
    let (prefix, subpath) = split_proxy_path(req_path, info.plural);
    let mut location = join_preserving_trailing_slash(subpath);
    let remote = raw.remote;
    if upgrade::is_upgrade(&headers) {
        let target = if location.is_empty() { "/".to_string() } else { location };
        return upgrade::pass_through(&backend, raw.method, &target, headers, remote, raw.upgrade).await;
    }
    if !location.ends_with('/') && req_path.ends_with('/') {
        location.push('/');
    }
    let query = raw.uri.query().map(|q| format!("?{q}")).unwrap_or_default();
    if location.is_empty() && (raw.method == Method::GET || raw.method == Method::HEAD) {
        let mut resp = Response::new(Body::empty());
        *resp.status_mut() = StatusCode::MOVED_PERMANENTLY;
        if let Ok(v) = HeaderValue::from_str(&format!("{req_path}/{query}")) {
            resp.headers_mut().insert(header::LOCATION, v);
        }
        return Ok(resp);
    }
    let mut out_headers = forwarded_headers(&headers, remote);
    let mut forwarded_uri = join_preserving_trailing_slash(&format!("{prefix}{location}"));
    if forwarded_uri.is_empty() {
        forwarded_uri = "/".into();
    }
    if let Ok(v) = HeaderValue::from_str(&forwarded_uri) {
        out_headers.insert("x-forwarded-uri", v);
    }
    let client_host = match headers.get(header::HOST) {
        Some(h) => h.to_str().unwrap_or("").to_string(),
        None => raw.uri.authority().map(|a| a.to_string()).unwrap_or_default(),
    };
    if !out_headers.contains_key(header::HOST) {
        if let Ok(v) = HeaderValue::from_str(&client_host) {
            out_headers.insert(header::HOST, v);
        }
    }
    let target = if location.is_empty() { format!("/{query}") } else { format!("{location}{query}") };
    let mut outgoing = hyper::Request::builder()
        .method(raw.method)
        .uri(&target)
        .body(body)
        .map_err(|e| ApiError::BadRequest(e.to_string()))?;
    *outgoing.headers_mut() = out_headers;
    let response = backend
        .send(outgoing)
        .await
        .map_err(|e| ApiError::ServiceUnavailable(format!("error trying to reach service: {e}")))?;
    let (mut parts, incoming) = response.into_parts();
    strip_hop_by_hop(&mut parts.headers);
    for h in CORS_HEADERS {
        parts.headers.remove(h);
    }
    if let Some(loc) = parts.headers.get(header::LOCATION).and_then(|v| v.to_str().ok()) {
        let rewritten = rewrite_location(loc, &backend.authority(), &client_host, prefix);
        if let Ok(v) = HeaderValue::from_str(&rewritten) {
            parts.headers.insert(header::LOCATION, v);
        }
    }
    Ok(Response::from_parts(parts, Body::new(incoming)))
}

/// Go's `utilnet.SplitSchemeNamePort`: `(scheme, name, port)`, `None` for
/// more than three parts, an empty name or a scheme other than `http`/`https`.
pub fn split_scheme_name_port(id: &str) -> Option<(&str, &str, &str)> {
    let parts: Vec<&str> = id.split(':').collect();
    let (scheme, name, port) = match parts.as_slice() {
        [name] => ("", *name, ""),
        [name, port] => ("", *name, *port),
        [scheme, name, port] => (*scheme, *name, *port),
        _ => return None,
    };
    (!name.is_empty() && matches!(scheme, "" | "http" | "https")).then_some((scheme, name, port))
}

/// The request path up to and including `/proxy`, and what follows.
fn split_proxy_path<'a>(path: &'a str, plural: &str) -> (&'a str, &'a str) {
    let needle = format!("/{plural}/");
    if let Some(start) = path.find(&needle) {
        let after_name = start + needle.len();
        if let Some(slash) = path[after_name..].find("/proxy") {
            let end = after_name + slash + "/proxy".len();
            if path[end..].is_empty() || path[end..].starts_with('/') {
                return (&path[..end], &path[end..]);
            }
        }
    }
    (path, "")
}

/// Go's `path.Clean` of a rooted path, keeping a trailing slash as
/// `JoinPreservingTrailingSlash` does; empty stays empty.
fn join_preserving_trailing_slash(p: &str) -> String {
    if p.is_empty() {
        return String::new();
    }
    let mut out: Vec<&str> = Vec::new();
    for seg in p.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                out.pop();
            }
            s => out.push(s),
        }
    }
    let mut cleaned = format!("/{}", out.join("/"));
    if p.ends_with('/') && !cleaned.ends_with('/') {
        cleaned.push('/');
    }
    cleaned
}

/// The request headers for the backend: hop-by-hop headers and the
/// client's credentials (which upstream's authentication and impersonation
/// filters remove) dropped, `X-Forwarded-For` appended.
fn forwarded_headers(headers: &HeaderMap, remote: Option<std::net::SocketAddr>) -> HeaderMap {
    let mut out = headers.clone();
    strip_hop_by_hop(&mut out);
    out.remove(header::AUTHORIZATION);
    let impersonation: Vec<HeaderName> =
        out.keys().filter(|k| k.as_str().starts_with("impersonate-")).cloned().collect();
    for k in impersonation {
        out.remove(k);
    }
    upgrade::append_forwarded_for(&mut out, remote);
    out
}

/// Removes hop-by-hop headers and those the `Connection` header names;
/// `Te: trailers` stays, as Go keeps it.
fn strip_hop_by_hop(headers: &mut HeaderMap) {
    let named: Vec<String> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|s| s.trim().to_ascii_lowercase())
        .filter(|s| !s.is_empty())
        .collect();
    let keep_te = headers.get_all(header::TE).iter().any(|v| v.to_str().is_ok_and(|v| v.contains("trailers")));
    for h in named.iter().map(String::as_str).chain(HOP_BY_HOP) {
        headers.remove(h);
    }
    if keep_te {
        headers.insert(header::TE, HeaderValue::from_static("trailers"));
    }
}

/// Upstream's `Transport.rewriteURL` for a `Location`: a URL on another
/// host or with a relative path stays; otherwise scheme and host are
/// dropped and the proxy prefix is put before the path (unless already
/// there).
fn rewrite_location(target: &str, backend_host: &str, request_host: &str, prefix: &str) -> String {
    let (host, rest) = match target.split_once("://") {
        Some((_, after)) => match after.find('/') {
            Some(i) => (&after[..i], &after[i..]),
            None => (after, ""),
        },
        None if target.starts_with("//") => match target[2..].find('/') {
            Some(i) => (&target[2..2 + i], &target[2 + i..]),
            None => (&target[2..], ""),
        },
        None => ("", target),
    };
    let path_end = rest.find(['?', '#']).unwrap_or(rest.len());
    let (path, tail) = rest.split_at(path_end);
    let different_host = !host.is_empty() && host != backend_host && host != request_host;
    if different_host || !path.starts_with('/') {
        return target.to_string();
    }
    if path.starts_with(prefix) {
        return format!("{path}{tail}");
    }
    let mut joined = join_preserving_trailing_slash(&format!("{prefix}{path}"));
    if path.ends_with('/') && !joined.ends_with('/') {
        joined.push('/');
    }
    format!("{joined}{tail}")
}

/// Go's `net.IP.IsGlobalUnicast`.
fn is_global_unicast(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            !(v4.is_unspecified() || v4.is_loopback() || v4.is_multicast() || v4.is_link_local() || v4.is_broadcast())
        }
        IpAddr::V6(v6) => {
            let link_local = (v6.segments()[0] & 0xffc0) == 0xfe80;
            match v6.to_ipv4_mapped() {
                Some(v4) => is_global_unicast(IpAddr::V4(v4)),
                None => !(v6.is_unspecified() || v6.is_loopback() || v6.is_multicast() || link_local),
            }
        }
    }
}

/// `http` (plain) or `https` (TLS without verification) to `host:port`.
fn plain_or_tls(scheme: &str, host: String, port: u64) -> Backend {
    let security = if scheme == "https" { Security::Tls(insecure_tls()) } else { Security::Plain };
    Backend { host, port, security }
}

/// The default port of a scheme when a location has none.
fn default_port(scheme: &str) -> u64 {
    if scheme == "https" {
        443
    } else {
        80
    }
}

fn parse_port(port: &str) -> Result<u64, ApiError> {
    port.parse::<u16>().map(u64::from).map_err(|_| ApiError::BadRequest(format!("invalid port {port:?}")))
}

/// Upstream's pod `ResourceLocation`.
fn pod_backend(pod: &Value, scheme: &str, port: &str) -> Result<Backend, ApiError> {
    let mut port = port.to_string();
    if port.is_empty() {
        let first = pod
            .pointer("/spec/containers")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find_map(|c| c.pointer("/ports/0/containerPort").and_then(Value::as_u64));
        if let Some(p) = first {
            port = p.to_string();
        }
    }
    let ip = pod.pointer("/status/podIPs/0/ip").and_then(Value::as_str).unwrap_or("");
    match ip.parse::<IpAddr>() {
        Ok(addr) if is_global_unicast(addr) => {}
        _ => return Err(ApiError::BadRequest("address not allowed".into())),
    }
    let port = if port.is_empty() { default_port(scheme) } else { parse_port(&port)? };
    Ok(plain_or_tls(scheme, ip.to_string(), port))
}

/// Upstream's node `ResourceLocation`.
async fn node_backend(api: &Api, node: &Value, scheme: &str, port: &str) -> Result<Backend, ApiError> {
    let (host, kubelet_port) = kubelet_endpoint(node)?;
    if port.is_empty() || port == kubelet_port.to_string() {
        return Ok(match &api.cluster().kubelet_client {
            Some(client) => client.backend(&host, kubelet_port),
            // No credentials installed: the kubelet will refuse, as it should.
            None => Backend { host, port: kubelet_port, security: Security::Tls(insecure_tls()) },
        });
    }
    let proxyable = match host.parse::<IpAddr>() {
        Ok(ip) => is_global_unicast(ip),
        Err(_) => match tokio::net::lookup_host((host.as_str(), 0)).await {
            Ok(addrs) => {
                let addrs: Vec<_> = addrs.collect();
                !addrs.is_empty() && addrs.iter().all(|a| is_global_unicast(a.ip()))
            }
            Err(_) => false,
        },
    };
    if !proxyable {
        return Err(ApiError::BadRequest("address not allowed".into()));
    }
    Ok(plain_or_tls(scheme, host, parse_port(port)?))
}

/// Upstream's service `ResourceLocation` (see the module docs). A service
/// without an Endpoints object is treated as one without endpoints (the
/// endpoints controller creates one for every service upstream).
async fn service_backend(
    api: &Api,
    namespace: &str,
    service: &Value,
    scheme: &str,
    name: &str,
    port: &str,
    id: &str,
) -> Result<Backend, ApiError> {
    let mut port_name = port.to_string();
    if let Ok(number) = port.parse::<i64>() {
        let ports = service.pointer("/spec/ports").and_then(Value::as_array).cloned().unwrap_or_default();
        match ports.iter().find(|p| p.get("port").and_then(Value::as_i64) == Some(number)) {
            Some(p) => port_name = p.get("name").and_then(Value::as_str).unwrap_or("").to_string(),
            None => {
                return Err(ApiError::ServiceUnavailable(format!(
                    "no service port {number} found for service {name:?}"
                )))
            }
        }
    }
    let none = |what: &str| ApiError::ServiceUnavailable(format!("no endpoints available for service {what:?}"));
    let endpoints = api.store("", "v1", "endpoints").ok_or_else(|| none(name))?;
    let ep = match endpoints.get(namespace, name, "").await {
        Ok(ep) => ep,
        Err(ApiError::NotFound { .. }) => return Err(none(name)),
        Err(e) => return Err(e),
    };
    let subsets = ep.get("subsets").and_then(Value::as_array).cloned().unwrap_or_default();
    if subsets.is_empty() {
        return Err(none(name));
    }
    let pods = api.store("", "v1", "pods");
    for subset in &subsets {
        let addresses = subset.get("addresses").and_then(Value::as_array).cloned().unwrap_or_default();
        let ports = subset.get("ports").and_then(Value::as_array).cloned().unwrap_or_default();
        let Some(p) = ports.iter().find(|p| p.get("name").and_then(Value::as_str).unwrap_or("") == port_name) else {
            continue;
        };
        let Some(number) = p.get("port").and_then(Value::as_u64) else { continue };
        for addr in &addresses {
            let ip = addr.get("ip").and_then(Value::as_str).unwrap_or("");
            if valid_address(pods.map(|p| &**p), namespace, addr, ip).await {
                return Ok(plain_or_tls(scheme, ip.to_string(), number));
            }
        }
    }
    Err(none(id))
}

/// Upstream's `isValidAddress`: the address targets a pod of this
/// namespace that still has the IP.
async fn valid_address(pods: Option<&crate::storage::ResourceStore>, namespace: &str, addr: &Value, ip: &str) -> bool {
    let Some(target) = addr.get("targetRef") else { return false };
    if target.get("namespace").and_then(Value::as_str).unwrap_or("") != namespace {
        return false;
    }
    let (Some(pods), Some(pod)) = (pods, target.get("name").and_then(Value::as_str)) else { return false };
    let Ok(pod) = pods.get(namespace, pod, "").await else { return false };
    pod.pointer("/status/podIPs")
        .and_then(Value::as_array)
        .is_some_and(|ips| ips.iter().any(|i| i.get("ip").and_then(Value::as_str) == Some(ip)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_paths() {
        assert_eq!(split_scheme_name_port("web"), Some(("", "web", "")));
        assert_eq!(split_scheme_name_port("web:http"), Some(("", "web", "http")));
        assert_eq!(split_scheme_name_port("https:web:443"), Some(("https", "web", "443")));
        assert_eq!(split_scheme_name_port("ftp:web:21"), None);
        assert_eq!(split_scheme_name_port("a:b:c:d"), None);
        assert_eq!(split_scheme_name_port(":80"), None);
        let (prefix, sub) = split_proxy_path("/api/v1/namespaces/d/pods/p:80/proxy/a/b/", "pods");
        assert_eq!((prefix, sub), ("/api/v1/namespaces/d/pods/p:80/proxy", "/a/b/"));
        assert_eq!(split_proxy_path("/api/v1/nodes/n/proxy", "nodes"), ("/api/v1/nodes/n/proxy", ""));
        assert_eq!(join_preserving_trailing_slash("/a/./b/../c/"), "/a/c/");
        assert_eq!(join_preserving_trailing_slash("/"), "/");
        assert_eq!(join_preserving_trailing_slash(""), "");
    }

    /// `Transport.rewriteURL`: same-host and absolute-path redirects go
    /// back through the proxy path; other hosts and relative paths stay.
    #[test]
    fn location_rewriting() {
        let prefix = "/api/v1/namespaces/d/services/web/proxy";
        assert_eq!(rewrite_location("/login?x=1", "10.0.0.5:80", "h:6443", prefix), format!("{prefix}/login?x=1"));
        assert_eq!(rewrite_location("http://10.0.0.5:80/a/", "10.0.0.5:80", "h:6443", prefix), format!("{prefix}/a/"));
        assert_eq!(rewrite_location("https://example.com/a", "10.0.0.5:80", "h:6443", prefix), "https://example.com/a");
        assert_eq!(rewrite_location("next", "10.0.0.5:80", "h:6443", prefix), "next");
        assert_eq!(rewrite_location(&format!("{prefix}/x"), "10.0.0.5:80", "h:6443", prefix), format!("{prefix}/x"));
    }

    #[test]
    fn hop_by_hop_and_global_unicast() {
        let mut h = HeaderMap::new();
        h.insert("connection", "keep-alive, x-private".parse().unwrap());
        h.insert("x-private", "1".parse().unwrap());
        h.insert("keep-alive", "timeout=5".parse().unwrap());
        h.insert("authorization", "Bearer t".parse().unwrap());
        h.insert("impersonate-user", "bob".parse().unwrap());
        h.insert("accept", "*/*".parse().unwrap());
        let out = forwarded_headers(&h, Some("192.0.2.9:5555".parse().unwrap()));
        let names: Vec<&str> = out.keys().map(|k| k.as_str()).collect();
        assert_eq!(names, ["accept", "x-forwarded-for"]);
        assert_eq!(out["x-forwarded-for"], "192.0.2.9");
        assert!(!is_global_unicast("127.0.0.1".parse().unwrap()));
        assert!(!is_global_unicast("169.254.1.1".parse().unwrap()));
        assert!(!is_global_unicast("fe80::1".parse().unwrap()));
        assert!(is_global_unicast("10.1.2.3".parse().unwrap()));
        assert!(is_global_unicast("fd00::2".parse().unwrap()));
    }
}
