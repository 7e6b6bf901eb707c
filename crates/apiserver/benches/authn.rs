//! Authentication benchmark (issue 4): what verifying a credential costs.
//!
//! - service-account token (ES256 JWT) verifications per second, without
//!   the cache (signature and claims every time: what a new token costs)
//!   and through the 10 s verified-token cache (what a client re-using its
//!   token costs; upstream's threshold is 5,000 QPS, the issue's target
//!   50,000/s);
//! - x509 client-certificate chain verification against the cluster CA,
//!   uncached (a fresh verifier per round) and cached.
//!
//! The objects a bound token names are looked up on every request as
//! well; that part is a watch-cache read and is not measured here.
//!
//! Run with `cargo bench -p rkube-apiserver --bench authn`. Prints a
//! markdown table: verifications per second and microseconds each (mean of
//! the calls after a warm-up).

use std::time::{Duration, Instant};

use rkube_apiserver::authn::cache::TtlCache;
use rkube_apiserver::authn::{jwt, x509::X509Authenticator};
use rkube_apiserver::serviceaccount::claims::{ObjRef, TokenClaims};
use rkube_apiserver::serviceaccount::TokenIssuer;
use rustls::pki_types::CertificateDer;

const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";

fn measure(name: &str, calls: u32, mut f: impl FnMut()) {
    for _ in 0..calls / 10 {
        f();
    }
    let start = Instant::now();
    for _ in 0..calls {
        f();
    }
    let each = start.elapsed() / calls;
    let per_sec = Duration::from_secs(1).as_nanos() as f64 / each.as_nanos().max(1) as f64;
    println!("| {name} | {per_sec:.0} | {:.2} |", each.as_nanos() as f64 / 1000.0);
}

fn token(issuer: &TokenIssuer) -> String {
    let now = jiff::Timestamp::now().as_second();
    let claims = TokenClaims {
        issuer: ISSUER.into(),
        audiences: vec![ISSUER.into()],
        namespace: "default".into(),
        service_account: ObjRef { name: "bench".into(), uid: "5c3e0a2e-0000-4000-8000-000000000001".into() },
        issued_at: now,
        expiry: now + 3600,
        ..TokenClaims::default()
    };
    issuer.sign(&claims.to_json()).expect("signing a token")
}

fn der(pem: &str) -> CertificateDer<'static> {
    let (_, pem) = x509_parser::pem::parse_x509_pem(pem.as_bytes()).expect("a PEM certificate");
    CertificateDer::from(pem.contents)
}

fn main() {
    println!("| credential | verifications/s | µs each |");
    println!("|---|---:|---:|");

    let issuer = TokenIssuer::ephemeral(ISSUER);
    let jwt = token(&issuer);
    measure("service-account token, uncached (ES256 + claims)", 20_000, || {
        let cache = TtlCache::default();
        assert!(jwt::verify(&issuer, &cache, &jwt).expect("verifies").is_some());
    });
    let cache = TtlCache::default();
    measure("service-account token, cached", 1_000_000, || {
        assert!(jwt::verify(&issuer, &cache, &jwt).expect("verifies").is_some());
    });

    let dir = tempfile::tempdir().expect("a temporary directory");
    let names = rkube_pki::ServingNames {
        advertise_address: "127.0.0.1".parse().unwrap(),
        host_addresses: vec![],
        kubernetes_service_ip: "10.43.0.1".parse().unwrap(),
        cluster_domain: "cluster.local".into(),
        extra: vec![],
    };
    let pki = rkube_pki::ClusterPki::ensure(&rkube_pki::PkiFiles::for_data_dir(dir.path()), &names).expect("a PKI");
    let chain = vec![der(&pki.admin.cert_pem)];
    measure("client certificate, uncached (new verifier each call)", 5_000, || {
        let x509 = X509Authenticator::new(&pki.ca.cert_pem).expect("the CA loads");
        assert!(x509.authenticate(&chain).expect("verifies").is_some());
    });
    let x509 = X509Authenticator::new(&pki.ca.cert_pem).expect("the CA loads");
    measure("client certificate, cached", 1_000_000, || {
        assert!(x509.authenticate(&chain).expect("verifies").is_some());
    });
}
