//! Value transformers: the bytes of an object turned into the bytes at rest
//! and back, in upstream's formats (`k8s.io/apiserver/pkg/storage/value`
//! and `.../value/encrypt/{aes,secretbox,identity}`), so that a store
//! written by kube-apiserver reads here and the other way round.
//!
//! - `aescbc`: AES-CBC with PKCS#7 padding, a random 16-byte IV before the
//!   ciphertext; the authenticated data is not used.
//! - `aesgcm`: AES-GCM with a random 12-byte nonce before the ciphertext
//!   and its 16-byte tag; the authenticated data is the storage key.
//! - `secretbox`: NaCl secretbox (XSalsa20-Poly1305) with a random 24-byte
//!   nonce before the box (the Poly1305 tag, then the ciphertext).
//! - `identity`: the bytes unchanged, refusing to read bytes that carry the
//!   reserved `k8s:enc:` prefix.
//!
//! [`PrefixTransformers`] chooses by prefix, as upstream's
//! `NewPrefixTransformers`: writes use the first, reads try every one whose
//! prefix the data starts with; a read by any but the first is *stale* (the
//! value should be rewritten with the current first transformer).

use aes_gcm::aead::{Aead, KeyInit, Payload};
use cbc::cipher::{BlockDecryptMut, BlockEncryptMut, KeyIvInit};
use ring::rand::{SecureRandom, SystemRandom};

/// The prefix reserved for encrypted data at rest (upstream's identity
/// transformer refuses to read data that starts with it).
pub const ENCRYPTED_PREFIX: &[u8] = b"k8s:enc:";

/// A failed transformation; the message is upstream's where it has one.
pub type TransformError = String;

/// One way of turning an object's bytes into bytes at rest and back.
// `from_storage`/`to_storage` are upstream's TransformFromStorage/ToStorage.
#[allow(clippy::wrong_self_convention)]
pub trait Transformer: Send + Sync {
    /// Recovers the original bytes of `data` (without its prefix);
    /// `context` is the storage key (authenticated data for AES-GCM).
    /// Returns the bytes and whether they are stale (read with a key or
    /// provider other than the one writes use).
    fn from_storage(&self, data: &[u8], context: &[u8]) -> Result<(Vec<u8>, bool), TransformError>;
    /// The bytes to store for `data` (without the caller's prefix).
    fn to_storage(&self, data: &[u8], context: &[u8]) -> Result<Vec<u8>, TransformError>;
}

fn random(buf: &mut [u8]) -> Result<(), TransformError> {
    SystemRandom::new().fill(buf).map_err(|_| "unable to read sufficient random bytes".to_string())
}

/// An AES key of one of the three sizes AES takes (16, 24 or 32 bytes).
#[derive(Clone)]
enum AesKey {
    A128([u8; 16]),
    A192([u8; 24]),
    A256([u8; 32]),
}

impl AesKey {
    fn new(key: &[u8]) -> Result<AesKey, TransformError> {
        Ok(match key.len() {
            16 => AesKey::A128(key.try_into().expect("length checked")),
            24 => AesKey::A192(key.try_into().expect("length checked")),
            32 => AesKey::A256(key.try_into().expect("length checked")),
            n => return Err(format!("crypto/aes: invalid key size {n}")),
        })
    }
}

/// AES-CBC with PKCS#7 padding and the IV prepended (upstream's `cbc`).
pub struct AesCbc(AesKey);

impl AesCbc {
    /// A transformer with `key` (16, 24 or 32 bytes).
    pub fn new(key: &[u8]) -> Result<AesCbc, TransformError> {
        AesKey::new(key).map(AesCbc)
    }
}

const AES_BLOCK: usize = 16;

macro_rules! cbc_encrypt {
    ($aes:ty, $key:expr, $iv:expr, $buf:expr) => {{
        let mut enc = cbc::Encryptor::<$aes>::new($key.into(), $iv.into());
        for block in $buf.chunks_exact_mut(AES_BLOCK) {
            enc.encrypt_block_mut(block.into());
        }
    }};
}

macro_rules! cbc_decrypt {
    ($aes:ty, $key:expr, $iv:expr, $buf:expr) => {{
        let mut dec = cbc::Decryptor::<$aes>::new($key.into(), $iv.into());
        for block in $buf.chunks_exact_mut(AES_BLOCK) {
            dec.decrypt_block_mut(block.into());
        }
    }};
}

