//! The pod network of one node: the CNI conflist for the Node's
//! `spec.podCIDR` (bridge + host-local IPAM + portmap from the
//! distribution's plugins), written into the managed containerd's CNI
//! config dir. containerd adds the loopback network itself, and its CRI
//! reports NetworkReady once a valid conflist is there.

use std::path::{Path, PathBuf};

use serde_json::json;

/// The conflist's file name in `<data-dir>/agent/cni/net.d`.
pub const CONFLIST_NAME: &str = "10-rkube.conflist";
/// The bridge of the agent whose data dir is the default `/var/lib/rkube`.
pub const DEFAULT_BRIDGE: &str = "rkube0";
const DEFAULT_DATA_DIR: &str = "/var/lib/rkube";

/// The short id of a non-default data dir: 12 hex digits of the SHA-256 of
/// its absolute path; `None` for the default `/var/lib/rkube`. Every host
/// name an agent creates (bridge, nft tables, devices) carries it, so that
/// agents with other data dirs on the same machine keep apart.
pub fn data_dir_id(data_dir: &Path) -> Option<String> {
    let abs = std::path::absolute(data_dir).unwrap_or_else(|_| data_dir.to_path_buf());
    if abs == Path::new(DEFAULT_DATA_DIR) {
        return None;
    }
    let digest = ring::digest::digest(&ring::digest::SHA256, abs.as_os_str().as_encoded_bytes());
    Some(digest.as_ref()[..6].iter().map(|b| format!("{b:02x}")).collect())
}

/// The bridge interface for a data dir: `rkube0` for the default data dir,
/// else `rk` + [`data_dir_id`] (14 characters, under the kernel's 15).
pub fn bridge_name(data_dir: &Path) -> String {
    match data_dir_id(data_dir) {
        None => DEFAULT_BRIDGE.into(),
        Some(id) => format!("rk{id}"),
    }
}

/// The conflist text for `pod_cidr`: network `rkube` (cniVersion 1.0.0), a
/// bridge that is the pods' gateway with hairpin mode (no masquerade here:
/// that comes with the networking item), host-local IPAM over the pod CIDR
/// with a default route and its state under `ipam_dir`, and portmap for
/// hostPort (with SNAT so hairpinned hostPort traffic returns).
pub fn conflist(bridge: &str, pod_cidr: &str, ipam_dir: &Path) -> String {
    let v = json!({
        "cniVersion": "1.0.0",
        "name": "rkube",
        "plugins": [
            {
                "type": "bridge",
                "bridge": bridge,
                "isGateway": true,
                "ipMasq": false,
                "hairpinMode": true,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": pod_cidr}]],
                    "routes": [{"dst": "0.0.0.0/0"}],
                    "dataDir": ipam_dir,
                }
            },
            {"type": "portmap", "capabilities": {"portMappings": true}, "snat": true}
        ]
    });
    serde_json::to_string_pretty(&v).expect("a JSON value serializes") + "\n"
}

/// Where the agent keeps its CNI state: the conflist's dir and host-local's.
#[derive(Clone, Debug)]
pub struct CniPaths {
    /// `<data-dir>/agent/cni/net.d` (containerd's `conf_dir`).
    pub conf_dir: PathBuf,
    /// `<data-dir>/agent/cni/ipam` (host-local's `dataDir`).
    pub ipam_dir: PathBuf,
    /// The bridge name ([`bridge_name`]).
    pub bridge: String,
}

impl CniPaths {
    /// The paths for a data dir.
    pub fn new(data_dir: &Path) -> CniPaths {
        let data_dir = std::path::absolute(data_dir).unwrap_or_else(|_| data_dir.to_path_buf());
        let cni = data_dir.join("agent").join("cni");
        CniPaths { conf_dir: cni.join("net.d"), ipam_dir: cni.join("ipam"), bridge: bridge_name(&data_dir) }
    }

    /// Writes the conflist for `pod_cidr` (atomically, through a rename)
    /// unless it already says exactly that. Returns whether it changed.
    pub fn write(&self, pod_cidr: &str) -> std::io::Result<bool> {
        let text = conflist(&self.bridge, pod_cidr, &self.ipam_dir);
        let path = self.conf_dir.join(CONFLIST_NAME);
        if std::fs::read_to_string(&path).is_ok_and(|old| old == text) {
            return Ok(false);
        }
        std::fs::create_dir_all(&self.conf_dir)?;
        std::fs::create_dir_all(&self.ipam_dir)?;
        // A name containerd's loader ignores (not .conf/.conflist/.json) until the rename.
        let tmp = self.conf_dir.join(format!(".{CONFLIST_NAME}.tmp"));
        std::fs::write(&tmp, &text)?;
        std::fs::rename(&tmp, &path)?;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conflist_for_the_pod_cidr() {
        let v: serde_json::Value =
            serde_json::from_str(&conflist("rkube0", "10.42.0.0/24", Path::new("/var/lib/rkube/agent/cni/ipam")))
                .unwrap();
        assert_eq!(v["cniVersion"], "1.0.0");
        assert_eq!(v["name"], "rkube");
        let bridge = &v["plugins"][0];
        assert_eq!(bridge["type"], "bridge");
        assert_eq!(bridge["bridge"], "rkube0");
        assert_eq!(bridge["isGateway"], true);
        assert_eq!(bridge["hairpinMode"], true);
        assert_eq!(bridge["ipam"]["type"], "host-local");
        assert_eq!(bridge["ipam"]["ranges"][0][0]["subnet"], "10.42.0.0/24");
        assert_eq!(bridge["ipam"]["routes"][0]["dst"], "0.0.0.0/0");
        assert_eq!(bridge["ipam"]["dataDir"], "/var/lib/rkube/agent/cni/ipam");
        assert_eq!(v["plugins"][1]["type"], "portmap");
        assert_eq!(v["plugins"][1]["capabilities"]["portMappings"], true);
    }

    #[test]
    fn bridges_differ_per_data_dir() {
        assert_eq!(bridge_name(Path::new("/var/lib/rkube")), "rkube0");
        let (a, b) = (bridge_name(Path::new("/tmp/a")), bridge_name(Path::new("/tmp/b")));
        assert_ne!(a, b);
        assert!(a.len() <= 15 && a.starts_with("rk"));
    }

    #[test]
    fn write_is_idempotent() {
        let dir = tempfile::tempdir().unwrap();
        let paths = CniPaths::new(dir.path());
        assert!(paths.write("10.42.1.0/24").unwrap());
        assert!(!paths.write("10.42.1.0/24").unwrap());
        assert!(paths.write("10.42.2.0/24").unwrap());
        let text = std::fs::read_to_string(paths.conf_dir.join(CONFLIST_NAME)).unwrap();
        assert!(text.contains("10.42.2.0/24"));
        assert_eq!(std::fs::read_dir(&paths.conf_dir).unwrap().count(), 1);
    }
}
