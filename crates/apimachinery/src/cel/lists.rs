//! Kubernetes' CEL list and regex libraries (upstream `library/lists.go`
//! and `library/regex.go`): the list members `isSorted`, `sum`, `min`,
//! `max`, `indexOf`, `lastIndexOf`, and the string members `find` and
//! `findAll` (with an optional limit).
//!
//! Without cel-go's type checker the element type of an empty list is not
//! known: `[].sum()` is the int `0`.

use std::cmp::Ordering;
use std::sync::Arc;

use cel::common::types::{DYN_TYPE, INT_TYPE, LIST_TYPE, STRING_TYPE};
use cel::{DeclarationError, Env, ExecutionError, Value};

use super::values::{err, int_arg, overload, str_arg, string_list};

fn list(args: &[Value]) -> Result<&[Value], ExecutionError> {
    match args.first() {
        Some(Value::List(items)) => Ok(items.as_slice()),
        other => Err(err(format!("no such overload: expected list, got {other:?}"))),
    }
}

/// CEL ordering of two comparable values of one type (numbers across
/// int, uint and double, as CEL compares them).
fn compare(a: &Value, b: &Value) -> Result<Ordering, ExecutionError> {
    let ord = match (a, b) {
        (Value::Int(x), Value::Int(y)) => Some(x.cmp(y)),
        (Value::UInt(x), Value::UInt(y)) => Some(x.cmp(y)),
        (Value::Float(x), Value::Float(y)) => x.partial_cmp(y),
        (Value::Int(x), Value::UInt(y)) => Some(i128::from(*x).cmp(&i128::from(*y))),
        (Value::UInt(x), Value::Int(y)) => Some(i128::from(*x).cmp(&i128::from(*y))),
        (Value::Int(x), Value::Float(y)) => (*x as f64).partial_cmp(y),
        (Value::Float(x), Value::Int(y)) => x.partial_cmp(&(*y as f64)),
        (Value::UInt(x), Value::Float(y)) => (*x as f64).partial_cmp(y),
        (Value::Float(x), Value::UInt(y)) => x.partial_cmp(&(*y as f64)),
        (Value::String(x), Value::String(y)) => Some(x.cmp(y)),
        (Value::Bool(x), Value::Bool(y)) => Some(x.cmp(y)),
        (Value::Bytes(x), Value::Bytes(y)) => Some(x.cmp(y)),
        _ => None,
    };
    ord.ok_or_else(|| err(format!("no such overload: cannot compare {a:?} and {b:?}")))
}

/// Upstream's `cmp`: the first element `prefer` keeps winning.
fn extreme(args: &[Value], name: &str, replace_when: Ordering) -> Result<Value, ExecutionError> {
    let mut best: Option<&Value> = None;
    for item in list(args)? {
        best = match best {
            Some(b) if compare(b, item)? != replace_when => Some(b),
            _ => Some(item),
        };
    }
    best.cloned().ok_or_else(|| err(format!("{name} called on empty list")))
}

fn sum_values(args: &[Value]) -> Result<Value, ExecutionError> {
    let items = list(args)?;
    let overflow = || err("integer overflow");
    let mut acc = match items.first() {
        None => return Ok(Value::Int(0)),
        Some(first) => first.clone(),
    };
    for item in &items[1..] {
        acc = match (&acc, item) {
            (Value::Int(a), Value::Int(b)) => Value::Int(a.checked_add(*b).ok_or_else(overflow)?),
            (Value::UInt(a), Value::UInt(b)) => Value::UInt(a.checked_add(*b).ok_or_else(overflow)?),
            (Value::Float(a), Value::Float(b)) => Value::Float(a + b),
            (a, b) => return Err(err(format!("no such overload: cannot add {a:?} and {b:?}"))),
        };
    }
    Ok(acc)
}

overload!(is_sorted, |a| {
    let items = list(a)?;
    for pair in items.windows(2) {
        if compare(&pair[0], &pair[1])? == Ordering::Greater {
            return Ok(Value::Bool(false));
        }
    }
    Ok(Value::Bool(true))
});
overload!(sum, sum_values);
overload!(min, |a| extreme(a, "min", Ordering::Greater));
overload!(max, |a| extreme(a, "max", Ordering::Less));
overload!(index_of, |a| Ok(Value::Int(list(a)?.iter().position(|v| *v == a[1]).map(|i| i as i64).unwrap_or(-1))));
overload!(last_index_of, |a| {
    Ok(Value::Int(list(a)?.iter().rposition(|v| *v == a[1]).map(|i| i as i64).unwrap_or(-1)))
});

