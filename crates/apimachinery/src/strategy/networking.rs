//! `networking.k8s.io/v1` Ingresses, IngressClasses and NetworkPolicies:
//! upstream's v1 defaults (NetworkPolicy `policyTypes` and port protocols,
//! IngressClass parameter scope) and validation
//! (`pkg/apis/networking/validation`): ingress rules, paths and backends,
//! TLS hosts, class controllers and parameters, policy ports, peers and IP
//! blocks.

use serde_json::{json, Value};

use super::{generic, Generic, Strategy};
use crate::errors::StatusCause;
use crate::validation::meta::LabelSelectorValidationOptions;
use crate::validation::names::{max_len_error, regex_error, DNS1123_SUBDOMAIN_MAX_LENGTH};
use crate::validation::netaddr::{parse_cidr_sloppy, parse_ip_sloppy, validate_cidr_for_legacy_field};
use crate::validation::podspec::is_valid_port_name;
use crate::validation::{
    go_quote, is_dns1035_label, is_dns1123_label, is_dns1123_subdomain, is_valid_path_segment_name,
    validate_immutable_field, validate_label_selector, BadValue, ErrorList, FieldError, Path,
};

/// `spec.rules[*].http.paths[*].pathType` values (sorted).
pub const PATH_TYPES: [&str; 3] = ["Exact", "ImplementationSpecific", "Prefix"];
/// The legacy annotation naming an Ingress's class.
pub const INGRESS_CLASS_ANNOTATION: &str = "kubernetes.io/ingress.class";
const INVALID_PATH_SEQUENCES: [&str; 5] = ["//", "/./", "/../", "%2f", "%2F"];
const INVALID_PATH_SUFFIXES: [&str; 2] = ["/..", "/."];
const MAX_CONTROLLER_LENGTH: i64 = 250;
const PORT_RANGE_MSG: &str = "must be between 1 and 65535, inclusive";

/// Which networking kind a strategy serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Ingress,
    IngressClass,
    NetworkPolicy,
}

/// The strategy of one `networking.k8s.io` kind.
#[derive(Clone, Debug)]
pub struct Networking {
    kind: Kind,
    flags: Generic,
}

impl Networking {
    /// The strategy of `Ingress`, `IngressClass` or `NetworkPolicy`
    /// (`has_status`: whether the registry serves its `/status`).
    pub fn for_kind(kind: &str, has_status: bool) -> Option<Networking> {
        let k = match kind {
            "Ingress" => Kind::Ingress,
            "IngressClass" => Kind::IngressClass,
            "NetworkPolicy" => Kind::NetworkPolicy,
            _ => return None,
        };
        Some(Networking { kind: k, flags: generic::for_builtin("networking.k8s.io", kind, has_status) })
    }
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn items<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key).and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[])
}

fn present(v: &Value, key: &str) -> bool {
    v.get(key).is_some_and(|x| !x.is_null())
}

/// Whether `s` matches upstream's DNS-1123 subdomain regex (length aside).
fn subdomain_shape(s: &str) -> bool {
    !s.is_empty()
        && s.split('.').all(|l| {
            !l.is_empty()
                && l.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        })
}

/// `IsWildcardDNS1123Subdomain`.
pub fn is_wildcard_dns1123_subdomain(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    if !value.strip_prefix("*.").is_some_and(subdomain_shape) {
        errs.push(regex_error(
            "a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must \
             consist of lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character",
            r"\*\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*",
            &["*.example.com"],
        ));
    }
    errs
}

