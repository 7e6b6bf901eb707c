//! The CSR approver (upstream `pkg/controller/certificates/approver`,
//! `csrapproving`): auto-approves kubelet client certificate requests
//! (signer `kubernetes.io/kube-apiserver-client-kubelet`) whose content is
//! a valid node client request, when a SubjectAccessReview says the
//! requester may `create` `certificatesigningrequests/selfnodeclient` (a
//! node renewing its own certificate: the requester is the CN) or
//! `certificatesigningrequests/nodeclient` (a new node, e.g. a bootstrap
//! token in `system:bootstrappers`). Everything else is left for someone
//! with the approve permission (`kubectl certificate approve`), as upstream.
//!
//! rkube deviation (k3s-like: a k3s server signs its agents' serving
//! certificates): a kubelet serving request (signer
//! `kubernetes.io/kubelet-serving`) is also approved when the requester is
//! the node it names (`system:node:<name>` in `system:nodes`, CN equal to
//! the requester) and every SAN is one of that registered Node's own names
//! or addresses ([`serving_request_matches_node`]). Upstream leaves these to
//! an administrator or an external approver that checks the same things.
//! The approval needs `approve` on that signer, which the
//! `rkube:kubelet-serving-approver` ClusterRole of [`crate::joinpolicy`]
//! grants this controller's ServiceAccount.
//!
//! A second rkube deviation, for the same reason (a k3s server hands its
//! agents a kube-proxy certificate): a `system:kube-proxy` client request
//! (signer `kubernetes.io/kube-apiserver-client`, CN `system:kube-proxy`,
//! no organization, no SAN, client usages only) made by a node
//! (`system:node:<name>` in `system:nodes`) is approved
//! ([`node_kube_proxy_request`]), so that joined nodes run kube-proxy and
//! NetworkPolicy enforcement under the `system:kube-proxy` identity.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::authorization::v1::{ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec};
use k8s_openapi::api::certificates::v1::{CertificateSigningRequest, CertificateSigningRequestCondition};
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;

use crate::csr::{self, KUBELET_CLIENT_SIGNER, KUBELET_SERVING_SIGNER, NODES_GROUP, NODE_USER_PREFIX};
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

/// A node's own serving certificate (rkube's k3s-like addition, see the module docs).
pub const SELF_NODE_SERVING: Recognizer = Recognizer {
    subresource: "selfnodeserving",
    message: "Auto approving kubelet serving certificate for the node's own names and addresses.",
};

/// A node's kube-proxy client certificate (rkube's k3s-like addition, see the module docs).
pub const NODE_KUBE_PROXY: Recognizer = Recognizer {
    subresource: "nodekubeproxy",
    message: "Auto approving kube-proxy client certificate requested by a node.",
};

/// The user kube-proxy authenticates as (bound to `system:node-proxier`).
pub const KUBE_PROXY_USER: &str = "system:kube-proxy";

/// Whether the request is a node asking for the `system:kube-proxy`
/// client certificate: signer `kubernetes.io/kube-apiserver-client`, CN
/// `system:kube-proxy` with no organization (no group membership) and no
/// SAN, usages those of an API client (`client auth`, optionally `digital
/// signature` / `key encipherment`), requester `system:node:<name>` in
/// `system:nodes`.
pub fn node_kube_proxy_request(csr: &CertificateSigningRequest, parsed: &csr::ParsedRequest) -> bool {
    let spec = &csr.spec;
    spec.signer_name == csr::KUBE_APISERVER_CLIENT_SIGNER
        && parsed.common_name == KUBE_PROXY_USER
        && parsed.organizations.is_empty()
        && parsed.dns_names.is_empty()
        && parsed.ip_addresses.is_empty()
        && parsed.emails.is_empty()
        && parsed.uris.is_empty()
        && csr::validate_api_server_client(&spec.usages.clone().unwrap_or_default()).is_ok()
        && spec.username.as_deref().is_some_and(|u| u.strip_prefix(NODE_USER_PREFIX).is_some_and(|n| !n.is_empty()))
        && spec.groups.iter().flatten().any(|g| g == NODES_GROUP)
}

/// How long a serving request waits for its Node to be registered (re-checked every 5 s).
const NODE_WAIT: std::time::Duration = std::time::Duration::from_secs(300);

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

/// The node a kubelet serving request is for, when it is one the node
/// itself made: signer `kubernetes.io/kubelet-serving`, valid content
/// (upstream's `isKubeletServing` rules), requester = CN =
/// `system:node:<name>` and in `system:nodes`.
pub fn self_serving_node<'a>(csr: &CertificateSigningRequest, parsed: &'a csr::ParsedRequest) -> Option<&'a str> {
    let spec = &csr.spec;
    if spec.signer_name != KUBELET_SERVING_SIGNER {
        return None;
    }
    if csr::validate_kubelet_serving(parsed, &spec.usages.clone().unwrap_or_default()).is_err() {
        return None;
    }
    if spec.username.as_deref() != Some(parsed.common_name.as_str()) {
        return None;
    }
    if !spec.groups.iter().flatten().any(|g| g == NODES_GROUP) {
        return None;
    }
    parsed.common_name.strip_prefix(NODE_USER_PREFIX).filter(|n| !n.is_empty())
}

