//! Pods: defaulting (`SetDefaults_Pod`, `SetDefaults_PodSpec`,
//! `SetDefaults_Container` and the Priority / DefaultTolerationSeconds
//! admission defaults), status reset on create, graceful deletion.
//!
//! Also `SetDefaults_HTTPGetAction` (probe and hook `httpGet` path `/`,
//! scheme `HTTP`) and the volume source defaults.
//!
//! Validation: `ValidatePodSpec` (the subset in
//! [`crate::validation::podspec`]) on create and update, and the spec update
//! rule (`pod updates may not change fields other than ...`).
//!
//! Not yet here: the ServiceAccount admission defaults.

use serde_json::{json, Map, Value};

use super::{reset_status, Generic, Strategy};
use crate::errors::StatusCause;
use crate::validation::podspec::{validate_pod_spec, validate_pod_spec_update, SpecOf};
use crate::validation::Path;

/// The strategy of core/v1 Pods.
#[derive(Clone, Copy, Debug, Default)]
pub struct Pod;

/// `terminationGracePeriodSeconds` when the pod does not set one.
pub const DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS: i64 = 30;

fn flags() -> Generic {
    let mut g = Generic::new(true);
    g.return_deleted_object = true;
    g
}

impl Strategy for Pod {
    fn default(&self, obj: &mut Value) {
        let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else { return };
        default_pod_spec(spec);
        // What only pods get, not pod templates: `SetDefaults_Pod`'s
        // service links and requests. (Priority and the default
        // tolerations come from the admission plugins.)
        set_default(spec, "enableServiceLinks", json!(true));
        for list in ["containers", "initContainers"] {
            if let Some(cs) = spec.get_mut(list).and_then(Value::as_array_mut) {
                cs.iter_mut().filter_map(Value::as_object_mut).for_each(default_requests_to_limits);
            }
        }
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        reset_status(obj);
        let qos = qos_class(obj);
        obj["status"] = json!({"phase": "Pending", "qosClass": qos});
        apply_scheduling_gated_condition(obj);
        merge_affinity_label_keys(obj);
    }

