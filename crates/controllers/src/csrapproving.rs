//! The CSR approver (upstream `pkg/controller/certificates/approver`,
//! `csrapproving`): auto-approves kubelet client certificate requests
//! (signer `kubernetes.io/kube-apiserver-client-kubelet`) whose content is
//! a valid node client request, when a SubjectAccessReview says the
//! requester may `create` `certificatesigningrequests/selfnodeclient` (a
//! node renewing its own certificate: the requester is the CN) or
//! `certificatesigningrequests/nodeclient` (a new node, e.g. a bootstrap
//! token in `system:bootstrappers`). Everything else is left for someone
//! with the approve permission (`kubectl certificate approve`), as upstream.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::authorization::v1::{ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec};
use k8s_openapi::api::certificates::v1::{CertificateSigningRequest, CertificateSigningRequestCondition};
use kube::api::{Api, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;

use crate::csr::{self, KUBELET_CLIENT_SIGNER};
use crate::runtime::{self, Ctx, Error, Stop};

/// The controller's name (`--controllers`), also its log component.
pub const NAME: &str = "certificatesigningrequest-approving-controller";
/// The older name `--controllers` also accepts.
pub const ALIAS: &str = "csrapproving";
/// The kube-system ServiceAccount it runs as.
pub const SERVICE_ACCOUNT: &str = "certificate-controller";

/// One kind of request the approver recognizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Recognizer {
    /// The subresource the SubjectAccessReview asks about.
    pub subresource: &'static str,
    /// The Approved condition's message.
    pub message: &'static str,
}

/// A node renewing its own client certificate.
pub const SELF_NODE_CLIENT: Recognizer = Recognizer {
    subresource: "selfnodeclient",
    message: "Auto approving self kubelet client certificate after SubjectAccessReview.",
};
/// A new node's client certificate.
pub const NODE_CLIENT: Recognizer = Recognizer {
    subresource: "nodeclient",
    message: "Auto approving kubelet client certificate after SubjectAccessReview.",
};

/// Whether the request is approved or denied already.
pub fn is_decided(csr: &CertificateSigningRequest) -> bool {
    csr.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| (c.type_ == "Approved" || c.type_ == "Denied") && c.status != "False"))
}

/// The recognizers that match the request's content, in upstream's order
/// (self renewal first). Empty when it is not a valid node client request
/// for the kubelet client signer.
pub fn recognize(csr: &CertificateSigningRequest, parsed: &csr::ParsedRequest) -> Vec<Recognizer> {
    let spec = &csr.spec;
    if spec.signer_name != KUBELET_CLIENT_SIGNER {
        return Vec::new();
    }
    let usages = spec.usages.clone().unwrap_or_default();
    if csr::validate_kubelet_client(parsed, &usages).is_err() {
        return Vec::new();
    }
    let mut out = Vec::new();
    if spec.username.as_deref() == Some(parsed.common_name.as_str()) {
        out.push(SELF_NODE_CLIENT);
    }
    out.push(NODE_CLIENT);
    out
}

/// Runs until `stop` over every CertificateSigningRequest.
pub async fn run(ctx: Arc<Ctx>, stop: Stop) {
    let api = Api::<CertificateSigningRequest>::all(ctx.reader.clone());
    let controller = Controller::new(api, watcher::Config::default()).graceful_shutdown_on(runtime::stopped(stop));
    runtime::drive(NAME, controller.run(reconcile, runtime::error_policy, ctx)).await;
}

