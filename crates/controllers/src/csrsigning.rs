//! The CSR signer (upstream `pkg/controller/certificates/signer`,
//! `csrsigning`): issues certificates with the cluster CA for approved
//! requests to `kubernetes.io/kube-apiserver-client`,
//! `kubernetes.io/kube-apiserver-client-kubelet` and
//! `kubernetes.io/kubelet-serving`. A request whose content breaks its
//! signer's rules gets a `Failed` condition (reason
//! `SignerValidationFailure`) instead of a certificate. Lifetime: the
//! signing duration (1 year by default) or `spec.expirationSeconds` if
//! shorter, at least 10 minutes. The CA key is read from the server's data
//! dir, node-local configuration as upstream's `--cluster-signing-key-file`.

use std::sync::Arc;

use k8s_openapi::api::certificates::v1::{CertificateSigningRequest, CertificateSigningRequestCondition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::ByteString;
use kube::api::{Api, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;

use crate::csr;
use crate::runtime::{self, Ctx, Error, Stop};

/// The controller's name (`--controllers`), also its log component.
pub const NAME: &str = "certificatesigningrequest-signing-controller";
/// The older name `--controllers` also accepts.
pub const ALIAS: &str = "csrsigning";
/// The kube-system ServiceAccount it runs as.
pub const SERVICE_ACCOUNT: &str = "certificate-controller";

fn has_true(obj: &CertificateSigningRequest, type_: &str) -> bool {
    obj.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == type_ && c.status == "True"))
}

/// Whether the request is approved (and not denied).
pub fn is_approved(obj: &CertificateSigningRequest) -> bool {
    has_true(obj, "Approved") && !has_true(obj, "Denied")
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
    if issued || !is_approved(&obj) || has_true(&obj, "Failed") {
        return ctx.done(&name, Action::await_change());
    }
    let Some(ca) = ctx.settings.signing_ca.clone() else {
        return ctx.done(&name, Action::await_change());
    };
    let spec = &obj.spec;
    let usages = spec.usages.clone().unwrap_or_default();
    let verdict =
        csr::parse_request(&spec.request.0).map(|parsed| csr::validate_for_signer(&spec.signer_name, &parsed, &usages));
    let mut updated = (*obj).clone();
    let status = updated.status.get_or_insert_with(Default::default);
    match verdict {
        // Not one of our signers: someone else's business.
        Ok(None) => return ctx.done(&name, Action::await_change()),
        Err(e) | Ok(Some(Err(e))) => {
            status.conditions.get_or_insert_with(Vec::new).push(CertificateSigningRequestCondition {
                type_: "Failed".into(),
                status: "True".into(),
                reason: Some("SignerValidationFailure".into()),
                message: Some(e.clone()),
                last_update_time: Some(Time(jiff::Timestamp::now())),
                ..Default::default()
            });
            tracing::info!(component = NAME, csr = %name, signer = %spec.signer_name, error = %e, "refused to sign");
        }
        Ok(Some(Ok(()))) => {
            let pem = std::str::from_utf8(&spec.request.0).map_err(|e| Error::Other(e.to_string()))?;
            let ttl = csr::duration(spec.expiration_seconds, ctx.settings.signing_duration);
            let cert = ca.sign(pem, &usages, ttl).map_err(|e| Error::Other(format!("error auto signing csr: {e}")))?;
            status.certificate = Some(ByteString(cert.into_bytes()));
            tracing::info!(component = NAME, csr = %name, signer = %spec.signer_name, ttl_seconds = ttl.as_secs(), "signed");
        }
    }
    Api::<CertificateSigningRequest>::all(ctx.client.clone())
        .replace_status(&name, &PostParams::default(), &updated)
        .await?;
    ctx.done(&name, Action::await_change())
}
