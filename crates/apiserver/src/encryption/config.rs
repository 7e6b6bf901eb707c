//! The `--encryption-provider-config` file: apiserver.config.k8s.io/v1
//! `EncryptionConfiguration`, read strictly (unknown fields are errors),
//! validated with upstream's field paths and messages
//! (`k8s.io/apiserver/pkg/apis/apiserver/validation`), and turned into one
//! transformer per group-resource (upstream's
//! `getTransformerOverridesAndKMSPluginProbes`).

use std::collections::HashMap;

use base64::Engine;
use serde::Deserialize;

use super::transformer::{AesCbc, AesGcm, Identity, PrefixTransformers, Secretbox, Transformer};

/// The file's `apiVersion`.
pub const API_VERSION: &str = "apiserver.config.k8s.io/v1";
/// The file's `kind`.
pub const KIND: &str = "EncryptionConfiguration";

/// Provider prefixes at rest (upstream's `*TransformerPrefixV1`).
pub const AESCBC_PREFIX: &str = "k8s:enc:aescbc:v1:";
/// See [`AESCBC_PREFIX`].
pub const AESGCM_PREFIX: &str = "k8s:enc:aesgcm:v1:";
/// See [`AESCBC_PREFIX`].
pub const SECRETBOX_PREFIX: &str = "k8s:enc:secretbox:v1:";

/// The file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct File {
    api_version: Option<String>,
    kind: Option<String>,
    #[serde(default)]
    resources: Vec<ResourceConfiguration>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ResourceConfiguration {
    #[serde(default)]
    resources: Vec<String>,
    #[serde(default)]
    providers: Vec<ProviderConfiguration>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProviderConfiguration {
    aesgcm: Option<KeysConfiguration>,
    aescbc: Option<KeysConfiguration>,
    secretbox: Option<KeysConfiguration>,
    identity: Option<serde_json::Map<String, serde_json::Value>>,
    kms: Option<serde_json::Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct KeysConfiguration {
    #[serde(default)]
    keys: Vec<Key>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Key {
    #[serde(default)]
    name: String,
    #[serde(default)]
    secret: String,
}

/// A group and resource as the file names them (`secrets` → core
/// `secrets`; `*.apps`; `*.` every core resource; `*.*` everything).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct GroupResource {
    /// The API group (`""` for core, `"*"` for any).
    pub group: String,
    /// The resource (`"*"` for any).
    pub resource: String,
}

impl GroupResource {
    /// Upstream's `schema.ParseGroupResource`: the part before the first
    /// dot is the resource, the rest the group.
    pub fn parse(s: &str) -> GroupResource {
        match s.split_once('.') {
            Some((r, g)) => GroupResource { group: g.into(), resource: r.into() },
            None => GroupResource { group: String::new(), resource: s.into() },
        }
    }

    fn any() -> GroupResource {
        GroupResource { group: "*".into(), resource: "*".into() }
    }

    /// As the error messages write it (`secrets`, `*.apps`, `*.`, `*.*`).
    fn yaml(&self) -> String {
        match (self.group.as_str(), self.resource.as_str()) {
            ("", "*") => "*.".into(),
            ("", r) => r.into(),
            (g, r) => format!("{r}.{g}"),
        }
    }
}

/// The transformers of every configured group-resource.
pub struct EncryptionConfig {
    transformers: HashMap<GroupResource, PrefixTransformers>,
}

impl std::fmt::Debug for EncryptionConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut names: Vec<String> = self.transformers.keys().map(GroupResource::yaml).collect();
        names.sort();
        f.debug_struct("EncryptionConfig").field("resources", &names).finish()
    }
}

impl EncryptionConfig {
    /// Reads, validates and builds the file at `path`. Errors read as
    /// upstream's: `error while parsing file: …` with the field paths
    /// (`resources[0].providers[0].aescbc.keys[0].secret: Invalid value:
    /// "REDACTED": secret is not of the expected length, got 8, expected
    /// one of [16 24 32]`), or `error while building transformers: …`.
    pub fn load(path: &std::path::Path) -> Result<EncryptionConfig, String> {
        let parse = |e: String| format!("error while parsing file: {e}");
        let data = std::fs::read(path).map_err(|e| {
            parse(format!(
                "error while loading file: error reading encryption provider configuration file {:?}: {e}",
                path.display().to_string()
            ))
        })?;
        if data.is_empty() {
            return Err(parse(format!(
                "error while loading file: encryption provider configuration file {:?} is empty",
                path.display().to_string()
            )));
        }
        Self::from_bytes(&data).map_err(|e| match e {
            LoadError::Decode(e) => parse(format!(
                "error decoding encryption provider configuration file {:?}: {e}",
                path.display().to_string()
            )),
            LoadError::Invalid(e) => parse(e),
            LoadError::Build(e) => format!("error while building transformers: {e}"),
        })
    }

