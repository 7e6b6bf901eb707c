//! CSI kinds of `storage.k8s.io/v1` (`pkg/apis/storage/validation`):
//!
//! * CSIDriver — v1 `SetDefaults_CSIDriver` and `ValidateCSIDriver{,Update}`:
//!   required flags, known `fsGroupPolicy` and lifecycle modes, token
//!   requests; `attachRequired` and `volumeLifecycleModes` never change.
//! * CSINode — `ValidateCSINode{,Update}`: driver names, node IDs, topology
//!   keys, and an existing driver entry never changes.
//! * VolumeAttachment — `ValidateVolumeAttachment{,V1,Update}`: attacher,
//!   exactly one source, node name; the spec never changes.

use std::collections::HashSet;

use serde_json::{json, Value};

use super::{generic, Generic, Strategy};
use crate::errors::StatusCause;
use crate::validation::meta::validate_nonnegative;
use crate::validation::{
    go_quote, go_string_slice, is_dns1123_subdomain, is_qualified_name, validate_immutable_field, BadValue, ErrorList,
    FieldError, Path,
};

const FS_GROUP_POLICIES: [&str; 3] = ["File", "None", "ReadWriteOnceWithFSType"];
const LIFECYCLE_MODES: [&str; 2] = ["Persistent", "Ephemeral"];
/// The longest CSINode `nodeID`.
const MAX_NODE_ID: usize = 192;

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn list(v: &Value, key: &str) -> Vec<Value> {
    v.get(key).and_then(Value::as_array).cloned().unwrap_or_default()
}

/// Core `ValidateCSIDriverName`: required, at most 63 characters, a DNS-1123
/// subdomain once lower-cased.
fn validate_csi_driver_name(name: &str, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    if name.is_empty() {
        errs.push(FieldError::required(path, ""));
    }
    if name.len() > 63 {
        errs.push(FieldError::too_long(path, 63));
    }
    for m in is_dns1123_subdomain(&name.to_lowercase()) {
        errs.push(FieldError::invalid(path, name, &m));
    }
    errs
}

/// Which CSI kind a [`Csi`] strategy serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Driver,
    Node,
    Attachment,
}

/// The strategy of CSIDriver, CSINode and VolumeAttachment.
#[derive(Clone, Debug)]
pub struct Csi {
    kind: Kind,
    flags: Generic,
}

impl Csi {
    /// The strategy of `kind`, or `None` for other kinds.
    pub fn for_kind(kind: &str) -> Option<Csi> {
        let k = match kind {
            "CSIDriver" => Kind::Driver,
            "CSINode" => Kind::Node,
            "VolumeAttachment" => Kind::Attachment,
            _ => return None,
        };
        Some(Csi { kind: k, flags: generic::for_builtin("storage.k8s.io", kind, k == Kind::Attachment) })
    }
}

