//! Printers for core/v1 kinds other than pods and volumes: Service,
//! Endpoints, Node, Namespace, Event (both APIs), Secret, ServiceAccount,
//! ConfigMap, ResourceQuota and ComponentStatus (upstream `printService`,
//! `printEndpoints`, `printNode`, `printNamespace`, `printEvent`, …).

use std::collections::BTreeSet;

use jiff::Timestamp;
use serde_json::{json, Value};

use super::{age, arr, cell, col, format_labels, int, name, or_none, qty, s, since, wide, Column, AGE, NAME, NAME_DOC};

/// Service columns: Name, Type, Cluster-IP, External-IP, Port(s), Age | Selector.
pub const SERVICE_COLUMNS: &[Column] = &[
    NAME,
    col("Type", "string", "type determines how the Service is exposed. Defaults to ClusterIP. Valid options are ExternalName, ClusterIP, NodePort, and LoadBalancer. \"ClusterIP\" allocates a cluster-internal IP address for load-balancing to endpoints. Endpoints are determined by the selector or if that is not specified, by manual construction of an Endpoints object or EndpointSlice objects. If clusterIP is \"None\", no virtual IP is allocated and the endpoints are published as a set of endpoints rather than a virtual IP. \"NodePort\" builds on ClusterIP and allocates a port on every node which routes to the same endpoints as the clusterIP. \"LoadBalancer\" builds on NodePort and creates an external load-balancer (if supported in the current cloud) which routes to the same endpoints as the clusterIP. \"ExternalName\" aliases this service to the specified externalName. Several other fields do not apply to ExternalName services. More info: https://kubernetes.io/docs/concepts/services-networking/service/#publishing-services-service-types"),
    col("Cluster-IP", "string", "clusterIP is the IP address of the service and is usually assigned randomly. If an address is specified manually, is in-range (as per system configuration), and is not in use, it will be allocated to the service; otherwise creation of the service will fail. This field may not be changed through updates unless the type field is also being changed to ExternalName (which requires this field to be blank) or the type field is being changed from ExternalName (in which case this field may optionally be specified, as describe above).  Valid values are \"None\", empty string (\"\"), or a valid IP address. Setting this to \"None\" makes a \"headless service\" (no virtual IP), which is useful when direct endpoint connections are preferred and proxying is not required.  Only applies to types ClusterIP, NodePort, and LoadBalancer. If this field is specified when creating a Service of type ExternalName, creation will fail. This field will be wiped when updating a Service to type ExternalName. More info: https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies"),
    col("External-IP", "string", "externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this service.  These IPs are not managed by Kubernetes.  The user is responsible for ensuring that traffic arrives at a node with this IP.  A common example is external load-balancers that are not part of the Kubernetes system."),
    col("Port(s)", "string", "The list of ports that are exposed by this service. More info: https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies"),
    AGE,
    wide("Selector", "string", "Route service traffic to pods with label keys and values matching this selector. If empty or not present, the service is assumed to have an external process managing its endpoints, which Kubernetes will not modify. Only applies to types ClusterIP, NodePort, and LoadBalancer. Ignored if type is ExternalName. More info: https://kubernetes.io/docs/concepts/services-networking/service/"),
];

/// `loadBalancerStatusStringer` (wide, as the server renders it): the
/// sorted, de-duplicated ingress IPs or hostnames.
pub(crate) fn load_balancer_ingress(ingress: &Value) -> String {
    let set: BTreeSet<&str> = arr(ingress)
        .iter()
        .filter_map(|i| [s(&i["ip"]), s(&i["hostname"])].into_iter().find(|x| !x.is_empty()))
        .collect();
    set.into_iter().collect::<Vec<_>>().join(",")
}

