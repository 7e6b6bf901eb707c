//! A container's environment, as upstream's kubelet builds it
//! (`makeEnvironmentVariables` in kubelet_pods.go, `pkg/kubelet/envvars`,
//! and the `$(VAR)` expansion of `third_party/forked/golang/expansion`).
//!
//! Order of precedence, as upstream: service link variables are the base;
//! `envFrom` sources are applied in order (later sources win); `env`
//! entries are applied in declaration order and override both. A `value`
//! is expanded against the variables defined so far (envFrom and earlier
//! `env` entries) and then the service variables; `valueFrom` values are
//! never expanded.
//!
//! Kubernetes 1.33 (RelaxedEnvironmentVariableValidation, beta and on by
//! default since 1.32) no longer skips `envFrom` keys that are not C
//! identifiers: every key (with its prefix) is passed to the container and
//! no `InvalidEnvironmentVariableNames` event is recorded any more.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use k8s_openapi::api::core::v1::{ConfigMap, Container, Node, Pod, ResourceFieldSelector, Secret, Service};
use kube::api::{Api, ListParams};
use rkube_apimachinery::quantity;

/// The namespace of the master service whose variables every pod gets.
const MASTER_NAMESPACE: &str = "default";
/// The master service (upstream's `masterServices`): its link variables are
/// added even when `enableServiceLinks` is false.
const MASTER_SERVICE: &str = "kubernetes";

/// An error building a container's environment. `Display` is upstream's
/// message, which the worker reports as the waiting reason
/// `CreateContainerConfigError`'s message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EnvError {
    /// A referenced, non-optional ConfigMap does not exist. Upstream's
    /// kubelet configmap manager reports the singular resource name.
    #[error("configmap \"{0}\" not found")]
    ConfigMapNotFound(String),
    /// A referenced, non-optional Secret does not exist.
    #[error("secret \"{0}\" not found")]
    SecretNotFound(String),
    /// `configMapKeyRef` names a key the ConfigMap does not have.
    #[error("couldn't find key {key} in ConfigMap {namespace}/{name}")]
    ConfigMapKeyNotFound { key: String, namespace: String, name: String },
    /// `secretKeyRef` names a key the Secret does not have.
    #[error("couldn't find key {key} in Secret {namespace}/{name}")]
    SecretKeyNotFound { key: String, namespace: String, name: String },
    /// Listing the services for the link variables failed.
    #[error("failed to list services when setting up env vars")]
    ServiceList,
    /// A `fieldRef` or `resourceFieldRef` could not be resolved, or an API
    /// read failed; the message is upstream's (e.g. `unsupported fieldPath: x`).
    #[error("{0}")]
    Other(String),
}

/// The result of reading one referenced ConfigMap or Secret.
#[derive(Debug, Clone, PartialEq)]
pub enum Fetched {
    /// The object's `data` (Secret values decoded as UTF-8, lossily).
    Found(BTreeMap<String, String>),
    /// The API answered 404.
    NotFound,
    /// Any other failure, with its message (reported even when the
    /// reference is optional, as upstream only tolerates NotFound).
    Failed(String),
}

/// The node's allocatable resources: what an unset container limit
/// resolves to in a `resourceFieldRef` (upstream's
/// `defaultPodLimitsForDownwardAPI`). Zero means unknown (left unset).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NodeAllocatable {
    /// CPU in millicores.
    pub cpu_milli: i64,
    /// Memory in bytes.
    pub memory_bytes: i64,
    /// Ephemeral storage in bytes.
    pub ephemeral_storage_bytes: i64,
}