    /// Parses, validates and builds a configuration (YAML or JSON).
    pub fn from_bytes(data: &[u8]) -> Result<EncryptionConfig, LoadError> {
        let file: File = serde_yaml::from_slice(data).map_err(|e| LoadError::Decode(e.to_string()))?;
        match (file.api_version.as_deref(), file.kind.as_deref()) {
            (Some(API_VERSION), Some(KIND)) => {}
            (None, _) | (_, None) => {
                return Err(LoadError::Decode("Object 'Kind' or 'apiVersion' is missing".into()));
            }
            (Some(v), Some(k)) => {
                return Err(LoadError::Decode(format!(
                    "no kind \"{k}\" is registered for version \"{v}\", expected {KIND} in {API_VERSION}"
                )));
            }
        }
        let errs = validate(&file);
        if !errs.is_empty() {
            return Err(LoadError::Invalid(aggregate(errs)));
        }
        build(&file).map_err(LoadError::Build)
    }

    /// No resource encrypted: upstream's default when no
    /// `--encryption-provider-config` is given (identity everywhere, which
    /// refuses to read values carrying the `k8s:enc:` prefix).
    pub fn identity() -> EncryptionConfig {
        EncryptionConfig { transformers: HashMap::new() }
    }

    /// Whether no resource has providers configured.
    pub fn is_identity(&self) -> bool {
        self.transformers.is_empty()
    }

    /// The transformer of `group`/`resource`: its own entry, else its
    /// group's `*.<group>`, else `*.*`; `None` when nothing covers it
    /// (stored as is; upstream's identity).
    pub fn transformer_for(&self, group: &str, resource: &str) -> Option<&dyn Transformer> {
        let gr = |g: &str, r: &str| GroupResource { group: g.into(), resource: r.into() };
        self.transformers
            .get(&gr(group, resource))
            .or_else(|| self.transformers.get(&gr(group, "*")))
            .or_else(|| self.transformers.get(&GroupResource::any()))
            .map(|t| t as &dyn Transformer)
    }
}

/// Why a configuration was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoadError {
    /// Not YAML/JSON of the expected shape (unknown field, wrong kind …).
    Decode(String),
    /// Validation failed: the field errors, aggregated.
    Invalid(String),
    /// A provider could not be built (e.g. the unsupported `kms`).
    Build(String),
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoadError::Decode(e) | LoadError::Invalid(e) | LoadError::Build(e) => f.write_str(e),
        }
    }
}

/// Go's aggregate error format: one error alone, several in brackets.
fn aggregate(mut errs: Vec<String>) -> String {
    if errs.len() == 1 {
        errs.remove(0)
    } else {
        format!("[{}]", errs.join(", "))
    }
}

fn required(path: &str, detail: &str) -> String {
    format!("{path}: Required value: {detail}")
}

fn invalid(path: &str, value: &str, detail: &str) -> String {
    format!("{path}: Invalid value: {value:?}: {detail}")
}

/// Go's `%v` of a string list: `[a b]`.
fn go_list(items: &[String]) -> String {
    format!("[{}]", items.join(" "))
}

const STAR_RESOURCE: &str = "use '*.' to encrypt all the resources from core API group or *.* to encrypt all resources";

