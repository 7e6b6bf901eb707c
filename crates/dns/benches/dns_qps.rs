//! DNS queries/s and latency: the server on 127.0.0.1 with a model of
//! SERVICES ClusterIP services (default 1,000) plus as many headless ones
//! with 3 endpoints, and a load generator on the same machine: SOCKETS UDP
//! sockets (default 4), each a thread keeping WINDOW queries in flight
//! (default 32), for SECONDS (default 5) after a 1 s warm-up. Queries cycle
//! over A for ClusterIP names, A for headless names, SRV and NXDOMAIN names.
//!
//! `cargo bench -p rkube-dns --bench dns_qps` (env SERVICES, SOCKETS, WINDOW,
//! SECONDS, SERVER_THREADS override the defaults).

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hickory_server::proto::op::{Message, MessageType, OpCode, Query};
use hickory_server::proto::rr::{Name, RecordType};
use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointSlice};
use kube::api::ObjectMeta;
use rkube_dns::server::{serve_on, IndexCell};
use rkube_dns::{lookup, Index, Model, Zone};

fn env(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn model(n: usize) -> Model {
    let mut m = Model { synced: true, ..Default::default() };
    m.namespaces.insert("default".into());
    for i in 0..n {
        for (kind, ip) in [("svc", format!("10.43.{}.{}", i / 250, i % 250 + 1)), ("hl", "None".into())] {
            let name = format!("{kind}{i}");
            let spec = ServiceSpec {
                cluster_ip: Some(ip),
                ports: Some(vec![ServicePort {
                    name: Some("http".into()),
                    port: 80,
                    protocol: Some("TCP".into()),
                    ..Default::default()
                }]),
                ..Default::default()
            };
            let meta = ObjectMeta { name: Some(name.clone()), namespace: Some("default".into()), ..Default::default() };
            m.services.insert(
                format!("default/{name}"),
                Arc::new(Service { metadata: meta, spec: Some(spec), status: None }),
            );
        }
        let slice = EndpointSlice {
            metadata: ObjectMeta {
                name: Some(format!("hl{i}-x")),
                namespace: Some("default".into()),
                labels: Some([("kubernetes.io/service-name".to_string(), format!("hl{i}"))].into()),
                ..Default::default()
            },
            address_type: "IPv4".into(),
            endpoints: (0..3)
                .map(|e| Endpoint { addresses: vec![format!("10.42.{e}.{}", i % 250 + 1)], ..Default::default() })
                .collect(),
            ports: None,
        };
        m.slices.insert(format!("default/hl{i}-x"), Arc::new(slice));
    }
    m
}

fn queries(n: usize) -> Vec<(Name, RecordType)> {
    let mut q = Vec::new();
    for i in 0..n {
        q.push((Name::from_ascii(format!("svc{i}.default.svc.cluster.local.")).unwrap(), RecordType::A));
        q.push((Name::from_ascii(format!("hl{i}.default.svc.cluster.local.")).unwrap(), RecordType::A));
        q.push((Name::from_ascii(format!("_http._tcp.svc{i}.default.svc.cluster.local.")).unwrap(), RecordType::SRV));
        q.push((Name::from_ascii(format!("nope{i}.default.svc.cluster.local.")).unwrap(), RecordType::A));
    }
    q
}

fn percentile(sorted: &[u32], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    sorted[((sorted.len() - 1) as f64 * p) as usize] as f64 / 1000.0
}

fn main() {
    let services = env("SERVICES", 1000);
    let sockets = env("SOCKETS", 4);
    let window = env("WINDOW", 32);
    let seconds = env("SECONDS", 5);
    let server_threads = env("SERVER_THREADS", 1);
    let zone = Zone { domain: "cluster.local".into(), dns_ips: vec!["10.43.0.10".parse().unwrap()] };
    let m = model(services);
    let t = Instant::now();
    let index = Index::build(&zone, &m);
    println!("index: {} names from {} services, built in {:?}", index.len(), 2 * services, t.elapsed());
    let qs = queries(services);

    // The pure lookup alone.
    let t = Instant::now();
    let mut n = 0usize;
    while t.elapsed() < Duration::from_secs(1) {
        for (name, ty) in qs.iter().take(1000) {
            std::hint::black_box(lookup(&index, name, *ty));
            n += 1;
        }
    }
    println!("lookup(): {:.0} lookups/s on one thread", n as f64 / t.elapsed().as_secs_f64());

    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(server_threads).enable_all().build().unwrap();
    let (addr, stop_tx) = rt.block_on(async {
        let udp = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let addr = udp.local_addr().unwrap();
        let tcp = tokio::net::TcpListener::bind(addr).await.unwrap();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(serve_on(udp, tcp, IndexCell::new(index), vec![], async move {
            let _ = rx.await;
        }));
        (addr, tx)
    });

    let packets: Arc<Vec<Vec<u8>>> = Arc::new(
        qs.iter()
            .map(|(name, ty)| {
                let mut m = Message::new(0, MessageType::Query, OpCode::Query);
                m.metadata.recursion_desired = true;
                m.add_query(Query::query(name.clone(), *ty));
                m.to_vec().unwrap()
            })
            .collect(),
    );
    let measuring = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicBool::new(false));
    let threads: Vec<_> = (0..sockets)
        .map(|s| {
            let packets = packets.clone();
            let measuring = measuring.clone();
            let done = done.clone();
            std::thread::spawn(move || load(addr, s, window, &packets, &measuring, &done))
        })
        .collect();
    std::thread::sleep(Duration::from_secs(1));
    measuring.store(true, Ordering::SeqCst);
    let t = Instant::now();
    std::thread::sleep(Duration::from_secs(seconds as u64));
    done.store(true, Ordering::SeqCst);
    let elapsed = t.elapsed().as_secs_f64();
    let mut lat: Vec<u32> = Vec::new();
    let mut lost = 0;
    for th in threads {
        let (l, x) = th.join().unwrap();
        lat.extend(l);
        lost += x;
    }
    lat.sort_unstable();
    println!(
        "server ({server_threads} runtime thread(s)) on {addr}, {sockets} UDP sockets x {window} in flight, {seconds} s: {:.0} queries/s, p50 {:.3} ms, p99 {:.3} ms, {} answered, {lost} timed out",
        lat.len() as f64 / elapsed,
        percentile(&lat, 0.50),
        percentile(&lat, 0.99),
        lat.len()
    );
    let _ = stop_tx.send(());
}

