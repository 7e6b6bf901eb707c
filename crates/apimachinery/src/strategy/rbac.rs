//! RBAC kinds (`rbac.authorization.k8s.io/v1`): upstream's v1 defaulting
//! (`roleRef.apiGroup` and each subject's `apiGroup`) and validation
//! (`pkg/apis/rbac/validation`): policy rules, ClusterRole aggregation
//! rules, role references (immutable on update: `cannot change roleRef`)
//! and subjects.

use serde_json::{json, Value};

use super::{generic, Generic, Strategy};
use crate::errors::StatusCause;
use crate::validation::meta::LabelSelectorValidationOptions;
use crate::validation::{
    go_quote, go_string_slice, is_dns1123_subdomain, is_valid_path_segment_name, validate_label_selector, BadValue,
    ErrorList, FieldError, NameValidation, Path,
};

/// The RBAC API group, the only one role references and user/group
/// subjects may name.
pub const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

/// Which RBAC kind a strategy serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RbacKind {
    /// Namespaced rules.
    Role,
    /// Cluster-wide rules, optionally aggregated.
    ClusterRole,
    /// Namespaced binding (to a Role or ClusterRole).
    RoleBinding,
    /// Cluster-wide binding (to a ClusterRole).
    ClusterRoleBinding,
}

/// The strategy of one RBAC kind.
#[derive(Clone, Debug)]
pub struct Rbac {
    kind: RbacKind,
    flags: Generic,
}

impl Rbac {
    /// The strategy of `kind` (`Role`, `ClusterRole`, `RoleBinding`,
    /// `ClusterRoleBinding`); `None` for anything else.
    pub fn for_kind(kind: &str) -> Option<Rbac> {
        let k = match kind {
            "Role" => RbacKind::Role,
            "ClusterRole" => RbacKind::ClusterRole,
            "RoleBinding" => RbacKind::RoleBinding,
            "ClusterRoleBinding" => RbacKind::ClusterRoleBinding,
            _ => return None,
        };
        Some(Rbac { kind: k, flags: generic::for_builtin(RBAC_GROUP, kind, false) })
    }

    fn validate(&self, obj: &Value) -> ErrorList {
        match self.kind {
            RbacKind::Role => validate_rules(obj, true),
            RbacKind::ClusterRole => {
                let mut errs = validate_rules(obj, false);
                errs.extend(validate_aggregation_rule(obj, LabelSelectorValidationOptions::default()));
                errs
            }
            RbacKind::RoleBinding => validate_binding(obj, true),
            RbacKind::ClusterRoleBinding => validate_binding(obj, false),
        }
    }
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).map(str::to_string).collect()
}

fn items(v: Option<&Value>) -> &[Value] {
    v.and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[])
}

/// `ValidatePolicyRule` for every entry of `rules`.
fn validate_rules(obj: &Value, namespaced: bool) -> ErrorList {
    let mut errs = ErrorList::new();
    for (i, rule) in items(obj.get("rules")).iter().enumerate() {
        errs.extend(validate_policy_rule(rule, namespaced, &Path::new("rules").index(i)));
    }
    errs
}

/// `ValidatePolicyRule`: verbs are required; a rule names either
/// non-resource URLs (cluster roles only) or API groups and resources.
pub fn validate_policy_rule(rule: &Value, namespaced: bool, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    if strings(rule.get("verbs")).is_empty() {
        errs.push(FieldError::required(&path.child("verbs"), "verbs must contain at least one value"));
    }
    let urls = strings(rule.get("nonResourceURLs"));
    let (groups, resources, names) =
        (strings(rule.get("apiGroups")), strings(rule.get("resources")), strings(rule.get("resourceNames")));
    if !urls.is_empty() {
        let value = BadValue::Raw(go_string_slice(&urls, false));
        if namespaced {
            errs.push(FieldError::invalid(
                &path.child("nonResourceURLs"),
                value.clone(),
                "namespaced rules cannot apply to non-resource URLs",
            ));
        }
        if !groups.is_empty() || !resources.is_empty() || !names.is_empty() {
            errs.push(FieldError::invalid(
                &path.child("nonResourceURLs"),
                value,
                "rules cannot apply to both regular resources and non-resource URLs",
            ));
        }
        return errs;
    }
    if groups.is_empty() {
        errs.push(FieldError::required(&path.child("apiGroups"), "resource rules must supply at least one api group"));
    }
    if resources.is_empty() {
        errs.push(FieldError::required(&path.child("resources"), "resource rules must supply at least one resource"));
    }
    errs
}

