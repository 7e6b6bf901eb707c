//! kube-proxy sync benchmark (prints figures; needs root, `ip`, `nft`).
//!
//! 1. Full sync at 10,000 Services (1 TCP port, `EPS_FULL` endpoints
//!    each): rule generation time and `nft -f` apply time of a table
//!    recreate, applied inside a netns this bench creates and deletes.
//! 2. Change → programmed latency with 1,000 Services × 10 endpoints:
//!    an endpoint of a random Service is replaced 10 times a second; the
//!    sync loop (as `run`'s: min_sync_period 0, coalescing whatever is
//!    queued) applies partial transactions; latency = time from the
//!    change being queued to `nft -f` returning.
//!
//! `cargo bench -p rkube-proxy --bench sync` (env `RKUBE_BENCH_SECS`
//! sets the latency run's length, default 30; `RKUBE_BENCH_AFFINITY=1`
//! gives the full-sync Services ClientIP affinity, the layout's worst
//! case: a chain and an affinity set per endpoint, as upstream).

use std::process::Command;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rkube_proxy::model::{Protocol, ServiceInfo, ServicePort, SliceEndpoint, SliceInfo};
use rkube_proxy::rules::{self, SyncKind};
use rkube_proxy::{Params, Proxier, Runner, ServiceKey};

const EPS_FULL: usize = 2;

struct Netns(String);
impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

fn svc(i: usize) -> ServiceInfo {
    ServiceInfo {
        cluster_ip: Some(format!("10.43.{}.{}", i / 250, i % 250 + 1).parse().unwrap()),
        ports: vec![ServicePort { name: "http".into(), protocol: Protocol::Tcp, port: 80, node_port: None }],
        ..Default::default()
    }
}

fn ep(n: usize) -> SliceEndpoint {
    SliceEndpoint {
        ip: format!("10.42.{}.{}", (n / 250) % 250, n % 250 + 1).parse().unwrap(),
        ready: true,
        serving: true,
        terminating: false,
        node_name: Some("n2".into()),
    }
}

fn slice(i: usize, eps: Vec<SliceEndpoint>) -> SliceInfo {
    SliceInfo { service: key(i), ports: vec![("http".into(), Protocol::Tcp, 8080)], endpoints: eps }
}

fn key(i: usize) -> ServiceKey {
    ServiceKey::new("bench", format!("svc-{i}"))
}

fn params(table: &str) -> Params {
    Params {
        table: table.into(),
        node_name: "n1".into(),
        node_ips: vec!["192.0.2.10".parse().unwrap()],
        cluster_cidr: "10.42.0.0/16".into(),
    }
}

