//! Encryption at rest (`--encryption-provider-config`), driven through the
//! real server and kubectl; the bytes at rest are read from the SQLite
//! store file itself. Upstream behaviour: the stored value of an encrypted
//! resource starts with `k8s:enc:<provider>:v1:<key name>:`; writes use
//! the first provider and key, reads try each, so a key rotates by putting
//! the new key first and rewriting the objects; a value no configured key
//! opens is a 500 InternalError.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use support::{TestServer, TestServerOptions, KUBECTL};

const KEY1: &str = "MTIzNDU2Nzg5MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTI="; // 32 bytes
const KEY2: &str = "YWJjZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXoxMjM0NTY="; // 32 bytes
const KEY16: &str = "MTIzNDU2Nzg5MDEyMzQ1Ng=="; // 16 bytes

fn aescbc(keys: &[(&str, &str)]) -> String {
    let keys: String = keys.iter().map(|(n, s)| format!("          - name: {n}\n            secret: {s}\n")).collect();
    format!("      - aescbc:\n          keys:\n{keys}")
}

fn config(entries: &[(&str, String)]) -> String {
    let mut out = String::from("apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n");
    for (resources, providers) in entries {
        out.push_str(&format!("  - resources: [{resources}]\n    providers:\n{providers}"));
    }
    out
}

const IDENTITY: &str = "      - identity: {}\n";

/// A server on `data_dir` with the encryption config `yaml`.
fn start(data_dir: &Path, yaml: &str) -> TestServer {
    let path = data_dir.join("encryption.yaml");
    std::fs::create_dir_all(data_dir).unwrap();
    std::fs::write(&path, yaml).unwrap();
    TestServer::start_with(TestServerOptions {
        data_dir: Some(data_dir.to_path_buf()),
        extra_args: vec!["--encryption-provider-config".into(), path.display().to_string()],
        ..Default::default()
    })
}

fn ok(server: &TestServer, args: &[&str]) -> String {
    let out = server.kubectl(args);
    assert!(
        out.status.success(),
        "kubectl {args:?}: {}\n--- rkube ---\n{}",
        String::from_utf8_lossy(&out.stderr),
        server.logs()
    );
    String::from_utf8_lossy(&out.stdout).to_string()
}

fn db(data_dir: &Path) -> PathBuf {
    data_dir.join("server/db/state.db")
}

/// The latest stored value of `key`, read from the SQLite file.
fn stored(data_dir: &Path, key: &str) -> Vec<u8> {
    let conn = rusqlite::Connection::open_with_flags(db(data_dir), rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .expect("open the store read-only");
    conn.query_row(
        "SELECT log.value FROM latest JOIN log ON log.revision = latest.revision WHERE latest.key = ?1",
        [key.as_bytes()],
        |row| row.get(0),
    )
    .unwrap_or_else(|e| panic!("no stored value for {key}: {e}"))
}

fn prefix_of(value: &[u8], n: usize) -> String {
    String::from_utf8_lossy(&value[..value.len().min(n)]).to_string()
}

/// Every byte of the store's files (database and write-ahead log).
fn store_bytes(data_dir: &Path) -> Vec<u8> {
    let mut all = Vec::new();
    for suffix in ["", "-wal"] {
        let mut p = db(data_dir).into_os_string();
        p.push(suffix);
        all.extend(std::fs::read(PathBuf::from(p)).unwrap_or_default());
    }
    all
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle.as_bytes())
}

/// `kubectl get <what> -o json | kubectl replace -f -`: the upstream way to
/// rewrite objects after a key change.
fn replace(server: &TestServer, what: &[&str]) {
    let mut args = vec!["get"];
    args.extend_from_slice(what);
    args.extend_from_slice(&["-o", "json"]);
    let json = ok(server, &args);
    let file = server.data_dir().join("replace.json");
    std::fs::write(&file, json).unwrap();
    let out = Command::new(KUBECTL)
        .arg("--kubeconfig")
        .arg(server.kubeconfig())
        .args(["replace", "-f"])
        .arg(&file)
        .env_remove("KUBECONFIG")
        .output()
        .unwrap();
    assert!(out.status.success(), "replace: {}", String::from_utf8_lossy(&out.stderr));
}

fn secret_value(server: &TestServer, name: &str) -> String {
    ok(server, &["get", "secret", name, "-o", "jsonpath={.data.password}"])
}

