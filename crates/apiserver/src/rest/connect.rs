//! The streaming pod subresources — `log`, `exec`, `attach`,
//! `portforward` — and the `proxy` subresources of pods, nodes and
//! services, up to the point where upstream's API server dials the
//! backend. For the pod subresources: the pod must exist, name a valid container, be assigned
//! to a node (`pod x does not have a host assigned`), and that node must
//! exist and have an address. There is no kubelet yet: when the kubelet
//! endpoint cannot be reached the answer is upstream's dial error; when
//! something answers there, 503 says the kubelet connection is not
//! implemented yet. For `proxy` ([`proxy`]): the object must exist, a
//! pod needs an IP (`address not allowed`), a service ready endpoints (503
//! `no endpoints available for service "x"`), a node an address; a failed
//! dial is upstream's `error trying to reach service: dial tcp …`.

use std::time::Duration;

use axum::response::Response;
use rkube_apimachinery::registry::ResourceInfo;
use rkube_apimachinery::{meta, ApiError};
use serde_json::Value;

use super::request::RequestInfo;
use super::{Api, Ctx};
use crate::storage::ResourceStore;

/// The kubelet's default port.
const KUBELET_PORT: u64 = 10250;
/// Upstream's `--kubelet-preferred-address-types` default.
const PREFERRED_ADDRESS_TYPES: [&str; 5] = ["Hostname", "InternalDNS", "InternalIP", "ExternalDNS", "ExternalIP"];
/// How long a dial to a kubelet may take.
const DIAL_TIMEOUT: Duration = Duration::from_secs(2);

/// Serves `pods/{name}/{log|exec|attach|portforward}`.
pub async fn handle(ctx: &Ctx<'_>, pods: &ResourceStore, subresource: &str) -> Result<Response, ApiError> {
    let (namespace, name) = (&ctx.request.namespace, &ctx.request.name);
    let pod = pods.get(namespace, name, "").await?;
    let container = if subresource == "portforward" {
        String::new()
    } else {
        container_of(&pod, name, ctx.query.get("container"))?
    };
    let node_name = pod.pointer("/spec/nodeName").and_then(Value::as_str).unwrap_or("");
    if node_name.is_empty() {
        return Err(ApiError::BadRequest(format!("pod {name} does not have a host assigned")));
    }
    let phase = pod.pointer("/status/phase").and_then(Value::as_str).unwrap_or("");
    if matches!(subresource, "exec" | "attach") && matches!(phase, "Succeeded" | "Failed") {
        return Err(ApiError::BadRequest(format!(
            "cannot {} a container in a completed pod; current phase is {phase}",
            if subresource == "exec" { "exec into" } else { "attach to" }
        )));
    }
    let nodes = ctx.api.store("", "v1", "nodes").ok_or_else(|| ApiError::Internal("no node store".into()))?;
    let node = nodes.get("", node_name, "").await?;
    let (host, port) = kubelet_endpoint(&node)?;
    let (target, failure) = dial(&host, port).await;
    match failure {
        Some(reason) if subresource == "log" => Err(ApiError::Generic {
            code: 500,
            reason: "",
            message: format!(
                "Get \"https://{target}/containerLogs/{namespace}/{name}/{container}\": dial tcp {target}: {reason}"
            ),
        }),
        Some(reason) => Err(ApiError::Generic {
            code: 500,
            reason: "",
            message: format!("error dialing backend: dial tcp {target}: {reason}"),
        }),
        None => Err(ApiError::ServiceUnavailable(format!(
            "the connection to the kubelet on node {node_name} for pods/{subresource} is not implemented yet"
        ))),
    }
}

/// Dials `host:port`; `None` when something answered, else the Go-style
/// dial failure (`connect: connection refused`, `i/o timeout`).
async fn dial(host: &str, port: u64) -> (String, Option<String>) {
    let target = if host.contains(':') { format!("[{host}]:{port}") } else { format!("{host}:{port}") };
    let failure = match tokio::time::timeout(DIAL_TIMEOUT, tokio::net::TcpStream::connect(target.as_str())).await {
        Ok(Ok(_)) => None,
        Ok(Err(e)) => Some(dial_error(&e)),
        Err(_) => Some("i/o timeout".to_string()),
    };
    (target, failure)
}

/// `pods|nodes|services/{name}/proxy[/path]`. The name may carry a port
/// (`name:port`) and a scheme (`scheme:name:port`).
pub async fn proxy(api: &Api, info: &ResourceInfo, request: &RequestInfo) -> Result<Response, ApiError> {
    let parts: Vec<&str> = request.name.split(':').collect();
    let (name, port) = match parts.as_slice() {
        [name] => (*name, ""),
        [name, port] => (*name, *port),
        [_, name, port] => (*name, *port),
        _ => return Err(ApiError::BadRequest(format!("invalid request {:?}", request.name))),
    };
    let store = api
        .store(info.group, info.version, info.plural)
        .ok_or_else(|| ApiError::Internal(format!("no store for {}", info.plural)))?;
    let obj = store.get(&request.namespace, name, "").await?;
    let (host, port): (String, u64) = match info.plural {
        "nodes" => {
            let (host, kubelet) = kubelet_endpoint(&obj)?;
            (host, port.parse().unwrap_or(kubelet))
        }
        "pods" => {
            let ip = obj.pointer("/status/podIP").and_then(Value::as_str).unwrap_or("");
            if ip.parse::<std::net::IpAddr>().is_err() {
                return Err(ApiError::BadRequest("address not allowed".into()));
            }
            (ip.to_string(), port.parse().unwrap_or(80))
        }
        _ => service_endpoint(api, &request.namespace, name, port).await?,
    };
    let (target, failure) = dial(&host, port).await;
    match failure {
        Some(reason) => Err(ApiError::Generic {
            code: 500,
            reason: "",
            message: format!("error trying to reach service: dial tcp {target}: {reason}"),
        }),
        None => Err(ApiError::ServiceUnavailable(format!(
            "proxying to {}/{} is not implemented yet",
            info.plural,
            meta::name(&obj)
        ))),
    }
}

