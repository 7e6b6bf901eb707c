//! The audit policy (`--audit-policy-file`): audit.k8s.io/v1 `Policy`,
//! validated as upstream's `k8s.io/apiserver/pkg/apis/audit/validation`,
//! and evaluated as `k8s.io/apiserver/pkg/audit/policy/checker.go`: the
//! first rule that matches a request decides its level, omitted stages
//! and whether managedFields are omitted; no match means `None`.

use serde::Deserialize;

/// How much of a request is recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Deserialize, Default)]
pub enum Level {
    /// Nothing.
    #[default]
    None,
    /// Who, what, when and the response code; no bodies.
    Metadata,
    /// Metadata and the request body.
    Request,
    /// Metadata, the request body and the response body.
    RequestResponse,
}

impl Level {
    /// The name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::None => "None",
            Level::Metadata => "Metadata",
            Level::Request => "Request",
            Level::RequestResponse => "RequestResponse",
        }
    }
}

/// When in a request's life an event is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Deserialize)]
pub enum Stage {
    /// As soon as the request is received.
    RequestReceived,
    /// Response headers sent, body not yet (long-running requests only).
    ResponseStarted,
    /// The response is complete.
    ResponseComplete,
    /// The handler panicked.
    Panic,
}

impl Stage {
    /// The name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::RequestReceived => "RequestReceived",
            Stage::ResponseStarted => "ResponseStarted",
            Stage::ResponseComplete => "ResponseComplete",
            Stage::Panic => "Panic",
        }
    }

    fn parse(s: &str) -> Option<Stage> {
        Some(match s {
            "RequestReceived" => Stage::RequestReceived,
            "ResponseStarted" => Stage::ResponseStarted,
            "ResponseComplete" => Stage::ResponseComplete,
            "Panic" => Stage::Panic,
            _ => return None,
        })
    }
}

/// The policy file as written (strings kept for validation).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct File {
    api_version: Option<String>,
    kind: Option<String>,
    #[serde(default)]
    rules: Vec<RuleFile>,
    #[serde(default)]
    omit_stages: Vec<String>,
    #[serde(default)]
    omit_managed_fields: bool,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RuleFile {
    #[serde(default)]
    level: String,
    #[serde(default)]
    users: Vec<String>,
    #[serde(default)]
    user_groups: Vec<String>,
    #[serde(default)]
    verbs: Vec<String>,
    #[serde(default)]
    resources: Vec<GroupResources>,
    #[serde(default)]
    namespaces: Vec<String>,
    #[serde(default, rename = "nonResourceURLs")]
    non_resource_urls: Vec<String>,
    #[serde(default)]
    omit_stages: Vec<String>,
    omit_managed_fields: Option<bool>,
}

/// Resources a rule matches within one API group.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct GroupResources {
    /// The API group (`""`: core).
    #[serde(default)]
    pub group: String,
    /// Resources (`pods`, `pods/log`, `*`, `pods/*`, `*/status`); empty:
    /// every resource of the group.
    #[serde(default)]
    pub resources: Vec<String>,
    /// Object names; empty: any.
    #[serde(default)]
    pub resource_names: Vec<String>,
}

/// One rule of the policy.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rule {
    /// The level of matching requests.
    pub level: Level,
    /// User names; empty: any.
    pub users: Vec<String>,
    /// Groups (any of them); empty: any.
    pub user_groups: Vec<String>,
    /// Verbs (`get`, `list`, `watch`, `create`, …); empty: any.
    pub verbs: Vec<String>,
    /// Resources; empty with `namespaces` empty: not restricted.
    pub resources: Vec<GroupResources>,
    /// Namespaces (`""` for cluster-scoped); empty: any.
    pub namespaces: Vec<String>,
    /// Non-resource paths (`/healthz`, `/api*`, `*`).
    pub non_resource_urls: Vec<String>,
    /// Stages not recorded (the union with the policy's).
    pub omit_stages: Vec<Stage>,
    /// `None`: the policy's default.
    pub omit_managed_fields: Option<bool>,
}

/// A validated policy.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Policy {
    /// The rules, first match wins.
    pub rules: Vec<Rule>,
    /// Stages no rule records.
    pub omit_stages: Vec<Stage>,
    /// Default of the rules' `omitManagedFields`.
    pub omit_managed_fields: bool,
}