/// `IsDomainPrefixedPath` (`acme.io/foo`).
fn validate_domain_prefixed_path(path: &Path, value: &str) -> ErrorList {
    let mut errs = ErrorList::new();
    if value.is_empty() {
        errs.push(FieldError::required(path, ""));
        return errs;
    }
    let Some((host, rest)) = value.split_once('/').filter(|(h, r)| !h.is_empty() && !r.is_empty()) else {
        errs.push(FieldError::invalid(path, value, "must be a domain-prefixed path (such as \"acme.io/foo\")"));
        return errs;
    };
    for msg in is_dns1123_subdomain(host) {
        errs.push(FieldError::invalid(path, host, &msg));
    }
    let http_path_char = |c: char| c.is_ascii_alphanumeric() || "/-._~%!$&'()*+,;=:".contains(c);
    if !rest.chars().all(http_path_char) {
        errs.push(FieldError::invalid(
            path,
            rest,
            &regex_error("Invalid path", r"[A-Za-z0-9/\-._~%!$&'()*+,;=:]+", &[]),
        ));
    }
    errs
}

/// Options of Ingress validation that keep old stored objects valid.
#[derive(Clone, Copy, Debug, Default)]
struct IngressOptions {
    allow_invalid_secret_name: bool,
    allow_invalid_wildcard_host_rule: bool,
}

/// `ValidateIngressSpec` at `spec`.
fn validate_ingress_spec(spec: &Value, opts: IngressOptions) -> ErrorList {
    let path = Path::new("spec");
    let mut errs = ErrorList::new();
    let rules = items(spec, "rules");
    if rules.is_empty() && !present(spec, "defaultBackend") {
        let value = if present(spec, "rules") { "[]networking.IngressRule{}" } else { "[]networking.IngressRule(nil)" };
        errs.push(FieldError::invalid(
            &path,
            BadValue::Raw(value.into()),
            "either `defaultBackend` or `rules` must be specified",
        ));
    }
    if let Some(b) = spec.get("defaultBackend").filter(|b| !b.is_null()) {
        errs.extend(validate_ingress_backend(b, &path.child("defaultBackend")));
    }
    for (i, rule) in rules.iter().enumerate() {
        let rp = path.child("rules").index(i);
        let host = str_of(rule, "host");
        let mut wildcard = false;
        if !host.is_empty() {
            if parse_ip_sloppy(host).is_some() {
                errs.push(FieldError::invalid(&rp.child("host"), host, "must be a DNS name, not an IP address"));
            }
            let msgs = if host.contains('*') {
                wildcard = true;
                is_wildcard_dns1123_subdomain(host)
            } else {
                is_dns1123_subdomain(host)
            };
            for msg in msgs {
                errs.push(FieldError::invalid(&rp.child("host"), host, &msg));
            }
        }
        if !wildcard || !opts.allow_invalid_wildcard_host_rule {
            errs.extend(validate_rule_value(rule, &rp));
        }
    }
    for (i, tls) in items(spec, "tls").iter().enumerate() {
        let tp = path.child("tls").index(i);
        for (j, host) in items(tls, "hosts").iter().filter_map(Value::as_str).enumerate() {
            let msgs =
                if host.contains('*') { is_wildcard_dns1123_subdomain(host) } else { is_dns1123_subdomain(host) };
            for msg in msgs {
                errs.push(FieldError::invalid(&tp.child("hosts").index(j), host, &msg));
            }
        }
        if !opts.allow_invalid_secret_name {
            let secret = str_of(tls, "secretName");
            if !secret.is_empty() {
                for msg in is_dns1123_subdomain(secret) {
                    errs.push(FieldError::invalid(&tp.child("secretName"), secret, &msg));
                }
            }
        }
    }
    if let Some(class) = spec.get("ingressClassName").and_then(Value::as_str) {
        for msg in is_dns1123_subdomain(class) {
            errs.push(FieldError::invalid(&path.child("ingressClassName"), class, &msg));
        }
    }
    errs
}

/// `validateIngressRuleValue` / `validateHTTPIngressRuleValue`.
fn validate_rule_value(rule: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let Some(http) = rule.get("http").filter(|h| !h.is_null()) else { return errs };
    let hp = path.child("http");
    let paths = items(http, "paths");
    if paths.is_empty() {
        errs.push(FieldError::required(&hp.child("paths"), ""));
    }
    for (i, p) in paths.iter().enumerate() {
        errs.extend(validate_http_path(p, &hp.child("paths").index(i)));
    }
    errs
}

