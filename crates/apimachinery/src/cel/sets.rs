//! cel-go's sets extension (`ext.Sets()`, in Kubernetes' base environment
//! since 1.29): `sets.contains(a, b)` (every element of `b` is in `a`),
//! `sets.equivalent(a, b)` (the same elements, ignoring order and
//! repetition) and `sets.intersects(a, b)` (a common element). Elements
//! compare with CEL equality, numbers across int, uint and double.

use cel::common::types::LIST_TYPE;
use cel::{DeclarationError, Env, ExecutionError, Value};

use super::values::{err, overload};

fn list(args: &[Value], i: usize) -> Result<&[Value], ExecutionError> {
    match args.get(i) {
        Some(Value::List(items)) => Ok(items.as_slice()),
        other => Err(err(format!("no such overload: expected list, got {other:?}"))),
    }
}

/// CEL equality, numbers compared by value across their types.
fn equal(a: &Value, b: &Value) -> bool {
    let number = |v: &Value| match v {
        Value::Int(n) => Some(*n as f64),
        Value::UInt(n) => Some(*n as f64),
        Value::Float(f) => Some(*f),
        _ => None,
    };
    match (a, b) {
        (Value::Int(x), Value::UInt(y)) | (Value::UInt(y), Value::Int(x)) => u64::try_from(*x).is_ok_and(|x| x == *y),
        _ => match (number(a), number(b)) {
            (Some(x), Some(y)) => x == y,
            _ => a == b,
        },
    }
}

fn contains(a: &[Value], b: &[Value]) -> bool {
    b.iter().all(|x| a.iter().any(|y| equal(x, y)))
}

overload!(sets_contains, |a| Ok(Value::Bool(contains(list(a, 0)?, list(a, 1)?))));
overload!(sets_equivalent, |a| {
    let (x, y) = (list(a, 0)?, list(a, 1)?);
    Ok(Value::Bool(contains(x, y) && contains(y, x)))
});
overload!(sets_intersects, |a| {
    let (x, y) = (list(a, 0)?, list(a, 1)?);
    Ok(Value::Bool(x.iter().any(|v| y.iter().any(|w| equal(v, w)))))
});

/// Registers the extension on `env`.
pub fn register(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_overload("sets.contains", "list_sets_contains_list", vec![LIST_TYPE, LIST_TYPE], sets_contains)?;
    env.add_overload("sets.equivalent", "list_sets_equivalent_list", vec![LIST_TYPE, LIST_TYPE], sets_equivalent)?;
    env.add_overload("sets.intersects", "list_sets_intersects_list", vec![LIST_TYPE, LIST_TYPE], sets_intersects)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::tests::eval_str;
    use serde_json::json;

    #[test]
    fn sets_follow_cel_go_examples() {
        // Examples from cel-go's ext/sets.go documentation.
        let cases = [
            ("sets.contains([], [])", true),
            ("sets.contains([], [1])", false),
            ("sets.contains([1, 2, 3, 4], [2, 3])", true),
            ("sets.contains([1, 2.0, 3u], [1.0, 2u, 3])", true),
            ("sets.equivalent([], [])", true),
            ("sets.equivalent([1], [1, 1])", true),
            ("sets.equivalent([1], [1u, 1.0])", true),
            ("sets.equivalent([1, 2, 3], [3u, 2.0, 1])", true),
            ("sets.equivalent([1, 2], [2, 2, 2])", false),
            ("sets.intersects([1], [])", false),
            ("sets.intersects([1], [1, 2])", true),
            ("sets.intersects([[1], [2, 3]], [[1, 2], [2, 3.0]])", true),
        ];
        for (src, want) in cases {
            assert_eq!(eval_str(src), Ok(json!(want)), "{src}");
        }
    }
}
