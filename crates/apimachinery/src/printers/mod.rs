//! Server-side Table printers: the columns and cells `kubectl get` shows
//! for each built-in kind, as upstream's
//! `pkg/printers/internalversion/printers.go` computes them (plus the
//! aggregator's APIService printer and the default "Name / Created At"
//! table of kinds without a printer).
//!
//! Every printer is a pure function from an object (`&serde_json::Value`,
//! in its served version) and the current time to the row's cells. The
//! API server always renders the wide (`priority: 1`) cells, as upstream's
//! `TableConvertor` does (`GenerateOptions{Wide: true}`); kubectl hides
//! those columns unless `-o wide` is given.

use jiff::Timestamp;
use serde_json::{json, Value};

mod apps;
mod cluster;
mod core;
mod networking;
mod pod;
pub mod quantity;
mod storage;

/// One column of a Table (`meta.k8s.io/v1 TableColumnDefinition`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Column {
    /// Human-readable name (kubectl upper-cases it).
    pub name: &'static str,
    /// OpenAPI type of the cells: `string`, `integer`, `boolean`, `date`.
    pub ty: &'static str,
    /// OpenAPI format; `name` marks the object-name column.
    pub format: &'static str,
    /// What the column shows (upstream uses the field's doc).
    pub description: &'static str,
    /// 0 for default columns, 1 for `-o wide` only.
    pub priority: u32,
}

/// The cells of one row, computed from an object and the current time.
pub type RowFn = fn(&Value, Timestamp) -> Vec<Value>;

/// A kind's Table printer: its columns and its row function.
#[derive(Clone, Copy)]
pub struct Printer {
    /// Column definitions, in cell order.
    pub columns: &'static [Column],
    /// Computes one row's cells (always including the wide ones).
    pub row: RowFn,
}

/// `metav1.ObjectMeta{}.SwaggerDoc()["name"]`: the Name column's description.
pub const NAME_DOC: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";

/// `metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]`: the Age column's description.
pub const AGE_DOC: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

/// The object-name column every printer starts with (but Event).
pub const NAME: Column = col_fmt("Name", "string", "name", NAME_DOC, 0);
/// The Age column (`translateTimestampSince(creationTimestamp)`).
pub const AGE: Column = col("Age", "string", AGE_DOC);

/// A default-priority column without format.
pub const fn col(name: &'static str, ty: &'static str, description: &'static str) -> Column {
    Column { name, ty, format: "", description, priority: 0 }
}

/// A `-o wide` (priority 1) column.
pub const fn wide(name: &'static str, ty: &'static str, description: &'static str) -> Column {
    Column { name, ty, format: "", description, priority: 1 }
}

/// A column with every field given.
pub const fn col_fmt(
    name: &'static str,
    ty: &'static str,
    format: &'static str,
    description: &'static str,
    priority: u32,
) -> Column {
    Column { name, ty, format, description, priority }
}

/// Description of the template Containers column.
pub const CONTAINERS_DOC: &str = "Names of each container in the template.";
/// Description of the template Images column.
pub const IMAGES_DOC: &str = "Images referenced by each container in the template.";

