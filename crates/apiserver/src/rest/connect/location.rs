//! Where a pod's streaming subresource goes: the container addressed, the
//! node's kubelet endpoint, and the kubelet URL upstream's
//! `ExecLocation`/`AttachLocation`/`PortForwardLocation` build
//! (`https://{host}:{port}/{exec|attach}/{namespace}/{pod}/{container}?…`,
//! `/portForward/{namespace}/{pod}`), with the exec/attach options of the
//! request re-encoded as the kubelet's query (`input`, `output`, `error`,
//! `tty`, `command`; sorted by key as Go's `url.Values.Encode`).

use rkube_apimachinery::ApiError;
use serde_json::Value;

use crate::rest::query::Query;

/// The kubelet's default port.
const KUBELET_PORT: u64 = 10250;
/// The order node addresses are tried in (`--kubelet-preferred-address-types`).
/// Upstream's default starts with Hostname, which only works where node
/// names resolve; rkube, like k3s, prefers the InternalIP the agent
/// registered (`--node-ip`), so a `--node-name` need not be in DNS.
const PREFERRED_ADDRESS_TYPES: [&str; 5] = ["InternalIP", "ExternalIP", "Hostname", "InternalDNS", "ExternalDNS"];

/// The streams and command of an exec or attach request
/// (`PodExecOptions`/`PodAttachOptions` from the query).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StreamOptions {
    /// `stdin`: the client sends standard input (channel 0).
    pub stdin: bool,
    /// `stdout`: the server sends standard output (channel 1).
    pub stdout: bool,
    /// `stderr`: the server sends standard error (channel 2).
    pub stderr: bool,
    /// `tty`: a terminal; the client sends resize events (channel 4).
    pub tty: bool,
    /// `command`: the command of an exec, one query value per word.
    pub command: Vec<String>,
}

impl StreamOptions {
    /// Reads the options as upstream's query decoding does: a flag is true
    /// unless its first value is `0` or `false` (any case).
    pub fn from_query(query: &Query) -> StreamOptions {
        let flag = |key: &str| query.get(key).is_some_and(|v| v != "0" && !v.eq_ignore_ascii_case("false"));
        StreamOptions {
            stdin: flag("stdin"),
            stdout: flag("stdout"),
            stderr: flag("stderr"),
            tty: flag("tty"),
            command: query.all("command").into_iter().map(str::to_string).collect(),
        }
    }

    /// The kubelet query of these options (upstream's `streamParams`).
    fn kubelet_query(&self) -> String {
        let mut params: Vec<(&str, &str)> = self.command.iter().map(|c| ("command", c.as_str())).collect();
        for (on, key) in [(self.stderr, "error"), (self.stdin, "input"), (self.stdout, "output"), (self.tty, "tty")] {
            if on {
                params.push((key, "1"));
            }
        }
        // `url.Values.Encode` sorts by key and keeps each key's values in order.
        params.sort_by_key(|(k, _)| *k);
        params.iter().map(|(k, v)| format!("{}={}", query_escape(k), query_escape(v))).collect::<Vec<_>>().join("&")
    }
}

/// A kubelet URL: the node's address and kubelet port, and the path with
/// its query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KubeletLocation {
    /// The node's preferred address.
    pub host: String,
    /// The kubelet port.
    pub port: u64,
    /// Path and query (`/exec/default/web/c?command=true&output=1`).
    pub path_and_query: String,
}

impl KubeletLocation {
    /// `host:port` (`[v6]:port` for IPv6), Go's `net.JoinHostPort`.
    pub fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    /// The full `https://` URL, as upstream prints it in errors.
    pub fn url(&self) -> String {
        format!("https://{}{}", self.authority(), self.path_and_query)
    }
}

/// The kubelet location of `pods/{exec|attach}` for `container`.
pub fn stream_location(
    (host, port): (String, u64),
    subresource: &str,
    namespace: &str,
    pod: &str,
    container: &str,
    options: &StreamOptions,
) -> KubeletLocation {
    let mut path_and_query = format!("/{subresource}/{namespace}/{pod}/{container}");
    let query = options.kubelet_query();
    if !query.is_empty() {
        path_and_query.push('?');
        path_and_query.push_str(&query);
    }
    KubeletLocation { host, port, path_and_query }
}

/// Go's `url.QueryEscape`: unreserved bytes stay, space is `+`, the rest
/// `%XX`.
fn query_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => out.push(b as char),
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// The container a request addresses: the `container` parameter, or the
/// only container; 400s in upstream's words otherwise.
pub fn container_of(pod: &Value, name: &str, requested: Option<&str>) -> Result<String, ApiError> {
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
pub fn kubelet_endpoint(node: &Value) -> Result<(String, u64), ApiError> {
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
        assert_eq!(kubelet_endpoint(&node).unwrap(), ("10.0.0.5".to_string(), 10251));
        let node = json!({"status": {"addresses": [{"type": "Hostname", "address": "n1"}]}});
        assert_eq!(kubelet_endpoint(&node).unwrap(), ("n1".to_string(), 10250));
    }

    /// The kubelet URL of upstream's `streamLocation`: the request's
    /// options become `input`/`output`/`error`/`tty`=1 and `command`
    /// values, sorted by key, query-escaped as Go does.
    #[test]
    fn kubelet_stream_location() {
        let query = Query::parse(Some(
            "command=sh&command=-c&command=echo+a%26b&container=c&stdout=true&stderr=1&tty=false&stdin=0",
        ));
        let opts = StreamOptions::from_query(&query);
        assert_eq!((opts.stdout, opts.stderr, opts.stdin, opts.tty), (true, true, false, false));
        let loc = stream_location(("10.0.0.5".into(), 10250), "exec", "default", "web", "c", &opts);
        assert_eq!(
            loc.url(),
            "https://10.0.0.5:10250/exec/default/web/c?command=sh&command=-c&command=echo+a%26b&error=1&output=1"
        );
        let attach = StreamOptions { stdin: true, tty: true, stdout: true, ..Default::default() };
        let loc = stream_location(("fd00::1".into(), 10250), "attach", "ns", "p", "c", &attach);
        assert_eq!(loc.url(), "https://[fd00::1]:10250/attach/ns/p/c?input=1&output=1&tty=1");
    }
}
