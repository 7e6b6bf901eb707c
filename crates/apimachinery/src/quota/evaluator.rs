//! What objects use of a quota (upstream `pkg/quota/v1/evaluator/core`
//! and the generic object-count evaluator): the resources each kind is
//! charged for, the pod scopes (`Terminating`, `NotTerminating`,
//! `BestEffort`, `NotBestEffort`, `PriorityClass` through
//! `scopeSelector`), and the pod constraint that cpu/memory quotas need
//! every container to state them.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::{add, Amount, Usage};

/// The storage-class-scoped PVC resources' infix
/// (`<class>.storageclass.storage.k8s.io/requests.storage`).
pub const STORAGE_CLASS_SUFFIX: &str = ".storageclass.storage.k8s.io/";

/// The kinds with a dedicated evaluator (group, plural); every other
/// resource is charged only as `count/<plural>.<group>`.
pub const CORE_KINDS: [(&str, &str); 7] = [
    ("", "pods"),
    ("", "services"),
    ("", "persistentvolumeclaims"),
    ("", "configmaps"),
    ("", "secrets"),
    ("", "replicationcontrollers"),
    ("", "resourcequotas"),
];

/// The object-count resource name of a resource: `count/pods`,
/// `count/deployments.apps` (upstream `ObjectCountQuotaResourceNameFor`).
pub fn count_name(group: &str, plural: &str) -> String {
    if group.is_empty() {
        format!("count/{plural}")
    } else {
        format!("count/{plural}.{group}")
    }
}

/// Whether `name` is a resource the evaluator of `group`/`plural`
/// charges (upstream `Evaluator.MatchingResources`).
pub fn covers(group: &str, plural: &str, name: &str) -> bool {
    if name == count_name(group, plural) {
        return true;
    }
    if !group.is_empty() {
        return false;
    }
    match plural {
        "pods" => {
            let base = name.strip_prefix("requests.").or_else(|| name.strip_prefix("limits.")).unwrap_or(name);
            matches!(name, "pods")
                || matches!(base, "cpu" | "memory" | "ephemeral-storage")
                || ((base.starts_with("hugepages-") || is_extended(base)) && name.starts_with("requests."))
        }
        "services" => matches!(name, "services" | "services.loadbalancers" | "services.nodeports"),
        "persistentvolumeclaims" => {
            matches!(name, "persistentvolumeclaims" | "requests.storage")
                || name
                    .split_once(STORAGE_CLASS_SUFFIX)
                    .is_some_and(|(_, r)| matches!(r, "requests.storage" | "persistentvolumeclaims"))
        }
        "configmaps" | "secrets" | "replicationcontrollers" | "resourcequotas" => name == plural,
        _ => false,
    }
}

/// The resources of `hard` the evaluator of `group`/`plural` charges.
pub fn matching<'a>(group: &str, plural: &str, hard: impl IntoIterator<Item = &'a String>) -> BTreeSet<String> {
    hard.into_iter().filter(|n| covers(group, plural, n)).cloned().collect()
}

fn count(usage: &mut Usage, name: &str, n: i64) {
    usage.insert(name.to_string(), Amount::count(n));
}