/// The printer of `group`/`kind` (group `""` for core), or `None` for
/// kinds served with the generic table (custom resources, virtual kinds).
pub fn printer_for(group: &str, kind: &str) -> Option<Printer> {
    let p = |columns: &'static [Column], row: RowFn| Some(Printer { columns, row });
    match (group, kind) {
        ("", "Pod") => p(pod::POD_COLUMNS, pod::pod_row),
        ("", "PodTemplate") => p(pod::POD_TEMPLATE_COLUMNS, pod::pod_template_row),
        ("", "ReplicationController") => p(pod::RC_COLUMNS, pod::rc_row),
        ("", "Service") => p(core::SERVICE_COLUMNS, core::service_row),
        ("", "Endpoints") => p(core::ENDPOINTS_COLUMNS, core::endpoints_row),
        ("", "Node") => p(core::NODE_COLUMNS, core::node_row),
        ("", "Namespace") => p(core::NAMESPACE_COLUMNS, core::namespace_row),
        ("", "Event") | ("events.k8s.io", "Event") => p(core::EVENT_COLUMNS, core::event_row),
        ("", "Secret") => p(core::SECRET_COLUMNS, core::secret_row),
        ("", "ServiceAccount") => p(core::SERVICE_ACCOUNT_COLUMNS, core::service_account_row),
        ("", "ConfigMap") => p(core::CONFIG_MAP_COLUMNS, core::config_map_row),
        ("", "ResourceQuota") => p(core::RESOURCE_QUOTA_COLUMNS, core::resource_quota_row),
        ("", "ComponentStatus") => p(core::COMPONENT_STATUS_COLUMNS, core::component_status_row),
        ("", "PersistentVolume") => p(storage::PV_COLUMNS, storage::pv_row),
        ("", "PersistentVolumeClaim") => p(storage::PVC_COLUMNS, storage::pvc_row),
        ("", "LimitRange") => p(DEFAULT_COLUMNS, default_row),
        ("apps", "Deployment") => p(apps::DEPLOYMENT_COLUMNS, apps::deployment_row),
        ("apps", "ReplicaSet") => p(apps::REPLICA_SET_COLUMNS, apps::replica_set_row),
        ("apps", "StatefulSet") => p(apps::STATEFUL_SET_COLUMNS, apps::stateful_set_row),
        ("apps", "DaemonSet") => p(apps::DAEMON_SET_COLUMNS, apps::daemon_set_row),
        ("apps", "ControllerRevision") => p(apps::CONTROLLER_REVISION_COLUMNS, apps::controller_revision_row),
        ("batch", "Job") => p(apps::JOB_COLUMNS, apps::job_row),
        ("batch", "CronJob") => p(apps::CRON_JOB_COLUMNS, apps::cron_job_row),
        ("autoscaling", "HorizontalPodAutoscaler") => p(apps::HPA_COLUMNS, apps::hpa_row),
        ("policy", "PodDisruptionBudget") => p(apps::PDB_COLUMNS, apps::pdb_row),
        ("networking.k8s.io", "Ingress") => p(networking::INGRESS_COLUMNS, networking::ingress_row),
        ("networking.k8s.io", "IngressClass") => p(networking::INGRESS_CLASS_COLUMNS, networking::ingress_class_row),
        ("networking.k8s.io", "NetworkPolicy") => p(networking::NETWORK_POLICY_COLUMNS, networking::network_policy_row),
        ("networking.k8s.io", "ServiceCIDR") => p(networking::SERVICE_CIDR_COLUMNS, networking::service_cidr_row),
        ("networking.k8s.io", "IPAddress") => p(networking::IP_ADDRESS_COLUMNS, networking::ip_address_row),
        ("discovery.k8s.io", "EndpointSlice") => p(networking::ENDPOINT_SLICE_COLUMNS, networking::endpoint_slice_row),
        ("storage.k8s.io", "StorageClass") => p(storage::STORAGE_CLASS_COLUMNS, storage::storage_class_row),
        ("storage.k8s.io", "CSIDriver") => p(storage::CSI_DRIVER_COLUMNS, storage::csi_driver_row),
        ("storage.k8s.io", "CSINode") => p(storage::CSI_NODE_COLUMNS, storage::csi_node_row),
        ("storage.k8s.io", "CSIStorageCapacity") => {
            p(storage::CSI_STORAGE_CAPACITY_COLUMNS, storage::csi_storage_capacity_row)
        }
        ("storage.k8s.io", "VolumeAttachment") => p(storage::VOLUME_ATTACHMENT_COLUMNS, storage::volume_attachment_row),
        ("rbac.authorization.k8s.io", "RoleBinding") => p(cluster::ROLE_BINDING_COLUMNS, cluster::role_binding_row),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding") => {
            p(cluster::CLUSTER_ROLE_BINDING_COLUMNS, cluster::role_binding_row)
        }
        ("rbac.authorization.k8s.io", "Role" | "ClusterRole") => p(DEFAULT_COLUMNS, default_row),
        ("apiextensions.k8s.io", "CustomResourceDefinition") => p(DEFAULT_COLUMNS, default_row),
        ("certificates.k8s.io", "CertificateSigningRequest") => p(cluster::CSR_COLUMNS, cluster::csr_row),
        ("coordination.k8s.io", "Lease") => p(cluster::LEASE_COLUMNS, cluster::lease_row),
        ("scheduling.k8s.io", "PriorityClass") => p(cluster::PRIORITY_CLASS_COLUMNS, cluster::priority_class_row),
        ("node.k8s.io", "RuntimeClass") => p(cluster::RUNTIME_CLASS_COLUMNS, cluster::runtime_class_row),
        ("admissionregistration.k8s.io", "MutatingWebhookConfiguration" | "ValidatingWebhookConfiguration") => {
            p(cluster::WEBHOOK_COLUMNS, cluster::webhook_row)
        }
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy") => p(cluster::VAP_COLUMNS, cluster::vap_row),
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding") => {
            p(cluster::VAP_BINDING_COLUMNS, cluster::vap_binding_row)
        }
        ("flowcontrol.apiserver.k8s.io", "FlowSchema") => p(cluster::FLOW_SCHEMA_COLUMNS, cluster::flow_schema_row),
        ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration") => {
            p(cluster::PRIORITY_LEVEL_COLUMNS, cluster::priority_level_row)
        }
        ("apiregistration.k8s.io", "APIService") => p(cluster::API_SERVICE_COLUMNS, cluster::api_service_row),
        _ => None,
    }
}

