//! Decoding of `application/vnd.kubernetes.protobuf` request bodies into
//! the JSON value the same object has in `application/json`.
//!
//! kubectl's typed clientset (`create configmap`, `create deployment`,
//! `create token`, `auth can-i`, `auth whoami`, …) sends built-in objects
//! as protobuf. Upstream's wire format:
//!
//! 1. the four magic bytes `k8s\0` (`6b 38 73 00`);
//! 2. a `runtime.Unknown` message: `typeMeta` = 1 (`apiVersion` = 1,
//!    `kind` = 2), `raw` = 2 (the object's own message), `contentEncoding`
//!    = 3, `contentType` = 4.
//!
//! The object message follows the Go struct: every field of the struct
//! has a number (its `protobuf:"…"` tag); non-pointer scalars and structs
//! are always written, even when empty, pointers only when set; maps are
//! repeated `{key = 1, value = 2}` entries. Special types:
//! `metav1.Time` is `{seconds = 1, nanos = 2}` (RFC 3339 in JSON, `null`
//! when zero), `resource.Quantity` is `{string = 1}`, `intstr.IntOrString`
//! is `{type = 1, intVal = 2, strVal = 3}`, `metav1.FieldsV1` is
//! `{Raw = 1}` (JSON text), `ExtraValue` is `{items = 1}` (a string list)
//! and `[]byte` is base64 text in JSON.
//!
//! rkube does not generate Rust types for these messages: a table
//! ([`schema`]) lists, per message, each field's number, JSON name,
//! cardinality and type, and [`decode_object`] walks the wire data with it
//! to build exactly the JSON that Go's `encoding/json` would write for the
//! same struct (zero values of `omitempty` value fields left out, pointers
//! kept even when zero). Everything downstream — typed pruning,
//! defaulting, validation — is then the JSON path's. Unknown field numbers
//! are skipped, as protobuf decoders do.

use base64::Engine as _;
use serde_json::{Map, Value};

mod schema;
#[cfg(test)]
mod tests;

/// The media type of Kubernetes protobuf bodies.
pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// The prefix of every Kubernetes protobuf body (`"k8s\0"`).
pub const MAGIC: [u8; 4] = *b"k8s\x00";

/// Deepest message nesting accepted (the built-in kinds need about 15).
const MAX_DEPTH: usize = 64;

/// A malformed protobuf body, in words close to upstream's.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ProtobufError(pub String);

fn err<T>(why: impl Into<String>) -> Result<T, ProtobufError> {
    Err(ProtobufError(why.into()))
}

/// One protobuf message of the table: a Go struct of the API.
#[derive(Debug)]
pub struct Message {
    /// `<package>.<Type>` (`core.Container`, `meta.ObjectMeta`).
    pub name: &'static str,
    /// The struct's fields, by ascending number.
    pub fields: &'static [Field],
}

/// One field of a [`Message`].
#[derive(Debug)]
pub struct Field {
    /// The protobuf field number.
    pub num: u32,
    /// The JSON name (empty for [`Card::Inline`]).
    pub json: &'static str,
    /// Cardinality and Go shape, which decide how zero values appear.
    pub card: Card,
    /// The element type.
    pub ty: Ty,
}

/// How a field is held in the Go struct.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Card {
    /// A value field with `omitempty`: a zero scalar is left out of JSON.
    Opt,
    /// A value field without `omitempty`: always in JSON.
    Req,
    /// A pointer: in JSON whenever it is on the wire, even when zero.
    Ptr,
    /// A slice (`repeated`; packed scalars accepted too).
    Rep,
    /// A `map[string]T`: repeated `{key = 1, value = 2}` entries.
    Map,
    /// An embedded struct with `json:",inline"`: its fields join the parent.
    Inline,
}