/// Checks that every SAN of a serving request is the registered `node`'s
/// own: DNS names among its name and its Hostname/InternalDNS/ExternalDNS
/// addresses, IPs among its InternalIP/ExternalIP addresses. The error
/// names the first SAN that is not.
pub fn serving_request_matches_node(parsed: &csr::ParsedRequest, node: &Node) -> Result<(), String> {
    let name = node.metadata.name.clone().unwrap_or_default();
    let addresses = node.status.as_ref().and_then(|s| s.addresses.clone()).unwrap_or_default();
    let of = |types: &[&str]| -> Vec<String> {
        addresses.iter().filter(|a| types.contains(&a.type_.as_str())).map(|a| a.address.clone()).collect()
    };
    let mut dns = of(&["Hostname", "InternalDNS", "ExternalDNS"]);
    dns.push(name.clone());
    let ips: Vec<std::net::IpAddr> = of(&["InternalIP", "ExternalIP"]).iter().filter_map(|a| a.parse().ok()).collect();
    for d in &parsed.dns_names {
        if !dns.iter().any(|n| n.eq_ignore_ascii_case(d)) {
            return Err(format!("DNS name {d:?} is not a name of node {name:?}"));
        }
    }
    for ip in &parsed.ip_addresses {
        if !ip.parse::<std::net::IpAddr>().is_ok_and(|ip| ips.contains(&ip)) {
            return Err(format!("IP address {ip} is not an address of node {name:?}"));
        }
    }
    Ok(())
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
    if let Some(node) = self_serving_node(&obj, &parsed) {
        return approve_self_serving(&obj, &ctx, &name, node, &parsed).await;
    }
    if node_kube_proxy_request(&obj, &parsed) {
        approve(&obj, &ctx, &name, NODE_KUBE_PROXY).await?;
        return ctx.done(&name, Action::await_change());
    }
    let mut tried = Vec::new();
    for r in recognize(&obj, &parsed) {
        tried.push(r.subresource);
        if !authorize(&ctx, &obj, r.subresource).await? {
            continue;
        }
        approve(&obj, &ctx, &name, r).await?;
        return ctx.done(&name, Action::await_change());
    }
    if !tried.is_empty() {
        // Upstream's IgnorableError: logged, not retried until the CSR changes.
        tracing::info!(component = NAME, csr = %name, ?tried, "recognized csr but subject access review was not approved");
    }
    ctx.done(&name, Action::await_change())
}

async fn approve(obj: &CertificateSigningRequest, ctx: &Ctx, name: &str, r: Recognizer) -> Result<(), Error> {
    let mut approved = obj.clone();
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
        .replace_subresource::<CertificateSigningRequest>("approval", name, &PostParams::default(), &approved)
        .await?;
    tracing::info!(component = NAME, csr = %name, recognizer = r.subresource, "approved");
    Ok(())
}

