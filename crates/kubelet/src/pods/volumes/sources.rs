//! The contents of API-data volumes, built from objects already fetched:
//! configMap and secret keys (`items`, `defaultMode`, `optional`) and
//! downward API files (`fieldRef`, `resourceFieldRef`), as upstream's
//! `MakePayload` (configmap, secret) and `CollectData` (downwardapi).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    ConfigMap, Container, DownwardAPIVolumeFile, KeyToPath, ObjectFieldSelector, Pod, ResourceFieldSelector, Secret,
};

use super::atomic_writer::{FileProjection, Payload};
use crate::agent::status::parse_quantity;

/// Upstream's default file mode of configMap, secret, downwardAPI and
/// projected volumes (`0644`; secrets too).
pub const DEFAULT_MODE: i32 = 0o644;

/// Node allocatable resources, the fallback for a container without limits
/// in `resourceFieldRef` (upstream `MergeContainerResourceLimits`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Allocatable {
    /// CPU in millicores.
    pub cpu_millis: f64,
    /// Memory in bytes.
    pub memory_bytes: f64,
    /// Ephemeral storage in bytes.
    pub ephemeral_storage_bytes: f64,
}

/// Which object kind the keys came from (for upstream's messages).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeySource {
    /// A ConfigMap (`data` and `binaryData`).
    ConfigMap,
    /// A Secret (`data`).
    Secret,
}

impl KeySource {
    /// `configmap` / `secret`: the resource name upstream's kubelet object
    /// cache uses in its NotFound error (`configmap "x" not found`).
    pub fn resource(self) -> &'static str {
        match self {
            KeySource::ConfigMap => "configmap",
            KeySource::Secret => "secret",
        }
    }

    fn missing_key(self, key: &str) -> String {
        match self {
            KeySource::ConfigMap => format!("configmap references non-existent config key: {key}"),
            KeySource::Secret => format!("references non-existent secret key: {key}"),
        }
    }
}

/// The keys of a ConfigMap: `data` (UTF-8) and `binaryData`.
pub fn configmap_entries(cm: &ConfigMap) -> BTreeMap<String, Vec<u8>> {
    let mut out: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    for (k, v) in cm.data.iter().flatten() {
        out.insert(k.clone(), v.as_bytes().to_vec());
    }
    for (k, v) in cm.binary_data.iter().flatten() {
        out.insert(k.clone(), v.0.clone());
    }
    out
}

/// The keys of a Secret (`data`, already decoded; the API folds `stringData` in).
pub fn secret_entries(secret: &Secret) -> BTreeMap<String, Vec<u8>> {
    secret.data.iter().flatten().map(|(k, v)| (k.clone(), v.0.clone())).collect()
}

/// Files for a configMap/secret source: every key at its own name with
/// `default_mode` when `items` is empty, else each item at its `path` with its
/// `mode` (or `default_mode`). A missing key is an error unless `optional`.
/// `entries` is `None` when the object does not exist: an empty payload if
/// `optional`, else upstream's `configmap "x" not found`.
pub fn key_payload(
    kind: KeySource,
    name: &str,
    entries: Option<&BTreeMap<String, Vec<u8>>>,
    items: Option<&[KeyToPath]>,
    default_mode: Option<i32>,
    optional: bool,
) -> Result<Payload, String> {
    let mut payload = Payload::new();
    let Some(entries) = entries else {
        return if optional { Ok(payload) } else { Err(format!("{} \"{name}\" not found", kind.resource())) };
    };
    let default_mode = default_mode.unwrap_or(DEFAULT_MODE) as u32;
    match items {
        Some(items) if !items.is_empty() => {
            for item in items {
                let Some(data) = entries.get(&item.key) else {
                    if optional {
                        continue;
                    }
                    return Err(kind.missing_key(&item.key));
                };
                let mode = item.mode.map(|m| m as u32).unwrap_or(default_mode);
                payload.insert(item.path.clone(), FileProjection { data: data.clone(), mode });
            }
        }
        _ => {
            for (k, v) in entries {
                payload.insert(k.clone(), FileProjection { data: v.clone(), mode: default_mode });
            }
        }
    }
    Ok(payload)
}