/// The ClusterRole `aggregationRule`: at least one selector, each valid
/// (an unparsable one also gets upstream's `invalid label selector.`).
fn validate_aggregation_rule(obj: &Value, opts: LabelSelectorValidationOptions) -> ErrorList {
    let mut errs = ErrorList::new();
    let Some(rule) = obj.get("aggregationRule").filter(|r| !r.is_null()) else { return errs };
    let path = Path::new("aggregationRule").child("clusterRoleSelectors");
    let selectors = items(rule.get("clusterRoleSelectors"));
    if selectors.is_empty() {
        errs.push(FieldError::required(
            &path,
            "at least one clusterRoleSelector required if aggregationRule is non-nil",
        ));
    }
    for (i, selector) in selectors.iter().enumerate() {
        let p = path.index(i);
        errs.extend(validate_label_selector(selector, opts, &p));
        // `LabelSelectorAsSelector` fails exactly when the strict checks do.
        if !validate_label_selector(selector, LabelSelectorValidationOptions::default(), &p).is_empty() {
            errs.push(FieldError::invalid(&p, BadValue::Null, "invalid label selector."));
        }
    }
    errs
}

/// Go's `%#v` of the internal `rbac.RoleRef`.
fn go_role_ref(r: &Value) -> BadValue {
    BadValue::Raw(format!(
        "rbac.RoleRef{{APIGroup:{}, Kind:{}, Name:{}}}",
        go_quote(str_of(r, "apiGroup")),
        go_quote(str_of(r, "kind")),
        go_quote(str_of(r, "name"))
    ))
}

/// `ValidateRoleBinding` / `ValidateClusterRoleBinding` minus `ObjectMeta`.
fn validate_binding(obj: &Value, namespaced: bool) -> ErrorList {
    let mut errs = ErrorList::new();
    let role_ref = obj.get("roleRef").unwrap_or(&Value::Null);
    let path = Path::new("roleRef");
    let group = str_of(role_ref, "apiGroup");
    if group != RBAC_GROUP {
        errs.push(FieldError::not_supported(&path.child("apiGroup"), group, &[RBAC_GROUP]));
    }
    let kind = str_of(role_ref, "kind");
    let kinds: &[&str] = if namespaced { &["Role", "ClusterRole"] } else { &["ClusterRole"] };
    if !kinds.contains(&kind) {
        errs.push(FieldError::not_supported(&path.child("kind"), kind, kinds));
    }
    let name = str_of(role_ref, "name");
    if name.is_empty() {
        errs.push(FieldError::required(&path.child("name"), ""));
    } else {
        for msg in is_valid_path_segment_name(name) {
            errs.push(FieldError::invalid(&path.child("name"), name, &msg));
        }
    }
    for (i, subject) in items(obj.get("subjects")).iter().enumerate() {
        errs.extend(validate_subject(subject, namespaced, &Path::new("subjects").index(i)));
    }
    errs
}

