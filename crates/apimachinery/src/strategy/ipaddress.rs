//! IPAddress and ServiceCIDR of `networking.k8s.io/v1` (upstream
//! `pkg/apis/networking/validation` `ValidateIPAddress{,Update}` and
//! `ValidateServiceCIDR{,Update}`):
//!
//! * IPAddress — the name is an IP address in canonical form
//!   (`IsValidIP`: no leading zeros, no IPv4-mapped IPv6, canonical text);
//!   `spec.parentRef` is required (resource and name path segments, group a
//!   DNS subdomain when set, namespace a path segment when set) and never
//!   changes.
//! * ServiceCIDR — `spec.cidrs` holds one or two CIDRs (two only one per
//!   family), each valid and canonical (`IsValidCIDR`); the list never
//!   changes on update.

use std::net::IpAddr;

use serde_json::Value;

use super::{generic, Generic, Strategy};
use crate::errors::StatusCause;
use crate::validation::netaddr::{parse_cidr_sloppy, parse_ip_sloppy};
use crate::validation::{
    go_quote, go_string_slice, is_dns1123_subdomain, is_valid_path_segment_name, BadValue, ErrorList, FieldError,
    NameValidation, Path, FIELD_IMMUTABLE_ERROR_MSG,
};

/// Which kind an [`IpKinds`] strategy serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    IpAddress,
    ServiceCidr,
}

/// The strategy of IPAddress and ServiceCIDR.
#[derive(Clone, Debug)]
pub struct IpKinds {
    kind: Kind,
    flags: Generic,
}

impl IpKinds {
    /// The strategy of `kind` (`IPAddress`, `ServiceCIDR`), or `None`.
    pub fn for_kind(kind: &str, has_status_subresource: bool) -> Option<IpKinds> {
        let k = match kind {
            "IPAddress" => Kind::IpAddress,
            "ServiceCIDR" => Kind::ServiceCidr,
            _ => return None,
        };
        Some(IpKinds { kind: k, flags: generic::for_builtin("networking.k8s.io", kind, has_status_subresource) })
    }
}

fn str_at<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// Whether an IPv4 dotted quad has an octet with a leading zero (which
/// Go's `netip.ParseAddr` refuses but the sloppy parser accepts).
fn has_leading_zero(s: &str) -> bool {
    let v4 = s.rsplit(':').next().unwrap_or(s);
    v4.contains('.') && v4.split('.').any(|o| o.len() > 1 && o.starts_with('0'))
}

fn is_4in6(ip: IpAddr) -> bool {
    matches!(ip, IpAddr::V6(v6) if v6.to_ipv4_mapped().is_some())
}

/// `IsValidIP`'s messages for `value` (upstream's strict IP check).
pub fn ip_messages(value: &str) -> Vec<String> {
    let Some(ip) = parse_ip_sloppy(value) else {
        return vec!["must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)".into()];
    };
    let mut msgs = Vec::new();
    if has_leading_zero(value) {
        msgs.push("must not have leading 0s".to_string());
    }
    if is_4in6(ip) {
        msgs.push("must not be an IPv4-mapped IPv6 address".to_string());
    }
    if msgs.is_empty() && ip.to_string() != value {
        msgs.push(format!("must be in canonical form ({})", go_quote(&ip.to_string())));
    }
    msgs
}

/// `IsValidCIDR`'s messages for `value` (upstream's strict CIDR check).
pub fn cidr_messages(value: &str) -> Vec<String> {
    let Some(cidr) = parse_cidr_sloppy(value) else {
        return vec!["must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)".into()];
    };
    let (ip, prefix) = value.split_once('/').unwrap_or((value, ""));
    let addr = parse_ip_sloppy(ip);
    let msg = if has_leading_zero(ip) || (prefix.len() > 1 && prefix.starts_with('0')) {
        "must not have leading 0s in IP or prefix length".to_string()
    } else if addr.is_some_and(is_4in6) {
        "must not have an IPv4-mapped IPv6 address".to_string()
    } else if addr != Some(cidr.network) {
        "must not have bits set beyond the prefix length".to_string()
    } else {
        let canonical = format!("{}/{}", cidr.network, cidr.prefix);
        if canonical == value {
            return Vec::new();
        }
        format!("must be in canonical form ({})", go_quote(&canonical))
    };
    vec![msg]
}