/// `validateCSIDriverSpec` at `spec`.
pub fn validate_csi_driver_spec(spec: &Value) -> ErrorList {
    let mut errs = ErrorList::new();
    let p = Path::new("spec");
    // Upstream reports attachRequired at `attachedRequired`.
    for (key, at) in [
        ("attachRequired", "attachedRequired"),
        ("podInfoOnMount", "podInfoOnMount"),
        ("storageCapacity", "storageCapacity"),
    ] {
        if spec.get(key).is_none_or(Value::is_null) {
            errs.push(FieldError::required(&p.child(at), ""));
        }
    }
    if let Some(policy) = spec.get("fsGroupPolicy").and_then(Value::as_str) {
        if !FS_GROUP_POLICIES.contains(&policy) {
            errs.push(FieldError::not_supported(&p.child("fsGroupPolicy"), policy, &FS_GROUP_POLICIES));
        }
    }
    let mut audiences = HashSet::new();
    for (i, tr) in list(spec, "tokenRequests").iter().enumerate() {
        let tp = p.child("tokenRequests").index(i);
        let audience = str_of(tr, "audience").to_string();
        if !audiences.insert(audience.clone()) {
            errs.push(FieldError::duplicate(&tp.child("audience"), audience));
            continue;
        }
        let Some(exp) = tr.get("expirationSeconds").and_then(Value::as_i64) else { continue };
        if exp < 600 {
            errs.push(FieldError::invalid(
                &tp.child("expirationSeconds"),
                exp,
                "may not specify a duration less than 10 minutes",
            ));
        }
        if exp > 1 << 32 {
            errs.push(FieldError::invalid(
                &tp.child("expirationSeconds"),
                exp,
                "may not specify a duration larger than 2^32 seconds",
            ));
        }
    }
    for mode in list(spec, "volumeLifecycleModes") {
        let m = mode.as_str().unwrap_or("");
        if !LIFECYCLE_MODES.contains(&m) {
            errs.push(FieldError::not_supported(&p.child("volumeLifecycleModes"), m, &LIFECYCLE_MODES));
        }
    }
    if spec.get("seLinuxMount").is_none_or(Value::is_null) {
        errs.push(FieldError::required(&p.child("seLinuxMount"), ""));
    }
    if let Some(period) = spec.get("nodeAllocatableUpdatePeriodSeconds").and_then(Value::as_i64).filter(|p| *p < 10) {
        errs.push(FieldError::invalid(
            &p.child("nodeAllocatableUpdatePeriodSeconds"),
            period,
            "must be greater than or equal to 10 seconds",
        ));
    }
    errs
}

/// `validateCSINodeDrivers` at `spec.drivers`.
pub fn validate_csi_node(node: &Value) -> ErrorList {
    let mut errs = ErrorList::new();
    let path = Path::new("spec").child("drivers");
    let mut names = HashSet::new();
    for (i, d) in list(&node["spec"], "drivers").iter().enumerate() {
        let dp = path.index(i);
        let name = str_of(d, "name");
        errs.extend(validate_csi_driver_name(name, &dp.child("name")));
        let id = str_of(d, "nodeID");
        if id.is_empty() {
            errs.push(FieldError::required(&dp.child("nodeID"), ""));
        }
        if id.len() > MAX_NODE_ID {
            errs.push(FieldError::invalid(
                &dp.child("nodeID"),
                id,
                &format!("must be {MAX_NODE_ID} characters or less"),
            ));
        }
        if let Some(count) = d.pointer("/allocatable/count").and_then(Value::as_i64) {
            errs.extend(validate_nonnegative(count, &dp.child("allocatable").child("count")));
        }
        if !names.insert(name.to_string()) {
            errs.push(FieldError::duplicate(&dp.child("name"), name));
        }
        let mut keys = HashSet::new();
        for key in list(d, "topologyKeys") {
            let key = key.as_str().unwrap_or("");
            if key.is_empty() {
                errs.push(FieldError::required(&dp, ""));
            }
            if !keys.insert(key.to_string()) {
                errs.push(FieldError::duplicate(&dp, key));
            }
            for m in is_qualified_name(key) {
                errs.push(FieldError::invalid(&dp, key, &m));
            }
        }
    }
    errs
}

/// Go's `%#v` of a `storage.CSINodeDriver` (a set `allocatable` is a
/// pointer whose address upstream prints and we cannot).
fn go_csi_node_driver(d: &Value) -> String {
    let keys: Vec<&str> =
        d.get("topologyKeys").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
    let keys = if d.get("topologyKeys").is_none_or(Value::is_null) {
        "[]string(nil)".to_string()
    } else {
        go_string_slice(&keys, false)
    };
    let alloc = if d.get("allocatable").is_some_and(|a| !a.is_null()) {
        "(*storage.VolumeNodeResources)(0xc000000000)"
    } else {
        "(*storage.VolumeNodeResources)(nil)"
    };
    format!(
        "storage.CSINodeDriver{{Name:{}, NodeID:{}, TopologyKeys:{keys}, Allocatable:{alloc}}}",
        go_quote(str_of(d, "name")),
        go_quote(str_of(d, "nodeID"))
    )
}

