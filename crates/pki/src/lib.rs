//! The cluster's PKI: created at first start under `<data-dir>/server/tls/`,
//! reused at every later start, leaf certificates renewed before they expire.
//!
//! Layout (kubeadm's file names; directory mode 0700, private keys 0600,
//! certificates and the public key 0644):
//!
//! | file | what |
//! | --- | --- |
//! | `ca.crt`, `ca.key` | the cluster CA, self-signed, 10 years, CN `rkube-ca@<unix time>` |
//! | `apiserver.crt`, `apiserver.key` | API serving certificate, CN `kube-apiserver`, serverAuth, SANs from [`ServingNames`] |
//! | `admin.crt`, `admin.key` | admin client certificate, CN `system:admin`, O `system:masters`, clientAuth |
//! | `apiserver-kubelet-client.crt`, `.key` | the API server's client certificate towards kubelets, CN `kube-apiserver-kubelet-client`, O `system:masters` (as kubeadm) |
//! | `sa.key`, `sa.pub` | service-account token signing key pair (PKCS#8 / SPKI PEM) |
//!
//! All keys are ECDSA P-256. Leaf certificates last one year
//! ([`LEAF_VALIDITY`]) and are reissued with a fresh key when they are
//! missing, unreadable, not issued by the CA, for another subject, within
//! [`RENEW_BEFORE`] of expiry, or (serving certificate) when their SAN set
//! differs from the wanted one. The CA and the service-account keys are never
//! regenerated once they exist: a half-present CA is an error that tells the
//! operator how to recover.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, PublicKeyData, SanType, SerialNumber,
};
use time::{Duration, OffsetDateTime};
use x509_parser::certificate::X509Certificate;
use x509_parser::extensions::GeneralName;

mod fs;
pub mod jws;
pub mod kubeconfig;
mod san;

pub use fs::{ensure_private_dir, write_private_file, PRIVATE_DIR_MODE, PRIVATE_FILE_MODE, PUBLIC_FILE_MODE};
pub use kubeconfig::Kubeconfig;
pub use san::{San, ServingNames};

/// Lifetime of the cluster CA: 10 years, as kubeadm's and k3s's CAs.
pub const CA_VALIDITY: Duration = Duration::days(3650);
/// Lifetime of leaf certificates: 1 year, as kubeadm's.
pub const LEAF_VALIDITY: Duration = Duration::days(365);
/// A leaf certificate is reissued at start when it expires within this long
/// (k3s renews at 90 days too).
pub const RENEW_BEFORE: Duration = Duration::days(90);
/// Certificates are valid from this long before their issue time, so that
/// clients with slightly wrong clocks accept them.
const BACKDATE: Duration = Duration::minutes(5);

/// Common name of the API serving certificate (kubeadm's `kube-apiserver`).
pub const SERVING_COMMON_NAME: &str = "kube-apiserver";
/// User name of the admin client certificate.
pub const ADMIN_USER: &str = "system:admin";
/// The group whose members are cluster superusers (bound to `cluster-admin`).
pub const MASTERS_GROUP: &str = "system:masters";
/// Common name of the API server's client certificate towards kubelets
/// (kubeadm's `APIServerKubeletClientCertCommonName`).
pub const KUBELET_CLIENT_COMMON_NAME: &str = "kube-apiserver-kubelet-client";

/// Errors of the PKI. Each message says which file is concerned and what
/// the operator can do.
#[derive(Debug, thiserror::Error)]
pub enum PkiError {
    /// A file or directory could not be read or written.
    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        /// What was attempted, e.g. "write".
        action: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// Existing key material is incomplete or inconsistent and cannot be
    /// repaired without invalidating the cluster's identity.
    #[error("{0}")]
    Inconsistent(String),
    /// Key generation, signing or parsing failed.
    #[error("{what}: {source}")]
    Crypto {
        /// What was being done.
        what: String,
        /// The underlying error.
        source: rcgen::Error,
    },
}

impl PkiError {
    pub(crate) fn io(action: &'static str, path: &Path, source: std::io::Error) -> Self {
        PkiError::Io { action, path: path.to_path_buf(), source }
    }

    fn crypto(what: impl Into<String>) -> impl FnOnce(rcgen::Error) -> Self {
        let what = what.into();
        move |source| PkiError::Crypto { what, source }
    }
}