/// The compiled pattern, or upstream's error for a bad one.
fn regex(pattern: &str) -> Result<regex::Regex, ExecutionError> {
    regex::Regex::new(pattern).map_err(|e| err(format!("error parsing regexp: {e}")))
}

overload!(find, |a| {
    let found = regex(str_arg(a, 1)?)?.find(str_arg(a, 0)?).map(|m| m.as_str().to_string()).unwrap_or_default();
    Ok(Value::String(Arc::new(found)))
});
overload!(find_all, |a| {
    let limit = if a.len() > 2 { int_arg(a, 2)? } else { -1 };
    let re = regex(str_arg(a, 1)?)?;
    let all = re.find_iter(str_arg(a, 0)?).map(|m| m.as_str().to_string());
    Ok(match usize::try_from(limit) {
        Ok(n) => string_list(all.take(n)),
        Err(_) => string_list(all),
    })
});

/// Registers both libraries on `env`.
pub fn register(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_member_overload("isSorted", "list_is_sorted", LIST_TYPE, vec![], is_sorted)?;
    env.add_member_overload("sum", "list_sum", LIST_TYPE, vec![], sum)?;
    env.add_member_overload("min", "list_min", LIST_TYPE, vec![], min)?;
    env.add_member_overload("max", "list_max", LIST_TYPE, vec![], max)?;
    env.add_member_overload("indexOf", "list_a_index_of_int", LIST_TYPE, vec![DYN_TYPE], index_of)?;
    env.add_member_overload("lastIndexOf", "list_a_last_index_of_int", LIST_TYPE, vec![DYN_TYPE], last_index_of)?;
    env.add_member_overload("find", "string_find_string", STRING_TYPE, vec![STRING_TYPE], find)?;
    env.add_member_overload("findAll", "string_find_all_string", STRING_TYPE, vec![STRING_TYPE], find_all)?;
    env.add_member_overload(
        "findAll",
        "string_find_all_string_int",
        STRING_TYPE,
        vec![STRING_TYPE, INT_TYPE],
        find_all,
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::tests::eval_str;
    use serde_json::json;

    #[test]
    fn list_functions_follow_upstream_examples() {
        // Examples from upstream's library/lists.go documentation.
        let cases = [
            ("[1, 2, 3].isSorted()", json!(true)),
            ("['a', 'b', 'b', 'c'].isSorted()", json!(true)),
            ("[2.0, 1.0].isSorted()", json!(false)),
            ("[1, 2, 3].sum()", json!(6)),
            ("[1.0, 2.0, 3.0].sum()", json!(6.0)),
            ("[].sum()", json!(0)),
            ("[1, 2].min()", json!(1)),
            ("[1, 2].max()", json!(2)),
            ("['d', 'a', 'c'].min()", json!("a")),
            ("[1, 2, 2, 3].indexOf(2)", json!(1)),
            ("['a', 'b', 'b', 'c'].lastIndexOf('b')", json!(2)),
            ("[1.0].indexOf(1.1)", json!(-1)),
            ("[].lastIndexOf(1)", json!(-1)),
            // The strings extension's indexOf is still there.
            ("'hello'.indexOf('l')", json!(2)),
        ];
        for (src, want) in cases {
            assert_eq!(eval_str(src), Ok(want), "{src}");
        }
        assert_eq!(eval_str("[].min()"), Err("min called on empty list".into()));
        assert_eq!(eval_str("[].max()"), Err("max called on empty list".into()));
    }

    #[test]
    fn regex_functions_follow_upstream_examples() {
        // Examples from upstream's library/regex.go documentation.
        let cases = [
            ("'abc 123'.find('[0-9]+')", json!("123")),
            ("'abc 123'.find('xyz')", json!("")),
            ("'123 abc 456'.findAll('[0-9]+')", json!(["123", "456"])),
            ("'123 abc 456'.findAll('[0-9]+', 1)", json!(["123"])),
            ("'123 abc 456'.findAll('xyz')", json!([])),
        ];
        for (src, want) in cases {
            assert_eq!(eval_str(src), Ok(want), "{src}");
        }
    }
}
