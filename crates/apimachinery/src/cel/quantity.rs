//! Kubernetes' CEL quantity library (upstream `library/quantity.go`, as
//! Kubernetes 1.33 has it): `quantity(string)`, `isQuantity(string)`,
//! `sign(q)` and the members `isGreaterThan`, `isLessThan`, `compareTo`,
//! `asApproximateFloat`, `asInteger`, `isInteger`, `add` and `sub` (with a
//! quantity or an int). Quantities compare by value: `quantity('1') ==
//! quantity('1000m')`.
//!
//! Values are held exactly in nano units (what `ParseQuantity` keeps);
//! quantities beyond ±1.7e29 are refused as out of range, where upstream's
//! arbitrary precision would still hold them.

use cel::common::types::{INT_TYPE, STRING_TYPE};
use cel::objects::Opaque;
use cel::{DeclarationError, Env, ExecutionError, Value};

use super::values::{err, int_arg, opaque, opaque_arg, opaque_type, overload, str_arg};

/// The CEL type name (upstream `apiservercel.QuantityType`).
pub const TYPE_NAME: &str = "kubernetes.Quantity";
const NANOS: i128 = 1_000_000_000;

/// A quantity in nano units.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Quantity {
    nanos: i128,
}

impl Opaque for Quantity {
    fn runtime_type_name(&self) -> &str {
        TYPE_NAME
    }
}

impl Quantity {
    /// Parses `text` as `resource.ParseQuantity` does; the error is its
    /// message.
    pub fn parse(text: &str) -> Result<Quantity, String> {
        let (negative, mantissa, exponent) =
            crate::quantity::decimal(text).ok_or_else(|| crate::quantity::SYNTAX_ERROR.to_string())?;
        let out_of_range = || format!("quantity {text:?} is out of range");
        let shift = u32::try_from(exponent + 9).map_err(|_| out_of_range())?;
        let magnitude = 10u128
            .checked_pow(shift)
            .and_then(|p| mantissa.checked_mul(p))
            .and_then(|m| i128::try_from(m).ok())
            .ok_or_else(out_of_range)?;
        Ok(Quantity { nanos: if negative { -magnitude } else { magnitude } })
    }

    fn from_int(n: i64) -> Quantity {
        Quantity { nanos: i128::from(n) * NANOS }
    }

    /// `AsInt64`: the value if it is a whole number that fits an int.
    fn as_int(&self) -> Option<i64> {
        (self.nanos % NANOS == 0).then(|| i64::try_from(self.nanos / NANOS).ok()).flatten()
    }
}

fn q(args: &[Value], i: usize) -> Result<Quantity, ExecutionError> {
    opaque_arg::<Quantity>(args, i).copied()
}

/// The other operand of `add`/`sub`: a quantity or an int.
fn operand(args: &[Value]) -> Result<Quantity, ExecutionError> {
    match args.get(1) {
        Some(Value::Int(_)) => Ok(Quantity::from_int(int_arg(args, 1)?)),
        _ => q(args, 1),
    }
}

fn checked(nanos: Option<i128>) -> Result<Value, ExecutionError> {
    nanos.map(|nanos| opaque(Quantity { nanos })).ok_or_else(|| err("quantity overflow"))
}

overload!(to_quantity, |a| Quantity::parse(str_arg(a, 0)?).map(opaque).map_err(err));
overload!(is_quantity, |a| Ok(Value::Bool(Quantity::parse(str_arg(a, 0)?).is_ok())));
overload!(sign, |a| Ok(Value::Int(q(a, 0)?.nanos.signum() as i64)));
overload!(is_greater_than, |a| Ok(Value::Bool(q(a, 0)? > q(a, 1)?)));
overload!(is_less_than, |a| Ok(Value::Bool(q(a, 0)? < q(a, 1)?)));
overload!(compare_to, |a| Ok(Value::Int(q(a, 0)?.nanos.cmp(&q(a, 1)?.nanos) as i64)));
overload!(as_approximate_float, |a| Ok(Value::Float(q(a, 0)?.nanos as f64 / NANOS as f64)));
overload!(as_integer, |a| q(a, 0)?.as_int().map(Value::Int).ok_or_else(|| err("cannot convert value to integer")));
overload!(is_integer, |a| Ok(Value::Bool(q(a, 0)?.as_int().is_some())));
overload!(add, |a| checked(q(a, 0)?.nanos.checked_add(operand(a)?.nanos)));
overload!(sub, |a| checked(q(a, 0)?.nanos.checked_sub(operand(a)?.nanos)));

