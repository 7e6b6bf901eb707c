//! RBAC `PolicyRule`s and how they match a request (upstream's
//! `rbac/v1` helpers `VerbMatches`, `APIGroupMatches`, `ResourceMatches`,
//! `ResourceNameMatches`, `NonResourceURLMatches` and `RuleAllows`).

use serde_json::{json, Value};

use crate::authz::Attributes;

/// `*`: every verb, group, resource or URL.
pub const ALL: &str = "*";

/// One rule of a Role or ClusterRole.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PolicyRule {
    /// Verbs (`get`, `list`, …, `*`).
    pub verbs: Vec<String>,
    /// API groups (`""` core, `*` all).
    pub api_groups: Vec<String>,
    /// Resources (`pods`, `pods/log`, `*/scale`, `*`).
    pub resources: Vec<String>,
    /// Object names; empty allows every name.
    pub resource_names: Vec<String>,
    /// Non-resource URL paths (`/healthz`, `/api/*`, `*`).
    pub non_resource_urls: Vec<String>,
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default()
}

impl PolicyRule {
    /// A resource rule (test and policy helper).
    pub fn resource(verbs: &[&str], groups: &[&str], resources: &[&str]) -> PolicyRule {
        let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect();
        PolicyRule { verbs: v(verbs), api_groups: v(groups), resources: v(resources), ..Default::default() }
    }

    /// Parses one element of a stored role's `rules` (missing lists are empty).
    pub fn from_json(v: &Value) -> PolicyRule {
        PolicyRule {
            verbs: strings(v.get("verbs")),
            api_groups: strings(v.get("apiGroups")),
            resources: strings(v.get("resources")),
            resource_names: strings(v.get("resourceNames")),
            non_resource_urls: strings(v.get("nonResourceURLs")),
        }
    }

    /// The rules of a stored Role or ClusterRole (`rules: null` is none).
    pub fn list_from(object: &Value) -> Vec<PolicyRule> {
        object
            .get("rules")
            .and_then(Value::as_array)
            .map(|a| a.iter().map(PolicyRule::from_json).collect())
            .unwrap_or_default()
    }

    /// The rule as rbac.authorization.k8s.io/v1 serializes it (empty lists omitted, `verbs` always).
    pub fn to_json(&self) -> Value {
        let mut m = serde_json::Map::new();
        for (key, list) in [
            ("apiGroups", &self.api_groups),
            ("nonResourceURLs", &self.non_resource_urls),
            ("resourceNames", &self.resource_names),
            ("resources", &self.resources),
        ] {
            if !list.is_empty() {
                m.insert(key.into(), json!(list));
            }
        }
        m.insert("verbs".into(), json!(self.verbs));
        Value::Object(m)
    }

    /// Whether this rule allows `attrs` (upstream's `RuleAllows`).
    pub fn allows(&self, attrs: &Attributes) -> bool {
        if attrs.resource_request {
            verb_matches(self, &attrs.verb)
                && api_group_matches(self, &attrs.api_group)
                && resource_matches(self, &attrs.resource, &attrs.subresource)
                && resource_name_matches(self, &attrs.name)
        } else {
            verb_matches(self, &attrs.verb) && non_resource_url_matches(self, &attrs.path)
        }
    }
}

fn verb_matches(rule: &PolicyRule, verb: &str) -> bool {
    rule.verbs.iter().any(|v| v == ALL || v == verb)
}

fn api_group_matches(rule: &PolicyRule, group: &str) -> bool {
    rule.api_groups.iter().any(|g| g == ALL || g == group)
}

/// `*`, the exact `resource[/subresource]`, or `*/subresource`.
fn resource_matches(rule: &PolicyRule, resource: &str, subresource: &str) -> bool {
    rule.resources.iter().any(|r| {
        if r == ALL {
            return true;
        }
        if subresource.is_empty() {
            return r == resource;
        }
        r.len() == resource.len() + 1 + subresource.len()
            && r.starts_with(resource)
            && r.as_bytes()[resource.len()] == b'/'
            && r.ends_with(subresource)
            || (r.len() == subresource.len() + 2 && r.starts_with("*/") && r.ends_with(subresource))
    })
}

fn resource_name_matches(rule: &PolicyRule, name: &str) -> bool {
    rule.resource_names.is_empty() || rule.resource_names.iter().any(|n| n == name)
}

/// `*`, the exact path, or a prefix ending in `*`.
fn non_resource_url_matches(rule: &PolicyRule, path: &str) -> bool {
    rule.non_resource_urls
        .iter()
        .any(|u| u == ALL || u == path || (u.ends_with('*') && path.starts_with(&u[..u.len() - 1])))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res(verb: &str, group: &str, resource: &str, sub: &str, name: &str) -> Attributes {
        Attributes {
            verb: verb.into(),
            resource_request: true,
            api_group: group.into(),
            resource: resource.into(),
            subresource: sub.into(),
            name: name.into(),
            ..Default::default()
        }
    }

    #[test]
    fn verbs_groups_resources_and_subresources() {
        let r = PolicyRule::resource(&["get", "list"], &[""], &["pods", "pods/log"]);
        assert!(r.allows(&res("get", "", "pods", "", "x")));
        assert!(r.allows(&res("get", "", "pods", "log", "x")));
        assert!(!r.allows(&res("get", "", "pods", "exec", "x")));
        assert!(!r.allows(&res("delete", "", "pods", "", "x")));
        assert!(!r.allows(&res("get", "apps", "pods", "", "x")));
        // A rule on pods does not cover its subresources.
        let plain = PolicyRule::resource(&["*"], &["*"], &["pods"]);
        assert!(!plain.allows(&res("get", "", "pods", "status", "x")));
        let star_sub = PolicyRule::resource(&["get"], &["apps"], &["*/scale"]);
        assert!(star_sub.allows(&res("get", "apps", "deployments", "scale", "")));
        assert!(!star_sub.allows(&res("get", "apps", "deployments", "", "")));
        let all = PolicyRule::resource(&["*"], &["*"], &["*"]);
        assert!(all.allows(&res("escalate", "rbac.authorization.k8s.io", "roles", "", "")));
    }

    #[test]
    fn resource_names_restrict_and_non_resource_urls_prefix_match() {
        let mut r = PolicyRule::resource(&["get"], &[""], &["configmaps"]);
        r.resource_names = vec!["a".into()];
        assert!(r.allows(&res("get", "", "configmaps", "", "a")));
        assert!(!r.allows(&res("get", "", "configmaps", "", "b")));
        assert!(!r.allows(&res("get", "", "configmaps", "", "")));
        let nr = PolicyRule {
            verbs: vec!["get".into()],
            non_resource_urls: vec!["/healthz".into(), "/apis/*".into()],
            ..Default::default()
        };
        let path = |p: &str| Attributes { verb: "get".into(), path: p.into(), ..Default::default() };
        assert!(nr.allows(&path("/healthz")));
        assert!(nr.allows(&path("/apis/apps/v1")));
        assert!(!nr.allows(&path("/healthz/etcd")));
        assert!(!nr.allows(&path("/api")));
        // Resource rules never match non-resource requests.
        assert!(!PolicyRule::resource(&["*"], &["*"], &["*"]).allows(&path("/api")));
    }

    #[test]
    fn json_round_trip_omits_empty_lists() {
        let v = json!({"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]});
        assert_eq!(PolicyRule::from_json(&v).to_json(), v);
        assert!(PolicyRule::list_from(&json!({"rules": null})).is_empty());
    }
}