/// The order upstream's list printer gives rows of `group`/`kind`, when it
/// is not the list's own order: FlowSchemas by matching precedence, then
/// name (`printFlowSchemaList` sorts by `FlowSchemaSequence`).
pub fn sort_list(group: &str, kind: &str, items: &mut [&Value]) {
    if (group, kind) == ("flowcontrol.apiserver.k8s.io", "FlowSchema") {
        items.sort_by(|a, b| {
            let key = |o: &Value| (int(&o["spec"]["matchingPrecedence"]), s(&o["metadata"]["name"]).to_string());
            key(a).cmp(&key(b))
        });
    }
}

/// Row conditions upstream attaches (only pods: `Completed` for
/// Succeeded and Failed pods), as `TableRow.conditions`.
pub fn row_conditions(group: &str, kind: &str, obj: &Value) -> Option<Value> {
    if (group, kind) != ("", "Pod") {
        return None;
    }
    let (reason, message) = match obj["status"]["phase"].as_str() {
        Some("Succeeded") => ("Succeeded", "The pod has completed successfully."),
        Some("Failed") => ("Failed", "The pod failed."),
        _ => return None,
    };
    Some(json!([{"type": "Completed", "status": "True", "reason": reason, "message": message}]))
}

/// `columnDefinitions` JSON of `columns`.
pub fn column_definitions(columns: &[Column]) -> Value {
    Value::Array(
        columns
            .iter()
            .map(|c| {
                json!({"name": c.name, "type": c.ty, "format": c.format, "description": c.description, "priority": c.priority})
            })
            .collect(),
    )
}

/// Columns of upstream's default table convertor
/// (`rest.NewDefaultTableConvertor`), used for built-in kinds without a
/// printer (Role, ClusterRole, LimitRange, CustomResourceDefinition).
pub const DEFAULT_COLUMNS: &[Column] = &[NAME, col_fmt("Created At", "date", "", AGE_DOC, 0)];

/// Default table row: name and the creation time in RFC 3339 (UTC).
pub fn default_row(obj: &Value, _now: Timestamp) -> Vec<Value> {
    let created = match obj["metadata"]["creationTimestamp"].as_str().and_then(|t| t.parse::<Timestamp>().ok()) {
        Some(t) => crate::meta::format_time(t),
        None => "0001-01-01T00:00:00Z".to_string(),
    };
    vec![name(obj), Value::String(created)]
}

// ---- shared helpers (upstream's printers.go helpers) ----

/// The string at `v`, or `""`.
pub(crate) fn s(v: &Value) -> &str {
    v.as_str().unwrap_or("")
}

/// The integer at `v`, or 0.
pub(crate) fn int(v: &Value) -> i64 {
    v.as_i64().unwrap_or(0)
}