/// What `obj` (of `group`/`plural`) uses, `now_unix` being the time in
/// seconds for pods' deletion grace (upstream `Evaluator.Usage`). Pods
/// at the end of their life (`Succeeded`, `Failed`, or past their
/// deletion grace) use only their object count.
pub fn usage(group: &str, plural: &str, obj: &Value, now_unix: i64) -> Usage {
    let mut u = Usage::new();
    count(&mut u, &count_name(group, plural), 1);
    if !group.is_empty() {
        return u;
    }
    match plural {
        "pods" if is_live_pod(obj, now_unix) => u = add(&u, &pod_compute_usage(obj)),
        "services" => {
            count(&mut u, "services", 1);
            let ports = obj.pointer("/spec/ports").and_then(Value::as_array).map_or(&[][..], |p| p.as_slice());
            match obj.pointer("/spec/type").and_then(Value::as_str) {
                Some("NodePort") => count(&mut u, "services.nodeports", ports.len() as i64),
                Some("LoadBalancer") => {
                    let allocate = obj.pointer("/spec/allocateLoadBalancerNodePorts").and_then(Value::as_bool);
                    let n = if allocate == Some(false) {
                        ports.iter().filter(|p| p.get("nodePort").and_then(Value::as_i64).unwrap_or(0) != 0).count()
                    } else {
                        ports.len()
                    };
                    count(&mut u, "services.nodeports", n as i64);
                    count(&mut u, "services.loadbalancers", 1);
                }
                _ => {}
            }
        }
        "persistentvolumeclaims" => {
            count(&mut u, "persistentvolumeclaims", 1);
            let class = obj
                .pointer("/spec/storageClassName")
                .and_then(Value::as_str)
                .or_else(|| obj.pointer("/metadata/annotations/volume.beta.kubernetes.io~1storage-class")?.as_str())
                .filter(|c| !c.is_empty());
            if let Some(class) = class {
                count(&mut u, &format!("{class}{STORAGE_CLASS_SUFFIX}persistentvolumeclaims"), 1);
            }
            // The larger of the request and what a resize already allocated.
            let request = obj.pointer("/spec/resources/requests/storage").and_then(Amount::parse);
            let allocated = obj.pointer("/status/allocatedResources/storage").and_then(Amount::parse);
            let storage = match (request, allocated) {
                (Some(r), Some(a)) if a.milli > r.milli => Some(a),
                (r, a) => r.or(a),
            };
            if let Some(s) = storage {
                u.insert("requests.storage".into(), s);
                if let Some(class) = class {
                    u.insert(format!("{class}{STORAGE_CLASS_SUFFIX}requests.storage"), s);
                }
            }
        }
        "configmaps" | "secrets" | "replicationcontrollers" | "resourcequotas" => count(&mut u, plural, 1),
        _ => {}
    }
    u
}

/// Whether a pod still counts for compute resources (upstream
/// `QuotaV1Pod`): not `Succeeded`/`Failed`, and not past the end of its
/// deletion grace period.
pub fn is_live_pod(pod: &Value, now_unix: i64) -> bool {
    if matches!(pod.pointer("/status/phase").and_then(Value::as_str), Some("Succeeded" | "Failed")) {
        return false;
    }
    let deleted = pod.pointer("/metadata/deletionTimestamp").and_then(Value::as_str).and_then(unix_seconds);
    let grace = pod.pointer("/metadata/deletionGracePeriodSeconds").and_then(Value::as_i64);
    match (deleted, grace) {
        (Some(at), Some(grace)) => now_unix <= at + grace,
        _ => true,
    }
}

/// An RFC 3339 time in Unix seconds.
pub fn unix_seconds(t: &str) -> Option<i64> {
    t.parse::<jiff::Timestamp>().ok().map(|t| t.as_second())
}

type Resources = BTreeMap<String, Amount>;

fn container_list<'a>(pod: &'a Value, field: &str) -> &'a [Value] {
    pod.pointer(&format!("/spec/{field}")).and_then(Value::as_array).map_or(&[], |v| v.as_slice())
}

fn resources(c: &Value, field: &str) -> Resources {
    super::parse_list(c.pointer(&format!("/resources/{field}")))
}

fn max_into(acc: &mut Resources, r: &Resources) {
    for (k, v) in r {
        if acc.get(k).is_none_or(|a| v.milli > a.milli) {
            acc.insert(k.clone(), *v);
        }
    }
}