fn pct(v: &mut [Duration], p: f64) -> Duration {
    v.sort();
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

fn main() {
    let ns = Netns(format!("rkt-proxy-bench-{}", std::process::id()));
    let ok = Command::new("ip").args(["netns", "add", &ns.0]).status().map(|s| s.success()).unwrap_or(false);
    if !ok {
        eprintln!("skipping: cannot create netns {} (needs root)", ns.0);
        std::mem::forget(ns);
        return;
    }
    let runner = Runner { netns: Some(ns.0.clone()) };

    // 1. Full sync at 10,000 Services.
    let p = params("rkt-bench-full");
    let mut proxier = Proxier::new(p.clone(), runner.clone(), Duration::from_secs(3600));
    let m = proxier.model_mut();
    let affinity = std::env::var("RKUBE_BENCH_AFFINITY").is_ok_and(|v| v == "1");
    for i in 0..10_000 {
        let mut info = svc(i);
        if affinity {
            info.affinity_timeout = Some(10800);
        }
        m.set_service(key(i), info);
        m.set_slice(
            "bench".into(),
            format!("svc-{i}-1"),
            slice(i, (0..EPS_FULL).map(|j| ep(i * EPS_FULL + j)).collect()),
        );
    }
    let model = m.clone();
    for round in 0..3 {
        let t0 = Instant::now();
        let next: std::collections::BTreeMap<_, _> =
            model.service_keys().into_iter().map(|k| (k.clone(), rules::service_rules(&model, &p, &k))).collect();
        let (text, _) = rules::sync_text(&p, SyncKind::Recreate, &Default::default(), &next);
        let gen = t0.elapsed();
        let t1 = Instant::now();
        runner.nft_apply(&text).expect("apply the full ruleset");
        let apply = t1.elapsed();
        println!(
            "full sync 10000 services x {EPS_FULL} endpoints{} (round {round}): generate {:.1} ms, nft -f {:.1} ms, total {:.1} ms, {} KiB, {} lines",
            if affinity { " with ClientIP affinity" } else { "" },
            gen.as_secs_f64() * 1e3,
            apply.as_secs_f64() * 1e3,
            (gen + apply).as_secs_f64() * 1e3,
            text.len() / 1024,
            text.lines().count()
        );
    }
    // Through the Proxier (recreate, then a periodic in-place resync).
    let s = proxier.sync().expect("sync");
    println!("Proxier recreate 10000 services: {:.1} ms", s.duration.as_secs_f64() * 1e3);
    runner.delete_table(&p.table).unwrap();
    drop(proxier);

    // 2. Change → programmed latency, 1,000 Services × 10 endpoints.
    let p = params("rkt-bench-lat");
    let mut proxier = Proxier::new(p.clone(), runner.clone(), Duration::from_secs(30));
    let mut eps: Vec<Vec<SliceEndpoint>> = Vec::new();
    for i in 0..1000 {
        let list: Vec<_> = (0..10).map(|j| ep(i * 10 + j)).collect();
        proxier.model_mut().set_service(key(i), svc(i));
        proxier.model_mut().set_slice("bench".into(), format!("svc-{i}-1"), slice(i, list.clone()));
        eps.push(list);
    }
    let s = proxier.sync().expect("initial sync");
    println!("initial sync 1000 services x 10 endpoints: {:.1} ms", s.duration.as_secs_f64() * 1e3);
    let secs: u64 = std::env::var("RKUBE_BENCH_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(30);
    let (tx, rx) = mpsc::channel::<(Instant, usize, SliceInfo)>();
    let producer = std::thread::spawn(move || {
        let mut seed: u64 = 0x9e3779b97f4a7c15;
        let start = Instant::now();
        for (n, next_ip) in (0..(secs * 10)).zip(1_000_000usize..) {
            let due = start + Duration::from_millis(100 * n);
            if let Some(d) = due.checked_duration_since(Instant::now()) {
                std::thread::sleep(d);
            }
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let i = (seed % 1000) as usize;
            let j = ((seed >> 20) % 10) as usize;
            eps[i][j] = ep(next_ip);
            if tx.send((Instant::now(), i, slice(i, eps[i].clone()))).is_err() {
                return;
            }
        }
    });
    let mut lat = Vec::new();
    let mut syncs = 0;
    let mut sync_times = Vec::new();
    while let Ok(first) = rx.recv() {
        let mut batch = vec![first];
        while let Ok(more) = rx.try_recv() {
            batch.push(more);
        }
        for (_, i, s) in &batch {
            proxier.model_mut().set_slice("bench".into(), format!("svc-{i}-1"), s.clone());
        }
        let s = proxier.sync().expect("partial sync");
        let done = Instant::now();
        syncs += 1;
        sync_times.push(s.duration);
        for (t, _, _) in batch {
            lat.push(done - t);
        }
    }
    producer.join().unwrap();
    let n = lat.len();
    println!(
        "change->programmed, 1000 services x 10 endpoints, 10 changes/s, {n} changes in {syncs} syncs: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms; partial sync p50 {:.1} ms",
        pct(&mut lat, 0.50).as_secs_f64() * 1e3,
        pct(&mut lat, 0.99).as_secs_f64() * 1e3,
        pct(&mut lat, 1.0).as_secs_f64() * 1e3,
        pct(&mut sync_times, 0.5).as_secs_f64() * 1e3,
    );
    runner.delete_table(&p.table).unwrap();
}
