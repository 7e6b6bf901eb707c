//! A small time-bounded cache of verified credentials, keyed by the
//! SHA-256 of the credential.
//!
//! Upstream caches successful token authentications for 10 s
//! (`--authentication-token-success-cache-ttl`-like `TokenSuccessCacheTTL`,
//! failures not at all) so that the per-request cost is a hash and a map
//! lookup. rkube caches the expensive, stable part — the signature and
//! chain checks — and never a failure; checks that depend on the cluster
//! state (bound objects, secrets) run on every request against the watch
//! cache, so a deleted binding revokes at once.

use std::collections::HashMap;
use std::sync::RwLock;
use std::time::{Duration, Instant};

/// How long a verified credential stays cached (upstream's token success
/// cache TTL).
pub const SUCCESS_TTL: Duration = Duration::from_secs(10);

/// The most entries kept; beyond it expired entries are dropped, and if
/// that is not enough the cache starts over (bounded memory under a flood
/// of distinct valid credentials).
const MAX_ENTRIES: usize = 8192;

/// A 32-byte digest of a credential.
pub type Key = [u8; 32];

/// The SHA-256 of `parts`, each length-prefixed (so that different splits
/// give different keys).
pub fn key(parts: &[&[u8]]) -> Key {
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
    for p in parts {
        ctx.update(&(p.len() as u64).to_be_bytes());
        ctx.update(p);
    }
    let mut out = [0u8; 32];
    out.copy_from_slice(ctx.finish().as_ref());
    out
}

/// Verified values by credential digest, each until its deadline.
pub struct TtlCache<V> {
    entries: RwLock<HashMap<Key, (Instant, V)>>,
}

impl<V> Default for TtlCache<V> {
    fn default() -> Self {
        TtlCache { entries: RwLock::new(HashMap::new()) }
    }
}

impl<V: Clone> TtlCache<V> {
    /// The value cached for `key`, unless expired.
    pub fn get(&self, key: &Key) -> Option<V> {
        let entries = self.entries.read().expect("authn cache lock");
        let (deadline, v) = entries.get(key)?;
        (Instant::now() < *deadline).then(|| v.clone())
    }

    /// Caches `value` for at most `ttl` (zero: not at all).
    pub fn insert(&self, key: Key, value: V, ttl: Duration) {
        if ttl.is_zero() {
            return;
        }
        let now = Instant::now();
        let mut entries = self.entries.write().expect("authn cache lock");
        if entries.len() >= MAX_ENTRIES {
            entries.retain(|_, (deadline, _)| *deadline > now);
            if entries.len() >= MAX_ENTRIES {
                entries.clear();
            }
        }
        entries.insert(key, (now + ttl, value));
    }

    /// The number of entries (expired ones included).
    pub fn len(&self) -> usize {
        self.entries.read().expect("authn cache lock").len()
    }

    /// Whether the cache holds nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_expire_and_zero_ttls_are_not_kept() {
        let cache = TtlCache::default();
        let k = key(&[b"token"]);
        assert_ne!(k, key(&[b"tok", b"en"]));
        cache.insert(k, 7, Duration::from_secs(60));
        assert_eq!(cache.get(&k), Some(7));
        cache.insert(k, 8, Duration::from_nanos(1));
        std::thread::sleep(Duration::from_millis(2));
        assert_eq!(cache.get(&k), None);
        let other = key(&[b"other"]);
        cache.insert(other, 9, Duration::ZERO);
        assert_eq!(cache.get(&other), None);
    }

    #[test]
    fn the_cache_stays_bounded() {
        let cache = TtlCache::default();
        for i in 0..(MAX_ENTRIES + 10) as u64 {
            cache.insert(key(&[&i.to_be_bytes()]), i, Duration::from_secs(60));
        }
        assert!(cache.len() <= MAX_ENTRIES);
    }
}
