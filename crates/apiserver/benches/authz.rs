//! Authorization benchmark (issue 4): the cost of one decision of the
//! server's authorizer chain (system:masters, Node, RBAC) with the
//! bootstrap policy plus 1,000 RoleBindings (10 per namespace in 100
//! namespaces) and 100 ClusterRoleBindings.
//!
//! Run with `cargo bench -p rkube-apiserver --bench authz`. Prints a
//! markdown table: nanoseconds per `authorize()` (mean of `CALLS` calls
//! after a warm-up) for an allowed namespaced request, a refused one (every
//! grant of the user and its groups checked), a request allowed through a
//! group's ClusterRoleBinding, and a non-resource request.

use std::time::Instant;

use rkube_apiserver::authn::UserInfo;
use rkube_apiserver::authz::follow::Change;
use rkube_apiserver::authz::policy::reconcile::seeded_cluster_roles;
use rkube_apiserver::authz::policy::{cluster_role_bindings, cluster_roles};
use rkube_apiserver::authz::rbac::index::Kind;
use rkube_apiserver::authz::{Attributes, Authorizer, Decision, ServerAuthorizer};
use serde_json::{json, Value};

const CALLS: u32 = 200_000;
const NAMESPACES: usize = 100;
const BINDINGS_PER_NAMESPACE: usize = 10;
const CLUSTER_BINDINGS: usize = 100;

fn populate(chain: &ServerAuthorizer) {
    let rbac = chain.rbac();
    let roles: Vec<Value> = seeded_cluster_roles().iter().map(|r| r.to_object()).collect();
    rbac.apply(Kind::ClusterRole, &roles.iter().map(Change::Upsert).collect::<Vec<_>>());
    let mut crbs: Vec<Value> = cluster_role_bindings().iter().map(|b| b.to_object()).collect();
    for i in 0..CLUSTER_BINDINGS {
        crbs.push(json!({"metadata": {"name": format!("team-{i}-view")},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
            "subjects": [{"kind": "Group", "name": format!("team-{i}")}]}));
    }
    rbac.apply(Kind::ClusterRoleBinding, &crbs.iter().map(Change::Upsert).collect::<Vec<_>>());
    let mut rbs = Vec::new();
    for ns in 0..NAMESPACES {
        for b in 0..BINDINGS_PER_NAMESPACE {
            rbs.push(json!({"metadata": {"name": format!("edit-{b}"), "namespace": format!("ns-{ns}")},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
                "subjects": [{"kind": "User", "name": format!("user-{b}")},
                             {"kind": "ServiceAccount", "name": format!("sa-{b}")}]}));
        }
    }
    rbac.apply(Kind::RoleBinding, &rbs.iter().map(Change::Upsert).collect::<Vec<_>>());
    for kind in Kind::ALL {
        rbac.apply(kind, &[Change::Synced]);
    }
}

fn user(name: &str, groups: &[&str]) -> UserInfo {
    let mut groups: Vec<String> = groups.iter().map(|g| g.to_string()).collect();
    groups.push("system:authenticated".into());
    UserInfo { name: name.into(), groups, ..Default::default() }
}

fn resource(u: UserInfo, verb: &str, resource: &str, ns: &str) -> Attributes {
    Attributes {
        user: u,
        verb: verb.into(),
        resource_request: true,
        resource: resource.into(),
        namespace: ns.into(),
        ..Default::default()
    }
}

fn main() {
    let chain = ServerAuthorizer::new();
    let start = Instant::now();
    populate(&chain);
    let load = start.elapsed();
    let cases = [
        (
            "allowed: RoleBinding (edit) in the namespace",
            resource(user("user-7", &[]), "list", "pods", "ns-42"),
            Decision::Allow,
        ),
        (
            "refused: no grant in that namespace",
            resource(user("user-7", &[]), "delete", "nodes", "ns-42"),
            Decision::NoOpinion,
        ),
        (
            "allowed: group ClusterRoleBinding (view)",
            resource(user("x", &["team-77"]), "get", "pods", "ns-3"),
            Decision::Allow,
        ),
        (
            "allowed: non-resource /healthz",
            Attributes { user: user("x", &[]), verb: "get".into(), path: "/healthz".into(), ..Default::default() },
            Decision::Allow,
        ),
    ];
    println!(
        "RBAC index: {} cluster roles, {} ClusterRoleBindings, {} RoleBindings (built in {load:.2?})",
        cluster_roles().len(),
        cluster_role_bindings().len() + CLUSTER_BINDINGS,
        NAMESPACES * BINDINGS_PER_NAMESPACE
    );
    println!();
    println!("| request | ns / authorize() |");
    println!("|---|---|");
    for (what, attrs, want) in cases {
        assert_eq!(chain.authorize(&attrs).0, want, "{what}");
        for _ in 0..10_000 {
            std::hint::black_box(chain.authorize(std::hint::black_box(&attrs)));
        }
        let t = Instant::now();
        for _ in 0..CALLS {
            std::hint::black_box(chain.authorize(std::hint::black_box(&attrs)));
        }
        let per = t.elapsed().as_nanos() as f64 / CALLS as f64;
        println!("| {what} | {per:.0} |");
    }
}
