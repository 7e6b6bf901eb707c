//! ProbeManager tests: real workers probing local listeners on 127.0.0.1
//! with 1 s periods; events are captured instead of posted.

use std::time::Duration;

use k8s_openapi::api::core::v1::{Container, PodSpec, PodStatus, Probe, TCPSocketAction};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};

use super::*;

type Captured = Arc<Mutex<Vec<(ObjectReference, String, String)>>>;

fn manager() -> (ProbeManager, Captured, UnboundedReceiver<String>) {
    let (tx, rx) = unbounded_channel();
    let cap = Captured::default();
    // Started long ago: no first-probe jitter.
    let start = Instant::now().checked_sub(Duration::from_secs(3600)).unwrap_or_else(Instant::now);
    (ProbeManager::build(None, EventSink::Capture(cap.clone()), tx, start), cap, rx)
}

fn pod(containers: Vec<Container>) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some("web".into()),
            namespace: Some("default".into()),
            uid: Some("uid-1".into()),
            ..Default::default()
        },
        spec: Some(PodSpec { containers, ..Default::default() }),
        status: Some(PodStatus { phase: Some("Running".into()), ..Default::default() }),
    }
}

fn tcp_probe(port: i32, failure_threshold: i32) -> Probe {
    Probe {
        tcp_socket: Some(TCPSocketAction { host: Some("127.0.0.1".into()), port: IntOrString::Int(port) }),
        period_seconds: Some(1),
        failure_threshold: Some(failure_threshold),
        ..Default::default()
    }
}

fn now_ns() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as i64
}

fn running(id: &str, started_at: i64) -> BTreeMap<String, (String, i64)> {
    BTreeMap::from([("app".to_string(), (id.to_string(), started_at))])
}

async fn open_port() -> (tokio::net::TcpListener, i32) {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port() as i32;
    (l, port)
}

fn closed_port() -> i32 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port() as i32
}