/// The array at `v`, or an empty slice.
pub(crate) fn arr(v: &Value) -> &[Value] {
    v.as_array().map_or(&[][..], |a| a.as_slice())
}

/// A string cell.
pub(crate) fn cell(v: impl Into<String>) -> Value {
    Value::String(v.into())
}

/// The name cell (`metadata.name`).
pub(crate) fn name(obj: &Value) -> Value {
    cell(s(&obj["metadata"]["name"]))
}

/// `s` or `<none>` when empty.
pub(crate) fn or_none(v: &str) -> String {
    if v.is_empty() {
        "<none>".into()
    } else {
        v.to_string()
    }
}

/// A parsed RFC 3339 timestamp, `None` when absent or zero.
pub(crate) fn timestamp(v: &Value) -> Option<Timestamp> {
    v.as_str().and_then(|t| t.parse::<Timestamp>().ok())
}

/// `translateTimestampSince`: the age of a timestamp, `<unknown>` if unset.
pub fn since(v: &Value, now: Timestamp) -> String {
    match timestamp(v) {
        Some(t) => human_duration(now.duration_since(t).as_secs()),
        None => "<unknown>".into(),
    }
}

/// The Age cell: `translateTimestampSince(metadata.creationTimestamp)`.
pub(crate) fn age(obj: &Value, now: Timestamp) -> Value {
    cell(since(&obj["metadata"]["creationTimestamp"], now))
}

/// apimachinery's `duration.HumanDuration` of `secs` seconds.
pub fn human_duration(secs: i64) -> String {
    if secs < -1 {
        return "<invalid>".into();
    }
    let s = secs.max(0);
    if s < 120 {
        return format!("{s}s");
    }
    let m = s / 60;
    if m < 10 {
        return if s % 60 == 0 { format!("{m}m") } else { format!("{m}m{}s", s % 60) };
    }
    if m < 180 {
        return format!("{m}m");
    }
    let h = s / 3600;
    if h < 8 {
        return if m % 60 == 0 { format!("{h}h") } else { format!("{h}h{}m", m % 60) };
    }
    if h < 48 {
        return format!("{h}h");
    }
    let d = h / 24;
    if h < 24 * 8 {
        return if h % 24 == 0 { format!("{d}d") } else { format!("{d}d{}h", h % 24) };
    }
    if h < 24 * 365 * 2 {
        return format!("{d}d");
    }
    let y = d / 365;
    if h < 24 * 365 * 8 {
        return if d % 365 == 0 { format!("{y}y") } else { format!("{y}y{}d", d % 365) };
    }
    format!("{y}y")
}

/// `labels.FormatLabels`: `k=v` pairs sorted by key, `<none>` if empty.
pub(crate) fn format_labels(map: &Value) -> String {
    let Some(m) = map.as_object().filter(|m| !m.is_empty()) else { return "<none>".into() };
    let mut pairs: Vec<(&String, &str)> = m.iter().map(|(k, v)| (k, v.as_str().unwrap_or(""))).collect();
    pairs.sort();
    pairs.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(",")
}

/// `LabelSelectorAsSelector(sel).String()`: requirements sorted by key
/// (`k=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`); `""` for empty or
/// nil selectors.
pub(crate) fn selector_string(sel: &Value) -> String {
    let mut reqs: Vec<(String, String)> = Vec::new();
    if let Some(m) = sel["matchLabels"].as_object() {
        for (k, v) in m {
            reqs.push((k.clone(), format!("{k}={}", s(v))));
        }
    }
    for e in arr(&sel["matchExpressions"]) {
        let k = s(&e["key"]).to_string();
        let mut values: Vec<&str> = arr(&e["values"]).iter().map(s).collect();
        values.sort_unstable();
        values.dedup();
        let text = match s(&e["operator"]) {
            "In" => format!("{k} in ({})", values.join(",")),
            "NotIn" => format!("{k} notin ({})", values.join(",")),
            "Exists" => k.clone(),
            "DoesNotExist" => format!("!{k}"),
            _ => continue,
        };
        reqs.push((k, text));
    }
    reqs.sort_by(|a, b| a.0.cmp(&b.0));
    reqs.into_iter().map(|(_, t)| t).collect::<Vec<_>>().join(",")
}

