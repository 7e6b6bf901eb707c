//! RBAC escalation prevention (upstream's `pkg/registry/rbac/validation`):
//! a user may create or update a Role or ClusterRole only with rules it
//! already holds (or with the `escalate` verb on it), and bind a role only
//! when it holds every rule of the role (or has the `bind` verb on it).
//! Members of `system:masters` pass.
//!
//! [`covers`] breaks the requested rules into one-verb, one-group,
//! one-resource (and one-name) rules and checks each against the owner's
//! rules; [`confirm_no_escalation`] words the refusal as upstream:
//! `user "bob" (groups=["system:authenticated"]) is attempting to grant
//! RBAC permissions not currently held:` and one compact rule per line.

use std::collections::BTreeSet;

use crate::authn::UserInfo;
use crate::authz::rbac::rule::ALL;
use crate::authz::rbac::{aggregate, PolicyRule, RbacAuthorizer};

/// Upstream's `BreakdownRule`: one rule per group × resource × verb
/// (× name), or per URL × verb.
pub fn breakdown(rule: &PolicyRule) -> Vec<PolicyRule> {
    let mut out = Vec::new();
    let one = |s: &String| vec![s.clone()];
    for group in &rule.api_groups {
        for resource in &rule.resources {
            for verb in &rule.verbs {
                if rule.resource_names.is_empty() {
                    out.push(PolicyRule {
                        api_groups: one(group),
                        resources: one(resource),
                        verbs: one(verb),
                        ..Default::default()
                    });
                }
                for name in &rule.resource_names {
                    out.push(PolicyRule {
                        api_groups: one(group),
                        resources: one(resource),
                        verbs: one(verb),
                        resource_names: one(name),
                        ..Default::default()
                    });
                }
            }
        }
    }
    for url in &rule.non_resource_urls {
        for verb in &rule.verbs {
            out.push(PolicyRule { non_resource_urls: one(url), verbs: one(verb), ..Default::default() });
        }
    }
    out
}

fn has(set: &[String], s: &str) -> bool {
    set.iter().any(|x| x == s)
}

fn covers_all(owner: &[String], wanted: &[String]) -> bool {
    has(owner, ALL) || wanted.iter().all(|w| has(owner, w))
}

/// `*`, every resource exactly, or `*/<subresource>` for subresources.
fn resources_cover(owner: &[String], wanted: &[String]) -> bool {
    if has(owner, ALL) {
        return true;
    }
    wanted.iter().all(|w| has(owner, w) || w.split_once('/').is_some_and(|(_, sub)| has(owner, &format!("*/{sub}"))))
}

fn urls_cover(owner: &[String], wanted: &[String]) -> bool {
    wanted
        .iter()
        .all(|w| owner.iter().any(|o| o == ALL || o == w || (o.ends_with('*') && w.starts_with(&o[..o.len() - 1]))))
}

/// Upstream's `ruleCovers`: whether `owner` allows everything `sub` does.
pub fn rule_covers(owner: &PolicyRule, sub: &PolicyRule) -> bool {
    let names_cover = owner.resource_names.is_empty()
        || (!sub.resource_names.is_empty() && covers_all(&owner.resource_names, &sub.resource_names));
    covers_all(&owner.verbs, &sub.verbs)
        && covers_all(&owner.api_groups, &sub.api_groups)
        && resources_cover(&owner.resources, &sub.resources)
        && urls_cover(&owner.non_resource_urls, &sub.non_resource_urls)
        && names_cover
}

/// Upstream's `Covers`: whether `owner` covers every rule of `servant`,
/// and the broken-down rules it does not.
pub fn covers(owner: &[PolicyRule], servant: &[PolicyRule]) -> (bool, Vec<PolicyRule>) {
    let missing: Vec<PolicyRule> =
        servant.iter().flat_map(breakdown).filter(|sub| !owner.iter().any(|o| rule_covers(o, sub))).collect();
    (missing.is_empty(), missing)
}

