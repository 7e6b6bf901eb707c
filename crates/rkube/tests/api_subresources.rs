//! Subresources and multi-version resources through the real kubectl and
//! raw requests: `scale` of deployments, replicasets, statefulsets and
//! replication controllers; HorizontalPodAutoscalers served as
//! autoscaling/v1 and v2 from one storage; core and events.k8s.io Events
//! from one store (with their time to live); pods' binding, eviction
//! (PodDisruptionBudgets, 429), ephemeralcontainers and the streaming
//! subresources' answers without a kubelet; the system PriorityClasses,
//! the API server identity Lease (and the collection of expired ones),
//! and the local APIServices. Tests named after a conformance
//! behaviour carry its testname.

mod api_common;
mod support;

use api_common::{apply, create, fails, manifest, ok, request};
use serde_json::Value;
use support::TestServer;

fn json(s: &str) -> Value {
    serde_json::from_str(s).unwrap_or_else(|e| panic!("not JSON ({e}): {s}"))
}

const DEPLOYMENT: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx
";

/// `kubectl scale deploy/web --replicas=3`: spec.replicas changes through
/// the scale subresource, generation bumps, the Scale reads back with the
/// selector in its string form; a stale `--resource-version` is refused
/// and negative replicas are invalid.
#[test]
fn kubectl_scale_deployment() {
    let s = TestServer::start();
    create(&s, "deploy.yaml", DEPLOYMENT);
    let before = json(&ok(&s, &["get", "deploy", "web", "-o", "json"]));
    assert_eq!(before["metadata"]["generation"], 1);

    let out = ok(&s, &["scale", "deploy/web", "--replicas=3"]);
    assert!(out.contains("deployment.apps/web scaled"), "{out}");
    let after = json(&ok(&s, &["get", "deploy", "web", "-o", "json"]));
    assert_eq!(after["spec"]["replicas"], 3);
    assert_eq!(after["metadata"]["generation"], 2);

    let scale = json(&ok(&s, &["get", "--raw", "/apis/apps/v1/namespaces/default/deployments/web/scale"]));
    assert_eq!(scale["kind"], "Scale");
    assert_eq!(scale["apiVersion"], "autoscaling/v1");
    assert_eq!(scale["spec"]["replicas"], 3);
    assert_eq!(scale["status"]["replicas"], 0);
    assert_eq!(scale["status"]["selector"], "app=web");
    assert_eq!(scale["metadata"]["resourceVersion"], after["metadata"]["resourceVersion"]);
    assert_eq!(scale["metadata"]["uid"], after["metadata"]["uid"]);

    // Precondition: the current resourceVersion passes, a stale one is a 409.
    let rv = after["metadata"]["resourceVersion"].as_str().unwrap().to_string();
    ok(&s, &["scale", "deploy/web", "--replicas=2", &format!("--resource-version={rv}")]);
    let err = fails(&s, &["scale", "deploy/web", "--replicas=5", &format!("--resource-version={rv}")]);
    assert!(err.contains("Expected resource version"), "{err}");
    // The server's own precondition: a PUT of a Scale with a stale resourceVersion.
    let stale = format!(
        r#"{{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{{"name":"web","namespace":"default","resourceVersion":"{rv}"}},"spec":{{"replicas":5}}}}"#
    );
    let path = manifest(&s, "scale.json", &stale);
    let url = "/apis/apps/v1/namespaces/default/deployments/web/scale";
    let err = fails(&s, &["replace", "--raw", url, "-f", &path]);
    assert!(err.contains("the object has been modified"), "{err}");
    assert_eq!(ok(&s, &["get", "deploy", "web", "-o", "jsonpath={.spec.replicas}"]), "2");

    let err = fails(&s, &["scale", "deploy/web", "--replicas=-1"]);
    assert!(err.contains("replicas"), "{err}");
    let err = fails(&s, &["scale", "deploy/missing", "--replicas=1"]);
    assert!(err.contains("deployments.apps \"missing\" not found"), "{err}");
}

