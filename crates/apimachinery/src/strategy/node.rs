//! Nodes: `ValidateNode` and `ValidateNodeUpdate` (`pkg/apis/core/validation`)
//! for the spec: valid pod CIDRs (at most one per IP family), taints with a
//! label-name key, a label-value value, a known effect and unique
//! `(key, effect)` pairs (reported, as upstream, under `metadata.taints`);
//! the status may be set on create (the kubelet registers with it);
//! on update pod CIDRs and `providerID` may not change once set,
//! `externalID` never, and `status.addresses` may not repeat.

use serde_json::Value;

use super::{generic, Generic, Strategy};
use crate::errors::StatusCause;
use crate::validation::netaddr::{parse_cidr_sloppy, validate_cidr_for_legacy_field};
use crate::validation::{is_valid_label_value, validate_label_name, BadValue, ErrorList, FieldError, Path};

/// The taint effects upstream accepts, in its order.
pub const TAINT_EFFECTS: [&str; 3] = ["NoSchedule", "PreferNoSchedule", "NoExecute"];
const POD_CIDR_FROZEN: &str = "node updates may not change podCIDR except from \"\" to valid";

/// The strategy of Nodes.
#[derive(Clone, Debug)]
pub struct Node {
    flags: Generic,
}

impl Node {
    /// The strategy with upstream's flags (`/status` subresource).
    #[allow(clippy::new_without_default)]
    pub fn new() -> Node {
        Node { flags: generic::for_builtin("", "Node", true) }
    }
}

/// The pod CIDRs as upstream's internal type holds them: `podCIDRs`, or
/// `[podCIDR]` for a client that only sets the old field.
fn pod_cidrs(node: &Value) -> Vec<String> {
    let spec = node.get("spec").unwrap_or(&Value::Null);
    let list: Vec<String> = spec
        .get("podCIDRs")
        .and_then(Value::as_array)
        .map(|a| a.iter().map(|v| v.as_str().unwrap_or("").to_string()).collect())
        .unwrap_or_default();
    if !list.is_empty() {
        return list;
    }
    spec.get("podCIDR")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(|s| vec![s.to_string()])
        .unwrap_or_default()
}

/// A Go value rendered as `ErrorBody` renders it (its JSON).
fn raw(v: &Value) -> BadValue {
    BadValue::Raw(v.to_string())
}

/// `validateNodeTaints` at `path`.
pub fn validate_taints(taints: &[Value], path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let mut seen: Vec<(String, String)> = Vec::new();
    for (i, t) in taints.iter().enumerate() {
        let idx = path.index(i);
        let key = t.get("key").and_then(Value::as_str).unwrap_or("");
        let value = t.get("value").and_then(Value::as_str).unwrap_or("");
        let effect = t.get("effect").and_then(Value::as_str).unwrap_or("");
        errs.extend(validate_label_name(key, &idx.child("key")));
        let msgs = is_valid_label_value(value);
        if !msgs.is_empty() {
            errs.push(FieldError::invalid(&idx.child("value"), value, &msgs.join(";")));
        }
        if effect.is_empty() {
            errs.push(FieldError::required(&idx.child("effect"), ""));
        } else if !TAINT_EFFECTS.contains(&effect) {
            errs.push(FieldError::not_supported(&idx.child("effect"), effect, &TAINT_EFFECTS));
        }
        if seen.iter().any(|(k, e)| k == key && e == effect) {
            // The internal Taint's JSON: key, value (omitempty), effect, timeAdded (omitempty).
            let mut shown = format!("{{\"key\":{}", Value::from(key));
            if !value.is_empty() {
                shown.push_str(&format!(",\"value\":{}", Value::from(value)));
            }
            shown.push_str(&format!(",\"effect\":{}", Value::from(effect)));
            if let Some(ta) = t.get("timeAdded").filter(|v| !v.is_null()) {
                shown.push_str(&format!(",\"timeAdded\":{ta}"));
            }
            shown.push('}');
            let mut e = FieldError::duplicate(&idx, BadValue::Raw(shown));
            e.detail = "taints must be unique by key and effect pair".into();
            errs.push(e);
            continue;
        }
        seen.push((key.to_string(), effect.to_string()));
    }
    errs
}