    fn validate_create(&self, obj: &Value) -> Vec<StatusCause> {
        validate_pod_spec(&obj["spec"], SpecOf::Pod, &Path::new("spec")).to_causes()
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<StatusCause> {
        let path = Path::new("spec");
        let mut errs = validate_pod_spec(&new["spec"], SpecOf::Pod, &path);
        errs.extend(validate_pod_spec_update(&new["spec"], &old["spec"], &path));
        errs.to_causes()
    }

    fn has_status_subresource(&self) -> bool {
        true
    }

    fn return_deleted_object(&self) -> bool {
        flags().return_deleted_object
    }

    fn graceful_delete_period(&self, obj: &Value, requested: Option<i64>) -> Option<i64> {
        let spec = &obj["spec"];
        let mut period = requested
            .or_else(|| spec["terminationGracePeriodSeconds"].as_i64())
            .unwrap_or(DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS);
        // An unscheduled or finished pod has no kubelet to wait for.
        let phase = obj["status"]["phase"].as_str().unwrap_or("");
        if spec["nodeName"].as_str().is_none_or(str::is_empty) || phase == "Failed" || phase == "Succeeded" {
            period = 0;
        }
        Some(period.max(0))
    }
}

/// A new pod with scheduling gates starts with `PodScheduled` False,
/// reason `SchedulingGated` (upstream `applySchedulingGatedCondition`), so
/// `kubectl get pods` shows it as `SchedulingGated` before any scheduler
/// has seen it.
fn apply_scheduling_gated_condition(obj: &mut Value) {
    if obj["spec"]["schedulingGates"].as_array().is_none_or(Vec::is_empty) {
        return;
    }
    obj["status"]["conditions"] = json!([{
        "type": "PodScheduled",
        "status": "False",
        "lastTransitionTime": crate::meta::now(),
        "reason": "SchedulingGated",
        "message": "Scheduling is blocked due to non-empty scheduling gates",
    }]);
}

/// Pod (anti-)affinity terms' `matchLabelKeys` and `mismatchLabelKeys`
/// become `In` / `NotIn` requirements on the pod's own label values in
/// the term's `labelSelector` (upstream `mutatePodAffinity`,
/// MatchLabelKeysInPodAffinity, on by default in 1.33). A key the pod does
/// not carry adds nothing; a term without a labelSelector stays
/// match-nothing.
fn merge_affinity_label_keys(obj: &mut Value) {
    let labels = obj["metadata"]["labels"].as_object().cloned().unwrap_or_default();
    let Some(affinity) = obj.pointer_mut("/spec/affinity").and_then(Value::as_object_mut) else { return };
    for kind in ["podAffinity", "podAntiAffinity"] {
        let Some(a) = affinity.get_mut(kind).and_then(Value::as_object_mut) else { continue };
        if let Some(terms) = a.get_mut("requiredDuringSchedulingIgnoredDuringExecution").and_then(Value::as_array_mut) {
            terms.iter_mut().for_each(|t| merge_term_label_keys(t, &labels));
        }
        if let Some(terms) = a.get_mut("preferredDuringSchedulingIgnoredDuringExecution").and_then(Value::as_array_mut)
        {
            terms
                .iter_mut()
                .filter_map(|t| t.get_mut("podAffinityTerm"))
                .for_each(|t| merge_term_label_keys(t, &labels));
        }
    }
}

fn merge_term_label_keys(term: &mut Value, labels: &Map<String, Value>) {
    let mut requirements = Vec::new();
    for (field, operator) in [("matchLabelKeys", "In"), ("mismatchLabelKeys", "NotIn")] {
        for key in term[field].as_array().into_iter().flatten().filter_map(Value::as_str) {
            if let Some(value) = labels.get(key) {
                requirements.push(json!({"key": key, "operator": operator, "values": [value]}));
            }
        }
    }
    let Some(selector) = term.get_mut("labelSelector").and_then(Value::as_object_mut) else { return };
    if requirements.is_empty() {
        return;
    }
    let exprs = selector.entry("matchExpressions").or_insert_with(|| json!([]));
    if let Some(list) = exprs.as_array_mut() {
        list.extend(requirements);
    } else {
        *exprs = Value::Array(requirements);
    }
}

/// `SetDefaults_PodSpec` and the container, probe and volume defaults:
/// what pods and pod templates (workloads, PodTemplates) share.
pub fn default_pod_spec(spec: &mut Map<String, Value>) {
    set_default(spec, "restartPolicy", json!("Always"));
    set_default(spec, "dnsPolicy", json!("ClusterFirst"));
    set_default(spec, "terminationGracePeriodSeconds", json!(DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS));
    set_default(spec, "schedulerName", json!("default-scheduler"));
    set_default(spec, "securityContext", json!({}));
    let host_network = spec.get("hostNetwork") == Some(&Value::Bool(true));
    // Ephemeral containers get the same field defaults (upstream's
    // generated defaulter covers them); the ephemeralcontainers
    // subresource defaults the pod sent to it.
    for list in ["containers", "initContainers", "ephemeralContainers"] {
        if let Some(cs) = spec.get_mut(list).and_then(Value::as_array_mut) {
            cs.iter_mut().filter_map(Value::as_object_mut).for_each(default_container);
            if host_network && list != "ephemeralContainers" {
                cs.iter_mut().for_each(default_host_network_ports);
            }
        }
    }
    if let Some(vols) = spec.get_mut("volumes").and_then(Value::as_array_mut) {
        vols.iter_mut().filter_map(Value::as_object_mut).for_each(default_volume);
    }
}

/// `SetDefaults_Pod`: a resource with a limit but no request is requested
/// at its limit (pods only, not templates).
fn default_requests_to_limits(c: &mut Map<String, Value>) {
    let Some(res) = c.get_mut("resources").and_then(Value::as_object_mut) else { return };
    let Some(limits) = res.get("limits").and_then(Value::as_object).cloned() else { return };
    let requests = res.entry("requests").or_insert_with(|| json!({}));
    if let Some(requests) = requests.as_object_mut() {
        for (k, v) in limits {
            requests.entry(k).or_insert(v);
        }
    }
}

fn set_default(m: &mut Map<String, Value>, key: &str, value: Value) {
    if m.get(key).is_none_or(Value::is_null) {
        m.insert(key.to_string(), value);
    }
}

fn default_container(c: &mut Map<String, Value>) {
    set_default(c, "terminationMessagePath", json!("/dev/termination-log"));
    set_default(c, "terminationMessagePolicy", json!("File"));
    set_default(c, "resources", json!({}));
    let image = c.get("image").and_then(Value::as_str).unwrap_or("").to_string();
    set_default(c, "imagePullPolicy", json!(default_image_pull_policy(&image)));
    if let Some(ports) = c.get_mut("ports").and_then(Value::as_array_mut) {
        ports.iter_mut().filter_map(Value::as_object_mut).for_each(|p| set_default(p, "protocol", json!("TCP")));
    }
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(p) = c.get_mut(probe).and_then(Value::as_object_mut) {
            set_default(p, "timeoutSeconds", json!(1));
            set_default(p, "periodSeconds", json!(10));
            set_default(p, "successThreshold", json!(1));
            set_default(p, "failureThreshold", json!(3));
            default_http_get(p);
        }
    }
    for hook in ["postStart", "preStop"] {
        if let Some(h) = c.get_mut("lifecycle").and_then(|l| l.get_mut(hook)).and_then(Value::as_object_mut) {
            default_http_get(h);
        }
    }
    if let Some(env) = c.get_mut("env").and_then(Value::as_array_mut) {
        for e in env.iter_mut() {
            if let Some(f) = e.pointer_mut("/valueFrom/fieldRef").and_then(Value::as_object_mut) {
                set_default(f, "apiVersion", json!("v1"));
            }
        }
    }
}

