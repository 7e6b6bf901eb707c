//! The storage controllers inside `rkube server` — the PersistentVolume
//! binder with its built-in local-path provisioner, PVC protection and PV
//! protection — driven with the real kubectl. Expected values are
//! upstream's: binding annotations and phases, event reasons and messages
//! (`persistentvolume-controller`), the k3s `local-path` StorageClass and
//! rancher local-path-provisioner's volume layout.

mod support;

use std::time::Duration;

use serde_json::{json, Value};
use support::{TestServer, TestServerOptions};

const CONTROLLERS: &str = "serviceaccount-controller,persistentvolume-binder-controller,\
persistentvolumeclaim-protection-controller,persistentvolume-protection-controller";
const WAIT: Duration = Duration::from_secs(60);

fn start(scheduler: bool) -> TestServer {
    TestServer::start_with(TestServerOptions {
        extra_args: vec!["--controllers".into(), CONTROLLERS.into()],
        scheduler,
        ..Default::default()
    })
}

/// The object, or None when kubectl cannot get it (e.g. deleted).
fn try_get(s: &TestServer, args: &[&str]) -> Option<Value> {
    let mut all = vec!["get"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["-o", "json"]);
    let out = s.kubectl(&all);
    out.status.success().then(|| serde_json::from_slice(&out.stdout).expect("JSON"))
}

fn phase(s: &TestServer, args: &[&str]) -> String {
    try_get(s, args).map(|v| v["status"]["phase"].as_str().unwrap_or("").to_string()).unwrap_or_default()
}

/// The events about object `name` in `ns`: (reason, message, source component).
fn events(s: &TestServer, ns: &str, name: &str) -> Vec<(String, String, String)> {
    let list = s.get_json(&["events", "-n", ns]);
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["involvedObject"]["name"] == name)
        .map(|e| {
            let f = |v: &Value| v.as_str().unwrap_or("").to_string();
            (f(&e["reason"]), f(&e["message"]), f(&e["source"]["component"]))
        })
        .collect()
}

fn has_event(s: &TestServer, ns: &str, name: &str, reason: &str, message: &str, component: &str) -> bool {
    events(s, ns, name).iter().any(|(r, m, c)| r == reason && m == message && c == component)
}

fn host_pv(name: &str, size: &str, policy: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
        "spec": {"capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"], "storageClassName": "manual",
                 "persistentVolumeReclaimPolicy": policy, "hostPath": {"path": format!("/tmp/rkube-test-{name}")}}})
}

fn claim(name: &str, size: &str, class: Option<&str>) -> Value {
    let mut c = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": "default"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}}});
    if let Some(class) = class {
        c["spec"]["storageClassName"] = json!(class);
    }
    c
}

