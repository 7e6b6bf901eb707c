//! Placement by the scheduler inside `rkube server`, driven with the real
//! kubectl on Nodes registered through the API as a kubelet registers them:
//! node affinity, inter-pod (anti-)affinity, topology spread and
//! preemption each place (or keep Pending) pods as upstream's default
//! profile does, with upstream's PodScheduled messages. No kubelet runs, so
//! the test finishes pods whose deletion has started (force delete), as the
//! kubelet would once their containers stopped.

mod support;

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::{TestServer, TestServerOptions};

/// How long to wait for the scheduler (generous: the machine is shared).
const WAIT: Duration = Duration::from_secs(60);

fn start() -> TestServer {
    TestServer::start_with(TestServerOptions { scheduler: true, ..Default::default() })
}

/// A pause pod in `default` requesting `cpu` (and 64Mi), with `labels` and
/// `extra` merged into its spec.
fn pod(name: &str, cpu: &str, labels: Value, extra: Value) -> Value {
    let mut spec = json!({"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
        "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}}}]});
    if let (Some(spec), Some(extra)) = (spec.as_object_mut(), extra.as_object()) {
        spec.extend(extra.clone());
    }
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": labels}, "spec": spec})
}

fn get_pod_in(s: &TestServer, ns: &str, name: &str) -> Value {
    serde_json::from_str(&s.kubectl_ok(&["get", "pod", "-n", ns, name, "-o", "json"])).unwrap()
}

fn get_pod(s: &TestServer, name: &str) -> Value {
    get_pod_in(s, "default", name)
}

fn wait_bound_in(s: &TestServer, ns: &str, name: &str) -> String {
    let mut node = String::new();
    s.wait_for(WAIT, &format!("{ns}/{name} to be bound"), || {
        node = get_pod_in(s, ns, name)["spec"]["nodeName"].as_str().unwrap_or("").to_string();
        !node.is_empty()
    });
    node
}

fn wait_bound(s: &TestServer, name: &str) -> String {
    wait_bound_in(s, "default", name)
}

fn scheduled_condition(p: &Value) -> Option<&Value> {
    p["status"]["conditions"].as_array()?.iter().find(|c| c["type"] == "PodScheduled")
}

/// Waits until the pod's PodScheduled condition is False/Unschedulable with
/// exactly `want` as its message (the last message seen is reported on
/// timeout), checks the pod is unbound and that `kubectl describe` shows
/// the FailedScheduling event with the message.
fn wait_unschedulable_with(s: &TestServer, ns: &str, name: &str, want: &str) {
    let mut last = String::new();
    let deadline = Instant::now() + WAIT;
    loop {
        let p = get_pod_in(s, ns, name);
        if let Some(c) = scheduled_condition(&p) {
            if c["status"] == "False" && c["reason"] == "Unschedulable" {
                last = c["message"].as_str().unwrap_or("").to_string();
                if last == want {
                    assert!(p["spec"]["nodeName"].is_null(), "{p}");
                    break;
                }
            }
        }
        assert!(Instant::now() < deadline, "{ns}/{name}: want message\n  {want}\nlast seen\n  {last}\n{}", s.logs());
        std::thread::sleep(Duration::from_millis(250));
    }
    s.wait_for(WAIT, &format!("the FailedScheduling event of {name} in describe"), || {
        let describe = s.kubectl_ok(&["describe", "pod", "-n", ns, name]);
        describe.contains("FailedScheduling") && describe.contains(want)
    });
}

fn wait_unschedulable(s: &TestServer, name: &str, want: &str) {
    wait_unschedulable_with(s, "default", name, want)
}

/// Deletes a pod at once, as the kubelet finishes a pod whose containers stopped.
fn force_delete_in(s: &TestServer, ns: &str, name: &str) {
    s.kubectl_ok(&["delete", "pod", "-n", ns, name, "--grace-period=0", "--force", "--wait=false"]);
}

fn node_affinity(required: Value, preferred: Value) -> Value {
    let mut na = json!({});
    if !required.is_null() {
        na["requiredDuringSchedulingIgnoredDuringExecution"] = json!({"nodeSelectorTerms": required});
    }
    if !preferred.is_null() {
        na["preferredDuringSchedulingIgnoredDuringExecution"] = preferred;
    }
    json!({"affinity": {"nodeAffinity": na}})
}

fn expr(key: &str, op: &str, values: &[&str]) -> Value {
    match values.is_empty() {
        true => json!({"key": key, "operator": op}),
        false => json!({"key": key, "operator": op, "values": values}),
    }
}

/// Required terms (nodeSelectorTerms are ORed, the expressions of a term
/// ANDed; In/NotIn/Exists/DoesNotExist/Gt/Lt and matchFields on
/// metadata.name) and preferred terms (weights summed per node, the
/// highest-scoring node wins), as upstream's NodeAffinity plugin and the
/// node-affinity docs describe.
#[test]
fn node_affinity_required_and_preferred_terms_place_pods() {
    let s = start();
    s.add_ready_node("n1", json!({"gen": "1", "disk": "hdd"}), json!([]));
    s.add_ready_node("n2", json!({"gen": "3", "disk": "ssd", "env": "prod"}), json!([]));
    s.add_ready_node("n3", json!({"gen": "5"}), json!([]));
    let place = |name: &str, affinity: Value| {
        s.create(&pod(name, "10m", json!({}), affinity));
        wait_bound(&s, name)
    };

    // Preferred, on otherwise equal empty nodes: the preferred node wins;
    // with two preferred terms the heavier one decides.
    let pref = |w: i32, e: Value| json!({"weight": w, "preference": {"matchExpressions": [e]}});
    assert_eq!(place("pref-ssd", node_affinity(Value::Null, json!([pref(1, expr("disk", "In", &["ssd"]))]))), "n2");
    let terms = json!([pref(10, expr("disk", "In", &["ssd"])), pref(50, expr("gen", "Gt", &["4"]))]);
    assert_eq!(place("pref-weighted", node_affinity(Value::Null, terms)), "n3");
    let terms = json!([pref(50, expr("disk", "In", &["ssd"])), pref(10, expr("gen", "Gt", &["4"]))]);
    assert_eq!(place("pref-weighted-2", node_affinity(Value::Null, terms)), "n2");

    // Required.
    let req = |exprs: Value| node_affinity(json!([{"matchExpressions": exprs}]), Value::Null);
    assert_eq!(place("req-in", req(json!([expr("env", "In", &["prod"])]))), "n2");
    assert_eq!(place("req-notin", req(json!([expr("gen", "NotIn", &["1", "3"])]))), "n3");
    assert_eq!(place("req-exists", req(json!([expr("disk", "Exists", &[]), expr("gen", "NotIn", &["3"])]))), "n1");
    assert_eq!(place("req-doesnotexist", req(json!([expr("disk", "DoesNotExist", &[])]))), "n3");
    assert_eq!(place("req-gt", req(json!([expr("gen", "Gt", &["4"])]))), "n3");
    assert_eq!(place("req-gt-lt", req(json!([expr("gen", "Gt", &["1"]), expr("gen", "Lt", &["5"])]))), "n2");
    // Terms are ORed: the first matches no node, the second n1.
    let or = node_affinity(
        json!([{"matchExpressions": [expr("env", "In", &["staging"])]}, {"matchExpressions": [expr("gen", "In", &["1"])]}]),
        Value::Null,
    );
    assert_eq!(place("req-or", or), "n1");
    let fields = node_affinity(json!([{"matchFields": [expr("metadata.name", "In", &["n3"])]}]), Value::Null);
    assert_eq!(place("req-fields", fields), "n3");
    // Required wins over preferred: preferred ssd (n2), required gen>4 (n3).
    let both = node_affinity(
        json!([{"matchExpressions": [expr("gen", "Gt", &["4"])]}]),
        json!([pref(100, expr("disk", "In", &["ssd"]))]),
    );
    assert_eq!(place("req-and-pref", both), "n3");

    // No node matches: Pending with upstream's summary (the filter rejects
    // every node as unresolvable, so preemption cannot help).
    s.create(&pod("req-none", "10m", json!({}), req(json!([expr("gen", "Gt", &["5"])]))));
    wait_unschedulable(
        &s,
        "req-none",
        "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.",
    );
    // A node label update is an event NodeAffinity registered: retried, placed.
    s.kubectl_ok(&["label", "node", "n1", "gen=7", "--overwrite"]);
    assert_eq!(wait_bound(&s, "req-none"), "n1");
}

fn anti_affinity(app: &str, topology_key: &str) -> Value {
    json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": topology_key}]}})
}

fn affinity(app: &str, topology_key: &str) -> Value {
    json!({"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": topology_key}]}})
}

