//! Publishing the DNS server: the Service `kube-system/kube-dns` (no
//! selector — its EndpointSlices are written here, one per rkube server,
//! not by the EndpointSlice controller), and the RBAC the DNS identity needs.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointConditions, EndpointPort, EndpointSlice};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::api::{Api, DeleteParams, ObjectMeta, PostParams};
use tracing::{info, warn};

use crate::{endpoint_slice_name, DnsConfig};

/// The client-certificate CN (user name) the server issues for cluster DNS.
pub const USER: &str = "rkube:cluster-dns";
/// The ClusterRole and ClusterRoleBinding granting [`USER`] its access.
pub const ROLE: &str = "rkube:cluster-dns";
/// Namespace and name of the published Service.
pub const NAMESPACE: &str = "kube-system";
/// The Service's name.
pub const SERVICE: &str = "kube-dns";
/// `endpointslice.kubernetes.io/managed-by` of the slices written here.
pub const MANAGED_BY: &str = "cluster-dns.rkube.io";

fn rule(group: &str, resources: &[&str], verbs: &[&str]) -> PolicyRule {
    PolicyRule {
        api_groups: Some(vec![group.into()]),
        resources: Some(resources.iter().map(|r| r.to_string()).collect()),
        verbs: verbs.iter().map(|v| v.to_string()).collect(),
        ..Default::default()
    }
}

/// The ClusterRole and binding for [`USER`]: list/watch Services,
/// EndpointSlices and Namespaces (CoreDNS's `system:coredns` role), plus
/// get/create/update/patch/delete on Services and EndpointSlices to publish
/// kube-dns.
pub fn rbac() -> (ClusterRole, ClusterRoleBinding) {
    let rw = ["get", "list", "watch", "create", "update", "patch", "delete"];
    let role = ClusterRole {
        metadata: ObjectMeta { name: Some(ROLE.into()), ..Default::default() },
        rules: Some(vec![
            rule("", &["services"], &rw),
            rule("discovery.k8s.io", &["endpointslices"], &rw),
            rule("", &["namespaces"], &["get", "list", "watch"]),
        ]),
        ..Default::default()
    };
    let binding = ClusterRoleBinding {
        metadata: ObjectMeta { name: Some(ROLE.into()), ..Default::default() },
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".into(),
            kind: "ClusterRole".into(),
            name: ROLE.into(),
        },
        subjects: Some(vec![Subject {
            kind: "User".into(),
            name: USER.into(),
            api_group: Some("rbac.authorization.k8s.io".into()),
            namespace: None,
        }]),
    };
    (role, binding)
}

async fn create_if_missing<K>(api: &Api<K>, obj: &K) -> Result<(), kube::Error>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    match api.create(&PostParams::default(), obj).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
        Err(e) => Err(e),
    }
}

/// Creates the ClusterRole and ClusterRoleBinding [`USER`] needs, leaving
/// existing ones alone. Errors: the API's, e.g. 403 if `admin` may not.
pub async fn ensure_rbac(admin: &kube::Client) -> Result<(), kube::Error> {
    let (role, binding) = rbac();
    create_if_missing(&Api::<ClusterRole>::all(admin.clone()), &role).await?;
    create_if_missing(&Api::<ClusterRoleBinding>::all(admin.clone()), &binding).await
}

/// The kube-dns Service: labels `k8s-app=kube-dns`,
/// `kubernetes.io/cluster-service=true`, `kubernetes.io/name=CoreDNS`;
/// clusterIP `service_ip`; ports `dns` 53/UDP and `dns-tcp` 53/TCP whose
/// targetPort is the listen port; no selector.
pub fn service(config: &DnsConfig) -> Service {
    let labels = BTreeMap::from([
        ("k8s-app".to_string(), "kube-dns".to_string()),
        ("kubernetes.io/cluster-service".to_string(), "true".to_string()),
        ("kubernetes.io/name".to_string(), "CoreDNS".to_string()),
    ]);
    let port = |name: &str, proto: &str| ServicePort {
        name: Some(name.into()),
        port: 53,
        protocol: Some(proto.into()),
        target_port: Some(IntOrString::Int(config.listen.port().into())),
        ..Default::default()
    };
    Service {
        metadata: ObjectMeta {
            name: Some(SERVICE.into()),
            namespace: Some(NAMESPACE.into()),
            labels: Some(labels),
            ..Default::default()
        },
        spec: Some(ServiceSpec {
            cluster_ip: Some(config.service_ip.to_string()),
            cluster_ips: Some(vec![config.service_ip.to_string()]),
            ports: Some(vec![port("dns", "UDP"), port("dns-tcp", "TCP")]),
            type_: Some("ClusterIP".into()),
            ..Default::default()
        }),
        status: None,
    }
}