#[test]
fn secrets_are_stored_with_the_aescbc_prefix_and_not_as_plain_text() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path(), &config(&[("secrets", aescbc(&[("key1", KEY1)]) + IDENTITY)]));
    ok(&server, &["create", "secret", "generic", "s1", "--from-literal=password=hunter2-plain-marker"]);
    ok(&server, &["label", "secret", "s1", "marker=secret-label-in-clear"]);
    ok(&server, &["create", "configmap", "c1", "--from-literal=k=configmap-in-clear"]);

    // Read back through every path: get, list, a watch's initial list.
    assert_eq!(secret_value(&server, "s1"), "aHVudGVyMi1wbGFpbi1tYXJrZXI=");
    assert!(ok(&server, &["get", "secrets"]).contains("s1"));
    assert!(ok(&server, &["get", "secrets", "-l", "marker=secret-label-in-clear", "-o", "name"]).contains("secret/s1"));

    let value = stored(dir.path(), "/registry/secrets/default/s1");
    assert_eq!(prefix_of(&value, 23), "k8s:enc:aescbc:v1:key1:");
    // 16-byte IV + whole AES blocks after the prefix.
    assert_eq!((value.len() - 23) % 16, 0);
    let bytes = store_bytes(dir.path());
    assert!(!contains(&bytes, "aHVudGVyMi1wbGFpbi1tYXJrZXI="), "the secret's data is not in the store file");
    assert!(!contains(&bytes, "secret-label-in-clear"), "nor its labels");
    // Control: configmaps are not configured, so their data is in clear.
    assert!(contains(&bytes, "configmap-in-clear"));
    assert_eq!(prefix_of(&stored(dir.path(), "/registry/configmaps/default/c1"), 1), "{");
}

#[test]
fn rotating_keys_new_key_first_reads_old_secrets_and_rewrites_with_the_new_key() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut server = start(&data, &config(&[("secrets", aescbc(&[("key1", KEY1)]))]));
    ok(&server, &["create", "secret", "generic", "old", "--from-literal=password=one"]);
    ok(&server, &["create", "secret", "generic", "kept", "--from-literal=password=two"]);
    server.stop();
    assert_eq!(prefix_of(&stored(&data, "/registry/secrets/default/old"), 23), "k8s:enc:aescbc:v1:key1:");

    // New key first, old key second.
    let mut server = start(&data, &config(&[("secrets", aescbc(&[("key2", KEY2), ("key1", KEY1)]))]));
    assert_eq!(secret_value(&server, "old"), "b25l");
    replace(&server, &["secret", "old"]);
    ok(&server, &["create", "secret", "generic", "new", "--from-literal=password=three"]);
    assert_eq!(secret_value(&server, "old"), "b25l");
    server.stop();
    assert_eq!(prefix_of(&stored(&data, "/registry/secrets/default/old"), 23), "k8s:enc:aescbc:v1:key2:");
    assert_eq!(prefix_of(&stored(&data, "/registry/secrets/default/new"), 23), "k8s:enc:aescbc:v1:key2:");
    assert_eq!(prefix_of(&stored(&data, "/registry/secrets/default/kept"), 23), "k8s:enc:aescbc:v1:key1:");

    // The old key removed: what it alone encrypted no longer reads — a 500
    // InternalError for that object, as upstream — and the rest still does.
    let server = start(&data, &config(&[("secrets", aescbc(&[("key2", KEY2)]))]));
    assert_eq!(secret_value(&server, "old"), "b25l");
    let (code, body) = server.get("/api/v1/namespaces/default/secrets/kept");
    assert_eq!(code, 500, "{body}");
    let status: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(status["reason"], "InternalError");
    assert_eq!(
        status["message"],
        "Internal error occurred: no matching key was found for the provided AES transformer"
    );
    let (code, _) = server.get("/api/v1/namespaces/default/secrets/new");
    assert_eq!(code, 200);
    // The server's stderr reaches `logs()` through a reader thread: give it time.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !server.logs().contains("failed to decrypt data") && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(server.logs().contains("failed to decrypt data"), "{}", server.logs());
    drop(server);
}

#[test]
fn secretbox_and_aesgcm_providers_store_their_prefixes_and_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let secretbox = format!("      - secretbox:\n          keys:\n          - name: sb1\n            secret: {KEY2}\n");
    let aesgcm = format!("      - aesgcm:\n          keys:\n          - name: g1\n            secret: {KEY16}\n");
    let server = start(dir.path(), &config(&[("secrets", secretbox), ("configmaps", aesgcm)]));
    ok(&server, &["create", "secret", "generic", "s", "--from-literal=password=boxed-marker"]);
    ok(&server, &["create", "configmap", "c", "--from-literal=k=gcm-marker-value"]);
    assert_eq!(secret_value(&server, "s"), "Ym94ZWQtbWFya2Vy");
    assert_eq!(ok(&server, &["get", "configmap", "c", "-o", "jsonpath={.data.k}"]), "gcm-marker-value");
    let sb = stored(dir.path(), "/registry/secrets/default/s");
    assert_eq!(prefix_of(&sb, 25), "k8s:enc:secretbox:v1:sb1:");
    let gcm = stored(dir.path(), "/registry/configmaps/default/c");
    assert_eq!(prefix_of(&gcm, 21), "k8s:enc:aesgcm:v1:g1:");
    let bytes = store_bytes(dir.path());
    assert!(!contains(&bytes, "Ym94ZWQtbWFya2Vy") && !contains(&bytes, "gcm-marker-value"));
    // Updates go through the same path.
    ok(&server, &["label", "configmap", "c", "x=y"]);
    assert_eq!(ok(&server, &["get", "configmap", "c", "-o", "jsonpath={.metadata.labels.x}"]), "y");
}

