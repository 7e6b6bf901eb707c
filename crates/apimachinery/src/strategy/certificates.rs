//! CertificateSigningRequests (`certificates.k8s.io/v1`, no v1 defaults):
//! `ValidateCertificateSigningRequest{Create,Update}`
//! (`pkg/apis/certificates/validation`): a PEM `CERTIFICATE REQUEST` whose
//! signature verifies, known unique usages, a `domain/path` signer name
//! (`ValidateSignerName`), `expirationSeconds` ≥ 600, consistent status
//! conditions and PEM `CERTIFICATE` blocks in `status.certificate`.
//!
//! As upstream's strategy, a main update changes neither `spec` nor
//! `status`. Known gaps: the requester fields (`spec.username`, …) are not
//! filled from the caller; messages for DER that does not parse or a
//! signature that does not verify are Go's generic ones, not the exact
//! `crypto/x509` error of each case; the rule that only `/approval` may add
//! `Approved`/`Denied` is not enforced (updates cannot tell the two
//! subresources apart here).

use std::collections::HashSet;

use base64::Engine;
use serde_json::Value;
use x509_parser::certification_request::X509CertificationRequest;
use x509_parser::pem::Pem;
use x509_parser::prelude::FromDer;

use super::{copy_field, generic, Generic, Strategy};
use crate::errors::StatusCause;
use crate::validation::{is_dns1123_label, is_dns1123_subdomain, BadValue, ErrorList, FieldError, Path};

/// The key usages a request may name (sorted, as upstream lists them).
pub const KEY_USAGES: [&str; 23] = [
    "any",
    "cert sign",
    "client auth",
    "code signing",
    "content commitment",
    "crl sign",
    "data encipherment",
    "decipher only",
    "digital signature",
    "email protection",
    "encipher only",
    "ipsec end system",
    "ipsec tunnel",
    "ipsec user",
    "key agreement",
    "key encipherment",
    "microsoft sgc",
    "netscape sgc",
    "ocsp signing",
    "s/mime",
    "server auth",
    "signing",
    "timestamping",
];
/// The signer name only the v1beta1 API accepts.
const LEGACY_UNKNOWN_SIGNER: &str = "kubernetes.io/legacy-unknown";
/// Condition types whose status may only be `True`.
const TRUE_ONLY_TYPES: [&str; 3] = ["Approved", "Denied", "Failed"];

/// The strategy of CertificateSigningRequests.
#[derive(Clone, Debug)]
pub struct CertificateSigningRequest {
    flags: Generic,
}

