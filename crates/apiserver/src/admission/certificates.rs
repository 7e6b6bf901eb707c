//! CertificateSigningRequest admission:
//!
//! - [`CsrRequester`]: the CSR registry's own `PrepareForCreate` (not an
//!   admission plugin upstream, but it needs the request's user, which
//!   only admission sees here): `spec.username`, `uid`, `groups` and
//!   `extra` are the authenticated requester's, whatever the client sent,
//!   and a new CSR has no status. The approver's SubjectAccessReview and
//!   the signers trust these fields, so a client must not choose them.
//!   On `/approval` only the conditions may change (the certificate is
//!   kept), on `/status` the Approved and Denied conditions are kept as
//!   they were (upstream's approval and status strategies).
//! - [`CertificateApproval`] and [`CertificateSigning`] (upstream's plugins
//!   of those names): approving or denying needs the `approve` verb, and
//!   issuing a certificate the `sign` verb, on `signers` named after the
//!   request's signer (or `<domain>/*`).
//! - [`CertificateSubjectRestriction`] (upstream's plugin of that name):
//!   refuses `kubernetes.io/kube-apiserver-client` requests for the
//!   `system:masters` group.

use std::sync::Arc;

use async_trait::async_trait;
use rkube_apimachinery::{ApiError, GroupResource};
use serde_json::{json, Value};

use super::{Attributes, Operation, Plugin};
use crate::authz::{self, Authorizer, Decision, ServerAuthorizer};

const GROUP: &str = "certificates.k8s.io";
const PLURAL: &str = "certificatesigningrequests";

/// Fills the requester fields of new CSRs from the authenticated user.
pub struct CsrRequester;

#[async_trait]
impl Plugin for CsrRequester {
    fn name(&self) -> &'static str {
        "CertificateSigningRequestRequester"
    }

    async fn admit(&self, attrs: &Attributes<'_>, object: Option<&mut Value>) -> Result<(), ApiError> {
        let Some(obj) = object else { return Ok(()) };
        if attrs.operation == Operation::Update && attrs.resource.group == GROUP && attrs.resource.plural == PLURAL {
            let old = attrs.old_object.unwrap_or(&Value::Null);
            match attrs.subresource {
                "approval" => {
                    let cert = old.pointer("/status/certificate").cloned();
                    if let Some(status) = obj.get_mut("status").and_then(Value::as_object_mut) {
                        match cert {
                            Some(c) => status.insert("certificate".into(), c),
                            None => status.remove("certificate"),
                        };
                    }
                }
                "status" => {
                    let decided = |c: &Value| c["type"] == "Approved" || c["type"] == "Denied";
                    let kept: Vec<Value> = old
                        .pointer("/status/conditions")
                        .and_then(Value::as_array)
                        .map(|cs| cs.iter().filter(|c| decided(c)).cloned().collect())
                        .unwrap_or_default();
                    if let Some(status) = obj.get_mut("status").and_then(Value::as_object_mut) {
                        let mut conditions: Vec<Value> = status
                            .get("conditions")
                            .and_then(Value::as_array)
                            .map(|cs| cs.iter().filter(|c| !decided(c)).cloned().collect())
                            .unwrap_or_default();
                        conditions.splice(0..0, kept);
                        if conditions.is_empty() {
                            status.remove("conditions");
                        } else {
                            status.insert("conditions".into(), Value::Array(conditions));
                        }
                    }
                }
                _ => {}
            }
            return Ok(());
        }
        if attrs.operation != Operation::Create || !attrs.is(GROUP, PLURAL, "") {
            return Ok(());
        }
        let user = attrs.user;
        if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
            let set = |spec: &mut serde_json::Map<String, Value>, key: &str, v: Value, empty: bool| {
                if empty {
                    spec.remove(key);
                } else {
                    spec.insert(key.into(), v);
                }
            };
            set(spec, "username", json!(user.name), user.name.is_empty());
            set(spec, "uid", json!(user.uid), user.uid.is_empty());
            set(spec, "groups", json!(user.groups), user.groups.is_empty());
            set(spec, "extra", json!(user.extra), user.extra.is_empty());
        }
        if let Some(o) = obj.as_object_mut() {
            o.insert("status".into(), json!({}));
        }
        Ok(())
    }
}

/// Upstream's `CertificateSubjectRestriction` admission plugin.
pub struct CertificateSubjectRestriction;

/// Whether a PEM `CERTIFICATE REQUEST` (base64 in the JSON object, as
/// `spec.request` is serialized) names `system:masters` as an organization.
fn requests_masters(request_b64: &str) -> bool {
    use base64::Engine;
    use x509_parser::prelude::FromDer;
    let Ok(pem) = base64::engine::general_purpose::STANDARD.decode(request_b64) else { return false };
    let Ok((_, block)) = x509_parser::pem::parse_x509_pem(&pem) else { return false };
    let Ok((_, csr)) = x509_parser::certification_request::X509CertificationRequest::from_der(&block.contents) else {
        return false;
    };
    let orgs =
        csr.certification_request_info.subject.iter_organization().filter_map(|o| o.as_str().ok()).collect::<Vec<_>>();
    orgs.contains(&"system:masters")
}

