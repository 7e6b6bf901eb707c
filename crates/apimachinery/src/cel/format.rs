//! Kubernetes' CEL format library (upstream `library/format.go`):
//! `format.named(name)` (an optional format), one `format.<name>()` per
//! format, and `<Format>.validate(string)`, which is `optional.none()` for
//! a valid string and else the optional list of upstream's validation
//! messages.
//!
//! Formats: `dns1123Label`, `dns1123Subdomain`, `dns1035Label`,
//! `qualifiedName`, `dns1123LabelPrefix`, `dns1123SubdomainPrefix`,
//! `dns1035LabelPrefix`, `labelValue`, `uri`, `uuid`, `byte`, `date`,
//! `datetime`.

use std::sync::Arc;

use base64::Engine;
use cel::common::types::STRING_TYPE;
use cel::objects::{Opaque, OptionalValue};
use cel::{DeclarationError, Env, Value};

use super::values::{opaque, opaque_arg, opaque_type, overload, str_arg, string_list};
use crate::validation::names::{
    is_dns1035_label, is_dns1123_label, is_dns1123_subdomain, is_qualified_name, is_valid_label_value,
    mask_trailing_dash,
};

/// The format type's name (upstream `apiservercel.FormatType`).
pub const TYPE_NAME: &str = "kubernetes.NamedFormat";

/// The formats by their CEL name (upstream `ConstantFormats`).
pub const NAMES: [&str; 13] = [
    "dns1123Label",
    "dns1123Subdomain",
    "dns1035Label",
    "qualifiedName",
    "dns1123LabelPrefix",
    "dns1123SubdomainPrefix",
    "dns1035LabelPrefix",
    "labelValue",
    "uri",
    "uuid",
    "byte",
    "date",
    "datetime",
];

/// A named format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Format(&'static str);

impl Opaque for Format {
    fn runtime_type_name(&self) -> &str {
        TYPE_NAME
    }
}

fn check(ok: bool, message: &str) -> Vec<String> {
    if ok {
        Vec::new()
    } else {
        vec![message.to_string()]
    }
}

/// strfmt's UUID: 8-4-4-4-12 hex digits, dashes optional.
fn is_uuid(s: &str) -> bool {
    let hex: String = s.chars().filter(|c| *c != '-').collect();
    let groups: Vec<&str> = s.split('-').collect();
    let dashes_ok = groups.len() == 1 || groups.iter().map(|g| g.len()).eq([8, 4, 4, 4, 12]);
    hex.len() == 32 && hex.chars().all(|c| c.is_ascii_hexdigit()) && dashes_ok
}

impl Format {
    /// The validation messages for `s` (empty when valid).
    pub fn validate(&self, s: &str) -> Vec<String> {
        match self.0 {
            "dns1123Label" => is_dns1123_label(s),
            "dns1123Subdomain" => is_dns1123_subdomain(s),
            "dns1035Label" => is_dns1035_label(s),
            "qualifiedName" => is_qualified_name(s),
            "dns1123LabelPrefix" => is_dns1123_label(&mask_trailing_dash(s)),
            "dns1123SubdomainPrefix" => is_dns1123_subdomain(&mask_trailing_dash(s)),
            "dns1035LabelPrefix" => is_dns1035_label(&mask_trailing_dash(s)),
            "labelValue" => is_valid_label_value(s),
            "uri" => super::url::parse(s).err().into_iter().collect(),
            "uuid" => check(is_uuid(s), "does not match the UUID format"),
            "byte" => check(base64::engine::general_purpose::STANDARD.decode(s).is_ok(), "invalid base64"),
            "date" => check(s.len() == 10 && s.parse::<jiff::civil::Date>().is_ok(), "invalid date"),
            "datetime" => check(s.parse::<jiff::Timestamp>().is_ok(), "invalid datetime"),
            _ => Vec::new(),
        }
    }
}

fn optional(v: Option<Value>) -> Value {
    Value::Opaque(Arc::new(match v {
        Some(v) => OptionalValue::of(v),
        None => OptionalValue::none(),
    }))
}

