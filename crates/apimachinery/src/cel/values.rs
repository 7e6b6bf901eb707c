//! Plumbing the Kubernetes libraries share: overloads written over the
//! `cel::Value` enum, the opaque types they return, and their errors.
//!
//! The cel crate calls overloads as plain `fn` pointers over its `Val`
//! values; [`overload!`] wraps a `fn(&[Value]) -> Result<Value, _>` into
//! one, converting the arguments and the result.

use std::sync::Arc;

use cel::common::types::Type;
use cel::objects::Opaque;
use cel::{ExecutionError, Value};

/// Declares `fn $name` as a cel overload running `$body` (a closure over
/// the arguments as `&[Value]`, receiver first, returning
/// `Result<Value, ExecutionError>`).
macro_rules! overload {
    ($name:ident, $body:expr) => {
        fn $name<'b, 'v>(
            args: Vec<cel::common::value::CowVal<'b, 'v>>,
        ) -> Result<cel::common::value::CowVal<'b, 'v>, cel::ExecutionError> {
            let values =
                args.iter().map(|a| cel::Value::try_from(a.as_ref())).collect::<Result<Vec<cel::Value>, _>>()?;
            let body: fn(&[cel::Value]) -> Result<cel::Value, cel::ExecutionError> = $body;
            let out: Box<dyn cel::common::value::Val> = body(&values)?.try_into()?;
            Ok(cel::common::value::CowVal::from(out))
        }
    };
}
pub(crate) use overload;

/// An evaluation error carrying upstream's message as is (the expression's
/// error text is the message alone, as cel-go's).
pub(crate) fn err(message: impl Into<String>) -> ExecutionError {
    ExecutionError::function_error("", message.into())
}

/// The string argument at `i` (the overload was declared with `string`).
pub(crate) fn str_arg(args: &[Value], i: usize) -> Result<&str, ExecutionError> {
    match args.get(i) {
        Some(Value::String(s)) => Ok(s.as_str()),
        other => Err(err(format!("no such overload: expected string, got {other:?}"))),
    }
}

/// The int argument at `i`.
pub(crate) fn int_arg(args: &[Value], i: usize) -> Result<i64, ExecutionError> {
    match args.get(i) {
        Some(Value::Int(n)) => Ok(*n),
        other => Err(err(format!("no such overload: expected int, got {other:?}"))),
    }
}

/// The opaque argument at `i`, as the library type `T`.
pub(crate) fn opaque_arg<T: Opaque>(args: &[Value], i: usize) -> Result<&T, ExecutionError> {
    match args.get(i) {
        Some(Value::Opaque(o)) => {
            o.downcast_ref::<T>().ok_or_else(|| err(format!("no such overload for {}", o.runtime_type_name())))
        }
        other => Err(err(format!("no such overload: got {other:?}"))),
    }
}

/// `v` as a CEL value of its opaque type.
pub(crate) fn opaque<T: Opaque>(v: T) -> Value {
    Value::Opaque(Arc::new(v))
}

/// The declared type of an opaque library type named `name`
/// (`kubernetes.Quantity`, `net.IP`, …).
pub(crate) fn opaque_type(name: &'static str) -> Type {
    Type::new_opaque_type(name)
}

/// A list of strings.
pub(crate) fn string_list<S: Into<String>>(items: impl IntoIterator<Item = S>) -> Value {
    Value::List(Arc::new(items.into_iter().map(|s| Value::String(Arc::new(s.into()))).collect()))
}
