//! Services: upstream's defaulting (`SetDefaults_Service` and the
//! registry's dual-stack defaults) and the common validation rules
//! (`ValidateService`). ClusterIP and NodePort *allocation* needs state and
//! lives in the API server (`storage::ipalloc`); this strategy is pure.

use serde_json::{json, Value};

use super::{generic, Generic, Strategy};
use crate::errors::StatusCause;
use crate::validation::{go_string_slice, BadValue, ErrorList, FieldError, NameValidation, Path};

/// The service types upstream supports.
pub const SERVICE_TYPES: [&str; 4] = ["ClusterIP", "NodePort", "LoadBalancer", "ExternalName"];

/// The strategy of core/v1 Services.
#[derive(Clone, Debug)]
pub struct Service {
    flags: Generic,
}

impl Service {
    /// The strategy with upstream's flags for Services.
    #[allow(clippy::new_without_default)]
    pub fn new() -> Service {
        Service { flags: generic::for_builtin("", "Service", true) }
    }
}

/// The type of a Service (`ClusterIP` when unset).
pub fn service_type(obj: &Value) -> &str {
    obj.pointer("/spec/type").and_then(Value::as_str).unwrap_or("ClusterIP")
}

/// Whether the Service is headless (`clusterIP: None`).
pub fn is_headless(obj: &Value) -> bool {
    obj.pointer("/spec/clusterIP").and_then(Value::as_str) == Some("None")
}

/// Whether Services of this type get NodePorts.
pub fn needs_node_ports(obj: &Value) -> bool {
    matches!(service_type(obj), "NodePort" | "LoadBalancer")
}

impl Strategy for Service {
    fn default(&self, obj: &mut Value) {
        let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else { return };
        let ty = spec.get("type").and_then(Value::as_str).unwrap_or("ClusterIP").to_string();
        spec.entry("type").or_insert(json!("ClusterIP"));
        if ty == "ExternalName" {
            return;
        }
        spec.entry("sessionAffinity").or_insert(json!("None"));
        spec.entry("internalTrafficPolicy").or_insert(json!("Cluster"));
        if matches!(ty.as_str(), "NodePort" | "LoadBalancer") {
            spec.entry("externalTrafficPolicy").or_insert(json!("Cluster"));
        }
        if ty == "LoadBalancer" {
            spec.entry("allocateLoadBalancerNodePorts").or_insert(json!(true));
        }
        if let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) {
            for port in ports.iter_mut().filter_map(Value::as_object_mut) {
                port.entry("protocol").or_insert(json!("TCP"));
                if port.get("targetPort").is_none_or(|t| t.is_null() || t == &json!(0) || t == &json!("")) {
                    let p = port.get("port").cloned().unwrap_or(Value::Null);
                    port.insert("targetPort".into(), p);
                }
            }
        }
        // clusterIPs mirrors clusterIP (upstream's dual-stack normalization).
        let ip = spec.get("clusterIP").and_then(Value::as_str).unwrap_or("").to_string();
        let ips_empty = spec.get("clusterIPs").and_then(Value::as_array).is_none_or(|a| a.is_empty());
        if !ip.is_empty() && ips_empty {
            spec.insert("clusterIPs".into(), json!([ip]));
        } else if ip.is_empty() && !ips_empty {
            let first = spec["clusterIPs"][0].clone();
            spec.insert("clusterIP".into(), first);
        }
        // IPv4 single stack: every non-ExternalName Service but a headless
        // one without a selector gets the family fields.
        let headless_without_selector =
            ip == "None" && spec.get("selector").and_then(Value::as_object).is_none_or(|m| m.is_empty());
        if !headless_without_selector || spec.contains_key("ipFamilyPolicy") {
            spec.entry("ipFamilyPolicy").or_insert(json!("SingleStack"));
            spec.entry("ipFamilies").or_insert(json!(["IPv4"]));
        }
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        super::copy_field(new, old, "status");
        patch_allocated_values(new, old);
        drop_type_dependent_fields(new, old);
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        super::reset_status(obj);
        obj["status"] = json!({"loadBalancer": {}});
    }

    fn validate_create(&self, obj: &Value) -> Vec<StatusCause> {
        validate(obj).to_causes()
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<StatusCause> {
        let mut errs = validate(new);
        let spec = Path::new("spec");
        // A ClusterIP, once set, may only change by going to or from ExternalName.
        let both_have_ips = service_type(new) != "ExternalName" && service_type(old) != "ExternalName";
        let (new_ip, old_ip) = (
            new.pointer("/spec/clusterIP").and_then(Value::as_str).unwrap_or(""),
            old.pointer("/spec/clusterIP").and_then(Value::as_str).unwrap_or(""),
        );
        if both_have_ips && !old_ip.is_empty() && new_ip != old_ip {
            let value = BadValue::Raw(go_string_slice(&[new_ip], false));
            errs.push(FieldError::invalid(&spec.child("clusterIPs").index(0), value, "may not change once set"));
        }
        errs.to_causes()
    }

    fn has_status_subresource(&self) -> bool {
        true
    }
    fn tracks_generation(&self) -> bool {
        self.flags.tracks_generation
    }
    fn name_validation(&self) -> NameValidation {
        NameValidation::Dns1035Label
    }
    fn allow_create_on_update(&self) -> bool {
        self.flags.allow_create_on_update
    }
}

