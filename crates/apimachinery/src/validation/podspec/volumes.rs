//! Volume sources of a pod spec, as upstream's `validateVolumeSource`:
//! exactly one source per volume, and the rules of the common sources
//! (`emptyDir`, `hostPath`, `secret`, `configMap`, `persistentVolumeClaim`,
//! `downwardAPI`, `projected`), with their key-to-path items and file modes.

use serde_json::Value;

use super::security::{validate_local_descending_path, validate_path_no_backsteps};
use super::{list, parse_quantity, str_of};
use crate::validation::field::{ErrorList, FieldError, Path};

/// Upstream's `fileModeErrorMsg`.
pub const FILE_MODE_MSG: &str = "must be a number between 0 and 0777 (octal), both inclusive";

/// The volume source fields in upstream's checking order, with the name
/// upstream uses in the `may not specify more than 1 volume type` path (two
/// are misspelt there upstream: `cephFS`, `downwarAPI`).
const SOURCES: &[(&str, &str)] = &[
    ("emptyDir", "emptyDir"),
    ("hostPath", "hostPath"),
    ("gitRepo", "gitRepo"),
    ("gcePersistentDisk", "gcePersistentDisk"),
    ("awsElasticBlockStore", "awsElasticBlockStore"),
    ("secret", "secret"),
    ("nfs", "nfs"),
    ("iscsi", "iscsi"),
    ("glusterfs", "glusterfs"),
    ("flocker", "flocker"),
    ("persistentVolumeClaim", "persistentVolumeClaim"),
    ("rbd", "rbd"),
    ("cinder", "cinder"),
    ("cephfs", "cephFS"),
    ("quobyte", "quobyte"),
    ("downwardAPI", "downwarAPI"),
    ("fc", "fc"),
    ("flexVolume", "flexVolume"),
    ("configMap", "configMap"),
    ("azureFile", "azureFile"),
    ("vsphereVolume", "vsphereVolume"),
    ("photonPersistentDisk", "photonPersistentDisk"),
    ("portworxVolume", "portworxVolume"),
    ("azureDisk", "azureDisk"),
    ("storageos", "storageos"),
    ("projected", "projected"),
    ("scaleIO", "scaleIO"),
    ("csi", "csi"),
    ("ephemeral", "ephemeral"),
    ("image", "image"),
];

/// The volume fields a pod's downward API volume may project.
const VOLUME_FIELD_PATHS: &[&str] =
    &["metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid"];

/// `validateVolumeSource` for the volume at `path` (`spec.volumes[i]`; the
/// source is inlined, so its paths are `spec.volumes[i].hostPath.path`).
pub fn validate_volume_source(vol: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let mut found = 0;
    for (source, forbidden_name) in SOURCES {
        let Some(s) = vol.get(*source).filter(|s| !s.is_null()) else { continue };
        let sp = path.child(source);
        if found > 0 {
            errs.push(FieldError::forbidden(&path.child(forbidden_name), "may not specify more than 1 volume type"));
            continue;
        }
        found += 1;
        match *source {
            "emptyDir" if s.get("sizeLimit").and_then(parse_quantity).is_some_and(|q| q < 0.0) => errs.push(
                FieldError::forbidden(&sp.child("sizeLimit"), "SizeLimit field must be a valid resource quantity"),
            ),
            "hostPath" => errs.extend(validate_host_path(s, &sp)),
            "secret" => {
                if str_of(s, "secretName").is_empty() {
                    errs.push(FieldError::required(&sp.child("secretName"), ""));
                }
                errs.extend(validate_mode(s, "defaultMode", &sp));
                errs.extend(validate_items(s, &sp.child("items")));
            }
            "configMap" => {
                if str_of(s, "name").is_empty() {
                    errs.push(FieldError::required(&sp.child("name"), ""));
                }
                errs.extend(validate_mode(s, "defaultMode", &sp));
                errs.extend(validate_items(s, &sp.child("items")));
            }
            "persistentVolumeClaim" if str_of(s, "claimName").is_empty() => {
                errs.push(FieldError::required(&sp.child("claimName"), ""))
            }
            "downwardAPI" => {
                errs.extend(validate_mode(s, "defaultMode", &sp));
                // Upstream reports every item against the source's path.
                for item in list(s, "items") {
                    errs.extend(validate_downward_api_file(item, &sp));
                }
            }
            "projected" => errs.extend(validate_projected(s, &sp)),
            _ => {}
        }
    }
    if found == 0 {
        errs.push(FieldError::required(path, "must specify a volume type"));
    }
    errs
}

/// `validateHostPathVolumeSource`: a path without `..`, a known type.
fn validate_host_path(s: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let p = str_of(s, "path");
    if p.is_empty() {
        errs.push(FieldError::required(&path.child("path"), ""));
        return errs;
    }
    errs.extend(validate_path_no_backsteps(p, &path.child("path")));
    if let Some(t) = s.get("type").and_then(Value::as_str) {
        const TYPES: &[&str] =
            &["", "BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate", "File", "FileOrCreate", "Socket"];
        if !TYPES.contains(&t) {
            errs.push(FieldError::not_supported(&path.child("type"), t, TYPES));
        }
    }
    errs
}

