//! The Swagger 2.0 document as a gnostic `openapi.v2.Document` protobuf
//! message, which is what kubectl asks `/openapi/v2` for (Accept
//! `application/com.github.proto-openapi.spec.v2@v1.0+protobuf`) and what
//! upstream serves (`ToProtoBinary` in kube-openapi's handler).
//!
//! Field numbers follow gnostic's `openapiv2/OpenAPIv2.proto`. Values of
//! type `Any` (vendor extensions, defaults, enums, examples) carry their
//! value as YAML text in `Any.yaml`, as gnostic's compiler stores them;
//! JSON text is valid YAML, so the value's JSON is written there.
//! Only what a Kubernetes document uses is encoded: info, paths with their
//! operations, parameters and responses, definitions, and the security
//! scheme.

use serde_json::{Map, Value};

/// Encodes a Swagger 2.0 JSON document.
pub fn encode_document(doc: &Value) -> Vec<u8> {
    let mut w = Writer::default();
    let Some(doc) = doc.as_object() else { return w.buf };
    w.string(1, doc.get("swagger").and_then(Value::as_str).unwrap_or("2.0"));
    if let Some(info) = doc.get("info").and_then(Value::as_object) {
        w.message(2, |w| {
            w.opt_string(1, info.get("title"));
            w.opt_string(2, info.get("version"));
            w.opt_string(3, info.get("description"));
            vendor_extensions(w, 7, info);
        });
    }
    if let Some(paths) = doc.get("paths").and_then(Value::as_object) {
        w.message(8, |w| {
            for (path, item) in paths {
                if path.starts_with("x-") {
                    continue;
                }
                w.message(2, |w| {
                    w.string(1, path);
                    w.message(2, |w| path_item(w, item));
                });
            }
        });
    }
    if let Some(defs) = doc.get("definitions").and_then(Value::as_object) {
        w.message(9, |w| {
            for (name, schema) in defs {
                w.message(1, |w| named_schema(w, name, schema));
            }
        });
    }
    if let Some(security) = doc.get("security").and_then(Value::as_array) {
        for requirement in security.iter().filter_map(Value::as_object) {
            w.message(12, |w| {
                for (name, scopes) in requirement {
                    w.message(1, |w| {
                        w.string(1, name);
                        w.message(2, |w| {
                            for s in scopes.as_array().into_iter().flatten().filter_map(Value::as_str) {
                                w.string(1, s);
                            }
                        });
                    });
                }
            });
        }
    }
    if let Some(defs) = doc.get("securityDefinitions").and_then(Value::as_object) {
        w.message(13, |w| {
            for (name, def) in defs {
                let Some(def) = def.as_object() else { continue };
                if def.get("type").and_then(Value::as_str) != Some("apiKey") {
                    continue;
                }
                w.message(1, |w| {
                    w.string(1, name);
                    w.message(2, |w| {
                        // SecurityDefinitionsItem.api_key_security
                        w.message(2, |w| {
                            w.opt_string(1, def.get("type"));
                            w.opt_string(2, def.get("name"));
                            w.opt_string(3, def.get("in"));
                            w.opt_string(4, def.get("description"));
                            vendor_extensions(w, 5, def);
                        });
                    });
                });
            }
        });
    }
    vendor_extensions(&mut w, 16, doc);
    w.buf
}

fn path_item(w: &mut Writer, item: &Value) {
    let Some(item) = item.as_object() else { return };
    for (method, field) in
        [("get", 2), ("put", 3), ("post", 4), ("delete", 5), ("options", 6), ("head", 7), ("patch", 8)]
    {
        if let Some(op) = item.get(method).and_then(Value::as_object) {
            w.message(field, |w| operation(w, op));
        }
    }
    for p in item.get("parameters").and_then(Value::as_array).into_iter().flatten() {
        w.message(9, |w| parameters_item(w, p));
    }
    vendor_extensions(w, 10, item);
}