/// Paths of every file of the PKI, under one TLS directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PkiFiles {
    /// The directory (`<data-dir>/server/tls`), mode 0700.
    pub dir: PathBuf,
    /// `ca.crt`
    pub ca_cert: PathBuf,
    /// `ca.key`
    pub ca_key: PathBuf,
    /// `apiserver.crt`
    pub serving_cert: PathBuf,
    /// `apiserver.key`
    pub serving_key: PathBuf,
    /// `admin.crt`
    pub admin_cert: PathBuf,
    /// `admin.key`
    pub admin_key: PathBuf,
    /// `apiserver-kubelet-client.crt`
    pub kubelet_client_cert: PathBuf,
    /// `apiserver-kubelet-client.key`
    pub kubelet_client_key: PathBuf,
    /// `sa.key`
    pub service_account_key: PathBuf,
    /// `sa.pub`
    pub service_account_public_key: PathBuf,
}

impl PkiFiles {
    /// The file layout under `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        let dir = dir.into();
        let f = |name: &str| dir.join(name);
        PkiFiles {
            ca_cert: f("ca.crt"),
            ca_key: f("ca.key"),
            serving_cert: f("apiserver.crt"),
            serving_key: f("apiserver.key"),
            admin_cert: f("admin.crt"),
            admin_key: f("admin.key"),
            kubelet_client_cert: f("apiserver-kubelet-client.crt"),
            kubelet_client_key: f("apiserver-kubelet-client.key"),
            service_account_key: f("sa.key"),
            service_account_public_key: f("sa.pub"),
            dir,
        }
    }

    /// The TLS directory of a data dir: `<data_dir>/server/tls`.
    pub fn for_data_dir(data_dir: &Path) -> Self {
        Self::new(data_dir.join("server").join("tls"))
    }
}

/// What [`ClusterPki::ensure`] did with one item.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// It did not exist and was created.
    Created,
    /// It existed, was valid, and was kept as is.
    Reused,
    /// It existed but was replaced (or, for `sa.pub`, restored from the
    /// private key); the reason is in words.
    Reissued(String),
}

/// A certificate and its private key, both PEM.
#[derive(Clone, PartialEq, Eq)]
pub struct CertAndKey {
    /// The certificate (`-----BEGIN CERTIFICATE-----`).
    pub cert_pem: String,
    /// The PKCS#8 private key (`-----BEGIN PRIVATE KEY-----`).
    pub key_pem: String,
}

impl std::fmt::Debug for CertAndKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CertAndKey").field("cert_pem", &self.cert_pem).finish_non_exhaustive()
    }
}

/// The cluster's key material after [`ClusterPki::ensure`].
pub struct ClusterPki {
    /// Where everything lives.
    pub files: PkiFiles,
    /// The cluster CA, which signs every other certificate and verifies
    /// client certificates.
    pub ca: CertAndKey,
    /// The API serving certificate.
    pub serving: CertAndKey,
    /// The admin client certificate (`system:admin` in `system:masters`).
    pub admin: CertAndKey,
    /// The API server's client certificate for kubelets.
    pub kubelet_client: CertAndKey,
    /// Service-account token signing key (PKCS#8 PEM, ECDSA P-256 → ES256).
    pub service_account_key_pem: String,
    /// Its public key (SubjectPublicKeyInfo PEM), for token verification.
    pub service_account_public_key_pem: String,
    /// What happened to each item, keyed `ca`, `serving`, `admin`,
    /// `kubelet-client`, `service-account`.
    pub actions: BTreeMap<&'static str, Action>,
}

/// A leaf certificate to ensure.
struct LeafSpec<'a> {
    key: &'static str,
    what: &'static str,
    common_name: &'a str,
    organizations: &'a [&'a str],
    usage: ExtendedKeyUsagePurpose,
    sans: Option<&'a BTreeSet<San>>,
    cert_path: &'a Path,
    key_path: &'a Path,
}

impl ClusterPki {
    /// Ensures the PKI in `files.dir` for the current time. See
    /// [`ClusterPki::ensure_at`].
    pub fn ensure(files: &PkiFiles, serving_names: &ServingNames) -> Result<Self, PkiError> {
        Self::ensure_at(files, serving_names, OffsetDateTime::now_utc())
    }

