use std::os::unix::fs::PermissionsExt;

use super::*;

fn names(extra: &[&str]) -> ServingNames {
    ServingNames {
        advertise_address: "192.0.2.10".parse().unwrap(),
        host_addresses: vec!["192.0.2.10".parse().unwrap(), "198.51.100.4".parse().unwrap()],
        kubernetes_service_ip: "10.43.0.1".parse().unwrap(),
        cluster_domain: "cluster.local".into(),
        extra: extra.iter().map(|s| San::parse(s).unwrap()).collect(),
    }
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

fn all_files(f: &PkiFiles) -> Vec<&PathBuf> {
    vec![
        &f.ca_cert,
        &f.ca_key,
        &f.serving_cert,
        &f.serving_key,
        &f.admin_cert,
        &f.admin_key,
        &f.kubelet_client_cert,
        &f.kubelet_client_key,
        &f.service_account_key,
        &f.service_account_public_key,
    ]
}

fn snapshot(f: &PkiFiles) -> Vec<Vec<u8>> {
    all_files(f).into_iter().map(|p| std::fs::read(p).unwrap()).collect()
}

fn with_cert<T>(pem: &str, f: impl FnOnce(&X509Certificate<'_>) -> T) -> T {
    let der = pem_to_der(pem).unwrap();
    let cert = parse_der(&der).unwrap();
    f(&cert)
}

fn subject_of(pem: &str) -> String {
    with_cert(pem, |c| c.subject().to_string())
}

fn not_after_of(pem: &str) -> i64 {
    with_cert(pem, |c| c.validity().not_after.timestamp())
}

fn tls_dir() -> (tempfile::TempDir, PkiFiles) {
    let tmp = tempfile::tempdir().unwrap();
    let files = PkiFiles::for_data_dir(tmp.path());
    (tmp, files)
}

#[test]
fn first_start_creates_ca_leaves_and_service_account_keys_with_private_modes() {
    let (_tmp, files) = tls_dir();
    let pki = ClusterPki::ensure(&files, &names(&[])).unwrap();

    assert!(files.dir.ends_with("server/tls"));
    assert_eq!(mode(&files.dir), 0o700);
    for key in
        [&files.ca_key, &files.serving_key, &files.admin_key, &files.kubelet_client_key, &files.service_account_key]
    {
        assert_eq!(mode(key), 0o600, "{}", key.display());
    }
    for cert in [
        &files.ca_cert,
        &files.serving_cert,
        &files.admin_cert,
        &files.kubelet_client_cert,
        &files.service_account_public_key,
    ] {
        assert_eq!(mode(cert), 0o644, "{}", cert.display());
    }
    for (item, action) in &pki.actions {
        assert_eq!(action, &Action::Created, "{item}");
    }
    assert_eq!(pki.actions.len(), 5);

    assert!(subject_of(&pki.ca.cert_pem).starts_with("CN=rkube-ca@"));
    with_cert(&pki.ca.cert_pem, |c| {
        assert!(c.is_ca());
        let years = (c.validity().not_after.timestamp() - c.validity().not_before.timestamp()) / (365 * 86400);
        assert_eq!(years, 10);
    });
    assert_eq!(subject_of(&pki.serving.cert_pem), "CN=kube-apiserver");
    assert_eq!(subject_of(&pki.admin.cert_pem), "O=system:masters, CN=system:admin");
    assert_eq!(subject_of(&pki.kubelet_client.cert_pem), "O=system:masters, CN=kube-apiserver-kubelet-client");
    with_cert(&pki.admin.cert_pem, |c| {
        let eku = c.extended_key_usage().unwrap().unwrap().value;
        assert!(eku.client_auth && !eku.server_auth);
        let days = (c.validity().not_after.timestamp() - OffsetDateTime::now_utc().unix_timestamp()) / 86400;
        assert!((364..=365).contains(&days), "leaf lasts a year, got {days} days");
    });
    with_cert(&pki.serving.cert_pem, |c| {
        assert!(c.extended_key_usage().unwrap().unwrap().value.server_auth);
        assert_eq!(cert_sans(c).unwrap(), names(&[]).sans());
    });
    assert!(pki.service_account_key_pem.starts_with("-----BEGIN PRIVATE KEY-----"));
    assert!(pki.service_account_public_key_pem.starts_with("-----BEGIN PUBLIC KEY-----"));
}

#[test]
fn second_start_reuses_every_file_byte_for_byte() {
    let (_tmp, files) = tls_dir();
    ClusterPki::ensure(&files, &names(&["api.example.com"])).unwrap();
    let before = snapshot(&files);
    let pki = ClusterPki::ensure(&files, &names(&["api.example.com"])).unwrap();
    assert_eq!(snapshot(&files), before);
    for (item, action) in &pki.actions {
        assert_eq!(action, &Action::Reused, "{item}");
    }
}

#[test]
fn changed_sans_reissue_only_the_serving_certificate() {
    let (_tmp, files) = tls_dir();
    ClusterPki::ensure(&files, &names(&[])).unwrap();
    let before = snapshot(&files);

    let pki = ClusterPki::ensure(&files, &names(&["api.example.com", "203.0.113.9"])).unwrap();
    match &pki.actions["serving"] {
        Action::Reissued(reason) => {
            assert!(reason.contains("api.example.com") && reason.contains("203.0.113.9"), "{reason}")
        }
        other => panic!("serving certificate should be reissued, got {other:?}"),
    }
    for item in ["ca", "admin", "kubelet-client", "service-account"] {
        assert_eq!(pki.actions[item], Action::Reused, "{item}");
    }
    let after = snapshot(&files);
    let changed: Vec<_> = all_files(&files)
        .into_iter()
        .zip(before.iter().zip(&after))
        .filter(|(_, (b, a))| b != a)
        .map(|(p, _)| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(changed, ["apiserver.crt", "apiserver.key"]);
    with_cert(&pki.serving.cert_pem, |c| {
        let sans = cert_sans(c).unwrap();
        assert!(sans.contains(&San::Dns("api.example.com".into())));
        assert!(sans.contains(&San::Ip("203.0.113.9".parse().unwrap())));
    });
}

#[test]
fn leaves_within_ninety_days_of_expiry_are_reissued_but_never_the_ca() {
    let (_tmp, files) = tls_dir();
    let t0 = OffsetDateTime::now_utc();
    let first = ClusterPki::ensure_at(&files, &names(&[]), t0).unwrap();

    // 200 days later: 165 days left, nothing to do.
    let later = ClusterPki::ensure_at(&files, &names(&[]), t0 + Duration::days(200)).unwrap();
    assert!(later.actions.values().all(|a| *a == Action::Reused), "{:?}", later.actions);

    // 300 days later: 65 days left on every leaf.
    let t1 = t0 + Duration::days(300);
    let renewed = ClusterPki::ensure_at(&files, &names(&[]), t1).unwrap();
    for item in ["serving", "admin", "kubelet-client"] {
        match &renewed.actions[item] {
            Action::Reissued(reason) => assert!(reason.contains("within 90 days"), "{item}: {reason}"),
            other => panic!("{item} should be reissued, got {other:?}"),
        }
    }
    assert_eq!(renewed.actions["ca"], Action::Reused);
    assert_eq!(renewed.actions["service-account"], Action::Reused);
    assert_eq!(renewed.ca.cert_pem, first.ca.cert_pem);
    assert_eq!(not_after_of(&renewed.admin.cert_pem), (t1 + LEAF_VALIDITY).unix_timestamp());
    assert_ne!(renewed.admin.key_pem, first.admin.key_pem, "a reissued leaf gets a fresh key");

    // Long past expiry (but the CA is still valid): reissued as expired.
    let t2 = t1 + Duration::days(400);
    let expired = ClusterPki::ensure_at(&files, &names(&[]), t2).unwrap();
    assert!(matches!(&expired.actions["admin"], Action::Reissued(r) if r.contains("expired")));
}

#[test]
fn a_leaf_from_another_ca_is_reissued() {
    let (_tmp, files) = tls_dir();
    let (_other_tmp, other) = tls_dir();
    ClusterPki::ensure(&files, &names(&[])).unwrap();
    ClusterPki::ensure(&other, &names(&[])).unwrap();
    std::fs::copy(&other.admin_cert, &files.admin_cert).unwrap();
    std::fs::copy(&other.admin_key, &files.admin_key).unwrap();

    let pki = ClusterPki::ensure(&files, &names(&[])).unwrap();
    assert_eq!(pki.actions["admin"], Action::Reissued("it was not issued by the current cluster CA".into()));
    assert_ne!(std::fs::read(&files.admin_cert).unwrap(), std::fs::read(&other.admin_cert).unwrap());
}

#[test]
fn a_leaf_whose_key_is_missing_is_reissued() {
    let (_tmp, files) = tls_dir();
    ClusterPki::ensure(&files, &names(&[])).unwrap();
    std::fs::remove_file(&files.kubelet_client_key).unwrap();
    let pki = ClusterPki::ensure(&files, &names(&[])).unwrap();
    assert!(matches!(&pki.actions["kubelet-client"], Action::Reissued(r) if r.contains("private key")));
    assert_eq!(mode(&files.kubelet_client_key), 0o600);
}

#[test]
fn a_ca_certificate_without_its_key_is_an_error_not_a_new_ca() {
    let (_tmp, files) = tls_dir();
    ClusterPki::ensure(&files, &names(&[])).unwrap();
    let ca_before = std::fs::read(&files.ca_cert).unwrap();
    std::fs::remove_file(&files.ca_key).unwrap();
    let err = ClusterPki::ensure(&files, &names(&[])).err().expect("must refuse");
    let msg = err.to_string();
    assert!(msg.contains("ca.key") && msg.contains("backup"), "{msg}");
    assert_eq!(std::fs::read(&files.ca_cert).unwrap(), ca_before);
    assert!(!files.ca_key.exists());
}

#[test]
fn a_ca_key_that_does_not_match_is_an_error() {
    let (_tmp, files) = tls_dir();
    let (_other_tmp, other) = tls_dir();
    ClusterPki::ensure(&files, &names(&[])).unwrap();
    ClusterPki::ensure(&other, &names(&[])).unwrap();
    std::fs::copy(&other.ca_key, &files.ca_key).unwrap();
    let msg = ClusterPki::ensure(&files, &names(&[])).err().expect("must refuse").to_string();
    assert!(msg.contains("does not belong to"), "{msg}");
}

#[test]
fn service_account_public_key_is_restored_from_the_private_key() {
    let (_tmp, files) = tls_dir();
    let first = ClusterPki::ensure(&files, &names(&[])).unwrap();
    std::fs::remove_file(&files.service_account_public_key).unwrap();
    let pki = ClusterPki::ensure(&files, &names(&[])).unwrap();
    assert!(matches!(pki.actions["service-account"], Action::Reissued(_)));
    assert_eq!(pki.service_account_key_pem, first.service_account_key_pem);
    assert_eq!(
        std::fs::read_to_string(&files.service_account_public_key).unwrap(),
        first.service_account_public_key_pem
    );

    std::fs::remove_file(&files.service_account_key).unwrap();
    let msg = ClusterPki::ensure(&files, &names(&[])).err().expect("must refuse").to_string();
    assert!(msg.contains("sa.key"), "{msg}");
}

#[test]
fn private_keys_readable_by_others_are_restricted_again() {
    let (_tmp, files) = tls_dir();
    ClusterPki::ensure(&files, &names(&[])).unwrap();
    std::fs::set_permissions(&files.ca_key, std::fs::Permissions::from_mode(0o644)).unwrap();
    std::fs::set_permissions(&files.dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    ClusterPki::ensure(&files, &names(&[])).unwrap();
    assert_eq!(mode(&files.ca_key), 0o600);
    assert_eq!(mode(&files.dir), 0o700);
}

#[test]
fn ca_cert_hash_is_sha256_of_the_subject_public_key_info() {
    let (_tmp, files) = tls_dir();
    let pki = ClusterPki::ensure(&files, &names(&[])).unwrap();
    let spki = KeyPair::from_pem(&pki.ca.key_pem).unwrap().subject_public_key_info();
    let want: String =
        ring::digest::digest(&ring::digest::SHA256, &spki).as_ref().iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(pki.ca_cert_hash(), format!("sha256:{want}"));
    assert_eq!(pki.ca_cert_hash().len(), "sha256:".len() + 64);
}

#[test]
fn admin_kubeconfig_embeds_ca_and_admin_credentials() {
    use base64::Engine;
    let (tmp, files) = tls_dir();
    let pki = ClusterPki::ensure(&files, &names(&[])).unwrap();
    let yaml = pki.admin_kubeconfig("https://127.0.0.1:6443").to_yaml();
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    assert!(yaml.contains(&format!("certificate-authority-data: {}", b64(&pki.ca.cert_pem))));
    assert!(yaml.contains(&format!("client-certificate-data: {}", b64(&pki.admin.cert_pem))));
    assert!(yaml.contains(&format!("client-key-data: {}", b64(&pki.admin.key_pem))));
    assert!(yaml.contains("server: https://127.0.0.1:6443\n"));

    let path = tmp.path().join("nested/dir/admin.kubeconfig");
    assert!(write_private_file(&path, yaml.as_bytes()).unwrap());
    assert_eq!(mode(&path), 0o600);
    assert!(!write_private_file(&path, yaml.as_bytes()).unwrap(), "unchanged content is not rewritten");
}

#[test]
fn client_certificates_name_the_user_and_groups_and_chain_to_the_ca() {
    let (_tmp, files) = tls_dir();
    let pki = ClusterPki::ensure(&files, &names(&[])).unwrap();
    let before = snapshot(&files);
    let jane = issue_client_certificate(&pki.ca, "jane", Some("dev")).unwrap();
    assert_eq!(subject_of(&jane.cert_pem), "O=dev, CN=jane");
    let bob = issue_client_certificate(&pki.ca, "bob", None).unwrap();
    assert_eq!(subject_of(&bob.cert_pem), "CN=bob");
    with_cert(&jane.cert_pem, |c| {
        let eku = c.extended_key_usage().unwrap().unwrap().value;
        assert!(eku.client_auth && !eku.server_auth);
        let ca_der = pem_to_der(&pki.ca.cert_pem).unwrap();
        let ca = parse_der(&ca_der).unwrap();
        assert!(c.verify_signature(Some(ca.public_key())).is_ok());
    });
    assert!(jane.key_pem.starts_with("-----BEGIN PRIVATE KEY-----"));
    assert_eq!(snapshot(&files), before, "nothing on disk changes");
}