/// Files for downward API items (`fieldRef` or `resourceFieldRef`), each
/// with its `mode` or `default_mode` (0644).
pub fn downward_payload(
    pod: &Pod,
    items: &[DownwardAPIVolumeFile],
    default_mode: Option<i32>,
    allocatable: &Allocatable,
) -> Result<Payload, String> {
    let default_mode = default_mode.unwrap_or(DEFAULT_MODE) as u32;
    let mut payload = Payload::new();
    let mut errors = Vec::new();
    for item in items {
        let value = if let Some(field) = &item.field_ref {
            extract_field_path(pod, field)
        } else if let Some(res) = &item.resource_field_ref {
            extract_resource(pod, res, allocatable)
        } else {
            continue;
        };
        match value {
            Ok(v) => {
                let mode = item.mode.map(|m| m as u32).unwrap_or(default_mode);
                payload.insert(item.path.clone(), FileProjection { data: v.into_bytes(), mode });
            }
            Err(e) => errors.push(e),
        }
    }
    if errors.is_empty() {
        Ok(payload)
    } else {
        Err(aggregate(&errors))
    }
}

/// Upstream's aggregate error text: one message as is, several in `[a, b]`.
pub fn aggregate(errors: &[String]) -> String {
    match errors {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

/// The value of a pod `fieldRef` in a volume, as upstream's
/// `fieldpath.ExtractFieldPathAsString`: metadata name, namespace, uid,
/// generateName, labels and annotations (whole maps as `k="v"` lines, or one
/// key with `metadata.labels['k']`).
pub fn extract_field_path(pod: &Pod, field: &ObjectFieldSelector) -> Result<String, String> {
    let meta = &pod.metadata;
    let path = field.field_path.as_str();
    if let Some((map, key)) = split_subscript(path) {
        let m = match map {
            "metadata.annotations" => &meta.annotations,
            "metadata.labels" => &meta.labels,
            _ => return Err(format!("fieldPath {path:?} does not support subscript")),
        };
        return Ok(m.as_ref().and_then(|m| m.get(key)).cloned().unwrap_or_default());
    }
    Ok(match path {
        "metadata.annotations" => format_map(meta.annotations.as_ref()),
        "metadata.labels" => format_map(meta.labels.as_ref()),
        "metadata.name" => meta.name.clone().unwrap_or_default(),
        "metadata.namespace" => meta.namespace.clone().unwrap_or_default(),
        "metadata.uid" => meta.uid.clone().unwrap_or_default(),
        "metadata.generateName" => meta.generate_name.clone().unwrap_or_default(),
        _ => return Err(format!("unsupported fieldPath: {path}")),
    })
}

/// `metadata.labels['k']` → (`metadata.labels`, `k`).
fn split_subscript(path: &str) -> Option<(&str, &str)> {
    let (head, rest) = path.split_once("['")?;
    Some((head, rest.strip_suffix("']")?))
}

/// A map as upstream's `fieldpath.FormatMap`: sorted `key="value"` lines
/// (Go `%q` quoting), no trailing newline.
pub fn format_map(m: Option<&BTreeMap<String, String>>) -> String {
    m.into_iter().flatten().map(|(k, v)| format!("{k}={}", go_quote(v))).collect::<Vec<_>>().join("\n")
}

/// Go's `strconv.Quote` for the characters that occur in label and
/// annotation values.
fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn find_container<'a>(pod: &'a Pod, name: &str) -> Option<&'a Container> {
    let spec = pod.spec.as_ref()?;
    spec.containers.iter().chain(spec.init_containers.iter().flatten()).find(|c| c.name == name)
}