/// Everything [`container_env`] reads besides the pod: built by
/// [`load_env_context`] from the API, or by hand in tests.
#[derive(Debug, Clone, Default)]
pub struct EnvContext {
    /// This node's name.
    pub node_name: String,
    /// The node's IPs, primary first (`status.hostIP`, `status.hostIPs`).
    pub host_ips: Vec<IpAddr>,
    /// The pod's IPs as the sandbox reported them (`status.podIP(s)`;
    /// reordered by the node's primary IP family as upstream's `sortPodIPs`).
    pub pod_ips: Vec<String>,
    /// The ConfigMaps the pod's containers reference in `env`/`envFrom`, by name.
    pub config_maps: BTreeMap<String, Fetched>,
    /// The Secrets the pod's containers reference in `env`/`envFrom`, by name.
    pub secrets: BTreeMap<String, Fetched>,
    /// Services visible to the pod for link variables: those of the pod's
    /// namespace (when `enableServiceLinks`) and `default/kubernetes`.
    pub services: Vec<Service>,
    /// The node's allocatable, for `resourceFieldRef` of unset limits.
    pub allocatable: NodeAllocatable,
}

/// Reads what the pod's environment needs through the node's identity:
/// every ConfigMap and Secret named in any container's `env`/`envFrom`
/// (GET each; the node authorizer allows exactly those), the services of
/// the pod's namespace (LIST, only with `enableServiceLinks`, default true)
/// and `default/kubernetes`, and — when a `resourceFieldRef` is used — the
/// Node's allocatable. Err only when the service list fails (upstream's
/// `failed to list services when setting up env vars`); per-object
/// failures are kept in the context and reported by [`container_env`] when
/// a container actually needs them.
pub async fn load_env_context(
    client: &kube::Client,
    pod: &Pod,
    node_name: &str,
    host_ips: &[IpAddr],
    pod_ips: &[String],
) -> Result<EnvContext, EnvError> {
    let ns = pod.metadata.namespace.clone().unwrap_or_else(|| "default".into());
    let (cm_names, secret_names, wants_allocatable) = references(pod);
    let mut ctx = EnvContext {
        node_name: node_name.to_string(),
        host_ips: host_ips.to_vec(),
        pod_ips: pod_ips.to_vec(),
        ..Default::default()
    };
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    for name in cm_names {
        let fetched = match cms.get(&name).await {
            Ok(cm) => Fetched::Found(cm.data.unwrap_or_default()),
            Err(e) if rkube_client::errors::is_not_found(&e) => Fetched::NotFound,
            Err(e) => Fetched::Failed(api_message(&e)),
        };
        ctx.config_maps.insert(name, fetched);
    }
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &ns);
    for name in secret_names {
        let fetched = match secrets.get(&name).await {
            Ok(s) => Fetched::Found(
                s.data
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(k, v)| (k, String::from_utf8_lossy(&v.0).into_owned()))
                    .collect(),
            ),
            Err(e) if rkube_client::errors::is_not_found(&e) => Fetched::NotFound,
            Err(e) => Fetched::Failed(api_message(&e)),
        };
        ctx.secrets.insert(name, fetched);
    }
    if pod.spec.as_ref().and_then(|s| s.enable_service_links).unwrap_or(true) {
        let list = Api::<Service>::namespaced(client.clone(), &ns).list(&ListParams::default()).await;
        match list {
            Ok(l) => ctx.services.extend(l.items),
            Err(e) => {
                tracing::warn!(component = "kubelet", namespace = %ns, error = %e, "listing services for env vars");
                return Err(EnvError::ServiceList);
            }
        }
    }
    if ns != MASTER_NAMESPACE || ctx.services.is_empty() {
        match Api::<Service>::namespaced(client.clone(), MASTER_NAMESPACE).get(MASTER_SERVICE).await {
            Ok(svc) => ctx.services.push(svc),
            Err(e) if rkube_client::errors::is_not_found(&e) => {}
            Err(e) => {
                tracing::warn!(component = "kubelet", error = %e, "reading the kubernetes service for env vars");
                return Err(EnvError::ServiceList);
            }
        }
    }
    if wants_allocatable {
        match Api::<Node>::all(client.clone()).get(node_name).await {
            Ok(node) => ctx.allocatable = node_allocatable(&node),
            Err(e) => tracing::warn!(component = "kubelet", error = %e, "reading the node's allocatable for env vars"),
        }
    }
    Ok(ctx)
}