/// A file mode (`defaultMode`, `mode`) within 0–0777.
fn validate_mode(s: &Value, key: &str, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    if let Some(m) = s.get(key).and_then(Value::as_i64) {
        if !(0..=0o777).contains(&m) {
            errs.push(FieldError::invalid(&path.child(key), m, FILE_MODE_MSG));
        }
    }
    errs
}

/// `validateKeyToPath` over `items`.
fn validate_items(s: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    for (i, kp) in list(s, "items").iter().enumerate() {
        let ip = path.index(i);
        if str_of(kp, "key").is_empty() {
            errs.push(FieldError::required(&ip.child("key"), ""));
        }
        let p = str_of(kp, "path");
        if p.is_empty() {
            errs.push(FieldError::required(&ip.child("path"), ""));
        }
        errs.extend(validate_local_non_reserved_path(p, &ip.child("path")));
        errs.extend(validate_mode(kp, "mode", &ip));
    }
    errs
}

/// `validateLocalNonReservedPath`: relative, no `..` element, not starting
/// with `..`.
fn validate_local_non_reserved_path(target: &str, path: &Path) -> ErrorList {
    let mut errs = validate_local_descending_path(target, path);
    if target.starts_with("..") && !target.starts_with("../") {
        errs.push(FieldError::invalid(path, target, "must not start with '..'"));
    }
    errs
}

/// `validateDownwardAPIVolumeFile`: a path, exactly one of `fieldRef` and
/// `resourceFieldRef`, a known field path, the mode.
fn validate_downward_api_file(item: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let p = str_of(item, "path");
    if p.is_empty() {
        errs.push(FieldError::required(&path.child("path"), ""));
    }
    errs.extend(validate_local_non_reserved_path(p, &path.child("path")));
    let field_ref = item.get("fieldRef").filter(|f| !f.is_null());
    let resource_ref = item.get("resourceFieldRef").filter(|f| !f.is_null());
    if let Some(f) = field_ref {
        errs.extend(super::validate_object_field_selector(f, VOLUME_FIELD_PATHS, &path.child("fieldRef")));
        if resource_ref.is_some() {
            errs.push(FieldError::invalid(
                path,
                "resource",
                "fieldRef and resourceFieldRef can not be specified simultaneously",
            ));
        }
    } else if resource_ref.is_none() {
        errs.push(FieldError::required(path, "one of fieldRef and resourceFieldRef is required"));
    }
    errs.extend(validate_mode(item, "mode", path));
    errs
}

