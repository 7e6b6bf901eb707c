//! A binding's params (upstream `generic.CollectParams`): the objects of
//! the policy's `paramKind` that the binding's `paramRef` names or selects,
//! in the request's namespace unless `paramRef.namespace` says otherwise.

use serde_json::Value;

use super::compiled::Policy;
use crate::admission::plugins::Stores;
use crate::admission::webhook::matcher::parse_selector;
use crate::storage::ListOptions;

/// The params to evaluate with: `[null]` when the policy or binding takes
/// none; the error is upstream's configuration error text.
pub async fn collect(stores: &Stores, policy: &Policy, binding: &Value, namespace: &str) -> Result<Vec<Value>, String> {
    let Some((api_version, kind)) = &policy.param_kind else { return Ok(vec![Value::Null]) };
    let Some(param_ref) = binding.pointer("/spec/paramRef").filter(|p| p.is_object()) else {
        return Ok(vec![Value::Null]);
    };
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version.as_str()));
    let store = stores
        .iter()
        .find(|((g, v, _), s)| *g == group && *v == version && s.info().kind == kind.as_str())
        .map(|(_, s)| s.clone())
        .ok_or_else(|| format!("paramKind kind `{api_version}, Kind={kind}` not known"))?;
    let namespaced = store.info().scope == rkube_apimachinery::registry::Scope::Namespaced;
    let ref_ns = param_ref.get("namespace").and_then(Value::as_str).unwrap_or("");
    let name = param_ref.get("name").and_then(Value::as_str).unwrap_or("");
    let selector = param_ref.get("selector").filter(|s| !s.is_null());
    let params_ns = if !namespaced {
        if !ref_ns.is_empty() {
            return Err("paramRef.namespace must not be provided for a cluster-scoped `paramKind`".into());
        }
        ""
    } else if !ref_ns.is_empty() {
        ref_ns
    } else if namespace.is_empty() {
        return Err("cannot use namespaced paramRef in policy binding that matches cluster-scoped resources".into());
    } else {
        namespace
    };
    let params: Vec<Value> = if !name.is_empty() {
        if selector.is_some() {
            return Err("paramRef.name and paramRef.selector are mutually exclusive".into());
        }
        let found = match store.get_cached(params_ns, name) {
            Some(v) => Some(v),
            None => store.get(params_ns, name, "").await.ok(),
        };
        found.into_iter().collect()
    } else if let Some(sel) = selector {
        let sel = parse_selector(Some(sel))?;
        let opts = ListOptions { resource_version: "0".into(), ..Default::default() };
        let items = store.list(params_ns, &opts).await.map_err(|e| e.to_string())?.items;
        items.into_iter().filter(|o| sel.matches_object(o)).collect()
    } else {
        return Err("one of name or selector must be provided".into());
    };
    let deny_missing = param_ref.get("parameterNotFoundAction").and_then(Value::as_str) == Some("Deny");
    if params.is_empty() && deny_missing {
        return Err("no params found for policy binding with `Deny` parameterNotFoundAction".into());
    }
    Ok(params)
}
