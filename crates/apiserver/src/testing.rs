//! Helpers shared by the crate's unit tests.

/// A cluster PKI in a temporary directory (kept as long as the returned
/// `TempDir` lives). Its serving certificate is signed by the cluster CA
/// and valid for 127.0.0.1, so tests can also use it for a stand-in
/// kubelet.
pub(crate) fn pki() -> (tempfile::TempDir, rkube_pki::ClusterPki) {
    let dir = tempfile::tempdir().unwrap();
    let names = rkube_pki::ServingNames {
        advertise_address: "127.0.0.1".parse().unwrap(),
        host_addresses: vec![],
        kubernetes_service_ip: "10.43.0.1".parse().unwrap(),
        cluster_domain: "cluster.local".into(),
        extra: vec![],
    };
    let pki = rkube_pki::ClusterPki::ensure(&rkube_pki::PkiFiles::for_data_dir(dir.path()), &names).unwrap();
    (dir, pki)
}