impl CertificateSigningRequest {
    /// The strategy with upstream's flags (`/status` and `/approval`).
    #[allow(clippy::new_without_default)]
    pub fn new() -> CertificateSigningRequest {
        CertificateSigningRequest {
            flags: generic::for_builtin("certificates.k8s.io", "CertificateSigningRequest", true),
        }
    }
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// A `[]byte` field: `None` when absent (Go's nil), else its decoded bytes.
fn bytes_of(v: &Value, key: &str) -> Option<Vec<u8>> {
    let s = v.get(key)?.as_str()?;
    Some(base64::engine::general_purpose::STANDARD.decode(s).unwrap_or_else(|_| s.as_bytes().to_vec()))
}

/// Go's `%#v` of a `[]byte`: `[]byte{0x2d, 0x2d}`, `[]byte{}`, `[]byte(nil)`.
fn go_bytes(b: Option<&[u8]>) -> String {
    match b {
        None => "[]byte(nil)".into(),
        Some(b) => {
            let items: Vec<String> = b.iter().map(|x| format!("{x:#x}")).collect();
            format!("[]byte{{{}}}", items.join(", "))
        }
    }
}

/// `certificates.ParseCSR` and `CheckSignature`: the error text, if any.
fn check_request(pem: &[u8]) -> Option<String> {
    let block = match Pem::read(std::io::Cursor::new(pem)) {
        Ok((block, _)) if block.label == "CERTIFICATE REQUEST" => block,
        _ => return Some("PEM block type must be CERTIFICATE REQUEST".into()),
    };
    let Ok((_, csr)) = X509CertificationRequest::from_der(&block.contents) else {
        return Some("x509: malformed certificate request".into());
    };
    csr.verify_signature().err().map(|_| "x509: signature verification failure".into())
}

/// `validateCertificate` of `status.certificate`: PEM `CERTIFICATE` blocks
/// that parse, at least one.
fn check_certificate(pem: &[u8]) -> Option<String> {
    if pem.is_empty() {
        return None;
    }
    let mut blocks = 0;
    for block in Pem::iter_from_buffer(pem) {
        let Ok(block) = block else { break };
        if block.label != "CERTIFICATE" {
            return Some(format!(
                "only CERTIFICATE PEM blocks are allowed, found {}",
                crate::validation::go_quote(&block.label)
            ));
        }
        blocks += 1;
        if block.parse_x509().is_err() {
            return Some("x509: malformed certificate".into());
        }
    }
    (blocks == 0).then(|| "must contain at least one CERTIFICATE PEM block".into())
}

/// `ValidateSignerName`: `<fully qualified domain>/<path>`.
pub fn validate_signer_name(path: &Path, signer: &str) -> ErrorList {
    let mut errs = ErrorList::new();
    if signer.is_empty() {
        errs.push(FieldError::required(path, ""));
        return errs;
    }
    let segments: Vec<&str> = signer.split('/').collect();
    if segments.len() != 2 {
        errs.push(FieldError::invalid(
            path,
            signer,
            "must be a fully qualified domain and path of the form 'example.com/signer-name'",
        ));
        return errs;
    }
    let (domain, rest) = (segments[0], segments[1]);
    if domain.len() > 253 {
        errs.push(FieldError::too_long(path, 253));
    }
    let labels: Vec<&str> = domain.split('.').collect();
    for lbl in &labels {
        let msgs = is_dns1123_label(lbl);
        if !msgs.is_empty() {
            for m in msgs {
                errs.push(FieldError::invalid(
                    path,
                    domain,
                    &format!("validating label {}: {m}", crate::validation::go_quote(lbl)),
                ));
            }
            break;
        }
    }
    if labels.len() < 2 {
        errs.push(FieldError::invalid(path, domain, "should be a domain with at least two segments separated by dots"));
    }
    for lbl in rest.split('.') {
        let msgs = is_dns1123_subdomain(lbl);
        if !msgs.is_empty() {
            for m in msgs {
                errs.push(FieldError::invalid(
                    path,
                    rest,
                    &format!("validating label {}: {m}", crate::validation::go_quote(lbl)),
                ));
            }
            break;
        }
    }
    let max = 253 + (253 + 63 + 1) + 1;
    if signer.len() > max {
        errs.push(FieldError::too_long(path, max as i64));
    }
    errs
}

/// Upstream's `certificateValidationOptions`, each relaxed on update when
/// the stored object already breaks the rule.
#[derive(Clone, Copy, Debug, Default)]
struct Options {
    allow_both_approved_and_denied: bool,
    allow_legacy_signer: bool,
    allow_duplicate_condition_types: bool,
    allow_empty_condition_type: bool,
    allow_arbitrary_certificate: bool,
    allow_unknown_usages: bool,
    allow_duplicate_usages: bool,
}

fn conditions(obj: &Value) -> &[Value] {
    obj.pointer("/status/conditions").and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

fn usages(obj: &Value) -> Vec<&str> {
    obj.pointer("/spec/usages").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect()
}

fn certificate(obj: &Value) -> Vec<u8> {
    obj.get("status").and_then(|s| bytes_of(s, "certificate")).unwrap_or_default()
}

fn options(new: &Value, old: Option<&Value>) -> Options {
    let Some(old) = old else { return Options::default() };
    let types: Vec<&str> = conditions(old).iter().map(|c| str_of(c, "type")).collect();
    let mut seen = HashSet::new();
    let old_usages = usages(old);
    let mut seen_usages = HashSet::new();
    Options {
        allow_both_approved_and_denied: types.contains(&"Approved") && types.contains(&"Denied"),
        allow_legacy_signer: old.pointer("/spec/signerName").and_then(Value::as_str) == Some(LEGACY_UNKNOWN_SIGNER),
        allow_duplicate_condition_types: !types.iter().all(|t| seen.insert(*t)),
        allow_empty_condition_type: types.iter().any(|t| t.is_empty()),
        allow_arbitrary_certificate: certificate(new) == certificate(old)
            || check_certificate(&certificate(old)).is_some(),
        allow_unknown_usages: old_usages.iter().any(|u| !KEY_USAGES.contains(u)),
        allow_duplicate_usages: !old_usages.iter().all(|u| seen_usages.insert(*u)),
    }
}

/// `validateCertificateSigningRequest` minus `ObjectMeta`.
fn validate_csr(csr: &Value, opts: Options) -> ErrorList {
    let mut errs = ErrorList::new();
    let spec = csr.get("spec").unwrap_or(&Value::Null);
    let spec_path = Path::new("spec");
    let request = bytes_of(spec, "request");
    if let Some(msg) = check_request(request.as_deref().unwrap_or_default()) {
        errs.push(FieldError::invalid(&spec_path.child("request"), BadValue::Raw(go_bytes(request.as_deref())), &msg));
    }
    let usages = usages(csr);
    if usages.is_empty() {
        errs.push(FieldError::required(&spec_path.child("usages"), ""));
    }
    if !opts.allow_unknown_usages {
        for (i, u) in usages.iter().enumerate() {
            if !KEY_USAGES.contains(u) {
                errs.push(FieldError::not_supported(&spec_path.child("usages").index(i), *u, &KEY_USAGES));
            }
        }
    }
    if !opts.allow_duplicate_usages {
        let mut seen = HashSet::new();
        for (i, u) in usages.iter().enumerate() {
            if !seen.insert(*u) {
                errs.push(FieldError::duplicate(&spec_path.child("usages").index(i), *u));
            }
        }
    }
    let signer = str_of(spec, "signerName");
    if !opts.allow_legacy_signer && signer == LEGACY_UNKNOWN_SIGNER {
        errs.push(FieldError::invalid(
            &spec_path.child("signerName"),
            signer,
            "the legacy signerName is not allowed via this API version",
        ));
    } else {
        errs.extend(validate_signer_name(&spec_path.child("signerName"), signer));
    }
    if let Some(e) = spec.get("expirationSeconds").and_then(Value::as_i64).filter(|e| *e < 600) {
        errs.push(FieldError::invalid(
            &spec_path.child("expirationSeconds"),
            e,
            "may not specify a duration less than 600 seconds (10 minutes)",
        ));
    }
    errs.extend(validate_conditions(csr, opts));
    if !opts.allow_arbitrary_certificate {
        if let Some(msg) = check_certificate(&certificate(csr)) {
            errs.push(FieldError::invalid(&Path::new("status").child("certificate"), "<certificate data>", &msg));
        }
    }
    errs
}

/// `validateConditions` at `status.conditions`.
fn validate_conditions(csr: &Value, opts: Options) -> ErrorList {
    let mut errs = ErrorList::new();
    let path = Path::new("status").child("conditions");
    let (mut approved, mut denied) = (false, false);
    let mut seen = HashSet::new();
    for (i, c) in conditions(csr).iter().enumerate() {
        let (ty, status) = (str_of(c, "type"), str_of(c, "status"));
        if !opts.allow_empty_condition_type && ty.is_empty() {
            errs.push(FieldError::required(&path.index(i).child("type"), ""));
        }
        let allowed: &[&str] = if TRUE_ONLY_TYPES.contains(&ty) { &["True"] } else { &["False", "True", "Unknown"] };
        if status.is_empty() {
            errs.push(FieldError::required(&path.index(i).child("status"), ""));
        } else if !allowed.contains(&status) {
            errs.push(FieldError::not_supported(&path.index(i).child("status"), status, allowed));
        }
        if !opts.allow_both_approved_and_denied {
            let conflict = match ty {
                "Approved" => {
                    approved = true;
                    denied
                }
                "Denied" => {
                    denied = true;
                    approved
                }
                _ => false,
            };
            if conflict {
                errs.push(FieldError::invalid(
                    &path.index(i).child("type"),
                    ty,
                    "Approved and Denied conditions are mutually exclusive",
                ));
            }
        }
        if !opts.allow_duplicate_condition_types && !seen.insert(ty) {
            errs.push(FieldError::duplicate(&path.index(i).child("type"), ty));
        }
    }
    errs
}

impl Strategy for CertificateSigningRequest {
    /// Upstream's `PrepareForUpdate`: a main update keeps `spec` and `status`.
    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        copy_field(new, old, "spec");
        copy_field(new, old, "status");
    }

    fn validate_create(&self, obj: &Value) -> Vec<StatusCause> {
        validate_csr(obj, options(obj, None)).to_causes()
    }

    /// The update rules shared by the main resource, `/status` and
    /// `/approval`: existing `Approved`/`Denied`/`Failed` conditions stay,
    /// an issued certificate never changes.
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<StatusCause> {
        let mut errs = validate_csr(new, options(new, Some(old)));
        let cond_path = Path::new("status").child("conditions");
        for ty in TRUE_ONLY_TYPES {
            let count = |o: &Value| conditions(o).iter().filter(|c| str_of(c, "type") == ty).count();
            if count(new) < count(old) {
                errs.push(FieldError::forbidden(
                    &cond_path,
                    &format!("updates may not remove a condition of type {}", crate::validation::go_quote(ty)),
                ));
            }
        }
        let (new_cert, old_cert) = (certificate(new), certificate(old));
        if new_cert != old_cert && !old_cert.is_empty() {
            errs.push(FieldError::forbidden(
                &Path::new("status").child("certificate"),
                "updates may not modify existing certificate content",
            ));
        }
        errs.to_causes()
    }

    fn has_status_subresource(&self) -> bool {
        true
    }
    fn tracks_generation(&self) -> bool {
        self.flags.tracks_generation
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::strategy::cause_texts as texts;

    fn request_pem() -> String {
        let key = rcgen::KeyPair::generate().expect("key");
        let params = rcgen::CertificateParams::new(vec!["node.example".to_string()]).expect("params");
        params.serialize_request(&key).expect("csr").pem().expect("pem")
    }

    fn csr(request: &str, spec: Value) -> Value {
        let mut spec = spec;
        spec["request"] = json!(base64::engine::general_purpose::STANDARD.encode(request));
        json!({"metadata": {"name": "c"}, "spec": spec})
    }

    #[test]
    fn a_signed_request_is_valid() {
        let c = csr(&request_pem(), json!({"signerName": "example.com/signer", "usages": ["client auth"]}));
        assert!(CertificateSigningRequest::new().validate_create(&c).is_empty());
    }

    #[test]
    fn spec_rules() {
        let c = csr(
            "ab",
            json!({"signerName": "example/x/y", "usages": ["client auth", "client auth", "flying"],
                "expirationSeconds": 599}),
        );
        let mut want = vec![
            "spec.request: Invalid value: []byte{0x61, 0x62}: PEM block type must be CERTIFICATE REQUEST".to_string(),
            format!(
                r#"spec.usages[2]: Unsupported value: "flying": supported values: {}"#,
                KEY_USAGES.iter().map(|u| format!("{u:?}")).collect::<Vec<_>>().join(", ")
            ),
            r#"spec.usages[1]: Duplicate value: "client auth""#.to_string(),
        ];
        want.extend([
            r#"spec.signerName: Invalid value: "example/x/y": must be a fully qualified domain and path of the form 'example.com/signer-name'"#.to_string(),
            "spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 600 seconds (10 minutes)".to_string(),
        ]);
        assert_eq!(texts(CertificateSigningRequest::new().validate_create(&c)), want);
        let c = csr(&request_pem(), json!({"signerName": "example/signer", "usages": ["any"]}));
        assert_eq!(
            texts(CertificateSigningRequest::new().validate_create(&c)),
            vec![
                r#"spec.signerName: Invalid value: "example": should be a domain with at least two segments separated by dots"#
            ]
        );
        let c = csr(&request_pem(), json!({"signerName": LEGACY_UNKNOWN_SIGNER, "usages": ["any"]}));
        assert_eq!(
            texts(CertificateSigningRequest::new().validate_create(&c)),
            vec![
                r#"spec.signerName: Invalid value: "kubernetes.io/legacy-unknown": the legacy signerName is not allowed via this API version"#
            ]
        );
        let mut absent = csr("", json!({"signerName": "example.com/s", "usages": ["any"]}));
        absent["spec"].as_object_mut().unwrap().remove("request");
        assert_eq!(
            texts(CertificateSigningRequest::new().validate_create(&absent)),
            vec!["spec.request: Invalid value: []byte(nil): PEM block type must be CERTIFICATE REQUEST"]
        );
    }

    #[test]
    fn status_conditions_on_update() {
        let old = csr(&request_pem(), json!({"signerName": "example.com/s", "usages": ["any"]}));
        let mut new = old.clone();
        new["status"] = json!({"conditions": [
            {"type": "Approved", "status": "True"}, {"type": "Denied", "status": "False"}]});
        assert_eq!(
            texts(CertificateSigningRequest::new().validate_update(&new, &old)),
            vec![
                r#"status.conditions[1].status: Unsupported value: "False": supported values: "True""#,
                r#"status.conditions[1].type: Invalid value: "Denied": Approved and Denied conditions are mutually exclusive"#,
            ]
        );
        let mut approved = old.clone();
        approved["status"] = json!({"conditions": [{"type": "Approved", "status": "True"}]});
        assert_eq!(
            texts(CertificateSigningRequest::new().validate_update(&old, &approved)),
            vec![r#"status.conditions: Forbidden: updates may not remove a condition of type "Approved""#]
        );
        let mut bad_cert = approved.clone();
        bad_cert["status"]["certificate"] = json!(base64::engine::general_purpose::STANDARD.encode("junk"));
        assert_eq!(
            texts(CertificateSigningRequest::new().validate_update(&bad_cert, &approved)),
            vec![
                r#"status.certificate: Invalid value: "<certificate data>": must contain at least one CERTIFICATE PEM block"#
            ]
        );
    }
}
