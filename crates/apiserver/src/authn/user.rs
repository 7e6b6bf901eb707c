//! Who made a request: upstream's `user.Info` and the well-known names.

use std::collections::BTreeMap;

/// The group every authenticated user belongs to.
pub const AUTHENTICATED_GROUP: &str = "system:authenticated";
/// The group whose members bypass authorization and the in-flight limits
/// (upstream's `user.SystemPrivilegedGroup`).
pub const MASTERS_GROUP: &str = "system:masters";
/// The user name of unauthenticated requests.
pub const ANONYMOUS_USER: &str = "system:anonymous";
/// The group of unauthenticated requests.
pub const UNAUTHENTICATED_GROUP: &str = "system:unauthenticated";
/// The user extra naming the credential a request authenticated with
/// (upstream's `user.CredentialIDKey`).
pub const CREDENTIAL_ID_KEY: &str = "authentication.kubernetes.io/credential-id";

/// Who made a request (upstream's `user.Info`): the identity the
/// authenticator established, as the reviews report it and authorizers
/// consume it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UserInfo {
    /// The user name (`system:admin`, `system:serviceaccount:ns:name`).
    pub name: String,
    /// A unique id; empty for certificate users, as upstream.
    pub uid: String,
    /// Groups, in the authenticator's order, `system:authenticated` last.
    pub groups: Vec<String>,
    /// Extra attributes (e.g. `authentication.kubernetes.io/credential-id`).
    pub extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    /// The user a client certificate (DER) names: CN → name, every O →
    /// a group, then `system:authenticated`, and the credential id
    /// `X509SHA256=<hex SHA-256 of the DER>` as the extra
    /// `authentication.kubernetes.io/credential-id` (upstream's
    /// `CommonNameUserConversion`, 1.32+, plus its authenticated-group
    /// adder). `None` when the certificate does not parse. The chain is not
    /// verified here (see [`super::x509`]).
    pub fn from_certificate(der: &[u8]) -> Option<UserInfo> {
        let (_, cert) = x509_parser::parse_x509_certificate(der).ok()?;
        let subject = cert.subject();
        let name = subject.iter_common_name().next().and_then(|cn| cn.as_str().ok()).unwrap_or("").to_string();
        let mut groups: Vec<String> =
            subject.iter_organization().filter_map(|o| o.as_str().ok()).map(str::to_string).collect();
        add_authenticated_group(&mut groups);
        let digest = ring::digest::digest(&ring::digest::SHA256, der);
        let hex: String = digest.as_ref().iter().map(|b| format!("{b:02x}")).collect();
        let extra = BTreeMap::from([(CREDENTIAL_ID_KEY.to_string(), vec![format!("X509SHA256={hex}")])]);
        Some(UserInfo { name, uid: String::new(), groups, extra })
    }

    /// `system:anonymous` in `system:unauthenticated`: a request without
    /// credentials.
    pub fn anonymous() -> UserInfo {
        UserInfo { name: ANONYMOUS_USER.into(), groups: vec![UNAUTHENTICATED_GROUP.into()], ..UserInfo::default() }
    }

    /// Whether this is the anonymous user (by name or by the
    /// `system:unauthenticated` group).
    pub fn is_anonymous(&self) -> bool {
        self.name == ANONYMOUS_USER || self.groups.iter().any(|g| g == UNAUTHENTICATED_GROUP)
    }

    /// `{username, uid, groups, extra}` as authentication.k8s.io/v1
    /// `UserInfo` serializes it (every field omitted when empty).
    pub fn to_json(&self) -> serde_json::Value {
        let mut m = serde_json::Map::new();
        if !self.name.is_empty() {
            m.insert("username".into(), self.name.clone().into());
        }
        if !self.uid.is_empty() {
            m.insert("uid".into(), self.uid.clone().into());
        }
        if !self.groups.is_empty() {
            m.insert("groups".into(), self.groups.clone().into());
        }
        if !self.extra.is_empty() {
            m.insert("extra".into(), serde_json::json!(self.extra));
        }
        serde_json::Value::Object(m)
    }
}

/// Appends `system:authenticated` unless the user already is in it or in
/// `system:unauthenticated` (upstream's `AuthenticatedGroupAdder`).
pub fn add_authenticated_group(groups: &mut Vec<String>) {
    if !groups.iter().any(|g| g == AUTHENTICATED_GROUP || g == UNAUTHENTICATED_GROUP) {
        groups.push(AUTHENTICATED_GROUP.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::pki;

    #[test]
    fn the_admin_certificate_names_system_admin_in_system_masters() {
        let (_dir, pki) = pki();
        let (_, pem) = x509_parser::pem::parse_x509_pem(pki.admin.cert_pem.as_bytes()).unwrap();
        let user = UserInfo::from_certificate(&pem.contents).unwrap();
        assert_eq!(user.name, "system:admin");
        assert_eq!(user.groups, ["system:masters", "system:authenticated"]);
        assert_eq!(user.uid, "");
        let fingerprint = ring::digest::digest(&ring::digest::SHA256, &pem.contents);
        let hex: String = fingerprint.as_ref().iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex.len(), 64);
        assert_eq!(
            user.to_json(),
            serde_json::json!({"username": "system:admin", "groups": ["system:masters", "system:authenticated"],
                "extra": {"authentication.kubernetes.io/credential-id": [format!("X509SHA256={hex}")]}})
        );
        assert_eq!(UserInfo::from_certificate(b"not a certificate"), None);
        // The PKI's service-account key is the ES256 key tokens are signed with.
        let issuer =
            crate::serviceaccount::TokenIssuer::from_pkcs8_pem(&pki.service_account_key_pem, "https://i").unwrap();
        assert_eq!(issuer.issuer(), "https://i");
    }

    #[test]
    fn the_group_adder_leaves_unauthenticated_users_alone() {
        let mut groups = vec!["a".to_string()];
        add_authenticated_group(&mut groups);
        assert_eq!(groups, ["a", "system:authenticated"]);
        add_authenticated_group(&mut groups);
        assert_eq!(groups, ["a", "system:authenticated"]);
        let mut groups = vec![UNAUTHENTICATED_GROUP.to_string()];
        add_authenticated_group(&mut groups);
        assert_eq!(groups, [UNAUTHENTICATED_GROUP]);
        assert!(UserInfo::anonymous().is_anonymous());
    }
}