/// `validateHTTPIngressPath`.
fn validate_http_path(p: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    // The typed decoding turns an omitted (required) `pathType` into "".
    let Some(path_type) = p.get("pathType").and_then(Value::as_str).filter(|t| !t.is_empty()) else {
        errs.push(FieldError::required(&path.child("pathType"), "pathType must be specified"));
        return errs;
    };
    let value = str_of(p, "path");
    let pp = path.child("path");
    match path_type {
        "Exact" | "Prefix" => {
            if !value.starts_with('/') {
                errs.push(FieldError::invalid(&pp, value, "must be an absolute path"));
            }
            for seq in INVALID_PATH_SEQUENCES.iter().filter(|s| value.contains(*s)) {
                errs.push(FieldError::invalid(&pp, value, &format!("must not contain '{seq}'")));
            }
            for suffix in INVALID_PATH_SUFFIXES.iter().filter(|s| value.ends_with(*s)) {
                errs.push(FieldError::invalid(&pp, value, &format!("cannot end with '{suffix}'")));
            }
        }
        "ImplementationSpecific" => {
            if !value.is_empty() && !value.starts_with('/') {
                errs.push(FieldError::invalid(&pp, value, "must be an absolute path"));
            }
        }
        other => errs.push(FieldError::not_supported(&path.child("pathType"), other, &PATH_TYPES)),
    }
    errs.extend(validate_ingress_backend(p.get("backend").unwrap_or(&Value::Null), &path.child("backend")));
    errs
}

/// `validateIngressBackend`: exactly one of a service (with a port name or
/// number) and a resource.
fn validate_ingress_backend(b: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let (resource, service) = (b.get("resource").filter(|r| !r.is_null()), b.get("service").filter(|s| !s.is_null()));
    match (resource, service) {
        (Some(_), Some(_)) => errs.push(FieldError::invalid(path, "", "cannot set both resource and service backends")),
        (Some(r), None) => errs.extend(validate_typed_local_object_reference(r, &path.child("resource"))),
        (None, Some(s)) => {
            let name = str_of(s, "name");
            let np = path.child("service").child("name");
            if name.is_empty() {
                errs.push(FieldError::required(&np, ""));
            } else {
                for msg in is_dns1035_label(name) {
                    errs.push(FieldError::invalid(&np, name, &msg));
                }
            }
            let port = s.get("port").unwrap_or(&Value::Null);
            let port_name = str_of(port, "name");
            let number = port.get("number").and_then(Value::as_i64).unwrap_or(0);
            let pp = path.child("service").child("port");
            match (!port_name.is_empty(), number != 0) {
                (true, true) => errs.push(FieldError::invalid(path, "", "cannot set both port name & port number")),
                (true, false) => {
                    for msg in is_valid_port_name(port_name) {
                        errs.push(FieldError::invalid(&pp.child("name"), port_name, &msg));
                    }
                }
                (false, true) => {
                    if !(1..=65535).contains(&number) {
                        errs.push(FieldError::invalid(&pp.child("number"), number, PORT_RANGE_MSG));
                    }
                }
                (false, false) => errs.push(FieldError::required(path, "port name or number is required")),
            }
        }
        (None, None) => errs.push(FieldError::invalid(path, "", "resource or service backend is required")),
    }
    errs
}

/// `validateIngressTypedLocalObjectReference`.
fn validate_typed_local_object_reference(r: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    if let Some(group) = r.get("apiGroup").and_then(Value::as_str) {
        for msg in is_dns1123_subdomain(group) {
            errs.push(FieldError::invalid(&path.child("apiGroup"), group, &msg));
        }
    }
    for (field, required) in [("kind", "kind is required"), ("name", "name is required")] {
        let v = str_of(r, field);
        if v.is_empty() {
            errs.push(FieldError::required(&path.child(field), required));
        } else {
            for msg in is_valid_path_segment_name(v) {
                errs.push(FieldError::invalid(&path.child(field), v, &msg));
            }
        }
    }
    errs
}