/// The k3s-like serving approval: the Node must be registered and own every SAN.
async fn approve_self_serving(
    obj: &CertificateSigningRequest,
    ctx: &Ctx,
    name: &str,
    node: &str,
    parsed: &csr::ParsedRequest,
) -> Result<Action, Error> {
    match Api::<Node>::all(ctx.client.clone()).get_opt(node).await? {
        Some(n) => match serving_request_matches_node(parsed, &n) {
            Ok(()) => {
                approve(obj, ctx, name, SELF_NODE_SERVING).await?;
                ctx.done(name, Action::await_change())
            }
            Err(why) => {
                tracing::info!(component = NAME, csr = %name, "not auto-approving kubelet serving csr: {why}");
                ctx.done(name, Action::await_change())
            }
        },
        None => {
            // The kubelet registers its Node before asking; allow for a slow start.
            let age = obj.metadata.creation_timestamp.as_ref().map(|t| jiff::Timestamp::now().duration_since(t.0));
            let young = age.is_none_or(|a| a.as_secs() < NODE_WAIT.as_secs() as i64);
            tracing::info!(component = NAME, csr = %name, node, "kubelet serving csr for a node that is not registered (yet)");
            let action =
                if young { Action::requeue(std::time::Duration::from_secs(5)) } else { Action::await_change() };
            ctx.done(name, action)
        }
    }
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

    fn proxy_csr(username: &str, groups: &[&str], cn: &str, orgs: &[&str], usages: &[&str]) -> bool {
        let (pem, _) = csr::new_request(cn, orgs, &[]).unwrap();
        let parsed = csr::parse_request(pem.as_bytes()).unwrap();
        let obj = CertificateSigningRequest {
            spec: CertificateSigningRequestSpec {
                request: ByteString(pem.into_bytes()),
                signer_name: csr::KUBE_APISERVER_CLIENT_SIGNER.into(),
                usages: Some(usages.iter().map(|s| s.to_string()).collect()),
                username: Some(username.into()),
                groups: Some(groups.iter().map(|s| s.to_string()).collect()),
                ..Default::default()
            },
            ..Default::default()
        };
        node_kube_proxy_request(&obj, &parsed)
    }

    #[test]
    fn only_a_node_asking_for_exactly_the_kube_proxy_identity_is_auto_approved() {
        let node = ("system:node:n1", &[NODES_GROUP, "system:authenticated"][..]);
        assert!(proxy_csr(node.0, node.1, KUBE_PROXY_USER, &[], USAGES));
        // Another identity, an added group, a server usage, or a requester that is no node: left alone.
        assert!(!proxy_csr(node.0, node.1, "system:kube-scheduler", &[], USAGES));
        assert!(!proxy_csr(node.0, node.1, KUBE_PROXY_USER, &["system:masters"], USAGES));
        assert!(!proxy_csr(node.0, node.1, KUBE_PROXY_USER, &[], &["digital signature", "server auth"]));
        assert!(!proxy_csr("system:bootstrap:abcdef", &["system:bootstrappers"], KUBE_PROXY_USER, &[], USAGES));
        assert!(!proxy_csr("system:node:n1", &["system:authenticated"], KUBE_PROXY_USER, &[], USAGES));
    }

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

    fn serving(
        username: &str,
        groups: &[&str],
        cn: &str,
        sans: &[&str],
    ) -> (CertificateSigningRequest, csr::ParsedRequest) {
        let sans: Vec<String> = sans.iter().map(|s| s.to_string()).collect();
        let (pem, _) = csr::new_request(cn, &[csr::NODES_GROUP], &sans).unwrap();
        let parsed = csr::parse_request(pem.as_bytes()).unwrap();
        let obj = CertificateSigningRequest {
            spec: CertificateSigningRequestSpec {
                request: ByteString(pem.into_bytes()),
                signer_name: KUBELET_SERVING_SIGNER.into(),
                usages: Some(vec!["digital signature".into(), "server auth".into()]),
                username: Some(username.into()),
                groups: Some(groups.iter().map(|s| s.to_string()).collect()),
                ..Default::default()
            },
            ..Default::default()
        };
        (obj, parsed)
    }

    fn node(name: &str, addresses: &[(&str, &str)]) -> Node {
        use k8s_openapi::api::core::v1::{NodeAddress, NodeStatus};
        Node {
            metadata: kube::api::ObjectMeta { name: Some(name.into()), ..Default::default() },
            status: Some(NodeStatus {
                addresses: Some(
                    addresses
                        .iter()
                        .map(|(t, a)| NodeAddress { type_: t.to_string(), address: a.to_string() })
                        .collect(),
                ),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn only_a_nodes_own_serving_request_is_self_serving() {
        let nodes = &["system:nodes", "system:authenticated"];
        let (obj, p) = serving("system:node:n1", nodes, "system:node:n1", &["n1", "10.0.0.5"]);
        assert_eq!(self_serving_node(&obj, &p), Some("n1"));
        // Another node asking for n1's certificate, a bootstrap token, or no system:nodes group: no.
        let (obj, p) = serving("system:node:n2", nodes, "system:node:n1", &["n1"]);
        assert_eq!(self_serving_node(&obj, &p), None);
        let (obj, p) = serving("system:bootstrap:abcdef", &["system:bootstrappers"], "system:node:n1", &["n1"]);
        assert_eq!(self_serving_node(&obj, &p), None);
        let (obj, p) = serving("system:node:n1", &["system:authenticated"], "system:node:n1", &["n1"]);
        assert_eq!(self_serving_node(&obj, &p), None);
        // Client requests are not serving requests.
        let (obj, p) = csr_for("system:node:n1", "system:node:n1", KUBELET_CLIENT_SIGNER, USAGES);
        assert_eq!(self_serving_node(&obj, &p), None);
    }

    #[test]
    fn serving_sans_must_be_the_nodes_own_names_and_addresses() {
        let n1 = node("n1", &[("InternalIP", "10.0.0.5"), ("Hostname", "n1-host"), ("ExternalIP", "192.0.2.7")]);
        let (_, p) = serving("system:node:n1", &[], "system:node:n1", &["n1", "n1-host", "10.0.0.5", "192.0.2.7"]);
        assert_eq!(serving_request_matches_node(&p, &n1), Ok(()));
        let (_, p) = serving("system:node:n1", &[], "system:node:n1", &["n1", "10.0.0.6"]);
        assert_eq!(
            serving_request_matches_node(&p, &n1).unwrap_err(),
            "IP address 10.0.0.6 is not an address of node \"n1\""
        );
        let (_, p) = serving("system:node:n1", &[], "system:node:n1", &["kubernetes.default.svc"]);
        assert!(serving_request_matches_node(&p, &n1).unwrap_err().starts_with("DNS name \"kubernetes.default.svc\""));
    }
}