/// Upstream's `ValidateEncryptionConfiguration` (KMS aside: refused when
/// building).
fn validate(file: &File) -> Vec<String> {
    let mut errs = Vec::new();
    if file.resources.is_empty() {
        errs.push(required("resources", "at least one resources is required"));
        return errs;
    }
    for (i, conf) in file.resources.iter().enumerate() {
        let r = format!("resources[{i}].resources");
        let p = format!("resources[{i}].providers");
        if conf.resources.is_empty() {
            errs.push(required(&r, &format!("at least one {r} is required")));
        }
        errs.extend(validate_overlap(&conf.resources, &r));
        errs.extend(validate_resource_names(&conf.resources, &r));
        if conf.providers.is_empty() {
            errs.push(required(&p, &format!("at least one {p} is required")));
        }
        for (j, provider) in conf.providers.iter().enumerate() {
            let path = format!("{p}[{j}]");
            let found = [
                provider.kms.is_some(),
                provider.aesgcm.is_some(),
                provider.aescbc.is_some(),
                provider.secretbox.is_some(),
                provider.identity.is_some(),
            ]
            .iter()
            .filter(|f| **f)
            .count();
            if found == 0 {
                errs.push(format!(
                    "{path}: Invalid value: {{}}: provider does not contain any of the expected providers: KMS, AESGCM, AESCBC, Secretbox, Identity"
                ));
                continue;
            }
            if found > 1 {
                errs.push(format!(
                    "{path}: Invalid value: {{}}: more than one provider specified in a single element, should split into different list elements"
                ));
                continue;
            }
            let keys = |name: &str, k: &KeysConfiguration, sizes: &[usize]| {
                validate_keys(&k.keys, &format!("{path}.{name}.keys"), sizes)
            };
            if let Some(k) = &provider.aesgcm {
                errs.extend(keys("aesgcm", k, &[16, 24, 32]));
            } else if let Some(k) = &provider.aescbc {
                errs.extend(keys("aescbc", k, &[16, 24, 32]));
            } else if let Some(k) = &provider.secretbox {
                errs.extend(keys("secretbox", k, &[32]));
            }
        }
    }
    errs
}

fn validate_overlap(resources: &[String], path: &str) -> Vec<String> {
    let parsed: Vec<GroupResource> = resources.iter().map(|r| GroupResource::parse(r)).collect();
    let (mut duplicate, mut overlap) = (false, false);
    for (i, a) in parsed.iter().enumerate() {
        for (j, b) in parsed.iter().enumerate() {
            if i == j {
                continue;
            }
            if a == b {
                duplicate = true;
                continue;
            }
            if *a == GroupResource::any() || (a.group == b.group && (a.resource == "*" || b.resource == "*")) {
                overlap = true;
            }
        }
    }
    // field.Invalid renders a list value as JSON.
    let value = serde_json::to_string(resources).unwrap_or_default();
    let mut errs = Vec::new();
    if duplicate {
        errs.push(format!("{path}: Invalid value: {value}: the same resource cannot be specified multiple times"));
    }
    if overlap {
        errs.push(format!(
            "{path}: Invalid value: {value}: using overlapping resources such as 'secrets' and '*.' in the same resource list is not allowed as they will be masked"
        ));
    }
    errs
}

fn validate_resource_names(resources: &[String], path: &str) -> Vec<String> {
    let mut errs = Vec::new();
    for (j, res) in resources.iter().enumerate() {
        let jj = format!("{path}[{j}]");
        let gr = GroupResource::parse(res);
        let detail = if res.chars().any(|c| c.is_ascii_uppercase()) {
            "resource name should not contain capital letters"
        } else if res == "*" {
            STAR_RESOURCE
        } else if matches!(res.as_str(), "apiserveripinfo" | "serviceipallocations" | "servicenodeportallocations") {
            "resources which do not have REST API/s cannot be encrypted"
        } else if gr.group == "events.k8s.io" {
            "'*.events.k8s.io' objects are stored using the 'events' API group in etcd. Use 'events' instead in the config file"
        } else if gr.group == "extensions" {
            "'extensions' group has been removed and cannot be used for encryption"
        } else if gr.group == "*" && gr.resource != "*" {
            "encrypting the same resource across groups is not supported"
        } else {
            continue;
        };
        errs.push(invalid(&jj, res, detail));
    }
    errs
}

fn validate_keys(keys: &[Key], path: &str, sizes: &[usize]) -> Vec<String> {
    if keys.is_empty() {
        return vec![required(path, "at least one keys is required")];
    }
    let mut errs = Vec::new();
    for (i, key) in keys.iter().enumerate() {
        let kp = format!("{path}[{i}]");
        if key.name.is_empty() {
            errs.push(required(&format!("{kp}.name"), "name is a mandatory field for a key"));
        }
        if key.secret.is_empty() {
            errs.push(required(&format!("{kp}.secret"), "secret is a mandatory field for a key"));
            continue;
        }
        match base64::engine::general_purpose::STANDARD.decode(&key.secret) {
            Err(_) => errs.push(invalid(&format!("{kp}.secret"), "REDACTED", "secrets must be base64 encoded")),
            Ok(secret) if !sizes.contains(&secret.len()) => {
                let expected = go_list(&sizes.iter().map(|s| s.to_string()).collect::<Vec<_>>());
                errs.push(invalid(
                    &format!("{kp}.secret"),
                    "REDACTED",
                    &format!("secret is not of the expected length, got {}, expected one of {expected}", secret.len()),
                ));
            }
            Ok(_) => {}
        }
    }
    errs
}

