//! The built-in resources of Kubernetes 1.33 (being filled in).

use super::ResourceInfo;

/// Every built-in resource, in discovery order.
pub fn builtin_resources() -> Vec<ResourceInfo> {
    Vec::new()
}
