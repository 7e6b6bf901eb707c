//! Server-side Table printing through the real kubectl: per-kind columns
//! (upstream's printers), `-o wide` columns, server-rendered ages, row
//! metadata (`-A`), `get all` and watch Tables (`get -w`).

mod api_common;
mod support;

use std::time::Duration;

use api_common::{apply, ok, Background};
use support::TestServer;

/// The whitespace-separated words of `line`.
fn words(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

/// The header words and the words of the row whose first word is `name`.
fn header_and_row(out: &str, name: &str) -> (Vec<String>, Vec<String>) {
    let owned = |w: Vec<&str>| w.into_iter().map(String::from).collect::<Vec<_>>();
    let mut lines = out.lines();
    let header = words(lines.next().unwrap_or_else(|| panic!("no output")));
    let row = lines.map(words).find(|w| w.first() == Some(&name)).unwrap_or_else(|| panic!("no row {name} in:\n{out}"));
    (owned(header), owned(row))
}

/// An age as `HumanDuration` renders a young object (`5s`, `2m3s`).
fn is_age(s: &str) -> bool {
    s.ends_with('s') && s.trim_end_matches(['s', 'm']).chars().all(|c| c.is_ascii_digit() || c == 'm')
}

/// The RFC 3339 UTC time `secs` seconds ago (via `date`).
fn rfc3339_ago(secs: u64) -> String {
    let out = std::process::Command::new("date")
        .args(["-u", "-d", &format!("-{secs} seconds"), "+%Y-%m-%dT%H:%M:%SZ"])
        .output()
        .expect("run date");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

const POD: &str = "apiVersion: v1
kind: Pod
metadata: {name: web, labels: {app: web}}
spec:
  containers:
  - {name: nginx, image: nginx:1.27}
";

const DEPLOYMENT: &str = "apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: nginx, image: nginx:1.27}
";

const SERVICE: &str = "apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  clusterIP: None
  selector: {app: web}
  ports:
  - {port: 80, protocol: TCP}
";

/// `get pods`, `-o wide`, `get deploy` (and wide), `get svc` and `get all`
/// print upstream's columns and cells.
#[test]
fn workloads_print_upstream_columns() {
    let s = TestServer::start();
    apply(&s, POD);
    apply(&s, DEPLOYMENT);
    apply(&s, SERVICE);

    let (header, row) = header_and_row(&ok(&s, &["get", "pods"]), "web");
    assert_eq!(header, ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]);
    assert_eq!(&row[..4], ["web", "0/1", "Pending", "0"]);
    assert!(is_age(&row[4]), "{row:?}");

    let (header, row) = header_and_row(&ok(&s, &["get", "pods", "-o", "wide"]), "web");
    assert_eq!(
        header,
        ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE", "NOMINATED", "NODE", "READINESS", "GATES"]
    );
    assert_eq!(&row[5..], ["<none>", "<none>", "<none>", "<none>"]);

    let (header, row) = header_and_row(&ok(&s, &["get", "deploy"]), "web");
    assert_eq!(header, ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]);
    assert_eq!(&row[..4], ["web", "0/2", "0", "0"]);

    let (header, row) = header_and_row(&ok(&s, &["get", "deploy", "-o", "wide"]), "web");
    assert_eq!(header, ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE", "CONTAINERS", "IMAGES", "SELECTOR"]);
    assert_eq!(&row[5..], ["nginx", "nginx:1.27", "app=web"]);

    let (header, row) = header_and_row(&ok(&s, &["get", "svc", "-o", "wide"]), "web");
    assert_eq!(header, ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE", "SELECTOR"]);
    assert_eq!(&row[..5], ["web", "ClusterIP", "None", "<none>", "80/TCP"]);
    assert_eq!(row[6], "app=web");

    // --sort-by asks for includeObject=Object; --show-labels reads the
    // labels from the row object.
    let sorted = ok(&s, &["get", "pods", "--sort-by=.metadata.name", "--show-labels"]);
    let (header, row) = header_and_row(&sorted, "web");
    assert_eq!(header, ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "LABELS"]);
    assert_eq!(row[5], "app=web");

    let all = ok(&s, &["get", "all"]);
    assert!(all.lines().any(|l| words(l).starts_with(&["pod/web", "0/1", "Pending"])), "{all}");
    assert!(all.lines().any(|l| words(l).starts_with(&["deployment.apps/web", "0/2", "0", "0"])), "{all}");
    assert!(all.lines().any(|l| words(l) == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]), "{all}");
    assert!(all.lines().any(|l| words(l).starts_with(&["service/web", "ClusterIP", "None"])), "{all}");
}