async fn eventually(f: impl Fn() -> bool) -> bool {
    for _ in 0..250 {
        if f() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

fn messages(cap: &Captured) -> Vec<String> {
    cap.lock().unwrap().iter().map(|(_, _, m)| m.clone()).collect()
}

#[tokio::test]
async fn container_without_probes_is_started_and_ready_once_running() {
    let (m, _, _) = manager();
    let p = pod(vec![Container { name: "app".into(), ..Default::default() }]);
    assert!(!m.readiness("uid-1", "app"), "unknown pod");
    m.sync_pod(&p, Some("127.0.0.1"), &running("c1", now_ns()));
    assert!(m.started("uid-1", "app"));
    assert!(m.readiness("uid-1", "app"));
    m.sync_pod(&p, Some("127.0.0.1"), &BTreeMap::new());
    assert!(!m.started("uid-1", "app"));
    assert!(!m.readiness("uid-1", "app"));
}

#[tokio::test]
async fn readiness_is_false_until_first_success_then_changed_is_sent() {
    let (m, cap, mut changed) = manager();
    let (_l, port) = open_port().await;
    let probe = Probe { initial_delay_seconds: Some(3600), ..tcp_probe(port, 3) };
    let p = pod(vec![Container { name: "app".into(), readiness_probe: Some(probe), ..Default::default() }]);
    m.sync_pod(&p, Some("127.0.0.1"), &running("c1", now_ns()));
    assert!(eventually(|| m.result("uid-1", "app", ProbeKind::Readiness) == Some(ProbeResult::Failure)).await);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!m.readiness("uid-1", "app"), "within initialDelaySeconds the container is not ready");
    while changed.try_recv().is_ok() {}
    // The container has been running past the initial delay: asking triggers a probe at once.
    m.sync_pod(&p, Some("127.0.0.1"), &running("c1", now_ns() - 7200 * 1_000_000_000));
    assert!(eventually(|| m.readiness("uid-1", "app")).await);
    assert_eq!(changed.try_recv().ok().as_deref(), Some("uid-1"));
    assert!(messages(&cap).is_empty());
}

#[tokio::test]
async fn liveness_failure_past_threshold_is_reported_once_with_unhealthy_events() {
    let (m, cap, _) = manager();
    let port = closed_port();
    let p = pod(vec![Container { name: "app".into(), liveness_probe: Some(tcp_probe(port, 2)), ..Default::default() }]);
    m.sync_pod(&p, Some("127.0.0.1"), &running("c1", now_ns()));
    assert!(m.readiness("uid-1", "app"), "liveness does not gate readiness");
    assert!(eventually(|| m.result("uid-1", "app", ProbeKind::Liveness) == Some(ProbeResult::Failure)).await);
    assert_eq!(m.take_failed("uid-1"), vec![("app".to_string(), "liveness")]);
    assert!(m.take_failed("uid-1").is_empty(), "reported once");
    let expected = format!("Liveness probe failed: dial tcp 127.0.0.1:{port}: connect: connection refused");
    assert_eq!(messages(&cap), vec![expected.clone(), expected.clone()], "failureThreshold 2 = two failed probes");
    let (regarding, reason, _) = cap.lock().unwrap()[0].clone();
    assert_eq!(reason, "Unhealthy");
    assert_eq!(regarding.field_path.as_deref(), Some("spec.containers{app}"));
    assert_eq!((regarding.kind.as_deref(), regarding.name.as_deref()), (Some("Pod"), Some("web")));
    // On hold until the container is replaced.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(messages(&cap).len(), 2);
    m.sync_pod(&p, Some("127.0.0.1"), &running("c2", now_ns()));
    assert!(eventually(|| m.result("uid-1", "app", ProbeKind::Liveness) == Some(ProbeResult::Success)).await);
    assert!(eventually(|| m.take_failed("uid-1") == vec![("app".to_string(), "liveness")]).await);
}

#[tokio::test]
async fn startup_probe_gates_liveness_and_readiness() {
    let (m, cap, _) = manager();
    let (_l, open) = open_port().await;
    let closed = closed_port();
    let c = Container {
        name: "app".into(),
        startup_probe: Some(tcp_probe(closed, 100)),
        liveness_probe: Some(tcp_probe(closed, 1)),
        readiness_probe: Some(tcp_probe(open, 1)),
        ..Default::default()
    };
    m.sync_pod(&pod(vec![c]), Some("127.0.0.1"), &running("c1", now_ns()));
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(!m.started("uid-1", "app"));
    assert!(!m.readiness("uid-1", "app"));
    assert!(m.take_failed("uid-1").is_empty());
    let msgs = messages(&cap);
    assert!(!msgs.is_empty() && msgs.iter().all(|s| s.starts_with("Startup probe failed: dial tcp")), "{msgs:?}");

    // Once the startup probe succeeds, readiness is probed.
    let (m, _, _) = manager();
    let c = Container {
        name: "app".into(),
        startup_probe: Some(tcp_probe(open, 3)),
        readiness_probe: Some(tcp_probe(open, 1)),
        ..Default::default()
    };
    m.sync_pod(&pod(vec![c]), Some("127.0.0.1"), &running("c1", now_ns()));
    assert!(eventually(|| m.started("uid-1", "app")).await);
    assert!(eventually(|| m.readiness("uid-1", "app")).await);
}

#[tokio::test]
async fn startup_failure_is_reported_as_startup() {
    let (m, cap, _) = manager();
    let c = Container { name: "app".into(), startup_probe: Some(tcp_probe(closed_port(), 1)), ..Default::default() };
    m.sync_pod(&pod(vec![c]), Some("127.0.0.1"), &running("c1", now_ns()));
    assert!(eventually(|| m.take_failed("uid-1") == vec![("app".to_string(), "startup")]).await);
    assert!(messages(&cap)[0].starts_with("Startup probe failed: dial tcp 127.0.0.1:"));
}

#[tokio::test]
async fn http_liveness_failure_event_has_status_code() {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port() as i32;
    tokio::spawn(async move {
        while let Ok((mut c, _)) = l.accept().await {
            let mut buf = [0u8; 2048];
            let _ = c.read(&mut buf).await;
            let _ = c.write_all(b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n").await;
        }
    });
    let (m, cap, _) = manager();
    let probe = Probe {
        http_get: Some(k8s_openapi::api::core::v1::HTTPGetAction {
            port: IntOrString::String("web".into()),
            path: Some("/healthz".into()),
            ..Default::default()
        }),
        failure_threshold: Some(1),
        ..Default::default()
    };
    let c = Container {
        name: "app".into(),
        ports: Some(vec![k8s_openapi::api::core::v1::ContainerPort {
            name: Some("web".into()),
            container_port: port,
            ..Default::default()
        }]),
        liveness_probe: Some(probe),
        ..Default::default()
    };
    m.sync_pod(&pod(vec![c]), Some("127.0.0.1"), &running("c1", now_ns()));
    assert!(eventually(|| !m.take_failed("uid-1").is_empty()).await);
    assert_eq!(messages(&cap), vec!["Liveness probe failed: HTTP probe failed with statuscode: 500".to_string()]);
}

#[tokio::test]
async fn errored_probe_is_thrown_away_with_event() {
    let (m, cap, _) = manager();
    let probe = Probe {
        tcp_socket: Some(TCPSocketAction { host: None, port: IntOrString::String("nope".into()) }),
        failure_threshold: Some(1),
        ..Default::default()
    };
    let c = Container { name: "app".into(), readiness_probe: Some(probe), ..Default::default() };
    m.sync_pod(&pod(vec![c]), Some("127.0.0.1"), &running("c1", now_ns()));
    assert!(eventually(|| !messages(&cap).is_empty()).await);
    assert_eq!(
        messages(&cap)[0],
        "Readiness probe errored and resulted in unknown state: strconv.Atoi: parsing \"nope\": invalid syntax"
    );
    assert_eq!(m.result("uid-1", "app", ProbeKind::Readiness), Some(ProbeResult::Failure));
    assert!(!m.readiness("uid-1", "app"));
}

#[tokio::test]
async fn deleted_pod_liveness_is_quiet() {
    let (m, cap, _) = manager();
    let mut p = pod(vec![Container {
        name: "app".into(),
        liveness_probe: Some(tcp_probe(closed_port(), 1)),
        ..Default::default()
    }]);
    p.metadata.deletion_timestamp = Some(Time(jiff::Timestamp::now()));
    m.sync_pod(&p, Some("127.0.0.1"), &running("c1", now_ns()));
    assert!(eventually(|| m.result("uid-1", "app", ProbeKind::Liveness) == Some(ProbeResult::Success)).await);
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert!(messages(&cap).is_empty());
    assert!(m.take_failed("uid-1").is_empty());
}

#[tokio::test]
async fn remove_pod_stops_probing() {
    let (m, cap, _) = manager();
    let c = Container { name: "app".into(), readiness_probe: Some(tcp_probe(closed_port(), 1)), ..Default::default() };
    m.sync_pod(&pod(vec![c]), Some("127.0.0.1"), &running("c1", now_ns()));
    assert!(eventually(|| !messages(&cap).is_empty()).await);
    m.remove_pod("uid-1");
    let n = messages(&cap).len();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(messages(&cap).len(), n);
    assert!(!m.readiness("uid-1", "app"));
    assert_eq!(m.result("uid-1", "app", ProbeKind::Readiness), None);
}

#[tokio::test]
async fn stop_liveness_and_startup_keeps_readiness() {
    let (m, cap, _) = manager();
    let (_l, open) = open_port().await;
    let c = Container {
        name: "app".into(),
        liveness_probe: Some(tcp_probe(closed_port(), 1)),
        readiness_probe: Some(tcp_probe(open, 1)),
        ..Default::default()
    };
    m.sync_pod(&pod(vec![c.clone()]), Some("127.0.0.1"), &running("c1", now_ns()));
    assert!(eventually(|| !messages(&cap).is_empty()).await);
    m.stop_liveness_and_startup("uid-1");
    let n = messages(&cap).len();
    // Without the stop, the liveness worker would probe the new container and fail again.
    m.sync_pod(&pod(vec![c]), Some("127.0.0.1"), &running("c2", now_ns()));
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(messages(&cap).len(), n, "a stopped liveness worker is not restarted by sync_pod");
    assert!(eventually(|| m.readiness("uid-1", "app")).await, "readiness still probes the new container");
}

#[test]
fn kill_grace_period_prefers_probe_setting() {
    let probe = Probe { termination_grace_period_seconds: Some(5), ..Default::default() };
    let mut p = pod(vec![Container { name: "app".into(), liveness_probe: Some(probe), ..Default::default() }]);
    assert_eq!(kill_grace_period_seconds(&p, "app", None), 30);
    assert_eq!(kill_grace_period_seconds(&p, "app", Some(ProbeKind::Liveness)), 5);
    assert_eq!(kill_grace_period_seconds(&p, "app", Some(ProbeKind::Startup)), 30);
    p.spec.as_mut().unwrap().termination_grace_period_seconds = Some(60);
    assert_eq!(kill_grace_period_seconds(&p, "app", Some(ProbeKind::Readiness)), 60);
    p.metadata.deletion_grace_period_seconds = Some(1);
    assert_eq!(kill_grace_period_seconds(&p, "app", Some(ProbeKind::Liveness)), 1);
}
