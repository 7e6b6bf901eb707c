//! `rkube token create`: a bootstrap token for joining a node, printed as
//! a join token that also pins the cluster CA.
//!
//! The join token is `K10<sha256 of the CA certificate's DER, hex>::<id>.<secret>`
//! (k3s's layout). The bootstrap token part is stored as the Secret
//! `kube-system/bootstrap-token-<id>` with kubeadm's fields; the token
//! cleaner deletes it when `--ttl` has passed, and the bootstrap signer
//! signs `kube-public/cluster-info` with it so that the joining side can
//! verify what it downloads.
//!
//! With `--control-plane` the token's Secret also names the group
//! `system:bootstrappers:rkube:control-plane` in `auth-extra-groups`, which
//! may read the cluster CA and service-account keys at
//! `GET /rkube/v1/bootstrap/control-plane` (ClusterRole
//! `rkube:control-plane-join`), so that `rkube server --server URL --token
//! TOKEN` can join as another control-plane server (kubeadm's `join
//! --control-plane`, k3s's server token).

use std::path::PathBuf;

use anyhow::{anyhow, Context};
use rkube_controllers::bootstraptoken::{self, JoinToken};

/// Creates the token through the API with the kubeconfig at `kubeconfig`
/// (the admin kubeconfig by default) and returns the join token line;
/// `control_plane`: a control-plane join token (described as such unless
/// `description` is given).
pub async fn create(
    kubeconfig: PathBuf,
    ttl: std::time::Duration,
    description: Option<String>,
    control_plane: bool,
) -> anyhow::Result<String> {
    // Read the file here: kube's own read error repeats its cause.
    let text = std::fs::read_to_string(&kubeconfig).with_context(|| {
        format!(
            "cannot read the kubeconfig {} (run this on a server, or pass --kubeconfig or --data-dir)",
            kubeconfig.display()
        )
    })?;
    let kc = kube::config::Kubeconfig::from_yaml(&text)
        .with_context(|| format!("cannot parse the kubeconfig {}", kubeconfig.display()))?;
    let config = kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
        .await
        .with_context(|| format!("cannot use the kubeconfig {}", kubeconfig.display()))?;
    let ca_der = config
        .root_cert
        .as_ref()
        .and_then(|certs| certs.first().cloned())
        .ok_or_else(|| anyhow!("{} has no certificate-authority-data to pin", kubeconfig.display()))?;
    let client = kube::Client::try_from(config).context("cannot build the API client")?;
    let ttl = (!ttl.is_zero()).then_some(ttl);
    let (groups, description) = match control_plane {
        true => (
            vec![bootstraptoken::CONTROL_PLANE_GROUP],
            Some(description.unwrap_or_else(|| "rkube control-plane join token (joins servers and agents)".into())),
        ),
        false => (Vec::new(), description),
    };
    let token = bootstraptoken::create_with_groups(&client, ttl, description.as_deref(), &groups)
        .await
        .map_err(|e| anyhow!("cannot create the bootstrap token: {e}"))?;
    let join = JoinToken { ca_hash: bootstraptoken::ca_der_hash(&ca_der), token };
    Ok(join.to_string())
}