/// The allocatable cpu/memory/ephemeral-storage of a Node's status.
pub fn node_allocatable(node: &Node) -> NodeAllocatable {
    let alloc = node.status.as_ref().and_then(|s| s.allocatable.as_ref());
    let get = |k: &str, milli: bool| -> i64 {
        alloc
            .and_then(|a| a.get(k))
            .and_then(|q| if milli { quantity::milli_value(&q.0) } else { quantity::value(&q.0) })
            .and_then(|v| i64::try_from(v).ok())
            .unwrap_or(0)
    };
    NodeAllocatable {
        cpu_milli: get("cpu", true),
        memory_bytes: get("memory", false),
        ephemeral_storage_bytes: get("ephemeral-storage", false),
    }
}

fn api_message(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(s) if !s.message.is_empty() => s.message.clone(),
        other => other.to_string(),
    }
}

/// The ConfigMap and Secret names the pod's containers reference, and
/// whether any container uses a `resourceFieldRef`.
fn references(pod: &Pod) -> (BTreeSet<String>, BTreeSet<String>, bool) {
    let (mut cms, mut secrets, mut resource_refs) = (BTreeSet::new(), BTreeSet::new(), false);
    let Some(spec) = pod.spec.as_ref() else { return (cms, secrets, false) };
    let mut visit = |env: Option<&Vec<k8s_openapi::api::core::v1::EnvVar>>,
                     env_from: Option<&Vec<k8s_openapi::api::core::v1::EnvFromSource>>| {
        for f in env_from.into_iter().flatten() {
            if let Some(r) = &f.config_map_ref {
                cms.insert(r.name.clone());
            }
            if let Some(r) = &f.secret_ref {
                secrets.insert(r.name.clone());
            }
        }
        for e in env.into_iter().flatten() {
            let Some(vf) = &e.value_from else { continue };
            if let Some(r) = &vf.config_map_key_ref {
                cms.insert(r.name.clone());
            }
            if let Some(r) = &vf.secret_key_ref {
                secrets.insert(r.name.clone());
            }
            resource_refs |= vf.resource_field_ref.is_some();
        }
    };
    for c in spec.containers.iter().chain(spec.init_containers.iter().flatten()) {
        visit(c.env.as_ref(), c.env_from.as_ref());
    }
    for c in spec.ephemeral_containers.iter().flatten() {
        visit(c.env.as_ref(), c.env_from.as_ref());
    }
    (cms, secrets, resource_refs)
}

