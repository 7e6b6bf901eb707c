//! The kube-rs client (kube 5, rustls) drives the real server with the admin
//! kubeconfig: ConfigMap create, get, list with a label selector, merge,
//! strategic-merge and server-side-apply patches, a watch that sees ADDED,
//! MODIFIED and DELETED, delete; Pod create and delete; Namespace list.

mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config, ResourceExt};
use serde_json::json;
use support::TestServer;

async fn client(server: &TestServer) -> Client {
    let kubeconfig = Kubeconfig::read_from(server.kubeconfig()).expect("read the admin kubeconfig");
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("kube config from the admin kubeconfig");
    Client::try_from(config).expect("kube client")
}

fn configmap(name: &str, labels: &[(&str, &str)], data: &[(&str, &str)]) -> ConfigMap {
    serde_json::from_value(json!({
        "metadata": {
            "name": name,
            "labels": labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<BTreeMap<_, _>>(),
        },
        "data": data.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<BTreeMap<_, _>>(),
    }))
    .unwrap()
}

fn api_error(result: Result<impl std::fmt::Debug, kube::Error>) -> Box<kube::core::Status> {
    match result {
        Err(kube::Error::Api(status)) => status,
        other => panic!("expected an API error, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_rs_configmap_lifecycle() {
    let server = TestServer::start();
    let client = client(&server).await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");

    // create + get
    let created = cms
        .create(
            &PostParams::default(),
            &configmap("kube-rs", &[("app", "web"), ("client", "kube-rs")], &[("mode", "fast")]),
        )
        .await
        .expect("create configmap");
    assert_eq!(created.namespace().as_deref(), Some("default"));
    assert!(created.uid().is_some_and(|u| u.len() == 36), "{created:?}");
    assert!(created.resource_version().is_some(), "{created:?}");
    let got = cms.get("kube-rs").await.expect("get configmap");
    assert_eq!(got.data.as_ref().unwrap()["mode"], "fast");
    assert_eq!(got.uid(), created.uid());
    let missing = api_error(cms.get("no-such-configmap").await);
    assert_eq!((missing.code, missing.reason.as_str()), (404, "NotFound"), "{missing:?}");

    // a second object that the label selector must leave out
    cms.create(&PostParams::default(), &configmap("other", &[("app", "db")], &[])).await.expect("create other");
    let dup = api_error(cms.create(&PostParams::default(), &configmap("other", &[], &[])).await);
    assert_eq!((dup.code, dup.reason.as_str()), (409, "AlreadyExists"), "{dup:?}");

    // list with a label selector
    let list = cms.list(&ListParams::default().labels("app=web,client")).await.expect("list by label");
    assert_eq!(list.items.iter().map(|c| c.name_any()).collect::<Vec<_>>(), ["kube-rs"]);
    assert!(list.metadata.resource_version.is_some(), "{:?}", list.metadata);
    let all = cms.list(&ListParams::default()).await.expect("list all");
    let names: Vec<_> = all.items.iter().map(|c| c.name_any()).collect();
    assert!(names.contains(&"kube-rs".to_string()) && names.contains(&"other".to_string()), "{names:?}");

    // merge patch
    let patched = cms
        .patch("kube-rs", &PatchParams::default(), &Patch::Merge(json!({"data": {"mode": "slow", "extra": "1"}})))
        .await
        .expect("merge patch");
    assert_eq!(patched.data.as_ref().unwrap()["mode"], "slow");
    assert_eq!(patched.data.as_ref().unwrap()["extra"], "1");

    // strategic merge patch
    let patched = cms
        .patch(
            "kube-rs",
            &PatchParams::default(),
            &Patch::Strategic(json!({"metadata": {"labels": {"tier": "backend"}}, "data": {"extra": null}})),
        )
        .await
        .expect("strategic merge patch");
    assert_eq!(patched.labels()["tier"], "backend");
    assert_eq!(patched.labels()["app"], "web");
    assert!(!patched.data.as_ref().unwrap().contains_key("extra"), "{patched:?}");

    // server-side apply: create-on-apply, then an update by the same manager,
    // then a conflict with another manager unless forced
    let applied = cms
        .patch(
            "applied",
            &PatchParams::apply("kube-rs-test"),
            &Patch::Apply(json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "applied", "labels": {"app": "web"}},
                "data": {"owner": "kube-rs"},
            })),
        )
        .await
        .expect("server-side apply (create)");
    assert_eq!(applied.data.as_ref().unwrap()["owner"], "kube-rs");
    let managers: Vec<_> = applied.managed_fields().iter().map(|m| (m.manager.clone(), m.operation.clone())).collect();
    assert!(
        managers.contains(&(Some("kube-rs-test".into()), Some("Apply".into()))),
        "managedFields after apply: {managers:?}"
    );
    let applied = cms
        .patch(
            "applied",
            &PatchParams::apply("kube-rs-test"),
            &Patch::Apply(json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "applied", "labels": {"app": "web"}},
                "data": {"owner": "kube-rs", "second": "yes"},
            })),
        )
        .await
        .expect("server-side apply (update)");
    assert_eq!(applied.data.as_ref().unwrap()["second"], "yes");
    let conflict_patch = Patch::Apply(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "applied"},
        "data": {"owner": "someone-else"},
    }));
    let conflict = api_error(cms.patch("applied", &PatchParams::apply("other-manager"), &conflict_patch).await);
    assert_eq!((conflict.code, conflict.reason.as_str()), (409, "Conflict"), "{conflict:?}");
    let forced = cms
        .patch("applied", &PatchParams::apply("other-manager").force(), &conflict_patch)
        .await
        .expect("forced server-side apply");
    assert_eq!(forced.data.as_ref().unwrap()["owner"], "someone-else");

    // delete
    let deleted = cms.delete("other", &DeleteParams::default()).await.expect("delete");
    // as upstream's store for kinds without ReturnDeletedObject: a Success
    // Status naming the object
    let status = deleted.right().expect("a Status for a deleted configmap");
    let details = status.details.as_ref().expect("Status details");
    assert_eq!((details.name.as_str(), details.kind.as_str()), ("other", "configmaps"), "{status:?}");
    let gone = api_error(cms.get("other").await);
    assert_eq!(gone.code, 404, "{gone:?}");
    for name in ["kube-rs", "applied"] {
        cms.delete(name, &DeleteParams::default()).await.expect("delete");
    }
    let left = cms.list(&ListParams::default()).await.expect("list after delete");
    let left: Vec<_> = left.items.iter().map(|c| c.name_any()).filter(|n| n != "kube-root-ca.crt").collect();
    assert!(left.is_empty(), "{left:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_rs_watch_sees_added_modified_deleted() {
    let server = TestServer::start();
    let client = client(&server).await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");

    let rv =
        cms.list(&ListParams::default()).await.expect("list").metadata.resource_version.expect("list resourceVersion");
    let stream = cms.watch(&WatchParams::default().labels("watched=yes").timeout(30), &rv).await.expect("start watch");
    let collector = tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        let mut seen = Vec::new();
        while let Some(event) = stream.try_next().await.expect("watch stream") {
            let (kind, cm) = match event {
                WatchEvent::Added(cm) => ("ADDED", cm),
                WatchEvent::Modified(cm) => ("MODIFIED", cm),
                WatchEvent::Deleted(cm) => ("DELETED", cm),
                WatchEvent::Bookmark(b) => {
                    panic!("bookmark without allowWatchBookmarks at {}", b.metadata.resource_version)
                }
                WatchEvent::Error(status) => panic!("watch error event: {status:?}"),
            };
            let mode = cm.data.as_ref().and_then(|d| d.get("mode").cloned()).unwrap_or_default();
            seen.push(format!("{kind} {} {mode}", cm.name_any()));
            if kind == "DELETED" {
                break;
            }
        }
        seen
    });

    // not matched by the selector: must not show up
    cms.create(&PostParams::default(), &configmap("unwatched", &[], &[])).await.expect("create unwatched");
    cms.create(&PostParams::default(), &configmap("watched", &[("watched", "yes")], &[("mode", "a")]))
        .await
        .expect("create watched");
    cms.patch("watched", &PatchParams::default(), &Patch::Merge(json!({"data": {"mode": "b"}})))
        .await
        .expect("patch watched");
    cms.delete("watched", &DeleteParams::default()).await.expect("delete watched");

    let seen = tokio::time::timeout(Duration::from_secs(20), collector)
        .await
        .expect("watch events within 20 s")
        .expect("watch collector");
    assert_eq!(seen, ["ADDED watched a", "MODIFIED watched b", "DELETED watched b"]);

    // a watch from resourceVersion "0" starts with the existing objects as ADDED
    let stream = cms.watch(&WatchParams::default().timeout(5), "0").await.expect("watch from 0");
    let first =
        tokio::time::timeout(Duration::from_secs(10), std::pin::pin!(stream).next()).await.expect("an initial event");
    match first {
        Some(Ok(WatchEvent::Added(cm))) => {
            assert!(["unwatched", "kube-root-ca.crt"].contains(&cm.name_any().as_str()), "{cm:?}")
        }
        other => panic!("expected an initial ADDED event, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_rs_pods_and_namespaces() {
    let server = TestServer::start();
    let client = client(&server).await;

    let namespaces: Api<Namespace> = Api::all(client.clone());
    let names: Vec<_> = namespaces
        .list(&ListParams::default())
        .await
        .expect("list namespaces")
        .items
        .iter()
        .map(|n| n.name_any())
        .collect();
    for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        assert!(names.iter().any(|n| n == ns), "{ns} missing from {names:?}");
    }
    let default = namespaces.get("default").await.expect("get namespace default");
    assert_eq!(default.status.and_then(|s| s.phase).as_deref(), Some("Active"));

    let pods: Api<Pod> = Api::namespaced(client, "default");
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "kube-rs-pod", "labels": {"app": "kube-rs"}},
        "spec": {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}]},
    }))
    .unwrap();
    let created = pods.create(&PostParams::default(), &pod).await.expect("create pod");
    let spec = created.spec.as_ref().unwrap();
    // defaulted as upstream
    assert_eq!(spec.restart_policy.as_deref(), Some("Always"));
    assert_eq!(spec.containers[0].image_pull_policy.as_deref(), Some("IfNotPresent"));
    assert_eq!(created.status.as_ref().and_then(|s| s.phase.as_deref()), Some("Pending"));
    let listed = pods.list(&ListParams::default().labels("app=kube-rs")).await.expect("list pods");
    assert_eq!(listed.items.len(), 1);

    let mut invalid = pod.clone();
    invalid.metadata.name = Some("Bad_Name".into());
    let err = api_error(pods.create(&PostParams::default(), &invalid).await);
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"), "{err:?}");

    pods.delete("kube-rs-pod", &DeleteParams::default()).await.expect("delete pod");
    // an unscheduled pod goes at once, whatever the grace period
    let gone = api_error(pods.get("kube-rs-pod").await);
    assert_eq!(gone.code, 404, "{gone:?}");
}