/// The type of a field's value.
#[derive(Clone, Copy, Debug)]
pub enum Ty {
    /// A string (`string` or a named string type).
    Str,
    /// `[]byte`: length-delimited, base64 in JSON.
    Bytes,
    /// A bool (varint).
    Bool,
    /// An `int32`/`int64` (varint, two's complement).
    Int,
    /// `metav1.Time`: `{seconds = 1, nanos = 2}`.
    Time,
    /// `resource.Quantity`: `{string = 1}`.
    Quantity,
    /// `intstr.IntOrString`: `{type = 1, intVal = 2, strVal = 3}`.
    IntOrStr,
    /// `metav1.FieldsV1`: `{Raw = 1}` holding JSON text.
    FieldsV1,
    /// `ExtraValue` (a named `[]string`): `{items = 1}`.
    Strs,
    /// A nested message.
    M(&'static Message),
}

/// The decoded `runtime.Unknown` envelope of a protobuf body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Envelope<'a> {
    /// `typeMeta.apiVersion` (may be empty).
    pub api_version: String,
    /// `typeMeta.kind` (may be empty).
    pub kind: String,
    /// The object's message bytes.
    pub raw: &'a [u8],
    /// `contentEncoding` (upstream writes it empty).
    pub content_encoding: String,
    /// `contentType` (upstream writes it empty).
    pub content_type: String,
}

/// Whether protobuf bodies of `apiVersion`/`kind` can be decoded.
pub fn supports(api_version: &str, kind: &str) -> bool {
    root(api_version, kind).is_some()
}

fn root(api_version: &str, kind: &str) -> Option<&'static Message> {
    schema::ROOTS.iter().find(|(v, k, _)| *v == api_version && *k == kind).map(|(_, _, m)| *m)
}

/// Splits a body into its `runtime.Unknown` envelope; an error when the
/// magic prefix is missing or the envelope is malformed.
pub fn envelope(body: &[u8]) -> Result<Envelope<'_>, ProtobufError> {
    let Some(rest) = body.strip_prefix(&MAGIC) else {
        let prefix = MAGIC.map(|b| b.to_string()).join(" ");
        return err(format!("provided data does not appear to be a protobuf message, expected prefix [{prefix}]"));
    };
    let mut env = Envelope {
        api_version: String::new(),
        kind: String::new(),
        raw: &[],
        content_encoding: String::new(),
        content_type: String::new(),
    };
    let mut r = Reader::new(rest);
    while let Some((num, wire)) = r.key()? {
        match (num, wire) {
            (1, WIRE_LEN) => {
                let mut tm = Reader::new(r.bytes()?);
                while let Some((n, w)) = tm.key()? {
                    match (n, w) {
                        (1, WIRE_LEN) => env.api_version = tm.string()?,
                        (2, WIRE_LEN) => env.kind = tm.string()?,
                        _ => tm.skip(w)?,
                    }
                }
            }
            (2, WIRE_LEN) => env.raw = r.bytes()?,
            (3, WIRE_LEN) => env.content_encoding = r.string()?,
            (4, WIRE_LEN) => env.content_type = r.string()?,
            (1..=4, _) => return err(format!("runtime.Unknown: wrong wire type {wire} for field {num}")),
            _ => r.skip(wire)?,
        }
    }
    if !env.content_encoding.is_empty() {
        return err(format!("unsupported content encoding {:?}", env.content_encoding));
    }
    Ok(env)
}

/// Decodes the message of an `apiVersion`/`kind` object into its JSON
/// form, with `apiVersion` and `kind` set. `None` when the kind is not in
/// the table.
pub fn decode_object(api_version: &str, kind: &str, raw: &[u8]) -> Option<Result<Value, ProtobufError>> {
    let message = root(api_version, kind)?;
    Some(decode_message(message, raw, 0).map(|mut object| {
        object.insert("apiVersion".into(), Value::String(api_version.into()));
        object.insert("kind".into(), Value::String(kind.into()));
        Value::Object(object)
    }))
}