/// `ValidateVolumeAttachment` and `ValidateVolumeAttachmentV1` minus
/// `ObjectMeta`.
pub fn validate_volume_attachment(va: &Value) -> ErrorList {
    let mut errs = ErrorList::new();
    let spec = &va["spec"];
    let p = Path::new("spec");
    let attacher = str_of(spec, "attacher");
    if attacher.is_empty() {
        errs.push(FieldError::required(&p.child("attacher"), ""));
    }
    let source = &spec["source"];
    let sp = p.child("source");
    let pv = source.get("persistentVolumeName").and_then(Value::as_str);
    let inline = source.get("inlineVolumeSpec").filter(|v| !v.is_null());
    const ONE: &str = "must specify exactly one of inlineVolumeSpec and persistentVolumeName";
    match (pv, inline) {
        (None, None) => errs.push(FieldError::required(&sp, ONE)),
        (Some(_), Some(_)) => errs.push(FieldError::forbidden(&sp, ONE)),
        (Some(""), None) => errs.push(FieldError::required(
            &sp.child("persistentVolumeName"),
            "must specify non empty persistentVolumeName",
        )),
        _ => {}
    }
    let node = str_of(spec, "nodeName");
    for m in is_dns1123_subdomain(node) {
        errs.push(FieldError::invalid(&p.child("nodeName"), node, &m));
    }
    errs.extend(validate_attachment_status(va));
    // The v1-only checks.
    errs.extend(validate_csi_driver_name(attacher, &p.child("attacher")));
    if let Some(pv) = pv {
        for m in is_dns1123_subdomain(pv) {
            errs.push(FieldError::invalid(&sp.child("persistentVolumeName"), pv, &m));
        }
    }
    errs
}

/// `validateVolumeAttachmentStatus`: metadata size and the two volume
/// errors (upstream reports a long message with the metadata limit).
fn validate_attachment_status(va: &Value) -> ErrorList {
    const MAX_METADATA: i64 = 256 * 1024;
    const MAX_MESSAGE: usize = 1024;
    let mut errs = ErrorList::new();
    let sp = Path::new("status");
    if let Some(m) = va.pointer("/status/attachmentMetadata").and_then(Value::as_object) {
        let size: usize = m.iter().map(|(k, v)| k.len() + v.as_str().map_or(0, str::len)).sum();
        if size as i64 > MAX_METADATA {
            errs.push(FieldError::too_long(&sp.child("attachmentMetadata"), MAX_METADATA));
        }
    }
    for key in ["attachError", "detachError"] {
        let Some(e) = va.get("status").and_then(|s| s.get(key)).filter(|e| !e.is_null()) else { continue };
        if str_of(e, "message").len() > MAX_MESSAGE {
            errs.push(FieldError::too_long(&sp.child(key).child("message"), MAX_METADATA));
        }
        if let Some(code) = e.get("errorCode").and_then(Value::as_i64).filter(|c| *c < 0) {
            errs.push(FieldError::invalid(
                &sp.child(key).child("errorCode"),
                code,
                "must be between 0 and 2147483647, inclusive",
            ));
        }
    }
    errs
}

/// Go's `%#v` of a `storage.VolumeAttachmentSpec` as upstream's "spec is
/// immutable" error prints it (pointers show as addresses we cannot know).
fn go_attachment_spec(spec: &Value) -> String {
    let ptr = |set: bool, ty: &str| {
        if set {
            format!("(*{ty})(0xc000000000)")
        } else {
            format!("(*{ty})(nil)")
        }
    };
    let source = &spec["source"];
    format!(
        "storage.VolumeAttachmentSpec{{Attacher:{}, Source:storage.VolumeAttachmentSource{{PersistentVolumeName:{}, InlineVolumeSpec:{}}}, NodeName:{}}}",
        go_quote(str_of(spec, "attacher")),
        ptr(source.get("persistentVolumeName").is_some_and(|v| !v.is_null()), "string"),
        ptr(source.get("inlineVolumeSpec").is_some_and(|v| !v.is_null()), "core.PersistentVolumeSpec"),
        go_quote(str_of(spec, "nodeName"))
    )
}

