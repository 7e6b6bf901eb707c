//! Which requests an admission webhook or policy applies to (upstream
//! `pkg/admission/plugin/webhook/predicates/{rules,namespace,object}` and
//! the `matchPolicy: Equivalent` lookup of `generic/webhook.go`), shared by
//! the webhook plugins and ValidatingAdmissionPolicy.

use rkube_apimachinery::errors::GroupResource;
use rkube_apimachinery::registry::{Registry, ResourceInfo};
use rkube_apimachinery::selector::labels::LabelSelector;
use rkube_apimachinery::ApiError;
use serde_json::Value;

use super::super::plugins::Stores;
use super::super::{Attributes, Operation};
use crate::storage::conversion::Conversion;

/// A group/version/resource as AdmissionReview and CEL's `request` carry it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Gvr {
    /// API group (`""` for core).
    pub group: String,
    /// Version.
    pub version: String,
    /// Plural resource.
    pub resource: String,
}

/// A group/version/kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Gvk {
    /// API group.
    pub group: String,
    /// Version.
    pub version: String,
    /// Kind.
    pub kind: String,
}

/// What a matching rule selected: the resource and kind the webhook or
/// policy is called with (another version's under `Equivalent`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Matched {
    /// The resource matched.
    pub resource: Gvr,
    /// Its kind.
    pub kind: Gvk,
}

/// The request's own resource and kind (`requestResource`, `requestKind`):
/// the kind of the object sent (`Scale` for `…/scale`), else the resource's.
pub fn request_match(attrs: &Attributes<'_>, object: Option<&Value>) -> Matched {
    let info = attrs.resource;
    let resource = Gvr { group: info.group.into(), version: info.version.into(), resource: info.plural.into() };
    let sent_kind = object.or(attrs.old_object).and_then(|o| o.get("kind")).and_then(Value::as_str);
    let kind = match (attrs.subresource.is_empty(), sent_kind) {
        (false, Some(k)) if k != info.kind => {
            let api_version = object
                .or(attrs.old_object)
                .and_then(|o| o.get("apiVersion"))
                .and_then(Value::as_str)
                .unwrap_or_default();
            let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
            Gvk { group: group.into(), version: version.into(), kind: k.into() }
        }
        _ => Gvk { group: info.group.into(), version: info.version.into(), kind: info.kind.into() },
    };
    Matched { resource, kind }
}

fn exact_or_wildcard(items: Option<&Value>, requested: &str) -> bool {
    items.and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).any(|i| i == "*" || i == requested)
}

/// Whether the request is for the core `namespaces` resource.
fn is_namespace_resource(resource: &Gvr) -> bool {
    resource.group.is_empty() && resource.version == "v1" && resource.resource == "namespaces"
}

/// One `RuleWithOperations` against the request seen as `resource`
/// (upstream `rules.Matcher.Matches`: scope, operations, groups,
/// versions, then `resource[/subresource]` with `*` on either side).
pub fn rule_matches(rule: &Value, attrs: &Attributes<'_>, resource: &Gvr) -> bool {
    let scope = match rule.get("scope").and_then(Value::as_str).unwrap_or("*") {
        "*" => true,
        "Namespaced" => !is_namespace_resource(resource) && !attrs.namespace.is_empty(),
        "Cluster" => is_namespace_resource(resource) || attrs.namespace.is_empty(),
        _ => false,
    };
    let op = attrs.operation.as_str();
    let operation = rule
        .get("operations")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .any(|o| o == "*" || o == op);
    let resources = rule.get("resources").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str);
    let mut res_match = false;
    for r in resources {
        let (res, sub) = r.split_once('/').unwrap_or((r, ""));
        if (res == "*" || res == resource.resource) && (sub == "*" || sub == attrs.subresource) {
            res_match = true;
            break;
        }
    }
    scope
        && operation
        && exact_or_wildcard(rule.get("apiGroups"), &resource.group)
        && exact_or_wildcard(rule.get("apiVersions"), &resource.version)
        && res_match
}