/// The spec checks `ValidateNode` makes on create.
pub fn validate_node(node: &Value) -> ErrorList {
    let mut errs = ErrorList::new();
    let taints = node.pointer("/spec/taints").and_then(Value::as_array).cloned().unwrap_or_default();
    if !taints.is_empty() {
        errs.extend(validate_taints(&taints, &Path::new("metadata").child("taints")));
    }
    let cidrs = pod_cidrs(node);
    let path = Path::new("spec").child("podCIDRs");
    for (i, c) in cidrs.iter().enumerate() {
        errs.extend(validate_cidr_for_legacy_field(&path.index(i), c));
    }
    if cidrs.len() > 1 {
        let parsed: Vec<_> = cidrs.iter().map(|c| (c, parse_cidr_sloppy(c))).collect();
        if let Some((bad, _)) = parsed.iter().find(|(_, p)| p.is_none()) {
            let detail =
                format!("invalid PodCIDRs. failed to check with dual stack with error:invalid CIDR address: {bad}");
            errs.push(FieldError::internal(&path, &detail));
        }
        let v4 = parsed.iter().filter_map(|(_, p)| *p).filter(|p| p.network.is_ipv4()).count();
        let dual_stack = parsed.iter().all(|(_, p)| p.is_some()) && v4 > 0 && v4 < cidrs.len();
        if !dual_stack || cidrs.len() > 2 {
            errs.push(FieldError::invalid(
                &path,
                raw(&serde_json::json!(cidrs)),
                "may specify no more than one CIDR for each IP family",
            ));
        }
    }
    errs
}

/// `ValidateNodeUpdate` (spec and status rules; metadata is the store's).
pub fn validate_node_update(new: &Value, old: &Value) -> ErrorList {
    let mut errs = ErrorList::new();
    let addresses = new.pointer("/status/addresses").and_then(Value::as_array).cloned().unwrap_or_default();
    let addr_path = Path::new("status").child("addresses");
    for (i, a) in addresses.iter().enumerate() {
        if addresses[..i].contains(a) {
            // The NodeAddress struct's JSON, in its field order.
            let field = |k: &str| Value::from(a.get(k).and_then(Value::as_str).unwrap_or(""));
            let shown = format!("{{\"type\":{},\"address\":{}}}", field("type"), field("address"));
            errs.push(FieldError::duplicate(&addr_path.index(i), BadValue::Raw(shown)));
        }
    }
    let (new_cidrs, old_cidrs) = (pod_cidrs(new), pod_cidrs(old));
    let path = Path::new("spec").child("podCIDRs");
    if !old_cidrs.is_empty() {
        if old_cidrs.len() != new_cidrs.len() {
            errs.push(FieldError::forbidden(&path, POD_CIDR_FROZEN));
        } else {
            for (i, (o, n)) in old_cidrs.iter().zip(&new_cidrs).enumerate() {
                if o != n {
                    errs.push(FieldError::forbidden(&path.index(i), POD_CIDR_FROZEN));
                }
            }
        }
    }
    let provider = |v: &Value| v.pointer("/spec/providerID").and_then(Value::as_str).unwrap_or("").to_string();
    let old_provider = provider(old);
    if !old_provider.is_empty() && old_provider != provider(new) {
        errs.push(FieldError::forbidden(
            &Path::new("spec").child("providerID"),
            "node updates may not change providerID except from \"\" to valid",
        ));
    }
    let taints = new.pointer("/spec/taints").and_then(Value::as_array).cloned().unwrap_or_default();
    if !taints.is_empty() {
        errs.extend(validate_taints(&taints, &Path::new("metadata").child("taints")));
    }
    let external = |v: &Value| v.pointer("/spec/externalID").and_then(Value::as_str).unwrap_or("").to_string();
    if external(new) != external(old) {
        errs.push(FieldError::forbidden(&Path::new("spec").child("externalID"), "may not be updated"));
    }
    errs
}

fn remove(obj: &mut Value, parent: &str, field: &str) {
    if let Some(m) = obj.get_mut(parent).and_then(Value::as_object_mut) {
        m.remove(field);
    }
}

