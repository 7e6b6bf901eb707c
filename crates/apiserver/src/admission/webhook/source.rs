//! Where the webhook plugins get their webhooks: the stored
//! configurations of one kind, parsed into [`Hook`]s and kept until the
//! stored set changes (upstream's informer-backed `configuration`
//! managers). Webhooks are ordered by configuration name, then by their
//! position in it, as upstream sorts its accessors.

use std::sync::{Arc, Mutex};

use serde_json::Value;

use super::Hook;
use crate::storage::{ListOptions, ResourceStore};

/// The parsed webhooks of a set of configurations.
type Hooks = Arc<Vec<Arc<Hook>>>;

/// The webhooks of one configuration kind.
pub struct HookSource {
    store: Arc<ResourceStore>,
    /// The `(name, resourceVersion)` list the cached hooks were parsed
    /// from, and the hooks.
    cached: Mutex<(Vec<(String, String)>, Hooks)>,
}

impl HookSource {
    /// A source over `store` (mutating or validating configurations).
    pub fn new(store: Arc<ResourceStore>) -> HookSource {
        HookSource { store, cached: Mutex::new((Vec::new(), Arc::new(Vec::new()))) }
    }

    /// The current webhooks. Reads the configurations from the watch
    /// cache (`resourceVersion=0`) and parses them again only when a
    /// name or resourceVersion changed.
    pub async fn hooks(&self) -> Hooks {
        let opts = ListOptions { resource_version: "0".into(), ..Default::default() };
        let items = match self.store.list("", &opts).await {
            Ok(list) => list.items,
            Err(e) => {
                tracing::warn!(component = crate::COMPONENT, error = %e, "cannot list webhook configurations");
                return self.cached.lock().unwrap_or_else(|e| e.into_inner()).1.clone();
            }
        };
        let mut key: Vec<(String, String)> = items
            .iter()
            .map(|c| {
                let rv = c.pointer("/metadata/resourceVersion").and_then(Value::as_str).unwrap_or("");
                (rkube_apimachinery::meta::name(c).to_string(), rv.to_string())
            })
            .collect();
        key.sort();
        let mut cached = self.cached.lock().unwrap_or_else(|e| e.into_inner());
        if cached.0 == key && !key.is_empty() {
            return cached.1.clone();
        }
        let mut configs: Vec<&Value> = items.iter().collect();
        configs.sort_by(|a, b| rkube_apimachinery::meta::name(a).cmp(rkube_apimachinery::meta::name(b)));
        let hooks: Vec<Arc<Hook>> = configs
            .into_iter()
            .flat_map(|c| {
                let name = rkube_apimachinery::meta::name(c).to_string();
                let webhooks = c.get("webhooks").and_then(Value::as_array).cloned().unwrap_or_default();
                webhooks.into_iter().enumerate().map(move |(i, w)| Arc::new(Hook::parse(&name, i, &w)))
            })
            .collect();
        *cached = (key, Arc::new(hooks));
        cached.1.clone()
    }
}
