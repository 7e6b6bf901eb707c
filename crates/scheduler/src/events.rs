//! Events the scheduler records (upstream's `events.k8s.io/v1` recorder
//! with `reportingController` = the profile's scheduler name): `Scheduled`
//! ("Successfully assigned <ns>/<pod> to <node>", Normal, action Binding)
//! and `FailedScheduling` (Warning, action Scheduling). Posting is
//! fire-and-forget, as upstream's broadcaster.

use k8s_openapi::api::core::v1::{ObjectReference, Pod};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::api::{Api, PostParams};

/// Upstream caps an event's note at 1 KiB.
const MAX_NOTE_LEN: usize = 1024;

/// Posts events as one component instance.
#[derive(Clone)]
pub struct Recorder {
    client: Option<kube::Client>,
    instance_suffix: String,
}

impl Recorder {
    /// A recorder posting with `client` (`None`: events are only logged);
    /// `hostname` makes the reportingInstance `<controller>-<hostname>`.
    pub fn new(client: Option<kube::Client>, hostname: &str) -> Recorder {
        Recorder { client, instance_suffix: hostname.to_string() }
    }

    /// Records an event about `pod` for the profile `controller`.
    pub fn eventf(&self, controller: &str, pod: &Pod, type_: &str, reason: &str, action: &str, note: String) {
        tracing::debug!(component = "kube-scheduler", reason, note = %note, "event");
        let Some(client) = self.client.clone() else { return };
        let ns = pod.metadata.namespace.clone().unwrap_or_else(|| "default".into());
        let now = jiff::Timestamp::now();
        let mut note = note;
        if note.len() > MAX_NOTE_LEN {
            let mut cut = MAX_NOTE_LEN;
            while !note.is_char_boundary(cut) {
                cut -= 1;
            }
            note.truncate(cut);
        }
        let event = Event {
            metadata: ObjectMeta {
                name: Some(format!("{}.{:x}", pod.metadata.name.as_deref().unwrap_or(""), now.as_nanosecond())),
                namespace: Some(ns.clone()),
                ..Default::default()
            },
            event_time: Some(MicroTime(now)),
            type_: Some(type_.into()),
            reason: Some(reason.into()),
            action: Some(action.into()),
            note: Some(note),
            reporting_controller: Some(controller.into()),
            reporting_instance: Some(format!("{controller}-{}", self.instance_suffix)),
            regarding: Some(ObjectReference {
                api_version: Some("v1".into()),
                kind: Some("Pod".into()),
                name: pod.metadata.name.clone(),
                namespace: pod.metadata.namespace.clone(),
                uid: pod.metadata.uid.clone(),
                resource_version: pod.metadata.resource_version.clone(),
                ..Default::default()
            }),
            ..Default::default()
        };
        tokio::spawn(async move {
            let api: Api<Event> = Api::namespaced(client, &ns);
            if let Err(e) = api.create(&PostParams::default(), &event).await {
                tracing::warn!(component = "kube-scheduler", error = %e, "cannot record an event");
            }
        });
    }
}