fn path_segment_errs(errs: &mut ErrorList, path: &Path, value: &str) {
    for m in is_valid_path_segment_name(value) {
        errs.push(FieldError::invalid(path, value, &m));
    }
}

/// Whether a `parentRef` is absent: null, or only empty fields (what the
/// typed decoding makes of an omitted one).
fn is_unset_ref(r: &Value) -> bool {
    r.as_object().is_none_or(|m| m.values().all(|v| v.is_null() || v.as_str() == Some("")))
}

/// `ValidateIPAddress` minus the generic `ObjectMeta` checks (the name is
/// checked here as an IP address).
pub fn validate_ip_address(obj: &Value) -> ErrorList {
    let mut errs = ErrorList::new();
    let name = obj.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
    if !name.is_empty() {
        for m in ip_messages(name) {
            errs.push(FieldError::invalid(&Path::new("metadata").child("name"), name, &m));
        }
    }
    let p = Path::new("spec").child("parentRef");
    // The typed decoding fills a missing `parentRef` (required in the
    // OpenAPI) with empty strings; upstream's pointer would be nil then.
    let Some(r) = obj.pointer("/spec/parentRef").filter(|r| !is_unset_ref(r)) else {
        errs.push(FieldError::required(&p, ""));
        return errs;
    };
    let group = str_at(r, "group");
    if !group.is_empty() {
        for m in is_dns1123_subdomain(group) {
            errs.push(FieldError::invalid(&p.child("group"), group, &m));
        }
    }
    for key in ["resource", "name"] {
        let v = str_at(r, key);
        if v.is_empty() {
            errs.push(FieldError::required(&p.child(key), ""));
        } else {
            path_segment_errs(&mut errs, &p.child(key), v);
        }
    }
    let ns = str_at(r, "namespace");
    if !ns.is_empty() {
        path_segment_errs(&mut errs, &p.child("namespace"), ns);
    }
    errs
}

/// Go's `%#v` of a `networking.ParentReference` (a nil pointer prints `null`).
fn go_parent_ref(r: Option<&Value>) -> BadValue {
    let Some(r) = r.filter(|r| !r.is_null()) else { return BadValue::Null };
    BadValue::Raw(format!(
        "networking.ParentReference{{Group:{}, Resource:{}, Namespace:{}, Name:{}}}",
        go_quote(str_at(r, "group")),
        go_quote(str_at(r, "resource")),
        go_quote(str_at(r, "namespace")),
        go_quote(str_at(r, "name"))
    ))
}

fn cidrs(obj: &Value) -> (Vec<String>, bool) {
    let v = obj.pointer("/spec/cidrs");
    let list = v.and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).map(String::from).collect();
    (list, v.is_none_or(Value::is_null))
}

/// Go's `%#v` of a `networking.ServiceCIDRSpec`.
fn go_cidr_spec(list: &[String], nil: bool) -> BadValue {
    BadValue::Raw(format!("networking.ServiceCIDRSpec{{CIDRs:{}}}", go_string_slice(list, nil)))
}

/// `ValidateServiceCIDR` minus `ObjectMeta`.
pub fn validate_service_cidr(obj: &Value) -> ErrorList {
    let mut errs = ErrorList::new();
    let p = Path::new("spec").child("cidrs");
    let (list, nil) = cidrs(obj);
    if list.is_empty() {
        errs.push(FieldError::required(&p, "at least one CIDR required"));
        return errs;
    }
    if list.len() > 2 {
        errs.push(FieldError::invalid(&p, go_cidr_spec(&list, nil), "may only hold up to 2 values"));
        return errs;
    }
    if list.len() == 2 {
        let fam = |s: &str| parse_cidr_sloppy(s).map(|c| c.network.is_ipv4());
        let dual = matches!((fam(&list[0]), fam(&list[1])), (Some(a), Some(b)) if a != b);
        if !dual {
            errs.push(FieldError::invalid(
                &p,
                go_cidr_spec(&list, nil),
                "may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64",
            ));
            return errs;
        }
    }
    for (i, c) in list.iter().enumerate() {
        for m in cidr_messages(c) {
            errs.push(FieldError::invalid(&p.index(i), c.as_str(), &m));
        }
    }
    errs
}