/// `defaultHostNetworkPorts`: on the host network a port's `hostPort` is
/// its `containerPort` unless set.
fn default_host_network_ports(c: &mut Value) {
    for p in c.get_mut("ports").and_then(Value::as_array_mut).into_iter().flatten() {
        if p.get("hostPort").and_then(Value::as_i64).unwrap_or(0) == 0 {
            p["hostPort"] = p.get("containerPort").cloned().unwrap_or(Value::Null);
        }
    }
}

/// `SetDefaults_HTTPGetAction`: path `/` and scheme `HTTP` for the
/// `httpGet` handler of a probe or lifecycle hook.
fn default_http_get(handler: &mut Map<String, Value>) {
    if let Some(h) = handler.get_mut("httpGet").and_then(Value::as_object_mut) {
        if h.get("path").and_then(Value::as_str).is_none_or(str::is_empty) {
            h.insert("path".into(), json!("/"));
        }
        if h.get("scheme").and_then(Value::as_str).is_none_or(str::is_empty) {
            h.insert("scheme".into(), json!("HTTP"));
        }
    }
}

/// The volume source defaults: `defaultMode` 0644 for secret, configMap,
/// downwardAPI and projected volumes, hostPath `type: ""`, `apiVersion: v1`
/// in downward API field references.
fn default_volume(v: &mut Map<String, Value>) {
    // `SetDefaults_Volume`: a volume naming no source is an emptyDir.
    if v.iter().all(|(k, val)| k == "name" || val.is_null()) {
        v.insert("emptyDir".into(), json!({}));
    }
    for source in ["secret", "configMap", "downwardAPI", "projected"] {
        if let Some(s) = v.get_mut(source).and_then(Value::as_object_mut) {
            set_default(s, "defaultMode", json!(420));
        }
    }
    if let Some(h) = v.get_mut("hostPath").and_then(Value::as_object_mut) {
        set_default(h, "type", json!(""));
    }
    let default_items = |items: Option<&mut Value>| {
        for item in items.and_then(Value::as_array_mut).into_iter().flatten() {
            if let Some(f) = item.get_mut("fieldRef").and_then(Value::as_object_mut) {
                set_default(f, "apiVersion", json!("v1"));
            }
        }
    };
    default_items(v.get_mut("downwardAPI").and_then(|d| d.get_mut("items")));
    if let Some(sources) = v.get_mut("projected").and_then(|p| p.get_mut("sources")).and_then(Value::as_array_mut) {
        for s in sources.iter_mut() {
            default_items(s.get_mut("downwardAPI").and_then(|d| d.get_mut("items")));
        }
    }
}

/// `Always` for images tagged `:latest` or untagged, `IfNotPresent`
/// otherwise (a digest counts as a tag).
pub fn default_image_pull_policy(image: &str) -> &'static str {
    if image.contains('@') {
        return "IfNotPresent";
    }
    let last = image.rsplit('/').next().unwrap_or(image);
    match last.split_once(':') {
        Some((_, tag)) if tag != "latest" => "IfNotPresent",
        _ => "Always",
    }
}