    /// Creates what is missing and reuses what exists, as if the time were
    /// `now` (tests inject a future time to exercise renewal). Logs one line
    /// per item (component `pki`) saying whether it was created, reused or
    /// reissued, and why.
    ///
    /// Errors: I/O failures; a CA certificate without its key (or the
    /// reverse) or a key that does not match; `sa.pub` without `sa.key`.
    pub fn ensure_at(files: &PkiFiles, serving_names: &ServingNames, now: OffsetDateTime) -> Result<Self, PkiError> {
        fs::ensure_private_dir(&files.dir)?;
        let mut actions = BTreeMap::new();

        let (ca, action) = ensure_ca(files, now)?;
        actions.insert("ca", action);
        let ca_key = KeyPair::from_pem(&ca.key_pem).map_err(PkiError::crypto("cannot load the CA key"))?;
        let issuer = Issuer::from_ca_cert_pem(&ca.cert_pem, &ca_key)
            .map_err(PkiError::crypto("cannot load the CA certificate"))?;
        let ca_der = pem_to_der(&ca.cert_pem).map_err(PkiError::Inconsistent)?;

        let wanted_sans = serving_names.sans();
        let leaves = [
            LeafSpec {
                key: "serving",
                what: "API serving certificate",
                common_name: SERVING_COMMON_NAME,
                organizations: &[],
                usage: ExtendedKeyUsagePurpose::ServerAuth,
                sans: Some(&wanted_sans),
                cert_path: &files.serving_cert,
                key_path: &files.serving_key,
            },
            LeafSpec {
                key: "admin",
                what: "admin client certificate",
                common_name: ADMIN_USER,
                organizations: &[MASTERS_GROUP],
                usage: ExtendedKeyUsagePurpose::ClientAuth,
                sans: None,
                cert_path: &files.admin_cert,
                key_path: &files.admin_key,
            },
            LeafSpec {
                key: "kubelet-client",
                what: "API server's kubelet client certificate",
                common_name: KUBELET_CLIENT_COMMON_NAME,
                organizations: &[MASTERS_GROUP],
                usage: ExtendedKeyUsagePurpose::ClientAuth,
                sans: None,
                cert_path: &files.kubelet_client_cert,
                key_path: &files.kubelet_client_key,
            },
        ];
        let mut issued = Vec::new();
        for spec in &leaves {
            let (pair, action) = ensure_leaf(spec, &issuer, &ca_der, now)?;
            actions.insert(spec.key, action);
            issued.push(pair);
        }
        let mut issued = issued.into_iter();
        let (serving, admin, kubelet_client) = (issued.next().unwrap(), issued.next().unwrap(), issued.next().unwrap());

        let (sa_key, sa_pub, action) = ensure_service_account_keys(files)?;
        actions.insert("service-account", action);

        Ok(ClusterPki {
            files: files.clone(),
            ca,
            serving,
            admin,
            kubelet_client,
            service_account_key_pem: sa_key,
            service_account_public_key_pem: sa_pub,
            actions,
        })
    }

    /// `sha256:<hex>` of the CA certificate's SubjectPublicKeyInfo, as
    /// kubeadm's `--discovery-token-ca-cert-hash`.
    pub fn ca_cert_hash(&self) -> String {
        ca_cert_hash(&self.ca.cert_pem).expect("the CA certificate was parsed when it was loaded")
    }

    /// The admin kubeconfig for `server` (e.g. `https://127.0.0.1:6443`):
    /// cluster `rkube`, user `admin`, context `rkube`, CA and client
    /// credentials embedded.
    pub fn admin_kubeconfig(&self, server: &str) -> Kubeconfig {
        Kubeconfig {
            cluster_name: "rkube".into(),
            server: server.into(),
            ca_pem: self.ca.cert_pem.clone(),
            user_name: "admin".into(),
            client_cert_pem: self.admin.cert_pem.clone(),
            client_key_pem: self.admin.key_pem.clone(),
            context_name: "rkube".into(),
        }
    }
}

