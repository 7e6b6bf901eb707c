//! The API server over real TLS on 127.0.0.1: health endpoints in
//! upstream's format, /version, 404 Status, ALPN, client certificates and
//! graceful shutdown.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::ConnectInfo;
use axum::routing;
use axum::{Extension, Router};
use bytes::Bytes;
use rkube_apiserver::{listener::TlsListener, tls, ApiServer, Config, PeerCertificates, TlsMaterial};
use rkube_pki::{ClusterPki, PkiFiles, San, ServingNames};
use rkube_store::{
    DeleteResponse, GetResponse, KeyValue, RangeRequest, RangeResponse, Revision, Store, StoreError, Watch,
    WatchOptions,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::oneshot;

/// A store whose only used call, `current_revision`, can be made to fail.
#[derive(Default)]
struct FakeStore {
    down: AtomicBool,
}

fn unused<T>() -> Result<T, StoreError> {
    Err(StoreError::Unavailable("not used by this test".into()))
}

#[async_trait::async_trait]
impl Store for FakeStore {
    async fn current_revision(&self) -> Result<Revision, StoreError> {
        if self.down.load(Ordering::SeqCst) {
            Err(StoreError::Unavailable("connection refused".into()))
        } else {
            Ok(7)
        }
    }
    async fn get(&self, _: &str, _: Option<Revision>) -> Result<GetResponse, StoreError> {
        unused()
    }
    async fn range(&self, _: RangeRequest) -> Result<RangeResponse, StoreError> {
        unused()
    }
    async fn create(&self, _: &str, _: Bytes, _: Option<Duration>) -> Result<KeyValue, StoreError> {
        unused()
    }
    async fn update(&self, _: &str, _: Bytes, _: Revision, _: Option<Duration>) -> Result<KeyValue, StoreError> {
        unused()
    }
    async fn delete(&self, _: &str, _: Option<Revision>) -> Result<DeleteResponse, StoreError> {
        unused()
    }
    async fn watch(&self, _: &str, _: Revision, _: WatchOptions) -> Result<Watch, StoreError> {
        unused()
    }
    async fn compact(&self, _: Revision) -> Result<(), StoreError> {
        unused()
    }
    async fn compacted_revision(&self) -> Result<Revision, StoreError> {
        unused()
    }
}

struct Fixture {
    _dir: tempfile::TempDir,
    pki: ClusterPki,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let names = ServingNames {
        advertise_address: "127.0.0.1".parse().unwrap(),
        host_addresses: vec![],
        kubernetes_service_ip: "10.43.0.1".parse().unwrap(),
        cluster_domain: "cluster.local".into(),
        extra: vec![San::parse("rkube.test").unwrap()],
    };
    let pki = ClusterPki::ensure(&PkiFiles::for_data_dir(dir.path()), &names).unwrap();
    Fixture { _dir: dir, pki }
}

impl Fixture {
    fn material(&self) -> TlsMaterial {
        TlsMaterial {
            serving_cert_pem: self.pki.serving.cert_pem.clone(),
            serving_key_pem: self.pki.serving.key_pem.clone(),
            client_ca_pem: self.pki.ca.cert_pem.clone(),
        }
    }
}

struct Running {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
}

impl Running {
    async fn stop(mut self) {
        let _ = self.stop.take().unwrap().send(());
        tokio::time::timeout(Duration::from_secs(10), &mut self.task).await.expect("server stops").unwrap();
    }
}

async fn start(fx: &Fixture, store: Arc<FakeStore>) -> Running {
    let server = ApiServer::bind(Config {
        bind_address: "127.0.0.1:0".parse().unwrap(),
        tls: fx.material(),
        store,
        shutdown_grace: Duration::from_secs(2),
        cluster: Default::default(),
        inflight: Default::default(),
    })
    .await
    .unwrap();
    let addr = server.local_addr();
    let (tx, rx) = oneshot::channel();
    let task = tokio::spawn(server.serve(async {
        let _ = rx.await;
    }));
    Running { addr, stop: Some(tx), task }
}

/// How a test client connects.
#[derive(Clone, Default)]
struct ClientOpts<'a> {
    /// PEM client certificate and key to present.
    cert: Option<(&'a str, &'a str)>,
    /// ALPN protocols to offer (default: none).
    alpn: Vec<&'static [u8]>,
    /// Restrict to TLS 1.2.
    tls12_only: bool,
}

