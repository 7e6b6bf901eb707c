//! Events as upstream's controllers record them (client-go
//! `tools/record`): core/v1 Events about an object, with `source.component`
//! and `reportingComponent` = the controller's name, posted in the
//! background (a failure is logged, never returned), and repeats of the
//! same event folded into one whose `count` and `lastTimestamp` grow, as
//! the `EventCorrelator`'s aggregation does.
//!
//! Shape of what is posted: `metadata.name` = `<object name>.<hex nanos>`
//! in the object's namespace (`default` for cluster-scoped objects, as
//! upstream), `involvedObject` = [`reference`] of the object, `type`
//! `Normal` or `Warning`, `reason` in UpperCamelCase, `message` at most
//! 1 KiB.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::Resource;

/// `type` of an event that is expected.
pub const NORMAL: &str = "Normal";
/// `type` of an event that tells of a problem.
pub const WARNING: &str = "Warning";

/// Upstream caps a message at 1 KiB.
const MAX_MESSAGE_LEN: usize = 1024;
/// How many distinct events the recorder remembers for folding repeats
/// (upstream's correlator LRU holds 4096).
const MAX_REMEMBERED: usize = 4096;

/// An `ObjectReference` to `obj` (apiVersion, kind, namespace, name, uid,
/// resourceVersion), as upstream's `ref.GetReference`.
pub fn reference<K: Resource<DynamicType = ()>>(obj: &K) -> ObjectReference {
    let m = obj.meta();
    ObjectReference {
        api_version: Some(K::api_version(&()).into_owned()),
        kind: Some(K::kind(&()).into_owned()),
        namespace: m.namespace.clone(),
        name: m.name.clone(),
        uid: m.uid.clone(),
        resource_version: m.resource_version.clone(),
        ..Default::default()
    }
}

/// Posts events as one component. Cheap to clone; clones share the
/// memory of what was already posted.
#[derive(Clone)]
pub struct Recorder {
    client: kube::Client,
    component: String,
    host: String,
    seen: Arc<Mutex<HashMap<Key, Seen>>>,
}

#[derive(Clone, PartialEq, Eq, Hash)]
struct Key {
    uid: String,
    namespace: String,
    name: String,
    type_: String,
    reason: String,
    message: String,
}

#[derive(Clone)]
struct Seen {
    event_name: String,
    count: i32,
}

impl Recorder {
    /// A recorder posting with `client` as `component` (e.g.
    /// `deployment-controller`); `host` is the reportingInstance and
    /// `source.host` (upstream: the manager's hostname).
    pub fn new(client: kube::Client, component: &str, host: &str) -> Recorder {
        Recorder { client, component: component.into(), host: host.into(), seen: Arc::new(Mutex::new(HashMap::new())) }
    }

    /// Records an event about `obj` (see the module docs for the shape).
    pub fn event<K: Resource<DynamicType = ()>>(&self, obj: &K, type_: &str, reason: &str, message: impl Into<String>) {
        self.event_on(reference(obj), type_, reason, message.into());
    }

    /// Records an event about the object `regarding` refers to.
    pub fn event_on(&self, regarding: ObjectReference, type_: &str, reason: &str, message: String) {
        let message = truncate(message);
        tracing::debug!(component = %self.component, reason, object = ?regarding.name, %message, "event");
        let namespace = regarding.namespace.clone().filter(|n| !n.is_empty()).unwrap_or_else(|| "default".into());
        let key = Key {
            uid: regarding.uid.clone().unwrap_or_default(),
            namespace: namespace.clone(),
            name: regarding.name.clone().unwrap_or_default(),
            type_: type_.into(),
            reason: reason.into(),
            message: message.clone(),
        };
        let now = Time(jiff::Timestamp::now());
        let repeat = {
            let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
            match seen.get_mut(&key) {
                Some(s) => {
                    s.count += 1;
                    Some(s.clone())
                }
                None => {
                    if seen.len() >= MAX_REMEMBERED {
                        seen.clear();
                    }
                    None
                }
            }
        };
        let api: Api<Event> = Api::namespaced(self.client.clone(), &namespace);
        let component = self.component.clone();
        if let Some(s) = repeat {
            let patch = serde_json::json!({"count": s.count, "lastTimestamp": now});
            tokio::spawn(async move {
                if let Err(e) = api.patch(&s.event_name, &PatchParams::default(), &Patch::Merge(&patch)).await {
                    tracing::warn!(component = %component, error = %e, "cannot update an event's count");
                }
            });
            return;
        }
        let event_name = format!("{}.{:x}", key.name, now.0.as_nanosecond().max(0));
        let event = Event {
            metadata: ObjectMeta { name: Some(event_name.clone()), namespace: Some(namespace), ..Default::default() },
            involved_object: regarding,
            type_: Some(type_.into()),
            reason: Some(reason.into()),
            message: Some(message),
            source: Some(EventSource { component: Some(self.component.clone()), host: Some(self.host.clone()) }),
            reporting_component: Some(self.component.clone()),
            reporting_instance: Some(self.host.clone()),
            first_timestamp: Some(now.clone()),
            last_timestamp: Some(now),
            count: Some(1),
            ..Default::default()
        };
        let seen = self.seen.clone();
        tokio::spawn(async move {
            match api.create(&PostParams::default(), &event).await {
                Ok(_) => {
                    seen.lock().unwrap_or_else(|e| e.into_inner()).insert(key, Seen { event_name, count: 1 });
                }
                Err(e) => tracing::warn!(component = %component, error = %e, "cannot record an event"),
            }
        });
    }
}

fn truncate(mut message: String) -> String {
    if message.len() > MAX_MESSAGE_LEN {
        let mut cut = MAX_MESSAGE_LEN;
        while !message.is_char_boundary(cut) {
            cut -= 1;
        }
        message.truncate(cut);
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::Deployment;

    #[test]
    fn reference_names_the_object_as_upstream_get_reference() {
        let d = Deployment {
            metadata: ObjectMeta {
                name: Some("web".into()),
                namespace: Some("ns".into()),
                uid: Some("u1".into()),
                resource_version: Some("7".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        let r = reference(&d);
        assert_eq!(r.api_version.as_deref(), Some("apps/v1"));
        assert_eq!(r.kind.as_deref(), Some("Deployment"));
        assert_eq!(
            (r.namespace.as_deref(), r.name.as_deref(), r.uid.as_deref()),
            (Some("ns"), Some("web"), Some("u1"))
        );
        assert_eq!(r.resource_version.as_deref(), Some("7"));
    }

    #[test]
    fn messages_are_cut_at_1kib_on_a_char_boundary() {
        assert_eq!(truncate("é".repeat(600)).len(), 1024);
        assert_eq!(truncate("x".repeat(2000)).len(), 1024);
        assert_eq!(truncate("short".into()), "short");
    }
}