#[test]
fn identity_first_reads_encrypted_data_and_writes_it_back_in_clear() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut server = start(&data, &config(&[("secrets", aescbc(&[("key1", KEY1)]))]));
    ok(&server, &["create", "secret", "generic", "s", "--from-literal=password=decrypt-me"]);
    server.stop();
    // Decrypting: identity first, the old provider after it.
    let mut server = start(&data, &config(&[("secrets", IDENTITY.to_string() + &aescbc(&[("key1", KEY1)]))]));
    assert_eq!(secret_value(&server, "s"), "ZGVjcnlwdC1tZQ==");
    replace(&server, &["secret", "s"]);
    server.stop();
    let value = stored(&data, "/registry/secrets/default/s");
    assert_eq!(prefix_of(&value, 1), "{", "stored as plain JSON again");
}

#[test]
fn encryption_of_all_resources_with_a_wildcard_covers_other_kinds() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path(), &config(&[("'*.*'", aescbc(&[("all", KEY1)]))]));
    ok(&server, &["create", "configmap", "c", "--from-literal=k=v"]);
    ok(&server, &["create", "namespace", "wild"]);
    assert_eq!(prefix_of(&stored(dir.path(), "/registry/configmaps/default/c"), 22), "k8s:enc:aescbc:v1:all:");
    assert_eq!(prefix_of(&stored(dir.path(), "/registry/namespaces/wild"), 22), "k8s:enc:aescbc:v1:all:");
    assert!(ok(&server, &["get", "namespaces"]).contains("wild"));
}

#[test]
fn an_invalid_config_stops_the_start_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("enc.yaml");
    std::fs::write(&path, config(&[("secrets", aescbc(&[("key1", "c2hvcnQ=")]))])).unwrap();
    let port = support::free_port().to_string();
    let data = dir.path().join("data");
    let out = support::run_rkube(
        &[
            "server",
            "--disable-agent",
            "--bind-address",
            "127.0.0.1",
            "--https-port",
            &port,
            "--data-dir",
            data.to_str().unwrap(),
            "--encryption-provider-config",
            path.to_str().unwrap(),
        ],
        Duration::from_secs(60),
    );
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(r#"resources[0].providers[0].aescbc.keys[0].secret: Invalid value: "REDACTED": secret is not of the expected length, got 5, expected one of [16 24 32]"#),
        "{stderr}"
    );
    assert!(!db(&data).exists(), "nothing was opened or stored");
    let kms = dir.path().join("kms.yaml");
    std::fs::write(
        &kms,
        config(&[(
            "secrets",
            "      - kms:\n          apiVersion: v2\n          name: p\n          endpoint: unix:///tmp/kms.sock\n"
                .into(),
        )]),
    )
    .unwrap();
    let out = support::run_rkube(
        &[
            "server",
            "--disable-agent",
            "--https-port",
            &port,
            "--data-dir",
            data.to_str().unwrap(),
            "--encryption-provider-config",
            kms.to_str().unwrap(),
        ],
        Duration::from_secs(60),
    );
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("the kms provider is not supported"));
}

/// Upstream: without `--encryption-provider-config` the identity
/// transformer reads every value and refuses encrypted ones with its own
/// message (a 500), not a decoding error.
#[test]
fn without_a_config_encrypted_secrets_fail_with_identitys_message() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut server = start(&data, &config(&[("secrets", aescbc(&[("key1", KEY1)]))]));
    ok(&server, &["create", "secret", "generic", "s", "--from-literal=password=sealed"]);
    server.stop();
    let server = TestServer::start_with(TestServerOptions { data_dir: Some(data.clone()), ..Default::default() });
    let out = server.kubectl(&["get", "secret", "s"]);
    assert!(!out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "Error from server (InternalError): Internal error occurred: identity transformer tried to read encrypted data"
    );
    // Other resources read and write as usual.
    ok(&server, &["create", "configmap", "c", "--from-literal=k=v"]);
    assert_eq!(prefix_of(&stored(&data, "/registry/configmaps/default/c"), 1), "{");
}