/// `ValidateIngressCreate` minus `ObjectMeta`: the spec plus the class
/// annotation agreeing with `ingressClassName`.
fn validate_ingress_create(obj: &Value) -> ErrorList {
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let mut errs = validate_ingress_spec(spec, IngressOptions::default());
    let annotation = obj.pointer("/metadata/annotations").and_then(|a| a.get(INGRESS_CLASS_ANNOTATION));
    if let (Some(a), Some(class)) =
        (annotation.and_then(Value::as_str), spec.get("ingressClassName").and_then(Value::as_str))
    {
        if a != class {
            errs.push(FieldError::invalid(
                &Path::new("annotations").child(INGRESS_CLASS_ANNOTATION),
                a,
                "must match `ingressClassName` when both are specified",
            ));
        }
    }
    errs
}

/// The options `ValidateIngressUpdate` derives from the stored object.
fn ingress_update_options(old: &Value) -> IngressOptions {
    let spec = old.get("spec").unwrap_or(&Value::Null);
    let allow_invalid_secret_name = items(spec, "tls").iter().any(|t| {
        let s = str_of(t, "secretName");
        !s.is_empty() && !is_dns1123_subdomain(s).is_empty()
    });
    let allow_invalid_wildcard_host_rule = items(spec, "rules")
        .iter()
        .any(|r| str_of(r, "host").contains('*') && !validate_rule_value(r, &Path::nil()).is_empty());
    IngressOptions { allow_invalid_secret_name, allow_invalid_wildcard_host_rule }
}

/// `validateIngressClassSpec`.
fn validate_ingress_class_spec(spec: &Value) -> ErrorList {
    let path = Path::new("spec");
    let mut errs = ErrorList::new();
    let controller = str_of(spec, "controller");
    if controller.len() as i64 > MAX_CONTROLLER_LENGTH {
        errs.push(FieldError::too_long(&path.child("controller"), MAX_CONTROLLER_LENGTH));
    }
    errs.extend(validate_domain_prefixed_path(&path.child("controller"), controller));
    if let Some(params) = spec.get("parameters").filter(|p| !p.is_null()) {
        let pp = path.child("parameters");
        errs.extend(validate_typed_local_object_reference(params, &pp));
        match params.get("scope").and_then(Value::as_str) {
            None => errs.push(FieldError::required(&pp.child("scope"), "")),
            Some(scope) if scope != "Cluster" && scope != "Namespace" => {
                errs.push(FieldError::not_supported(&pp.child("scope"), scope, &["Cluster", "Namespace"]))
            }
            Some(scope) => {
                let namespace = params.get("namespace").and_then(Value::as_str);
                if scope == "Namespace" {
                    match namespace {
                        None => errs.push(FieldError::required(
                            &pp.child("namespace"),
                            "`parameters.scope` is set to 'Namespace'",
                        )),
                        Some(ns) => {
                            for msg in is_dns1123_label(ns) {
                                errs.push(FieldError::invalid(&pp.child("namespace"), ns, &msg));
                            }
                        }
                    }
                }
                if scope == "Cluster" && namespace.is_some() {
                    errs.push(FieldError::forbidden(&pp.child("namespace"), "`parameters.scope` is set to 'Cluster'"));
                }
            }
        }
    }
    errs
}

