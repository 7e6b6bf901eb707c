//! Storage keys: `/registry/<storage-resource>/<namespace>/<name>` for
//! namespaced objects, `/registry/<storage-resource>/<name>` for
//! cluster-scoped ones (upstream's `NamespaceKeyFunc` / `NoNamespaceKeyFunc`
//! under the `/registry` prefix).

/// The key layout of one resource.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Keys {
    /// `/registry/<storage-resource>/`.
    root: String,
    namespaced: bool,
}

impl Keys {
    /// Keys under `/registry/<storage_resource>/`.
    pub fn new(storage_resource: &str, namespaced: bool) -> Keys {
        Keys { root: format!("/registry/{storage_resource}/"), namespaced }
    }

    /// The key of one object (`namespace` is ignored for cluster-scoped
    /// resources).
    pub fn object(&self, namespace: &str, name: &str) -> String {
        if self.namespaced {
            format!("{}{namespace}/{name}", self.root)
        } else {
            format!("{}{name}", self.root)
        }
    }

    /// The prefix of a collection: one namespace's objects, or every object
    /// of the resource when `namespace` is empty or the resource is
    /// cluster-scoped.
    pub fn collection(&self, namespace: &str) -> String {
        if self.namespaced && !namespace.is_empty() {
            format!("{}{namespace}/", self.root)
        } else {
            self.root.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespaced_and_cluster_keys() {
        let pods = Keys::new("pods", true);
        assert_eq!(pods.object("default", "web"), "/registry/pods/default/web");
        assert_eq!(pods.collection("default"), "/registry/pods/default/");
        assert_eq!(pods.collection(""), "/registry/pods/");
        let nodes = Keys::new("minions", false);
        assert_eq!(nodes.object("ignored", "n1"), "/registry/minions/n1");
        assert_eq!(nodes.collection("x"), "/registry/minions/");
    }
}