/// A new client certificate signed by the CA `ca` for the user
/// `common_name` in the group `organization` if any (upstream's x509
/// authentication maps CN to the user name and each O to a group), with a
/// fresh key, valid for a year. Nothing is written to disk. One group at
/// most: rcgen keeps a single value per subject attribute type.
///
/// Errors: the CA material does not load, or signing fails.
pub fn issue_client_certificate(
    ca: &CertAndKey,
    common_name: &str,
    organization: Option<&str>,
) -> Result<CertAndKey, PkiError> {
    let ca_key = KeyPair::from_pem(&ca.key_pem).map_err(PkiError::crypto("cannot load the CA key"))?;
    let issuer =
        Issuer::from_ca_cert_pem(&ca.cert_pem, &ca_key).map_err(PkiError::crypto("cannot load the CA certificate"))?;
    let usage = ExtendedKeyUsagePurpose::ClientAuth;
    let organizations: Vec<&str> = organization.into_iter().collect();
    sign_leaf("client certificate", common_name, &organizations, &usage, None, &issuer, OffsetDateTime::now_utc())
}

/// `sha256:<hex>` of a PEM certificate's SubjectPublicKeyInfo (DER), the
/// format of kubeadm's `--discovery-token-ca-cert-hash`.
///
/// Errors when `cert_pem` is not a PEM X.509 certificate.
pub fn ca_cert_hash(cert_pem: &str) -> Result<String, PkiError> {
    let der = pem_to_der(cert_pem).map_err(PkiError::Inconsistent)?;
    let cert = parse_der(&der).map_err(PkiError::Inconsistent)?;
    let digest = ring::digest::digest(&ring::digest::SHA256, cert.public_key().raw);
    let hex: String = digest.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    Ok(format!("sha256:{hex}"))
}

fn ensure_ca(files: &PkiFiles, now: OffsetDateTime) -> Result<(CertAndKey, Action), PkiError> {
    let cert = fs::read_optional(&files.ca_cert)?;
    let key = fs::read_optional(&files.ca_key)?;
    let recover = "restore the matching ca.crt/ca.key pair from a backup; only if this cluster is to be \
                   rebuilt from scratch, delete the whole TLS directory (every certificate and kubeconfig \
                   issued so far stops working)";
    match (cert, key) {
        (Some(cert_pem), Some(key_pem)) => {
            let der = pem_to_der(&cert_pem)
                .map_err(|e| PkiError::Inconsistent(format!("{}: {e}; {recover}", files.ca_cert.display())))?;
            let cert = parse_der(&der)
                .map_err(|e| PkiError::Inconsistent(format!("{}: {e}; {recover}", files.ca_cert.display())))?;
            let key = KeyPair::from_pem(&key_pem).map_err(|e| {
                PkiError::Inconsistent(format!(
                    "{} is not a usable private key ({e}); {recover}",
                    files.ca_key.display()
                ))
            })?;
            if key.subject_public_key_info() != cert.public_key().raw {
                return Err(PkiError::Inconsistent(format!(
                    "{} does not belong to {}; {recover}",
                    files.ca_key.display(),
                    files.ca_cert.display()
                )));
            }
            fs::restrict_private_file(&files.ca_key)?;
            let not_after = cert.validity().not_after.timestamp();
            let subject = cert.subject().to_string();
            if not_after <= now.unix_timestamp() {
                tracing::error!(component = "pki", path = %files.ca_cert.display(), subject, "the cluster CA has EXPIRED: clients will reject the API server; the CA is never regenerated automatically, rotate it by hand");
            } else if not_after - now.unix_timestamp() < Duration::days(365).whole_seconds() {
                tracing::warn!(component = "pki", path = %files.ca_cert.display(), subject, expires = %fmt_time(not_after), "the cluster CA expires within a year; it is never regenerated automatically, plan a rotation");
            }
            tracing::info!(component = "pki", path = %files.ca_cert.display(), subject, "reused the cluster CA");
            Ok((CertAndKey { cert_pem, key_pem }, Action::Reused))
        }
        (None, None) => {
            let key = KeyPair::generate().map_err(PkiError::crypto("cannot generate the CA key"))?;
            let mut params = CertificateParams::default();
            params.not_before = now - BACKDATE;
            params.not_after = now + CA_VALIDITY;
            params.serial_number = Some(random_serial()?);
            let mut dn = DistinguishedName::new();
            let common_name = format!("rkube-ca@{}", now.unix_timestamp());
            dn.push(DnType::CommonName, common_name.clone());
            params.distinguished_name = dn;
            params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
            params.key_usages =
                vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
            let cert = params.self_signed(&key).map_err(PkiError::crypto("cannot sign the CA certificate"))?;
            let pair = CertAndKey { cert_pem: cert.pem(), key_pem: key.serialize_pem() };
            fs::write_atomic(&files.ca_key, pair.key_pem.as_bytes(), PRIVATE_FILE_MODE)?;
            fs::write_atomic(&files.ca_cert, pair.cert_pem.as_bytes(), PUBLIC_FILE_MODE)?;
            tracing::info!(component = "pki", path = %files.ca_cert.display(), common_name, "created the cluster CA (valid 10 years)");
            Ok((pair, Action::Created))
        }
        (Some(_), None) => Err(PkiError::Inconsistent(format!(
            "found {} but not its private key {}: the CA cannot sign certificates without it; {recover}",
            files.ca_cert.display(),
            files.ca_key.display()
        ))),
        (None, Some(_)) => Err(PkiError::Inconsistent(format!(
            "found {} but not the CA certificate {}; {recover}",
            files.ca_key.display(),
            files.ca_cert.display()
        ))),
    }
}

