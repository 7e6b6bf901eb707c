//! The kubelet's volume manager (rkube_kubelet::pods::volumes) against a real
//! `rkube server`, with objects written through the API as an admin:
//! configMap and secret volumes (items, modes, tmpfs for secrets), an update
//! of the ConfigMap rewriting the mounted files on the next setup, missing
//! and optional sources with upstream's FailedMount messages, the
//! `kube-api-access-*` projected volume ServiceAccount admission adds
//! (TokenRequest bound to the pod, `kube-root-ca.crt`, namespace), a PVC
//! bound to a hostPath PV, and teardown. Needs root for the tmpfs mounts.

mod support;

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolume, PersistentVolumeClaim, Pod, Secret};
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use rkube_kubelet::pods::volumes::{sources::Allocatable, tmpfs, VolumeManager};
use serde_json::json;
use support::{TestServer, TestServerOptions};

async fn client(server: &TestServer) -> Client {
    let kubeconfig = Kubeconfig::read_from(server.kubeconfig()).expect("read the admin kubeconfig");
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await.expect("config");
    Client::try_from(config).expect("kube client")
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("read {}: {e}", p.display()))
}

async fn create<K>(api: &Api<K>, v: serde_json::Value) -> K
where
    K: kube::Resource
        + Clone
        + k8s_openapi::serde::de::DeserializeOwned
        + k8s_openapi::serde::Serialize
        + std::fmt::Debug,
{
    api.create(&PostParams::default(), &serde_json::from_value(v).unwrap()).await.expect("create")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn volume_manager_sets_up_api_volumes_tokens_and_claims() {
    if !is_root() {
        eprintln!("SKIPPED volume_manager_sets_up_api_volumes_tokens_and_claims: tmpfs mounts need root");
        return;
    }
    let server = TestServer::start_with(TestServerOptions::default());
    let client = client(&server).await;
    let ns = "default";
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    let secrets: Api<Secret> = Api::namespaced(client.clone(), ns);
    create(&cms, json!({"metadata": {"name": "cfg"}, "data": {"a": "1", "b": "2"}})).await;
    create(&secrets, json!({"metadata": {"name": "sec"}, "stringData": {"user": "admin"}})).await;
    // The root-CA publisher is not running in this server: publish it here.
    if cms.get_opt("kube-root-ca.crt").await.unwrap().is_none() {
        create(&cms, json!({"metadata": {"name": "kube-root-ca.crt"}, "data": {"ca.crt": "CA PEM"}})).await;
    }
    let host_dir = tempfile::tempdir().unwrap();
    let pv_path = host_dir.path().join("pv");
    std::fs::create_dir(&pv_path).unwrap();

    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let pod = create(&pods, json!({
        "metadata": {"name": "vols", "labels": {"app": "web"}},
        "spec": {
            "containers": [{"name": "c", "image": "busybox", "volumeMounts": [
                {"name": "cfg", "mountPath": "/cfg"}, {"name": "sec", "mountPath": "/sec"}]}],
            "securityContext": {"fsGroup": 3000},
            "volumes": [
                {"name": "cfg", "configMap": {"name": "cfg"}},
                {"name": "sec", "secret": {"secretName": "sec", "defaultMode": 0o400}},
                {"name": "opt", "configMap": {"name": "nope", "optional": true}},
                {"name": "labels", "downwardAPI": {"items": [{"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]}},
                {"name": "data", "persistentVolumeClaim": {"claimName": "claim"}}
            ]
        }
    }))
    .await;
    let uid = pod.metadata.uid.clone().unwrap();

    // A PVC bound to a hostPath PV (the binder is not running: bind by hand).
    let pvcs: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), ns);
    let pvs: Api<PersistentVolume> = Api::all(client.clone());
    let pvc = create(
        &pvcs,
        json!({"metadata": {"name": "claim"}, "spec": {"accessModes": ["ReadWriteOnce"],
        "volumeName": "pv-1", "resources": {"requests": {"storage": "1Gi"}}}}),
    )
    .await;
    create(
        &pvs,
        json!({"metadata": {"name": "pv-1"}, "spec": {"accessModes": ["ReadWriteOnce"],
        "capacity": {"storage": "1Gi"}, "hostPath": {"path": pv_path.to_string_lossy(), "type": "Directory"},
        "claimRef": {"namespace": ns, "name": "claim", "uid": pvc.metadata.uid.clone().unwrap()}}}),
    )
    .await;

    let data_dir = tempfile::tempdir().unwrap();
    let vm = VolumeManager::new(data_dir.path(), client.clone(), "node-1");
    vm.set_node_allocatable(Allocatable {
        cpu_millis: 1000.0,
        memory_bytes: 1073741824.0,
        ephemeral_storage_bytes: 0.0,
    });

    // Unbound claim: upstream's message, as a FailedMount.
    let err = vm.setup(&pod).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "MountVolume.SetUp failed for volume \"data\" : error processing PVC default/claim: PVC is not bound"
    );
    pvcs.patch_status("claim", &PatchParams::default(), &Patch::Merge(json!({"status": {"phase": "Bound"}})))
        .await
        .expect("bind the claim");

    // The pod as stored (with the kube-api-access volume admission added).
    let pod = pods.get("vols").await.unwrap();
    let access = pod
        .spec
        .as_ref()
        .unwrap()
        .volumes
        .as_ref()
        .unwrap()
        .iter()
        .find(|v| v.name.starts_with("kube-api-access-"))
        .expect("ServiceAccount admission adds kube-api-access-*")
        .name
        .clone();
    let vols = vm.setup(&pod).await.expect("setup");
    let root = data_dir.path().join("agent/pods").join(&uid).join("volumes");

    let cfg = root.join("kubernetes.io~configmap/cfg");
    assert_eq!(vols.volumes["cfg"].host_path, cfg);
    assert_eq!(read(&cfg.join("a")), "1");
    assert_eq!(std::fs::read_link(cfg.join("a")).unwrap(), Path::new("..data/a"));
    let a_meta = std::fs::metadata(cfg.join("a")).unwrap();
    assert_eq!(a_meta.gid(), 3000, "fsGroup");
    assert_eq!(a_meta.mode() & 0o7777, 0o644, "defaultMode 0644 (group read already set)");

    let sec = root.join("kubernetes.io~secret/sec");
    assert_eq!(read(&sec.join("user")), "admin");
    assert!(tmpfs::is_mount_point(&sec), "secret volumes are on tmpfs");
    assert_eq!(std::fs::metadata(sec.join("user")).unwrap().mode() & 0o7777, 0o440, "0400 + fsGroup group read");

    let opt = root.join("kubernetes.io~configmap/opt");
    assert!(
        opt.is_dir()
            && std::fs::read_dir(&opt).unwrap().all(|e| e.unwrap().file_name().to_string_lossy().starts_with(".."))
    );
    assert_eq!(read(&root.join("kubernetes.io~downward-api/labels/labels")), "app=\"web\"");
    assert_eq!(vols.volumes["data"].host_path, pv_path);

    let api = root.join("kubernetes.io~projected").join(&access);
    let token = read(&api.join("token"));
    assert_eq!(token.split('.').count(), 3, "a JWT: {token}");
    assert_eq!(read(&api.join("namespace")), "default");
    assert!(!read(&api.join("ca.crt")).is_empty());
    // The token is bound to the pod and accepted by the API server.
    let review: serde_json::Value = {
        let reviews: Api<k8s_openapi::api::authentication::v1::TokenReview> = Api::all(client.clone());
        let r = reviews
            .create(&PostParams::default(), &serde_json::from_value(json!({"spec": {"token": token}})).unwrap())
            .await
            .expect("token review");
        serde_json::to_value(r.status).unwrap()
    };
    assert_eq!(review["authenticated"], true, "{review}");
    assert_eq!(review["user"]["username"], "system:serviceaccount:default:default");
    assert_eq!(review["user"]["extra"]["authentication.kubernetes.io/pod-name"][0], "vols", "{review}");

    // A changed ConfigMap is rewritten by the next setup; a removed key vanishes.
    cms.patch("cfg", &PatchParams::default(), &Patch::Merge(json!({"data": {"a": "changed", "b": null}})))
        .await
        .unwrap();
    vm.setup(&pod).await.unwrap();
    assert_eq!(read(&cfg.join("a")), "changed");
    assert!(std::fs::symlink_metadata(cfg.join("b")).is_err());
    // The cached token is reused within its lifetime.
    assert_eq!(read(&api.join("token")), token);

    // A missing, non-optional ConfigMap: upstream's FailedMount message.
    let mut broken = pod.clone();
    broken.spec.as_mut().unwrap().volumes =
        Some(vec![serde_json::from_value(json!({"name": "missing", "configMap": {"name": "nope"}})).unwrap()]);
    assert_eq!(
        vm.setup(&broken).await.unwrap_err().to_string(),
        "MountVolume.SetUp failed for volume \"missing\" : configmap \"nope\" not found"
    );

    vm.teardown(&uid).await.unwrap();
    assert!(!data_dir.path().join("agent/pods").join(&uid).exists());
    assert!(tmpfs::mounts_under(data_dir.path()).unwrap().is_empty());
    assert!(pv_path.is_dir(), "teardown leaves PV data alone");
}