fn needs_cluster_ip(obj: &Value) -> bool {
    service_type(obj) != "ExternalName"
}

fn spec_str<'a>(obj: &'a Value, field: &str) -> &'a str {
    obj.get("spec").and_then(|s| s.get(field)).and_then(Value::as_str).unwrap_or("")
}

/// Upstream's `patchAllocatedValues`: an update that omits the allocated
/// ClusterIP or NodePorts keeps them (when both versions need them).
fn patch_allocated_values(new: &mut Value, old: &Value) {
    if needs_cluster_ip(old) && needs_cluster_ip(new) && spec_str(new, "clusterIP").is_empty() {
        for f in ["clusterIP", "clusterIPs"] {
            if let Some(v) = old.pointer(&format!("/spec/{f}")) {
                new["spec"][f] = v.clone();
            }
        }
    }
    if needs_node_ports(old) && needs_node_ports(new) {
        let old_ports = old.pointer("/spec/ports").and_then(Value::as_array).cloned().unwrap_or_default();
        if let Some(ports) = new.pointer_mut("/spec/ports").and_then(Value::as_array_mut) {
            for port in ports.iter_mut() {
                if port.get("nodePort").and_then(Value::as_i64).unwrap_or(0) != 0 {
                    continue;
                }
                let same = old_ports.iter().find(|o| o.get("port") == port.get("port"));
                if let Some(np) = same.and_then(|o| o.get("nodePort")).filter(|n| !n.is_null()) {
                    port["nodePort"] = np.clone();
                }
            }
        }
    }
}

/// Upstream's `dropTypeDependentFields`: a type change that leaves the
/// ClusterIP or NodePorts as they were clears the ones the new type does
/// not use.
fn drop_type_dependent_fields(new: &mut Value, old: &Value) {
    if needs_cluster_ip(old) && !needs_cluster_ip(new) && spec_str(new, "clusterIP") == spec_str(old, "clusterIP") {
        if let Some(spec) = new.get_mut("spec").and_then(Value::as_object_mut) {
            for f in
                ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy", "internalTrafficPolicy", "sessionAffinity"]
            {
                spec.remove(f);
            }
        }
    }
    if needs_node_ports(old) && !needs_node_ports(new) {
        if let Some(ports) = new.pointer_mut("/spec/ports").and_then(Value::as_array_mut) {
            for port in ports.iter_mut().filter_map(Value::as_object_mut) {
                port.remove("nodePort");
            }
        }
        if let Some(spec) = new.get_mut("spec").and_then(Value::as_object_mut) {
            spec.remove("externalTrafficPolicy");
        }
    }
}

