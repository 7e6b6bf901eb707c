//! OCI image-layout archives (image-spec v1.1 `oci-layout`, `index.json`,
//! `blobs/sha256/…`) of single-platform images with uncompressed layers, as
//! `ctr images import` and `docker load` read them.

use serde_json::{json, Value};

use super::tar::TarBuilder;

/// An image to write: its reference, its image config's `config` section
/// (Entrypoint, Cmd, Env, User, …) and its layers (uncompressed tars,
/// bottom first).
pub struct OciImage {
    /// The full reference, e.g. `registry.k8s.io/pause:3.10`.
    pub reference: String,
    /// The runtime config (`config` of the image config), in OCI field names.
    pub runtime_config: Value,
    /// Layer tarballs, bottom first.
    pub layers: Vec<Vec<u8>>,
    /// A `created_by` line per layer for the config's history.
    pub history: Vec<String>,
}

/// `sha256:<hex>` of `data`.
pub fn digest(data: &[u8]) -> String {
    let d = ring::digest::digest(&ring::digest::SHA256, data);
    let hex: String = d.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// The GOARCH name of this machine's architecture, as image configs use.
pub fn go_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "arm" => "arm",
        "powerpc64" => "ppc64le",
        "s390x" => "s390x",
        "riscv64" => "riscv64",
        other => other,
    }
}

impl OciImage {
    /// The OCI layout archive. The index's manifest carries the reference as
    /// `io.containerd.image.name` (what containerd's importer names the
    /// image) and its tag as `org.opencontainers.image.ref.name`.
    pub fn layout_tar(&self) -> Vec<u8> {
        let mut blobs: Vec<(String, Vec<u8>)> = Vec::new();
        let mut layer_descs = Vec::new();
        let mut diff_ids = Vec::new();
        for layer in &self.layers {
            let d = digest(layer);
            diff_ids.push(json!(d));
            layer_descs.push(json!({
                "mediaType": "application/vnd.oci.image.layer.v1.tar",
                "digest": d,
                "size": layer.len(),
            }));
            blobs.push((d, layer.clone()));
        }
        let history: Vec<Value> =
            self.history.iter().map(|h| json!({"created": "1970-01-01T00:00:00Z", "created_by": h})).collect();
        let config = json!({
            "created": "1970-01-01T00:00:00Z",
            "architecture": go_arch(),
            "os": "linux",
            "config": self.runtime_config,
            "rootfs": {"type": "layers", "diff_ids": diff_ids},
            "history": history,
        });
        let config_bytes = serde_json::to_vec(&config).expect("json");
        let config_digest = digest(&config_bytes);
        let manifest = json!({
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {
                "mediaType": "application/vnd.oci.image.config.v1+json",
                "digest": config_digest,
                "size": config_bytes.len(),
            },
            "layers": layer_descs,
        });
        let manifest_bytes = serde_json::to_vec(&manifest).expect("json");
        let manifest_digest = digest(&manifest_bytes);
        let tag = self.reference.rsplit_once(':').filter(|(_, t)| !t.contains('/')).map(|(_, t)| t).unwrap_or("latest");
        let index = json!({
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.index.v1+json",
            "manifests": [{
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "digest": manifest_digest,
                "size": manifest_bytes.len(),
                "platform": {"architecture": go_arch(), "os": "linux"},
                "annotations": {
                    "io.containerd.image.name": self.reference,
                    "org.opencontainers.image.ref.name": tag,
                },
            }],
        });
        blobs.push((config_digest, config_bytes));
        blobs.push((manifest_digest, manifest_bytes));

        let mut t = TarBuilder::new();
        t.file("oci-layout", 0o644, br#"{"imageLayoutVersion":"1.0.0"}"#);
        t.file("index.json", 0o644, &serde_json::to_vec(&index).expect("json"));
        t.dir("blobs", 0o755);
        t.dir("blobs/sha256", 0o755);
        for (d, data) in &blobs {
            t.file(&format!("blobs/sha256/{}", d.trim_start_matches("sha256:")), 0o644, data);
        }
        t.finish()
    }
}