fn ensure_leaf(
    spec: &LeafSpec<'_>,
    issuer: &Issuer<'_, &KeyPair>,
    ca_der: &[u8],
    now: OffsetDateTime,
) -> Result<(CertAndKey, Action), PkiError> {
    let cert = fs::read_optional(spec.cert_path)?;
    let key = fs::read_optional(spec.key_path)?;
    let reason = match (cert, key) {
        (Some(cert_pem), Some(key_pem)) => match check_leaf(spec, &cert_pem, &key_pem, ca_der, now) {
            Ok(not_after) => {
                fs::restrict_private_file(spec.key_path)?;
                tracing::info!(component = "pki", path = %spec.cert_path.display(), expires = %fmt_time(not_after), "reused the {}", spec.what);
                return Ok((CertAndKey { cert_pem, key_pem }, Action::Reused));
            }
            Err(reason) => Some(reason),
        },
        (None, None) => None,
        (Some(_), None) => Some(format!("its private key {} is missing", spec.key_path.display())),
        (None, Some(_)) => Some(format!("the certificate file {} is missing", spec.cert_path.display())),
    };

    let pair = sign_leaf(spec.what, spec.common_name, spec.organizations, &spec.usage, spec.sans, issuer, now)?;
    fs::write_atomic(spec.key_path, pair.key_pem.as_bytes(), PRIVATE_FILE_MODE)?;
    fs::write_atomic(spec.cert_path, pair.cert_pem.as_bytes(), PUBLIC_FILE_MODE)?;
    let expires = fmt_time((now + LEAF_VALIDITY).unix_timestamp());
    let action = match reason {
        None => {
            tracing::info!(component = "pki", path = %spec.cert_path.display(), %expires, "created the {}", spec.what);
            Action::Created
        }
        Some(reason) => {
            tracing::info!(component = "pki", path = %spec.cert_path.display(), %expires, "reissued the {} because {reason}", spec.what);
            Action::Reissued(reason)
        }
    };
    if let Some(sans) = spec.sans {
        let list: Vec<String> = sans.iter().map(ToString::to_string).collect();
        tracing::debug!(component = "pki", sans = %list.join(","), "serving certificate names");
    }
    Ok((pair, action))
}

/// A fresh key and a leaf certificate for it signed by `issuer`, valid
/// from `now` (backdated) for [`LEAF_VALIDITY`]: subject O = each of
/// `organizations`, CN = `common_name`, the one extended key usage, and the
/// SANs if given. `what` names the certificate in errors.
fn sign_leaf(
    what: &str,
    common_name: &str,
    organizations: &[&str],
    usage: &ExtendedKeyUsagePurpose,
    sans: Option<&BTreeSet<San>>,
    issuer: &Issuer<'_, &KeyPair>,
    now: OffsetDateTime,
) -> Result<CertAndKey, PkiError> {
    let key = KeyPair::generate().map_err(PkiError::crypto(format!("cannot generate a key for the {}", what)))?;
    let mut params = CertificateParams::default();
    params.not_before = now - BACKDATE;
    params.not_after = now + LEAF_VALIDITY;
    params.serial_number = Some(random_serial()?);
    let mut dn = DistinguishedName::new();
    for o in organizations {
        dn.push(DnType::OrganizationName, *o);
    }
    dn.push(DnType::CommonName, common_name);
    params.distinguished_name = dn;
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![usage.clone()];
    params.use_authority_key_identifier_extension = true;
    if let Some(sans) = sans {
        params.subject_alt_names = sans
            .iter()
            .map(|san| match san {
                San::Ip(ip) => Ok(SanType::IpAddress(*ip)),
                San::Dns(name) => name
                    .clone()
                    .try_into()
                    .map(SanType::DnsName)
                    .map_err(PkiError::crypto(format!("invalid DNS name {name:?} for the {}", what))),
            })
            .collect::<Result<_, _>>()?;
    }
    let cert = params.signed_by(&key, issuer).map_err(PkiError::crypto(format!("cannot sign the {}", what)))?;
    Ok(CertAndKey { cert_pem: cert.pem(), key_pem: key.serialize_pem() })
}

