//! Backups (issue 9, item 7; seeds 002/003 "back up etcd"):
//! `rkube store snapshot save FILE` through the running API server and
//! `rkube store snapshot restore FILE --data-dir DIR` into a stopped
//! server's embedded store; etcd's snapshots are etcd's own format and are
//! checked by starting a real etcd on one.

mod support;

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use support::{run_rkube, TestServer, TestServerOptions};

const CLI_TIMEOUT: Duration = Duration::from_secs(120);

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn rkube(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Output {
    let args: Vec<String> = args.iter().map(|a| a.as_ref().to_string_lossy().into_owned()).collect();
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    run_rkube(&refs, CLI_TIMEOUT)
}

/// A kubeconfig for the user `cn` (no groups) with a fresh client certificate.
fn user_kubeconfig(s: &TestServer, dir: &Path, cn: &str) -> PathBuf {
    let tls = s.tls_dir();
    let read = |f: &str| std::fs::read_to_string(tls.join(f)).unwrap();
    let ca = read("ca.crt");
    let ca_pair = rkube_pki::CertAndKey { cert_pem: ca.clone(), key_pem: read("ca.key") };
    let pair = rkube_pki::issue_client_certificate(&ca_pair, cn, None).unwrap();
    let config = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {{server: 'https://127.0.0.1:{}', certificate-authority-data: {}}}\n\
         users:\n- name: u\n  user: {{client-certificate-data: {}, client-key-data: {}}}\n\
         contexts:\n- name: x\n  context: {{cluster: c, user: u, namespace: default}}\ncurrent-context: x\n",
        s.port(),
        STANDARD.encode(ca),
        STANDARD.encode(&pair.cert_pem),
        STANDARD.encode(&pair.key_pem)
    );
    let path = dir.join(format!("{cn}.kubeconfig"));
    std::fs::write(&path, config).unwrap();
    path
}

fn resource_version(s: &TestServer, args: &[&str]) -> i64 {
    let mut all = args.to_vec();
    all.extend(["-o", "jsonpath={.metadata.resourceVersion}"]);
    s.kubectl_ok(&all).trim().parse().unwrap()
}

fn exists(s: &TestServer, args: &[&str]) -> bool {
    let out = s.kubectl(args);
    if out.status.success() {
        return true;
    }
    assert!(stderr(&out).contains("NotFound"), "kubectl {args:?}: {}", stderr(&out));
    false
}