impl Transformer for AesCbc {
    fn from_storage(&self, data: &[u8], _context: &[u8]) -> Result<(Vec<u8>, bool), TransformError> {
        if data.len() < AES_BLOCK {
            return Err("the stored data was shorter than the required size".into());
        }
        let (iv, data) = data.split_at(AES_BLOCK);
        if data.len() % AES_BLOCK != 0 {
            return Err("the stored data is not a multiple of the block size".into());
        }
        let mut out = data.to_vec();
        match &self.0 {
            AesKey::A128(k) => cbc_decrypt!(aes::Aes128, k, iv, out),
            AesKey::A192(k) => cbc_decrypt!(aes::Aes192, k, iv, out),
            AesKey::A256(k) => cbc_decrypt!(aes::Aes256, k, iv, out),
        }
        // Upstream's PKCS#7 check: the last byte names the padding length,
        // every padding byte must equal it.
        let pad = out.last().copied().unwrap_or(0) as usize;
        if pad == 0 || pad > out.len() {
            return Err("invalid PKCS7 data (empty or not padded)".into());
        }
        let size = out.len() - pad;
        if out[size..].iter().any(|&b| b as usize != pad) {
            return Err("invalid padding on input".into());
        }
        out.truncate(size);
        Ok((out, false))
    }

    fn to_storage(&self, data: &[u8], _context: &[u8]) -> Result<Vec<u8>, TransformError> {
        let pad = AES_BLOCK - data.len() % AES_BLOCK;
        let mut out = vec![0u8; AES_BLOCK + data.len() + pad];
        random(&mut out[..AES_BLOCK])?;
        out[AES_BLOCK..AES_BLOCK + data.len()].copy_from_slice(data);
        out[AES_BLOCK + data.len()..].fill(pad as u8);
        let (iv, body) = out.split_at_mut(AES_BLOCK);
        let iv: &[u8] = iv;
        match &self.0 {
            AesKey::A128(k) => cbc_encrypt!(aes::Aes128, k, iv, body),
            AesKey::A192(k) => cbc_encrypt!(aes::Aes192, k, iv, body),
            AesKey::A256(k) => cbc_encrypt!(aes::Aes256, k, iv, body),
        }
        Ok(out)
    }
}

/// AES-GCM with a random 12-byte nonce prepended and the storage key as
/// authenticated data (upstream's `NewGCMTransformer`).
pub struct AesGcm(AesKey);

impl AesGcm {
    /// A transformer with `key` (16, 24 or 32 bytes).
    pub fn new(key: &[u8]) -> Result<AesGcm, TransformError> {
        AesKey::new(key).map(AesGcm)
    }
}

const GCM_NONCE: usize = 12;
type Aes192Gcm = aes_gcm::AesGcm<aes::Aes192, aes_gcm::aead::consts::U12>;

macro_rules! with_gcm {
    ($key:expr, $c:ident => $body:expr) => {
        match $key {
            AesKey::A128(k) => {
                let $c = aes_gcm::Aes128Gcm::new(k.into());
                $body
            }
            AesKey::A192(k) => {
                let $c = Aes192Gcm::new(k.into());
                $body
            }
            AesKey::A256(k) => {
                let $c = aes_gcm::Aes256Gcm::new(k.into());
                $body
            }
        }
    };
}

impl Transformer for AesGcm {
    fn from_storage(&self, data: &[u8], context: &[u8]) -> Result<(Vec<u8>, bool), TransformError> {
        if data.len() < GCM_NONCE {
            return Err("the stored data was shorter than the required size".into());
        }
        let (nonce, sealed) = data.split_at(GCM_NONCE);
        let payload = Payload { msg: sealed, aad: context };
        let out = with_gcm!(&self.0, c => c.decrypt(nonce.into(), payload));
        // Go's crypto/cipher error for a failed open.
        out.map(|o| (o, false)).map_err(|_| "cipher: message authentication failed".to_string())
    }

    fn to_storage(&self, data: &[u8], context: &[u8]) -> Result<Vec<u8>, TransformError> {
        let mut nonce = [0u8; GCM_NONCE];
        random(&mut nonce).map_err(|e| format!("failed to write nonce for AES-GCM: {e}"))?;
        let payload = Payload { msg: data, aad: context };
        let sealed = with_gcm!(&self.0, c => c.encrypt((&nonce).into(), payload))
            .map_err(|_| "AES-GCM encryption failed".to_string())?;
        let mut out = Vec::with_capacity(GCM_NONCE + sealed.len());
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&sealed);
        Ok(out)
    }
}

/// NaCl secretbox (XSalsa20-Poly1305) with a random 24-byte nonce
/// prepended (upstream's `secretbox` transformer; no authenticated data).
pub struct Secretbox(crypto_secretbox::XSalsa20Poly1305);

