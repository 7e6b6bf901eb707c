use super::*;

const K16: &str = "MTIzNDU2Nzg5MDEyMzQ1Ng=="; // 16 bytes
const K32: &str = "MTIzNDU2Nzg5MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTI="; // 32 bytes

fn load(yaml: &str) -> Result<EncryptionConfig, LoadError> {
    EncryptionConfig::from_bytes(yaml.as_bytes())
}

fn header(body: &str) -> String {
    format!("apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\n{body}")
}

#[test]
fn resources_resolve_to_their_entry_then_their_group_wildcard_then_everything() {
    let cfg = load(&header(&format!(
        r#"resources:
- resources: [events]
  providers: [{{identity: {{}}}}]
- resources: [secrets, configmaps]
  providers:
  - aescbc: {{keys: [{{name: key1, secret: "{K32}"}}]}}
- resources: ['*.apps']
  providers:
  - secretbox: {{keys: [{{name: k, secret: "{K32}"}}]}}
- resources: ['*.*']
  providers:
  - aesgcm: {{keys: [{{name: g, secret: "{K16}"}}]}}
"#
    )))
    .unwrap();
    let write = |g: &str, r: &str| {
        let out = cfg.transformer_for(g, r).unwrap().to_storage(b"{}", b"/registry/x").unwrap();
        String::from_utf8_lossy(&out[..out.len().min(30)]).to_string()
    };
    assert!(write("", "secrets").starts_with("k8s:enc:aescbc:v1:key1:"));
    assert!(write("", "configmaps").starts_with("k8s:enc:aescbc:v1:key1:"));
    assert!(write("apps", "deployments").starts_with("k8s:enc:secretbox:v1:k:"));
    assert!(write("", "pods").starts_with("k8s:enc:aesgcm:v1:g:"));
    assert_eq!(write("", "events"), "{}");
}

#[test]
fn without_a_wildcard_other_resources_have_no_transformer() {
    let cfg = load(&header(&format!(
        "resources:\n- resources: [secrets]\n  providers:\n  - aescbc:\n      keys:\n      - name: key1\n        secret: {K32}\n  - identity: {{}}\n"
    )))
    .unwrap();
    assert!(cfg.transformer_for("", "secrets").is_some());
    assert!(cfg.transformer_for("", "configmaps").is_none());
    assert!(cfg.transformer_for("apps", "secrets").is_none());
}

fn invalid(body: &str) -> String {
    match load(&header(body)) {
        Err(LoadError::Invalid(e)) => e,
        other => panic!("expected a validation error, got {other:?}"),
    }
}

#[test]
fn key_errors_name_the_field_as_upstream() {
    let e = invalid("resources:\n- resources: [secrets]\n  providers:\n  - aescbc:\n      keys:\n      - name: key1\n        secret: c2hvcnQ=\n");
    assert_eq!(
        e,
        r#"resources[0].providers[0].aescbc.keys[0].secret: Invalid value: "REDACTED": secret is not of the expected length, got 5, expected one of [16 24 32]"#
    );
    let e = invalid(&format!(
        "resources:\n- resources: [secrets]\n  providers:\n  - secretbox:\n      keys:\n      - name: k\n        secret: {K16}\n"
    ));
    assert_eq!(
        e,
        r#"resources[0].providers[0].secretbox.keys[0].secret: Invalid value: "REDACTED": secret is not of the expected length, got 16, expected one of [32]"#
    );
    let e =
        invalid("resources:\n- resources: [secrets]\n  providers:\n  - aesgcm:\n      keys:\n      - secret: '!!'\n");
    assert_eq!(
        e,
        r#"[resources[0].providers[0].aesgcm.keys[0].name: Required value: name is a mandatory field for a key, resources[0].providers[0].aesgcm.keys[0].secret: Invalid value: "REDACTED": secrets must be base64 encoded]"#
    );
    let e = invalid("resources:\n- resources: [secrets]\n  providers:\n  - aesgcm:\n      keys: []\n");
    assert_eq!(e, "resources[0].providers[0].aesgcm.keys: Required value: at least one keys is required");
}

#[test]
fn resource_and_provider_list_errors_read_as_upstream() {
    assert_eq!(invalid("resources: []\n"), "resources: Required value: at least one resources is required");
    assert_eq!(
        invalid("resources:\n- resources: [secrets]\n  providers: []\n"),
        "resources[0].providers: Required value: at least one resources[0].providers is required"
    );
    assert_eq!(
        invalid("resources:\n- resources: ['*']\n  providers: [{identity: {}}]\n"),
        r#"resources[0].resources[0]: Invalid value: "*": use '*.' to encrypt all the resources from core API group or *.* to encrypt all resources"#
    );
    assert_eq!(
        invalid("resources:\n- resources: [Secrets]\n  providers: [{identity: {}}]\n"),
        r#"resources[0].resources[0]: Invalid value: "Secrets": resource name should not contain capital letters"#
    );
    assert_eq!(
        invalid("resources:\n- resources: [secrets, '*.']\n  providers: [{identity: {}}]\n"),
        r#"resources[0].resources: Invalid value: ["secrets","*."]: using overlapping resources such as 'secrets' and '*.' in the same resource list is not allowed as they will be masked"#
    );
    assert_eq!(
        invalid("resources:\n- resources: [secrets]\n  providers: [{}]\n"),
        "resources[0].providers[0]: Invalid value: {}: provider does not contain any of the expected providers: KMS, AESGCM, AESCBC, Secretbox, Identity"
    );
}

#[test]
fn masked_rules_unknown_fields_wrong_kinds_and_kms_are_refused() {
    let masked = load(&header(
        "resources:\n- resources: ['*.apps']\n  providers: [{identity: {}}]\n- resources: [deployments.apps]\n  providers: [{identity: {}}]\n",
    ));
    assert_eq!(
        masked.unwrap_err(),
        LoadError::Build(r#"resource "deployments.apps" is masked by earlier rule "*.apps""#.into())
    );
    let typo = load(&header("resources:\n- resources: [secrets]\n  provider: [{identity: {}}]\n"));
    assert!(matches!(&typo, Err(LoadError::Decode(e)) if e.contains("unknown field `provider`")), "{typo:?}");
    let kind = load("apiVersion: v1\nkind: ConfigMap\nresources: []\n");
    assert!(matches!(&kind, Err(LoadError::Decode(e)) if e.contains("ConfigMap")), "{kind:?}");
    let kms = load(&header(
        "resources:\n- resources: [secrets]\n  providers:\n  - kms: {apiVersion: v2, name: p, endpoint: 'unix:///tmp/k.sock'}\n",
    ));
    assert!(matches!(&kms, Err(LoadError::Build(e)) if e.contains("kms provider is not supported")), "{kms:?}");
}

#[test]
fn load_prefixes_upstream_context_and_reports_missing_files() {
    let dir = tempfile::tempdir().unwrap();
    let missing = EncryptionConfig::load(&dir.path().join("nope.yaml")).unwrap_err();
    assert!(
        missing.starts_with(
            "error while parsing file: error while loading file: error reading encryption provider configuration file"
        ),
        "{missing}"
    );
    let empty = dir.path().join("empty.yaml");
    std::fs::write(&empty, "").unwrap();
    assert!(EncryptionConfig::load(&empty).unwrap_err().ends_with("is empty"));
    let bad = dir.path().join("bad.yaml");
    std::fs::write(&bad, header("resources: []\n")).unwrap();
    assert_eq!(
        EncryptionConfig::load(&bad).unwrap_err(),
        "error while parsing file: resources: Required value: at least one resources is required"
    );
}