/// The environment of `container` (of `pod`) as `(name, value)` pairs:
/// the container's own variables (envFrom keys, then `env` in declaration
/// order; a redefined name keeps its first position with the last value),
/// then the service link variables it does not define itself.
///
/// Errors as upstream's `makeEnvironmentVariables`: a missing non-optional
/// ConfigMap/Secret (`configmap "x" not found`), a missing non-optional key
/// (`couldn't find key k in ConfigMap ns/x`), an unsupported field path.
/// Optional references to missing objects or keys are skipped.
pub fn container_env(pod: &Pod, container: &Container, ctx: &EnvContext) -> Result<Vec<(String, String)>, EnvError> {
    let ns = pod.metadata.namespace.as_deref().unwrap_or("default");
    let links = pod.spec.as_ref().and_then(|s| s.enable_service_links).unwrap_or(true);
    let service_env = service_env_map(ns, links, &ctx.services);

    let mut env = OrderedEnv::default();
    for from in container.env_from.iter().flatten() {
        let prefix = from.prefix.as_deref().unwrap_or("");
        let data = if let Some(r) = &from.config_map_ref {
            lookup_object(&ctx.config_maps, &r.name, r.optional.unwrap_or(false), EnvError::ConfigMapNotFound)?
        } else if let Some(r) = &from.secret_ref {
            lookup_object(&ctx.secrets, &r.name, r.optional.unwrap_or(false), EnvError::SecretNotFound)?
        } else {
            None
        };
        for (k, v) in data.into_iter().flatten() {
            env.set(format!("{prefix}{k}"), v.clone());
        }
    }

    for var in container.env.iter().flatten() {
        let value = var.value.as_deref().unwrap_or("");
        let resolved = if !value.is_empty() {
            expand(value, |name| env.get(name).or_else(|| service_env.get(name).map(String::as_str)))
        } else if let Some(vf) = &var.value_from {
            if let Some(f) = &vf.field_ref {
                field_ref_value(pod, f.api_version.as_deref(), &f.field_path, ctx)?
            } else if let Some(r) = &vf.resource_field_ref {
                resource_field_value(pod, container, r, &ctx.allocatable)?
            } else if let Some(r) = &vf.config_map_key_ref {
                let optional = r.optional.unwrap_or(false);
                let Some(data) = lookup_object(&ctx.config_maps, &r.name, optional, EnvError::ConfigMapNotFound)?
                else {
                    continue;
                };
                match data.get(&r.key) {
                    Some(v) => v.clone(),
                    None if optional => continue,
                    None => {
                        return Err(EnvError::ConfigMapKeyNotFound {
                            key: r.key.clone(),
                            namespace: ns.into(),
                            name: r.name.clone(),
                        })
                    }
                }
            } else if let Some(r) = &vf.secret_key_ref {
                let optional = r.optional.unwrap_or(false);
                let Some(data) = lookup_object(&ctx.secrets, &r.name, optional, EnvError::SecretNotFound)? else {
                    continue;
                };
                match data.get(&r.key) {
                    Some(v) => v.clone(),
                    None if optional => continue,
                    None => {
                        return Err(EnvError::SecretKeyNotFound {
                            key: r.key.clone(),
                            namespace: ns.into(),
                            name: r.name.clone(),
                        })
                    }
                }
            } else {
                String::new()
            }
        } else {
            String::new()
        };
        env.set(var.name.clone(), resolved);
    }

    let mut out = env.into_vec();
    let defined: BTreeSet<String> = out.iter().map(|(k, _)| k.clone()).collect();
    out.extend(service_env.into_iter().filter(|(k, _)| !defined.contains(k)));
    Ok(out)
}

/// A referenced object's data: `Ok(None)` when it is missing and the
/// reference optional; the not-found error (`not_found(name)`) otherwise.
fn lookup_object<'a>(
    objects: &'a BTreeMap<String, Fetched>,
    name: &str,
    optional: bool,
    not_found: fn(String) -> EnvError,
) -> Result<Option<&'a BTreeMap<String, String>>, EnvError> {
    match objects.get(name) {
        Some(Fetched::Found(data)) => Ok(Some(data)),
        Some(Fetched::Failed(msg)) => Err(EnvError::Other(msg.clone())),
        Some(Fetched::NotFound) | None if optional => Ok(None),
        Some(Fetched::NotFound) | None => Err(not_found(name.to_string())),
    }
}

/// Variables in first-definition order; redefinition replaces the value.
#[derive(Default)]
struct OrderedEnv {
    order: Vec<String>,
    values: BTreeMap<String, String>,
}

impl OrderedEnv {
    fn set(&mut self, k: String, v: String) {
        if self.values.insert(k.clone(), v).is_none() {
            self.order.push(k);
        }
    }
    fn get(&self, k: &str) -> Option<&str> {
        self.values.get(k).map(String::as_str)
    }
    fn into_vec(mut self) -> Vec<(String, String)> {
        self.order.into_iter().map(|k| (k.clone(), self.values.remove(&k).unwrap_or_default())).collect()
    }
}

