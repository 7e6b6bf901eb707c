//! APIServices (`apiregistration.k8s.io/v1`): the v1 default service port
//! (443) and kube-aggregator's `ValidateAPIService`
//! (`pkg/apis/apiregistration/validation`): the name is
//! `spec.version + "." + spec.group`, the version a DNS-1035 label, the
//! group a DNS-1123 subdomain (empty only for the legacy `v1`), priorities
//! in range, and the TLS settings consistent with a local or remote service.

use serde_json::{json, Value};

use super::{generic, Generic, Strategy};
use crate::errors::StatusCause;
use crate::validation::{
    go_quote, is_dns1035_label, is_dns1123_subdomain, is_valid_path_segment_name, ErrorList, FieldError,
    NameValidation, Path,
};

/// The strategy of APIServices.
#[derive(Clone, Debug)]
pub struct ApiService {
    flags: Generic,
}

impl ApiService {
    /// The strategy with upstream's flags (a `/status` subresource).
    #[allow(clippy::new_without_default)]
    pub fn new() -> ApiService {
        ApiService { flags: generic::for_builtin("apiregistration.k8s.io", "APIService", true) }
    }
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// `ValidateAPIService` minus the generic `ObjectMeta` checks; the name
/// rule (`must be spec.version+"."+spec.group`) is reported at
/// `metadata.name` as upstream's name function does.
pub fn validate_api_service(obj: &Value) -> ErrorList {
    let mut errs = ErrorList::new();
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let (group, version) = (str_of(spec, "group"), str_of(spec, "version"));
    let name = obj.get("metadata").map_or("", |m| str_of(m, "name"));
    let required = format!("{version}.{group}");
    if !name.is_empty() && is_valid_path_segment_name(name).is_empty() && name != required {
        errs.push(FieldError::invalid(
            &Path::new("metadata").child("name"),
            name,
            &format!("must be `spec.version+\".\"+spec.group`: {}", go_quote(&required)),
        ));
    }
    let spec_path = Path::new("spec");
    if group.is_empty() && version != "v1" {
        errs.push(FieldError::required(
            &spec_path.child("group"),
            "only v1 may have an empty group and it better be legacy kube",
        ));
    }
    if !group.is_empty() {
        for m in is_dns1123_subdomain(group) {
            errs.push(FieldError::invalid(&spec_path.child("group"), group, &m));
        }
    }
    for m in is_dns1035_label(version) {
        errs.push(FieldError::invalid(&spec_path.child("version"), version, &m));
    }
    let gpm = spec.get("groupPriorityMinimum").and_then(Value::as_i64).unwrap_or(0);
    if !(1..=20000).contains(&gpm) {
        errs.push(FieldError::invalid(
            &spec_path.child("groupPriorityMinimum"),
            gpm,
            "must be positive and less than 20000",
        ));
    }
    let vp = spec.get("versionPriority").and_then(Value::as_i64).unwrap_or(0);
    if !(1..=1000).contains(&vp) {
        errs.push(FieldError::invalid(&spec_path.child("versionPriority"), vp, "must be positive and less than 1000"));
    }
    // caBundle is base64 on the wire; upstream counts decoded bytes.
    let ca_len = {
        use base64::Engine;
        let b64 = str_of(spec, "caBundle");
        base64::engine::general_purpose::STANDARD.decode(b64).map_or(b64.len(), |b| b.len())
    };
    let insecure = spec.get("insecureSkipTLSVerify").and_then(Value::as_bool).unwrap_or(false);
    let Some(service) = spec.get("service").filter(|s| !s.is_null()) else {
        if ca_len != 0 {
            errs.push(FieldError::invalid(
                &spec_path.child("caBundle"),
                format!("{ca_len} bytes"),
                "local APIServices may not have a caBundle",
            ));
        }
        if insecure {
            errs.push(FieldError::invalid(
                &spec_path.child("insecureSkipTLSVerify"),
                true,
                "local APIServices may not have insecureSkipTLSVerify",
            ));
        }
        return errs;
    };
    let svc_path = spec_path.child("service");
    if str_of(service, "namespace").is_empty() {
        errs.push(FieldError::required(&svc_path.child("namespace"), ""));
    }
    if str_of(service, "name").is_empty() {
        errs.push(FieldError::required(&svc_path.child("name"), ""));
    }
    if insecure && ca_len > 0 {
        errs.push(FieldError::invalid(
            &spec_path.child("insecureSkipTLSVerify"),
            true,
            "may not be true if caBundle is present",
        ));
    }
    errs
}

/// `ValidateAPIServiceStatus`: condition statuses are `True`, `False` or
/// `Unknown`.
pub fn validate_api_service_status(obj: &Value) -> ErrorList {
    const STATUSES: [&str; 3] = ["True", "False", "Unknown"];
    let mut errs = ErrorList::new();
    let path = Path::new("status").child("conditions");
    let conditions = obj.pointer("/status/conditions").and_then(Value::as_array);
    for (i, c) in conditions.into_iter().flatten().enumerate() {
        let status = str_of(c, "status");
        if !STATUSES.contains(&status) {
            errs.push(FieldError::not_supported(&path.index(i).child("status"), status, &STATUSES));
        }
    }
    errs
}

impl Strategy for ApiService {
    /// v1 `SetDefaults_ServiceReference`: `port: 443`.
    fn default(&self, obj: &mut Value) {
        if let Some(svc) = obj.get_mut("spec").and_then(|s| s.get_mut("service")).and_then(Value::as_object_mut) {
            if svc.get("port").is_none_or(Value::is_null) {
                svc.insert("port".into(), json!(443));
            }
        }
    }
    fn validate_create(&self, obj: &Value) -> Vec<StatusCause> {
        validate_api_service(obj).to_causes()
    }
    /// The create rules, plus `ValidateAPIServiceStatus` when the status
    /// changed (a `/status` update; the main resource keeps the stored one).
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<StatusCause> {
        let mut errs = validate_api_service(new);
        if new.get("status") != old.get("status") {
            errs.extend(validate_api_service_status(new));
        }
        errs.to_causes()
    }
    fn has_status_subresource(&self) -> bool {
        true
    }
    fn tracks_generation(&self) -> bool {
        self.flags.tracks_generation
    }
    /// Upstream's name function starts with `path.IsValidPathSegmentName`.
    fn name_validation(&self) -> NameValidation {
        NameValidation::PathSegment
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::strategy::cause_texts as texts;

    fn api_service(name: &str, spec: Value) -> Value {
        json!({"metadata": {"name": name}, "spec": spec})
    }

    #[test]
    fn valid_remote_and_local_services() {
        let s = ApiService::new();
        let mut remote = api_service(
            "v1beta1.metrics.example.com",
            json!({"group": "metrics.example.com", "version": "v1beta1", "groupPriorityMinimum": 100,
                "versionPriority": 10, "service": {"namespace": "kube-system", "name": "metrics"}}),
        );
        s.default(&mut remote);
        assert_eq!(remote["spec"]["service"]["port"], 443);
        assert!(s.validate_create(&remote).is_empty());
        let legacy = api_service(
            "v1.",
            json!({"group": "", "version": "v1", "groupPriorityMinimum": 18000, "versionPriority": 1}),
        );
        assert!(s.validate_create(&legacy).is_empty());
    }

    #[test]
    fn spec_rules() {
        let bad = api_service(
            "v1.wrong",
            json!({"group": "", "version": "V2", "groupPriorityMinimum": 20001, "versionPriority": 0,
                "caBundle": "AAEC", "insecureSkipTLSVerify": true}),
        );
        let version_msgs = is_dns1035_label("V2");
        let mut want = vec![
            r#"metadata.name: Invalid value: "v1.wrong": must be `spec.version+"."+spec.group`: "V2.""#.to_string(),
            "spec.group: Required value: only v1 may have an empty group and it better be legacy kube".to_string(),
        ];
        want.extend(version_msgs.iter().map(|m| format!(r#"spec.version: Invalid value: "V2": {m}"#)));
        want.extend([
            "spec.groupPriorityMinimum: Invalid value: 20001: must be positive and less than 20000".to_string(),
            "spec.versionPriority: Invalid value: 0: must be positive and less than 1000".to_string(),
            r#"spec.caBundle: Invalid value: "3 bytes": local APIServices may not have a caBundle"#.to_string(),
            "spec.insecureSkipTLSVerify: Invalid value: true: local APIServices may not have insecureSkipTLSVerify"
                .to_string(),
        ]);
        assert_eq!(texts(ApiService::new().validate_create(&bad)), want);

        let remote = api_service(
            "v1.example.com",
            json!({"group": "example.com", "version": "v1", "groupPriorityMinimum": 1, "versionPriority": 1,
                "caBundle": "AAEC", "insecureSkipTLSVerify": true, "service": {"port": 443}}),
        );
        let mut with_status = remote.clone();
        with_status["status"] = json!({"conditions": [{"type": "Available", "status": "Maybe"}]});
        assert!(texts(ApiService::new().validate_update(&with_status, &remote)).contains(
            &r#"status.conditions[0].status: Unsupported value: "Maybe": supported values: "True", "False", "Unknown""#
                .to_string()
        ));
        assert_eq!(
            texts(ApiService::new().validate_create(&remote)),
            vec![
                "spec.service.namespace: Required value",
                "spec.service.name: Required value",
                "spec.insecureSkipTLSVerify: Invalid value: true: may not be true if caBundle is present",
            ]
        );
    }
}
