//! RuntimeClasses (`node.k8s.io/v1`): `ValidateRuntimeClass` and
//! `ValidateRuntimeClassUpdate` (`pkg/apis/node/validation`): a DNS-1123
//! label `handler` that never changes, non-negative `overhead.podFixed`
//! quantities, `scheduling.nodeSelector` labels and unique valid
//! `scheduling.tolerations`.

use serde_json::Value;

use super::{generic, Generic, Strategy};
use crate::errors::StatusCause;
use crate::validation::podspec::parse_quantity;
use crate::validation::podspec::scheduling::validate_tolerations;
use crate::validation::{
    go_quote, is_dns1123_label, validate_immutable_field, validate_labels, BadValue, ErrorList, FieldError, Path,
};

/// The strategy of RuntimeClasses.
#[derive(Clone, Debug)]
pub struct RuntimeClass {
    flags: Generic,
}

impl RuntimeClass {
    /// The strategy with upstream's flags.
    #[allow(clippy::new_without_default)]
    pub fn new() -> RuntimeClass {
        RuntimeClass { flags: generic::for_builtin("node.k8s.io", "RuntimeClass", false) }
    }
}

/// Go's `%#v` of a `core.Toleration` (a set `tolerationSeconds` is a
/// pointer whose address upstream prints and we cannot).
fn go_toleration(t: &Value) -> String {
    let s = |k: &str| go_quote(t.get(k).and_then(Value::as_str).unwrap_or(""));
    let secs = if t.get("tolerationSeconds").is_some_and(|v| !v.is_null()) {
        "(*int64)(0xc000000000)"
    } else {
        "(*int64)(nil)"
    };
    format!(
        "core.Toleration{{Key:{}, Operator:{}, Value:{}, Effect:{}, TolerationSeconds:{secs}}}",
        s("key"),
        s("operator"),
        s("value"),
        s("effect")
    )
}

/// `ValidateRuntimeClass` minus `ObjectMeta`.
pub fn validate_runtime_class(rc: &Value) -> ErrorList {
    let mut errs = ErrorList::new();
    let handler = rc.get("handler").and_then(Value::as_str).unwrap_or("");
    for m in is_dns1123_label(handler) {
        errs.push(FieldError::invalid(&Path::new("handler"), handler, &m));
    }
    // `ValidateResourceRequirements` of `{limits: podFixed}`: the quantity rule.
    let limits = Path::new("overhead").child("limits");
    if let Some(fixed) = rc.pointer("/overhead/podFixed").and_then(Value::as_object) {
        let mut keys: Vec<&String> = fixed.keys().collect();
        keys.sort();
        for k in keys {
            let q = &fixed[k];
            if parse_quantity(q).is_some_and(|n| n < 0.0) {
                let shown = q.as_str().map_or_else(|| q.to_string(), str::to_string);
                errs.push(FieldError::invalid(&limits.key(k), shown, "must be greater than or equal to 0"));
            }
        }
    }
    if let Some(s) = rc.get("scheduling").filter(|s| !s.is_null()) {
        let sp = Path::new("scheduling");
        errs.extend(validate_labels(s.get("nodeSelector"), &sp.child("nodeSelector")));
        let tolerations = s.get("tolerations").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
        let tp = sp.child("tolerations");
        errs.extend(validate_tolerations(tolerations, &tp));
        let mut seen = Vec::new();
        for (i, t) in tolerations.iter().enumerate() {
            let key: Vec<Option<&Value>> = ["key", "operator", "value", "effect"].iter().map(|k| t.get(*k)).collect();
            if seen.contains(&key) {
                errs.push(FieldError::duplicate(&tp.index(i), BadValue::Raw(go_toleration(t))));
            } else {
                seen.push(key);
            }
        }
    }
    errs
}

impl Strategy for RuntimeClass {
    fn validate_create(&self, obj: &Value) -> Vec<StatusCause> {
        validate_runtime_class(obj).to_causes()
    }
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<StatusCause> {
        let mut errs = validate_runtime_class(new);
        errs.extend(validate_immutable_field(new.get("handler"), old.get("handler"), &Path::new("handler")));
        errs.to_causes()
    }
    fn has_status_subresource(&self) -> bool {
        false
    }
    fn tracks_generation(&self) -> bool {
        self.flags.tracks_generation
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::strategy::cause_texts as texts;

    #[test]
    fn runtime_class_rules() {
        let s = RuntimeClass::new();
        assert!(s.validate_create(&json!({"handler": "runc", "overhead": {"podFixed": {"cpu": "250m"}}})).is_empty());
        let bad = json!({"handler": "Run_C", "overhead": {"podFixed": {"cpu": "-1"}},
            "scheduling": {"nodeSelector": {"a b": "x"}, "tolerations": [
                {"key": "k", "operator": "Exists", "effect": "NoSchedule"},
                {"key": "k", "operator": "Exists", "effect": "NoSchedule"}]}});
        let mut want: Vec<String> =
            is_dns1123_label("Run_C").iter().map(|m| format!(r#"handler: Invalid value: "Run_C": {m}"#)).collect();
        want.push(r#"overhead.limits[cpu]: Invalid value: "-1": must be greater than or equal to 0"#.into());
        let got = texts(s.validate_create(&bad));
        assert_eq!(&got[..want.len()], &want[..]);
        assert!(got.iter().any(|t| t.starts_with("scheduling.nodeSelector: Invalid value: \"a b\"")), "{got:?}");
        assert_eq!(
            got.last().unwrap(),
            r#"scheduling.tolerations[1]: Duplicate value: core.Toleration{Key:"k", Operator:"Exists", Value:"", Effect:"NoSchedule", TolerationSeconds:(*int64)(nil)}"#
        );
        assert_eq!(
            texts(s.validate_update(&json!({"handler": "crun"}), &json!({"handler": "runc"}))),
            vec![r#"handler: Invalid value: "crun": field is immutable"#]
        );
    }
}