/// Required pod anti-affinity on `kubernetes.io/hostname` spreads replicas
/// one per node and keeps the extra one Pending with upstream's message;
/// required pod affinity co-locates with the matching pod (node or zone),
/// preferred affinity outweighs the resource scores, the first pod of a
/// self-affine group may go anywhere, a term no pod matches keeps the pod
/// Pending (unresolvable: preemption cannot help), and existing pods'
/// anti-affinity keeps matching pods away.
#[test]
fn pod_affinity_and_anti_affinity_place_pods() {
    let s = start();
    s.add_ready_node("a1", json!({"topology.kubernetes.io/zone": "za"}), json!([]));
    s.add_ready_node("a2", json!({"topology.kubernetes.io/zone": "za"}), json!([]));
    s.add_ready_node("b1", json!({"topology.kubernetes.io/zone": "zb"}), json!([]));

    // Created together: the scheduler must count the pods it has just
    // assumed, as upstream's cache does.
    let web = |name: &str| {
        pod(name, "100m", json!({"app": "web"}), json!({"affinity": anti_affinity("web", "kubernetes.io/hostname")}))
    };
    for i in 0..3 {
        s.create(&web(&format!("web-{i}")));
    }
    let mut nodes: Vec<String> = (0..3).map(|i| wait_bound(&s, &format!("web-{i}"))).collect();
    nodes.sort();
    assert_eq!(nodes, ["a1", "a2", "b1"]);
    s.create(&web("web-3"));
    // Anti-affinity is resolvable by preemption, but no pod has a lower priority.
    wait_unschedulable(
        &s,
        "web-3",
        "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.",
    );

    // Required affinity to a pod on a2 (hostname), then to its zone.
    s.create(&pod("cache", "100m", json!({"app": "cache"}), json!({"nodeSelector": {"kubernetes.io/hostname": "a2"}})));
    assert_eq!(wait_bound(&s, "cache"), "a2");
    for i in 0..3 {
        let name = format!("near-cache-{i}");
        s.create(&pod(&name, "100m", json!({}), json!({"affinity": affinity("cache", "kubernetes.io/hostname")})));
        assert_eq!(wait_bound(&s, &name), "a2");
    }
    for i in 0..3 {
        let name = format!("zone-of-cache-{i}");
        s.create(&pod(&name, "100m", json!({}), json!({"affinity": affinity("cache", "topology.kubernetes.io/zone")})));
        let node = wait_bound(&s, &name);
        assert!(node == "a1" || node == "a2", "{name} on {node}");
    }
    // Preferred affinity (InterPodAffinity score, weight 2) outweighs the
    // spreading of the resource scores: a2 is the busiest node, yet wins.
    let preferred = json!({"affinity": {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 100, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "cache"}}, "topologyKey": "kubernetes.io/hostname"}}]}}});
    s.create(&pod("likes-cache", "100m", json!({}), preferred));
    assert_eq!(wait_bound(&s, "likes-cache"), "a2");
    // The first pod of a group whose term matches itself may go anywhere;
    // the next ones follow it.
    s.create(&pod("db-0", "100m", json!({"app": "db"}), json!({"affinity": affinity("db", "kubernetes.io/hostname")})));
    let db = wait_bound(&s, "db-0");
    s.create(&pod("db-1", "100m", json!({"app": "db"}), json!({"affinity": affinity("db", "kubernetes.io/hostname")})));
    assert_eq!(wait_bound(&s, "db-1"), db);
    // A term no pod matches (and the pod does not match itself).
    s.create(&pod("orphan", "100m", json!({}), json!({"affinity": affinity("nothing", "kubernetes.io/hostname")})));
    wait_unschedulable(
        &s,
        "orphan",
        "0/3 nodes are available: 3 node(s) didn't match pod affinity rules. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.",
    );

    // An existing pod's anti-affinity also keeps matching pods away: a pod
    // labelled app=web (without rules of its own) cannot join any node.
    s.create(&pod("plain-web", "100m", json!({"app": "web"}), json!({})));
    wait_unschedulable(
        &s,
        "plain-web",
        "0/3 nodes are available: 3 node(s) didn't satisfy existing pods anti-affinity rules. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.",
    );
    s.kubectl_ok(&["delete", "pod", "plain-web", "--wait=false"]);

    // Freeing a node (an assigned pod's deletion) lets web-3 in there.
    let freed = get_pod(&s, "web-1")["spec"]["nodeName"].as_str().unwrap().to_string();
    force_delete_in(&s, "default", "web-1");
    assert_eq!(wait_bound(&s, "web-3"), freed);
}