impl Strategy for Csi {
    /// v1 `SetDefaults_CSIDriver` (other CSI kinds have no defaults).
    fn default(&self, obj: &mut Value) {
        if self.kind != Kind::Driver {
            return;
        }
        let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else { return };
        for (key, value) in [
            ("attachRequired", json!(true)),
            ("podInfoOnMount", json!(false)),
            ("storageCapacity", json!(false)),
            ("fsGroupPolicy", json!("ReadWriteOnceWithFSType")),
            ("requiresRepublish", json!(false)),
            ("seLinuxMount", json!(false)),
        ] {
            if spec.get(key).is_none_or(Value::is_null) {
                spec.insert(key.into(), value);
            }
        }
        if spec.get("volumeLifecycleModes").and_then(Value::as_array).is_none_or(Vec::is_empty) {
            spec.insert("volumeLifecycleModes".into(), json!(["Persistent"]));
        }
    }

    fn validate_create(&self, obj: &Value) -> Vec<StatusCause> {
        match self.kind {
            Kind::Driver => validate_csi_driver_spec(&obj["spec"]),
            Kind::Node => validate_csi_node(obj),
            Kind::Attachment => validate_volume_attachment(obj),
        }
        .to_causes()
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<StatusCause> {
        let mut errs = ErrorList::new();
        match self.kind {
            Kind::Driver => {
                errs.extend(validate_csi_driver_spec(&new["spec"]));
                let sp = Path::new("spec");
                errs.extend(validate_immutable_field(
                    new["spec"].get("attachRequired"),
                    old["spec"].get("attachRequired"),
                    &sp.child("attachedRequired"),
                ));
                let (n, o) = (&new["spec"]["volumeLifecycleModes"], &old["spec"]["volumeLifecycleModes"]);
                if n != o {
                    let modes: Vec<&str> = n.as_array().into_iter().flatten().filter_map(Value::as_str).collect();
                    let shown =
                        go_string_slice(&modes, n.is_null()).replacen("string", "storage.VolumeLifecycleMode", 1);
                    errs.push(FieldError::invalid(
                        &sp.child("volumeLifecycleModes"),
                        BadValue::Raw(shown),
                        crate::validation::FIELD_IMMUTABLE_ERROR_MSG,
                    ));
                }
            }
            Kind::Node => {
                errs.extend(validate_csi_node(new));
                let path = Path::new("spec").child("drivers");
                for od in list(&old["spec"], "drivers") {
                    for nd in list(&new["spec"], "drivers") {
                        if str_of(&od, "name") == str_of(&nd, "name") && od != nd {
                            errs.push(FieldError::invalid(
                                &path,
                                BadValue::Raw(go_csi_node_driver(&nd)),
                                crate::validation::FIELD_IMMUTABLE_ERROR_MSG,
                            ));
                        }
                    }
                }
            }
            Kind::Attachment => {
                errs.extend(validate_volume_attachment(new));
                if new["spec"] != old["spec"] {
                    errs.push(FieldError::invalid(
                        &Path::new("spec"),
                        BadValue::Raw(go_attachment_spec(&new["spec"])),
                        crate::validation::FIELD_IMMUTABLE_ERROR_MSG,
                    ));
                }
            }
        }
        errs.to_causes()
    }

    fn has_status_subresource(&self) -> bool {
        self.kind == Kind::Attachment
    }
    fn tracks_generation(&self) -> bool {
        self.flags.tracks_generation
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::strategy::cause_texts as texts;

    fn strategy(kind: &str) -> Csi {
        Csi::for_kind(kind).expect("a CSI kind")
    }

    #[test]
    fn csi_driver_defaults_and_rules() {
        let s = strategy("CSIDriver");
        let mut d = json!({"spec": {}});
        s.default(&mut d);
        assert_eq!(
            d["spec"],
            json!({"attachRequired": true, "podInfoOnMount": false, "storageCapacity": false,
                "fsGroupPolicy": "ReadWriteOnceWithFSType", "requiresRepublish": false, "seLinuxMount": false,
                "volumeLifecycleModes": ["Persistent"]})
        );
        assert!(s.validate_create(&d).is_empty());
        let mut bad = d.clone();
        bad["spec"]["fsGroupPolicy"] = json!("Sometimes");
        bad["spec"]["volumeLifecycleModes"] = json!(["Forever"]);
        bad["spec"]["tokenRequests"] = json!([{"audience": "a", "expirationSeconds": 60}, {"audience": "a"}]);
        assert_eq!(
            texts(s.validate_create(&bad)),
            vec![
                r#"spec.fsGroupPolicy: Unsupported value: "Sometimes": supported values: "File", "None", "ReadWriteOnceWithFSType""#,
                "spec.tokenRequests[0].expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes",
                r#"spec.tokenRequests[1].audience: Duplicate value: "a""#,
                r#"spec.volumeLifecycleModes: Unsupported value: "Forever": supported values: "Persistent", "Ephemeral""#,
            ]
        );
        let mut changed = d.clone();
        changed["spec"]["attachRequired"] = json!(false);
        changed["spec"]["volumeLifecycleModes"] = json!(["Persistent", "Ephemeral"]);
        changed["spec"]["podInfoOnMount"] = json!(true);
        assert_eq!(
            texts(s.validate_update(&changed, &d)),
            vec![
                "spec.attachedRequired: Invalid value: false: field is immutable",
                r#"spec.volumeLifecycleModes: Invalid value: []storage.VolumeLifecycleMode{"Persistent", "Ephemeral"}: field is immutable"#,
            ]
        );
    }

    #[test]
    fn csi_node_rules() {
        let s = strategy("CSINode");
        let node = json!({"spec": {"drivers": [
            {"name": "csi.example.com", "nodeID": "n1", "topologyKeys": ["zone", "zone"]},
            {"name": "csi.example.com", "nodeID": ""}]}});
        assert_eq!(
            texts(s.validate_create(&node)),
            vec![
                r#"spec.drivers[0]: Duplicate value: "zone""#,
                "spec.drivers[1].nodeID: Required value",
                r#"spec.drivers[1].name: Duplicate value: "csi.example.com""#,
            ]
        );
        let old = json!({"spec": {"drivers": [{"name": "d.example.com", "nodeID": "n1"}]}});
        let new = json!({"spec": {"drivers": [{"name": "d.example.com", "nodeID": "n2"}]}});
        assert_eq!(
            texts(s.validate_update(&new, &old)),
            vec![
                r#"spec.drivers: Invalid value: storage.CSINodeDriver{Name:"d.example.com", NodeID:"n2", TopologyKeys:[]string(nil), Allocatable:(*storage.VolumeNodeResources)(nil)}: field is immutable"#
            ]
        );
    }

    #[test]
    fn volume_attachment_rules() {
        let s = strategy("VolumeAttachment");
        let good = json!({"spec": {"attacher": "csi.example.com", "nodeName": "node-1",
            "source": {"persistentVolumeName": "pv-1"}}});
        assert!(s.validate_create(&good).is_empty());
        let bad = json!({"spec": {"attacher": "csi.example.com", "nodeName": "node-1", "source": {}}});
        assert_eq!(
            texts(s.validate_create(&bad)),
            vec!["spec.source: Required value: must specify exactly one of inlineVolumeSpec and persistentVolumeName"]
        );
        let mut failed = good.clone();
        failed["status"] = json!({"detachError": {"message": "x".repeat(1025), "errorCode": -1}});
        assert_eq!(
            texts(s.validate_create(&failed)),
            vec![
                "status.detachError.message: Too long: may not be more than 262144 bytes",
                "status.detachError.errorCode: Invalid value: -1: must be between 0 and 2147483647, inclusive",
            ]
        );
        let mut moved = good.clone();
        moved["spec"]["nodeName"] = json!("node-2");
        assert_eq!(
            texts(s.validate_update(&moved, &good)),
            vec![
                r#"spec: Invalid value: storage.VolumeAttachmentSpec{Attacher:"csi.example.com", Source:storage.VolumeAttachmentSource{PersistentVolumeName:(*string)(0xc000000000), InlineVolumeSpec:(*core.PersistentVolumeSpec)(nil)}, NodeName:"node-2"}: field is immutable"#
            ]
        );
    }
}