/// Checks an existing leaf; `Ok(not_after)` when it can be kept, otherwise
/// the reason to reissue it.
fn check_leaf(
    spec: &LeafSpec<'_>,
    cert_pem: &str,
    key_pem: &str,
    ca_der: &[u8],
    now: OffsetDateTime,
) -> Result<i64, String> {
    let der = pem_to_der(cert_pem)?;
    let cert = parse_der(&der)?;
    let key = KeyPair::from_pem(key_pem).map_err(|e| format!("its private key cannot be read ({e})"))?;
    if key.subject_public_key_info() != cert.public_key().raw {
        return Err("its private key does not match the certificate".into());
    }
    let ca = parse_der(ca_der)?;
    if cert.issuer() != ca.subject() || cert.verify_signature(Some(ca.public_key())).is_err() {
        return Err("it was not issued by the current cluster CA".into());
    }
    let common_names: Vec<&str> = cert.subject().iter_common_name().filter_map(|a| a.as_str().ok()).collect();
    let mut orgs: Vec<&str> = cert.subject().iter_organization().filter_map(|a| a.as_str().ok()).collect();
    let mut want_orgs = spec.organizations.to_vec();
    orgs.sort_unstable();
    want_orgs.sort_unstable();
    if common_names != [spec.common_name] || orgs != want_orgs {
        return Err(format!(
            "its subject is {} instead of CN={} O={}",
            cert.subject(),
            spec.common_name,
            want_orgs.join(",")
        ));
    }
    let eku_ok = match cert.extended_key_usage() {
        Ok(Some(eku)) => match spec.usage {
            ExtendedKeyUsagePurpose::ServerAuth => eku.value.server_auth,
            ExtendedKeyUsagePurpose::ClientAuth => eku.value.client_auth,
            _ => false,
        },
        _ => false,
    };
    if !eku_ok {
        return Err("it lacks the required extended key usage".into());
    }
    let not_after = cert.validity().not_after.timestamp();
    if not_after <= now.unix_timestamp() {
        return Err(format!("it expired at {}", fmt_time(not_after)));
    }
    if not_after - now.unix_timestamp() < RENEW_BEFORE.whole_seconds() {
        return Err(format!("it expires at {}, within 90 days", fmt_time(not_after)));
    }
    if let Some(wanted) = spec.sans {
        let found = cert_sans(&cert)?;
        if &found != wanted {
            let added: Vec<String> = wanted.difference(&found).map(ToString::to_string).collect();
            let removed: Vec<String> = found.difference(wanted).map(ToString::to_string).collect();
            return Err(format!(
                "its names changed (adding [{}], removing [{}])",
                added.join(", "),
                removed.join(", ")
            ));
        }
    }
    Ok(not_after)
}

/// The SANs of a certificate; errors on name types rkube never issues.
fn cert_sans(cert: &X509Certificate<'_>) -> Result<BTreeSet<San>, String> {
    let mut out = BTreeSet::new();
    let ext = cert.subject_alternative_name().map_err(|e| format!("its SAN extension is malformed ({e})"))?;
    for name in ext.map(|e| e.value.general_names.iter().collect::<Vec<_>>()).unwrap_or_default() {
        match name {
            GeneralName::DNSName(n) => {
                out.insert(San::Dns(n.to_ascii_lowercase()));
            }
            GeneralName::IPAddress(bytes) => {
                let ip = match bytes.len() {
                    4 => IpAddr::from(<[u8; 4]>::try_from(*bytes).unwrap()),
                    16 => IpAddr::from(<[u8; 16]>::try_from(*bytes).unwrap()),
                    _ => return Err("it has a malformed IP address SAN".into()),
                };
                out.insert(San::Ip(ip));
            }
            other => return Err(format!("it has an unexpected SAN {other:?}")),
        }
    }
    Ok(out)
}