fn operation(w: &mut Writer, op: &Map<String, Value>) {
    w.strings(1, op.get("tags"));
    w.opt_string(2, op.get("summary"));
    w.opt_string(3, op.get("description"));
    w.opt_string(5, op.get("operationId"));
    w.strings(6, op.get("produces"));
    w.strings(7, op.get("consumes"));
    for p in op.get("parameters").and_then(Value::as_array).into_iter().flatten() {
        w.message(8, |w| parameters_item(w, p));
    }
    if let Some(responses) = op.get("responses").and_then(Value::as_object) {
        w.message(9, |w| {
            for (code, resp) in responses {
                let Some(resp) = resp.as_object() else { continue };
                w.message(1, |w| {
                    w.string(1, code);
                    // ResponseValue.response
                    w.message(2, |w| {
                        w.message(1, |w| {
                            w.opt_string(1, resp.get("description"));
                            if let Some(schema) = resp.get("schema") {
                                // SchemaItem.schema
                                w.message(2, |w| w.message(1, |w| schema_body(w, schema)));
                            }
                            vendor_extensions(w, 5, resp);
                        });
                    });
                });
            }
        });
    }
    w.strings(10, op.get("schemes"));
    w.opt_bool(11, op.get("deprecated"));
    vendor_extensions(w, 13, op);
}

/// `ParametersItem` → `Parameter` → body or non-body parameter.
fn parameters_item(w: &mut Writer, p: &Value) {
    let Some(p) = p.as_object() else { return };
    if let Some(r) = p.get("$ref") {
        w.message(2, |w| w.opt_string(1, Some(r)));
        return;
    }
    let location = p.get("in").and_then(Value::as_str).unwrap_or_default();
    w.message(1, |w| {
        if location == "body" {
            w.message(1, |w| {
                w.opt_string(1, p.get("description"));
                w.opt_string(2, p.get("name"));
                w.opt_string(3, p.get("in"));
                w.opt_bool(4, p.get("required"));
                if let Some(schema) = p.get("schema") {
                    w.message(5, |w| schema_body(w, schema));
                }
                vendor_extensions(w, 6, p);
            });
            return;
        }
        // NonBodyParameter: header 1, formData 2, query 3, path 4. The
        // sub-schemas share their first fields; `type` and the rest are
        // one field further in query/formData (which have allowEmptyValue 5).
        let (field, shift) = match location {
            "header" => (1, 0),
            "formData" => (2, 1),
            "path" => (4, 0),
            _ => (3, 1),
        };
        w.message(2, |w| {
            w.message(field, |w| {
                w.opt_bool(1, p.get("required"));
                w.opt_string(2, p.get("in"));
                w.opt_string(3, p.get("description"));
                w.opt_string(4, p.get("name"));
                w.opt_string(5 + shift, p.get("type"));
                w.opt_string(6 + shift, p.get("format"));
                w.opt_bool(19 + shift, p.get("uniqueItems"));
                vendor_extensions(w, 22 + shift, p);
            });
        });
    });
}

fn named_schema(w: &mut Writer, name: &str, schema: &Value) {
    w.string(1, name);
    w.message(2, |w| schema_body(w, schema));
}