/// The whole round trip on the embedded store: save through the API (an
/// admin, not a plain user unless RBAC grants the non-resource URL),
/// change the cluster, restore offline (refused while the server runs and
/// for a damaged file), and the restarted server serves exactly the
/// snapshot's objects with resourceVersions that keep going forward.
#[test]
fn a_restored_embedded_store_has_the_snapshots_objects_and_none_made_after() {
    let dir = tempfile::Builder::new().prefix("rkube-snapshot-").tempdir().unwrap();
    let data_dir = dir.path().join("data");
    let options = TestServerOptions { data_dir: Some(data_dir.clone()), ..Default::default() };
    let mut server = TestServer::start_with(options.clone());
    let ns = ["-n", "backup"];
    server.kubectl_ok(&["create", "namespace", "backup"]);
    server.kubectl_ok(&[&ns[..], &["create", "configmap", "kept", "--from-literal=k=before"]].concat());
    server.kubectl_ok(&[&ns[..], &["create", "configmap", "deleted-later", "--from-literal=k=v"]].concat());
    server.kubectl_ok(&[&ns[..], &["create", "deployment", "web", "--image=registry.k8s.io/pause:3.10"]].concat());
    let deployment_rv = resource_version(&server, &[&ns[..], &["get", "deployment", "web"]].concat());

    // Save with the admin kubeconfig (the default under --data-dir).
    let file = dir.path().join("backups").join("cluster.db");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let out = rkube(&[&"store", &"snapshot", &"save", &file, &"--data-dir", &data_dir]);
    assert!(out.status.success(), "save: {}\n{}", stderr(&out), server.logs());
    let said = stdout(&out);
    assert!(said.contains("Saved a snapshot of the embedded (sqlite) store at revision"), "{said}");
    let saved_rev: i64 = said.split("at revision ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
    assert!(saved_rev >= deployment_rv, "the snapshot holds the deployment (rv {deployment_rv}): {said}");
    assert!(said.contains(&format!("bytes) to {}", file.display())), "{said}");
    let leftovers: Vec<_> =
        std::fs::read_dir(file.parent().unwrap()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(leftovers.len(), 1, "only the snapshot, no temporary file: {leftovers:?}");

    // A user without a grant is refused (403), by the CLI and by kubectl.
    let jane = user_kubeconfig(&server, dir.path(), "jane");
    let denied = dir.path().join("jane.db");
    let out = rkube(&[&"store", &"snapshot", &"save", &denied, &"--kubeconfig", &jane]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("refused the snapshot") && err.contains("forbidden"), "{err}");
    assert!(err.contains("needs a cluster admin"), "{err}");
    assert!(!denied.exists(), "nothing is written when the server refuses");
    let out = server.kubectl_with(&jane, &["get", "--raw", "/rkube/v1/store/snapshot"]);
    assert!(!out.status.success() && stderr(&out).contains("Forbidden"), "{}", stderr(&out));
    // A ClusterRole granting the non-resource URL lets her (upstream's nonResourceURLs RBAC).
    server.kubectl_ok(&[
        "create",
        "clusterrole",
        "store-backup",
        "--verb=get",
        "--non-resource-url=/rkube/v1/store/snapshot",
    ]);
    server.kubectl_ok(&["create", "clusterrolebinding", "jane-backup", "--clusterrole=store-backup", "--user=jane"]);
    let granted = dir.path().join("jane-granted.db");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let out = rkube(&[&"store", &"snapshot", &"save", &granted, &"--kubeconfig", &jane]);
        if out.status.success() {
            break;
        }
        assert!(Instant::now() < deadline, "the RBAC grant never took effect: {}", stderr(&out));
        std::thread::sleep(Duration::from_millis(500));
    }

    // Changes after the snapshot.
    server.kubectl_ok(&[&ns[..], &["delete", "configmap", "deleted-later"]].concat());
    server.kubectl_ok(&[&ns[..], &["delete", "deployment", "web"]].concat());
    server.kubectl_ok(&[&ns[..], &["create", "configmap", "made-later", "--from-literal=k=v"]].concat());
    server.kubectl_ok(&[&ns[..], &["patch", "configmap", "kept", "-p", r#"{"data":{"k":"after"}}"#]].concat());
    let last_rv = resource_version(&server, &[&ns[..], &["get", "configmap", "kept"]].concat());

    // Restore is refused while the server holds the store.
    let out = rkube(&[&"store", &"snapshot", &"restore", &file, &"--data-dir", &data_dir]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("refusing to restore") && err.contains("in use by a running rkube server"), "{err}");
    assert!(err.contains("stop that server first"), "{err}");

    let (status, _) = server.stop();
    assert!(status.success(), "{status}\n{}", server.logs());

    // A damaged snapshot is refused and the store is left alone.
    let db = data_dir.join("server").join("db").join("state.db");
    let db_before = std::fs::read(&db).unwrap();
    let mut bytes = std::fs::read(&file).unwrap();
    let len = bytes.len();
    bytes[len / 2..len / 2 + 4096].fill(0x5a);
    let damaged = dir.path().join("damaged.db");
    std::fs::write(&damaged, &bytes).unwrap();
    let out = rkube(&[&"store", &"snapshot", &"restore", &damaged, &"--data-dir", &data_dir]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("is not a usable rkube snapshot"), "{}", stderr(&out));
    let kubeconfig = dir.path().join("not-a-snapshot");
    std::fs::write(&kubeconfig, "apiVersion: v1\nkind: Config\n").unwrap();
    let out = rkube(&[&"store", &"snapshot", &"restore", &kubeconfig, &"--data-dir", &data_dir]);
    assert!(!out.status.success() && stderr(&out).contains("not an SQLite database"), "{}", stderr(&out));
    assert!(std::fs::read(&db).unwrap() == db_before, "refused restores leave the store untouched");

    // The restore.
    let out = rkube(&[&"store", &"snapshot", &"restore", &file, &"--data-dir", &data_dir]);
    assert!(out.status.success(), "restore: {}", stderr(&out));
    let said = stdout(&out);
    assert!(said.contains(&format!("(revision {saved_rev})")), "{said}");
    assert!(said.contains("The replaced store is kept as"), "{said}");
    let kept_aside = std::fs::read_dir(db.parent().unwrap())
        .unwrap()
        .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().starts_with("state.db.before-restore-"))
        .count();
    assert!(kept_aside >= 1, "the replaced store is kept next to the restored one");

    let server = TestServer::start_with(options);
    assert_eq!(
        server.kubectl_ok(&[&ns[..], &["get", "configmap", "kept", "-o", "jsonpath={.data.k}"]].concat()),
        "before"
    );
    assert!(
        exists(&server, &[&ns[..], &["get", "configmap", "deleted-later"]].concat()),
        "deleted after the snapshot: back"
    );
    assert!(exists(&server, &[&ns[..], &["get", "deployment", "web"]].concat()), "deleted after the snapshot: back");
    assert!(
        !exists(&server, &[&ns[..], &["get", "configmap", "made-later"]].concat()),
        "made after the snapshot: gone"
    );
    // resourceVersions keep going forward: nothing a client saw before the
    // restore can name a newer state, and a new write is newer than all of it.
    server.kubectl_ok(&[&ns[..], &["create", "configmap", "after-restore"]].concat());
    let new_rv = resource_version(&server, &[&ns[..], &["get", "configmap", "after-restore"]].concat());
    assert!(new_rv > last_rv, "a write after the restore (rv {new_rv}) is newer than any before it (rv {last_rv})");
}

/// A running etcd on a data dir of our own, killed on drop.
struct Etcd {
    child: Child,
    port: u16,
}

impl Drop for Etcd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// POST `body` (JSON) to etcd's v3 JSON gateway on loopback; the body of the answer.
fn etcd_post(port: u16, path: &str, body: &str) -> Result<String, String> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let mut sock = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).map_err(|e| e.to_string())?;
    sock.set_read_timeout(Some(Duration::from_secs(10))).map_err(|e| e.to_string())?;
    write!(
        sock,
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .map_err(|e| e.to_string())?;
    let mut raw = String::new();
    sock.read_to_string(&mut raw).map_err(|e| e.to_string())?;
    let (head, body) = raw.split_once("\r\n\r\n").ok_or("incomplete answer")?;
    if !head.starts_with("HTTP/1.1 200") {
        return Err(raw);
    }
    Ok(body.to_string())
}

/// etcd: the saved file is etcd's snapshot format (bbolt + SHA-256
/// trailer, checked by the CLI) and a real etcd serves the cluster's keys
/// from it. etcd 3.4's own restore (`etcdctl snapshot restore`) does the
/// same first step — the bbolt file becomes `member/snap/db` — and then
/// rewrites the membership; starting a new one-member etcd on that
/// `member/snap/db` is what this machine can do without etcdctl/etcdutl.
/// `rkube store snapshot restore` refuses etcd snapshots, naming etcd's tool.
#[test]
fn an_etcd_snapshot_saved_through_the_api_is_served_by_a_fresh_etcd() {
    let etcd = support::etcd::EtcdProcess::start().unwrap_or_else(|e| panic!("{e}"));
    let endpoint = format!("etcd://{}", etcd.endpoint().trim_start_matches("http://"));
    let mut server =
        TestServer::start_with(TestServerOptions { datastore_endpoint: Some(endpoint), ..Default::default() });
    server.kubectl_ok(&["create", "configmap", "in-etcd", "--from-literal=k=etcd-value"]);
    let dir = tempfile::Builder::new().prefix("rkube-etcd-snapshot-").tempdir().unwrap();
    let file = dir.path().join("etcd.snap");
    let out = rkube(&[&"store", &"snapshot", &"save", &file, &"--kubeconfig", &server.kubeconfig()]);
    assert!(out.status.success(), "save: {}\n{}", stderr(&out), server.logs());
    let said = stdout(&out);
    assert!(said.contains("Saved an etcd snapshot at revision") && said.contains("SHA-256 verified"), "{said}");
    server.kubectl_ok(&["create", "configmap", "after-snapshot"]);
    let (status, _) = server.stop();
    assert!(status.success(), "{status}\n{}", server.logs());

    // Restoring it into an embedded store is refused with etcd's tool named.
    let out = rkube(&[&"store", &"snapshot", &"restore", &file, &"--data-dir", &dir.path().join("data")]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("etcd restores its own snapshots"), "{}", stderr(&out));
    assert!(stderr(&out).contains("etcdutl snapshot restore"), "{}", stderr(&out));

    // A fresh etcd on the snapshot's bbolt file serves the cluster's keys.
    let bytes = std::fs::read(&file).unwrap();
    let (db, trailer) = bytes.split_at(bytes.len() - 32);
    assert_eq!(ring::digest::digest(&ring::digest::SHA256, db).as_ref(), trailer, "etcd's SHA-256 trailer");
    let etcd_dir = dir.path().join("restored-etcd");
    let snap_dir = etcd_dir.join("member").join("snap");
    std::fs::create_dir_all(&snap_dir).unwrap();
    std::fs::write(snap_dir.join("db"), db).unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&etcd_dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    }
    let (client_port, peer_port) = (support::free_port(), support::free_port());
    let client_url = format!("http://127.0.0.1:{client_port}");
    let peer_url = format!("http://127.0.0.1:{peer_port}");
    let log = std::fs::File::create(dir.path().join("etcd.log")).unwrap();
    let mut cmd = Command::new(support::etcd::ETCD_BINARY);
    cmd.arg("--name=restored")
        .arg(format!("--data-dir={}", etcd_dir.display()))
        .arg(format!("--listen-client-urls={client_url}"))
        .arg(format!("--advertise-client-urls={client_url}"))
        .arg(format!("--listen-peer-urls={peer_url}"))
        .arg(format!("--initial-advertise-peer-urls={peer_url}"))
        .arg(format!("--initial-cluster=restored={peer_url}"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log);
    let restored = Etcd { child: support::etcd::spawn_tied_to_this_process(cmd).unwrap(), port: client_port };
    let range = |key: &str| {
        let body = format!(r#"{{"key":"{}"}}"#, STANDARD.encode(key));
        etcd_post(restored.port, "/v3/kv/range", &body)
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    let answer = loop {
        match range("/registry/configmaps/default/in-etcd") {
            Ok(a) => break a,
            Err(e) if Instant::now() < deadline => {
                let _ = e;
                std::thread::sleep(Duration::from_millis(300));
            }
            Err(e) => panic!(
                "the restored etcd did not answer: {e}\n{}",
                std::fs::read_to_string(dir.path().join("etcd.log")).unwrap_or_default()
            ),
        }
    };
    let v: serde_json::Value = serde_json::from_str(&answer).unwrap();
    let value =
        STANDARD.decode(v["kvs"][0]["value"].as_str().expect("the configmap's key is in the snapshot")).unwrap();
    let object: serde_json::Value = serde_json::from_slice(&value).unwrap();
    assert_eq!(object["data"]["k"], "etcd-value");
    let later: serde_json::Value =
        serde_json::from_str(&range("/registry/configmaps/default/after-snapshot").unwrap()).unwrap();
    assert!(later["kvs"].as_array().is_none_or(|a| a.is_empty()), "written after the snapshot: {later}");
    drop(etcd);
}