/// Decodes one message into a JSON object (see the module docs for how
/// zero values are treated).
fn decode_message(message: &Message, data: &[u8], depth: usize) -> Result<Map<String, Value>, ProtobufError> {
    if depth > MAX_DEPTH {
        return err(format!("{}: messages nested deeper than {MAX_DEPTH}", message.name));
    }
    let mut object = Map::new();
    let mut r = Reader::new(data);
    while let Some((num, wire)) = r.key()? {
        let Some(field) = message.fields.iter().find(|f| f.num == num) else {
            r.skip(wire)?;
            continue;
        };
        let context = |e: ProtobufError| ProtobufError(format!("{}.{}: {}", message.name, field.json, e.0));
        match field.card {
            Card::Opt | Card::Req | Card::Ptr => {
                let value = value(field.ty, wire, &mut r, depth).map_err(context)?;
                if field.card == Card::Opt && is_zero_scalar(field.ty, &value) {
                    object.remove(field.json);
                } else {
                    object.insert(field.json.into(), value);
                }
            }
            Card::Inline => {
                let Ty::M(inner) = field.ty else {
                    return err(format!("{}: inline field is not a message", message.name));
                };
                if wire != WIRE_LEN {
                    return Err(context(ProtobufError(format!("wrong wire type {wire}"))));
                }
                object.extend(decode_message(inner, r.bytes()?, depth + 1)?);
            }
            Card::Rep => {
                let slot = object.entry(field.json).or_insert(Value::Null);
                if !slot.is_array() {
                    *slot = Value::Array(Vec::new());
                }
                let Value::Array(items) = slot else { return err("repeated field is not a list") };
                if wire == WIRE_LEN && matches!(field.ty, Ty::Int | Ty::Bool) {
                    // packed encoding of a repeated scalar
                    let mut packed = Reader::new(r.bytes()?);
                    while !packed.done() {
                        items.push(value(field.ty, WIRE_VARINT, &mut packed, depth).map_err(context)?);
                    }
                } else {
                    items.push(value(field.ty, wire, &mut r, depth).map_err(context)?);
                }
            }
            Card::Map => {
                if wire != WIRE_LEN {
                    return Err(context(ProtobufError(format!("wrong wire type {wire}"))));
                }
                let mut entry = Reader::new(r.bytes()?);
                let (mut key, mut val) = (String::new(), None);
                while let Some((n, w)) = entry.key()? {
                    match n {
                        1 if w == WIRE_LEN => key = entry.string()?,
                        2 => val = Some(value(field.ty, w, &mut entry, depth).map_err(context)?),
                        _ => entry.skip(w)?,
                    }
                }
                let val = val.unwrap_or_else(|| zero_value(field.ty));
                let map = object.entry(field.json).or_insert_with(|| Value::Object(Map::new()));
                if let Value::Object(map) = map {
                    map.insert(key, val);
                }
            }
        }
    }
    Ok(object)
}

/// Whether `value` is the zero value of a scalar type (left out of JSON
/// for `omitempty` value fields). Structs are never omitted, as in Go.
fn is_zero_scalar(ty: Ty, value: &Value) -> bool {
    match ty {
        Ty::Str | Ty::Bytes => value.as_str() == Some(""),
        Ty::Bool => value == &Value::Bool(false),
        Ty::Int => value.as_i64() == Some(0),
        Ty::Time | Ty::Quantity | Ty::IntOrStr | Ty::FieldsV1 | Ty::Strs | Ty::M(_) => false,
    }
}

/// The JSON of a value that is absent from the wire (a map entry without
/// its value): Go's zero value of the type.
fn zero_value(ty: Ty) -> Value {
    match ty {
        Ty::Str | Ty::Bytes => Value::String(String::new()),
        Ty::Bool => Value::Bool(false),
        Ty::Int | Ty::IntOrStr => Value::from(0),
        Ty::Quantity => Value::String("0".into()),
        Ty::Time | Ty::FieldsV1 => Value::Null,
        Ty::Strs => Value::Array(Vec::new()),
        Ty::M(_) => Value::Object(Map::new()),
    }
}

/// Reads one value of type `ty` whose key carried `wire`.
fn value(ty: Ty, wire: u8, r: &mut Reader<'_>, depth: usize) -> Result<Value, ProtobufError> {
    let want = match ty {
        Ty::Bool | Ty::Int => WIRE_VARINT,
        _ => WIRE_LEN,
    };
    if wire != want {
        return err(format!("wrong wire type {wire}"));
    }
    Ok(match ty {
        Ty::Str => Value::String(r.string()?),
        Ty::Bytes => Value::String(base64::engine::general_purpose::STANDARD.encode(r.bytes()?)),
        Ty::Bool => Value::Bool(r.varint()? != 0),
        Ty::Int => Value::from(r.varint()? as i64),
        Ty::Time => time(r.bytes()?)?,
        Ty::Quantity => {
            let mut q = Reader::new(r.bytes()?);
            let mut text = String::from("0");
            while let Some((n, w)) = q.key()? {
                match (n, w) {
                    (1, WIRE_LEN) => text = q.string()?,
                    _ => q.skip(w)?,
                }
            }
            Value::String(text)
        }
        Ty::IntOrStr => {
            let mut q = Reader::new(r.bytes()?);
            let (mut is_string, mut int, mut string) = (false, 0i64, String::new());
            while let Some((n, w)) = q.key()? {
                match (n, w) {
                    (1, WIRE_VARINT) => is_string = q.varint()? == 1,
                    (2, WIRE_VARINT) => int = q.varint()? as i32 as i64,
                    (3, WIRE_LEN) => string = q.string()?,
                    _ => q.skip(w)?,
                }
            }
            if is_string {
                Value::String(string)
            } else {
                Value::from(int)
            }
        }
        Ty::FieldsV1 => {
            let mut q = Reader::new(r.bytes()?);
            let mut raw: &[u8] = b"null";
            while let Some((n, w)) = q.key()? {
                match (n, w) {
                    (1, WIRE_LEN) => raw = q.bytes()?,
                    _ => q.skip(w)?,
                }
            }
            if raw.is_empty() {
                Value::Null
            } else {
                serde_json::from_slice(raw).map_err(|e| ProtobufError(format!("fieldsV1 is not JSON: {e}")))?
            }
        }
        Ty::Strs => {
            let mut q = Reader::new(r.bytes()?);
            let mut items = Vec::new();
            while let Some((n, w)) = q.key()? {
                match (n, w) {
                    (1, WIRE_LEN) => items.push(Value::String(q.string()?)),
                    _ => q.skip(w)?,
                }
            }
            Value::Array(items)
        }
        Ty::M(message) => Value::Object(decode_message(message, r.bytes()?, depth + 1)?),
    })
}