/// `ValidateNetworkPolicyPort`.
fn validate_policy_port(port: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    if let Some(p) = port.get("protocol").and_then(Value::as_str) {
        if !matches!(p, "TCP" | "UDP" | "SCTP") {
            errs.push(FieldError::not_supported(&path.child("protocol"), p, &["TCP", "UDP", "SCTP"]));
        }
    }
    let end = port.get("endPort").and_then(Value::as_i64);
    match port.get("port").filter(|p| !p.is_null()) {
        Some(Value::Number(n)) => {
            let p = n.as_i64().unwrap_or(0);
            if !(1..=65535).contains(&p) {
                errs.push(FieldError::invalid(&path.child("port"), p, PORT_RANGE_MSG));
            }
            if let Some(e) = end {
                if e < p {
                    // Upstream reports the port, not the end port, as the value.
                    errs.push(FieldError::invalid(
                        &path.child("endPort"),
                        p,
                        "must be greater than or equal to `port`",
                    ));
                }
                if !(1..=65535).contains(&e) {
                    errs.push(FieldError::invalid(&path.child("endPort"), e, PORT_RANGE_MSG));
                }
            }
        }
        Some(other) => {
            if let Some(e) = end {
                errs.push(FieldError::invalid(
                    &path.child("endPort"),
                    e,
                    "may not be specified when `port` is non-numeric",
                ));
            }
            let name = other.as_str().unwrap_or("");
            for msg in is_valid_port_name(name) {
                errs.push(FieldError::invalid(&path.child("port"), name, &msg));
            }
        }
        None => {
            if let Some(e) = end {
                errs.push(FieldError::invalid(
                    &path.child("endPort"),
                    e,
                    "may not be specified when `port` is not specified",
                ));
            }
        }
    }
    errs
}

/// `ValidateNetworkPolicyPeer`.
fn validate_policy_peer(peer: &Value, opts: LabelSelectorValidationOptions, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let mut peers = 0;
    for key in ["podSelector", "namespaceSelector"] {
        if let Some(sel) = peer.get(key).filter(|s| !s.is_null()) {
            peers += 1;
            errs.extend(validate_label_selector(sel, opts, &path.child(key)));
        }
    }
    let ip_block = peer.get("ipBlock").filter(|b| !b.is_null());
    if let Some(b) = ip_block {
        peers += 1;
        errs.extend(validate_ip_block(b, &path.child("ipBlock")));
    }
    if peers == 0 {
        errs.push(FieldError::required(path, "must specify a peer"));
    } else if peers > 1 && ip_block.is_some() {
        errs.push(FieldError::forbidden(path, "may not specify both ipBlock and another peer"));
    }
    errs
}

/// `ValidateIPBlock`: a CIDR and `except` entries strictly inside it.
fn validate_ip_block(b: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let cidr = str_of(b, "cidr");
    if cidr.is_empty() {
        errs.push(FieldError::required(&path.child("cidr"), ""));
        return errs;
    }
    errs.extend(validate_cidr_for_legacy_field(&path.child("cidr"), cidr));
    let Some(net) = parse_cidr_sloppy(cidr) else { return errs };
    for (i, except) in items(b, "except").iter().filter_map(Value::as_str).enumerate() {
        let ep = path.child("except").index(i);
        errs.extend(validate_cidr_for_legacy_field(&ep, except));
        let Some(e) = parse_cidr_sloppy(except) else { continue };
        if !net.contains(e.network) || net.prefix >= e.prefix {
            errs.push(FieldError::invalid(&ep, except, "must be a strict subset of `cidr`"));
        }
    }
    errs
}

/// `ValidateNetworkPolicySpec` at `spec`.
fn validate_network_policy_spec(spec: &Value, opts: LabelSelectorValidationOptions) -> ErrorList {
    let path = Path::new("spec");
    let mut errs =
        validate_label_selector(spec.get("podSelector").unwrap_or(&json!({})), opts, &path.child("podSelector"));
    for (dir, peers_key) in [("ingress", "from"), ("egress", "to")] {
        for (i, rule) in items(spec, dir).iter().enumerate() {
            let rp = path.child(dir).index(i);
            for (j, port) in items(rule, "ports").iter().enumerate() {
                errs.extend(validate_policy_port(port, &rp.child("ports").index(j)));
            }
            for (j, peer) in items(rule, peers_key).iter().enumerate() {
                errs.extend(validate_policy_peer(peer, opts, &rp.child(peers_key).index(j)));
            }
        }
    }
    let types: Vec<&str> = items(spec, "policyTypes").iter().filter_map(Value::as_str).collect();
    if types.len() > 2 {
        let rendered: Vec<String> = types.iter().map(|t| go_quote(t)).collect();
        errs.push(FieldError::invalid(
            &path.child("policyTypes"),
            BadValue::Raw(format!("[]networking.PolicyType{{{}}}", rendered.join(", "))),
            "may not specify more than two policyTypes",
        ));
        return errs;
    }
    for (i, t) in types.iter().enumerate() {
        if !matches!(*t, "Ingress" | "Egress") {
            errs.push(FieldError::not_supported(&path.child("policyTypes").index(i), *t, &["Ingress", "Egress"]));
        }
    }
    errs
}