overload!(named, |a| {
    let name = str_arg(a, 0)?;
    Ok(optional(NAMES.iter().find(|n| **n == name).map(|n| opaque(Format(n)))))
});
overload!(validate, |a| {
    let errors = opaque_arg::<Format>(a, 0)?.validate(str_arg(a, 1)?);
    Ok(optional((!errors.is_empty()).then(|| string_list(errors))))
});

macro_rules! constant_formats {
    ($($fn_name:ident => $name:literal),* $(,)?) => {
        $(overload!($fn_name, |_| Ok(opaque(Format($name))));)*
        /// `format.<name>()` for every format.
        const CONSTANTS: [(&str, cel::common::functions::Function); 13] = [
            $((concat!("format.", $name), $fn_name)),*
        ];
    };
}

constant_formats! {
    dns1123_label => "dns1123Label",
    dns1123_subdomain => "dns1123Subdomain",
    dns1035_label => "dns1035Label",
    qualified_name => "qualifiedName",
    dns1123_label_prefix => "dns1123LabelPrefix",
    dns1123_subdomain_prefix => "dns1123SubdomainPrefix",
    dns1035_label_prefix => "dns1035LabelPrefix",
    label_value => "labelValue",
    uri => "uri",
    uuid => "uuid",
    byte => "byte",
    date => "date",
    datetime => "datetime",
}

/// Registers the library on `env`.
pub fn register(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_overload("format.named", "format-named", vec![STRING_TYPE], named)?;
    env.add_member_overload("validate", "format-validate", opaque_type(TYPE_NAME), vec![STRING_TYPE], validate)?;
    for (name, f) in CONSTANTS {
        env.add_overload(name, name, vec![], f)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::tests::eval_str;
    use serde_json::json;

    #[test]
    fn formats_validate_as_upstream_documents() {
        // Examples from upstream's library/format.go documentation.
        let cases = [
            ("format.named('dns1123Label').hasValue()", json!(true)),
            ("format.named('unknown').hasValue()", json!(false)),
            ("!format.dns1123Label().validate('my-label-name').hasValue()", json!(true)),
            ("format.named('dns1123Label').value().validate('my-label-name').hasValue()", json!(false)),
            ("format.dns1123Subdomain().validate('apiextensions.k8s.io').hasValue()", json!(false)),
            ("format.qualifiedName().validate('apiextensions.k8s.io/v1beta1').hasValue()", json!(false)),
            ("format.dns1123LabelPrefix().validate('my-label-prefix-').hasValue()", json!(false)),
            ("format.dns1123SubdomainPrefix().validate('mysubdomain.prefix.-').hasValue()", json!(false)),
            ("format.dns1035LabelPrefix().validate('my-label-prefix-').hasValue()", json!(false)),
            ("format.uri().validate('http://example.com').hasValue()", json!(false)),
            ("format.uuid().validate('123e4567-e89b-12d3-a456-426614174000').hasValue()", json!(false)),
            ("format.byte().validate('aGVsbG8=').hasValue()", json!(false)),
            ("format.date().validate('2021-01-01').hasValue()", json!(false)),
            ("format.datetime().validate('2021-01-01T00:00:00Z').hasValue()", json!(false)),
            ("format.dns1123Label().validate('A').hasValue()", json!(true)),
            ("format.uuid().validate('nope').value()", json!(["does not match the UUID format"])),
            ("format.byte().validate('!').value()", json!(["invalid base64"])),
            ("format.date().validate('2021-13-01').value()", json!(["invalid date"])),
            ("format.labelValue().validate('-x').value().size()", json!(1)),
        ];
        for (src, want) in cases {
            assert_eq!(eval_str(src), Ok(want), "{src}");
        }
        let msgs = eval_str("format.dns1123Label().validate('Not_Valid').value()").unwrap();
        assert_eq!(
            msgs,
            json!(["a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"])
        );
    }
}
