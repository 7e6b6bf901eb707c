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
        let event = new_event(controller, &self.instance_suffix, pod, None, type_, reason, action, note);
        tokio::spawn(post(client, event));
    }
}

/// The hostname reportingInstance ends with (`<controller>-<hostname>`).
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "rkube".into())
}

/// A reference to `pod` as events carry it.
pub fn pod_reference(pod: &Pod) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Pod".into()),
        name: pod.metadata.name.clone(),
        namespace: pod.metadata.namespace.clone(),
        uid: pod.metadata.uid.clone(),
        resource_version: pod.metadata.resource_version.clone(),
        ..Default::default()
    }
}

/// An events.k8s.io/v1 Event about `regarding` (and `related`, e.g. the
/// preemptor of a `Preempted` victim) reported by `controller` from the
/// host `host`; the note is cut at 1 KiB as upstream.
#[allow(clippy::too_many_arguments)]
pub fn new_event(
    controller: &str,
    host: &str,
    regarding: &Pod,
    related: Option<&Pod>,
    type_: &str,
    reason: &str,
    action: &str,
    mut note: String,
) -> Event {
    let now = jiff::Timestamp::now();
    if note.len() > MAX_NOTE_LEN {
        let mut cut = MAX_NOTE_LEN;
        while !note.is_char_boundary(cut) {
            cut -= 1;
        }
        note.truncate(cut);
    }
    Event {
        metadata: ObjectMeta {
            name: Some(format!("{}.{:x}", regarding.metadata.name.as_deref().unwrap_or(""), now.as_nanosecond())),
            namespace: Some(regarding.metadata.namespace.clone().unwrap_or_else(|| "default".into())),
            ..Default::default()
        },
        event_time: Some(MicroTime(now)),
        type_: Some(type_.into()),
        reason: Some(reason.into()),
        action: Some(action.into()),
        note: Some(note),
        reporting_controller: Some(controller.into()),
        reporting_instance: Some(format!("{controller}-{host}")),
        regarding: Some(pod_reference(regarding)),
        related: related.map(pod_reference),
        ..Default::default()
    }
}

/// Posts `event` in its namespace; a failure is logged (events are best effort).
pub async fn post(client: kube::Client, event: Event) {
    let ns = event.metadata.namespace.clone().unwrap_or_else(|| "default".into());
    let api: Api<Event> = Api::namespaced(client, &ns);
    if let Err(e) = api.create(&PostParams::default(), &event).await {
        tracing::warn!(component = "kube-scheduler", reason = ?event.reason, error = %e, "cannot record an event");
    }
}