const SECRETBOX_NONCE: usize = 24;
const SECRETBOX_OVERHEAD: usize = 16;

impl Secretbox {
    /// A transformer with a 32-byte `key`.
    pub fn new(key: &[u8; 32]) -> Secretbox {
        Secretbox(crypto_secretbox::XSalsa20Poly1305::new(key.into()))
    }
}

impl Transformer for Secretbox {
    fn from_storage(&self, data: &[u8], _context: &[u8]) -> Result<(Vec<u8>, bool), TransformError> {
        if data.len() < SECRETBOX_OVERHEAD + SECRETBOX_NONCE {
            return Err("the stored data was shorter than the required size".into());
        }
        let (nonce, sealed) = data.split_at(SECRETBOX_NONCE);
        // Upstream's words when the box does not open.
        self.0
            .decrypt(nonce.into(), sealed)
            .map(|o| (o, false))
            .map_err(|_| "output array was not large enough for encryption".to_string())
    }

    fn to_storage(&self, data: &[u8], _context: &[u8]) -> Result<Vec<u8>, TransformError> {
        let mut nonce = [0u8; SECRETBOX_NONCE];
        random(&mut nonce)?;
        let sealed = self.0.encrypt((&nonce).into(), data).map_err(|_| "secretbox encryption failed".to_string())?;
        let mut out = Vec::with_capacity(SECRETBOX_NONCE + sealed.len());
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&sealed);
        Ok(out)
    }
}

/// The bytes unchanged; refuses data with the reserved `k8s:enc:` prefix
/// (upstream's `NewEncryptCheckTransformer`).
pub struct Identity;

/// Upstream's error when identity meets encrypted data.
pub const IDENTITY_READ_ENCRYPTED: &str = "identity transformer tried to read encrypted data";

impl Transformer for Identity {
    fn from_storage(&self, data: &[u8], _context: &[u8]) -> Result<(Vec<u8>, bool), TransformError> {
        if data.starts_with(ENCRYPTED_PREFIX) {
            return Err(IDENTITY_READ_ENCRYPTED.into());
        }
        Ok((data.to_vec(), false))
    }

    fn to_storage(&self, data: &[u8], _context: &[u8]) -> Result<Vec<u8>, TransformError> {
        Ok(data.to_vec())
    }
}

/// Transformers chosen by prefix (upstream's `NewPrefixTransformers`):
/// used for the providers of a resource (prefixes `k8s:enc:aescbc:v1:`,
/// …, and the empty prefix of identity) and for the keys of one provider
/// (prefixes `<key name>:`).
pub struct PrefixTransformers {
    transformers: Vec<(Vec<u8>, Box<dyn Transformer>)>,
    /// The error when no prefix matches.
    none_matched: String,
}

impl PrefixTransformers {
    /// `transformers` in order (the first writes); `none_matched` is the
    /// error of data no prefix matches.
    pub fn new(transformers: Vec<(Vec<u8>, Box<dyn Transformer>)>, none_matched: &str) -> PrefixTransformers {
        PrefixTransformers { transformers, none_matched: none_matched.into() }
    }
}

impl Transformer for PrefixTransformers {
    fn from_storage(&self, data: &[u8], context: &[u8]) -> Result<(Vec<u8>, bool), TransformError> {
        let mut errs = Vec::new();
        for (i, (prefix, t)) in self.transformers.iter().enumerate() {
            if !data.starts_with(prefix) {
                continue;
            }
            match t.from_storage(&data[prefix.len()..], context) {
                Ok((out, stale)) => return Ok((out, stale || i != 0)),
                // An empty prefix (identity) that fails is no verdict: the
                // data was simply not meant for it.
                Err(_) if prefix.is_empty() => continue,
                Err(e) => errs.push(e),
            }
        }
        Err(match errs.len() {
            0 => self.none_matched.clone(),
            1 => errs.remove(0),
            // Go's aggregate error format.
            _ => format!("[{}]", errs.join(", ")),
        })
    }

    fn to_storage(&self, data: &[u8], context: &[u8]) -> Result<Vec<u8>, TransformError> {
        let (prefix, t) = self.transformers.first().ok_or_else(|| self.none_matched.clone())?;
        let sealed = t.to_storage(data, context)?;
        let mut out = Vec::with_capacity(prefix.len() + sealed.len());
        out.extend_from_slice(prefix);
        out.extend_from_slice(&sealed);
        Ok(out)
    }
}

#[cfg(test)]
#[path = "transformer_tests.rs"]
mod tests;