/// The common `ValidateService` rules.
fn validate(obj: &Value) -> ErrorList {
    let mut errs = ErrorList::new();
    let spec_path = Path::new("spec");
    let ty = service_type(obj);
    if !SERVICE_TYPES.contains(&ty) {
        errs.push(FieldError::not_supported(&spec_path.child("type"), ty, &SERVICE_TYPES));
        return errs;
    }
    let spec = obj.get("spec").cloned().unwrap_or(Value::Null);
    let ports = spec.get("ports").and_then(Value::as_array).cloned().unwrap_or_default();
    let ports_path = spec_path.child("ports");
    if ty == "ExternalName" {
        if spec.get("externalName").and_then(Value::as_str).unwrap_or("").is_empty() {
            errs.push(FieldError::required(&spec_path.child("externalName"), ""));
        }
    } else if ports.is_empty() && !is_headless(obj) {
        errs.push(FieldError::required(&ports_path, ""));
    }
    if let Some(ip) = spec.get("clusterIP").and_then(Value::as_str) {
        if !ip.is_empty() && ip != "None" && ip.parse::<std::net::IpAddr>().is_err() {
            errs.push(FieldError::invalid(
                &spec_path.child("clusterIPs").index(0),
                ip,
                "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
            ));
        }
        if ip == "None" && matches!(ty, "NodePort" | "LoadBalancer") {
            errs.push(FieldError::invalid(
                &spec_path.child("clusterIPs").index(0),
                ip,
                "may not be set to 'None' for LoadBalancer services",
            ));
        }
    }
    let mut names = std::collections::HashSet::new();
    let mut seen = std::collections::HashSet::new();
    for (i, port) in ports.iter().enumerate() {
        let p = ports_path.index(i);
        let name = port.get("name").and_then(Value::as_str).unwrap_or("");
        if ports.len() > 1 && name.is_empty() {
            errs.push(FieldError::required(&p.child("name"), ""));
        } else if !name.is_empty() && !names.insert(name.to_string()) {
            errs.push(FieldError::duplicate(&p.child("name"), name));
        }
        let number = port.get("port").and_then(Value::as_i64).unwrap_or(0);
        if !(1..=65535).contains(&number) {
            errs.push(FieldError::invalid(&p.child("port"), number, "must be between 1 and 65535, inclusive"));
        }
        let protocol = port.get("protocol").and_then(Value::as_str).unwrap_or("TCP");
        if !["TCP", "UDP", "SCTP"].contains(&protocol) {
            errs.push(FieldError::not_supported(&p.child("protocol"), protocol, &["SCTP", "TCP", "UDP"]));
        }
        if !seen.insert((number, protocol.to_string())) {
            let value = BadValue::Raw(format!("core.ServicePort{{Port:{number}, Protocol:\"{protocol}\"}}"));
            errs.push(FieldError::duplicate(&p, value));
        }
        if let Some(np) = port.get("nodePort").and_then(Value::as_i64).filter(|n| *n != 0) {
            if !needs_node_ports(obj) {
                errs.push(FieldError::forbidden(&p.child("nodePort"), "may not be used when `type` is 'ClusterIP'"));
            } else if !(1..=65535).contains(&np) {
                errs.push(FieldError::invalid(&p.child("nodePort"), np, "must be between 1 and 65535, inclusive"));
            }
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_of_a_cluster_ip_and_a_node_port_service() {
        let mut svc = json!({"spec": {"selector": {"app": "x"}, "ports": [{"port": 80}]}});
        Service::new().default(&mut svc);
        let spec = &svc["spec"];
        assert_eq!(spec["type"], "ClusterIP");
        assert_eq!(spec["sessionAffinity"], "None");
        assert_eq!(spec["internalTrafficPolicy"], "Cluster");
        assert_eq!(spec["ipFamilyPolicy"], "SingleStack");
        assert_eq!(spec["ipFamilies"], json!(["IPv4"]));
        assert_eq!(spec["ports"][0]["protocol"], "TCP");
        assert_eq!(spec["ports"][0]["targetPort"], 80);
        assert!(spec.get("externalTrafficPolicy").is_none());
        let mut np = json!({"spec": {"type": "NodePort", "ports": [{"port": 80, "targetPort": "http"}]}});
        Service::new().default(&mut np);
        assert_eq!(np["spec"]["externalTrafficPolicy"], "Cluster");
        assert_eq!(np["spec"]["ports"][0]["targetPort"], "http");
        let mut en = json!({"spec": {"type": "ExternalName", "externalName": "example.com"}});
        Service::new().default(&mut en);
        assert!(en["spec"].get("sessionAffinity").is_none());
        assert!(validate(&en).is_empty());
    }

    #[test]
    fn validation_of_ports_types_and_cluster_ips() {
        let bad = json!({"spec": {"type": "Weird"}});
        assert_eq!(validate(&bad).to_causes()[0].field, "spec.type");
        let no_ports = json!({"spec": {"type": "ClusterIP"}});
        assert_eq!(validate(&no_ports).to_causes()[0].field, "spec.ports");
        let headless = json!({"spec": {"clusterIP": "None"}});
        assert!(validate(&headless).is_empty());
        let unnamed = json!({"spec": {"ports": [{"port": 80}, {"port": 81}]}});
        assert_eq!(validate(&unnamed).to_causes()[0].field, "spec.ports[0].name");
        let node_port = json!({"spec": {"ports": [{"port": 80, "nodePort": 30001}]}});
        assert_eq!(validate(&node_port).to_causes()[0].field, "spec.ports[0].nodePort");
        let old = json!({"spec": {"clusterIP": "10.43.0.5", "ports": [{"port": 80}]}});
        let new = json!({"spec": {"clusterIP": "10.43.0.6", "ports": [{"port": 80}]}});
        let causes = Service::new().validate_update(&new, &old);
        assert_eq!(causes[0].field, "spec.clusterIPs[0]");
    }

    #[test]
    fn updates_keep_allocations_and_type_changes_drop_them() {
        let old = json!({"spec": {"type": "NodePort", "clusterIP": "10.43.0.5", "clusterIPs": ["10.43.0.5"],
            "externalTrafficPolicy": "Cluster", "ports": [{"port": 80, "nodePort": 30080}]}});
        let mut new = json!({"spec": {"type": "NodePort", "ports": [{"port": 80}]}});
        Service::new().prepare_for_update(&mut new, &old);
        assert_eq!(new["spec"]["clusterIP"], "10.43.0.5");
        assert_eq!(new["spec"]["ports"][0]["nodePort"], 30080);
        let mut en = old.clone();
        en["spec"]["type"] = json!("ExternalName");
        en["spec"]["externalName"] = json!("example.com");
        Service::new().prepare_for_update(&mut en, &old);
        assert!(en["spec"].get("clusterIP").is_none() && en["spec"]["ports"][0].get("nodePort").is_none());
    }
}