/// `metav1.Time` from `{seconds = 1, nanos = 2}`: RFC 3339 in UTC with
/// whole seconds (Go's JSON form), `null` for the zero time.
fn time(data: &[u8]) -> Result<Value, ProtobufError> {
    let mut r = Reader::new(data);
    let (mut seconds, mut nanos) = (0i64, 0i64);
    while let Some((n, w)) = r.key()? {
        match (n, w) {
            (1, WIRE_VARINT) => seconds = r.varint()? as i64,
            (2, WIRE_VARINT) => nanos = r.varint()? as i32 as i64,
            _ => r.skip(w)?,
        }
    }
    if seconds == 0 && nanos == 0 {
        return Ok(Value::Null);
    }
    let t = jiff::Timestamp::from_second(seconds).map_err(|e| ProtobufError(format!("invalid time: {e}")))?;
    Ok(Value::String(crate::meta::format_time(t)))
}

const WIRE_VARINT: u8 = 0;
const WIRE_FIXED64: u8 = 1;
const WIRE_LEN: u8 = 2;
const WIRE_FIXED32: u8 = 5;

/// A cursor over protobuf wire data.
struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn new(data: &'a [u8]) -> Self {
        Reader { data, pos: 0 }
    }

    fn done(&self) -> bool {
        self.pos >= self.data.len()
    }

    fn varint(&mut self) -> Result<u64, ProtobufError> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let Some(&byte) = self.data.get(self.pos) else { return err("unexpected EOF") };
            self.pos += 1;
            value |= u64::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                return Ok(value);
            }
        }
        err("integer overflow")
    }

    /// The next field key, `None` at the end of the message.
    fn key(&mut self) -> Result<Option<(u32, u8)>, ProtobufError> {
        if self.done() {
            return Ok(None);
        }
        let key = self.varint()?;
        let num = u32::try_from(key >> 3).map_err(|_| ProtobufError("field number out of range".into()))?;
        if num == 0 {
            return err("illegal field number 0");
        }
        Ok(Some((num, (key & 7) as u8)))
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], ProtobufError> {
        let end = self.pos.checked_add(n).filter(|&end| end <= self.data.len());
        let Some(end) = end else { return err("unexpected EOF") };
        let out = &self.data[self.pos..end];
        self.pos = end;
        Ok(out)
    }

    fn bytes(&mut self) -> Result<&'a [u8], ProtobufError> {
        let len = self.varint()?;
        let len = usize::try_from(len).map_err(|_| ProtobufError("invalid length".into()))?;
        self.take(len)
    }

    fn string(&mut self) -> Result<String, ProtobufError> {
        Ok(String::from_utf8_lossy(self.bytes()?).into_owned())
    }

    /// Skips a field of an unknown number.
    fn skip(&mut self, wire: u8) -> Result<(), ProtobufError> {
        match wire {
            WIRE_VARINT => self.varint().map(drop),
            WIRE_FIXED64 => self.take(8).map(drop),
            WIRE_LEN => self.bytes().map(drop),
            WIRE_FIXED32 => self.take(4).map(drop),
            _ => err(format!("illegal wire type {wire}")),
        }
    }
}