/// The fields of a `Schema` message.
fn schema_body(w: &mut Writer, schema: &Value) {
    let Some(s) = schema.as_object() else { return };
    w.opt_string(1, s.get("$ref"));
    w.opt_string(2, s.get("format"));
    w.opt_string(3, s.get("title"));
    w.opt_string(4, s.get("description"));
    w.opt_any(5, s.get("default"));
    w.opt_double(6, s.get("multipleOf"));
    w.opt_double(7, s.get("maximum"));
    w.opt_bool(8, s.get("exclusiveMaximum"));
    w.opt_double(9, s.get("minimum"));
    w.opt_bool(10, s.get("exclusiveMinimum"));
    w.opt_int(11, s.get("maxLength"));
    w.opt_int(12, s.get("minLength"));
    w.opt_string(13, s.get("pattern"));
    w.opt_int(14, s.get("maxItems"));
    w.opt_int(15, s.get("minItems"));
    w.opt_bool(16, s.get("uniqueItems"));
    w.opt_int(17, s.get("maxProperties"));
    w.opt_int(18, s.get("minProperties"));
    w.strings(19, s.get("required"));
    for e in s.get("enum").and_then(Value::as_array).into_iter().flatten() {
        w.any(20, e);
    }
    match s.get("additionalProperties") {
        Some(Value::Bool(b)) => w.message(21, |w| w.bool(2, *b)),
        Some(sub @ Value::Object(_)) => w.message(21, |w| w.message(1, |w| schema_body(w, sub))),
        _ => {}
    }
    match s.get("type") {
        Some(Value::String(t)) => w.message(22, |w| w.string(1, t)),
        Some(Value::Array(ts)) => w.message(22, |w| {
            for t in ts.iter().filter_map(Value::as_str) {
                w.string(1, t);
            }
        }),
        _ => {}
    }
    match s.get("items") {
        Some(Value::Array(items)) => w.message(23, |w| {
            for i in items {
                w.message(1, |w| schema_body(w, i));
            }
        }),
        Some(item @ Value::Object(_)) => w.message(23, |w| w.message(1, |w| schema_body(w, item))),
        _ => {}
    }
    for sub in s.get("allOf").and_then(Value::as_array).into_iter().flatten() {
        w.message(24, |w| schema_body(w, sub));
    }
    if let Some(props) = s.get("properties").and_then(Value::as_object) {
        w.message(25, |w| {
            for (name, sub) in props {
                w.message(1, |w| named_schema(w, name, sub));
            }
        });
    }
    w.opt_string(26, s.get("discriminator"));
    w.opt_bool(27, s.get("readOnly"));
    if let Some(docs) = s.get("externalDocs").and_then(Value::as_object) {
        w.message(29, |w| {
            w.opt_string(1, docs.get("description"));
            w.opt_string(2, docs.get("url"));
        });
    }
    w.opt_any(30, s.get("example"));
    vendor_extensions(w, 31, s);
}

/// `x-…` keys as repeated `NamedAny` in `field`.
fn vendor_extensions(w: &mut Writer, field: u32, map: &Map<String, Value>) {
    for (k, v) in map {
        if k.starts_with("x-") {
            w.message(field, |w| {
                w.string(1, k);
                w.message(2, |w| any_body(w, v));
            });
        }
    }
}

/// An `Any` message: the value's YAML text in field 2.
fn any_body(w: &mut Writer, v: &Value) {
    let text = match v {
        Value::String(s) => format!("{}\n", serde_json::to_string(s).unwrap_or_default()),
        other => format!("{other}\n"),
    };
    w.string(2, &text);
}

/// A minimal protobuf writer: nested messages are written into a scratch
/// buffer and then copied with their length prefix.
#[derive(Default)]
struct Writer {
    buf: Vec<u8>,
}

