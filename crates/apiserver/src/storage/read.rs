//! Get and list with upstream's resourceVersion semantics (etcd3 store).

use rkube_apimachinery::ApiError;
use rkube_store::RangeRequest;
use serde_json::Value;

use super::{continue_token, parse_resource_version, Predicate, ResourceStore};
use crate::cache::Freshness;

/// Upstream's message for a list at a compacted revision.
const LIST_TOO_OLD: &str = "The resourceVersion for the provided list is too old.";
/// Upstream's message for a continue token whose revision was compacted.
const CONTINUE_TOO_OLD: &str = "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.";

/// Options of a list (already validated by the REST layer).
#[derive(Clone, Debug, Default)]
pub struct ListOptions {
    /// Which objects to return.
    pub predicate: Predicate,
    /// At most this many items per page (`None`: all).
    pub limit: Option<i64>,
    /// A continue token from a previous page.
    pub continue_token: Option<String>,
    /// `resourceVersion` as sent (`""`, `"0"` or a revision).
    pub resource_version: String,
    /// `resourceVersionMatch` as sent (`""`, `Exact`, `NotOlderThan`).
    pub resource_version_match: String,
}

/// One page of a list.
#[derive(Clone, Debug, PartialEq)]
pub struct ListResult {
    /// The matching objects, in key order.
    pub items: Vec<Value>,
    /// The revision the list was read at (`metadata.resourceVersion`).
    pub revision: i64,
    /// The token for the next page, if any.
    pub continue_token: Option<String>,
    /// How many more objects follow (only when no selector filters).
    pub remaining_item_count: Option<i64>,
}

impl ResourceStore {
    /// Gets one object. `resource_version` `""`/`"0"` read the latest
    /// state; a revision newer than the store's is a 504 `Too large
    /// resource version` (upstream's NotOlderThan check).
    pub async fn get(&self, namespace: &str, name: &str, resource_version: &str) -> Result<Value, ApiError> {
        let min = parse_resource_version(resource_version)?;
        let key = self.keys.object(namespace, name);
        let resp = self.store.get(&key, None).await.map_err(|e| self.store_error(e, name))?;
        if min > resp.revision {
            return Err(ApiError::ResourceVersionTooLarge { requested: min, current: resp.revision });
        }
        let kv = resp.kv.ok_or_else(|| self.not_found(name))?;
        self.decode(&kv)
    }

    /// One object from the watch cache, when the cache is ready and holds
    /// it; `None` means "ask the store" (see [`crate::cache::WatchCache::get_any`]). For
    /// lookups that tolerate upstream's informer staleness, such as
    /// admission.
    pub fn get_cached(&self, namespace: &str, name: &str) -> Option<Value> {
        let bytes = self.cache.as_ref()?.get_any(&self.keys.object(namespace, name))?;
        serde_json::from_slice(&bytes).ok()
    }

    /// Lists the objects of a namespace (or all, with `namespace == ""`).
    ///
    /// Served from the watch cache as upstream's cacher decides
    /// (`shouldDelegateList`, 1.33 defaults): `resourceVersion` `""`
    /// (consistent, once the cache has caught up with the store), `"0"` and
    /// `NotOlderThan` come from the cache; `Exact`, the legacy exact match
    /// (a revision with a `limit`) and continues read the store.
    pub async fn list(&self, namespace: &str, opts: &ListOptions) -> Result<ListResult, ApiError> {
        let prefix = self.keys.collection(namespace);
        let requested = parse_resource_version(&opts.resource_version)?;
        let limit = opts.limit.filter(|l| *l > 0).map(|l| l as usize);
        let continuing = opts.continue_token.as_deref().filter(|t| !t.is_empty());

        if let (Some(cache), None) = (&self.cache, continuing) {
            let freshness = match opts.resource_version_match.as_str() {
                "Exact" => None,
                _ if opts.resource_version.is_empty() => Some(Freshness::Consistent),
                "" if limit.is_some() && requested > 0 => None,
                _ => Some(Freshness::AtLeast(requested)),
            };
            if let Some(freshness) = freshness {
                if let Some(result) = cache.list(&prefix, &opts.predicate, limit, freshness).await {
                    return result;
                }
            }
        }

        // Which revision to read, and from which key.
        let (mut revision, mut start) = (None, None);
        if let Some(token) = continuing {
            if !opts.resource_version.is_empty() && opts.resource_version != "0" {
                return Err(ApiError::BadRequest(
                    "specifying resource version is not allowed when using continue".into(),
                ));
            }
            let t = continue_token::decode(token)?;
            revision = (t.revision > 0).then_some(t.revision);
            start = Some(format!("{prefix}{}", t.start));
        } else {
            match opts.resource_version_match.as_str() {
                "Exact" => revision = Some(requested),
                "" if limit.is_some() && requested > 0 => revision = Some(requested),
                _ => {}
            }
        }

        let mut items = Vec::new();
        let (mut more, mut count, mut read_at);
        loop {
            let req = RangeRequest {
                prefix: prefix.clone(),
                start: start.clone(),
                limit: limit.map(|l| l.saturating_sub(items.len()).max(1)),
                revision,
            };
            let resp = self.store.range(req).await.map_err(|e| match e {
                rkube_store::StoreError::Compacted { .. } if continuing.is_some() => {
                    ApiError::Expired(CONTINUE_TOO_OLD.into())
                }
                rkube_store::StoreError::Compacted { .. } => ApiError::Expired(LIST_TOO_OLD.into()),
                e => self.store_error(e, ""),
            })?;
            read_at = resp.revision;
            if revision.is_none() && requested > read_at {
                return Err(ApiError::ResourceVersionTooLarge { requested, current: read_at });
            }
            revision = Some(read_at);
            more = resp.more;
            count = resp.count;
            let last_key = resp.kvs.last().map(|kv| kv.key.clone());
            for kv in &resp.kvs {
                let obj = self.decode(kv)?;
                if opts.predicate.matches(&obj) {
                    items.push(obj);
                }
            }
            // Keep reading until the page is full or the range is exhausted.
            match (limit, last_key) {
                (Some(l), Some(last)) if more && items.len() < l => start = Some(format!("{last}\0")),
                (_, last) => {
                    start = last.map(|k| format!("{k}\0"));
                    break;
                }
            }
        }
        let returned_keys = if more { start.clone() } else { None };
        let continue_token = returned_keys.map(|next| continue_token::encode(&prefix, &next, read_at));
        // Without a filter one range fills the page, so `count` (keys from
        // that range's start) minus the page is what remains.
        let remaining_item_count =
            (more && opts.predicate.is_everything()).then(|| count as i64 - items.len() as i64).filter(|n| *n > 0);
        Ok(ListResult { items, revision: read_at, continue_token, remaining_item_count })
    }
}