async fn connect(
    fx: &Fixture,
    addr: SocketAddr,
    opts: &ClientOpts<'_>,
) -> std::io::Result<tokio_rustls::client::TlsStream<TcpStream>> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(CertificateDer::from_pem_slice(fx.pki.ca.cert_pem.as_bytes()).unwrap()).unwrap();
    let versions: &[&rustls::SupportedProtocolVersion] =
        if opts.tls12_only { &[&rustls::version::TLS12] } else { &[&rustls::version::TLS13, &rustls::version::TLS12] };
    let builder = rustls::ClientConfig::builder_with_provider(tls::crypto_provider())
        .with_protocol_versions(versions)
        .unwrap()
        .with_root_certificates(roots);
    let mut config = match opts.cert {
        Some((cert, key)) => builder
            .with_client_auth_cert(
                vec![CertificateDer::from_pem_slice(cert.as_bytes()).unwrap()],
                PrivateKeyDer::from_pem_slice(key.as_bytes()).unwrap(),
            )
            .unwrap(),
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = opts.alpn.iter().map(|p| p.to_vec()).collect();
    let tcp = TcpStream::connect(addr).await?;
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    connector.connect(ServerName::try_from("localhost").unwrap(), tcp).await
}

struct Reply {
    status: u16,
    headers: String,
    body: String,
}

async fn get_with(fx: &Fixture, addr: SocketAddr, path: &str, opts: &ClientOpts<'_>) -> std::io::Result<Reply> {
    let mut tls = connect(fx, addr, opts).await?;
    tls.write_all(format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").as_bytes()).await?;
    let mut raw = Vec::new();
    tls.read_to_end(&mut raw).await?;
    let raw = String::from_utf8(raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").expect("HTTP response head");
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    assert!(head.to_ascii_lowercase().contains("content-length:"), "test client expects sized bodies: {head}");
    Ok(Reply { status, headers: head.to_ascii_lowercase(), body: body.to_string() })
}

/// GET as the admin (system:masters): these servers' store holds no RBAC
/// policy, and only the privileged group is authorized without one.
async fn get(fx: &Fixture, addr: SocketAddr, path: &str) -> Reply {
    let admin = ClientOpts { cert: Some((&fx.pki.admin.cert_pem, &fx.pki.admin.key_pem)), ..Default::default() };
    get_with(fx, addr, path, &admin).await.unwrap()
}

#[tokio::test]
async fn health_endpoints_answer_ok_in_upstream_format() {
    let fx = fixture();
    let server = start(&fx, Arc::default()).await;

    for path in ["/healthz", "/livez", "/readyz", "/readyz/etcd", "/livez/ping", "/healthz/log"] {
        let r = get(&fx, server.addr, path).await;
        assert_eq!((r.status, r.body.as_str()), (200, "ok"), "{path}");
        assert!(r.headers.contains("content-type: text/plain; charset=utf-8"), "{path}: {}", r.headers);
        assert!(r.headers.contains("x-content-type-options: nosniff"), "{path}");
    }

    let r = get(&fx, server.addr, "/readyz?verbose").await;
    assert_eq!(r.status, 200);
    assert_eq!(
        r.body,
        "[+]ping ok\n[+]log ok\n[+]etcd ok\n[+]etcd-readiness ok\n[+]shutdown ok\nreadyz check passed\n"
    );
    let r = get(&fx, server.addr, "/livez?verbose").await;
    assert_eq!(r.body, "[+]ping ok\n[+]log ok\n[+]etcd ok\nlivez check passed\n");
    let r = get(&fx, server.addr, "/healthz?verbose=1&exclude=log&exclude=nosuch").await;
    assert_eq!(
        r.body,
        "[+]ping ok\n[+]log excluded: ok\n[+]etcd ok\nwarn: some health checks cannot be excluded: no matches for \"nosuch\"\nhealthz check passed\n"
    );
    server.stop().await;
}

#[tokio::test]
async fn readyz_fails_with_reason_withheld_when_the_store_does_not_answer() {
    let fx = fixture();
    let store = Arc::new(FakeStore::default());
    let server = start(&fx, store.clone()).await;
    store.down.store(true, Ordering::SeqCst);

    let r = get(&fx, server.addr, "/readyz").await;
    assert_eq!(r.status, 500);
    assert_eq!(
        r.body,
        "[+]ping ok\n[+]log ok\n[-]etcd failed: reason withheld\n[-]etcd-readiness failed: reason withheld\n[+]shutdown ok\nreadyz check failed\n"
    );
    let r = get(&fx, server.addr, "/livez").await;
    assert_eq!(
        (r.status, r.body.as_str()),
        (500, "[+]ping ok\n[+]log ok\n[-]etcd failed: reason withheld\nlivez check failed\n")
    );
    let r = get(&fx, server.addr, "/readyz/etcd").await;
    assert_eq!(r.status, 500);
    assert!(r.body.starts_with("internal server error: ") && r.body.contains("connection refused"), "{}", r.body);
    let r = get(&fx, server.addr, "/readyz?exclude=etcd&exclude=etcd-readiness").await;
    assert_eq!((r.status, r.body.as_str()), (200, "ok"));

    store.down.store(false, Ordering::SeqCst);
    assert_eq!(get(&fx, server.addr, "/readyz").await.body, "ok");
    server.stop().await;
}

#[tokio::test]
async fn readyz_reports_shutdown_once_shutdown_has_started() {
    let health = rkube_apiserver::Health::new(Arc::new(FakeStore::default()));
    assert!(health.evaluate(rkube_apiserver::health::Endpoint::Readyz, &[]).await.passed());
    health.start_shutdown();
    let report = health.evaluate(rkube_apiserver::health::Endpoint::Readyz, &[]).await;
    assert!(report.lines.ends_with("[-]shutdown failed: reason withheld\n"), "{}", report.lines);
    assert!(health.evaluate(rkube_apiserver::health::Endpoint::Livez, &[]).await.passed());
}

#[tokio::test]
async fn version_reports_the_kubernetes_api_level() {
    let fx = fixture();
    let server = start(&fx, Arc::default()).await;
    let r = get(&fx, server.addr, "/version?timeout=5s").await;
    assert_eq!(r.status, 200);
    assert!(r.headers.contains("content-type: application/json"));
    let v: serde_json::Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(v["major"], "1");
    assert_eq!(v["minor"], "33");
    assert!(v["gitVersion"].as_str().unwrap().starts_with("v1.33."));
    assert_eq!(v["platform"], format!("linux/{}", rkube_apimachinery::version::go_arch(std::env::consts::ARCH)));
    server.stop().await;
}

/// Plain HTTP on the HTTPS port gets Go's `net/http` answer (a 400 in
/// clear text, then close) instead of a raw TLS alert, and TLS clients are
/// still served afterwards.
#[tokio::test]
async fn plain_http_on_the_https_port_gets_a_400_in_clear_text() {
    let fx = fixture();
    let server = start(&fx, Arc::default()).await;
    let mut tcp = TcpStream::connect(server.addr).await.unwrap();
    tcp.write_all(b"GET /version HTTP/1.1\r\nHost: x\r\n\r\n").await.unwrap();
    let mut reply = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), tcp.read_to_end(&mut reply))
        .await
        .expect("the server closes the connection")
        .unwrap();
    assert_eq!(
        String::from_utf8(reply).unwrap(),
        "HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n"
    );
    assert_eq!(get(&fx, server.addr, "/version").await.status, 200);
    server.stop().await;
}