/// Builds the transformers; also refuses what upstream's builder refuses
/// (a resource masked by an earlier `*.group` or `*.*` rule) and what
/// rkube does not support (KMS).
fn build(file: &File) -> Result<EncryptionConfig, String> {
    let mut per_resource: Vec<(GroupResource, usize)> = Vec::new();
    for (i, conf) in file.resources.iter().enumerate() {
        for res in &conf.resources {
            let gr = GroupResource::parse(res);
            let group_any = GroupResource { group: gr.group.clone(), resource: "*".into() };
            for mask in [group_any, GroupResource::any()] {
                if per_resource.iter().any(|(g, _)| *g == mask) {
                    return Err(format!("resource {:?} is masked by earlier rule {:?}", gr.yaml(), mask.yaml()));
                }
            }
            // A resource named again in a later entry keeps the earlier
            // providers first and adds the later ones (upstream appends).
            per_resource.push((gr, i));
        }
    }
    let mut transformers: HashMap<GroupResource, Vec<Prefixed>> = HashMap::new();
    for (gr, i) in per_resource {
        let providers = providers(&file.resources[i])?;
        transformers.entry(gr).or_default().extend(providers);
    }
    let transformers = transformers
        .into_iter()
        .map(|(gr, list)| (gr, PrefixTransformers::new(list, "no matching prefix found")))
        .collect();
    Ok(EncryptionConfig { transformers })
}

type Prefixed = (Vec<u8>, Box<dyn Transformer>);

fn providers(conf: &ResourceConfiguration) -> Result<Vec<Prefixed>, String> {
    let mut out: Vec<Prefixed> = Vec::new();
    for provider in &conf.providers {
        let t: Prefixed = if let Some(k) = &provider.aesgcm {
            (AESGCM_PREFIX.into(), Box::new(aes_keys(k, AESGCM_PREFIX)?))
        } else if let Some(k) = &provider.aescbc {
            (AESCBC_PREFIX.into(), Box::new(aes_keys(k, AESCBC_PREFIX)?))
        } else if let Some(k) = &provider.secretbox {
            (SECRETBOX_PREFIX.into(), Box::new(secretbox_keys(k)?))
        } else if provider.identity.is_some() {
            (Vec::new(), Box::new(Identity))
        } else {
            return Err("the kms provider is not supported by rkube: use aescbc, aesgcm, secretbox or identity".into());
        };
        out.push(t);
    }
    Ok(out)
}

fn decode_secret(key: &Key) -> Result<Vec<u8>, String> {
    base64::engine::general_purpose::STANDARD
        .decode(&key.secret)
        .map_err(|e| format!("could not obtain secret for named key {}: {e}", key.name))
}

fn aes_keys(conf: &KeysConfiguration, prefix: &str) -> Result<PrefixTransformers, String> {
    let mut keys: Vec<Prefixed> = Vec::new();
    for key in &conf.keys {
        let secret = decode_secret(key)?;
        let t: Box<dyn Transformer> = if prefix == AESGCM_PREFIX {
            Box::new(
                AesGcm::new(&secret)
                    .map_err(|e| format!("error while creating cipher for named key {}: {e}", key.name))?,
            )
        } else {
            Box::new(
                AesCbc::new(&secret)
                    .map_err(|e| format!("error while creating cipher for named key {}: {e}", key.name))?,
            )
        };
        keys.push((format!("{}:", key.name).into_bytes(), t));
    }
    Ok(PrefixTransformers::new(keys, "no matching key was found for the provided AES transformer"))
}

fn secretbox_keys(conf: &KeysConfiguration) -> Result<PrefixTransformers, String> {
    let mut keys: Vec<Prefixed> = Vec::new();
    for key in &conf.keys {
        let secret = decode_secret(key)?;
        let secret: [u8; 32] = secret
            .as_slice()
            .try_into()
            .map_err(|_| format!("expected key size 32 for secretbox provider, got {}", secret.len()))?;
        keys.push((format!("{}:", key.name).into_bytes(), Box::new(Secretbox::new(&secret))));
    }
    Ok(PrefixTransformers::new(keys, "no matching key was found for the provided Secretbox transformer"))
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