/// `metav1.FormatLabelSelector`: [`selector_string`], `<none>` if empty.
pub(crate) fn format_label_selector(sel: &Value) -> String {
    or_none(&selector_string(sel))
}

/// `layoutContainerCells`: comma-joined container names and images.
pub(crate) fn layout_containers(containers: &Value) -> (Value, Value) {
    let cs = arr(containers);
    let names: Vec<&str> = cs.iter().map(|c| s(&c["name"])).collect();
    let images: Vec<&str> = cs.iter().map(|c| s(&c["image"])).collect();
    (cell(names.join(",")), cell(images.join(",")))
}

/// `listWithMoreString`: the first entries, `" + N more..."`, `<unset>` if none.
pub(crate) fn list_with_more(list: &[String], count: usize, max: usize) -> String {
    let ret = list.join(",");
    if count > max {
        return format!("{ret} + {} more...", count - max);
    }
    if ret.is_empty() {
        "<unset>".into()
    } else {
        ret
    }
}

/// The quantity at `v` in canonical form (`Quantity.String()`), `""` if absent.
pub(crate) fn qty(v: &Value) -> String {
    quantity::canonical(s(v))
}

/// `printBoolPtr`: `True`, `False` or `<unset>`.
pub(crate) fn bool_ptr(v: &Value) -> String {
    match v.as_bool() {
        Some(true) => "True".into(),
        Some(false) => "False".into(),
        None => "<unset>".into(),
    }
}

/// An int-or-string as Go's `IntOrString.String()` prints it.
pub(crate) fn int_or_string(v: &Value) -> String {
    match v {
        Value::Number(n) => n.to_string(),
        Value::String(x) => x.clone(),
        _ => String::new(),
    }
}

#[cfg(test)]
pub(crate) mod test_util {
    use jiff::Timestamp;

    /// A fixed "now" for printer tests: 2026-01-01T00:00:00Z.
    pub fn now() -> Timestamp {
        "2026-01-01T00:00:00Z".parse().unwrap()
    }

    /// The RFC 3339 time `secs` seconds before [`now`].
    pub fn ago(secs: i64) -> String {
        crate::meta::format_time(now() - jiff::SignedDuration::from_secs(secs))
    }
}

#[cfg(test)]
mod tests {
    use super::test_util::{ago, now};
    use super::*;

    #[test]
    fn human_durations_follow_apimachinery() {
        assert_eq!(human_duration(-5), "<invalid>");
        assert_eq!(human_duration(-1), "0s");
        assert_eq!(human_duration(5), "5s");
        assert_eq!(human_duration(119), "119s");
        assert_eq!(human_duration(130), "2m10s");
        assert_eq!(human_duration(180), "3m");
        assert_eq!(human_duration(600), "10m");
        assert_eq!(human_duration(3 * 3600 + 120), "3h2m");
        assert_eq!(human_duration(30 * 3600), "30h");
        assert_eq!(human_duration(2 * 86400 + 3 * 3600), "2d3h");
        assert_eq!(human_duration(45 * 86400), "45d");
        assert_eq!(human_duration(3 * 365 * 86400 + 4 * 86400), "3y4d");
        assert_eq!(human_duration(9 * 365 * 86400), "9y");
    }

    #[test]
    fn since_renders_unknown_for_missing_times() {
        assert_eq!(since(&Value::Null, now()), "<unknown>");
        assert_eq!(since(&json!(ago(182)), now()), "3m2s");
    }