/// This server's EndpointSlice: one ready endpoint `advertise_address`,
/// ports `dns`/UDP and `dns-tcp`/TCP on the listen port, owned by the
/// Service (`owner_uid`).
pub fn endpoint_slice(config: &DnsConfig, owner_uid: &str) -> EndpointSlice {
    let labels = BTreeMap::from([
        ("kubernetes.io/service-name".to_string(), SERVICE.to_string()),
        ("endpointslice.kubernetes.io/managed-by".to_string(), MANAGED_BY.to_string()),
    ]);
    let port = |name: &str, proto: &str| EndpointPort {
        name: Some(name.into()),
        port: Some(config.listen.port().into()),
        protocol: Some(proto.into()),
        app_protocol: None,
    };
    EndpointSlice {
        metadata: ObjectMeta {
            name: Some(endpoint_slice_name(&config.server_name)),
            namespace: Some(NAMESPACE.into()),
            labels: Some(labels),
            owner_references: Some(vec![OwnerReference {
                api_version: "v1".into(),
                kind: "Service".into(),
                name: SERVICE.into(),
                uid: owner_uid.into(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]),
            ..Default::default()
        },
        address_type: if config.advertise_address.is_ipv4() { "IPv4".into() } else { "IPv6".into() },
        endpoints: vec![Endpoint {
            addresses: vec![config.advertise_address.to_string()],
            conditions: Some(EndpointConditions { ready: Some(true), serving: Some(true), terminating: Some(false) }),
            ..Default::default()
        }],
        ports: Some(vec![port("dns", "UDP"), port("dns-tcp", "TCP")]),
    }
}

/// Ensures the Service (created if missing; an existing one with another
/// ClusterIP is logged, not changed — ClusterIP is immutable) and this
/// server's EndpointSlice (created, or replaced if it differs; none for a
/// loopback advertise address, which upstream refuses as an endpoint).
pub async fn publish(config: &DnsConfig) -> Result<(), kube::Error> {
    let services: Api<Service> = Api::namespaced(config.client.clone(), NAMESPACE);
    let want = service(config);
    let svc = match services.get_opt(SERVICE).await? {
        Some(s) => s,
        None => match services.create(&PostParams::default(), &want).await {
            Ok(s) => {
                info!(component = "cluster-dns", ip = %config.service_ip, "created Service kube-system/kube-dns");
                s
            }
            Err(kube::Error::Api(s)) if s.code == 409 => services.get(SERVICE).await?,
            Err(e) => return Err(e),
        },
    };
    let have_ip = svc.spec.as_ref().and_then(|s| s.cluster_ip.clone()).unwrap_or_default();
    if have_ip != config.service_ip.to_string() {
        warn!(component = "cluster-dns", have = %have_ip, want = %config.service_ip,
            "Service kube-system/kube-dns has another ClusterIP than --cluster-dns; pods' resolv.conf will not reach it — delete the Service to have it recreated");
    }
    if config.advertise_address.is_loopback() {
        // Upstream refuses loopback endpoints (and pods could not reach one); see publish_loop.
        return Ok(());
    }
    let uid = svc.metadata.uid.clone().unwrap_or_default();
    let slices: Api<EndpointSlice> = Api::namespaced(config.client.clone(), NAMESPACE);
    let mut want = endpoint_slice(config, &uid);
    let name = want.metadata.name.clone().unwrap_or_default();
    match slices.get_opt(&name).await? {
        None => {
            slices.create(&PostParams::default(), &want).await?;
            info!(component = "cluster-dns", slice = %name, address = %config.advertise_address, "published this server in kube-dns");
        }
        Some(have) => {
            if have.endpoints != want.endpoints
                || have.ports != want.ports
                || have.metadata.owner_references != want.metadata.owner_references
                || have.address_type != want.address_type
            {
                want.metadata.resource_version = have.metadata.resource_version.clone();
                slices.replace(&name, &PostParams::default(), &want).await?;
            }
        }
    }
    Ok(())
}

/// Deletes this server's EndpointSlice (a clean stop takes it out of kube-dns).
pub async fn unpublish(config: &DnsConfig) -> Result<(), kube::Error> {
    let slices: Api<EndpointSlice> = Api::namespaced(config.client.clone(), NAMESPACE);
    match slices.delete(&endpoint_slice_name(&config.server_name), &DeleteParams::default()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(e),
    }
}

/// How often [`publish_loop`] re-checks: under the API server's 30 s
/// keep-alive header timeout, so the pooled connection is reused rather
/// than raced against its close.
const REPUBLISH_PERIOD: Duration = Duration::from_secs(20);

/// [`publish`] now and every [`REPUBLISH_PERIOD`] (re-creating what
/// someone deleted); errors are logged and retried after 2 s.
pub async fn publish_loop(config: DnsConfig) {
    if config.advertise_address.is_loopback() {
        warn!(component = "cluster-dns", address = %config.advertise_address,
            "the advertise address is loopback: pods cannot reach it and the API refuses loopback endpoints, so kube-dns gets no endpoint from this server; start rkube with a non-loopback --advertise-address for pods to use cluster DNS");
    }
    loop {
        let wait = match publish(&config).await {
            Ok(()) => REPUBLISH_PERIOD,
            Err(e) => {
                warn!(component = "cluster-dns", error = %e, "publishing kube-dns failed; retrying");
                Duration::from_secs(2)
            }
        };
        tokio::time::sleep(wait).await;
    }
}