/// A static 1Gi hostPath volume of class `manual` and a 500Mi claim of the
/// class bind (the smallest fitting volume, not the 5Gi one): both Bound,
/// claimRef with the claim's UID, `pv.kubernetes.io/bind-completed` and
/// `bound-by-controller` on the claim; a claim whose selector matches
/// nothing (no class) stays Pending with upstream's FailedBinding event;
/// deleting a claim of a Retain volume leaves the volume Released; PV
/// protection keeps a Bound volume being deleted until it is released.
#[test]
fn static_volume_binds_smallest_fit_and_retain_releases() {
    let s = start(false);
    s.create(&host_pv("pv-small", "1Gi", "Retain"));
    s.create(&host_pv("pv-big", "5Gi", "Retain"));
    s.wait_for(WAIT, "static volumes Available", || {
        phase(&s, &["pv", "pv-small"]) == "Available" && phase(&s, &["pv", "pv-big"]) == "Available"
    });
    s.create(&claim("claim1", "500Mi", Some("manual")));
    s.wait_for(WAIT, "claim1 Bound", || phase(&s, &["pvc", "claim1"]) == "Bound");
    let pvc = s.get_json(&["pvc", "claim1"]);
    assert_eq!(pvc["spec"]["volumeName"], "pv-small");
    assert_eq!(pvc["metadata"]["annotations"]["pv.kubernetes.io/bind-completed"], "yes");
    assert_eq!(pvc["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"], "yes");
    assert_eq!(pvc["status"]["capacity"]["storage"], "1Gi");
    assert_eq!(pvc["status"]["accessModes"], json!(["ReadWriteOnce"]));
    s.wait_for(WAIT, "pv-small Bound", || phase(&s, &["pv", "pv-small"]) == "Bound");
    let pv = s.get_json(&["pv", "pv-small"]);
    assert_eq!(pv["spec"]["claimRef"]["name"], "claim1");
    assert_eq!(pv["spec"]["claimRef"]["namespace"], "default");
    assert_eq!(pv["spec"]["claimRef"]["uid"], pvc["metadata"]["uid"]);
    assert_eq!(pv["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"], "yes");
    assert_eq!(phase(&s, &["pv", "pv-big"]), "Available");

    // No class and a selector nothing matches: Pending, FailedBinding.
    let mut nomatch = claim("nomatch", "1Mi", Some(""));
    nomatch["spec"]["selector"] = json!({"matchLabels": {"disk": "none"}});
    s.create(&nomatch);
    s.wait_for(WAIT, "FailedBinding event", || {
        has_event(
            &s,
            "default",
            "nomatch",
            "FailedBinding",
            "no persistent volumes available for this claim and no storage class is set",
            "persistentvolume-controller",
        )
    });
    assert_eq!(phase(&s, &["pvc", "nomatch"]), "Pending");
    assert!(s.get_json(&["pvc", "nomatch"])["spec"]["volumeName"].is_null());

    // Retain: the claim goes (no pod uses it), the volume stays Released with its claimRef.
    s.kubectl_ok(&["delete", "pvc", "claim1", "--wait=false"]);
    s.wait_for(WAIT, "claim1 gone", || try_get(&s, &["pvc", "claim1"]).is_none());
    s.wait_for(WAIT, "pv-small Released", || phase(&s, &["pv", "pv-small"]) == "Released");
    assert_eq!(s.get_json(&["pv", "pv-small"])["spec"]["claimRef"]["name"], "claim1");

    // PV protection: a Bound volume being deleted stays until its claim is gone.
    s.create(&claim("claim2", "2Gi", Some("manual")));
    s.wait_for(WAIT, "claim2 Bound to pv-big", || {
        phase(&s, &["pvc", "claim2"]) == "Bound" && phase(&s, &["pv", "pv-big"]) == "Bound"
    });
    s.kubectl_ok(&["delete", "pv", "pv-big", "--wait=false"]);
    std::thread::sleep(Duration::from_secs(3));
    let big = try_get(&s, &["pv", "pv-big"]).expect("a Bound volume stays while being deleted");
    assert!(big["metadata"]["deletionTimestamp"].is_string());
    assert_eq!(big["metadata"]["finalizers"], json!(["kubernetes.io/pv-protection"]));
    s.kubectl_ok(&["delete", "pvc", "claim2", "--wait=false"]);
    s.wait_for(WAIT, "pv-big gone once released", || try_get(&s, &["pv", "pv-big"]).is_none());
    // A released volume is no longer protected either.
    s.kubectl_ok(&["delete", "pv", "pv-small", "--wait=false"]);
    s.wait_for(WAIT, "pv-small gone", || try_get(&s, &["pv", "pv-small"]).is_none());
}