#[tokio::test]
async fn unknown_paths_get_a_not_found_status() {
    let fx = fixture();
    let server = start(&fx, Arc::default()).await;
    let admin = ClientOpts { cert: Some((&fx.pki.admin.cert_pem, &fx.pki.admin.key_pem)), ..Default::default() };
    for path in [
        "/nope",
        "/api/v1/nosuchresources",
        "/apis/nosuch.example.com/v1/things",
        "/readyz/nosuchcheck",
        "/livez/shutdown",
    ] {
        let r = get_with(&fx, server.addr, path, &admin).await.unwrap();
        assert_eq!(r.status, 404, "{path}");
        assert!(r.headers.contains("content-type: application/json"));
        let v: serde_json::Value = serde_json::from_str(&r.body).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
                "message":"the server could not find the requested resource","reason":"NotFound",
                "details":{},"code":404}),
            "{path}"
        );
    }
    server.stop().await;
}

/// Without a client certificate a request is `system:anonymous`, whom
/// upstream's default RBAC allows only /version and the health endpoints
/// (through the bootstrap policy, which this store cannot hold: see
/// crates/rkube/tests/security_rbac.rs); everything else is a 403.
#[tokio::test]
async fn anonymous_clients_reach_only_the_public_endpoints() {
    let fx = fixture();
    let server = start(&fx, Arc::default()).await;
    let anonymous = ClientOpts::default();
    for path in ["/api", "/apis", "/openapi/v3", "/nope"] {
        let r = get_with(&fx, server.addr, path, &anonymous).await.unwrap();
        assert_eq!(r.status, 403, "{path}: {}", r.body);
        let v: serde_json::Value = serde_json::from_str(&r.body).unwrap();
        assert_eq!(v["reason"], "Forbidden", "{path}");
        assert_eq!(v["message"], format!("forbidden: User \"system:anonymous\" cannot get path \"{path}\""), "{path}");
    }
    server.stop().await;
}

