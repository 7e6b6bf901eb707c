//! `rkube server --server URL --token TOKEN`: a server joining an existing
//! cluster as another control-plane member on the same etcd datastore
//! (kubeadm's `join --control-plane`, k3s's `server --server --token`).
//!
//! Before the PKI is set up: the cluster CA is discovered and pinned
//! exactly as an agent does (`kube-public/cluster-info` signed with the
//! bootstrap token, the CA checked against the token's hash:
//! [`rkube_controllers::join::discover_retrying`]); then, with the
//! bootstrap token, `GET /rkube/v1/bootstrap/control-plane`
//! ([`rkube_apiserver::controlplane`]) returns the CA key and the
//! service-account key pair, which only a control-plane join token
//! (`rkube token create --control-plane`) may read, and the settings every
//! server must share. A setting that differs from this server's flags stops
//! the start naming the flag and both values. The four files are written to
//! `<data-dir>/server/tls` (keys mode 0600), after which the server starts
//! as any other and issues its own serving and client certificates from
//! the shared CA.
//!
//! At a restart with those files present and the CA the token pins, the
//! first server is not needed. A data dir holding another CA is refused.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use anyhow::anyhow;
use rkube_apiserver::controlplane::{ControlPlaneBundle, FILES};
use rkube_controllers::bootstraptoken::{self, JoinToken};
use rkube_controllers::join::{self, JoinError};
use rkube_pki::{ClusterPki, PkiFiles};
use rkube_store::DatastoreEndpoint;

use crate::cli::ServerArgs;

const COMPONENT: &str = "rkube";
/// How long a joining server keeps trying a server it cannot reach.
const UNREACHABLE_RETRY: Duration = Duration::from_secs(30);
/// How long it waits for `cluster-info` to be signed with its token.
const UNSIGNED_RETRY: Duration = Duration::from_secs(10);
const NEW_TOKEN: &str = "create a control-plane join token with `rkube token create --control-plane` on a server \
                         of the cluster and pass it with --token (or RKUBE_TOKEN)";