/// Upstream's `CompactRules`: simple resource rules (one group, one
/// resource, no names) of the same group and resource merged, verbs in
/// order of appearance.
pub fn compact(rules: &[PolicyRule]) -> Vec<PolicyRule> {
    let mut out: Vec<PolicyRule> = Vec::new();
    let mut simple: Vec<(String, String, usize)> = Vec::new();
    for rule in rules {
        let is_simple = rule.api_groups.len() == 1
            && rule.resources.len() == 1
            && rule.resource_names.is_empty()
            && rule.non_resource_urls.is_empty();
        if !is_simple {
            out.push(rule.clone());
            continue;
        }
        let key = (rule.api_groups[0].clone(), rule.resources[0].clone());
        match simple.iter().find(|(g, r, _)| (g, r) == (&key.0, &key.1)) {
            Some((_, _, i)) => {
                for v in &rule.verbs {
                    if !has(&out[*i].verbs, v) {
                        out[*i].verbs.push(v.clone());
                    }
                }
            }
            None => {
                simple.push((key.0, key.1, out.len()));
                out.push(rule.clone());
            }
        }
    }
    out
}

/// Go's `%q` of a string slice: `["a" "b"]`.
pub fn go_quote_list(list: &[String]) -> String {
    let quoted: Vec<String> = list.iter().map(|s| serde_json::to_string(s).unwrap_or_default()).collect();
    format!("[{}]", quoted.join(" "))
}

/// Upstream's `CompactString`: `{APIGroups:["apps"], Resources:["deployments"], Verbs:["get"]}`.
pub fn compact_string(rule: &PolicyRule) -> String {
    let mut parts = Vec::new();
    for (label, list) in [
        ("APIGroups", &rule.api_groups),
        ("Resources", &rule.resources),
        ("NonResourceURLs", &rule.non_resource_urls),
        ("ResourceNames", &rule.resource_names),
        ("Verbs", &rule.verbs),
    ] {
        if !list.is_empty() {
            parts.push(format!("{label}:{}", go_quote_list(list)));
        }
    }
    format!("{{{}}}", parts.join(", "))
}

/// Upstream's `ConfirmNoEscalation`: `Err(message)` when `user`'s rules in
/// `namespace` do not cover `rules` (the caller wraps it in a 403).
pub fn confirm_no_escalation(
    rbac: &RbacAuthorizer,
    user: &UserInfo,
    namespace: &str,
    rules: &[PolicyRule],
) -> Result<(), String> {
    let (owned, errors) = rbac.policy_rules_for(user, namespace);
    let (ok, missing) = covers(&owned, rules);
    if ok {
        return Ok(());
    }
    let lines: BTreeSet<String> = compact(&missing).iter().map(compact_string).collect();
    let mut msg = format!(
        "user \"{}\" (groups={}) is attempting to grant RBAC permissions not currently held:\n{}",
        user.name,
        go_quote_list(&user.groups),
        lines.into_iter().collect::<Vec<_>>().join("\n")
    );
    if !errors.is_empty() {
        msg.push_str(&format!("; resolution errors: {}", aggregate(&errors)));
    }
    Err(msg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authz::policy::{r, u};

    #[test]
    fn covering_rules() {
        let owner = vec![r("get list", "core", "pods configmaps"), r("*", "apps", "*/scale"), u("get", "/api/*")];
        assert!(covers(&owner, &[r("get", "core", "pods")]).0);
        assert!(covers(&owner, &[r("update", "apps", "deployments/scale")]).0);
        assert!(covers(&owner, &[u("get", "/api/v1")]).0);
        let (ok, missing) = covers(&owner, &[r("get delete", "core", "pods secrets")]);
        assert!(!ok);
        assert_eq!(missing.len(), 3);
        assert!(covers(&[r("*", "*", "*")], &[r("get", "core", "pods").named("a")]).0);
        // Named owner rules cover only named requests.
        assert!(!covers(&[r("get", "core", "pods").named("a")], &[r("get", "core", "pods")]).0);
    }

    #[test]
    fn missing_rules_are_compacted_and_worded_as_upstream() {
        let missing = compact(&breakdown(&r("get list", "core", "secrets")));
        assert_eq!(missing.len(), 1);
        assert_eq!(compact_string(&missing[0]), r#"{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list"]}"#);
        let rbac = RbacAuthorizer::new();
        let user = UserInfo { name: "bob".into(), groups: vec!["system:authenticated".into()], ..Default::default() };
        let err = confirm_no_escalation(&rbac, &user, "ns", &[r("get", "core", "secrets")]).unwrap_err();
        assert_eq!(
            err,
            "user \"bob\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\"]}"
        );
    }
}