/// The other served versions of the request's resource (upstream's
/// `EquivalentResourcesFor`): the group's other versions, and resources
/// served in another version than they are stored in, which are admitted
/// as their storage resource (`events.k8s.io/v1` events are core events,
/// `autoscaling/v1` HorizontalPodAutoscalers are `autoscaling/v2` ones).
pub fn equivalents(attrs: &Attributes<'_>) -> Vec<Matched> {
    let info = attrs.resource;
    let stored_here = |r: &ResourceInfo| {
        Conversion::for_resource(r)
            .is_some_and(|c| (c.group, c.version, c.plural) == (info.group, info.version, info.plural))
    };
    let mut out: Vec<Matched> = registry()
        .resources()
        .iter()
        .filter(|r| (r.group == info.group && r.plural == info.plural && r.version != info.version) || stored_here(r))
        .map(|r| Matched {
            resource: Gvr { group: r.group.into(), version: r.version.into(), resource: r.plural.into() },
            kind: Gvk { group: r.group.into(), version: r.version.into(), kind: r.kind.into() },
        })
        .collect();
    out.sort_by(|a, b| (&a.resource.group, &a.resource.version).cmp(&(&b.resource.group, &b.resource.version)));
    out
}

/// The built-in resources (equivalence and conversions are among them).
fn registry() -> &'static Registry {
    static REGISTRY: std::sync::OnceLock<Registry> = std::sync::OnceLock::new();
    REGISTRY.get_or_init(Registry::builtin)
}

/// The first of `rules` that matches, as the request's own resource or,
/// with `equivalent`, as another version of it; `names` (a policy rule's
/// `resourceNames`) must then hold the request's name when non-empty.
pub fn match_rules(
    rules: &[Value],
    equivalent: bool,
    attrs: &Attributes<'_>,
    object: Option<&Value>,
) -> Option<Matched> {
    let own = request_match(attrs, object);
    let name_ok = |rule: &Value| {
        let names: Vec<&str> = rule
            .get("resourceNames")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        names.is_empty() || names.contains(&attrs.name)
    };
    if rules.iter().any(|r| rule_matches(r, attrs, &own.resource) && name_ok(r)) {
        return Some(own);
    }
    if !equivalent {
        return None;
    }
    let others = equivalents(attrs);
    for rule in rules {
        for m in &others {
            if rule_matches(rule, attrs, &m.resource) && name_ok(rule) {
                return Some(m.clone());
            }
        }
    }
    None
}

/// The object and old object as the matched version reads them, and the
/// conversion that made them (to turn a webhook's patched object back):
/// a converted resource is admitted in its storage version, so a match
/// through its served version sees that version's form.
pub struct Views {
    /// The object in the matched version.
    pub object: Option<Value>,
    /// The old object in the matched version.
    pub old: Option<Value>,
    /// The conversion applied, if any.
    pub conversion: Option<Conversion>,
}

/// [`Views`] of the request's objects for `matched`.
pub fn views(attrs: &Attributes<'_>, matched: &Matched, object: Option<&Value>) -> Views {
    let info = attrs.resource;
    let r = &matched.resource;
    let conversion =
        if (r.group.as_str(), r.version.as_str(), r.resource.as_str()) == (info.group, info.version, info.plural) {
            None
        } else {
            registry()
                .lookup(&r.group, &r.version, &r.resource)
                .and_then(Conversion::for_resource)
                .filter(|c| (c.group, c.version, c.plural) == (info.group, info.version, info.plural))
        };
    let view = |o: Option<&Value>| o.map(|o| conversion.map_or_else(|| o.clone(), |c| c.from_storage(o)));
    Views { object: view(object), old: view(attrs.old_object), conversion }
}

/// A label selector from its JSON form; absent or `{}` selects everything.
pub fn parse_selector(v: Option<&Value>) -> Result<LabelSelector, String> {
    match v.filter(|s| !s.is_null()) {
        None => Ok(LabelSelector::everything()),
        Some(sel) => LabelSelector::from_label_selector_json(sel),
    }
}