/// Upstream's `$(VAR)` expansion (`expansion.Expand` with
/// `MappingFuncFor`): `$(NAME)` is replaced by `lookup(NAME)`, or left as
/// `$(NAME)` when undefined; `$$` is an escaped `$`; a `$` followed by
/// anything else, an unterminated `$(`, or a trailing `$` is kept as is.
pub fn expand<'a>(input: &str, lookup: impl Fn(&str) -> Option<&'a str>) -> String {
    let b = input.as_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(b.len());
    let mut checkpoint = 0;
    let mut cursor = 0;
    while cursor < b.len() {
        if b[cursor] == b'$' && cursor + 1 < b.len() {
            out.extend_from_slice(&b[checkpoint..cursor]);
            let rest = &b[cursor + 1..];
            let advance = match rest[0] {
                b'$' => {
                    out.push(b'$');
                    1
                }
                b'(' => match rest.iter().position(|&c| c == b')') {
                    Some(close) => {
                        let name = &input[cursor + 2..cursor + 1 + close];
                        match lookup(name) {
                            Some(v) => out.extend_from_slice(v.as_bytes()),
                            None => out.extend_from_slice(format!("$({name})").as_bytes()),
                        }
                        close + 1
                    }
                    None => {
                        out.extend_from_slice(b"$(");
                        1
                    }
                },
                other => {
                    out.extend_from_slice(&[b'$', other]);
                    1
                }
            };
            cursor += advance;
            checkpoint = cursor + 1;
        }
        cursor += 1;
    }
    out.extend_from_slice(&b[checkpoint.min(b.len())..]);
    // Only whole UTF-8 runs of the input were copied, in order.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// The service link variables of a pod in namespace `ns` (upstream's
/// `getServiceEnvVarMap` + `envvars.FromServices`): services with a
/// ClusterIP (not empty, not `None`) of the namespace when
/// `enable_service_links`, and `default/kubernetes` always; a service of
/// the pod's namespace named `kubernetes` replaces the master one.
/// Sorted by variable name.
pub fn service_env_map(ns: &str, enable_service_links: bool, services: &[Service]) -> BTreeMap<String, String> {
    let mut by_name: BTreeMap<String, &Service> = BTreeMap::new();
    for svc in services {
        let ip = svc.spec.as_ref().and_then(|s| s.cluster_ip.as_deref()).unwrap_or("");
        if ip.is_empty() || ip == "None" {
            continue;
        }
        let name = svc.metadata.name.clone().unwrap_or_default();
        let svc_ns = svc.metadata.namespace.as_deref().unwrap_or("");
        if svc_ns == MASTER_NAMESPACE && name == MASTER_SERVICE {
            by_name.entry(name).or_insert(svc);
        } else if svc_ns == ns && enable_service_links {
            by_name.insert(name, svc);
        }
    }
    by_name.values().flat_map(|s| service_env_vars(s)).collect()
}

/// The variables of one service (upstream's `envvars.FromServices`):
/// `<NAME>_SERVICE_HOST`, `<NAME>_SERVICE_PORT` (first port),
/// `<NAME>_SERVICE_PORT_<PORTNAME>` per named port, and the Docker link
/// variables `<NAME>_PORT=<proto>://<ip>:<port>` (first port) and
/// `<NAME>_PORT_<port>_<PROTO>{,_PROTO,_PORT,_ADDR}` per port. `<NAME>` is
/// the service name upper-cased with `-` turned into `_`.
pub fn service_env_vars(svc: &Service) -> Vec<(String, String)> {
    let Some(spec) = svc.spec.as_ref() else { return Vec::new() };
    let ip = spec.cluster_ip.clone().unwrap_or_default();
    let prefix = env_name(svc.metadata.name.as_deref().unwrap_or(""));
    let ports = spec.ports.as_deref().unwrap_or(&[]);
    let mut out = vec![(format!("{prefix}_SERVICE_HOST"), ip.clone())];
    if let Some(first) = ports.first() {
        out.push((format!("{prefix}_SERVICE_PORT"), first.port.to_string()));
    }
    for p in ports {
        if let Some(n) = p.name.as_deref().filter(|n| !n.is_empty()) {
            out.push((format!("{prefix}_SERVICE_PORT_{}", env_name(n)), p.port.to_string()));
        }
    }
    for (i, p) in ports.iter().enumerate() {
        let proto = p.protocol.as_deref().filter(|p| !p.is_empty()).unwrap_or("TCP");
        let host_port = match ip.parse::<IpAddr>() {
            Ok(IpAddr::V6(_)) => format!("[{ip}]:{}", p.port),
            _ => format!("{ip}:{}", p.port),
        };
        let url = format!("{}://{host_port}", proto.to_lowercase());
        if i == 0 {
            out.push((format!("{prefix}_PORT"), url.clone()));
        }
        let port_prefix = format!("{prefix}_PORT_{}_{}", p.port, proto.to_uppercase());
        out.push((port_prefix.clone(), url));
        out.push((format!("{port_prefix}_PROTO"), proto.to_lowercase()));
        out.push((format!("{port_prefix}_PORT"), p.port.to_string()));
        out.push((format!("{port_prefix}_ADDR"), ip.clone()));
    }
    out
}

fn env_name(s: &str) -> String {
    s.replace('-', "_").to_uppercase()
}

/// Upstream's `fieldpath.SplitMaybeSubscriptedPath`: `metadata.labels['k']`
/// → `("metadata.labels", "k")`.
fn split_subscript(path: &str) -> Option<(&str, &str)> {
    let s = path.strip_suffix("']")?;
    let (p, sub) = s.split_once("['")?;
    (!p.is_empty()).then_some((p, sub))
}

/// The value of a `fieldRef` (upstream's `podFieldSelectorRuntimeValue`,
/// `ConvertDownwardAPIFieldLabel` and `ExtractFieldPathAsString`).
/// `metadata.labels`/`metadata.annotations` without a subscript are all
/// entries as sorted `key="value"` lines.
pub fn field_ref_value(pod: &Pod, api_version: Option<&str>, path: &str, ctx: &EnvContext) -> Result<String, EnvError> {
    let version = api_version.filter(|v| !v.is_empty()).unwrap_or("v1");
    if version != "v1" {
        return Err(EnvError::Other(format!("unsupported pod version: {version}")));
    }
    let meta = &pod.metadata;
    if let Some((p, sub)) = split_subscript(path) {
        let map = match p {
            "metadata.annotations" => {
                let errs = rkube_apimachinery::validation::names::is_qualified_name(&sub.to_lowercase());
                if !errs.is_empty() {
                    return Err(EnvError::Other(format!("invalid key subscript in {path}: {}", errs.join(";"))));
                }
                &meta.annotations
            }
            "metadata.labels" => {
                let errs = rkube_apimachinery::validation::names::is_qualified_name(sub);
                if !errs.is_empty() {
                    return Err(EnvError::Other(format!("invalid key subscript in {path}: {}", errs.join(";"))));
                }
                &meta.labels
            }
            _ => return Err(EnvError::Other(format!("field label does not support subscript: {path}"))),
        };
        return Ok(map.as_ref().and_then(|m| m.get(sub)).cloned().unwrap_or_default());
    }
    let spec = pod.spec.as_ref();
    let pod_ips = sort_pod_ips(&ctx.pod_ips, ctx.host_ips.first());
    let host_ips = || {
        if ctx.host_ips.is_empty() {
            Err(EnvError::Other("failed to get host IPs: no node IPs known".into()))
        } else {
            Ok(ctx.host_ips.iter().map(|i| i.to_string()).collect::<Vec<_>>())
        }
    };
    Ok(match path {
        "spec.nodeName" | "spec.host" => spec.and_then(|s| s.node_name.clone()).unwrap_or_default(),
        "spec.serviceAccountName" => spec.and_then(|s| s.service_account_name.clone()).unwrap_or_default(),
        "status.hostIP" => host_ips()?.swap_remove(0),
        "status.hostIPs" => host_ips()?.join(","),
        "status.podIP" => pod_ips.first().cloned().unwrap_or_default(),
        "status.podIPs" => pod_ips.join(","),
        "metadata.annotations" => format_map(meta.annotations.as_ref()),
        "metadata.labels" => format_map(meta.labels.as_ref()),
        "metadata.name" => meta.name.clone().unwrap_or_default(),
        "metadata.namespace" => meta.namespace.clone().unwrap_or_default(),
        "metadata.uid" => meta.uid.clone().unwrap_or_default(),
        "spec.restartPolicy" | "spec.schedulerName" | "status.phase" => {
            return Err(EnvError::Other(format!("unsupported fieldPath: {path}")))
        }
        _ => return Err(EnvError::Other(format!("field label not supported: {path}"))),
    })
}

/// Upstream's `sortPodIPs`: the first pod IP of the node's primary family
/// (IPv4 when the node IP is unknown), then the first of the other family.
pub fn sort_pod_ips(pod_ips: &[String], node_primary: Option<&IpAddr>) -> Vec<String> {
    let primary_v6 = matches!(node_primary, Some(IpAddr::V6(_)));
    let family = |s: &String| s.parse::<IpAddr>().ok().map(|ip| ip.is_ipv6());
    let mut out = Vec::new();
    out.extend(pod_ips.iter().find(|s| family(s) == Some(primary_v6)).cloned());
    out.extend(pod_ips.iter().find(|s| family(s) == Some(!primary_v6)).cloned());
    out
}

/// Upstream's `fieldpath.FormatMap`: sorted `key="value"` lines, the value
/// quoted like Go's `%q`.
fn format_map(m: Option<&BTreeMap<String, String>>) -> String {
    m.into_iter().flatten().map(|(k, v)| format!("{k}={}", go_quote(v))).collect::<Vec<_>>().join("\n")
}

/// Go's `strconv.Quote` for the characters labels and annotations carry.
fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\x07' => out.push_str("\\a"),
            '\x08' => out.push_str("\\b"),
            '\x0c' => out.push_str("\\f"),
            '\x0b' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The value of a `resourceFieldRef` (upstream's
/// `containerResourceRuntimeValue` after `defaultPodLimitsForDownwardAPI`):
/// cpu as `ceil(milli / divisor milli)`, memory, ephemeral-storage and
/// hugepages as `ceil(bytes / divisor)`; divisor unset or 0 means 1. An
/// unset (or zero) cpu/memory/ephemeral-storage limit resolves to the
/// node's allocatable. `containerName` selects another container of the pod.
pub fn resource_field_value(
    pod: &Pod,
    container: &Container,
    sel: &ResourceFieldSelector,
    alloc: &NodeAllocatable,
) -> Result<String, EnvError> {
    let target = match sel.container_name.as_deref().filter(|n| !n.is_empty()) {
        None => container,
        Some(name) => pod
            .spec
            .as_ref()
            .and_then(|s| s.containers.iter().chain(s.init_containers.iter().flatten()).find(|c| c.name == name))
            .ok_or_else(|| EnvError::Other(format!("container {name} not found")))?,
    };
    let divisor = sel.divisor.as_ref().map(|q| q.0.as_str()).unwrap_or("0");
    let res = target.resources.as_ref();
    let (kind, name) = sel
        .resource
        .split_once('.')
        .filter(|(k, _)| *k == "limits" || *k == "requests")
        .ok_or_else(|| EnvError::Other(format!("unsupported container resource : {}", sel.resource)))?;
    let list =
        if kind == "limits" { res.and_then(|r| r.limits.as_ref()) } else { res.and_then(|r| r.requests.as_ref()) };
    let raw = list.and_then(|l| l.get(name)).map(|q| q.0.as_str());
    let is_cpu = name == "cpu";
    if !matches!(name, "cpu" | "memory" | "ephemeral-storage") && !name.starts_with("hugepages-") {
        return Err(EnvError::Other(format!("unsupported container resource : {}", sel.resource)));
    }
    let parse = |t: &str| if is_cpu { quantity::milli_value(t) } else { quantity::value(t) };
    let mut amount = raw.and_then(parse).unwrap_or(0);
    if kind == "limits" && amount == 0 {
        amount = match name {
            "cpu" => alloc.cpu_milli,
            "memory" => alloc.memory_bytes,
            "ephemeral-storage" => alloc.ephemeral_storage_bytes,
            _ => 0,
        } as i128;
    }
    let mut div = parse(divisor).unwrap_or(0);
    if div == 0 {
        div = if is_cpu { 1000 } else { 1 };
    }
    // ceil for non-negative amounts, as math.Ceil on the float quotient.
    let v = if amount >= 0 { (amount + div - 1) / div } else { amount / div };
    Ok(v.to_string())
}

#[cfg(test)]
#[path = "env_tests.rs"]
mod tests;
