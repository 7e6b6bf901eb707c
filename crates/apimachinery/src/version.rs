//! The Kubernetes version rkube implements, as `/version` reports it
//! (`k8s.io/apimachinery/pkg/version.Info`).

use serde::Serialize;

/// API level: Kubernetes 1.33. kubectl picks its minor version from this.
pub const KUBERNETES_MAJOR: &str = "1";
/// Minor version of the API level.
pub const KUBERNETES_MINOR: &str = "33";
/// The full version string reported as `gitVersion`, e.g. `v1.33.0+rkube0.1.0`.
pub fn git_version() -> String {
    format!("v{KUBERNETES_MAJOR}.{KUBERNETES_MINOR}.0+rkube{}", env!("CARGO_PKG_VERSION"))
}

/// The body of `GET /version`, with upstream's JSON field names.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Info {
    pub major: String,
    pub minor: String,
    pub git_version: String,
    pub git_commit: String,
    pub git_tree_state: String,
    pub build_date: String,
    pub go_version: String,
    pub compiler: String,
    pub platform: String,
}

impl Info {
    /// The version of this build. `goVersion` carries the Rust toolchain
    /// marker since there is no Go; `compiler` is `rustc`.
    pub fn current() -> Self {
        Info {
            major: KUBERNETES_MAJOR.into(),
            minor: KUBERNETES_MINOR.into(),
            git_version: git_version(),
            git_commit: option_env!("RKUBE_GIT_COMMIT").unwrap_or("").into(),
            git_tree_state: "".into(),
            build_date: option_env!("RKUBE_BUILD_DATE").unwrap_or("").into(),
            go_version: "none (rust)".into(),
            compiler: "rustc".into(),
            platform: format!("{}/{}", std::env::consts::OS, go_arch(std::env::consts::ARCH)),
        }
    }
}

/// Maps Rust's architecture names to Go's (`GOARCH`), which clients expect.
pub fn go_arch(rust_arch: &str) -> &str {
    match rust_arch {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "386",
        "powerpc64" => "ppc64le",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_reports_api_level_1_33_with_upstream_field_names() {
        let v = serde_json::to_value(Info::current()).unwrap();
        assert_eq!(v["major"], "1");
        assert_eq!(v["minor"], "33");
        assert!(v["gitVersion"].as_str().unwrap().starts_with("v1.33."));
        assert!(v.get("goVersion").is_some() && v.get("platform").is_some());
    }

    #[test]
    fn architectures_use_go_names() {
        assert_eq!(go_arch("x86_64"), "amd64");
        assert_eq!(go_arch("aarch64"), "arm64");
    }
}