/// The settings every server of a cluster must share, by flag name, with
/// this server's values (the effective ones: `--cluster-dns` defaults
/// from `--service-cidr`).
pub fn cluster_settings(args: &ServerArgs) -> BTreeMap<String, String> {
    let dns = args.cluster_dns.unwrap_or_else(|| crate::cli::default_cluster_dns(&args.service_cidr));
    [
        ("--cluster-cidr", args.cluster_cidr.to_string()),
        ("--service-cidr", args.service_cidr.to_string()),
        ("--cluster-dns", dns.to_string()),
        ("--cluster-domain", args.cluster_domain.clone()),
        ("--service-account-issuer", args.service_account_issuer.clone()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// What this server serves to joining servers: the CA and service-account
/// keys of `pki` (the [`FILES`]) and [`cluster_settings`].
pub fn bundle(args: &ServerArgs, pki: &ClusterPki) -> ControlPlaneBundle {
    let files = [
        ("ca.crt", &pki.ca.cert_pem),
        ("ca.key", &pki.ca.key_pem),
        ("sa.key", &pki.service_account_key_pem),
        ("sa.pub", &pki.service_account_public_key_pem),
    ];
    let files = files.into_iter().map(|(name, text)| (name.to_string(), text.clone())).collect();
    ControlPlaneBundle::new(files, cluster_settings(args))
}

/// The settings of `ours` that differ from `theirs`, as messages naming the
/// flag and both values (settings only one side knows are skipped).
pub fn mismatches(ours: &BTreeMap<String, String>, theirs: &BTreeMap<String, String>, url: &str) -> Vec<String> {
    theirs
        .iter()
        .filter_map(|(flag, value)| {
            let mine = ours.get(flag)?;
            (mine != value).then(|| {
                format!("{flag} is {mine} here but {value} on the server {url}: start this server with {flag} {value}")
            })
        })
        .collect()
}

/// Validates `--server`/`--token` and the datastore, and puts the shared
/// CA and service-account keys into `files.dir` unless they are there
/// already for the CA the token pins. Errors say what to do.
pub async fn prepare(args: &ServerArgs, url: &str, token: &str, files: &PkiFiles) -> anyhow::Result<()> {
    match &args.datastore_endpoint {
        Some(DatastoreEndpoint::Etcd(_)) => {}
        _ => {
            return Err(anyhow!(
                "--server joins this server to an existing cluster, which only works on a shared datastore: \
                 the embedded SQLite store (the default, or a sqlite:// --datastore-endpoint) belongs to one \
                 server and cannot be shared; start every server with the same --datastore-endpoint \
                 etcd://host:port"
            ))
        }
    }
    let url = crate::agent::server_url(url)?;
    let join = JoinToken::parse(token).map_err(|e| anyhow!("invalid --token: {e}; {NEW_TOKEN}"))?;

    let present = FILES.iter().all(|f| files.dir.join(f).exists());
    if let Ok(pem) = std::fs::read_to_string(&files.ca_cert) {
        let stored = bootstraptoken::ca_pem_hash(&pem).unwrap_or_else(|| "<not a certificate>".into());
        if stored != join.ca_hash {
            return Err(anyhow!(
                "{} holds another cluster's CA (hash {stored}; the token pins {}): this data dir belongs to \
                 another cluster; choose another --data-dir, or remove {} to join this cluster",
                files.ca_cert.display(),
                join.ca_hash,
                files.dir.display()
            ));
        }
        if present {
            tracing::info!(component = COMPONENT, dir = %files.dir.display(),
                "using the stored cluster CA and service-account keys the join token pins");
            return Ok(());
        }
    }

    tracing::info!(component = COMPONENT, server = %url, "joining the cluster as another control-plane server");
    let info =
        join::discover_retrying(&url, &join, UNREACHABLE_RETRY, UNSIGNED_RETRY).await.map_err(|e| explain(&url, e))?;
    tracing::info!(component = COMPONENT, "discovered the cluster CA; its hash matches the join token");
    let client = join::bootstrap_client(&url, &info, &join).map_err(|e| anyhow!(e))?;
    let text =
        join::get_non_resource(&client, rkube_apiserver::controlplane::PATH).await.map_err(|e| explain(&url, e))?;
    let bundle: ControlPlaneBundle = serde_json::from_str(&text)
        .map_err(|e| anyhow!("the server {url} sent an unusable control-plane bundle ({e}); is it an rkube server?"))?;
    check(&bundle, &join, &cluster_settings(args), &url)?;

    rkube_pki::ensure_private_dir(&files.dir).map_err(|e| anyhow!("cannot prepare {}: {e}", files.dir.display()))?;
    for name in FILES {
        write_file(&files.dir, name, &bundle.files[name])?;
    }
    tracing::info!(component = COMPONENT, dir = %files.dir.display(),
        "stored the cluster CA and service-account keys of the cluster");
    Ok(())
}

/// The bundle has every file, its CA is the pinned one, and its settings
/// agree with ours.
fn check(
    bundle: &ControlPlaneBundle,
    join: &JoinToken,
    ours: &BTreeMap<String, String>,
    url: &str,
) -> anyhow::Result<()> {
    if let Some(missing) = FILES.iter().find(|f| !bundle.files.contains_key(**f)) {
        return Err(anyhow!("the server {url} sent a control-plane bundle without {missing}"));
    }
    if bootstraptoken::ca_pem_hash(&bundle.files["ca.crt"]).as_deref() != Some(join.ca_hash.as_str()) {
        return Err(anyhow!("the server {url} sent a CA that is not the one the join token pins; {NEW_TOKEN}"));
    }
    let differences = mismatches(ours, &bundle.settings, url);
    if !differences.is_empty() {
        return Err(anyhow!("this server's settings differ from the cluster's: {}", differences.join("; ")));
    }
    Ok(())
}

fn write_file(dir: &Path, name: &str, text: &str) -> anyhow::Result<()> {
    let path = dir.join(name);
    rkube_pki::write_private_file(&path, text.as_bytes())
        .map_err(|e| anyhow!("cannot write {}: {e}", path.display()))?;
    Ok(())
}

/// What to tell the user about a failed join step: a node token refused
/// the keys, a server without them, else as an agent's join.
fn explain(url: &str, e: JoinError) -> anyhow::Error {
    let code = match &e {
        JoinError::Api { source, .. } => rkube_client::errors::api_code(source),
        _ => None,
    };
    match (code, e) {
        (Some(403), JoinError::Api { context, source }) => anyhow!(
            "the join token may not fetch the cluster's keys ({context}: {}): it is a node join token, which \
             joins agents only; {NEW_TOKEN}",
            rkube_client::errors::message(&source)
        ),
        (Some(404), JoinError::Api { context, source }) => anyhow!(
            "the server {url} does not serve the control-plane bootstrap bundle ({context}: {}); join through \
             an rkube server started without --server or one that has joined already",
            rkube_client::errors::message(&source)
        ),
        (_, e) => crate::agent::explain_join_error(url, e, NEW_TOKEN),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn args(extra: &[&str]) -> ServerArgs {
        let mut argv = vec!["rkube", "server"];
        argv.extend_from_slice(extra);
        match crate::cli::Cli::try_parse_from(argv).unwrap().command {
            crate::cli::Command::Server(a) => a,
            _ => unreachable!(),
        }
    }

    #[test]
    fn settings_name_the_flags_and_mismatches_say_both_values() {
        let ours = cluster_settings(&args(&[]));
        assert_eq!(ours["--service-cidr"], "10.43.0.0/16");
        assert_eq!(ours["--cluster-dns"], "10.43.0.10");
        assert_eq!(ours["--cluster-domain"], "cluster.local");
        let theirs = cluster_settings(&args(&["--service-cidr", "10.96.0.0/12"]));
        let diffs = mismatches(&ours, &theirs, "https://10.0.0.1:6443");
        assert_eq!(diffs.len(), 2, "{diffs:?}"); // the service CIDR and the DNS address derived from it
        assert!(diffs
            .iter()
            .any(|d| d.starts_with("--service-cidr is 10.43.0.0/16 here but 10.96.0.0/12 on the server")));
        assert!(mismatches(&ours, &ours, "u").is_empty());
    }

    #[test]
    fn server_and_token_go_together() {
        let parse = |argv: &[&str]| crate::cli::Cli::try_parse_from(argv).map(|_| ());
        assert!(parse(&["rkube", "server", "--server", "https://10.0.0.1:6443"]).is_err());
        assert!(parse(&["rkube", "server", "--token", "K10x::abcdef.0123456789abcdef"]).is_err());
        assert!(parse(&["rkube", "server", "--server", "https://10.0.0.1:6443", "--token", "t"]).is_ok());
    }

    /// A data dir with a CA: its pin, and a join token for it.
    fn data_dir_with_ca() -> (tempfile::TempDir, PkiFiles, String) {
        let dir = tempfile::tempdir().unwrap();
        let files = PkiFiles::for_data_dir(dir.path());
        let names = rkube_pki::ServingNames {
            advertise_address: "10.0.0.1".parse().unwrap(),
            host_addresses: vec![],
            kubernetes_service_ip: "10.43.0.1".parse().unwrap(),
            cluster_domain: "cluster.local".into(),
            extra: vec![],
        };
        rkube_pki::ClusterPki::ensure(&files, &names).unwrap();
        let hash = bootstraptoken::ca_pem_hash(&std::fs::read_to_string(&files.ca_cert).unwrap()).unwrap();
        (dir, files, hash)
    }

    const ETCD: [&str; 2] = ["--datastore-endpoint", "etcd://127.0.0.1:1"];

    #[tokio::test]
    async fn a_restart_with_the_pinned_ca_needs_no_server_and_another_ca_is_refused() {
        let (_dir, files, hash) = data_dir_with_ca();
        // Nothing listens at port 1: the stored files must suffice.
        let token = format!("K10{hash}::abcdef.0123456789abcdef");
        prepare(&args(&ETCD), "https://127.0.0.1:1", &token, &files).await.unwrap();
        let other = format!("K10{}::abcdef.0123456789abcdef", "0".repeat(64));
        let e = prepare(&args(&ETCD), "https://127.0.0.1:1", &other, &files).await.unwrap_err().to_string();
        assert!(e.contains("another cluster's CA") && e.contains("--data-dir"), "{e}");
    }

    #[tokio::test]
    async fn sqlite_datastores_cannot_join() {
        let dir = tempfile::tempdir().unwrap();
        let files = PkiFiles::for_data_dir(dir.path());
        let token = format!("K10{}::abcdef.0123456789abcdef", "0".repeat(64));
        for extra in [&[][..], &["--datastore-endpoint", "sqlite:///tmp/x/state.db"][..]] {
            let e = prepare(&args(extra), "https://127.0.0.1:6443", &token, &files).await.unwrap_err().to_string();
            assert!(e.contains("cannot be shared") && e.contains("etcd://"), "{e}");
        }
    }
}