/// Conformance "Replication Controller, get and update ReplicationController
/// scale": the scale reads and updates, and the controller's replicas equal
/// the new value; replicasets and statefulsets scale the same way.
#[test]
fn replication_controller_get_and_update_scale() {
    let s = TestServer::start();
    create(
        &s,
        "rc.yaml",
        "apiVersion: v1\nkind: ReplicationController\nmetadata:\n  name: rc\nspec:\n  replicas: 1\n  selector: {app: rc}\n  template:\n    metadata:\n      labels: {app: rc}\n    spec:\n      containers:\n      - name: c\n        image: nginx\n",
    );
    let scale = json(&ok(&s, &["get", "--raw", "/api/v1/namespaces/default/replicationcontrollers/rc/scale"]));
    assert_eq!(scale["spec"]["replicas"], 1);
    assert_eq!(scale["status"]["selector"], "app=rc");
    ok(&s, &["scale", "rc/rc", "--replicas=4"]);
    assert_eq!(ok(&s, &["get", "rc", "rc", "-o", "jsonpath={.spec.replicas}"]), "4");

    let rs = DEPLOYMENT.replace("kind: Deployment", "kind: ReplicaSet").replace("name: web\nspec", "name: rs\nspec");
    create(&s, "rs.yaml", &rs);
    ok(&s, &["scale", "rs/rs", "--replicas=2"]);
    assert_eq!(ok(&s, &["get", "rs", "rs", "-o", "jsonpath={.spec.replicas}"]), "2");

    let sts = DEPLOYMENT
        .replace("kind: Deployment", "kind: StatefulSet")
        .replace("name: web\nspec:\n", "name: db\nspec:\n  serviceName: db\n");
    create(&s, "sts.yaml", &sts);
    ok(&s, &["scale", "statefulset/db", "--replicas=0"]);
    assert_eq!(ok(&s, &["get", "sts", "db", "-o", "jsonpath={.spec.replicas}"]), "0");
}