/// kube-rs discovery, legacy (`run`: /apis, /apis/{g}/{v}, /api, /api/v1)
/// and aggregated (`run_aggregated`: /apis and /api as APIGroupDiscoveryList),
/// then a dynamic API built from what it found.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_rs_discovery_and_dynamic_api() {
    use kube::api::{DynamicObject, GroupVersionKind};
    use kube::discovery::{verbs, Discovery, Scope};

    let server = TestServer::start();
    let client = client(&server).await;
    let deployment = GroupVersionKind::gvk("apps", "v1", "Deployment");
    for aggregated in [false, true] {
        let discovery = Discovery::new(client.clone());
        let discovery = if aggregated { discovery.run_aggregated().await } else { discovery.run().await }
            .unwrap_or_else(|e| panic!("discovery (aggregated: {aggregated}): {e}"));
        for group in ["", "apps", "batch", "rbac.authorization.k8s.io", "coordination.k8s.io", "apiextensions.k8s.io"] {
            assert!(discovery.has_group(group), "group {group:?} missing (aggregated: {aggregated})");
        }
        let (resource, caps) = discovery.resolve_gvk(&deployment).expect("apps/v1 Deployment discovered");
        assert_eq!(resource.plural, "deployments");
        assert!(matches!(caps.scope, Scope::Namespaced), "aggregated: {aggregated}");
        for verb in [verbs::CREATE, verbs::GET, verbs::LIST, verbs::WATCH, verbs::PATCH, verbs::DELETE] {
            assert!(caps.supports_operation(verb), "deployments lack {verb} (aggregated: {aggregated}): {caps:?}");
        }
        let subresources: Vec<_> = caps.subresources.iter().map(|(r, _)| r.plural.clone()).collect();
        assert!(subresources.contains(&"scale".into()) && subresources.contains(&"status".into()), "{subresources:?}");
        let (ns, ns_caps) =
            discovery.resolve_gvk(&GroupVersionKind::gvk("", "v1", "Namespace")).expect("v1 Namespace discovered");
        assert_eq!(ns.plural, "namespaces");
        assert!(matches!(ns_caps.scope, Scope::Cluster));

        let name = if aggregated { "dyn-aggregated" } else { "dyn-legacy" };
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &resource);
        let obj: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name},
            "spec": {
                "selector": {"matchLabels": {"app": name}},
                "template": {
                    "metadata": {"labels": {"app": name}},
                    "spec": {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}]},
                },
            },
        }))
        .unwrap();
        let created = api.create(&PostParams::default(), &obj).await.expect("create a deployment dynamically");
        assert_eq!(created.data["spec"]["replicas"], 1, "defaulted: {:?}", created.data);
        let listed = api.list(&ListParams::default()).await.expect("list deployments dynamically");
        assert!(listed.items.iter().any(|d| d.name_any() == name), "{listed:?}");
        api.delete(name, &DeleteParams::default()).await.expect("delete a deployment dynamically");
    }
}