/// One socket: keeps `window` queries outstanding; returns latencies (µs)
/// measured while `measuring` and the count of queries that timed out.
fn load(
    addr: SocketAddr,
    seed: usize,
    window: usize,
    packets: &[Vec<u8>],
    measuring: &AtomicBool,
    done: &AtomicBool,
) -> (Vec<u32>, usize) {
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    sock.connect(addr).unwrap();
    sock.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
    let mut sent_at: Vec<Option<Instant>> = vec![None; 65536];
    let mut next_id: u16 = 0;
    let mut next_q = seed * 7919;
    let mut lat = Vec::with_capacity(1 << 20);
    let mut lost = 0;
    let mut buf = [0u8; 4096];
    let send = |sent_at: &mut Vec<Option<Instant>>, next_id: &mut u16, next_q: &mut usize| {
        let mut p = packets[*next_q % packets.len()].clone();
        *next_q += 1;
        p[0..2].copy_from_slice(&next_id.to_be_bytes());
        sent_at[*next_id as usize] = Some(Instant::now());
        *next_id = next_id.wrapping_add(1);
        let _ = sock.send(&p);
    };
    for _ in 0..window {
        send(&mut sent_at, &mut next_id, &mut next_q);
    }
    while !done.load(Ordering::Relaxed) {
        match sock.recv(&mut buf) {
            Ok(n) if n >= 2 => {
                let id = u16::from_be_bytes([buf[0], buf[1]]) as usize;
                if let Some(t) = sent_at[id].take() {
                    if measuring.load(Ordering::Relaxed) {
                        lat.push(t.elapsed().as_micros() as u32);
                    }
                    send(&mut sent_at, &mut next_id, &mut next_q);
                }
            }
            Ok(_) => {}
            Err(_) => {
                // Timed out: count the lost ones and refill the window.
                let now = Instant::now();
                for s in sent_at.iter_mut() {
                    if s.is_some_and(|t| now.duration_since(t) > Duration::from_millis(200)) {
                        *s = None;
                        lost += 1;
                    }
                }
                let outstanding = sent_at.iter().filter(|s| s.is_some()).count();
                for _ in outstanding..window {
                    send(&mut sent_at, &mut next_id, &mut next_q);
                }
            }
        }
    }
    (lat, lost)
}