/// Upstream's `namespace.Matcher.MatchNamespaceSelector`: requests without
/// a namespace match (except namespaces themselves); a Namespace create or
/// update is judged by its own labels, anything else by the stored
/// namespace's (a missing namespace is its 404).
pub async fn match_namespace(
    selector: &LabelSelector,
    stores: &Stores,
    attrs: &Attributes<'_>,
    object: Option<&Value>,
) -> Result<bool, ApiError> {
    let is_ns = attrs.resource.group.is_empty() && attrs.resource.plural == "namespaces";
    if attrs.namespace.is_empty() && !is_ns {
        return Ok(true);
    }
    if selector.is_empty() {
        return Ok(true);
    }
    if is_ns && attrs.subresource.is_empty() && matches!(attrs.operation, Operation::Create | Operation::Update) {
        return Ok(object.is_some_and(|o| selector.matches_object(o)));
    }
    let ns = namespace_object(stores, attrs).await?;
    Ok(selector.matches_object(&ns))
}

/// The namespace of the request (a Namespace's own name for namespaces):
/// from the watch cache, else the store.
pub async fn namespace_object(stores: &Stores, attrs: &Attributes<'_>) -> Result<Value, ApiError> {
    let is_ns = attrs.resource.group.is_empty() && attrs.resource.plural == "namespaces";
    let name = if is_ns && attrs.namespace.is_empty() { attrs.name } else { attrs.namespace };
    let Some(store) = stores.get(&("", "v1", "namespaces")) else {
        return Err(ApiError::NotFound { resource: GroupResource::new("", "namespaces"), name: name.into() });
    };
    match store.get_cached("", name) {
        Some(ns) => Ok(ns),
        None => store.get("", name, "").await,
    }
}

/// Upstream's `object.Matcher.MatchObjectSelector`: the object's or the
/// old object's labels match.
pub fn match_object(selector: &LabelSelector, attrs: &Attributes<'_>, object: Option<&Value>) -> bool {
    selector.is_empty()
        || object.is_some_and(|o| selector.matches_object(o))
        || attrs.old_object.is_some_and(|o| selector.matches_object(o))
}