async fn reconcile(obj: Arc<CertificateSigningRequest>, ctx: Arc<Ctx>) -> Result<Action, Error> {
    let name = obj.metadata.name.clone().unwrap_or_default();
    let issued = obj.status.as_ref().and_then(|s| s.certificate.as_ref()).is_some_and(|c| !c.0.is_empty());
    if issued || is_decided(&obj) {
        return ctx.done(&name, Action::await_change());
    }
    let parsed = match csr::parse_request(&obj.spec.request.0) {
        Ok(p) => p,
        // Upstream returns the parse error and retries; a request that
        // never parses would retry forever, so it is logged and left.
        Err(e) => {
            tracing::info!(component = NAME, csr = %name, error = %e, "unable to parse csr");
            return ctx.done(&name, Action::await_change());
        }
    };
    let mut tried = Vec::new();
    for r in recognize(&obj, &parsed) {
        tried.push(r.subresource);
        if !authorize(&ctx, &obj, r.subresource).await? {
            continue;
        }
        let mut approved = (*obj).clone();
        let status = approved.status.get_or_insert_with(Default::default);
        status.conditions.get_or_insert_with(Vec::new).push(CertificateSigningRequestCondition {
            type_: "Approved".into(),
            status: "True".into(),
            reason: Some("AutoApproved".into()),
            message: Some(r.message.into()),
            last_update_time: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(jiff::Timestamp::now())),
            ..Default::default()
        });
        Api::<CertificateSigningRequest>::all(ctx.client.clone())
            .replace_subresource::<CertificateSigningRequest>("approval", &name, &PostParams::default(), &approved)
            .await?;
        tracing::info!(component = NAME, csr = %name, recognizer = r.subresource, "approved");
        return ctx.done(&name, Action::await_change());
    }
    if !tried.is_empty() {
        // Upstream's IgnorableError: logged, not retried until the CSR changes.
        tracing::info!(component = NAME, csr = %name, ?tried, "recognized csr but subject access review was not approved");
    }
    ctx.done(&name, Action::await_change())
}

async fn authorize(ctx: &Ctx, obj: &CertificateSigningRequest, subresource: &str) -> Result<bool, Error> {
    let spec = &obj.spec;
    let extra: Option<BTreeMap<String, Vec<String>>> = spec.extra.clone();
    let sar = SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: spec.username.clone(),
            uid: spec.uid.clone(),
            groups: spec.groups.clone(),
            extra,
            resource_attributes: Some(ResourceAttributes {
                group: Some("certificates.k8s.io".into()),
                resource: Some("certificatesigningrequests".into()),
                verb: Some("create".into()),
                subresource: Some(subresource.into()),
                ..Default::default()
            }),
            ..Default::default()
        },
        ..Default::default()
    };
    let answer = Api::<SubjectAccessReview>::all(ctx.client.clone()).create(&PostParams::default(), &sar).await?;
    Ok(answer.status.is_some_and(|s| s.allowed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::certificates::v1::CertificateSigningRequestSpec;
    use k8s_openapi::ByteString;

    fn csr_for(
        username: &str,
        cn: &str,
        signer: &str,
        usages: &[&str],
    ) -> (CertificateSigningRequest, csr::ParsedRequest) {
        let (pem, _) = csr::new_request(cn, &[csr::NODES_GROUP], &[]).unwrap();
        let parsed = csr::parse_request(pem.as_bytes()).unwrap();
        let obj = CertificateSigningRequest {
            spec: CertificateSigningRequestSpec {
                request: ByteString(pem.into_bytes()),
                signer_name: signer.into(),
                usages: Some(usages.iter().map(|s| s.to_string()).collect()),
                username: Some(username.into()),
                ..Default::default()
            },
            ..Default::default()
        };
        (obj, parsed)
    }

    const USAGES: &[&str] = &["digital signature", "key encipherment", "client auth"];

    #[test]
    fn a_bootstrap_request_is_a_nodeclient_and_a_renewal_a_selfnodeclient() {
        let (obj, p) = csr_for("system:bootstrap:abcdef", "system:node:n1", KUBELET_CLIENT_SIGNER, USAGES);
        assert_eq!(recognize(&obj, &p), [NODE_CLIENT]);
        let (obj, p) = csr_for("system:node:n1", "system:node:n1", KUBELET_CLIENT_SIGNER, USAGES);
        assert_eq!(recognize(&obj, &p), [SELF_NODE_CLIENT, NODE_CLIENT]);
    }

    #[test]
    fn other_signers_and_wrong_usages_are_not_recognized() {
        let (obj, p) = csr_for("system:bootstrap:abcdef", "system:node:n1", csr::KUBE_APISERVER_CLIENT_SIGNER, USAGES);
        assert!(recognize(&obj, &p).is_empty());
        let (obj, p) = csr_for("system:bootstrap:abcdef", "system:node:n1", KUBELET_CLIENT_SIGNER, &["server auth"]);
        assert!(recognize(&obj, &p).is_empty());
    }
}