fn spread(app: &str) -> Value {
    json!({"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
        "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": app}}}]})
}

fn zone_counts(s: &TestServer, app: &str) -> (usize, usize) {
    let pods: Value =
        serde_json::from_str(&s.kubectl_ok(&["get", "pods", "-l", &format!("app={app}"), "-o", "json"])).unwrap();
    let mut counts = (0, 0);
    for p in pods["items"].as_array().unwrap() {
        match p["spec"]["nodeName"].as_str() {
            Some("a1" | "a2") => counts.0 += 1,
            Some("b1") => counts.1 += 1,
            _ => {}
        }
    }
    counts
}

/// PodTopologySpread with maxSkew 1 over zones and DoNotSchedule: zone a
/// has two nodes and zone b one, yet the pods alternate zones (the least
/// allocated spreading alone would put two thirds in zone a); with zone b
/// full, a pod that would raise the skew to 2 stays Pending with upstream's
/// reason, and is placed in zone b once room is made there; with fewer
/// zones than minDomains each zone takes at most maxSkew pods, and a
/// higher-priority pod of the group preempts exactly one of them.
#[test]
fn topology_spread_alternates_zones_and_blocks_on_a_full_zone() {
    let s = start();
    s.add_ready_node("a1", json!({"topology.kubernetes.io/zone": "za"}), json!([]));
    s.add_ready_node("a2", json!({"topology.kubernetes.io/zone": "za"}), json!([]));
    s.add_ready_node("b1", json!({"topology.kubernetes.io/zone": "zb"}), json!([]));

    for i in 0..6 {
        let name = format!("s-{i}");
        s.create(&pod(&name, "100m", json!({"app": "s"}), spread("s")));
        wait_bound(&s, &name);
        let (a, b) = zone_counts(&s, "s");
        assert_eq!(a + b, i + 1);
        assert!(a.abs_diff(b) <= 1, "after {name}: zone a {a}, zone b {b}");
        if i % 2 == 1 {
            assert_eq!(a, b, "after {name}");
        }
    }

    // Fill b1 (3 × 100m spread pods + this = 2 CPUs).
    s.create(&pod("filler", "1700m", json!({}), json!({"nodeSelector": {"kubernetes.io/hostname": "b1"}})));
    assert_eq!(wait_bound(&s, "filler"), "b1");
    s.create(&pod("f-0", "100m", json!({"app": "f"}), spread("f")));
    let node = wait_bound(&s, "f-0");
    assert!(node == "a1" || node == "a2", "{node}");
    s.create(&pod("f-1", "100m", json!({"app": "f"}), spread("f")));
    wait_unschedulable(
        &s,
        "f-1",
        "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't match pod topology spread constraints. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.",
    );
    force_delete_in(&s, "default", "filler");
    assert_eq!(wait_bound(&s, "f-1"), "b1");

    // minDomains 3 with only 2 zones: the global minimum counts as 0, so
    // each zone takes at most maxSkew (1) matching pod.
    let mut min_domains = spread("m");
    min_domains["topologySpreadConstraints"][0]["minDomains"] = json!(3);
    let mut zones = Vec::new();
    for i in 0..2 {
        let name = format!("m-{i}");
        s.create(&pod(&name, "100m", json!({"app": "m"}), min_domains.clone()));
        zones.push(if wait_bound(&s, &name) == "b1" { "zb" } else { "za" });
    }
    zones.sort();
    assert_eq!(zones, ["za", "zb"]);
    s.create(&pod("m-2", "100m", json!({"app": "m"}), min_domains.clone()));
    wait_unschedulable(
        &s,
        "m-2",
        "0/3 nodes are available: 3 node(s) didn't match pod topology spread constraints. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.",
    );

    // A higher-priority pod of the group preempts one of them (the dry run
    // takes the victim out of the spread counts); only the matching pod is
    // a victim, the other pods on its node are reprieved. Spreading skips
    // terminating pods, so the preemptor may be bound before the victim is
    // gone.
    // (m-2 leaves first: it could race m-high for the freed place.)
    s.kubectl_ok(&["delete", "pod", "m-2", "--wait=false"]);
    s.kubectl_ok(&["create", "priorityclass", "high", "--value=1000"]);
    let mut high = pod("m-high", "100m", json!({"app": "m"}), min_domains);
    high["spec"]["priorityClassName"] = json!("high");
    s.create(&high);
    let mut victim = String::new();
    s.wait_for(WAIT, "an m pod to be preempted", || {
        for name in ["m-0", "m-1"] {
            if !get_pod(&s, name)["metadata"]["deletionTimestamp"].is_null() {
                victim = name.to_string();
                return true;
            }
        }
        false
    });
    let node = get_pod(&s, &victim)["spec"]["nodeName"].as_str().unwrap().to_string();
    wait_preempted(&s, "default", &victim, "default", "m-high", &node);
    let pods: Value = serde_json::from_str(&s.kubectl_ok(&["get", "pods", "-o", "json"])).unwrap();
    let terminating: Vec<&str> = pods["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| !p["metadata"]["deletionTimestamp"].is_null())
        .map(|p| p["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(terminating, [victim.as_str()]);
    force_delete_in(&s, "default", &victim);
    // Normally the nominated node; another node of the victim's zone when
    // the preemptor's retry runs before its own status update arrived
    // (upstream has the same race).
    let zone = |n: &str| if n == "b1" { "zb" } else { "za" };
    let bound = wait_bound(&s, "m-high");
    assert_eq!(zone(&bound), zone(&node), "m-high on {bound}, victim was on {node}\n{}", s.logs());
}

fn priority_pod(name: &str, cpu: &str, class: &str) -> Value {
    pod(name, cpu, json!({}), json!({"priorityClassName": class, "terminationGracePeriodSeconds": 30}))
}

fn disruption_target(p: &Value) -> Option<Value> {
    p["status"]["conditions"].as_array()?.iter().find(|c| c["type"] == "DisruptionTarget").cloned()
}

/// Waits until `victim` is being deleted by preemption (DisruptionTarget
/// condition from the scheduler and a deletionTimestamp) and `preemptor` is
/// nominated to `node`.
fn wait_preempted(s: &TestServer, victim_ns: &str, victim: &str, preemptor_ns: &str, preemptor: &str, node: &str) {
    s.wait_for(WAIT, &format!("{victim} to be preempted"), || {
        let v = get_pod_in(s, victim_ns, victim);
        !v["metadata"]["deletionTimestamp"].is_null() && disruption_target(&v).is_some()
    });
    let v = get_pod_in(s, victim_ns, victim);
    let c = disruption_target(&v).unwrap();
    assert_eq!(c["status"], "True", "{c}");
    assert_eq!(c["reason"], "PreemptionByScheduler", "{c}");
    assert_eq!(c["message"], "default-scheduler: preempting to accommodate a higher priority pod", "{c}");
    s.wait_for(WAIT, &format!("{preemptor} to be nominated to {node}"), || {
        get_pod_in(s, preemptor_ns, preemptor)["status"]["nominatedNodeName"] == node
    });
    // The Preempted event, on the victim, names the preemptor and the node.
    let uid = get_pod_in(s, preemptor_ns, preemptor)["metadata"]["uid"].as_str().unwrap().to_string();
    let want = format!("Preempted by pod {uid} on node {node}");
    s.wait_for(WAIT, &format!("the Preempted event of {victim}"), || {
        let ev = s.kubectl_ok(&[
            "get",
            "events",
            "-n",
            victim_ns,
            "--field-selector",
            &format!("involvedObject.name={victim}"),
            "-o",
            "json",
        ]);
        let ev: Value = serde_json::from_str(&ev).unwrap();
        ev["items"].as_array().unwrap().iter().any(|e| e["reason"] == "Preempted" && e["message"] == want.as_str())
    });
}

/// Conformance "Scheduler, Basic Preemption", "Verify the DisruptionTarget
/// condition is added to the preempted pod" and "Scheduler, Preemption for
/// critical pod" on one 2-CPU node; a pod whose class has preemptionPolicy
/// Never does not preempt.
#[test]
fn preemption_evicts_lower_priority_pods_and_schedules_the_higher() {
    let s = start();
    s.add_ready_node("n1", json!({}), json!([]));
    s.kubectl_ok(&["create", "priorityclass", "low", "--value=100"]);
    s.kubectl_ok(&["create", "priorityclass", "high", "--value=1000"]);
    s.kubectl_ok(&["create", "priorityclass", "high-never", "--value=1000", "--preemption-policy=Never"]);

    // Basic preemption: the node is full with a low-priority pod.
    s.create(&priority_pod("low", "1500m", "low"));
    assert_eq!(wait_bound(&s, "low"), "n1");
    assert_eq!(get_pod(&s, "low")["spec"]["priority"], 100);
    s.create(&priority_pod("high", "1", "high"));
    wait_preempted(&s, "default", "low", "default", "high", "n1");
    // A terminating pod still holds its resources: not bound before it is gone.
    assert!(get_pod(&s, "high")["spec"]["nodeName"].is_null());
    // The preemptor's own attempt failed on the filter; preemption found a node.
    let c = scheduled_condition(&get_pod(&s, "high")).cloned().unwrap_or(json!({}));
    assert_eq!(c["reason"], "Unschedulable", "{c}");
    assert!(c["message"].as_str().unwrap_or("").starts_with("0/1 nodes are available: 1 Insufficient cpu."), "{c}");
    // The kubelet finishes the victim; the preemptor takes its place.
    force_delete_in(&s, "default", "low");
    assert_eq!(wait_bound(&s, "high"), "n1");

    // preemptionPolicy Never: the node is full again (high + low2), a pod of
    // a Never class with a higher priority than low2 stays Pending.
    s.create(&priority_pod("low2", "1", "low"));
    assert_eq!(wait_bound(&s, "low2"), "n1");
    s.create(&priority_pod("never", "1", "high-never"));
    assert_eq!(get_pod(&s, "never")["spec"]["preemptionPolicy"], "Never");
    wait_unschedulable(
        &s,
        "never",
        "0/1 nodes are available: 1 Insufficient cpu. preemption: not eligible due to preemptionPolicy=Never.",
    );
    let low2 = get_pod(&s, "low2");
    assert!(low2["metadata"]["deletionTimestamp"].is_null() && disruption_target(&low2).is_none(), "{low2}");
    assert!(get_pod(&s, "never")["status"]["nominatedNodeName"].is_null());
    s.kubectl_ok(&["delete", "pod", "never", "--wait=false"]);

    // A critical pod preempts only what it needs, lowest priority first:
    // removing low2 (100) is enough, high (1000) is reprieved.
    let mut critical = priority_pod("critical", "1", "system-cluster-critical");
    critical["metadata"]["namespace"] = json!("kube-system");
    s.create(&critical);
    wait_preempted(&s, "default", "low2", "kube-system", "critical", "n1");
    assert!(get_pod_in(&s, "kube-system", "critical")["spec"]["nodeName"].is_null());
    let high = get_pod(&s, "high");
    assert!(high["metadata"]["deletionTimestamp"].is_null() && disruption_target(&high).is_none(), "{high}");
    force_delete_in(&s, "default", "low2");
    assert_eq!(wait_bound_in(&s, "kube-system", "critical"), "n1");
    assert_eq!(get_pod_in(&s, "kube-system", "critical")["spec"]["priority"], 2000000000);
}

/// Choosing the node to preempt on, as upstream's `pickOneNodeForPreemption`:
/// nodes whose victims would violate a PodDisruptionBudget lose first
/// (this PDB has no status, so it allows no disruption) even with the
/// least important victim, then the node whose most important victim has
/// the lowest priority wins.
#[test]
fn preemption_picks_the_node_with_the_least_important_victims() {
    let s = start();
    for n in ["p1", "p2", "p3"] {
        s.add_ready_node(n, json!({}), json!([]));
    }
    s.kubectl_ok(&["create", "priorityclass", "low", "--value=100"]);
    s.kubectl_ok(&["create", "priorityclass", "mid", "--value=500"]);
    s.kubectl_ok(&["create", "priorityclass", "upper", "--value=700"]);
    s.kubectl_ok(&["create", "priorityclass", "high", "--value=1000"]);
    s.kubectl_ok(&["create", "poddisruptionbudget", "guarded", "--selector=app=guarded", "--min-available=1"]);
    let victim = |name: &str, class: &str, node: &str, labels: Value| {
        let mut p = priority_pod(name, "1500m", class);
        p["metadata"]["labels"] = labels;
        p["spec"]["nodeSelector"] = json!({"kubernetes.io/hostname": node});
        s.create(&p);
        assert_eq!(wait_bound(&s, name), node);
    };
    victim("upper", "upper", "p1", json!({}));
    victim("low-guarded", "low", "p2", json!({"app": "guarded"}));
    victim("mid", "mid", "p3", json!({}));

    s.create(&priority_pod("high", "1", "high"));
    wait_preempted(&s, "default", "mid", "default", "high", "p3");
    assert!(get_pod(&s, "high")["spec"]["nodeName"].is_null());
    for name in ["upper", "low-guarded"] {
        let p = get_pod(&s, name);
        assert!(p["metadata"]["deletionTimestamp"].is_null() && disruption_target(&p).is_none(), "{p}");
    }
    force_delete_in(&s, "default", "mid");
    assert_eq!(wait_bound(&s, "high"), "p3");

    // Preemption also resolves anti-affinity (the dry run removes the
    // lower-priority pod from the affinity counts), and violates a PDB
    // when no other node could help: the pod fits p2's free CPU but repels
    // the guarded pod there.
    let mut repel = priority_pod("repel", "100m", "high");
    repel["spec"]["nodeSelector"] = json!({"kubernetes.io/hostname": "p2"});
    repel["spec"]["affinity"] = anti_affinity("guarded", "kubernetes.io/hostname");
    s.create(&repel);
    wait_preempted(&s, "default", "low-guarded", "default", "repel", "p2");
    assert!(get_pod(&s, "upper")["metadata"]["deletionTimestamp"].is_null());
    force_delete_in(&s, "default", "low-guarded");
    assert_eq!(wait_bound(&s, "repel"), "p2");
}
