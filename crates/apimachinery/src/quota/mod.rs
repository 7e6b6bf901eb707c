//! ResourceQuota evaluation, shared by the quota controller and the
//! ResourceQuota admission plugin (upstream `pkg/quota/v1` and its
//! `evaluator/core`): resource lists and their arithmetic
//! ([`Usage`]), what an object uses ([`evaluator`]), and which quotas
//! an object falls under (scopes).
//!
//! Amounts are exact, in milli-units (`resource.Quantity.MilliValue`),
//! and remember whether they were written with binary suffixes so a sum
//! prints as upstream's `Quantity.Add` keeps it (`1Gi + 1Gi` → `2Gi`).

pub mod evaluator;

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use crate::quantity;

/// One quantity: `milli` thousandths of the unit, `binary` when it is
/// written with a binary suffix (`Ki` … `Ei`), as `resource.Quantity`'s
/// format.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Amount {
    /// The value in milli-units.
    pub milli: i128,
    /// `BinarySI` format.
    pub binary: bool,
}

impl Amount {
    /// A whole count (`pods`, `count/…`) in the decimal format.
    pub fn count(n: i64) -> Amount {
        Amount { milli: n as i128 * 1000, binary: false }
    }

    /// A quantity from its JSON form (`"500m"`, `"1Gi"`, `2`); `None`
    /// when it is not a quantity.
    pub fn parse(v: &Value) -> Option<Amount> {
        let text = match v {
            Value::String(s) => s.trim().to_string(),
            Value::Number(n) => n.to_string(),
            _ => return None,
        };
        let milli = quantity::milli_value(&text)?;
        let binary = text.ends_with('i');
        Some(Amount { milli, binary })
    }

    /// `self + other`, keeping the format of the first non-zero operand
    /// (upstream `Quantity.Add` takes the addend's format into a zero).
    pub fn plus(self, other: Amount) -> Amount {
        let binary = if self.milli == 0 { other.binary } else { self.binary };
        Amount { milli: self.milli + other.milli, binary }
    }

    /// `self - other`, in the format of `self`.
    pub fn minus(self, other: Amount) -> Amount {
        Amount { milli: self.milli - other.milli, binary: self.binary }
    }

    /// The canonical text upstream's `Quantity.String()` gives: `500m`,
    /// `2`, `1536Mi`, `0`.
    pub fn format(self) -> String {
        let m = self.milli;
        if self.binary && m % 1000 == 0 && (m / 1000) % 1024 == 0 && m != 0 {
            let text = format!("{}Ki", m / 1000 / 1024);
            return quantity::canonical(&text).unwrap_or(text);
        }
        if self.binary && m % 1000 == 0 && (m / 1000).abs() < 1024 {
            return (m / 1000).to_string();
        }
        let text = if m % 1000 == 0 { (m / 1000).to_string() } else { format!("{m}m") };
        quantity::canonical(&text).unwrap_or(text)
    }
}

/// A resource list (`corev1.ResourceList`): resource name → amount.
pub type Usage = BTreeMap<String, Amount>;

/// A resource list from its JSON object form (`spec.hard`,
/// `status.used`); entries that are not quantities are left out.
pub fn parse_list(v: Option<&Value>) -> Usage {
    v.and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, q)| Some((k.clone(), Amount::parse(q)?)))
        .collect()
}

/// The JSON object form of a resource list, every amount in canonical text.
pub fn to_json(usage: &Usage) -> Value {
    Value::Object(usage.iter().map(|(k, a)| (k.clone(), Value::String(a.format()))).collect::<Map<_, _>>())
}

/// `a + b` per resource (upstream `quota.Add`).
pub fn add(a: &Usage, b: &Usage) -> Usage {
    let mut out = a.clone();
    for (k, v) in b {
        let sum = out.get(k).copied().unwrap_or_default().plus(*v);
        out.insert(k.clone(), sum);
    }
    out
}

/// `a - b` per resource of either (upstream `quota.Subtract`).
pub fn subtract(a: &Usage, b: &Usage) -> Usage {
    let mut out = a.clone();
    for (k, v) in b {
        let diff = out.get(k).copied().unwrap_or_default().minus(*v);
        out.insert(k.clone(), diff);
    }
    out
}

/// The entries of `usage` whose names are in `names` (upstream `quota.Mask`).
pub fn mask<'a>(usage: &Usage, names: impl IntoIterator<Item = &'a String>) -> Usage {
    let names: BTreeSet<&String> = names.into_iter().collect();
    usage.iter().filter(|(k, _)| names.contains(k)).map(|(k, v)| (k.clone(), *v)).collect()
}

/// The resources of `usage` above their limit in `hard` (upstream
/// `quota.LessThanOrEqual`'s second result); resources `hard` does not
/// limit are never exceeded. Sorted.
pub fn exceeded(usage: &Usage, hard: &Usage) -> Vec<String> {
    usage.iter().filter(|(k, v)| hard.get(*k).is_some_and(|h| v.milli > h.milli)).map(|(k, _)| k.clone()).collect()
}

/// Whether two lists hold the same amounts (upstream `quota.Equals`).
pub fn equals(a: &Usage, b: &Usage) -> bool {
    a.len() == b.len() && a.iter().all(|(k, v)| b.get(k).is_some_and(|w| w.milli == v.milli))
}

/// Upstream's `prettyPrint` of a list in messages: `name=value` sorted
/// by name, joined by `,`.
pub fn pretty(usage: &Usage) -> String {
    usage.iter().map(|(k, v)| format!("{k}={}", v.format())).collect::<Vec<_>>().join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn amt(s: &str) -> Amount {
        Amount::parse(&json!(s)).unwrap()
    }

    #[test]
    fn amounts_print_in_canonical_form_as_quantity_string() {
        assert_eq!(amt("500m").plus(amt("500m")).format(), "1");
        assert_eq!(amt("100m").plus(amt("1")).format(), "1100m");
        assert_eq!(amt("1Gi").plus(amt("1Gi")).format(), "2Gi");
        assert_eq!(amt("512Mi").plus(amt("1Gi")).format(), "1536Mi");
        assert_eq!(Amount::default().plus(amt("1Gi")).format(), "1Gi");
        assert_eq!(Amount::count(0).format(), "0");
        assert_eq!(Amount::count(3).format(), "3");
        assert_eq!(amt("1").minus(amt("1")).format(), "0");
    }

    #[test]
    fn arithmetic_masks_and_messages_follow_upstream_quota_helpers() {
        let used: Usage = [("pods".to_string(), Amount::count(2)), ("requests.cpu".to_string(), amt("1"))].into();
        let req: Usage = [("pods".to_string(), Amount::count(1)), ("requests.cpu".to_string(), amt("500m"))].into();
        let hard: Usage = [("pods".to_string(), Amount::count(2)), ("requests.cpu".to_string(), amt("2"))].into();
        let sum = add(&used, &req);
        assert_eq!(exceeded(&sum, &hard), vec!["pods".to_string()]);
        assert_eq!(pretty(&sum), "pods=3,requests.cpu=1500m");
        let only = ["pods".to_string()];
        assert_eq!(pretty(&mask(&sum, &only)), "pods=3");
        assert_eq!(pretty(&subtract(&sum, &req)), "pods=2,requests.cpu=1");
        assert!(equals(&subtract(&sum, &req), &used));
        assert_eq!(to_json(&hard), json!({"pods": "2", "requests.cpu": "2"}));
        assert_eq!(parse_list(Some(&json!({"pods": "2", "x": "bad"}))).len(), 1);
    }
}