/// The value of a `resourceFieldRef` (`limits.cpu`, `requests.memory`, …)
/// divided by its divisor and rounded up, as upstream's
/// `ExtractContainerResourceValue`; unset limits fall back to node allocatable.
pub fn extract_resource(pod: &Pod, sel: &ResourceFieldSelector, alloc: &Allocatable) -> Result<String, String> {
    let cname = sel.container_name.as_deref().unwrap_or_default();
    let container = find_container(pod, cname).ok_or_else(|| format!("container {cname} not found"))?;
    let res = container.resources.as_ref();
    let get = |which: &str, name: &str| -> Option<f64> {
        let list =
            if which == "limits" { res.and_then(|r| r.limits.as_ref()) } else { res.and_then(|r| r.requests.as_ref()) };
        list.and_then(|l| l.get(name)).and_then(|q| parse_quantity(&q.0))
    };
    let (which, name) =
        sel.resource.split_once('.').ok_or_else(|| format!("unsupported container resource : {}", sel.resource))?;
    let fallback = match name {
        "cpu" => alloc.cpu_millis / 1000.0,
        "memory" => alloc.memory_bytes,
        "ephemeral-storage" => alloc.ephemeral_storage_bytes,
        _ => return Err(format!("unsupported container resource : {}", sel.resource)),
    };
    let value = match which {
        "limits" => get("limits", name).unwrap_or(fallback),
        "requests" => get("requests", name).unwrap_or(0.0),
        _ => return Err(format!("unsupported container resource : {}", sel.resource)),
    };
    let divisor = sel.divisor.as_ref().and_then(|d| parse_quantity(&d.0)).filter(|d| *d > 0.0).unwrap_or(1.0);
    let result = if name == "cpu" {
        // Upstream divides milli-values so a 1m divisor yields whole millicores.
        ((value * 1000.0).round() / (divisor * 1000.0).round()).ceil()
    } else {
        (value / divisor).ceil()
    };
    Ok(format!("{}", result as i64))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{PodSpec, ResourceRequirements};
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
    use k8s_openapi::ByteString;

    fn kp(key: &str, path: &str, mode: Option<i32>) -> KeyToPath {
        KeyToPath { key: key.into(), path: path.into(), mode }
    }

    fn cm() -> BTreeMap<String, Vec<u8>> {
        let c = ConfigMap {
            data: Some([("a".to_string(), "A".to_string()), ("b".to_string(), "B".to_string())].into()),
            binary_data: Some([("bin".to_string(), ByteString(vec![0, 1]))].into()),
            ..Default::default()
        };
        configmap_entries(&c)
    }

    #[test]
    fn items_and_modes_follow_default_and_per_item_mode() {
        let e = cm();
        let all = key_payload(KeySource::ConfigMap, "x", Some(&e), None, None, false).unwrap();
        assert_eq!(all.keys().collect::<Vec<_>>(), ["a", "b", "bin"]);
        assert!(all.values().all(|f| f.mode == 0o644));
        assert_eq!(all["bin"].data, vec![0, 1]);
        let all = key_payload(KeySource::ConfigMap, "x", Some(&e), Some(&[]), Some(0o400), false).unwrap();
        assert!(all.values().all(|f| f.mode == 0o400), "empty items = all keys with defaultMode");

        let items = [kp("a", "dir/a.txt", Some(0o600)), kp("b", "b.txt", None)];
        let some = key_payload(KeySource::ConfigMap, "x", Some(&e), Some(&items), Some(0o440), false).unwrap();
        assert_eq!(some.len(), 2);
        assert_eq!(some["dir/a.txt"], FileProjection { data: b"A".to_vec(), mode: 0o600 });
        assert_eq!(some["b.txt"].mode, 0o440);
    }

    #[test]
    fn missing_objects_and_keys_follow_optional() {
        let e = cm();
        assert_eq!(
            key_payload(KeySource::ConfigMap, "x", None, None, None, false).unwrap_err(),
            "configmap \"x\" not found"
        );
        assert_eq!(key_payload(KeySource::Secret, "s", None, None, None, false).unwrap_err(), "secret \"s\" not found");
        assert!(key_payload(KeySource::Secret, "s", None, None, None, true).unwrap().is_empty());
        let items = [kp("nope", "n", None), kp("a", "a", None)];
        assert_eq!(
            key_payload(KeySource::ConfigMap, "x", Some(&e), Some(&items), None, false).unwrap_err(),
            "configmap references non-existent config key: nope"
        );
        assert_eq!(
            key_payload(KeySource::Secret, "x", Some(&e), Some(&items), None, false).unwrap_err(),
            "references non-existent secret key: nope"
        );
        let ok = key_payload(KeySource::ConfigMap, "x", Some(&e), Some(&items), None, true).unwrap();
        assert_eq!(ok.keys().collect::<Vec<_>>(), ["a"]);
    }

    fn pod() -> Pod {
        let mut p = Pod::default();
        p.metadata.name = Some("web".into());
        p.metadata.namespace = Some("ns1".into());
        p.metadata.uid = Some("u-1".into());
        p.metadata.labels = Some([("b".to_string(), "2".to_string()), ("a".to_string(), "x\"y".to_string())].into());
        p.spec = Some(PodSpec {
            containers: vec![Container {
                name: "c".into(),
                resources: Some(ResourceRequirements {
                    limits: Some([("memory".to_string(), Quantity("64Mi".into()))].into()),
                    requests: Some([("cpu".to_string(), Quantity("250m".into()))].into()),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            ..Default::default()
        });
        p
    }

    fn field(path: &str) -> DownwardAPIVolumeFile {
        DownwardAPIVolumeFile {
            path: path.replace(['.', '[', ']', '\''], "_"),
            field_ref: Some(ObjectFieldSelector { field_path: path.into(), api_version: None }),
            ..Default::default()
        }
    }

    fn res(resource: &str, divisor: Option<&str>) -> DownwardAPIVolumeFile {
        DownwardAPIVolumeFile {
            path: resource.into(),
            resource_field_ref: Some(ResourceFieldSelector {
                container_name: Some("c".into()),
                resource: resource.into(),
                divisor: divisor.map(|d| Quantity(d.into())),
            }),
            mode: Some(0o400),
            ..Default::default()
        }
    }

    #[test]
    fn downward_api_field_refs_and_label_format() {
        let items = [
            field("metadata.name"),
            field("metadata.namespace"),
            field("metadata.uid"),
            field("metadata.labels"),
            field("metadata.labels['b']"),
        ];
        let p = downward_payload(&pod(), &items, None, &Allocatable::default()).unwrap();
        let text = |k: &str| String::from_utf8(p[k].data.clone()).unwrap();
        assert_eq!(text("metadata_name"), "web");
        assert_eq!(text("metadata_namespace"), "ns1");
        assert_eq!(text("metadata_uid"), "u-1");
        // Upstream FormatMap: sorted, %q-quoted, no trailing newline.
        assert_eq!(text("metadata_labels"), "a=\"x\\\"y\"\nb=\"2\"");
        assert_eq!(text("metadata_labels__b__"), "2");
        assert!(p.values().all(|f| f.mode == 0o644));
        let err = downward_payload(&pod(), &[field("spec.nodeName")], None, &Allocatable::default()).unwrap_err();
        assert_eq!(err, "unsupported fieldPath: spec.nodeName");
    }

    #[test]
    fn downward_api_resource_refs_divide_round_up_and_fall_back_to_allocatable() {
        let alloc = Allocatable { cpu_millis: 2000.0, memory_bytes: 8.0 * 1073741824.0, ephemeral_storage_bytes: 0.0 };
        let items = [
            res("limits.memory", Some("1Mi")),
            res("limits.cpu", None),
            res("requests.cpu", Some("1m")),
            res("requests.cpu", None),
            res("requests.memory", None),
        ];
        let vals: Vec<String> = items
            .iter()
            .map(|it| extract_resource(&pod(), it.resource_field_ref.as_ref().unwrap(), &alloc).unwrap())
            .collect();
        assert_eq!(vals, ["64", "2", "250", "1", "0"]);
        let d = downward_payload(&pod(), &items[..1], None, &alloc).unwrap();
        assert_eq!(d["limits.memory"].mode, 0o400);
    }
}
