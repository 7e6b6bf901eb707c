//! The simulated runtime's images: every pull succeeds at once and records
//! the image under its normalized reference, with a fake but stable digest
//! (`sha256:` + the SHA-256 of that reference) and a fixed size.

use std::collections::HashMap;

use crate::cri::v1;

/// The size every simulated image reports, in bytes (1 MiB).
pub const SIMULATED_IMAGE_SIZE: u64 = 1 << 20;

/// `name` as containerd's CRI stores it (docker's normalization): a
/// registry domain (`docker.io` when the first component has no `.` or `:`
/// and is not `localhost`), `library/` for docker.io's official images, and
/// `:latest` when neither tag nor digest is given.
pub fn normalize(name: &str) -> String {
    let (first, rest) = name.split_once('/').unwrap_or(("", name));
    let has_domain = !first.is_empty() && (first.contains('.') || first.contains(':') || first == "localhost");
    let mut full = if has_domain {
        name.to_string()
    } else if first.is_empty() {
        format!("docker.io/library/{rest}")
    } else {
        format!("docker.io/{name}")
    };
    let last = full.rsplit('/').next().unwrap_or_default();
    if !last.contains(':') && !last.contains('@') {
        full.push_str(":latest");
    }
    full
}

/// The repository part of a normalized reference (no tag, no digest).
fn repository(reference: &str) -> &str {
    let reference = reference.split('@').next().unwrap_or(reference);
    match reference.rfind(':') {
        Some(i) if !reference[i..].contains('/') => &reference[..i],
        _ => reference,
    }
}

/// `sha256:<hex>` of `data`.
pub fn fake_digest(data: &str) -> String {
    let d = ring::digest::digest(&ring::digest::SHA256, data.as_bytes());
    let hex: String = d.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// The images "pulled" so far, by id.
#[derive(Debug, Default)]
pub struct ImageStore {
    by_id: HashMap<String, v1::Image>,
}

impl ImageStore {
    /// Records `name` (idempotent); returns its id, the image_ref PullImage answers.
    pub fn pull(&mut self, name: &str) -> String {
        let reference = normalize(name);
        let id = fake_digest(&reference);
        self.by_id.entry(id.clone()).or_insert_with(|| {
            let by_digest = reference.contains('@');
            v1::Image {
                id: id.clone(),
                repo_tags: if by_digest { vec![] } else { vec![reference.clone()] },
                repo_digests: vec![if by_digest {
                    reference.clone()
                } else {
                    format!("{}@{id}", repository(&reference))
                }],
                size: SIMULATED_IMAGE_SIZE,
                spec: Some(v1::ImageSpec { image: id.clone(), ..Default::default() }),
                ..Default::default()
            }
        });
        id
    }

    /// The image `name` names: an id, a tag or a digest reference (as
    /// ImageStatus resolves it); `None` if it was never pulled.
    pub fn get(&self, name: &str) -> Option<&v1::Image> {
        if let Some(i) = self.by_id.get(name) {
            return Some(i);
        }
        let reference = normalize(name);
        self.by_id.values().find(|i| i.repo_tags.contains(&reference) || i.repo_digests.contains(&reference))
    }

    /// Forgets the image `name` names; whether there was one.
    pub fn remove(&mut self, name: &str) -> bool {
        match self.get(name).map(|i| i.id.clone()) {
            Some(id) => self.by_id.remove(&id).is_some(),
            None => false,
        }
    }

    /// Every image, by id.
    pub fn list(&self) -> Vec<v1::Image> {
        let mut v: Vec<v1::Image> = self.by_id.values().cloned().collect();
        v.sort_by(|a, b| a.id.cmp(&b.id));
        v
    }

    /// (total bytes, number of images) for ImageFsInfo.
    pub fn usage(&self) -> (u64, u64) {
        (self.by_id.values().map(|i| i.size).sum(), self.by_id.len() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalizes_references_as_containerd_stores_them() {
        assert_eq!(normalize("busybox"), "docker.io/library/busybox:latest");
        assert_eq!(normalize("busybox:1.36"), "docker.io/library/busybox:1.36");
        assert_eq!(normalize("nginxinc/nginx"), "docker.io/nginxinc/nginx:latest");
        assert_eq!(normalize("registry.k8s.io/pause:3.10"), "registry.k8s.io/pause:3.10");
        assert_eq!(normalize("localhost:5000/app"), "localhost:5000/app:latest");
        assert_eq!(normalize("localhost/app@sha256:ab"), "localhost/app@sha256:ab");
        assert_eq!(repository("localhost:5000/app:1"), "localhost:5000/app");
        assert_eq!(repository("localhost:5000/app"), "localhost:5000/app");
    }

    #[test]
    fn pulled_images_resolve_by_tag_id_and_digest() {
        let mut s = ImageStore::default();
        let id = s.pull("busybox:1.36");
        assert_eq!(id, fake_digest("docker.io/library/busybox:1.36"));
        let digest_ref = format!("docker.io/library/busybox@{id}");
        for name in ["busybox:1.36", "docker.io/library/busybox:1.36", id.as_str(), digest_ref.as_str()] {
            assert_eq!(s.get(name).map(|i| i.id.as_str()), Some(id.as_str()), "{name}");
        }
        assert!(s.get("busybox:1.37").is_none());
        assert!(s.remove("busybox:1.36"));
        assert!(!s.remove("busybox:1.36"));
    }
}