/// An HPA created as autoscaling/v1 reads back in v2 with the cpu metric,
/// one created in v2 reads in v1 with `targetCPUUtilizationPercentage`
/// (and its other metrics in upstream's annotation); both versions list
/// the same objects and a v1 patch lands in the v2 object.
#[test]
fn horizontal_pod_autoscaler_v1_and_v2() {
    let s = TestServer::start();
    apply(
        &s,
        "apiVersion: autoscaling/v1\nkind: HorizontalPodAutoscaler\nmetadata:\n  name: one\nspec:\n  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}\n  maxReplicas: 5\n  targetCPUUtilizationPercentage: 60\n",
    );
    let v2 = json(&ok(&s, &["get", "horizontalpodautoscalers.v2.autoscaling", "one", "-o", "json"]));
    assert_eq!(v2["apiVersion"], "autoscaling/v2");
    assert_eq!(v2["spec"]["minReplicas"], 1);
    assert_eq!(v2["spec"]["metrics"][0]["resource"]["name"], "cpu");
    assert_eq!(v2["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"], 60);
    let v1 = json(&ok(&s, &["get", "horizontalpodautoscalers.v1.autoscaling", "one", "-o", "json"]));
    assert_eq!(v1["apiVersion"], "autoscaling/v1");
    assert_eq!(v1["spec"]["targetCPUUtilizationPercentage"], 60);
    assert!(v1["spec"].get("metrics").is_none(), "{v1}");

    apply(
        &s,
        "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata:\n  name: two\nspec:\n  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}\n  maxReplicas: 4\n  metrics:\n  - type: Resource\n    resource: {name: cpu, target: {type: Utilization, averageUtilization: 70}}\n  - type: Resource\n    resource: {name: memory, target: {type: AverageValue, averageValue: 100Mi}}\n",
    );
    let v1 = json(&ok(&s, &["get", "--raw", "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers/two"]));
    assert_eq!(v1["kind"], "HorizontalPodAutoscaler");
    assert_eq!(v1["spec"]["targetCPUUtilizationPercentage"], 70);
    let others = v1["metadata"]["annotations"]["autoscaling.alpha.kubernetes.io/metrics"].as_str().unwrap();
    assert!(others.contains("memory") && others.contains("targetAverageValue"), "{others}");

    let list = json(&ok(&s, &["get", "--raw", "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers"]));
    assert_eq!(list["kind"], "HorizontalPodAutoscalerList");
    assert_eq!(list["apiVersion"], "autoscaling/v1");
    assert_eq!(list["items"].as_array().unwrap().len(), 2);
    let table = ok(&s, &["get", "horizontalpodautoscalers.v1.autoscaling"]);
    assert!(table.contains("one") && table.contains("two"), "{table}");

    let path = "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers/one";
    let patch = manifest(&s, "hpa-patch.json", r#"{"spec":{"targetCPUUtilizationPercentage":45}}"#);
    let out =
        s.kubectl(&["patch", "horizontalpodautoscalers.v1.autoscaling", "one", "--type=merge", "--patch-file", &patch]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v2 = json(&ok(&s, &["get", "horizontalpodautoscalers.v2.autoscaling", "one", "-o", "json"]));
    assert_eq!(v2["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"], 45);
    assert_eq!(v2["spec"]["metrics"].as_array().unwrap().len(), 1);
    ok(&s, &["delete", "--raw", path]);
    let err = fails(&s, &["get", "horizontalpodautoscalers.v2.autoscaling", "one"]);
    assert!(err.contains("horizontalpodautoscalers.autoscaling \"one\" not found"), "{err}");

    // `kubectl autoscale` creates one that both versions show.
    create(&s, "deploy.yaml", DEPLOYMENT);
    let out = ok(&s, &["autoscale", "deployment", "web", "--max=3", "--cpu-percent=50"]);
    assert!(out.contains("horizontalpodautoscaler.autoscaling/web autoscaled"), "{out}");
    let table = ok(&s, &["get", "hpa", "web"]);
    assert!(table.contains("Deployment/web") && table.contains("50%"), "{table}");
    let path = "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers/web";
    assert_eq!(json(&ok(&s, &["get", "--raw", path]))["spec"]["targetCPUUtilizationPercentage"], 50);
}

/// Conformance "Event, manage lifecycle of an Event" and "New Event
/// resource lifecycle, testing a single event": a core Event is visible
/// through events.k8s.io with the new field names, a patch of `note` there
/// changes the core `message`, and the delete removes it from both.
#[test]
fn event_lifecycle_in_both_apis() {
    let s = TestServer::start();
    apply(
        &s,
        "apiVersion: v1\nkind: Event\nmetadata:\n  name: web.17a1b2c3d4e5f607\n  labels: {test: lifecycle}\ninvolvedObject: {kind: Pod, name: web, namespace: default}\nreason: Started\nmessage: hello\ntype: Normal\nsource: {component: kubelet}\ncount: 2\nfirstTimestamp: \"2026-01-01T00:00:00Z\"\nlastTimestamp: \"2026-01-01T00:01:00Z\"\nreportingComponent: kubelet\n",
    );
    let table = ok(&s, &["get", "events"]);
    assert!(table.contains("Started") && table.contains("hello"), "{table}");
    let ev = json(&ok(&s, &["get", "events.v1.events.k8s.io", "web.17a1b2c3d4e5f607", "-o", "json"]));
    assert_eq!(ev["apiVersion"], "events.k8s.io/v1");
    assert_eq!(ev["regarding"]["name"], "web");
    assert_eq!(ev["note"], "hello");
    assert_eq!(ev["deprecatedSource"]["component"], "kubelet");
    assert_eq!(ev["deprecatedCount"], 2);
    assert_eq!(ev["reportingController"], "kubelet");
    let listed = ok(&s, &["get", "events.events.k8s.io", "-l", "test=lifecycle", "-o", "name"]);
    assert_eq!(listed.trim(), "event.events.k8s.io/web.17a1b2c3d4e5f607");

    ok(
        &s,
        &["patch", "events.v1.events.k8s.io", "web.17a1b2c3d4e5f607", "--type=merge", "-p", r#"{"note":"patched"}"#],
    );
    let core = json(&ok(&s, &["get", "events", "web.17a1b2c3d4e5f607", "-o", "json"]));
    assert_eq!(core["message"], "patched");
    assert_eq!(core["involvedObject"]["name"], "web");

    apply(
        &s,
        "apiVersion: events.k8s.io/v1\nkind: Event\nmetadata:\n  name: new.17a1b2c3d4e5f608\neventTime: \"2026-01-01T00:00:00.000000Z\"\nregarding: {kind: Pod, name: web, namespace: default}\nreason: Pulled\nnote: image pulled\ntype: Normal\naction: Pull\nreportingController: kubelet\nreportingInstance: node-1\n",
    );
    let core = json(&ok(&s, &["get", "events", "new.17a1b2c3d4e5f608", "-o", "json"]));
    assert_eq!(core["message"], "image pulled");
    assert_eq!(core["reportingComponent"], "kubelet");

    ok(&s, &["delete", "events.events.k8s.io", "web.17a1b2c3d4e5f607"]);
    let err = fails(&s, &["get", "events", "web.17a1b2c3d4e5f607"]);
    assert!(err.contains("not found"), "{err}");
}

/// `--event-ttl`: Events disappear once their time to live has passed;
/// other objects stay.
#[test]
fn events_expire_after_the_event_ttl() {
    let s = TestServer::start_with(support::TestServerOptions {
        extra_args: vec!["--event-ttl".into(), "2s".into()],
        ..Default::default()
    });
    apply(
        &s,
        "apiVersion: v1\nkind: Event\nmetadata:\n  name: short.1\ninvolvedObject: {kind: Pod, name: p}\nreason: Test\nmessage: gone soon\n",
    );
    create(&s, "cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: stays\n");
    ok(&s, &["get", "event", "short.1"]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let out = s.kubectl(&["get", "event", "short.1"]);
        if !out.status.success() {
            assert!(String::from_utf8_lossy(&out.stderr).contains("not found"));
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the event outlived its TTL");
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    ok(&s, &["get", "configmap", "stays"]);
}

/// Conformance "Scheduler, Verify PriorityClass endpoints" (the part the
/// API server owns): the two system PriorityClasses exist at start.
#[test]
fn system_priority_classes_exist() {
    let s = TestServer::start();
    let table = ok(&s, &["get", "priorityclasses"]);
    assert!(table.contains("system-cluster-critical") && table.contains("system-node-critical"), "{table}");
    let pc = json(&ok(&s, &["get", "priorityclass", "system-node-critical", "-o", "json"]));
    assert_eq!(pc["value"], 2000001000);
    assert_eq!(pc["preemptionPolicy"], "PreemptLowerPriority");
    let pc = json(&ok(&s, &["get", "priorityclass", "system-cluster-critical", "-o", "json"]));
    assert_eq!(pc["value"], 2000000000);
}

/// The local APIServices kube-apiserver 1.33 registers at start
/// (`apiServicesToRegister`: every group-version of the delegated servers
/// that is in the priority table; the aggregator's own
/// apiregistration.k8s.io gets none): `kubectl get apiservices` lists
/// them with SERVICE `Local` and AVAILABLE `True`; each carries
/// `kube-aggregator.kubernetes.io/automanaged: onstart`, upstream's
/// priorities and the available controller's `Local` condition. rkube's
/// built-in metrics-server (metrics.k8s.io/v1beta1) is served in-process,
/// so its APIService is Local too.
#[test]
fn local_api_services_are_registered_for_every_built_in_group_version() {
    let s = TestServer::start();
    let mut names: Vec<String> = ok(&s, &["get", "apiservices", "-o", "name"]).lines().map(str::to_string).collect();
    names.sort();
    let want = [
        "v1.",
        "v1.admissionregistration.k8s.io",
        "v1.apiextensions.k8s.io",
        "v1.apps",
        "v1.authentication.k8s.io",
        "v1.authorization.k8s.io",
        "v1.autoscaling",
        "v1.batch",
        "v1.certificates.k8s.io",
        "v1.coordination.k8s.io",
        "v1.discovery.k8s.io",
        "v1.events.k8s.io",
        "v1.flowcontrol.apiserver.k8s.io",
        "v1.networking.k8s.io",
        "v1.node.k8s.io",
        "v1.policy",
        "v1.rbac.authorization.k8s.io",
        "v1.scheduling.k8s.io",
        "v1.storage.k8s.io",
        "v1beta1.metrics.k8s.io",
        "v2.autoscaling",
    ];
    let want: Vec<String> = want.iter().map(|n| format!("apiservice.apiregistration.k8s.io/{n}")).collect();
    assert_eq!(names, want);

    let table = ok(&s, &["get", "apiservices"]);
    let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "SERVICE", "AVAILABLE", "AGE"], "{table}");
    for line in table.lines().skip(1) {
        let cols: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(cols[1..3], ["Local", "True"], "{table}");
    }

    let apps = json(&ok(&s, &["get", "apiservice", "v1.apps", "-o", "json"]));
    assert_eq!(apps["metadata"]["labels"]["kube-aggregator.kubernetes.io/automanaged"], "onstart", "{apps}");
    assert_eq!(
        apps["spec"],
        serde_json::json!({"group": "apps", "version": "v1", "groupPriorityMinimum": 17800, "versionPriority": 15}),
        "{apps}"
    );
    let condition = &apps["status"]["conditions"][0];
    assert_eq!(condition["type"], "Available", "{apps}");
    assert_eq!(condition["status"], "True", "{apps}");
    assert_eq!(condition["reason"], "Local", "{apps}");
    assert_eq!(condition["message"], "Local APIServices are always available", "{apps}");
    assert!(condition["lastTransitionTime"].is_string(), "{apps}");
    let core = json(&ok(&s, &["get", "apiservice", "v1.", "-o", "json"]));
    assert_eq!(core["spec"]["group"], "", "{core}");
    assert_eq!(core["spec"]["groupPriorityMinimum"], 18000, "{core}");
    assert_eq!(core["spec"]["versionPriority"], 1, "{core}");
    let autoscaling = json(&ok(&s, &["get", "apiservice", "v2.autoscaling", "-o", "json"]));
    assert_eq!(autoscaling["spec"]["versionPriority"], 30, "{autoscaling}");
}

/// The API server identity Lease: `apiserver-<hash of hostname>` in
/// kube-system with upstream's labels, a 3600 s duration, renewed.
#[test]
fn apiserver_identity_lease() {
    let s = TestServer::start();
    let selector = "apiserver.kubernetes.io/identity=kube-apiserver";
    let leases = json(&ok(&s, &["-n", "kube-system", "get", "lease", "-l", selector, "-o", "json"]));
    let items = leases["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{leases}");
    let lease = &items[0];
    let name = lease["metadata"]["name"].as_str().unwrap();
    assert!(name.starts_with("apiserver-") && name.len() == "apiserver-".len() + 26, "{name}");
    assert_eq!(lease["spec"]["leaseDurationSeconds"], 3600);
    assert!(lease["spec"]["holderIdentity"].as_str().unwrap().starts_with(&format!("{name}_")));
    assert!(lease["metadata"]["labels"]["kubernetes.io/hostname"].as_str().is_some_and(|h| !h.is_empty()));
    // The seed documents (and releases before 1.29) select on k8s.io/component.
    let by_component =
        json(&ok(&s, &["-n", "kube-system", "get", "lease", "-l", "k8s.io/component=kube-apiserver", "-o", "json"]));
    assert_eq!(by_component["items"].as_array().unwrap().len(), 1, "{by_component}");
    let first = lease["spec"]["renewTime"].as_str().unwrap().to_string();
    // Renewed every 10 s.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        std::thread::sleep(std::time::Duration::from_secs(2));
        let now = ok(&s, &["-n", "kube-system", "get", "lease", name, "-o", "jsonpath={.spec.renewTime}"]);
        if now != first {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the lease was not renewed");
    }
}

/// Upstream's identity-lease garbage collector
/// (pkg/controlplane/controller/apiserverleasegc): at start and then
/// hourly, leases in kube-system labelled
/// `apiserver.kubernetes.io/identity=kube-apiserver` whose renewTime +
/// leaseDurationSeconds has passed are deleted; fresh identity leases and
/// leases without the label stay, and so does the server's own.
#[test]
fn expired_apiserver_identity_leases_are_collected_at_start() {
    let data = tempfile::tempdir().unwrap();
    let options = support::TestServerOptions {
        data_dir: Some(data.path().to_path_buf()),
        port: Some(support::free_port()),
        ..Default::default()
    };
    let mut first = TestServer::start_with(options.clone());
    // metav1.MicroTime: RFC 3339 with six fractional digits.
    let micro = |t: jiff::Timestamp| format!("{}.000000Z", t.strftime("%Y-%m-%dT%H:%M:%S"));
    let now = jiff::Timestamp::now();
    let two_hours_ago = micro(now - jiff::SignedDuration::from_hours(2));
    let lease = |name: &str, labels: &str, renew: &str| {
        format!(
            "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: {name}\n  namespace: kube-system\n  labels: {labels}\nspec:\n  holderIdentity: {name}_0\n  leaseDurationSeconds: 3600\n  renewTime: '{renew}'\n"
        )
    };
    let identity = "{apiserver.kubernetes.io/identity: kube-apiserver}";
    create(&first, "stale.yaml", &lease("apiserver-stale", identity, &two_hours_ago));
    create(&first, "fresh.yaml", &lease("apiserver-fresh", identity, &micro(now)));
    create(&first, "other.yaml", &lease("other-stale", "{app: other}", &two_hours_ago));
    let (status, _) = first.stop();
    assert!(status.success(), "{status}\n{}", first.logs());

    let second = TestServer::start_with(options);
    second.wait_for(std::time::Duration::from_secs(60), "the stale identity lease to be collected", || {
        !ok(&second, &["-n", "kube-system", "get", "lease", "-o", "name"])
            .contains("lease.coordination.k8s.io/apiserver-stale\n")
    });
    let names = ok(&second, &["-n", "kube-system", "get", "lease", "-o", "name"]);
    assert!(names.contains("lease.coordination.k8s.io/apiserver-fresh\n"), "{names}");
    assert!(names.contains("lease.coordination.k8s.io/other-stale\n"), "{names}");
    let own = json(&ok(
        &second,
        &["-n", "kube-system", "get", "lease", "-l", "apiserver.kubernetes.io/identity=kube-apiserver", "-o", "json"],
    ));
    let own: Vec<&str> =
        own["items"].as_array().unwrap().iter().filter_map(|l| l["metadata"]["name"].as_str()).collect();
    assert_eq!(own.len(), 2, "the server's own lease and apiserver-fresh: {own:?}");
    assert!(own.contains(&"apiserver-fresh"), "{own:?}");
}

const POD: &str = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: NAME\n  labels: {app: web}\nspec:\n  containers: [{name: c, image: 'nginx:1.27'}]\n";

fn pod(s: &TestServer, name: &str) {
    apply(s, &POD.replace("NAME", name));
}

fn post_raw(s: &TestServer, path: &str, body: &str) -> std::process::Output {
    let file = manifest(s, &format!("raw-{}.json", path.replace('/', "_")), body);
    s.kubectl(&["create", "--raw", path, "-f", &file])
}

/// `pods/binding` and `bindings` assign a pod to a node once; a second
/// binding is a 409 in upstream's words.
#[test]
fn pod_binding() {
    let s = TestServer::start();
    pod(&s, "web");
    let binding =
        r#"{"apiVersion":"v1","kind":"Binding","metadata":{"name":"web"},"target":{"kind":"Node","name":"node-1"}}"#;
    let out = post_raw(&s, "/api/v1/namespaces/default/pods/web/binding", binding);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let bound = json(&ok(&s, &["get", "pod", "web", "-o", "json"]));
    assert_eq!(bound["spec"]["nodeName"], "node-1");
    let scheduled =
        bound["status"]["conditions"].as_array().unwrap().iter().find(|c| c["type"] == "PodScheduled").cloned();
    assert_eq!(scheduled.unwrap()["status"], "True");

    let again = r#"{"apiVersion":"v1","kind":"Binding","metadata":{"name":"web"},"target":{"name":"node-2"}}"#;
    let out = post_raw(&s, "/api/v1/namespaces/default/bindings", again);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(r#"Operation cannot be fulfilled on pods "web": pod web is already assigned to node "node-1""#),
        "{err}"
    );
    let mismatch = post_raw(&s, "/api/v1/namespaces/default/pods/web/binding", &again.replace("\"web\"", "\"other\""));
    assert!(String::from_utf8_lossy(&mismatch.stderr).contains("name in URL does not match name in Binding object"));

    pod(&s, "other");
    let out = post_raw(&s, "/api/v1/namespaces/default/bindings", &again.replace("\"web\"", "\"other\""));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(ok(&s, &["get", "pod", "other", "-o", "jsonpath={.spec.nodeName}"]), "node-2");
}

/// Conformance "PodDisruptionBudget: block an eviction until the PDB is
/// updated to allow it": a budget with no disruptions allowed makes the
/// eviction a 429 with a DisruptionBudget cause; once it allows one, the
/// eviction deletes the pod and the budget records it. Without a budget
/// the pod is simply deleted.
#[test]
fn pod_disruption_budget_blocks_an_eviction_until_updated() {
    let s = TestServer::start();
    pod(&s, "web");
    ok(
        &s,
        &[
            "patch",
            "pod",
            "web",
            "--subresource=status",
            "--type=merge",
            "-p",
            r#"{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}"#,
        ],
    );
    apply(&s, "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata:\n  name: budget\nspec:\n  minAvailable: 1\n  selector:\n    matchLabels: {app: web}\n");
    ok(
        &s,
        &[
            "patch",
            "pdb",
            "budget",
            "--subresource=status",
            "--type=merge",
            "-p",
            r#"{"status":{"observedGeneration":1,"disruptionsAllowed":0,"currentHealthy":1,"desiredHealthy":1,"expectedPods":1}}"#,
        ],
    );

    let eviction = r#"{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"web","namespace":"default"}}"#;
    let path = "/api/v1/namespaces/default/pods/web/eviction";
    let out = post_raw(&s, path, eviction);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("Cannot evict pod as it would violate the pod's disruption budget."), "{err}");
    let reply = request(&s, "POST", path, &[("Content-Type", "application/json")], eviction.as_bytes());
    assert_eq!(reply.status, 429, "{}", reply.body);
    let status = reply.json();
    assert_eq!(status["reason"], "TooManyRequests");
    assert_eq!(status["details"]["causes"][0]["reason"], "DisruptionBudget");
    assert_eq!(
        status["details"]["causes"][0]["message"],
        "The disruption budget budget needs 1 healthy pods and has 1 currently"
    );
    ok(&s, &["get", "pod", "web"]);

    ok(
        &s,
        &[
            "patch",
            "pdb",
            "budget",
            "--subresource=status",
            "--type=merge",
            "-p",
            r#"{"status":{"disruptionsAllowed":1}}"#,
        ],
    );
    let out = post_raw(&s, path, eviction);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let err = fails(&s, &["get", "pod", "web"]);
    assert!(err.contains("not found"), "{err}");
    let pdb = json(&ok(&s, &["get", "pdb", "budget", "-o", "json"]));
    assert_eq!(pdb["status"]["disruptionsAllowed"], 0);
    assert!(pdb["status"]["disruptedPods"]["web"].is_string(), "{pdb}");

    // No budget selects this pod: the eviction deletes it.
    apply(&s, &POD.replace("NAME", "solo").replace("app: web", "app: solo"));
    let out = post_raw(&s, "/api/v1/namespaces/default/pods/solo/eviction", &eviction.replace("\"web\"", "\"solo\""));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(fails(&s, &["get", "pod", "solo"]).contains("not found"));
    let out = post_raw(&s, "/api/v1/namespaces/default/pods/gone/eviction", &eviction.replace("\"web\"", "\"gone\""));
    assert!(String::from_utf8_lossy(&out.stderr).contains(r#"pods "gone" not found"#));
}

/// `kubectl debug` adds an ephemeral container through
/// `pods/ephemeralcontainers`; existing ones may not change.
#[test]
fn pod_ephemeral_containers() {
    let s = TestServer::start();
    pod(&s, "web");
    ok(&s, &["debug", "web", "--image=busybox", "--container=dbg"]);
    let p = json(&ok(&s, &["get", "pod", "web", "-o", "json"]));
    assert_eq!(p["spec"]["ephemeralContainers"][0]["name"], "dbg");
    assert_eq!(p["spec"]["ephemeralContainers"][0]["image"], "busybox");
    // Defaulted like any container (upstream's generated pod defaulter).
    assert_eq!(p["spec"]["ephemeralContainers"][0]["terminationMessagePolicy"], "File");
    assert_eq!(p["spec"]["ephemeralContainers"][0]["terminationMessagePath"], "/dev/termination-log");
    assert_eq!(p["spec"]["ephemeralContainers"][0]["imagePullPolicy"], "Always");
    // An ordinary update of the debugged pod still goes through.
    ok(&s, &["label", "pod", "web", "debugged=yes"]);
    let mut changed = p.clone();
    changed["spec"]["ephemeralContainers"][0]["image"] = serde_json::json!("alpine");
    let file = manifest(&s, "pod-ephemeral.json", &changed.to_string());
    let err = fails(&s, &["replace", "--raw", "/api/v1/namespaces/default/pods/web/ephemeralcontainers", "-f", &file]);
    assert!(err.contains("existing ephemeral containers \"dbg\" may not be changed"), "{err}");
    let got = json(&ok(&s, &["get", "--raw", "/api/v1/namespaces/default/pods/web/ephemeralcontainers"]));
    assert_eq!(got["kind"], "Pod");
}

/// `kubectl logs`, `exec` and the proxy subresources answer as upstream
/// when there is no kubelet or backend to reach: an unscheduled pod has no host, a missing node is 404, a node
/// without addresses or with nothing listening gives upstream's errors.
#[test]
fn streaming_subresources_without_a_kubelet() {
    let s = TestServer::start();
    pod(&s, "web");
    let err = fails(&s, &["logs", "web"]);
    assert!(err.contains("pod web does not have a host assigned"), "{err}");
    let err = fails(&s, &["exec", "web", "--", "true"]);
    assert!(err.contains("pod web does not have a host assigned"), "{err}");
    let err = fails(&s, &["logs", "web", "-c", "nope"]);
    assert!(err.contains("container nope is not valid for pod web"), "{err}");

    apply(&s, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: bound\nspec:\n  nodeName: node-1\n  containers: [{name: c, image: 'nginx:1.27'}]\n");
    let err = fails(&s, &["logs", "bound"]);
    assert!(err.contains(r#"nodes "node-1" not found"#), "{err}");
    apply(&s, "apiVersion: v1\nkind: Node\nmetadata:\n  name: node-1\n");
    let err = fails(&s, &["logs", "bound"]);
    assert!(err.contains("no preferred addresses found; known addresses: []"), "{err}");
    let closed = support::free_port();
    ok(
        &s,
        &[
            "patch",
            "node",
            "node-1",
            "--subresource=status",
            "--type=merge",
            "-p",
            &format!(
                r#"{{"status":{{"addresses":[{{"type":"InternalIP","address":"127.0.0.1"}}],"daemonEndpoints":{{"kubeletEndpoint":{{"Port":{closed}}}}}}}}}"#
            ),
        ],
    );
    let err = fails(&s, &["logs", "bound"]);
    assert!(
        err.contains(&format!("Get \"https://127.0.0.1:{closed}/containerLogs/default/bound/c\": dial tcp 127.0.0.1:{closed}: connect: connection refused")),
        "{err}"
    );

    // The proxy subresources: no pod IP, no endpoints, nothing listening.
    let err = fails(&s, &["get", "--raw", "/api/v1/namespaces/default/pods/web/proxy/"]);
    assert!(err.contains("address not allowed"), "{err}");
    apply(
        &s,
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  selector: {app: web}\n  ports: [{port: 80}]\n",
    );
    let err = fails(&s, &["get", "--raw", "/api/v1/namespaces/default/services/web:80/proxy/index.html"]);
    assert!(err.contains(r#"no endpoints available for service "web""#), "{err}");
    let err = fails(&s, &["get", "--raw", "/api/v1/namespaces/default/services/nope/proxy/"]);
    assert!(err.contains(r#"services "nope" not found"#), "{err}");
    let err = fails(&s, &["get", "--raw", "/api/v1/nodes/node-1/proxy/metrics"]);
    let expected = format!("error trying to reach service: dial tcp 127.0.0.1:{closed}: connect: connection refused");
    assert!(err.contains(&expected), "{err}");
}

/// `kubectl drain` cordons the node and evicts its pods through
/// `pods/eviction` (grace period 0: no kubelet has to confirm).
#[test]
fn kubectl_drain_evicts_through_the_eviction_subresource() {
    let s = TestServer::start();
    apply(&s, "apiVersion: v1\nkind: Node\nmetadata:\n  name: node-1\n");
    apply(
        &s,
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  labels: {app: web}\nspec:\n  nodeName: node-1\n  containers: [{name: c, image: 'nginx:1.27'}]\n",
    );
    let out = ok(&s, &["drain", "node-1", "--grace-period=0", "--timeout=60s", "--force"]);
    assert!(out.contains("node/node-1 cordoned") && out.contains("node/node-1 drained"), "{out}");
    assert!(fails(&s, &["get", "pod", "web"]).contains("not found"));
    assert_eq!(ok(&s, &["get", "node", "node-1", "-o", "jsonpath={.spec.unschedulable}"]), "true");
}