#[tokio::test]
async fn alpn_selects_h2_or_http11_and_tls12_is_accepted() {
    let fx = fixture();
    let server = start(&fx, Arc::default()).await;
    let opts = ClientOpts { alpn: vec![b"h2", b"http/1.1"], ..Default::default() };
    let tls = connect(&fx, server.addr, &opts).await.unwrap();
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
    assert_eq!(tls.get_ref().1.protocol_version(), Some(rustls::ProtocolVersion::TLSv1_3));

    let admin = Some((fx.pki.admin.cert_pem.as_str(), fx.pki.admin.key_pem.as_str()));
    let opts = ClientOpts { cert: admin, alpn: vec![b"http/1.1"], tls12_only: true };
    let tls = connect(&fx, server.addr, &opts).await.unwrap();
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"http/1.1"[..]));
    assert_eq!(tls.get_ref().1.protocol_version(), Some(rustls::ProtocolVersion::TLSv1_2));
    assert_eq!(get_with(&fx, server.addr, "/livez", &opts).await.unwrap().body, "ok");
    server.stop().await;
}

/// Serves a router that reports the connection's identity, via the same
/// listener the API server uses.
async fn start_identity_echo(fx: &Fixture) -> Running {
    let listener =
        TlsListener::bind("127.0.0.1:0".parse().unwrap(), tls::server_config(&fx.material()).unwrap()).await.unwrap();
    let addr = listener.local_addr();
    let app = Router::new().route(
        "/whoami",
        routing::get(
            |peer: Option<Extension<PeerCertificates>>, ConnectInfo(remote): ConnectInfo<SocketAddr>| async move {
                let who = match peer {
                    Some(Extension(p)) => format!("cert:{}:{}", p.chain().len(), p.leaf().len()),
                    None => "anonymous".to_string(),
                };
                format!("{who} from {}", remote.ip())
            },
        ),
    );
    let (tx, rx) = oneshot::channel();
    let task = tokio::spawn(listener.serve(
        app,
        async {
            let _ = rx.await;
        },
        Duration::from_secs(2),
    ));
    Running { addr, stop: Some(tx), task }
}

#[tokio::test]
async fn presented_client_certificates_reach_handlers_and_are_optional() {
    let fx = fixture();
    let server = start_identity_echo(&fx).await;
    let admin_der_len = CertificateDer::from_pem_slice(fx.pki.admin.cert_pem.as_bytes()).unwrap().len();

    let with_cert = ClientOpts { cert: Some((&fx.pki.admin.cert_pem, &fx.pki.admin.key_pem)), ..Default::default() };
    let r = get_with(&fx, server.addr, "/whoami", &with_cert).await.unwrap();
    assert_eq!(r.body, format!("cert:1:{admin_der_len} from 127.0.0.1"));

    let r = get_with(&fx, server.addr, "/whoami", &ClientOpts::default()).await.unwrap();
    assert_eq!(r.body, "anonymous from 127.0.0.1");

    // A certificate from another CA completes the handshake, as Go's
    // tls.RequestClientCert: the x509 authenticator refuses it per request
    // (a 401, see crates/rkube/tests/security_authn.rs).
    let other = fixture();
    let foreign =
        ClientOpts { cert: Some((&other.pki.admin.cert_pem, &other.pki.admin.key_pem)), ..Default::default() };
    let foreign_len = CertificateDer::from_pem_slice(other.pki.admin.cert_pem.as_bytes()).unwrap().len();
    let r = get_with(&fx, server.addr, "/whoami", &foreign).await.unwrap();
    assert_eq!(r.body, format!("cert:1:{foreign_len} from 127.0.0.1"));
    server.stop().await;
}

#[tokio::test]
async fn shutdown_lets_in_flight_requests_finish_and_stops_accepting() {
    let fx = fixture();
    let listener =
        TlsListener::bind("127.0.0.1:0".parse().unwrap(), tls::server_config(&fx.material()).unwrap()).await.unwrap();
    let addr = listener.local_addr();
    let app = Router::new().route(
        "/slow",
        routing::get(|| async {
            tokio::time::sleep(Duration::from_millis(800)).await;
            "done"
        }),
    );
    let (tx, rx) = oneshot::channel::<()>();
    let task = tokio::spawn(listener.serve(
        app,
        async {
            let _ = rx.await;
        },
        Duration::from_secs(5),
    ));

    let fx2 = &fx;
    let in_flight = async move { get_with(fx2, addr, "/slow", &ClientOpts::default()).await };
    let trigger = async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        tx.send(()).unwrap();
    };
    let (reply, ()) = tokio::join!(in_flight, trigger);
    let reply = reply.unwrap();
    assert_eq!((reply.status, reply.body.as_str()), (200, "done"));
    tokio::time::timeout(Duration::from_secs(5), task).await.expect("serve returns after draining").unwrap();
    assert!(TcpStream::connect(addr).await.is_err(), "the listener is closed after shutdown");
}