/// What the policy decided for one request (upstream's
/// `RequestAuditConfig`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestAuditConfig {
    /// The level.
    pub level: Level,
    /// Stages not to write.
    pub omit_stages: Vec<Stage>,
    /// Strip `metadata.managedFields` from logged bodies.
    pub omit_managed_fields: bool,
}

/// The request as the policy sees it (upstream's authorizer attributes).
#[derive(Clone, Debug, Default)]
pub struct Attributes<'a> {
    /// The authenticated user name.
    pub user: &'a str,
    /// Its groups.
    pub groups: &'a [String],
    /// The verb (`get`, `list`, `create`, … or the lower-case method for
    /// non-resource requests).
    pub verb: &'a str,
    /// A resource request (else: non-resource, matched by `path`).
    pub resource_request: bool,
    /// API group.
    pub api_group: &'a str,
    /// Resource.
    pub resource: &'a str,
    /// Subresource.
    pub subresource: &'a str,
    /// Namespace.
    pub namespace: &'a str,
    /// Object name.
    pub name: &'a str,
    /// The URL path.
    pub path: &'a str,
}

impl Policy {
    /// Reads and validates the policy at `path`; the error says which
    /// field is wrong, as upstream's (`rules[0].level: Unsupported value:
    /// "Everything": supported values: "None", "Metadata", "Request",
    /// "RequestResponse"`), with `: from file <path>` appended.
    pub fn load(path: &std::path::Path) -> Result<Policy, String> {
        let data = std::fs::read(path)
            .map_err(|e| format!("failed to read file path {:?}: {e}", path.display().to_string()))?;
        Policy::from_bytes(&data).map_err(|e| format!("{e}: from file {}", path.display()))
    }

    /// Parses and validates a policy (YAML or JSON).
    pub fn from_bytes(data: &[u8]) -> Result<Policy, String> {
        let file: File = serde_yaml::from_slice(data).map_err(|e| format!("failed decoding: {e}"))?;
        match (file.api_version.as_deref(), file.kind.as_deref()) {
            (Some("audit.k8s.io/v1"), Some("Policy")) => {}
            (None, _) | (_, None) => return Err("failed decoding: Object 'Kind' or 'apiVersion' is missing".into()),
            (Some(v), Some(k)) => {
                return Err(format!("failed decoding: no kind \"{k}\" is registered for version \"{v}\""))
            }
        }
        let mut errs = Vec::new();
        let policy_omit = stages(&file.omit_stages, "omitStages", &mut errs);
        let mut rules = Vec::new();
        for (i, r) in file.rules.iter().enumerate() {
            let path = format!("rules[{i}]");
            let level = match r.level.as_str() {
                "None" => Level::None,
                "Metadata" => Level::Metadata,
                "Request" => Level::Request,
                "RequestResponse" => Level::RequestResponse,
                "" => {
                    errs.push(format!("{path}.level: Required value"));
                    Level::None
                }
                other => {
                    errs.push(format!(
                        "{path}.level: Unsupported value: {other:?}: supported values: \"None\", \"Metadata\", \"Request\", \"RequestResponse\""
                    ));
                    Level::None
                }
            };
            for (j, url) in r.non_resource_urls.iter().enumerate() {
                if url == "*" {
                    continue;
                }
                if !url.starts_with('/') {
                    errs.push(format!(
                        "{path}.nonResourceURLs[{j}]: Invalid value: {url:?}: non-resource URL rules must begin with a '/' character"
                    ));
                }
                if !url.is_empty() && url[..url.len() - 1].contains('*') {
                    errs.push(format!(
                        "{path}.nonResourceURLs[{j}]: Invalid value: {url:?}: non-resource URL wildcards '*' must be the final character of the rule"
                    ));
                }
            }
            for gr in &r.resources {
                if !gr.resource_names.is_empty() && gr.resources.is_empty() {
                    errs.push(format!(
                        "{path}.resources.resourceNames: Invalid value: {}: using resourceNames requires at least one resource",
                        serde_json::to_string(&gr.resource_names).unwrap_or_default()
                    ));
                }
            }
            let omit = stages(&r.omit_stages, &format!("{path}.omitStages"), &mut errs);
            if !r.non_resource_urls.is_empty() && (!r.resources.is_empty() || !r.namespaces.is_empty()) {
                errs.push(format!(
                    "{path}.nonResourceURLs: Invalid value: {}: rules cannot apply to both regular resources and non-resource URLs",
                    serde_json::to_string(&r.non_resource_urls).unwrap_or_default()
                ));
            }
            // Every rule omits the policy's stages too (upstream's unionStages).
            let mut omit_stages = policy_omit.clone();
            for s in omit {
                if !omit_stages.contains(&s) {
                    omit_stages.push(s);
                }
            }
            rules.push(Rule {
                level,
                users: r.users.clone(),
                user_groups: r.user_groups.clone(),
                verbs: r.verbs.clone(),
                resources: r.resources.clone(),
                namespaces: r.namespaces.clone(),
                non_resource_urls: r.non_resource_urls.clone(),
                omit_stages,
                omit_managed_fields: r.omit_managed_fields,
            });
        }
        if !errs.is_empty() {
            return Err(if errs.len() == 1 { errs.remove(0) } else { format!("[{}]", errs.join(", ")) });
        }
        if rules.is_empty() {
            return Err("loaded illegal policy with 0 rules".into());
        }
        Ok(Policy { rules, omit_stages: policy_omit, omit_managed_fields: file.omit_managed_fields })
    }