/// `ValidateRoleBindingSubject`.
pub fn validate_subject(subject: &Value, namespaced: bool, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let name = str_of(subject, "name");
    if name.is_empty() {
        errs.push(FieldError::required(&path.child("name"), ""));
    }
    let group = str_of(subject, "apiGroup");
    match str_of(subject, "kind") {
        "ServiceAccount" => {
            if !name.is_empty() {
                for msg in is_dns1123_subdomain(name) {
                    errs.push(FieldError::invalid(&path.child("name"), name, &msg));
                }
            }
            if !group.is_empty() {
                errs.push(FieldError::not_supported(&path.child("apiGroup"), group, &[""]));
            }
            if !namespaced && str_of(subject, "namespace").is_empty() {
                errs.push(FieldError::required(&path.child("namespace"), ""));
            }
        }
        "User" | "Group" => {
            if group != RBAC_GROUP {
                errs.push(FieldError::not_supported(&path.child("apiGroup"), group, &[RBAC_GROUP]));
            }
        }
        other => errs.push(FieldError::not_supported(&path.child("kind"), other, &["ServiceAccount", "User", "Group"])),
    }
    errs
}

impl Strategy for Rbac {
    /// v1 defaulting: `roleRef.apiGroup` is the RBAC group; a subject's
    /// `apiGroup` is `""` for service accounts and the RBAC group for users
    /// and groups.
    fn default(&self, obj: &mut Value) {
        if !matches!(self.kind, RbacKind::RoleBinding | RbacKind::ClusterRoleBinding) {
            return;
        }
        if let Some(r) = obj.get_mut("roleRef").and_then(Value::as_object_mut) {
            if r.get("apiGroup").and_then(Value::as_str).unwrap_or("").is_empty() {
                r.insert("apiGroup".into(), json!(RBAC_GROUP));
            }
        }
        for s in obj.get_mut("subjects").and_then(Value::as_array_mut).into_iter().flatten() {
            let Some(s) = s.as_object_mut() else { continue };
            if !s.get("apiGroup").and_then(Value::as_str).unwrap_or("").is_empty() {
                continue;
            }
            match s.get("kind").and_then(Value::as_str) {
                Some("ServiceAccount") => {
                    s.insert("apiGroup".into(), json!(""));
                }
                Some("User" | "Group") => {
                    s.insert("apiGroup".into(), json!(RBAC_GROUP));
                }
                _ => {}
            }
        }
    }