/// Nodes, namespaces, config maps (with `-A`, which reads the namespace
/// from the row metadata) and events.
#[test]
fn cluster_kinds_print_upstream_columns() {
    let s = TestServer::start();
    apply(
        &s,
        "apiVersion: v1
kind: Node
metadata:
  name: n1
  labels: {node-role.kubernetes.io/control-plane: \"\"}
spec: {unschedulable: true}
",
    );
    apply(&s, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata: {a: \"1\", b: \"2\"}\n");
    let (first, last) = (rfc3339_ago(3 * 3600), rfc3339_ago(200));
    apply(
        &s,
        &format!(
            "apiVersion: v1
kind: Event
metadata: {{name: web.1, namespace: default}}
involvedObject: {{kind: Pod, name: web, namespace: default}}
type: Normal
reason: Scheduled
message: Successfully assigned default/web to n1
source: {{component: default-scheduler}}
firstTimestamp: \"{first}\"
lastTimestamp: \"{last}\"
count: 4
"
        ),
    );

    let (header, row) = header_and_row(&ok(&s, &["get", "nodes"]), "n1");
    assert_eq!(header, ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]);
    assert_eq!(&row[..3], ["n1", "Unknown,SchedulingDisabled", "control-plane"]);
    let (header, _) = header_and_row(&ok(&s, &["get", "nodes", "-o", "wide"]), "n1");
    assert_eq!(&header[5..], ["INTERNAL-IP", "EXTERNAL-IP", "OS-IMAGE", "KERNEL-VERSION", "CONTAINER-RUNTIME"]);

    let (header, row) = header_and_row(&ok(&s, &["get", "cm"]), "cfg");
    assert_eq!(header, ["NAME", "DATA", "AGE"]);
    assert_eq!(&row[..2], ["cfg", "2"]);
    let (header, row) = header_and_row(&ok(&s, &["get", "cm", "-A"]), "default");
    assert_eq!(header, ["NAMESPACE", "NAME", "DATA", "AGE"]);
    assert!(row.len() == 4 && ["cfg", "kube-root-ca.crt"].contains(&row[1].as_str()), "{row:?}");

    let (header, row) = header_and_row(&ok(&s, &["get", "ns"]), "default");
    assert_eq!(header, ["NAME", "STATUS", "AGE"]);
    assert_eq!(row[1], "Active");

    let out = ok(&s, &["get", "events"]);
    let mut lines = out.lines();
    assert_eq!(words(lines.next().unwrap_or("")), ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]);
    let row = lines.map(words).find(|w| w.contains(&"Scheduled")).unwrap_or_else(|| panic!("{out}"));
    assert!(row[0].starts_with("3m") && is_age(row[0]), "last seen 200 s ago: {row:?}");
    assert_eq!(&row[1..5], ["Normal", "Scheduled", "pod/web", "Successfully"]);
    let wide = ok(&s, &["get", "events", "-o", "wide"]);
    let header = words(wide.lines().next().unwrap_or(""));
    let row = wide.lines().map(words).find(|w| w.contains(&"web.1")).unwrap_or_else(|| panic!("{wide}"));
    assert_eq!(header[..8], ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "SUBOBJECT", "SOURCE", "MESSAGE"]);
    assert_eq!(header[8..], ["FIRST", "SEEN", "COUNT", "NAME"]);
    assert_eq!(row[row.len() - 3..], ["3h", "4", "web.1"]);
}

/// `kubectl get -w` prints the header once (the first watch Table carries
/// the columns) and one row per event.
#[test]
fn watch_tables_print_rows_under_one_header() {
    let s = TestServer::start();
    apply(&s, POD);
    let watch = Background::kubectl(&s, &["get", "pods", "-w"]);
    watch.wait_for("the existing pod", Duration::from_secs(20), |o| o.contains("web"));
    apply(&s, &POD.replace("name: web,", "name: second,"));
    let out = watch.wait_for("the new pod", Duration::from_secs(20), |o| o.contains("second"));
    let lines: Vec<Vec<&str>> = out.lines().map(words).collect();
    assert_eq!(lines[0], ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]);
    assert_eq!(lines.iter().filter(|w| w.first() == Some(&"NAME")).count(), 1, "{out}");
    let second = lines.iter().find(|w| w.first() == Some(&"second")).unwrap_or_else(|| panic!("{out}"));
    assert_eq!(&second[..4], ["second", "0/1", "Pending", "0"]);
}