impl Strategy for Networking {
    /// v1 defaulting: NetworkPolicy ports are `TCP` and `policyTypes` is
    /// `[Ingress]` (plus `Egress` with egress rules); an IngressClass's
    /// parameters are `Cluster`-scoped.
    fn default(&self, obj: &mut Value) {
        match self.kind {
            Kind::NetworkPolicy => {
                let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else { return };
                for dir in ["ingress", "egress"] {
                    for rule in spec.get_mut(dir).and_then(Value::as_array_mut).into_iter().flatten() {
                        for port in rule.get_mut("ports").and_then(Value::as_array_mut).into_iter().flatten() {
                            if let Some(p) = port.as_object_mut() {
                                if p.get("protocol").is_none_or(Value::is_null) {
                                    p.insert("protocol".into(), json!("TCP"));
                                }
                            }
                        }
                    }
                }
                if spec.get("policyTypes").and_then(Value::as_array).is_none_or(|t| t.is_empty()) {
                    let egress = spec.get("egress").and_then(Value::as_array).is_some_and(|e| !e.is_empty());
                    let types = if egress { json!(["Ingress", "Egress"]) } else { json!(["Ingress"]) };
                    spec.insert("policyTypes".into(), types);
                }
            }
            Kind::IngressClass => {
                if let Some(p) = obj.pointer_mut("/spec/parameters").and_then(Value::as_object_mut) {
                    if p.get("scope").is_none_or(Value::is_null) {
                        p.insert("scope".into(), json!("Cluster"));
                    }
                }
            }
            Kind::Ingress => {}
        }
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        if self.kind == Kind::Ingress {
            obj["status"] = json!({"loadBalancer": {}});
        }
    }

    fn validate_create(&self, obj: &Value) -> Vec<StatusCause> {
        let spec = obj.get("spec").unwrap_or(&Value::Null);
        match self.kind {
            Kind::Ingress => validate_ingress_create(obj),
            Kind::IngressClass => validate_ingress_class_spec(spec),
            Kind::NetworkPolicy => validate_network_policy_spec(spec, LabelSelectorValidationOptions::default()),
        }
        .to_causes()
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<StatusCause> {
        let spec = new.get("spec").unwrap_or(&Value::Null);
        match self.kind {
            Kind::Ingress => validate_ingress_spec(spec, ingress_update_options(old)),
            Kind::IngressClass => {
                let mut errs = validate_immutable_field(
                    spec.get("controller"),
                    old.pointer("/spec/controller"),
                    &Path::new("spec").child("controller"),
                );
                errs.extend(validate_ingress_class_spec(spec));
                errs
            }
            Kind::NetworkPolicy => {
                let strict = LabelSelectorValidationOptions::default();
                let old_selector = old.pointer("/spec/podSelector").unwrap_or(&Value::Null);
                let lax = !validate_label_selector(old_selector, strict, &Path::nil()).is_empty();
                let opts = LabelSelectorValidationOptions { allow_invalid_label_value_in_selector: lax, ..strict };
                validate_network_policy_spec(spec, opts)
            }
        }
        .to_causes()
    }

    fn has_status_subresource(&self) -> bool {
        self.flags.has_status
    }
    fn tracks_generation(&self) -> bool {
        self.flags.tracks_generation
    }
}

#[cfg(test)]
mod tests;