/// The pod's QoS class (`Guaranteed`, `Burstable` or `BestEffort`) from its
/// containers' requests and limits for cpu and memory.
pub fn qos_class(pod: &Value) -> &'static str {
    let spec = &pod["spec"];
    let containers: Vec<&Value> =
        ["containers", "initContainers"].iter().filter_map(|l| spec[*l].as_array()).flatten().collect();
    let mut any = false;
    let mut guaranteed = true;
    for c in &containers {
        let requests = &c["resources"]["requests"];
        let limits = &c["resources"]["limits"];
        for r in ["cpu", "memory"] {
            let (req, lim) = (requests.get(r), limits.get(r));
            if req.is_some() || lim.is_some() {
                any = true;
            }
            match (req, lim) {
                (_, None) => guaranteed = false,
                (Some(q), Some(l)) if q != l => guaranteed = false,
                _ => {}
            }
        }
    }
    match (any, guaranteed) {
        (false, _) => "BestEffort",
        (true, true) => "Guaranteed",
        (true, false) => "Burstable",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gated_pods_start_scheduling_gated_as_upstream() {
        let mut pod = json!({"spec": {"schedulingGates": [{"name": "g"}], "containers": [{"name": "c"}]}});
        Pod.prepare_for_create(&mut pod);
        let c = &pod["status"]["conditions"][0];
        assert_eq!(
            (&c["type"], &c["status"], &c["reason"]),
            (&json!("PodScheduled"), &json!("False"), &json!("SchedulingGated"))
        );
        assert_eq!(c["message"], "Scheduling is blocked due to non-empty scheduling gates");
        let mut ungated = json!({"spec": {"containers": [{"name": "c"}]}});
        Pod.prepare_for_create(&mut ungated);
        assert!(ungated["status"].get("conditions").is_none());
    }

    #[test]
    fn affinity_label_keys_merge_into_the_selector_as_upstream() {
        // Upstream's mutatePodAffinity: matchLabelKeys → In, mismatchLabelKeys →
        // NotIn with the pod's own values; absent keys and nil selectors add nothing.
        let mut pod = json!({
            "metadata": {"labels": {"app": "web", "tenant": "a"}},
            "spec": {"containers": [{"name": "c"}], "affinity": {
                "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                    {"topologyKey": "zone", "labelSelector": {"matchLabels": {"x": "y"}},
                     "matchLabelKeys": ["app", "missing"], "mismatchLabelKeys": ["tenant"]},
                    {"topologyKey": "zone", "matchLabelKeys": ["app"]}
                ]},
                "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 1, "podAffinityTerm": {"topologyKey": "h", "labelSelector": {}, "matchLabelKeys": ["app"]}}
                ]}
            }}
        });
        Pod.prepare_for_create(&mut pod);
        let a = &pod["spec"]["affinity"];
        assert_eq!(
            a["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]["labelSelector"]["matchExpressions"],
            json!([{"key": "app", "operator": "In", "values": ["web"]}, {"key": "tenant", "operator": "NotIn", "values": ["a"]}])
        );
        assert!(a["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][1].get("labelSelector").is_none());
        assert_eq!(
            a["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]["podAffinityTerm"]
                ["labelSelector"]["matchExpressions"],
            json!([{"key": "app", "operator": "In", "values": ["web"]}])
        );
    }

    #[test]
    fn pod_defaults_match_upstream() {
        let mut pod =
            json!({"spec": {"containers": [{"name": "c", "image": "nginx:1.27", "ports": [{"containerPort": 80}]}]}});
        Pod.default(&mut pod);
        let spec = &pod["spec"];
        assert_eq!(spec["restartPolicy"], "Always");
        assert_eq!(spec["dnsPolicy"], "ClusterFirst");
        assert_eq!(spec["terminationGracePeriodSeconds"], 30);
        assert_eq!(spec["schedulerName"], "default-scheduler");
        assert_eq!(spec["enableServiceLinks"], true);
        assert!(spec.get("priority").is_none(), "set by the Priority admission plugin");
        assert!(spec.get("tolerations").is_none(), "set by DefaultTolerationSeconds");
        let c = &spec["containers"][0];
        assert_eq!(c["imagePullPolicy"], "IfNotPresent");
        assert_eq!(c["terminationMessagePath"], "/dev/termination-log");
        assert_eq!(c["ports"][0]["protocol"], "TCP");
    }

    #[test]
    fn probe_hook_and_volume_defaults() {
        let mut pod = json!({"spec": {"containers": [{"name": "c", "image": "nginx",
            "livenessProbe": {"httpGet": {"port": 80}},
            "lifecycle": {"preStop": {"httpGet": {"port": "web", "path": "/stop"}}}}],
            "volumes": [{"name": "h", "hostPath": {"path": "/data"}},
                        {"name": "d", "downwardAPI": {"items": [{"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]}},
                        {"name": "p", "projected": {"sources": []}}]}});
        Pod.default(&mut pod);
        let c = &pod["spec"]["containers"][0];
        assert_eq!(
            c["livenessProbe"],
            json!({"httpGet": {"port": 80, "path": "/", "scheme": "HTTP"}, "timeoutSeconds": 1, "periodSeconds": 10,
                   "successThreshold": 1, "failureThreshold": 3})
        );
        assert_eq!(c["lifecycle"]["preStop"]["httpGet"], json!({"port": "web", "path": "/stop", "scheme": "HTTP"}));
        let v = &pod["spec"]["volumes"];
        assert_eq!(v[0]["hostPath"], json!({"path": "/data", "type": ""}));
        assert_eq!(v[1]["downwardAPI"]["defaultMode"], 420);
        assert_eq!(v[1]["downwardAPI"]["items"][0]["fieldRef"]["apiVersion"], "v1");
        assert_eq!(v[2]["projected"]["defaultMode"], 420);
    }

    #[test]
    fn sourceless_volumes_are_empty_dirs_and_limits_become_requests() {
        let spec = json!({"containers": [{"name": "c", "image": "nginx",
            "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m"}}}],
            "volumes": [{"name": "scratch"}]});
        let mut pod = json!({ "spec": spec.clone() });
        Pod.default(&mut pod);
        assert_eq!(pod["spec"]["volumes"][0], json!({"name": "scratch", "emptyDir": {}}));
        let requests = &pod["spec"]["containers"][0]["resources"]["requests"];
        assert_eq!(requests, &json!({"cpu": "500m", "memory": "1Gi"}));
        // Templates get the volume default but keep their requests as written.
        let mut template = json!({ "spec": spec });
        crate::strategy::workload::default_template(&mut template);
        assert_eq!(template["spec"]["volumes"][0]["emptyDir"], json!({}));
        assert_eq!(template["spec"]["containers"][0]["resources"]["requests"], json!({"cpu": "500m"}));
        assert!(template["spec"].get("enableServiceLinks").is_none());
    }

    #[test]
    fn image_pull_policy_follows_the_tag() {
        assert_eq!(default_image_pull_policy("nginx"), "Always");
        assert_eq!(default_image_pull_policy("nginx:latest"), "Always");
        assert_eq!(default_image_pull_policy("localhost:5000/nginx"), "Always");
        assert_eq!(default_image_pull_policy("localhost:5000/nginx:1"), "IfNotPresent");
        assert_eq!(default_image_pull_policy("nginx@sha256:abc"), "IfNotPresent");
    }

    #[test]
    fn create_resets_status_to_pending() {
        let mut pod = json!({"spec": {"containers": [{"name": "c"}]}, "status": {"phase": "Running"}});
        Pod.prepare_for_create(&mut pod);
        assert_eq!(pod["status"], json!({"phase": "Pending", "qosClass": "BestEffort"}));
    }

    #[test]
    fn unscheduled_pods_are_deleted_at_once() {
        let pod = json!({"spec": {"terminationGracePeriodSeconds": 30}});
        assert_eq!(Pod.graceful_delete_period(&pod, None), Some(0));
        let scheduled = json!({"spec": {"nodeName": "n1"}, "status": {"phase": "Running"}});
        assert_eq!(Pod.graceful_delete_period(&scheduled, None), Some(30));
        assert_eq!(Pod.graceful_delete_period(&scheduled, Some(5)), Some(5));
    }
}