/// Upstream's `IsExemptAdmissionConfigurationResource`: webhooks and
/// policies never see writes of their own configuration kinds.
pub fn is_exempt(attrs: &Attributes<'_>) -> bool {
    attrs.resource.group == "admissionregistration.k8s.io"
        && matches!(
            attrs.resource.kind,
            "ValidatingWebhookConfiguration"
                | "MutatingWebhookConfiguration"
                | "ValidatingAdmissionPolicy"
                | "ValidatingAdmissionPolicyBinding"
                | "MutatingAdmissionPolicy"
                | "MutatingAdmissionPolicyBinding"
        )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::RequestAdmission;
    use crate::authn::UserInfo;
    use rkube_apimachinery::registry::Registry;
    use serde_json::json;

    fn attrs_for<'a>(req: &'a RequestAdmission, op: Operation, name: &'a str) -> Attributes<'a> {
        Attributes {
            operation: op,
            user: &req.user,
            resource: &req.resource,
            subresource: &req.subresource,
            namespace: &req.namespace,
            name,
            old_object: None,
            dry_run: false,
            request: req,
        }
    }

    fn request(group: &str, version: &str, plural: &str, sub: &str, ns: &str) -> RequestAdmission {
        let info = Registry::builtin().lookup(group, version, plural).unwrap().clone();
        RequestAdmission::new(Default::default(), UserInfo::default(), info, sub, ns, false)
    }

    #[test]
    fn rules_match_scope_operations_groups_versions_and_subresources() {
        let req = request("apps", "v1", "deployments", "", "default");
        let a = attrs_for(&req, Operation::Create, "web");
        let own = request_match(&a, None).resource;
        let rule = |v: Value| rule_matches(&v, &a, &own);
        let base = json!({"operations": ["CREATE"], "apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments"]});
        assert!(rule(base.clone()));
        assert!(!rule(
            json!({"operations": ["UPDATE"], "apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments"]})
        ));
        assert!(rule(json!({"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"]})));
        assert!(!rule(
            json!({"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*/scale"]})
        ));
        let mut cluster = base.clone();
        cluster["scope"] = json!("Cluster");
        assert!(!rule(cluster));
        let mut namespaced = base;
        namespaced["scope"] = json!("Namespaced");
        assert!(rule(namespaced));

        let scale = request("apps", "v1", "deployments", "scale", "default");
        let a = attrs_for(&scale, Operation::Update, "web");
        let own = request_match(&a, None).resource;
        for (res, want) in
            [("deployments", false), ("deployments/scale", true), ("deployments/*", true), ("*/scale", true)]
        {
            let r = json!({"operations": ["UPDATE"], "apiGroups": ["apps"], "apiVersions": ["v1"], "resources": [res]});
            assert_eq!(rule_matches(&r, &a, &own), want, "{res}");
        }
    }

    #[test]
    fn namespaces_are_cluster_scoped_for_rules() {
        let req = request("", "v1", "namespaces", "", "");
        let a = attrs_for(&req, Operation::Create, "team");
        let own = request_match(&a, None).resource;
        let r = |scope: &str| json!({"operations": ["*"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["namespaces"], "scope": scope});
        assert!(rule_matches(&r("Cluster"), &a, &own));
        assert!(!rule_matches(&r("Namespaced"), &a, &own));
    }

    #[test]
    fn object_selector_matches_new_or_old_labels() {
        let req = request("", "v1", "configmaps", "", "default");
        let a = attrs_for(&req, Operation::Create, "c");
        let sel = parse_selector(Some(&json!({"matchLabels": {"team": "a"}}))).unwrap();
        assert!(match_object(&sel, &a, Some(&json!({"metadata": {"labels": {"team": "a"}}}))));
        assert!(!match_object(&sel, &a, Some(&json!({"metadata": {"labels": {"team": "b"}}}))));
        assert!(match_object(&parse_selector(None).unwrap(), &a, None));
    }

    #[test]
    fn configuration_kinds_are_exempt() {
        let req = request("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations", "", "");
        assert!(is_exempt(&attrs_for(&req, Operation::Create, "x")));
        let req = request("", "v1", "configmaps", "", "default");
        assert!(!is_exempt(&attrs_for(&req, Operation::Create, "x")));
    }

    #[test]
    fn equivalent_versions_match_and_see_their_own_form() {
        // autoscaling/v1 HPAs are admitted as their storage version, v2.
        let req = request("autoscaling", "v2", "horizontalpodautoscalers", "", "default");
        let a = attrs_for(&req, Operation::Create, "web");
        let v1_rule = json!({"operations": ["CREATE"], "apiGroups": ["autoscaling"], "apiVersions": ["v1"],
            "resources": ["horizontalpodautoscalers"]});
        assert!(match_rules(std::slice::from_ref(&v1_rule), false, &a, None).is_none());
        let m = match_rules(&[v1_rule], true, &a, None).expect("an equivalent match");
        assert_eq!((m.resource.version.as_str(), m.kind.kind.as_str()), ("v1", "HorizontalPodAutoscaler"));
        let hpa = json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web"}, "spec": {"maxReplicas": 3,
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": 50}}}]}});
        let v = views(&a, &m, Some(&hpa));
        let seen = v.object.unwrap();
        assert_eq!(seen["apiVersion"], "autoscaling/v1");
        assert_eq!(seen["spec"]["targetCPUUtilizationPercentage"], 50);
        assert_eq!(v.conversion.unwrap().to_storage(&seen)["spec"]["metrics"], hpa["spec"]["metrics"]);

        // events.k8s.io events are core events.
        let req = request("", "v1", "events", "", "default");
        let a = attrs_for(&req, Operation::Create, "e");
        let rule = json!({"operations": ["*"], "apiGroups": ["events.k8s.io"], "apiVersions": ["v1"], "resources": ["events"]});
        let m = match_rules(&[rule], true, &a, None).expect("an equivalent match");
        assert_eq!((m.resource.group.as_str(), m.kind.kind.as_str()), ("events.k8s.io", "Event"));
    }
}