    /// The first matching rule's decision; `None` level when none matches.
    pub fn evaluate(&self, attrs: &Attributes<'_>) -> RequestAuditConfig {
        for rule in &self.rules {
            if rule.matches(attrs) {
                return RequestAuditConfig {
                    level: rule.level,
                    omit_stages: rule.omit_stages.clone(),
                    omit_managed_fields: rule.omit_managed_fields.unwrap_or(self.omit_managed_fields),
                };
            }
        }
        RequestAuditConfig {
            level: Level::None,
            omit_stages: self.omit_stages.clone(),
            omit_managed_fields: self.omit_managed_fields,
        }
    }
}

fn stages(list: &[String], path: &str, errs: &mut Vec<String>) -> Vec<Stage> {
    let mut out = Vec::new();
    for (i, s) in list.iter().enumerate() {
        match Stage::parse(s) {
            Some(stage) => out.push(stage),
            None => errs.push(format!(
                "{path}[{i}]: Invalid value: {s:?}: allowed stages are RequestReceived,ResponseStarted,ResponseComplete,Panic"
            )),
        }
    }
    out
}

fn has(list: &[String], value: &str) -> bool {
    list.iter().any(|s| s == value)
}

impl Rule {
    /// Upstream's `ruleMatches`.
    pub fn matches(&self, a: &Attributes<'_>) -> bool {
        if !self.users.is_empty() && !has(&self.users, a.user) {
            return false;
        }
        if !self.user_groups.is_empty() && !a.groups.iter().any(|g| has(&self.user_groups, g)) {
            return false;
        }
        if !self.verbs.is_empty() && !has(&self.verbs, a.verb) {
            return false;
        }
        if !self.namespaces.is_empty() || !self.resources.is_empty() {
            return self.matches_resource(a);
        }
        if !self.non_resource_urls.is_empty() {
            return !a.resource_request && self.non_resource_urls.iter().any(|spec| path_matches(a.path, spec));
        }
        true
    }

    fn matches_resource(&self, a: &Attributes<'_>) -> bool {
        if !a.resource_request {
            return false;
        }
        if !self.namespaces.is_empty() && !has(&self.namespaces, a.namespace) {
            return false;
        }
        if self.resources.is_empty() {
            return true;
        }
        let combined =
            if a.subresource.is_empty() { a.resource.to_string() } else { format!("{}/{}", a.resource, a.subresource) };
        for gr in self.resources.iter().filter(|gr| gr.group == a.api_group) {
            if gr.resources.is_empty() {
                return true;
            }
            if !gr.resource_names.is_empty() && !has(&gr.resource_names, a.name) {
                continue;
            }
            for res in &gr.resources {
                if *res == combined || res == "*" {
                    return true;
                }
                if !a.subresource.is_empty() && res.strip_prefix("*/") == Some(a.subresource) {
                    return true;
                }
                if res.strip_suffix("/*") == Some(a.resource) {
                    return true;
                }
            }
        }
        false
    }
}

/// Upstream's `pathMatches`: `*`, an exact path, or a prefix ending in `*`.
fn path_matches(path: &str, spec: &str) -> bool {
    spec == "*" || spec == path || (spec.ends_with('*') && path.starts_with(spec.trim_end_matches('*')))
}

#[cfg(test)]
#[path = "policy_tests.rs"]
mod tests;