/// k3s's local-path: the default StorageClass exists; a claim of it waits
/// for its first consumer (WaitForFirstConsumer event) until the scheduler
/// places a pod using it, then the binder hands it to `rancher.io/local-path`
/// (ExternalProvisioning), which provisions `pvc-<uid>` — a hostPath
/// (DirectoryOrCreate) under `<data-dir>/storage` limited to the pod's node
/// — and the claim is bound. PVC protection keeps the claim while the pod
/// uses it; once both are gone, reclaim policy Delete deletes the volume.
#[test]
fn local_path_claim_waits_for_first_consumer_then_provisions_on_its_node() {
    let s = start(true);
    s.add_ready_node("n1", json!({}), json!([]));
    s.wait_for(WAIT, "the local-path StorageClass", || try_get(&s, &["storageclass", "local-path"]).is_some());
    let sc = s.get_json(&["storageclass", "local-path"]);
    assert_eq!(sc["provisioner"], "rancher.io/local-path");
    assert_eq!(sc["volumeBindingMode"], "WaitForFirstConsumer");
    assert_eq!(sc["reclaimPolicy"], "Delete");
    assert_eq!(sc["metadata"]["annotations"]["storageclass.kubernetes.io/is-default-class"], "true");

    // No class: DefaultStorageClass admission picks local-path.
    s.create(&claim("data", "64Mi", None));
    assert_eq!(s.get_json(&["pvc", "data"])["spec"]["storageClassName"], "local-path");
    s.wait_for(WAIT, "WaitForFirstConsumer event", || {
        has_event(
            &s,
            "default",
            "data",
            "WaitForFirstConsumer",
            "waiting for first consumer to be created before binding",
            "persistentvolume-controller",
        )
    });
    assert_eq!(phase(&s, &["pvc", "data"]), "Pending");
    assert_eq!(s.get_json(&["pv"])["items"], json!([]), "nothing provisioned before a consumer exists");

    s.create(&json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "user", "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}],
                 "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]}}));
    s.wait_for(WAIT, "data Bound", || phase(&s, &["pvc", "data"]) == "Bound");
    let pvc = s.get_json(&["pvc", "data"]);
    let uid = pvc["metadata"]["uid"].as_str().unwrap().to_string();
    let pv_name = format!("pvc-{uid}");
    assert_eq!(pvc["spec"]["volumeName"], pv_name.as_str());
    assert_eq!(pvc["metadata"]["annotations"]["volume.kubernetes.io/selected-node"], "n1");
    assert_eq!(pvc["metadata"]["annotations"]["volume.kubernetes.io/storage-provisioner"], "rancher.io/local-path");
    assert_eq!(
        pvc["metadata"]["annotations"]["volume.beta.kubernetes.io/storage-provisioner"],
        "rancher.io/local-path"
    );
    assert_eq!(pvc["metadata"]["annotations"]["pv.kubernetes.io/bind-completed"], "yes");
    assert_eq!(pvc["status"]["capacity"]["storage"], "64Mi");
    let pv = s.get_json(&["pv", &pv_name]);
    let path = s.data_dir().join("storage").join(format!("{pv_name}_default_data"));
    assert_eq!(pv["spec"]["hostPath"], json!({"path": path.display().to_string(), "type": "DirectoryOrCreate"}));
    assert_eq!(
        pv["spec"]["nodeAffinity"],
        json!({"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": ["n1"]}]}]}})
    );
    assert_eq!(pv["spec"]["persistentVolumeReclaimPolicy"], "Delete");
    assert_eq!(pv["spec"]["storageClassName"], "local-path");
    assert_eq!(pv["spec"]["claimRef"]["uid"], uid.as_str());
    assert_eq!(pv["metadata"]["annotations"]["pv.kubernetes.io/provisioned-by"], "rancher.io/local-path");
    s.wait_for(WAIT, "the pod scheduled to n1", || {
        try_get(&s, &["pod", "user"]).is_some_and(|p| p["spec"]["nodeName"] == "n1")
    });
    let external = "Waiting for a volume to be created either by the external provisioner 'rancher.io/local-path' or \
                    manually by the system administrator. If volume creation is delayed, please verify that the \
                    provisioner is running and correctly registered.";
    assert!(has_event(&s, "default", "data", "ExternalProvisioning", external, "persistentvolume-controller"));
    let succeeded = format!("Successfully provisioned volume {pv_name}");
    assert!(
        events(&s, "default", "data").iter().any(|(r, m, _)| r == "ProvisioningSucceeded" && *m == succeeded),
        "{:?}",
        events(&s, "default", "data")
    );

    // PVC protection: deleting the claim while the scheduled pod uses it leaves it Terminating.
    s.kubectl_ok(&["delete", "pvc", "data", "--wait=false"]);
    std::thread::sleep(Duration::from_secs(3));
    let terminating = try_get(&s, &["pvc", "data"]).expect("the claim stays while a pod uses it");
    assert!(terminating["metadata"]["deletionTimestamp"].is_string());
    assert_eq!(terminating["metadata"]["finalizers"], json!(["kubernetes.io/pvc-protection"]));
    assert!(try_get(&s, &["pv", &pv_name]).is_some());
    s.kubectl_ok(&["delete", "pod", "user", "--grace-period=0", "--force"]);
    s.wait_for(WAIT, "the claim gone once the pod is", || try_get(&s, &["pvc", "data"]).is_none());
    // Reclaim policy Delete: the volume goes too.
    s.wait_for(WAIT, "the provisioned volume deleted", || try_get(&s, &["pv", &pv_name]).is_none());
}