fn ensure_service_account_keys(files: &PkiFiles) -> Result<(String, String, Action), PkiError> {
    let key_pem = fs::read_optional(&files.service_account_key)?;
    let pub_pem = fs::read_optional(&files.service_account_public_key)?;
    match key_pem {
        Some(key_pem) => {
            let key = KeyPair::from_pem(&key_pem).map_err(|e| {
                PkiError::Inconsistent(format!(
                    "{} is not a usable private key ({e}); restore it from a backup (replacing it invalidates every service-account token)",
                    files.service_account_key.display()
                ))
            })?;
            fs::restrict_private_file(&files.service_account_key)?;
            let derived = key.public_key_pem();
            match pub_pem {
                Some(p) if p == derived => {
                    tracing::info!(component = "pki", path = %files.service_account_key.display(), "reused the service-account signing key");
                    Ok((key_pem, derived, Action::Reused))
                }
                existing => {
                    let reason = if existing.is_some() {
                        "sa.pub did not match sa.key; rewrote it from sa.key"
                    } else {
                        "sa.pub was missing; restored it from sa.key"
                    };
                    fs::write_atomic(&files.service_account_public_key, derived.as_bytes(), PUBLIC_FILE_MODE)?;
                    tracing::warn!(component = "pki", path = %files.service_account_public_key.display(), "{reason}");
                    Ok((key_pem, derived, Action::Reissued(reason.into())))
                }
            }
        }
        None if pub_pem.is_some() => Err(PkiError::Inconsistent(format!(
            "found {} but not the service-account signing key {}: restore sa.key from a backup, or delete sa.pub to \
             create a new key pair (every existing service-account token then stops working)",
            files.service_account_public_key.display(),
            files.service_account_key.display()
        ))),
        None => {
            let key = KeyPair::generate().map_err(PkiError::crypto("cannot generate the service-account key"))?;
            let (key_pem, pub_pem) = (key.serialize_pem(), key.public_key_pem());
            fs::write_atomic(&files.service_account_key, key_pem.as_bytes(), PRIVATE_FILE_MODE)?;
            fs::write_atomic(&files.service_account_public_key, pub_pem.as_bytes(), PUBLIC_FILE_MODE)?;
            tracing::info!(component = "pki", path = %files.service_account_key.display(), "created the service-account signing key pair");
            Ok((key_pem, pub_pem, Action::Created))
        }
    }
}

/// A random, positive 128-bit serial number (RFC 5280 allows up to 20 octets).
fn random_serial() -> Result<SerialNumber, PkiError> {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 16];
    ring::rand::SystemRandom::new().fill(&mut bytes).map_err(|_| PkiError::Crypto {
        what: "cannot read random bytes for a serial number".into(),
        source: rcgen::Error::RingUnspecified,
    })?;
    bytes[0] = (bytes[0] & 0x7f) | 0x40;
    Ok(SerialNumber::from_slice(&bytes))
}

fn pem_to_der(pem: &str) -> Result<Vec<u8>, String> {
    let (_, pem) =
        x509_parser::pem::parse_x509_pem(pem.as_bytes()).map_err(|e| format!("it is not a PEM certificate ({e})"))?;
    if pem.label != "CERTIFICATE" {
        return Err(format!("it holds a PEM {:?} block instead of a CERTIFICATE", pem.label));
    }
    Ok(pem.contents)
}

fn parse_der(der: &[u8]) -> Result<X509Certificate<'_>, String> {
    x509_parser::parse_x509_certificate(der)
        .map(|(_, c)| c)
        .map_err(|e| format!("it is not a valid X.509 certificate ({e})"))
}

/// RFC 3339 UTC time of a Unix timestamp, for logs and messages.
fn fmt_time(unix: i64) -> String {
    match OffsetDateTime::from_unix_timestamp(unix) {
        Ok(t) => format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
            t.year(),
            u8::from(t.month()),
            t.day(),
            t.hour(),
            t.minute(),
            t.second()
        ),
        Err(_) => unix.to_string(),
    }
}

#[cfg(test)]
mod tests;