impl Strategy for Node {
    /// Nodes may set every field on create, status included (the kubelet
    /// registers with its status); the retired dynamic kubelet config
    /// (`spec.configSource`, `status.config`) is dropped.
    fn prepare_for_create(&self, obj: &mut Value) {
        remove(obj, "spec", "configSource");
        remove(obj, "status", "config");
    }
    /// The status stays as stored; `spec.configSource` is dropped unless
    /// the stored node already has one.
    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        super::copy_field(new, old, "status");
        if old.pointer("/spec/configSource").is_none_or(Value::is_null) {
            remove(new, "spec", "configSource");
        }
    }
    fn validate_create(&self, obj: &Value) -> Vec<StatusCause> {
        validate_node(obj).to_causes()
    }
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<StatusCause> {
        validate_node_update(new, old).to_causes()
    }
    fn has_status_subresource(&self) -> bool {
        true
    }
    fn tracks_generation(&self) -> bool {
        self.flags.tracks_generation
    }
    fn allow_create_on_update(&self) -> bool {
        self.flags.allow_create_on_update
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::strategy::cause_texts;

    #[test]
    fn taints_and_pod_cidrs_on_create() {
        let node = json!({"spec": {"podCIDRs": ["10.0.0.0/24", "10.1.0.0/24"], "taints": [
            {"key": "a", "effect": "NoSchedule"}, {"key": "a", "effect": "NoSchedule", "value": "v"},
            {"key": "b", "effect": "Sometimes", "value": "-x"}, {"key": "c/d/e", "effect": ""}]}});
        assert_eq!(
            cause_texts(Node::new().validate_create(&node)),
            vec![
                r#"metadata.taints[1]: Duplicate value: {"key":"a","value":"v","effect":"NoSchedule"}: taints must be unique by key and effect pair"#,
                r#"metadata.taints[2].value: Invalid value: "-x": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"#,
                r#"metadata.taints[2].effect: Unsupported value: "Sometimes": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute""#,
                r#"metadata.taints[3].key: Invalid value: "c/d/e": a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"#,
                "metadata.taints[3].effect: Required value",
                r#"spec.podCIDRs: Invalid value: ["10.0.0.0/24","10.1.0.0/24"]: may specify no more than one CIDR for each IP family"#,
            ]
        );
        let single = json!({"spec": {"podCIDR": "10.0.0.0/33"}});
        assert_eq!(
            cause_texts(Node::new().validate_create(&single)),
            vec![
                r#"spec.podCIDRs[0]: Invalid value: "10.0.0.0/33": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"#
            ]
        );
        let dual = json!({"spec": {"podCIDRs": ["10.0.0.0/24", "fd00::/64"], "taints": [{"key": "k", "effect": "NoExecute"}]}});
        assert!(Node::new().validate_create(&dual).is_empty());
    }

    #[test]
    fn create_keeps_the_status() {
        let mut node = json!({"spec": {"configSource": {}}, "status": {"capacity": {"cpu": "2"}, "config": {}}});
        Node::new().prepare_for_create(&mut node);
        assert_eq!(node, json!({"spec": {}, "status": {"capacity": {"cpu": "2"}}}));
        let mut new = json!({"spec": {"configSource": {}, "unschedulable": true}, "status": {}});
        Node::new().prepare_for_update(&mut new, &json!({"status": {"phase": "Running"}}));
        assert_eq!(new, json!({"spec": {"unschedulable": true}, "status": {"phase": "Running"}}));
    }

    #[test]
    fn set_fields_stay_on_update() {
        let old = json!({"spec": {"podCIDRs": ["10.0.0.0/24"], "providerID": "aws://1"}});
        let new = json!({"spec": {"podCIDRs": ["10.0.1.0/24"], "providerID": "aws://2", "externalID": "x"},
            "status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.5"}, {"type": "InternalIP", "address": "10.0.0.5"}]}});
        assert_eq!(
            cause_texts(Node::new().validate_update(&new, &old)),
            vec![
                r#"status.addresses[1]: Duplicate value: {"type":"InternalIP","address":"10.0.0.5"}"#,
                r#"spec.podCIDRs[0]: Forbidden: node updates may not change podCIDR except from "" to valid"#,
                r#"spec.providerID: Forbidden: node updates may not change providerID except from "" to valid"#,
                "spec.externalID: Forbidden: may not be updated",
            ]
        );
        let unset = json!({"spec": {}});
        let assigned = json!({"spec": {"podCIDR": "10.0.0.0/24", "providerID": "aws://1", "unschedulable": true}});
        assert!(Node::new().validate_update(&assigned, &unset).is_empty());
        let other = json!({"spec": {"podCIDRs": ["10.0.0.0/24", "fd00::/64"]}});
        assert_eq!(
            cause_texts(Node::new().validate_update(&other, &assigned)),
            vec![
                r#"spec.podCIDRs: Forbidden: node updates may not change podCIDR except from "" to valid"#,
                "spec.providerID: Forbidden: node updates may not change providerID except from \"\" to valid"
            ]
        );
    }
}
