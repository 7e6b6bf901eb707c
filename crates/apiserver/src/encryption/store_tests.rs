use super::*;
use futures::StreamExt;
use rkube_store::sqlite::SqliteStore;

const KEY1: &str = "MTIzNDU2Nzg5MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTI=";
const KEY2: &str = "YWJjZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXoxMjM0NTY=";

fn config(keys: &[(&str, &str)]) -> EncryptionConfig {
    let keys: String = keys.iter().map(|(n, s)| format!("      - {{name: {n}, secret: {s}}}\n")).collect();
    let yaml = format!(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n  - aescbc:\n      keys:\n{keys}"
    );
    EncryptionConfig::from_bytes(yaml.as_bytes()).unwrap()
}

const SECRET: &str = "/registry/secrets/default/s";
const PLAIN: &[u8] = br#"{"kind":"Secret"}"#;

#[tokio::test]
async fn values_are_sealed_on_write_and_opened_on_every_read_path() {
    let dir = tempfile::tempdir().unwrap();
    let raw: SharedStore = Arc::new(SqliteStore::open(&dir.path().join("db")).await.unwrap());
    let store = EncryptedStore::shared(raw.clone(), config(&[("key1", KEY1)]));
    let mut watch = store.watch("/registry/secrets/", 0, WatchOptions::default()).await.unwrap();

    let created = store.create(SECRET, Bytes::from_static(PLAIN), None).await.unwrap();
    assert_eq!(created.value, PLAIN, "writes answer with the plaintext");
    let at_rest = raw.get(SECRET, None).await.unwrap().kv.unwrap().value;
    assert!(at_rest.starts_with(b"k8s:enc:aescbc:v1:key1:"));
    assert_eq!(store.get(SECRET, None).await.unwrap().kv.unwrap().value, PLAIN);
    let listed = store.range(RangeRequest { prefix: "/registry/secrets/".into(), ..Default::default() }).await.unwrap();
    assert_eq!(listed.kvs[0].value, PLAIN);
    match watch.events.next().await.unwrap().unwrap() {
        WatchEvent::Put { kv, .. } => assert_eq!(kv.value, PLAIN),
        other => panic!("{other:?}"),
    }
    // A conflict carries the current value, opened.
    let err = store.update(SECRET, Bytes::from_static(b"{}"), created.mod_revision + 10, None).await.unwrap_err();
    assert!(matches!(err, StoreError::Conflict { current: Some(ref kv), .. } if kv.value == PLAIN), "{err:?}");
    // Other resources pass through untouched.
    store.create("/registry/configmaps/default/c", Bytes::from_static(b"{}"), None).await.unwrap();
    assert_eq!(raw.get("/registry/configmaps/default/c", None).await.unwrap().kv.unwrap().value, "{}".as_bytes());
    // Encrypted bytes under a resource stored as is do not read (upstream's
    // identity check), in a list as in a get.
    raw.create("/registry/configmaps/default/enc", Bytes::from_static(b"k8s:enc:aescbc:v1:key1:xx"), None)
        .await
        .unwrap();
    let err =
        store.range(RangeRequest { prefix: "/registry/configmaps/".into(), ..Default::default() }).await.unwrap_err();
    assert_eq!(
        err,
        StoreError::Internal(
            "unable to transform key \"/registry/configmaps/default/enc\": identity transformer tried to read encrypted data"
                .into()
        )
    );
    let err = store.get("/registry/configmaps/default/enc", None).await.unwrap_err();
    assert_eq!(err, StoreError::Internal("identity transformer tried to read encrypted data".into()));
    let deleted = store.delete(SECRET, None).await.unwrap();
    assert_eq!(deleted.prev.value, PLAIN);
}

#[tokio::test]
async fn values_under_a_rotated_out_key_read_stale_and_unknown_keys_fail_as_internal_errors() {
    let dir = tempfile::tempdir().unwrap();
    let raw: SharedStore = Arc::new(SqliteStore::open(&dir.path().join("db")).await.unwrap());
    let old = EncryptedStore::shared(raw.clone(), config(&[("key1", KEY1)]));
    old.create(SECRET, Bytes::from_static(PLAIN), None).await.unwrap();

    // Stale: a trailing newline, so that rewriting the same object is
    // never a no-op and moves it to the new key.
    let rotated = EncryptedStore::shared(raw.clone(), config(&[("key2", KEY2), ("key1", KEY1)]));
    let read = rotated.get(SECRET, None).await.unwrap().kv.unwrap();
    assert_eq!(read.value, [PLAIN, b"\n"].concat());
    assert!(serde_json::from_slice::<serde_json::Value>(&read.value).is_ok());

    let without = EncryptedStore::shared(raw.clone(), config(&[("key2", KEY2)]));
    let err = without.get(SECRET, None).await.unwrap_err();
    assert_eq!(err, StoreError::Internal("no matching key was found for the provided AES transformer".into()));
    let err =
        without.range(RangeRequest { prefix: "/registry/secrets/".into(), ..Default::default() }).await.unwrap_err();
    assert_eq!(
        err,
        StoreError::Internal(format!(
            "unable to transform key {SECRET:?}: no matching key was found for the provided AES transformer"
        ))
    );
    // A watch ends with the error.
    let mut watch = without.watch("/registry/secrets/", 1, WatchOptions::default()).await.unwrap();
    assert!(matches!(watch.events.next().await, Some(Err(StoreError::Internal(_)))));
    assert!(watch.events.next().await.is_none());
}

#[tokio::test]
async fn without_a_config_encrypted_values_fail_with_identitys_error_and_plain_ones_pass() {
    let dir = tempfile::tempdir().unwrap();
    let raw: SharedStore = Arc::new(SqliteStore::open(&dir.path().join("db")).await.unwrap());
    let old = EncryptedStore::shared(raw.clone(), config(&[("key1", KEY1)]));
    old.create(SECRET, Bytes::from_static(PLAIN), None).await.unwrap();
    let plain = EncryptedStore::shared(raw.clone(), EncryptionConfig::identity());
    plain.create("/registry/configmaps/default/c", Bytes::from_static(PLAIN), None).await.unwrap();
    assert_eq!(raw.get("/registry/configmaps/default/c", None).await.unwrap().kv.unwrap().value, PLAIN);
    let got = plain.get("/registry/configmaps/default/c", None).await.unwrap().kv.unwrap();
    assert_eq!(got.value, PLAIN);

    let err = plain.get(SECRET, None).await.unwrap_err();
    assert_eq!(err, StoreError::Internal("identity transformer tried to read encrypted data".into()));
    let err =
        plain.range(RangeRequest { prefix: "/registry/secrets/".into(), ..Default::default() }).await.unwrap_err();
    assert_eq!(
        err,
        StoreError::Internal(format!(
            "unable to transform key {SECRET:?}: identity transformer tried to read encrypted data"
        ))
    );
    let all = plain.range(RangeRequest { prefix: "/registry/configmaps/".into(), ..Default::default() }).await.unwrap();
    assert_eq!(all.kvs.len(), 1);
}