    fn validate_create(&self, obj: &Value) -> Vec<StatusCause> {
        self.validate(obj).to_causes()
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<StatusCause> {
        let mut errs = match self.kind {
            // Selectors stored with label values that are no longer valid stay acceptable.
            RbacKind::ClusterRole => {
                let mut errs = validate_rules(new, false);
                let lax = !validate_aggregation_rule(old, LabelSelectorValidationOptions::default()).is_empty();
                let opts =
                    LabelSelectorValidationOptions { allow_invalid_label_value_in_selector: lax, ..Default::default() };
                errs.extend(validate_aggregation_rule(new, opts));
                errs
            }
            _ => self.validate(new),
        };
        if matches!(self.kind, RbacKind::RoleBinding | RbacKind::ClusterRoleBinding) {
            let (n, o) = (new.get("roleRef").unwrap_or(&Value::Null), old.get("roleRef").unwrap_or(&Value::Null));
            let same = ["apiGroup", "kind", "name"].iter().all(|f| str_of(n, f) == str_of(o, f));
            if !same {
                errs.push(FieldError::invalid(&Path::new("roleRef"), go_role_ref(n), "cannot change roleRef"));
            }
        }
        errs.to_causes()
    }

    fn has_status_subresource(&self) -> bool {
        false
    }
    fn tracks_generation(&self) -> bool {
        self.flags.tracks_generation
    }
    fn name_validation(&self) -> NameValidation {
        NameValidation::PathSegment
    }
    fn allow_create_on_update(&self) -> bool {
        self.flags.allow_create_on_update
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::strategy::cause_texts as texts;

    fn create(kind: &str, mut obj: Value) -> Vec<String> {
        let s = Rbac::for_kind(kind).unwrap();
        s.default(&mut obj);
        texts(s.validate_create(&obj))
    }

    #[test]
    fn policy_rules() {
        let role = json!({"rules": [
            {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]},
            {"apiGroups": [""]},
            {"verbs": ["get"], "nonResourceURLs": ["/healthz"], "resources": ["pods"]}]});
        assert_eq!(
            create("Role", role.clone()),
            vec![
                "rules[1].verbs: Required value: verbs must contain at least one value",
                "rules[1].resources: Required value: resource rules must supply at least one resource",
                r#"rules[2].nonResourceURLs: Invalid value: []string{"/healthz"}: namespaced rules cannot apply to non-resource URLs"#,
                r#"rules[2].nonResourceURLs: Invalid value: []string{"/healthz"}: rules cannot apply to both regular resources and non-resource URLs"#,
            ]
        );
        let cluster = json!({"rules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz"]}]});
        assert!(create("ClusterRole", cluster).is_empty());
    }

    #[test]
    fn aggregation_rules_need_selectors() {
        assert_eq!(
            create("ClusterRole", json!({"aggregationRule": {"clusterRoleSelectors": []}})),
            vec!["aggregationRule.clusterRoleSelectors: Required value: at least one clusterRoleSelector required if aggregationRule is non-nil"]
        );
        let bad = json!({"aggregationRule": {"clusterRoleSelectors": [{"matchExpressions": [{"key": "a", "operator": "In"}]}]}});
        assert_eq!(
            create("ClusterRole", bad),
            vec![
                "aggregationRule.clusterRoleSelectors[0].matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
                "aggregationRule.clusterRoleSelectors[0]: Invalid value: null: invalid label selector.",
            ]
        );
    }

    #[test]
    fn bindings_default_and_validate_role_refs_and_subjects() {
        let mut rb = json!({"roleRef": {"kind": "ClusterRole", "name": "view"},
            "subjects": [{"kind": "User", "name": "alice"}, {"kind": "ServiceAccount", "name": "default"}]});
        let s = Rbac::for_kind("RoleBinding").unwrap();
        s.default(&mut rb);
        assert_eq!(rb["roleRef"]["apiGroup"], RBAC_GROUP);
        assert_eq!(rb["subjects"][0]["apiGroup"], RBAC_GROUP);
        assert_eq!(rb["subjects"][1]["apiGroup"], "");
        assert!(s.validate_create(&rb).is_empty());
        // A cluster-wide binding of a service account needs its namespace.
        assert_eq!(create("ClusterRoleBinding", rb.clone()), vec!["subjects[1].namespace: Required value"]);
        let bad = json!({"roleRef": {"apiGroup": "x", "kind": "Thing", "name": "a/b"},
            "subjects": [{"kind": "Robot", "name": ""}, {"kind": "ServiceAccount", "name": "Bad_Name", "apiGroup": "v1"}]});
        let seg = is_valid_path_segment_name("a/b");
        let sa = is_dns1123_subdomain("Bad_Name");
        assert_eq!(
            create("RoleBinding", bad),
            vec![
                r#"roleRef.apiGroup: Unsupported value: "x": supported values: "rbac.authorization.k8s.io""#
                    .to_string(),
                r#"roleRef.kind: Unsupported value: "Thing": supported values: "Role", "ClusterRole""#.to_string(),
                format!(r#"roleRef.name: Invalid value: "a/b": {}"#, seg[0]),
                "subjects[0].name: Required value".to_string(),
                r#"subjects[0].kind: Unsupported value: "Robot": supported values: "ServiceAccount", "User", "Group""#
                    .to_string(),
                format!(r#"subjects[1].name: Invalid value: "Bad_Name": {}"#, sa[0]),
                r#"subjects[1].apiGroup: Unsupported value: "v1": supported values: """#.to_string(),
            ]
        );
    }

    #[test]
    fn role_ref_is_immutable() {
        let s = Rbac::for_kind("RoleBinding").unwrap();
        let old = json!({"roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": "view"}});
        let new = json!({"roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": "edit"}});
        assert_eq!(
            texts(s.validate_update(&new, &old)),
            vec![
                r#"roleRef: Invalid value: rbac.RoleRef{APIGroup:"rbac.authorization.k8s.io", Kind:"ClusterRole", Name:"edit"}: cannot change roleRef"#
            ]
        );
        assert!(s.validate_update(&old, &old).is_empty());
    }
}