#[async_trait]
impl Plugin for CertificateSubjectRestriction {
    fn name(&self) -> &'static str {
        "CertificateSubjectRestriction"
    }

    async fn validate(&self, attrs: &Attributes<'_>, object: Option<&Value>) -> Result<(), ApiError> {
        if attrs.operation != Operation::Create || !attrs.is(GROUP, PLURAL, "") {
            return Ok(());
        }
        let Some(obj) = object else { return Ok(()) };
        if obj["spec"]["signerName"] != "kubernetes.io/kube-apiserver-client" {
            return Ok(());
        }
        if requests_masters(obj["spec"]["request"].as_str().unwrap_or("")) {
            let resource = GroupResource { group: GROUP.into(), resource: PLURAL.into() };
            return Err(ApiError::Forbidden {
                message: format!(
                    "{resource} \"{}\" is forbidden: use of kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed",
                    attrs.name
                ),
                resource,
                name: attrs.name.to_string(),
            });
        }
        Ok(())
    }
}

/// Whether the user may `verb` (`approve`, `sign`) requests for `signer`:
/// on `signers` named `signer` or `<domain>/*` (upstream's
/// `IsAuthorizedForSignerName`).
fn authorized_for_signer(authorizer: &ServerAuthorizer, attrs: &Attributes<'_>, verb: &str, signer: &str) -> bool {
    let check = |name: &str| {
        let a = authz::Attributes {
            user: attrs.user.clone(),
            verb: verb.into(),
            resource_request: true,
            api_group: GROUP.into(),
            resource: "signers".into(),
            name: name.into(),
            ..Default::default()
        };
        authorizer.authorize(&a).0 == Decision::Allow
    };
    if check(signer) {
        return true;
    }
    match signer.split_once('/') {
        Some((domain, _)) => check(&format!("{domain}/*")),
        None => false,
    }
}

fn forbidden(attrs: &Attributes<'_>, name: &str, message: String) -> ApiError {
    let resource = GroupResource { group: GROUP.into(), resource: PLURAL.into() };
    let _ = attrs;
    ApiError::Forbidden {
        message: format!("{resource} \"{name}\" is forbidden: {message}"),
        resource,
        name: name.into(),
    }
}

/// Upstream's `CertificateApproval` admission plugin.
pub struct CertificateApproval {
    authorizer: Arc<ServerAuthorizer>,
}

impl CertificateApproval {
    /// The plugin over the server's authorizer.
    pub fn new(authorizer: Arc<ServerAuthorizer>) -> Self {
        CertificateApproval { authorizer }
    }
}

#[async_trait]
impl Plugin for CertificateApproval {
    fn name(&self) -> &'static str {
        "CertificateApproval"
    }

    async fn validate(&self, attrs: &Attributes<'_>, object: Option<&Value>) -> Result<(), ApiError> {
        if attrs.operation != Operation::Update || !attrs.is(GROUP, PLURAL, "approval") {
            return Ok(());
        }
        let Some(obj) = object else { return Ok(()) };
        let signer = obj["spec"]["signerName"].as_str().unwrap_or("");
        if !authorized_for_signer(&self.authorizer, attrs, "approve", signer) {
            return Err(forbidden(
                attrs,
                attrs.name,
                format!("user not permitted to approve requests with signerName {signer:?}"),
            ));
        }
        Ok(())
    }
}

/// Upstream's `CertificateSigning` admission plugin.
pub struct CertificateSigning {
    authorizer: Arc<ServerAuthorizer>,
}

impl CertificateSigning {
    /// The plugin over the server's authorizer.
    pub fn new(authorizer: Arc<ServerAuthorizer>) -> Self {
        CertificateSigning { authorizer }
    }
}

#[async_trait]
impl Plugin for CertificateSigning {
    fn name(&self) -> &'static str {
        "CertificateSigning"
    }

    async fn validate(&self, attrs: &Attributes<'_>, object: Option<&Value>) -> Result<(), ApiError> {
        if attrs.operation != Operation::Update || !attrs.is(GROUP, PLURAL, "status") {
            return Ok(());
        }
        let Some(obj) = object else { return Ok(()) };
        let old = attrs.old_object.unwrap_or(&Value::Null);
        // Only a change of the issued certificate needs the permission.
        if obj.pointer("/status/certificate") == old.pointer("/status/certificate") {
            return Ok(());
        }
        let signer = obj["spec"]["signerName"].as_str().unwrap_or("");
        if !authorized_for_signer(&self.authorizer, attrs, "sign", signer) {
            return Err(forbidden(
                attrs,
                attrs.name,
                format!("user not permitted to sign requests with signerName {signer:?}"),
            ));
        }
        Ok(())
    }
}