impl PartialOrd for Quantity {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Quantity {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.nanos.cmp(&other.nanos)
    }
}

/// Registers the library on `env`.
pub fn register(env: &mut Env) -> Result<(), DeclarationError> {
    let t = || opaque_type(TYPE_NAME);
    env.add_overload("quantity", "string_to_quantity", vec![STRING_TYPE], to_quantity)?;
    env.add_overload("isQuantity", "is_quantity_string", vec![STRING_TYPE], is_quantity)?;
    env.add_overload("sign", "quantity_sign", vec![t()], sign)?;
    env.add_member_overload("isGreaterThan", "quantity_is_greater_than", t(), vec![t()], is_greater_than)?;
    env.add_member_overload("isLessThan", "quantity_is_less_than", t(), vec![t()], is_less_than)?;
    env.add_member_overload("compareTo", "quantity_compare_to", t(), vec![t()], compare_to)?;
    env.add_member_overload("asApproximateFloat", "quantity_get_float", t(), vec![], as_approximate_float)?;
    env.add_member_overload("asInteger", "quantity_get_int", t(), vec![], as_integer)?;
    env.add_member_overload("isInteger", "quantity_is_integer", t(), vec![], is_integer)?;
    env.add_member_overload("add", "quantity_add", t(), vec![t()], add)?;
    env.add_member_overload("add", "quantity_add_int", t(), vec![INT_TYPE], add)?;
    env.add_member_overload("sub", "quantity_sub", t(), vec![t()], sub)?;
    env.add_member_overload("sub", "quantity_sub_int", t(), vec![INT_TYPE], sub)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::tests::eval_str;
    use serde_json::json;

    #[test]
    fn quantities_compare_and_convert_as_upstream_documents() {
        // Examples from upstream's library/quantity.go documentation.
        let cases = [
            ("quantity('50M').isGreaterThan(quantity('50Mi'))", json!(false)),
            ("quantity('50Mi').isGreaterThan(quantity('50M'))", json!(true)),
            ("quantity('50M').isLessThan(quantity('100M'))", json!(true)),
            ("quantity('200M').compareTo(quantity('0.2G'))", json!(0)),
            ("quantity('50M').compareTo(quantity('50Mi'))", json!(-1)),
            ("quantity('50Mi').compareTo(quantity('50M'))", json!(1)),
            ("quantity('50k').add(20).compareTo(quantity('50020'))", json!(0)),
            ("quantity('50k').sub(quantity('20k')) == quantity('30k')", json!(true)),
            ("quantity('50k').sub(20) == quantity('49980')", json!(true)),
            ("quantity('1.5').asApproximateFloat()", json!(1.5)),
            ("quantity('50k').asInteger()", json!(50000)),
            ("quantity('50k').isInteger()", json!(true)),
            ("quantity('1.5').isInteger()", json!(false)),
            ("quantity('50m').isInteger()", json!(false)),
            ("sign(quantity('-50k'))", json!(-1)),
            ("sign(quantity('0'))", json!(0)),
            ("isQuantity('1.3G')", json!(true)),
            ("isQuantity('1.3Gi')", json!(true)),
            ("isQuantity('1,3G')", json!(false)),
            ("isQuantity('10000k')", json!(true)),
            ("isQuantity('200K')", json!(false)),
            ("quantity('1') == quantity('1000m')", json!(true)),
        ];
        for (src, want) in cases {
            assert_eq!(eval_str(src), Ok(want), "{src}");
        }
    }

    #[test]
    fn errors_carry_upstream_messages() {
        assert_eq!(eval_str("quantity('50m').asInteger()"), Err("cannot convert value to integer".into()));
        assert_eq!(
            eval_str("quantity('1,3G')"),
            Err("quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'".into())
        );
    }
}