    #[test]
    fn label_formatting_matches_upstream() {
        assert_eq!(format_labels(&json!({"b": "2", "a": "1"})), "a=1,b=2");
        assert_eq!(format_labels(&json!({})), "<none>");
        let sel = json!({"matchLabels": {"app": "web"}, "matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["b", "a"]},
            {"key": "env", "operator": "DoesNotExist"}]});
        assert_eq!(selector_string(&sel), "app=web,!env,tier in (a,b)");
        assert_eq!(format_label_selector(&Value::Null), "<none>");
    }

    #[test]
    fn default_table_prints_created_at() {
        let obj = json!({"metadata": {"name": "admin", "creationTimestamp": "2025-03-04T05:06:07Z"}});
        assert_eq!(default_row(&obj, now()), vec![json!("admin"), json!("2025-03-04T05:06:07Z")]);
        let p = printer_for("rbac.authorization.k8s.io", "ClusterRole").unwrap();
        assert_eq!(p.columns[1].name, "Created At");
        assert_eq!(p.columns[1].ty, "date");
    }

    #[test]
    fn every_printer_row_matches_its_columns() {
        let kinds = [
            ("", "Pod"),
            ("", "PodTemplate"),
            ("", "ReplicationController"),
            ("", "Service"),
            ("", "Endpoints"),
            ("", "Node"),
            ("", "Namespace"),
            ("", "Event"),
            ("events.k8s.io", "Event"),
            ("", "Secret"),
            ("", "ServiceAccount"),
            ("", "ConfigMap"),
            ("", "ResourceQuota"),
            ("", "ComponentStatus"),
            ("", "PersistentVolume"),
            ("", "PersistentVolumeClaim"),
            ("", "LimitRange"),
            ("apps", "Deployment"),
            ("apps", "ReplicaSet"),
            ("apps", "StatefulSet"),
            ("apps", "DaemonSet"),
            ("apps", "ControllerRevision"),
            ("batch", "Job"),
            ("batch", "CronJob"),
            ("autoscaling", "HorizontalPodAutoscaler"),
            ("policy", "PodDisruptionBudget"),
            ("networking.k8s.io", "Ingress"),
            ("networking.k8s.io", "IngressClass"),
            ("networking.k8s.io", "NetworkPolicy"),
            ("networking.k8s.io", "ServiceCIDR"),
            ("networking.k8s.io", "IPAddress"),
            ("discovery.k8s.io", "EndpointSlice"),
            ("storage.k8s.io", "StorageClass"),
            ("storage.k8s.io", "CSIDriver"),
            ("storage.k8s.io", "CSINode"),
            ("storage.k8s.io", "CSIStorageCapacity"),
            ("storage.k8s.io", "VolumeAttachment"),
            ("rbac.authorization.k8s.io", "RoleBinding"),
            ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
            ("rbac.authorization.k8s.io", "Role"),
            ("apiextensions.k8s.io", "CustomResourceDefinition"),
            ("certificates.k8s.io", "CertificateSigningRequest"),
            ("coordination.k8s.io", "Lease"),
            ("scheduling.k8s.io", "PriorityClass"),
            ("node.k8s.io", "RuntimeClass"),
            ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"),
            ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"),
            ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"),
            ("flowcontrol.apiserver.k8s.io", "FlowSchema"),
            ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"),
            ("apiregistration.k8s.io", "APIService"),
        ];
        let obj = json!({"metadata": {"name": "x", "creationTimestamp": ago(10)}});
        for (g, k) in kinds {
            let p = printer_for(g, k).unwrap_or_else(|| panic!("no printer for {g}/{k}"));
            assert_eq!((p.row)(&obj, now()).len(), p.columns.len(), "{g}/{k}");
            assert!(p.columns.iter().any(|c| c.format == "name" && c.name == "Name"), "{g}/{k}");
        }
        assert!(printer_for("example.com", "Widget").is_none());
    }

    #[test]
    fn flow_schemas_list_by_precedence_then_name() {
        let fs = |n: &str, p: i64| json!({"metadata": {"name": n}, "spec": {"matchingPrecedence": p}});
        let (a, b, c) = (fs("b", 100), fs("a", 100), fs("exempt", 1));
        let mut items = vec![&a, &b, &c];
        sort_list("flowcontrol.apiserver.k8s.io", "FlowSchema", &mut items);
        let names: Vec<&str> = items.iter().map(|o| s(&o["metadata"]["name"])).collect();
        assert_eq!(names, ["exempt", "a", "b"]);
        let mut pods = vec![&a, &c];
        sort_list("", "Pod", &mut pods);
        assert_eq!(s(&pods[0]["metadata"]["name"]), "b", "other kinds keep the list order");
    }
}