/// The first ready endpoint of a service for `port` (a port name or
/// number; empty: the first port), or upstream's 503.
async fn service_endpoint(api: &Api, namespace: &str, name: &str, port: &str) -> Result<(String, u64), ApiError> {
    let none = || ApiError::ServiceUnavailable(format!("no endpoints available for service {name:?}"));
    let endpoints = api.store("", "v1", "endpoints").ok_or_else(none)?;
    let ep = match endpoints.get(namespace, name, "").await {
        Ok(ep) => ep,
        Err(ApiError::NotFound { .. }) => return Err(none()),
        Err(e) => return Err(e),
    };
    for subset in ep.get("subsets").and_then(Value::as_array).into_iter().flatten() {
        let Some(ip) = subset.pointer("/addresses/0/ip").and_then(Value::as_str) else { continue };
        let ports = subset.get("ports").and_then(Value::as_array).cloned().unwrap_or_default();
        let chosen = ports.iter().find(|p| {
            port.is_empty()
                || p.get("name").and_then(Value::as_str) == Some(port)
                || p.get("port").and_then(Value::as_u64).map(|n| n.to_string()).as_deref() == Some(port)
        });
        if let Some(p) = chosen.and_then(|p| p.get("port")).and_then(Value::as_u64) {
            return Ok((ip.to_string(), p));
        }
    }
    Err(none())
}

fn dial_error(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::ConnectionRefused => "connect: connection refused".into(),
        std::io::ErrorKind::TimedOut => "i/o timeout".into(),
        _ => format!("connect: {e}"),
    }
}

/// The container a request addresses: the `container` parameter, or the
/// only container; 400s in upstream's words otherwise.
fn container_of(pod: &Value, name: &str, requested: Option<&str>) -> Result<String, ApiError> {
    let names = |field: &str| -> Vec<String> {
        pod.pointer(&format!("/spec/{field}"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|c| c.get("name").and_then(Value::as_str).map(str::to_string))
            .collect()
    };
    let (containers, init, ephemeral) = (names("containers"), names("initContainers"), names("ephemeralContainers"));
    match requested.filter(|c| !c.is_empty()) {
        Some(c) => {
            if containers.iter().chain(&init).chain(&ephemeral).any(|n| n == c) {
                Ok(c.to_string())
            } else {
                Err(ApiError::BadRequest(format!("container {c} is not valid for pod {name}")))
            }
        }
        None if containers.len() == 1 => Ok(containers[0].clone()),
        None => {
            let mut msg =
                format!("a container name must be specified for pod {name}, choose one of: [{}]", containers.join(" "));
            if !init.is_empty() {
                msg.push_str(&format!(" or one of the init containers: [{}]", init.join(" ")));
            }
            if !ephemeral.is_empty() {
                msg.push_str(&format!(" or one of the ephemeral containers: [{}]", ephemeral.join(" ")));
            }
            Err(ApiError::BadRequest(msg))
        }
    }
}

/// The node's preferred address and kubelet port, or upstream's error.
fn kubelet_endpoint(node: &Value) -> Result<(String, u64), ApiError> {
    let addresses: Vec<(String, String)> = node
        .pointer("/status/addresses")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|a| (a["type"].as_str().unwrap_or("").to_string(), a["address"].as_str().unwrap_or("").to_string()))
        .collect();
    let preferred = PREFERRED_ADDRESS_TYPES
        .iter()
        .find_map(|t| addresses.iter().find(|(ty, addr)| ty == t && !addr.is_empty()).map(|(_, a)| a.clone()));
    let Some(host) = preferred else {
        let known: Vec<String> = addresses.iter().map(|(t, a)| format!("{{{t} {a}}}")).collect();
        return Err(ApiError::Generic {
            code: 500,
            reason: "",
            message: format!("no preferred addresses found; known addresses: [{}]", known.join(" ")),
        });
    };
    let port = node
        .pointer("/status/daemonEndpoints/kubeletEndpoint/Port")
        .and_then(Value::as_u64)
        .filter(|p| *p > 0)
        .unwrap_or(KUBELET_PORT);
    Ok((host, port))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn container_selection_and_node_addresses() {
        let pod = json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}], "initContainers": [{"name": "i"}]}});
        let e = container_of(&pod, "p", None).unwrap_err();
        assert_eq!(
            e.to_string(),
            "a container name must be specified for pod p, choose one of: [a b] or one of the init containers: [i]"
        );
        assert_eq!(container_of(&pod, "p", Some("b")).unwrap(), "b");
        assert_eq!(container_of(&pod, "p", Some("x")).unwrap_err().to_string(), "container x is not valid for pod p");
        let e = kubelet_endpoint(&json!({"status": {}})).unwrap_err();
        assert_eq!(e.to_string(), "no preferred addresses found; known addresses: []");
        let node = json!({"status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.5"}, {"type": "Hostname", "address": "n1"}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10251}}}});
        assert_eq!(kubelet_endpoint(&node).unwrap(), ("n1".to_string(), 10251));
    }
}
