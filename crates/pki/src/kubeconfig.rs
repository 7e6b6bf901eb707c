//! Client kubeconfig files (client-go's `clientcmd/api/v1` `Config`), with
//! the CA and the client credentials embedded.

use base64::Engine;

/// A kubeconfig with one cluster, one user authenticating with a client
/// certificate, and one context that is current.
#[derive(Clone, PartialEq, Eq)]
pub struct Kubeconfig {
    /// Name of the cluster entry, e.g. `rkube`.
    pub cluster_name: String,
    /// The API server URL, e.g. `https://127.0.0.1:6443`.
    pub server: String,
    /// The cluster CA certificate (PEM), embedded as `certificate-authority-data`.
    pub ca_pem: String,
    /// Name of the user entry, e.g. `admin`.
    pub user_name: String,
    /// Client certificate (PEM), embedded as `client-certificate-data`.
    pub client_cert_pem: String,
    /// Client private key (PEM), embedded as `client-key-data`.
    pub client_key_pem: String,
    /// Name of the context (cluster + user), made `current-context`.
    pub context_name: String,
}

impl std::fmt::Debug for Kubeconfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kubeconfig")
            .field("cluster_name", &self.cluster_name)
            .field("server", &self.server)
            .field("user_name", &self.user_name)
            .field("context_name", &self.context_name)
            .finish_non_exhaustive()
    }
}

impl Kubeconfig {
    /// Renders the kubeconfig as YAML in the layout `kubectl config view
    /// --raw` prints (`apiVersion: v1`, `kind: Config`, `clusters`,
    /// `contexts`, `current-context`, `preferences`, `users`). Names and the
    /// server URL are quoted as JSON strings (valid YAML double-quoted
    /// scalars) whenever they are not plain-safe.
    pub fn to_yaml(&self) -> String {
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s.as_bytes());
        format!(
            "apiVersion: v1\n\
             kind: Config\n\
             clusters:\n\
             - cluster:\n    certificate-authority-data: {ca}\n    server: {server}\n  name: {cluster}\n\
             contexts:\n\
             - context:\n    cluster: {cluster}\n    user: {user}\n  name: {context}\n\
             current-context: {context}\n\
             preferences: {{}}\n\
             users:\n\
             - name: {user}\n  user:\n    client-certificate-data: {cert}\n    client-key-data: {key}\n",
            ca = b64(&self.ca_pem),
            server = yaml_scalar(&self.server),
            cluster = yaml_scalar(&self.cluster_name),
            user = yaml_scalar(&self.user_name),
            context = yaml_scalar(&self.context_name),
            cert = b64(&self.client_cert_pem),
            key = b64(&self.client_key_pem),
        )
    }
}

/// A YAML scalar for `s`: plain when it only has characters that can never
/// change its meaning, otherwise a double-quoted scalar (JSON string syntax
/// is a subset of YAML's double-quoted style).
fn yaml_scalar(s: &str) -> String {
    let plain_safe = !s.is_empty()
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_./:@".contains(&b))
        && s.as_bytes()[0].is_ascii_alphabetic()
        && !s.contains(": ")
        && !matches!(
            s.to_ascii_lowercase().as_str(),
            "true" | "false" | "yes" | "no" | "on" | "off" | "null" | "y" | "n"
        );
    if plain_safe {
        s.to_string()
    } else {
        serde_json::to_string(s).expect("strings always serialize")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_embedded_credentials_and_current_context() {
        let k = Kubeconfig {
            cluster_name: "rkube".into(),
            server: "https://127.0.0.1:6443".into(),
            ca_pem: "CA".into(),
            user_name: "admin".into(),
            client_cert_pem: "CERT".into(),
            client_key_pem: "KEY".into(),
            context_name: "rkube".into(),
        };
        let y = k.to_yaml();
        assert!(y.starts_with("apiVersion: v1\nkind: Config\n"));
        assert!(y.contains("    certificate-authority-data: Q0E=\n    server: https://127.0.0.1:6443\n  name: rkube\n"));
        assert!(y.contains("current-context: rkube\n"));
        assert!(
            y.contains("- name: admin\n  user:\n    client-certificate-data: Q0VSVA==\n    client-key-data: S0VZ\n")
        );
    }

    #[test]
    fn unusual_names_are_quoted() {
        assert_eq!(yaml_scalar("https://[::1]:6443"), "\"https://[::1]:6443\"");
        assert_eq!(yaml_scalar("yes"), "\"yes\"");
        assert_eq!(yaml_scalar("my cluster"), "\"my cluster\"");
        assert_eq!(yaml_scalar("rkube"), "rkube");
    }
}