/// `validateProjectedVolumeSource` / `validateProjectionSources`: each
/// source's own rules, no path projected twice, one projection per source.
/// Upstream's paths are kept, quirks included (the token `path` and the
/// duplicate paths are reported against the `projected` path).
fn validate_projected(s: &Value, path: &Path) -> ErrorList {
    let mut errs = validate_mode(s, "defaultMode", path);
    let mut all_paths = std::collections::BTreeSet::new();
    let mut note_path = |p: &str, bad: &str, errs: &mut ErrorList| {
        if !p.is_empty() && !all_paths.insert(p.to_string()) {
            errs.push(FieldError::invalid(path, bad, "conflicting duplicate paths"));
        }
    };
    for (i, source) in list(s, "sources").iter().enumerate() {
        let sp = path.child("sources").index(i);
        let mut found = 0;
        for kind in ["secret", "configMap"] {
            let Some(p) = source.get(kind).filter(|p| !p.is_null()) else { continue };
            found += 1;
            let kp = sp.child(kind);
            let name = str_of(p, "name");
            if name.is_empty() {
                errs.push(FieldError::required(&kp.child("name"), ""));
            }
            errs.extend(validate_items(p, &kp.child("items")));
            for item in list(p, "items") {
                note_path(str_of(item, "path"), name, &mut errs);
            }
        }
        if let Some(p) = source.get("downwardAPI").filter(|p| !p.is_null()) {
            found += 1;
            for item in list(p, "items") {
                errs.extend(validate_downward_api_file(item, &sp.child("downwardAPI")));
                let target = str_of(item, "path");
                note_path(target, target, &mut errs);
            }
        }
        if let Some(p) = source.get("serviceAccountToken").filter(|p| !p.is_null()) {
            found += 1;
            let ep = sp.child("serviceAccountToken").child("expirationSeconds");
            let secs = p.get("expirationSeconds").and_then(Value::as_i64).unwrap_or(0);
            if secs < 600 {
                errs.push(FieldError::invalid(&ep, secs, "may not specify a duration less than 10 minutes"));
            }
            if secs > 1 << 32 {
                errs.push(FieldError::invalid(&ep, secs, "may not specify a duration larger than 2^32 seconds"));
            }
            let target = str_of(p, "path");
            if target.is_empty() {
                errs.push(FieldError::required(&path.child("path"), ""));
            } else {
                errs.extend(validate_local_non_reserved_path(target, &path.child("path")));
            }
        }
        if source.get("clusterTrustBundle").is_some_and(|p| !p.is_null()) {
            found += 1;
        }
        if found > 1 {
            errs.push(FieldError::forbidden(&sp, "may not specify more than 1 volume type"));
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn msgs(v: Value) -> Vec<String> {
        validate_volume_source(&v, &Path::new("spec").child("volumes").index(0))
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn exactly_one_source() {
        assert_eq!(
            msgs(json!({"name": "v", "emptyDir": {}, "hostPath": {"path": "/x"}})),
            ["spec.volumes[0].hostPath: Forbidden: may not specify more than 1 volume type"]
        );
        assert_eq!(msgs(json!({"name": "v"})), ["spec.volumes[0]: Required value: must specify a volume type"]);
        // Upstream's misspelt path for a second source.
        assert_eq!(
            msgs(json!({"name": "v", "emptyDir": {}, "downwardAPI": {}})),
            ["spec.volumes[0].downwarAPI: Forbidden: may not specify more than 1 volume type"]
        );
    }

    #[test]
    fn source_rules() {
        assert_eq!(msgs(json!({"hostPath": {"path": ""}})), ["spec.volumes[0].hostPath.path: Required value"]);
        assert_eq!(
            msgs(json!({"hostPath": {"path": "/a/../b", "type": "Dir"}})),
            [
                "spec.volumes[0].hostPath.path: Invalid value: \"/a/../b\": must not contain '..'",
                "spec.volumes[0].hostPath.type: Unsupported value: \"Dir\": supported values: \"\", \"BlockDevice\", \"CharDevice\", \"Directory\", \"DirectoryOrCreate\", \"File\", \"FileOrCreate\", \"Socket\"",
            ]
        );
        assert_eq!(
            msgs(json!({"configMap": {"defaultMode": 1000, "items": [{"key": "", "path": "/etc/x"}, {"key": "k", "path": "..x", "mode": -1}]}})),
            [
                "spec.volumes[0].configMap.name: Required value",
                "spec.volumes[0].configMap.defaultMode: Invalid value: 1000: must be a number between 0 and 0777 (octal), both inclusive",
                "spec.volumes[0].configMap.items[0].key: Required value",
                "spec.volumes[0].configMap.items[0].path: Invalid value: \"/etc/x\": must be a relative path",
                "spec.volumes[0].configMap.items[1].path: Invalid value: \"..x\": must not start with '..'",
                "spec.volumes[0].configMap.items[1].mode: Invalid value: -1: must be a number between 0 and 0777 (octal), both inclusive",
            ]
        );
        assert_eq!(
            msgs(json!({"persistentVolumeClaim": {}})),
            ["spec.volumes[0].persistentVolumeClaim.claimName: Required value"]
        );
        assert_eq!(msgs(json!({"secret": {}})), ["spec.volumes[0].secret.secretName: Required value"]);
    }

    #[test]
    fn projected_sources() {
        assert_eq!(
            msgs(json!({"projected": {"sources": [
                {"secret": {"name": "s", "items": [{"key": "k", "path": "a"}]}, "configMap": {"name": "c"}},
                {"configMap": {"name": "c", "items": [{"key": "k", "path": "a"}]}},
                {"serviceAccountToken": {"expirationSeconds": 60, "path": ""}}]}})),
            [
                "spec.volumes[0].projected.sources[0]: Forbidden: may not specify more than 1 volume type",
                "spec.volumes[0].projected: Invalid value: \"c\": conflicting duplicate paths",
                "spec.volumes[0].projected.sources[2].serviceAccountToken.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes",
                "spec.volumes[0].projected.path: Required value",
            ]
        );
    }

    #[test]
    fn downward_api_items() {
        assert_eq!(
            msgs(json!({"downwardAPI": {"items": [
                {"path": "a", "fieldRef": {"apiVersion": "v1", "fieldPath": "spec.nodeName"}},
                {"path": "b"}]}})),
            [
                "spec.volumes[0].downwardAPI.fieldRef.fieldPath: Unsupported value: \"spec.nodeName\": supported values: \"metadata.annotations\", \"metadata.labels\", \"metadata.name\", \"metadata.namespace\", \"metadata.uid\"",
                "spec.volumes[0].downwardAPI: Required value: one of fieldRef and resourceFieldRef is required",
            ]
        );
    }
}

#[cfg(test)]
mod pruning_tests {
    use serde_json::json;

    /// An empty source object (`emptyDir: {}`) survives the typed pruning
    /// the store applies, so it still counts as the volume's source.
    #[test]
    fn empty_sources_survive_pruning() {
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "image": "x"}], "volumes": [{"name": "v", "emptyDir": {}}]}});
        let decoded = crate::typed::decode("v1", "Pod", &pod).expect("typed").expect("decodes");
        assert_eq!(decoded.object["spec"]["volumes"][0]["emptyDir"], json!({}));
    }
}