impl Strategy for IpKinds {
    fn validate_create(&self, obj: &Value) -> Vec<StatusCause> {
        match self.kind {
            Kind::IpAddress => validate_ip_address(obj),
            Kind::ServiceCidr => validate_service_cidr(obj),
        }
        .to_causes()
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<StatusCause> {
        let mut errs = ErrorList::new();
        match self.kind {
            // Upstream's IPAddress update checks only immutability.
            Kind::IpAddress => {
                let (n, o) = (new.pointer("/spec/parentRef"), old.pointer("/spec/parentRef"));
                if n.filter(|v| !v.is_null()) != o.filter(|v| !v.is_null()) {
                    errs.push(FieldError::invalid(
                        &Path::new("spec").child("parentRef"),
                        go_parent_ref(n),
                        FIELD_IMMUTABLE_ERROR_MSG,
                    ));
                }
            }
            // Upstream 1.33's ValidateServiceCIDRUpdate (kubernetes#131263,
            // the fix of release blocker #131261): the strategy validates
            // only the update, in three cases.
            Kind::ServiceCidr => {
                let ((nl, nnil), (ol, _)) = (cidrs(new), cidrs(old));
                let p = Path::new("spec").child("cidrs");
                match (ol.len(), nl.len()) {
                    // Same length: every entry is immutable.
                    (o, n) if o == n => {
                        for (i, (before, after)) in ol.iter().zip(&nl).enumerate() {
                            if before != after {
                                errs.push(FieldError::invalid(&p.index(i), after.as_str(), FIELD_IMMUTABLE_ERROR_MSG));
                            }
                        }
                    }
                    // Single- to dual-stack: the existing CIDR stays, the
                    // whole list is validated as on create.
                    (1, 2) => {
                        if nl[0] != ol[0] {
                            errs.push(FieldError::invalid(&p.index(0), nl[0].as_str(), FIELD_IMMUTABLE_ERROR_MSG));
                        }
                        errs.extend(validate_service_cidr(new));
                    }
                    _ => errs.push(FieldError::invalid(
                        &p,
                        BadValue::Raw(go_string_slice(&nl, nnil)),
                        FIELD_IMMUTABLE_ERROR_MSG,
                    )),
                }
            }
        }
        errs.to_causes()
    }

    fn has_status_subresource(&self) -> bool {
        self.flags.has_status_subresource()
    }

    fn tracks_generation(&self) -> bool {
        self.flags.tracks_generation
    }

    /// IPAddress names are IP addresses (checked in `validate_create`);
    /// the generic check only keeps out what cannot be a path segment, so
    /// IPv6 colons pass.
    fn name_validation(&self) -> NameValidation {
        match self.kind {
            Kind::IpAddress => NameValidation::PathSegment,
            Kind::ServiceCidr => NameValidation::Dns1123Subdomain,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::strategy::cause_texts;

    fn addr(name: &str, parent: Value) -> Value {
        json!({"metadata": {"name": name}, "spec": {"parentRef": parent}})
    }

    #[test]
    fn ip_address_names() {
        assert!(ip_messages("10.0.0.1").is_empty() && ip_messages("2001:db8::1").is_empty());
        assert_eq!(ip_messages("2001:DB8::1"), vec!["must be in canonical form (\"2001:db8::1\")"]);
        assert_eq!(ip_messages("010.0.0.1"), vec!["must not have leading 0s"]);
        assert_eq!(ip_messages("::ffff:1.2.3.4"), vec!["must not be an IPv4-mapped IPv6 address"]);
        assert_eq!(ip_messages("foo"), vec!["must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"]);
    }

    #[test]
    fn ip_address_rules() {
        let s = IpKinds::for_kind("IPAddress", false).unwrap();
        let good = addr("10.0.0.1", json!({"group": "", "resource": "services", "namespace": "default", "name": "a"}));
        assert!(s.validate_create(&good).is_empty());
        assert_eq!(
            cause_texts(s.validate_create(&json!({"metadata": {"name": "2001:db8:0::1"}, "spec": {}}))),
            vec![
                "metadata.name: Invalid value: \"2001:db8:0::1\": must be in canonical form (\"2001:db8::1\")",
                "spec.parentRef: Required value",
            ]
        );
        let decoded = addr("10.0.0.3", json!({"name": "", "resource": ""}));
        assert_eq!(cause_texts(s.validate_create(&decoded)), vec!["spec.parentRef: Required value"]);
        let bad = addr("10.0.0.2", json!({"group": "Bad", "resource": "a/b", "namespace": "..", "name": ""}));
        let texts = cause_texts(s.validate_create(&bad));
        assert_eq!(texts.len(), 4, "{texts:?}");
        assert!(texts[0].starts_with("spec.parentRef.group: Invalid value: \"Bad\": a lowercase RFC 1123 subdomain"));
        assert_eq!(texts[1], "spec.parentRef.resource: Invalid value: \"a/b\": may not contain '/'");
        assert_eq!(texts[2], "spec.parentRef.name: Required value");
        assert_eq!(texts[3], "spec.parentRef.namespace: Invalid value: \"..\": may not be '..'");
        let mut moved = good.clone();
        moved["spec"]["parentRef"]["name"] = json!("b");
        assert_eq!(
            cause_texts(s.validate_update(&moved, &good)),
            vec!["spec.parentRef: Invalid value: networking.ParentReference{Group:\"\", Resource:\"services\", Namespace:\"default\", Name:\"b\"}: field is immutable"]
        );
    }

    #[test]
    fn service_cidr_rules() {
        let s = IpKinds::for_kind("ServiceCIDR", true).unwrap();
        let cidr = |list: Value| json!({"metadata": {"name": "x"}, "spec": {"cidrs": list}});
        assert!(s.validate_create(&cidr(json!(["10.0.0.0/24", "2001:db8::/64"]))).is_empty());
        assert_eq!(
            cause_texts(s.validate_create(&cidr(json!([])))),
            vec!["spec.cidrs: Required value: at least one CIDR required"]
        );
        assert_eq!(
            cause_texts(s.validate_create(&cidr(json!(["10.0.0.0/24", "10.1.0.0/24"])))),
            vec!["spec.cidrs: Invalid value: networking.ServiceCIDRSpec{CIDRs:[]string{\"10.0.0.0/24\", \"10.1.0.0/24\"}}: may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64"]
        );
        assert_eq!(
            cause_texts(s.validate_create(&cidr(json!(["10.0.0.1/24", "2001:DB8::/64"])))),
            vec![
                "spec.cidrs[0]: Invalid value: \"10.0.0.1/24\": must not have bits set beyond the prefix length",
                "spec.cidrs[1]: Invalid value: \"2001:DB8::/64\": must be in canonical form (\"2001:db8::/64\")",
            ]
        );
        assert_eq!(
            cause_texts(s.validate_create(&cidr(json!(["010.0.0.0/8"])))),
            vec!["spec.cidrs[0]: Invalid value: \"010.0.0.0/8\": must not have leading 0s in IP or prefix length"]
        );
        // Upstream 1.33 (kubernetes#131263): adding the second family is
        // allowed while the first CIDR stays; nothing else changes.
        let old = cidr(json!(["10.0.0.0/24"]));
        assert!(s.validate_update(&cidr(json!(["10.0.0.0/24", "2001:db8::/64"])), &old).is_empty());
        assert_eq!(
            cause_texts(s.validate_update(&cidr(json!(["10.1.0.0/24", "2001:db8::/64"])), &old)),
            vec!["spec.cidrs[0]: Invalid value: \"10.1.0.0/24\": field is immutable"]
        );
        assert_eq!(
            cause_texts(s.validate_update(&cidr(json!(["10.0.0.0/24", "10.1.0.0/24"])), &old)),
            vec!["spec.cidrs: Invalid value: networking.ServiceCIDRSpec{CIDRs:[]string{\"10.0.0.0/24\", \"10.1.0.0/24\"}}: may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64"]
        );
        assert_eq!(
            cause_texts(s.validate_update(&cidr(json!(["10.1.0.0/24"])), &old)),
            vec!["spec.cidrs[0]: Invalid value: \"10.1.0.0/24\": field is immutable"]
        );
        let dual = cidr(json!(["10.0.0.0/24", "2001:db8::/64"]));
        assert!(s.validate_update(&dual, &dual).is_empty());
        assert_eq!(
            cause_texts(s.validate_update(&old, &dual)),
            vec!["spec.cidrs: Invalid value: []string{\"10.0.0.0/24\"}: field is immutable"]
        );
        assert_eq!(
            cause_texts(s.validate_update(&cidr(json!(["2001:db8::/64", "10.0.0.0/24"])), &dual)),
            vec![
                "spec.cidrs[0]: Invalid value: \"2001:db8::/64\": field is immutable",
                "spec.cidrs[1]: Invalid value: \"10.0.0.0/24\": field is immutable",
            ]
        );
    }
}