impl Writer {
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.buf.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.buf.push(v as u8);
    }

    fn key(&mut self, field: u32, wire_type: u8) {
        self.varint((u64::from(field) << 3) | u64::from(wire_type));
    }

    fn bytes(&mut self, field: u32, data: &[u8]) {
        self.key(field, 2);
        self.varint(data.len() as u64);
        self.buf.extend_from_slice(data);
    }

    fn string(&mut self, field: u32, s: &str) {
        self.bytes(field, s.as_bytes());
    }

    fn opt_string(&mut self, field: u32, v: Option<&Value>) {
        if let Some(s) = v.and_then(Value::as_str).filter(|s| !s.is_empty()) {
            self.string(field, s);
        }
    }

    fn strings(&mut self, field: u32, v: Option<&Value>) {
        for s in v.and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str) {
            self.string(field, s);
        }
    }

    fn bool(&mut self, field: u32, b: bool) {
        self.key(field, 0);
        self.varint(u64::from(b));
    }

    fn opt_bool(&mut self, field: u32, v: Option<&Value>) {
        if let Some(true) = v.and_then(Value::as_bool) {
            self.bool(field, true);
        }
    }

    fn opt_int(&mut self, field: u32, v: Option<&Value>) {
        if let Some(i) = v.and_then(Value::as_i64) {
            self.key(field, 0);
            self.varint(i as u64);
        }
    }

    fn opt_double(&mut self, field: u32, v: Option<&Value>) {
        if let Some(d) = v.and_then(Value::as_f64) {
            self.key(field, 1);
            self.buf.extend_from_slice(&d.to_le_bytes());
        }
    }

    fn any(&mut self, field: u32, v: &Value) {
        self.message(field, |w| any_body(w, v));
    }

    fn opt_any(&mut self, field: u32, v: Option<&Value>) {
        if let Some(v) = v {
            self.any(field, v);
        }
    }

    fn message(&mut self, field: u32, body: impl FnOnce(&mut Writer)) {
        let mut inner = Writer { buf: Vec::new() };
        body(&mut inner);
        self.bytes(field, &inner.buf);
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;

    /// A tiny protobuf reader for the tests: (field, wire type, payload).
    pub(crate) fn fields(mut b: &[u8]) -> Vec<(u32, u8, Vec<u8>)> {
        fn varint(b: &mut &[u8]) -> u64 {
            let mut v = 0u64;
            let mut shift = 0;
            loop {
                let byte = b[0];
                *b = &b[1..];
                v |= u64::from(byte & 0x7f) << shift;
                if byte < 0x80 {
                    return v;
                }
                shift += 7;
            }
        }
        let mut out = Vec::new();
        while !b.is_empty() {
            let key = varint(&mut b);
            let (field, wt) = ((key >> 3) as u32, (key & 7) as u8);
            let payload = match wt {
                0 => varint(&mut b).to_le_bytes().to_vec(),
                1 => {
                    let p = b[..8].to_vec();
                    b = &b[8..];
                    p
                }
                2 => {
                    let len = varint(&mut b) as usize;
                    let p = b[..len].to_vec();
                    b = &b[len..];
                    p
                }
                _ => panic!("unexpected wire type {wt}"),
            };
            out.push((field, wt, payload));
        }
        out
    }

    fn field(b: &[u8], n: u32) -> Vec<Vec<u8>> {
        fields(b).into_iter().filter(|(f, _, _)| *f == n).map(|(_, _, p)| p).collect()
    }

    #[test]
    fn definitions_with_types_properties_and_extensions() {
        let doc = json!({
            "swagger": "2.0",
            "info": {"title": "Kubernetes", "version": "v1.33.0"},
            "definitions": {
                "io.k8s.api.core.v1.Pod": {
                    "description": "Pod is …",
                    "type": "object",
                    "properties": {
                        "spec": {"$ref": "#/definitions/io.k8s.api.core.v1.PodSpec", "description": "Spec"},
                        "tags": {"type": "array", "items": {"type": "string"}, "x-kubernetes-patch-strategy": "merge"}
                    },
                    "x-kubernetes-group-version-kind": [{"group": "", "kind": "Pod", "version": "v1"}]
                }
            }
        });
        let pb = encode_document(&doc);
        assert_eq!(field(&pb, 1), vec![b"2.0".to_vec()]);
        let defs = &field(&pb, 9)[0];
        let named = &field(defs, 1)[0];
        assert_eq!(field(named, 1)[0], b"io.k8s.api.core.v1.Pod");
        let schema = &field(named, 2)[0];
        assert_eq!(field(schema, 4)[0], "Pod is …".as_bytes());
        assert_eq!(field(&field(schema, 22)[0], 1)[0], b"object");
        let ext = &field(schema, 31)[0];
        assert_eq!(field(ext, 1)[0], b"x-kubernetes-group-version-kind");
        let yaml = String::from_utf8(field(&field(ext, 2)[0], 2)[0].clone()).unwrap();
        let parsed: Value = serde_json::from_str(&yaml).unwrap();
        assert_eq!(parsed, json!([{"group": "", "kind": "Pod", "version": "v1"}]));
        let props = field(&field(schema, 25)[0], 1);
        assert_eq!(props.len(), 2);
        let spec = &field(&props[0], 2)[0];
        assert_eq!(field(spec, 1)[0], b"#/definitions/io.k8s.api.core.v1.PodSpec");
    }
}