/// `getServiceExternalIP`: external IPs for ClusterIP/NodePort, load
/// balancer ingress (or `<pending>`) for LoadBalancer, the external name
/// for ExternalName.
fn service_external_ip(svc: &Value, ty: &str) -> String {
    let external: Vec<&str> = arr(&svc["spec"]["externalIPs"]).iter().map(s).collect();
    match ty {
        "ClusterIP" | "NodePort" => {
            if external.is_empty() {
                "<none>".into()
            } else {
                external.join(",")
            }
        }
        "LoadBalancer" => {
            let lb = load_balancer_ingress(&svc["status"]["loadBalancer"]["ingress"]);
            if !external.is_empty() {
                let mut all: Vec<&str> = if lb.is_empty() { vec![] } else { lb.split(',').collect() };
                all.extend(external);
                all.join(",")
            } else if !lb.is_empty() {
                lb
            } else {
                "<pending>".into()
            }
        }
        "ExternalName" => s(&svc["spec"]["externalName"]).to_string(),
        _ => "<unknown>".into(),
    }
}

/// `makePortString`: `port/proto` or `port:nodePort/proto`, comma-joined.
fn service_ports(ports: &Value) -> String {
    arr(ports)
        .iter()
        .map(|p| {
            let proto = p["protocol"].as_str().unwrap_or("TCP");
            match int(&p["nodePort"]) {
                0 => format!("{}/{proto}", int(&p["port"])),
                np => format!("{}:{np}/{proto}", int(&p["port"])),
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// `printService`. A missing `spec.type` is printed as its default, ClusterIP.
pub fn service_row(svc: &Value, now: Timestamp) -> Vec<Value> {
    let spec = &svc["spec"];
    let ty = spec["type"].as_str().filter(|t| !t.is_empty()).unwrap_or("ClusterIP");
    let cluster_ip = arr(&spec["clusterIPs"]).first().map(s).filter(|x| !x.is_empty()).unwrap_or(s(&spec["clusterIP"]));
    vec![
        name(svc),
        cell(ty),
        cell(or_none(cluster_ip)),
        cell(service_external_ip(svc, ty)),
        cell(or_none(&service_ports(&spec["ports"]))),
        age(svc, now),
        cell(format_labels(&spec["selector"])),
    ]
}

/// Endpoints columns: Name, Endpoints, Age.
pub const ENDPOINTS_COLUMNS: &[Column] = &[
    NAME,
    col("Endpoints", "string", "The set of all endpoints is the union of all subsets. Addresses are placed into subsets according to the IPs they share. A single address with multiple ports, some of which are ready and some of which are not (because they come from different containers) will result in the address being displayed in different subsets for the different ports. No address will appear in both Addresses and NotReadyAddresses in the same subset. Sets of addresses and ports that comprise a service."),
    AGE,
];

/// `net.JoinHostPort`.
fn join_host_port(host: &str, port: i64) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// `formatEndpoints(endpoints, nil)`: up to three `ip:port` entries, then
/// `+ N more...`; `<none>` without subsets.
fn format_endpoints(subsets: &Value) -> String {
    let subsets = arr(subsets);
    if subsets.is_empty() {
        return "<none>".into();
    }
    let max = 3;
    let (mut list, mut count, mut more) = (Vec::new(), 0, false);
    for ss in subsets {
        let addrs = arr(&ss["addresses"]);
        let ports = arr(&ss["ports"]);
        if ports.is_empty() {
            count += addrs.len();
            for a in addrs {
                if list.len() == max {
                    more = true;
                    break;
                }
                list.push(s(&a["ip"]).to_string());
            }
            continue;
        }
        for p in ports {
            count += addrs.len();
            for a in addrs {
                if list.len() == max {
                    more = true;
                    break;
                }
                list.push(join_host_port(s(&a["ip"]), int(&p["port"])));
            }
        }
    }
    let ret = list.join(",");
    if more {
        format!("{ret} + {} more...", count - max)
    } else {
        ret
    }
}

/// `printEndpoints`.
pub fn endpoints_row(obj: &Value, now: Timestamp) -> Vec<Value> {
    vec![name(obj), cell(format_endpoints(&obj["subsets"])), age(obj, now)]
}

/// Node columns: Name, Status, Roles, Age, Version | Internal-IP,
/// External-IP, OS-Image, Kernel-Version, Container-Runtime.
pub const NODE_COLUMNS: &[Column] = &[
    NAME,
    col("Status", "string", "The status of the node"),
    col("Roles", "string", "The roles of the node"),
    AGE,
    col("Version", "string", "Kubelet Version reported by the node."),
    wide("Internal-IP", "string", "List of addresses reachable to the node. Queried from cloud provider, if available. More info: https://kubernetes.io/docs/reference/node/node-status/#addresses Note: This field is declared as mergeable, but the merge key is not sufficiently unique, which can cause data corruption when it is merged. Callers should instead use a full-replacement patch. See https://pr.k8s.io/79391 for an example. Consumers should assume that addresses can change during the lifetime of a Node. However, there are some exceptions where this may not be possible, such as Pods that inherit a Node's address in its own status or consumers of the downward API (status.hostIP)."),
    wide("External-IP", "string", "List of addresses reachable to the node. Queried from cloud provider, if available. More info: https://kubernetes.io/docs/reference/node/node-status/#addresses Note: This field is declared as mergeable, but the merge key is not sufficiently unique, which can cause data corruption when it is merged. Callers should instead use a full-replacement patch. See https://pr.k8s.io/79391 for an example. Consumers should assume that addresses can change during the lifetime of a Node. However, there are some exceptions where this may not be possible, such as Pods that inherit a Node's address in its own status or consumers of the downward API (status.hostIP)."),
    wide("OS-Image", "string", "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy))."),
    wide("Kernel-Version", "string", "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64)."),
    wide("Container-Runtime", "string", "ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2)."),
];

/// `findNodeRoles`: `node-role.kubernetes.io/<role>` keys and the value of
/// `kubernetes.io/role`, sorted.
fn node_roles(labels: &Value) -> String {
    let mut roles = BTreeSet::new();
    for (k, v) in labels.as_object().into_iter().flatten() {
        if let Some(role) = k.strip_prefix("node-role.kubernetes.io/") {
            if !role.is_empty() {
                roles.insert(role.to_string());
            }
        } else if k == "kubernetes.io/role" && !s(v).is_empty() {
            roles.insert(s(v).to_string());
        }
    }
    or_none(&roles.into_iter().collect::<Vec<_>>().join(","))
}

/// `printNode`: STATUS from the Ready condition (`Ready`, `NotReady`,
/// `Unknown` when absent) plus `SchedulingDisabled` when unschedulable.
pub fn node_row(node: &Value, now: Timestamp) -> Vec<Value> {
    let mut status: Vec<String> = Vec::new();
    if let Some(c) = arr(&node["status"]["conditions"]).iter().rev().find(|c| s(&c["type"]) == "Ready") {
        status.push(if s(&c["status"]) == "True" { "Ready".into() } else { "NotReady".into() });
    }
    if status.is_empty() {
        status.push("Unknown".into());
    }
    if node["spec"]["unschedulable"].as_bool() == Some(true) {
        status.push("SchedulingDisabled".into());
    }
    let info = &node["status"]["nodeInfo"];
    let address = |ty: &str| {
        arr(&node["status"]["addresses"])
            .iter()
            .find(|a| s(&a["type"]) == ty)
            .map_or("<none>".to_string(), |a| s(&a["address"]).to_string())
    };
    let unknown = |v: &Value| if s(v).is_empty() { "<unknown>".to_string() } else { s(v).to_string() };
    vec![
        name(node),
        cell(status.join(",")),
        cell(node_roles(&node["metadata"]["labels"])),
        age(node, now),
        cell(s(&info["kubeletVersion"])),
        cell(address("InternalIP")),
        cell(address("ExternalIP")),
        cell(unknown(&info["osImage"])),
        cell(unknown(&info["kernelVersion"])),
        cell(unknown(&info["containerRuntimeVersion"])),
    ]
}

/// Namespace columns: Name, Status, Age.
pub const NAMESPACE_COLUMNS: &[Column] = &[NAME, col("Status", "string", "The status of the namespace"), AGE];

/// `printNamespace`: the phase.
pub fn namespace_row(obj: &Value, now: Timestamp) -> Vec<Value> {
    vec![name(obj), cell(s(&obj["status"]["phase"])), age(obj, now)]
}

/// Event columns: Last Seen, Type, Reason, Object, Message | Subobject,
/// Source, First Seen, Count, Name (upstream's order, Subobject and
/// Source wide-only in between).
pub const EVENT_COLUMNS: &[Column] = &[
    col("Last Seen", "string", "The time at which the most recent occurrence of this event was recorded."),
    col("Type", "string", "Type of this event (Normal, Warning), new types could be added in the future"),
    col("Reason", "string", "This should be a short, machine understandable string that gives the reason for the transition into the object's current status."),
    col("Object", "string", "The object that this event is about."),
    wide("Subobject", "string", "If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement, such as desiredState.manifest.containers[2]. For example, if the object reference is to a container within a pod, this would take on a value like: \"spec.containers{name}\" (where \"name\" refers to the name of the container that triggered the event) or if no container name is specified \"spec.containers[2]\" (container with index 2 in this pod). This syntax is chosen only to have some well-defined way of referencing a part of an object."),
    wide("Source", "string", "The component reporting this event. Should be a short machine understandable string."),
    col("Message", "string", "A human-readable description of the status of this operation."),
    wide("First Seen", "string", "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)"),
    wide("Count", "string", "The number of times this event has occurred."),
    super::col_fmt("Name", "string", "name", NAME_DOC, 1),
];

/// `printEvent` over core/v1 and events.k8s.io/v1 field names: LAST SEEN
/// falls back to the first time (or eventTime), series override time and
/// count, singleton events count 1, OBJECT is `kind/name` lower-cased.
pub fn event_row(ev: &Value, now: Timestamp) -> Vec<Value> {
    let pick = |core: &str, new: &str| if ev.get(core).is_some() { &ev[core] } else { &ev[new] };
    let first_ts = pick("firstTimestamp", "deprecatedFirstTimestamp");
    let last_ts = pick("lastTimestamp", "deprecatedLastTimestamp");
    let first = if super::timestamp(first_ts).is_some() { since(first_ts, now) } else { since(&ev["eventTime"], now) };
    let mut last = if super::timestamp(last_ts).is_some() { since(last_ts, now) } else { first.clone() };
    let mut count = int(pick("count", "deprecatedCount"));
    if ev["series"].is_object() {
        last = since(&ev["series"]["lastObservedTime"], now);
        count = int(&ev["series"]["count"]);
    } else if count == 0 {
        count = 1;
    }
    let obj = pick("involvedObject", "regarding");
    let kind = s(&obj["kind"]).to_lowercase();
    let target = if s(&obj["name"]).is_empty() { kind } else { format!("{kind}/{}", s(&obj["name"])) };
    let source = pick("source", "deprecatedSource");
    let first_non_empty = |a: &str, b: &str| if a.is_empty() { b.to_string() } else { a.to_string() };
    let component = first_non_empty(s(&source["component"]), s(pick("reportingComponent", "reportingController")));
    let instance = first_non_empty(s(&source["host"]), s(&ev["reportingInstance"]));
    let source = if instance.is_empty() { component } else { format!("{component}, {instance}") };
    vec![
        cell(last),
        cell(s(&ev["type"])),
        cell(s(&ev["reason"])),
        cell(target),
        cell(s(&obj["fieldPath"])),
        cell(source),
        cell(s(pick("message", "note")).trim()),
        cell(first),
        json!(count),
        name(ev),
    ]
}

/// Secret columns: Name, Type, Data, Age.
pub const SECRET_COLUMNS: &[Column] = &[
    NAME,
    col("Type", "string", "Used to facilitate programmatic handling of secret data. More info: https://kubernetes.io/docs/concepts/configuration/secret/#secret-types"),
    col("Data", "string", "Data contains the secret data. Each key must consist of alphanumeric characters, '-', '_' or '.'. The serialized form of the secret data is a base64 encoded string, representing the arbitrary (possibly non-string) data value here. Described in https://tools.ietf.org/html/rfc4648#section-4"),
    AGE,
];

/// Number of keys of the object at `v`.
fn len(v: &Value) -> i64 {
    v.as_object().map_or(0, |m| m.len() as i64)
}

/// `printSecret`: type and number of data keys (`stringData` is merged
/// into `data` on write).
pub fn secret_row(obj: &Value, now: Timestamp) -> Vec<Value> {
    let ty = obj["type"].as_str().unwrap_or("Opaque");
    vec![name(obj), cell(ty), json!(len(&obj["data"])), age(obj, now)]
}

/// ServiceAccount columns: Name, Secrets, Age.
pub const SERVICE_ACCOUNT_COLUMNS: &[Column] = &[
    NAME,
    col("Secrets", "string", "Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are allowed to use. Pods are only limited to this list if this service account has a \"kubernetes.io/enforce-mountable-secrets\" annotation set to \"true\". The \"kubernetes.io/enforce-mountable-secrets\" annotation is deprecated since v1.32. Prefer separate namespaces to isolate access to mounted secrets. This field should not be used to find auto-generated service account token secrets for use outside of pods. Instead, tokens can be requested directly using the TokenRequest API, or service account token secrets can be manually created. More info: https://kubernetes.io/docs/concepts/configuration/secret"),
    AGE,
];

/// `printServiceAccount`: the number of listed secrets.
pub fn service_account_row(obj: &Value, now: Timestamp) -> Vec<Value> {
    vec![name(obj), json!(arr(&obj["secrets"]).len()), age(obj, now)]
}

/// ConfigMap columns: Name, Data, Age.
pub const CONFIG_MAP_COLUMNS: &[Column] = &[
    NAME,
    col("Data", "string", "Data contains the configuration data. Each key must consist of alphanumeric characters, '-', '_' or '.'. Values with non-UTF-8 byte sequences must use the BinaryData field. The keys stored in Data must not overlap with the keys in the BinaryData field, this is enforced during validation process."),
    AGE,
];

/// `printConfigMap`: `len(data) + len(binaryData)`.
pub fn config_map_row(obj: &Value, now: Timestamp) -> Vec<Value> {
    vec![name(obj), json!(len(&obj["data"]) + len(&obj["binaryData"])), age(obj, now)]
}

/// ResourceQuota columns: Name, Request, Limit, Age.
pub const RESOURCE_QUOTA_COLUMNS: &[Column] = &[
    NAME,
    col("Request", "string", "Request represents a minimum amount of cpu/memory that a container may consume."),
    col("Limit", "string", "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node."),
    AGE,
];

/// `printResourceQuota`: `resource: used/hard` for each hard limit, sorted,
/// `limits.*` resources in the Limit column.
pub fn resource_quota_row(obj: &Value, now: Timestamp) -> Vec<Value> {
    let hard = &obj["status"]["hard"];
    let used = &obj["status"]["used"];
    let mut keys: Vec<&String> = hard.as_object().map(|m| m.keys().collect()).unwrap_or_default();
    keys.sort();
    let (mut request, mut limit) = (Vec::new(), Vec::new());
    for k in keys {
        let used_q = if used[k.as_str()].is_string() { qty(&used[k.as_str()]) } else { "0".into() };
        let entry = format!("{k}: {used_q}/{}", qty(&hard[k.as_str()]));
        let pieces: Vec<&str> = k.split('.').collect();
        if pieces.len() > 1 && pieces[0] == "limits" {
            limit.push(entry);
        } else {
            request.push(entry);
        }
    }
    vec![name(obj), cell(request.join(", ")), cell(limit.join(", ")), age(obj, now)]
}

/// ComponentStatus columns: Name, Status, Message, Error.
pub const COMPONENT_STATUS_COLUMNS: &[Column] = &[
    NAME,
    col("Status", "string", "Status of the component conditions"),
    col("Message", "string", "Message of the component conditions"),
    col("Error", "string", "Error of the component conditions"),
];

/// `printComponentStatus`: Healthy/Unhealthy from the Healthy condition.
pub fn component_status_row(obj: &Value, _now: Timestamp) -> Vec<Value> {
    let (mut status, mut message, mut error) = ("Unknown", "", "");
    if let Some(c) = arr(&obj["conditions"]).iter().find(|c| s(&c["type"]) == "Healthy") {
        status = if s(&c["status"]) == "True" { "Healthy" } else { "Unhealthy" };
        message = s(&c["message"]);
        error = s(&c["error"]);
    }
    vec![name(obj), cell(status), cell(message), cell(error)]
}

#[cfg(test)]
mod tests {
    use super::super::test_util::{ago, now};
    use super::*;

    #[test]
    fn services_of_each_type() {
        let np = json!({"metadata": {"name": "web", "creationTimestamp": ago(30)}, "spec": {"type": "NodePort",
            "clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"], "selector": {"app": "web"},
            "ports": [{"port": 80, "nodePort": 30080, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}]}});
        assert_eq!(
            service_row(&np, now()),
            vec![
                json!("web"),
                json!("NodePort"),
                json!("10.96.0.10"),
                json!("<none>"),
                json!("80:30080/TCP,53/UDP"),
                json!("30s"),
                json!("app=web")
            ]
        );
        let headless = json!({"metadata": {"name": "h"}, "spec": {"clusterIP": "None"}});
        assert_eq!(
            &service_row(&headless, now())[1..5],
            &[json!("ClusterIP"), json!("None"), json!("<none>"), json!("<none>")]
        );
        let lb = json!({"metadata": {"name": "lb"}, "spec": {"type": "LoadBalancer", "ports": [{"port": 443}]}});
        assert_eq!(service_row(&lb, now())[3], json!("<pending>"));
        let mut lb2 = lb.clone();
        lb2["status"] = json!({"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}, {"hostname": "a.example"}]}});
        assert_eq!(service_row(&lb2, now())[3], json!("1.2.3.4,a.example"));
        let ext = json!({"metadata": {"name": "e"}, "spec": {"type": "ExternalName", "externalName": "db.example"}});
        assert_eq!(service_row(&ext, now())[3], json!("db.example"));
    }

    #[test]
    fn endpoints_list_three_then_more() {
        let ep = json!({"metadata": {"name": "e"}, "subsets": [{"addresses": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"},
            {"ip": "10.0.0.3"}, {"ip": "fd00::4"}], "ports": [{"port": 80}]}]});
        assert_eq!(endpoints_row(&ep, now())[1], json!("10.0.0.1:80,10.0.0.2:80,10.0.0.3:80 + 1 more..."));
        assert_eq!(endpoints_row(&json!({"metadata": {"name": "e"}}), now())[1], json!("<none>"));
    }

    #[test]
    fn nodes_status_roles_and_wide_cells() {
        let node = json!({"metadata": {"name": "n1", "creationTimestamp": ago(2 * 86400 + 3 * 3600),
            "labels": {"node-role.kubernetes.io/control-plane": "", "kubernetes.io/role": "worker"}},
            "spec": {"unschedulable": true},
            "status": {"conditions": [{"type": "Ready", "status": "True"}],
              "addresses": [{"type": "InternalIP", "address": "192.168.1.2"}],
              "nodeInfo": {"kubeletVersion": "v1.33.0", "osImage": "Debian", "kernelVersion": "6.1", "containerRuntimeVersion": "rkube://0.1"}}});
        assert_eq!(
            node_row(&node, now()),
            vec![
                json!("n1"),
                json!("Ready,SchedulingDisabled"),
                json!("control-plane,worker"),
                json!("2d3h"),
                json!("v1.33.0"),
                json!("192.168.1.2"),
                json!("<none>"),
                json!("Debian"),
                json!("6.1"),
                json!("rkube://0.1")
            ]
        );
        let bare = json!({"metadata": {"name": "n2"}});
        let cells = node_row(&bare, now());
        assert_eq!(&cells[1..3], &[json!("Unknown"), json!("<none>")]);
        assert_eq!(cells[7], json!("<unknown>"));
        let not_ready =
            json!({"metadata": {"name": "n3"}, "status": {"conditions": [{"type": "Ready", "status": "Unknown"}]}});
        assert_eq!(node_row(&not_ready, now())[1], json!("NotReady"));
    }

    #[test]
    fn core_and_events_api_events() {
        let ev = json!({"metadata": {"name": "web.1"}, "type": "Normal", "reason": "Scheduled", "message": " placed \n",
            "involvedObject": {"kind": "Pod", "name": "web", "fieldPath": "spec.containers{a}"},
            "source": {"component": "default-scheduler"}, "firstTimestamp": ago(600), "lastTimestamp": ago(65), "count": 4});
        assert_eq!(
            event_row(&ev, now()),
            vec![
                json!("65s"),
                json!("Normal"),
                json!("Scheduled"),
                json!("pod/web"),
                json!("spec.containers{a}"),
                json!("default-scheduler"),
                json!("placed"),
                json!("10m"),
                json!(4),
                json!("web.1")
            ]
        );
        let new = json!({"metadata": {"name": "x.2"}, "type": "Warning", "reason": "Failed", "note": "boom",
            "regarding": {"kind": "Node"}, "eventTime": "2025-12-31T23:59:00.000000Z",
            "reportingController": "kubelet", "reportingInstance": "n1"});
        let cells = event_row(&new, now());
        assert_eq!(cells[0], json!("60s"));
        assert_eq!(cells[3], json!("node"));
        assert_eq!(cells[5], json!("kubelet, n1"));
        assert_eq!(cells[8], json!(1));
    }

    #[test]
    fn data_counts_and_quotas() {
        let cm = json!({"metadata": {"name": "c"}, "data": {"a": "1", "b": "2"}, "binaryData": {"c": "AA=="}});
        assert_eq!(config_map_row(&cm, now())[1], json!(3));
        let sec =
            json!({"metadata": {"name": "s"}, "type": "kubernetes.io/tls", "data": {"tls.crt": "", "tls.key": ""}});
        assert_eq!(&secret_row(&sec, now())[1..3], &[json!("kubernetes.io/tls"), json!(2)]);
        let sa = json!({"metadata": {"name": "default"}});
        assert_eq!(service_account_row(&sa, now())[1], json!(0));
        let rq = json!({"metadata": {"name": "q"}, "status": {"hard": {"pods": "10", "limits.cpu": "2000m", "requests.memory": "1Gi"},
            "used": {"pods": "3", "limits.cpu": "0.5"}}});
        assert_eq!(
            &resource_quota_row(&rq, now())[1..3],
            &[json!("pods: 3/10, requests.memory: 0/1Gi"), json!("limits.cpu: 500m/2")]
        );
        let ns = json!({"metadata": {"name": "default"}, "status": {"phase": "Active"}});
        assert_eq!(namespace_row(&ns, now())[1], json!("Active"));
        let cs = json!({"metadata": {"name": "etcd-0"}, "conditions": [{"type": "Healthy", "status": "True", "message": "ok"}]});
        assert_eq!(component_status_row(&cs, now()), vec![json!("etcd-0"), json!("Healthy"), json!("ok"), json!("")]);
    }
}