/// The pod's effective requests or limits (upstream
/// `resourcehelper.PodRequests` / `PodLimits`): the containers and
/// sidecars summed, at least each plain init container (with the
/// sidecars started before it), plus the pod overhead.
pub fn pod_resources(pod: &Value, field: &str) -> Resources {
    let mut sum = Resources::new();
    for c in container_list(pod, "containers") {
        sum = add(&sum, &resources(c, field));
    }
    let mut sidecars = Resources::new();
    let mut init_max = Resources::new();
    for c in container_list(pod, "initContainers") {
        let r = resources(c, field);
        if c.get("restartPolicy").and_then(Value::as_str) == Some("Always") {
            sidecars = add(&sidecars, &r);
            sum = add(&sum, &r);
        } else {
            max_into(&mut init_max, &add(&sidecars, &r));
        }
    }
    max_into(&mut sum, &init_max);
    if let Some(overhead) = pod.pointer("/spec/overhead") {
        sum = add(&sum, &super::parse_list(Some(overhead)));
    }
    sum
}

/// An extended resource (`example.com/dongle`): domain-qualified and not
/// in the `kubernetes.io` domains (upstream `IsExtendedResourceName`);
/// quotas limit it only as `requests.<name>`.
fn is_extended(name: &str) -> bool {
    match name.split_once('/') {
        Some((domain, _)) => {
            domain != "kubernetes.io" && !domain.ends_with(".kubernetes.io") && !name.starts_with("requests.")
        }
        None => false,
    }
}

/// Upstream `podComputeUsageHelper`: `pods` 1, requests as `requests.<r>`
/// (cpu, memory and ephemeral-storage also under their bare names),
/// limits as `limits.<r>`.
fn compute_usage(requests: &Resources, limits: &Resources) -> Usage {
    let mut u = Usage::new();
    count(&mut u, "pods", 1);
    for (k, v) in requests {
        match k.as_str() {
            "cpu" | "memory" | "ephemeral-storage" => {
                u.insert(k.clone(), *v);
                u.insert(format!("requests.{k}"), *v);
            }
            h if h.starts_with("hugepages-") || is_extended(h) => {
                u.insert(format!("requests.{k}"), *v);
            }
            _ => {}
        }
    }
    for (k, v) in limits {
        if matches!(k.as_str(), "cpu" | "memory" | "ephemeral-storage") {
            u.insert(format!("limits.{k}"), *v);
        }
    }
    u
}

fn pod_compute_usage(pod: &Value) -> Usage {
    compute_usage(&pod_resources(pod, "requests"), &pod_resources(pod, "limits"))
}

/// The resources a cpu/memory quota needs every container to state
/// (upstream's `validationSet`).
const VALIDATED: [&str; 6] = ["cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu", "limits.memory"];

/// Upstream's pod `Constraints`: every container and init container must
/// state each of `required` ∩ {cpu, memory, requests.*, limits.* of
/// them}; the error text lists `must specify <r> for: <containers>`
/// per resource, sorted, joined by `; `.
pub fn pod_constraints(required: &BTreeSet<String>, pod: &Value) -> Result<(), String> {
    let required: BTreeSet<&str> = required.iter().map(String::as_str).filter(|r| VALIDATED.contains(r)).collect();
    let mut missing: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for c in container_list(pod, "containers").iter().chain(container_list(pod, "initContainers")) {
        let stated = compute_usage(&resources(c, "requests"), &resources(c, "limits"));
        for r in &required {
            if !stated.contains_key(*r) {
                let name = c.get("name").and_then(Value::as_str).unwrap_or("").to_string();
                missing.entry(r).or_default().insert(name);
            }
        }
    }
    if missing.is_empty() {
        return Ok(());
    }
    let parts: Vec<String> = missing
        .iter()
        .map(|(r, names)| format!("must specify {r} for: {}", names.iter().cloned().collect::<Vec<_>>().join(",")))
        .collect();
    Err(parts.join("; "))
}

/// Whether a pod is BestEffort: no container states any cpu or memory
/// request or limit (upstream `qos.GetPodQOS`).
pub fn is_best_effort(pod: &Value) -> bool {
    container_list(pod, "containers").iter().chain(container_list(pod, "initContainers")).all(|c| {
        ["requests", "limits"].iter().all(|f| {
            let r = resources(c, f);
            !r.iter().any(|(k, v)| matches!(k.as_str(), "cpu" | "memory") && v.milli != 0)
        })
    })
}

