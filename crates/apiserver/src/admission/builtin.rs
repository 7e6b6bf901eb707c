//! What the built-in admission plugins share: upstream's
//! `admission.NewForbidden`, reads of other objects through the server's
//! stores (informer-style: the watch cache first, then the store), and
//! exact resource-quantity arithmetic in milli-units.

use std::sync::Arc;

use rkube_apimachinery::{meta, ApiError, GroupResource};
use serde_json::Value;

use super::plugins::Stores;
use super::Attributes;
use crate::storage::{ListOptions, ResourceStore};

/// Upstream's `admission.NewForbidden`: 403 `<resource> "<name>" is
/// forbidden: <message>`, the name being the request's, else the object's
/// name or generateName, else `Unknown`.
pub fn forbidden(attrs: &Attributes<'_>, object: Option<&Value>, message: impl Into<String>) -> ApiError {
    let name = if !attrs.name.is_empty() {
        attrs.name.to_string()
    } else {
        object
            .map(|o| if meta::name(o).is_empty() { meta::generate_name(o) } else { meta::name(o) })
            .filter(|n| !n.is_empty())
            .unwrap_or("Unknown")
            .to_string()
    };
    let resource = GroupResource::new(attrs.resource.group, attrs.resource.plural);
    let message = format!("{resource} \"{name}\" is forbidden: {}", message.into());
    ApiError::Forbidden { resource, name, message }
}

/// The store of `(group, version, plural)`, if the server keeps it.
pub fn store(stores: &Stores, group: &str, version: &str, plural: &str) -> Option<Arc<ResourceStore>> {
    stores.iter().find(|((g, v, p), _)| *g == group && *v == version && *p == plural).map(|(_, s)| s.clone())
}

/// One object, from the watch cache when it has it, else from the store
/// (upstream plugins fall back to a live lookup when the informer lags).
/// `Ok(None)` when it does not exist.
pub async fn lookup(store: &ResourceStore, namespace: &str, name: &str) -> Result<Option<Value>, ApiError> {
    if let Some(obj) = store.get_cached(namespace, name) {
        return Ok(Some(obj));
    }
    match store.get(namespace, name, "").await {
        Ok(obj) => Ok(Some(obj)),
        Err(ApiError::NotFound { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Every object of a namespace (`""`: all), as an informer's lister sees them.
pub async fn list(store: &ResourceStore, namespace: &str) -> Result<Vec<Value>, ApiError> {
    let opts = ListOptions { resource_version: "0".into(), ..ListOptions::default() };
    Ok(store.list(namespace, &opts).await?.items)
}

/// A quantity (`"500m"`, `"1Gi"`, `2`) in milli-units, rounded up as
/// `resource.Quantity.MilliValue` does; `None` when it is not a quantity.
pub fn milli(q: &Value) -> Option<i128> {
    if let Some(n) = q.as_i64() {
        return (n as i128).checked_mul(1000);
    }
    if let Some(f) = q.as_f64() {
        return Some((f * 1000.0).ceil() as i128);
    }
    let s = q.as_str()?.trim();
    let (negative, s) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let end = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
    let (number, suffix) = s.split_at(end);
    let (int, frac) = number.split_once('.').unwrap_or((number, ""));
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    let mut mantissa: i128 = 0;
    for c in int.chars().chain(frac.chars()) {
        mantissa = mantissa.checked_mul(10)?.checked_add(c.to_digit(10)? as i128)?;
    }
    // value = mantissa * 10^exp10 * 1024^exp1024 / 10^frac
    let (exp10, exp1024): (i32, u32) = match suffix {
        "" => (0, 0),
        "n" => (-9, 0),
        "u" => (-6, 0),
        "m" => (-3, 0),
        "k" => (3, 0),
        "M" => (6, 0),
        "G" => (9, 0),
        "T" => (12, 0),
        "P" => (15, 0),
        "E" => (18, 0),
        "Ki" => (0, 1),
        "Mi" => (0, 2),
        "Gi" => (0, 3),
        "Ti" => (0, 4),
        "Pi" => (0, 5),
        "Ei" => (0, 6),
        e if e.starts_with(['e', 'E']) => (e[1..].parse().ok()?, 0),
        _ => return None,
    };
    let exp10 = exp10 + 3 - frac.len() as i32;
    let mut numerator = mantissa.checked_mul(1024i128.checked_pow(exp1024)?)?;
    let mut denominator: i128 = 1;
    if exp10 >= 0 {
        numerator = numerator.checked_mul(10i128.checked_pow(exp10 as u32)?)?;
    } else {
        denominator = 10i128.checked_pow((-exp10) as u32)?;
    }
    let value = (numerator + denominator - 1) / denominator;
    Some(if negative { -((numerator) / denominator) } else { value })
}

/// A milli-unit amount as upstream prints a computed quantity (`1500m`,
/// `2`, the canonical decimal form).
pub fn format_milli(m: i128) -> String {
    let text = if m % 1000 == 0 { (m / 1000).to_string() } else { format!("{m}m") };
    rkube_apimachinery::quantity::canonical(&text).unwrap_or(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn milli_values_as_upstream_quantities() {
        assert_eq!(milli(&json!("500m")), Some(500));
        assert_eq!(milli(&json!("1")), Some(1000));
        assert_eq!(milli(&json!("0.5")), Some(500));
        assert_eq!(milli(&json!("1Ki")), Some(1_024_000));
        assert_eq!(milli(&json!("1Gi")), Some(1_073_741_824_000));
        assert_eq!(milli(&json!("1e3")), Some(1_000_000));
        assert_eq!(milli(&json!("1n")), Some(1), "rounded up as MilliValue");
        assert_eq!(milli(&json!(2)), Some(2000));
        assert_eq!(milli(&json!("x")), None);
        assert_eq!(format_milli(1500), "1500m");
        assert_eq!(format_milli(2000), "2");
    }
}
