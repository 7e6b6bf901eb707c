//! Encryption at rest (`--encryption-provider-config`), as upstream's
//! `k8s.io/apiserver/pkg/server/options/encryptionconfig` and
//! `pkg/storage/value`:
//!
//! - [`config`]: the apiserver.config.k8s.io/v1 `EncryptionConfiguration`
//!   file — which resources (`secrets`, `configmaps`, `*.apps`, `*.`,
//!   `*.*`) use which providers, in order — validated with upstream's
//!   messages;
//! - [`transformer`]: the providers' byte formats (`aescbc`, `aesgcm`,
//!   `secretbox`, `identity`) behind upstream's prefixes
//!   `k8s:enc:<provider>:v1:<key name>:`;
//! - [`store`]: the store wrapper that applies them to every value of
//!   the configured resources, so that every reader of the store (the REST
//!   handlers, the watch cache, bootstrap) sees plaintext.
//!
//! Writes use the first provider (and its first key); reads try each
//! provider whose prefix the stored bytes carry, so keys rotate by
//! reordering: put the new key first, restart, rewrite the objects.
//! `kms` providers are refused at start.

pub mod config;
pub mod store;
pub mod transformer;

pub use config::EncryptionConfig;
pub use store::EncryptedStore;