/// One scope requirement of a quota: `spec.scopes` entries are `Exists`
/// requirements, `spec.scopeSelector.matchExpressions` are given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScopeRequirement {
    /// `Terminating`, `NotTerminating`, `BestEffort`, `NotBestEffort`,
    /// `PriorityClass`, `CrossNamespacePodAffinity`.
    pub scope: String,
    /// `In`, `NotIn`, `Exists`, `DoesNotExist`.
    pub operator: String,
    /// The values of `In` / `NotIn`.
    pub values: Vec<String>,
}

/// The scope requirements of a quota (upstream
/// `getScopeSelectorsFromQuota`).
pub fn scopes(quota: &Value) -> Vec<ScopeRequirement> {
    let mut out: Vec<ScopeRequirement> = quota
        .pointer("/spec/scopes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(|s| ScopeRequirement { scope: s.into(), operator: "Exists".into(), values: vec![] })
        .collect();
    for e in quota.pointer("/spec/scopeSelector/matchExpressions").and_then(Value::as_array).into_iter().flatten() {
        let s = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let values =
            e.get("values").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).map(String::from);
        out.push(ScopeRequirement { scope: s("scopeName"), operator: s("operator"), values: values.collect() });
    }
    out
}

/// Whether a pod falls under one scope requirement (upstream
/// `podMatchesScopeFunc`).
pub fn pod_matches_scope(req: &ScopeRequirement, pod: &Value) -> bool {
    let terminating = pod.pointer("/spec/activeDeadlineSeconds").and_then(Value::as_i64).is_some_and(|s| s >= 0);
    match req.scope.as_str() {
        "Terminating" => terminating,
        "NotTerminating" => !terminating,
        "BestEffort" => is_best_effort(pod),
        "NotBestEffort" => !is_best_effort(pod),
        "PriorityClass" => {
            let class = pod.pointer("/spec/priorityClassName").and_then(Value::as_str).unwrap_or("");
            match req.operator.as_str() {
                "Exists" => !class.is_empty(),
                "DoesNotExist" => class.is_empty(),
                "In" => req.values.iter().any(|v| v == class),
                "NotIn" => !req.values.iter().any(|v| v == class),
                _ => false,
            }
        }
        "CrossNamespacePodAffinity" => {
            let affinity = pod.pointer("/spec/affinity");
            ["podAffinity", "podAntiAffinity"].iter().any(|kind| {
                ["requiredDuringSchedulingIgnoredDuringExecution", "preferredDuringSchedulingIgnoredDuringExecution"]
                    .iter()
                    .flat_map(|f| affinity.and_then(|a| a.pointer(&format!("/{kind}/{f}"))).and_then(Value::as_array))
                    .flatten()
                    .map(|t| t.get("podAffinityTerm").unwrap_or(t))
                    .any(|t| {
                        t.get("namespaceSelector").is_some()
                            || t.get("namespaces").and_then(Value::as_array).is_some_and(|n| !n.is_empty())
                    })
            })
        }
        _ => false,
    }
}

/// Whether `quota` applies to `obj` of `group`/`plural` (upstream
/// `Evaluator.Matches`): it limits a resource the kind is charged for,
/// and the object falls under every scope (only pods fall under scopes).
pub fn quota_matches(quota: &Value, group: &str, plural: &str, obj: &Value) -> bool {
    let hard = super::parse_list(quota.pointer("/spec/hard"));
    if matching(group, plural, hard.keys()).is_empty() {
        return false;
    }
    let is_pod = group.is_empty() && plural == "pods";
    scopes(quota).iter().all(|req| is_pod && pod_matches_scope(req, obj))
}

#[cfg(test)]
#[path = "evaluator_tests.rs"]
mod tests;
