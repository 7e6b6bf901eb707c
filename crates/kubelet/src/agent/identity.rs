//! The agent's API identity: a client certificate for
//! `system:node:<node-name>` in the group `system:nodes` (what the Node
//! authorizer and NodeRestriction recognise as that node's kubelet), issued
//! by the cluster CA when the in-server agent starts and kept under
//! `<data-dir>/agent/pki` as upstream's `kubelet-client-current.pem`.

use std::path::{Path, PathBuf};

use rkube_pki::CertAndKey;

/// The group every kubelet's identity is in.
pub const NODES_GROUP: &str = "system:nodes";

/// The user name of the kubelet of `node`.
pub fn user_name(node: &str) -> String {
    format!("system:node:{node}")
}

/// `<data-dir>/agent/pki/kubelet-client-current.pem`: certificate then key.
pub fn credential_path(data_dir: &Path) -> PathBuf {
    data_dir.join("agent").join("pki").join("kubelet-client-current.pem")
}

/// Issues a fresh client certificate for `node` from the CA `ca` and
/// writes it (certificate, then key; mode 0600) to [`credential_path`].
/// Errors: the CA cannot sign, or the file cannot be written.
pub fn issue(ca: &CertAndKey, node: &str, data_dir: &Path) -> Result<CertAndKey, String> {
    let cert = rkube_pki::issue_client_certificate(ca, &user_name(node), Some(NODES_GROUP))
        .map_err(|e| format!("cannot issue the kubelet client certificate for {}: {e}", user_name(node)))?;
    let path = credential_path(data_dir);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    let pem = format!("{}{}", cert.cert_pem, cert.key_pem);
    rkube_pki::write_private_file(&path, pem.as_bytes())
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(cert)
}
