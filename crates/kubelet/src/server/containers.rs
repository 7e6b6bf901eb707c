//! `/pods` and `/containerLogs`, and finding a pod's containers and
//! sandbox through the runtime by their `io.kubernetes.*` labels (the
//! worker's CRI conventions, see [`crate::pods::labels`]): the newest
//! attempt of a container is the current one, the one before it is
//! `previous`.

use std::collections::HashMap;

use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use k8s_openapi::api::core::v1::Pod;

use super::{text, AppState};
use crate::cri::{v1, CriClient};
use crate::logs::{read_logs, LogOptions, LogStream, RunningCheck};
use crate::pods::labels;

/// `GET /pods`: the pods bound to this node, as a `PodList` (upstream
/// serves its pod manager's pods; rkube asks the API server for the same
/// set, `spec.nodeName=<node>`).
pub(crate) async fn pods(State(state): State<AppState>) -> Response {
    let api: kube::Api<Pod> = kube::Api::all(state.client.clone());
    let params = kube::api::ListParams::default().fields(&format!("spec.nodeName={}", state.node_name));
    match api.list(&params).await {
        Ok(list) => {
            let body = serde_json::json!({
                "kind": "PodList",
                "apiVersion": "v1",
                "metadata": {},
                "items": list.items,
            });
            ([("content-type", "application/json")], body.to_string()).into_response()
        }
        Err(e) => text(StatusCode::INTERNAL_SERVER_ERROR, format!("failed to list pods: {e}")),
    }
}

/// The runtime's containers named `container` of pod `namespace/pod`, of
/// the newest pod UID, newest attempt first.
pub async fn pod_containers(
    cri: &CriClient,
    namespace: &str,
    pod: &str,
    container: &str,
) -> Result<Vec<v1::Container>, crate::cri::CriError> {
    let selector: HashMap<String, String> = [
        (labels::POD_NAMESPACE.to_string(), namespace.to_string()),
        (labels::POD_NAME.to_string(), pod.to_string()),
        (labels::CONTAINER_NAME.to_string(), container.to_string()),
    ]
    .into();
    let filter = v1::ContainerFilter { label_selector: selector, ..Default::default() };
    let mut found = cri.list_containers(Some(filter)).await?;
    found.sort_by_key(|c| std::cmp::Reverse(c.created_at));
    if let Some(uid) = found.first().and_then(|c| c.labels.get(labels::POD_UID)).cloned() {
        found.retain(|c| c.labels.get(labels::POD_UID) == Some(&uid));
    }
    found.sort_by_key(|c| std::cmp::Reverse((c.metadata.as_ref().map_or(0, |m| m.attempt), c.created_at)));
    Ok(found)
}

/// The newest ready sandbox of pod `namespace/pod`, if any.
pub async fn pod_sandbox(
    cri: &CriClient,
    namespace: &str,
    pod: &str,
) -> Result<Option<v1::PodSandbox>, crate::cri::CriError> {
    let selector: HashMap<String, String> =
        [(labels::POD_NAMESPACE.to_string(), namespace.to_string()), (labels::POD_NAME.to_string(), pod.to_string())]
            .into();
    let filter = v1::PodSandboxFilter {
        label_selector: selector,
        state: Some(v1::PodSandboxStateValue { state: v1::PodSandboxState::SandboxReady as i32 }),
        ..Default::default()
    };
    let mut found = cri.list_pod_sandbox(Some(filter)).await?;
    found.sort_by_key(|s| std::cmp::Reverse(s.created_at));
    Ok(found.into_iter().next())
}

/// The query of `/containerLogs` (upstream's `PodLogOptions`), or the 400
/// message.
pub fn log_options(query: Option<&str>, now: jiff::Timestamp) -> Result<(LogOptions, bool), String> {
    let mut opts = LogOptions::default();
    let mut previous = false;
    let mut since_seconds = None;
    let mut since_time: Option<jiff::Timestamp> = None;
    let bool_of = |v: &str| -> Result<bool, String> {
        match v {
            "" | "1" | "t" | "T" | "true" | "TRUE" | "True" => Ok(true),
            "0" | "f" | "F" | "false" | "FALSE" | "False" => Ok(false),
            _ => Err(format!("strconv.ParseBool: parsing {v:?}: invalid syntax")),
        }
    };
    let int_of = |v: &str| -> Result<i64, String> {
        v.parse::<i64>().map_err(|_| format!("strconv.ParseInt: parsing {v:?}: invalid syntax"))
    };
    for (k, v) in form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
        match &*k {
            "follow" => opts.follow = bool_of(&v)?,
            "previous" => previous = bool_of(&v)?,
            "timestamps" => opts.timestamps = bool_of(&v)?,
            "sinceSeconds" => since_seconds = Some(int_of(&v)?),
            "sinceTime" if !v.is_empty() => {
                since_time = Some(v.parse().map_err(|e| format!("parsing time {v:?}: {e}"))?);
            }
            "tailLines" => {
                let n = int_of(&v)?;
                if n < 0 {
                    return Err("tailLines: Invalid value: must be greater than or equal to 0".into());
                }
                opts.tail_lines = Some(n as u64);
            }
            "limitBytes" => {
                let n = int_of(&v)?;
                if n < 1 {
                    return Err("limitBytes: Invalid value: must be greater than 0".into());
                }
                opts.limit_bytes = Some(n as u64);
            }
            "stream" => {
                opts.stream = match &*v {
                    "Stdout" => Some(LogStream::Stdout),
                    "Stderr" => Some(LogStream::Stderr),
                    "All" | "" => None,
                    other => return Err(format!("stream: Unsupported value: {other:?}")),
                }
            }
            _ => {}
        }
    }
    if let Some(s) = since_seconds {
        if s < 1 {
            return Err("sinceSeconds: Invalid value: must be greater than 0".into());
        }
        opts.since = now.checked_sub(jiff::SignedDuration::from_secs(s)).ok();
    }
    if let Some(t) = since_time {
        if opts.since.is_none_or(|s| t > s) {
            opts.since = Some(t);
        }
    }
    Ok((opts, previous))
}

/// `GET /containerLogs/{namespace}/{pod}/{container}`: the container's
/// log (see [`crate::logs::reader`]); 400 with upstream's message when the
/// container (or its previous instance) does not exist.
pub(crate) async fn container_logs(
    State(state): State<AppState>,
    Path((namespace, pod, container)): Path<(String, String, String)>,
    RawQuery(query): RawQuery,
) -> Response {
    let (opts, previous) = match log_options(query.as_deref(), jiff::Timestamp::now()) {
        Ok(o) => o,
        Err(e) => return text(StatusCode::BAD_REQUEST, e),
    };
    let found = match pod_containers(&state.cri, &namespace, &pod, &container).await {
        Ok(f) => f,
        Err(e) => return text(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    };
    let chosen = if previous {
        match found.get(1) {
            Some(c) => c,
            None => {
                return text(
                    StatusCode::BAD_REQUEST,
                    format!("previous terminated container {container:?} in pod {pod:?} not found"),
                )
            }
        }
    } else {
        match found.first() {
            Some(c) => c,
            None => {
                return text(
                    StatusCode::BAD_REQUEST,
                    format!("container {container:?} in pod {pod:?} is waiting to start: ContainerCreating"),
                )
            }
        }
    };
    let status = match state.cri.container_status(&chosen.id, false).await {
        Ok(s) => s,
        Err(e) => return text(StatusCode::BAD_REQUEST, e.to_string()),
    };
    let path = std::path::PathBuf::from(&status.log_path);
    if let Err(e) = std::fs::File::open(&path) {
        return text(StatusCode::BAD_REQUEST, format!("failed to try resolving symlinks in path {path:?}: {e}"));
    }
    let cri = state.cri.clone();
    let id = chosen.id.clone();
    let running: RunningCheck = Box::new(move || {
        let (cri, id) = (cri.clone(), id.clone());
        Box::pin(async move {
            cri.container_status(&id, false).await.is_ok_and(|s| s.state == v1::ContainerState::ContainerRunning as i32)
        })
    });
    let (tx, rx) = tokio::sync::mpsc::channel::<Vec<u8>>(16);
    tokio::spawn(async move {
        if let Err(e) = read_logs(&path, &opts, &tx, running).await {
            tracing::warn!(component = "kubelet", error = %e, "reading container log failed");
        }
    });
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|chunk| (Ok::<_, std::io::Error>(bytes::Bytes::from(chunk)), rx))
    });
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "text/plain")
        .body(Body::from_stream(stream))
        .expect("a valid response")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kubelet's decoding of `PodLogOptions`: the later of
    /// `sinceSeconds` and `sinceTime` wins; malformed values are 400s.
    #[test]
    fn log_query() {
        let now: jiff::Timestamp = "2024-01-01T00:01:00Z".parse().unwrap();
        let (o, prev) = log_options(
            Some("follow=true&previous=1&timestamps=true&tailLines=5&limitBytes=10&sinceSeconds=30&stream=Stderr"),
            now,
        )
        .unwrap();
        assert!(prev && o.follow && o.timestamps);
        assert_eq!((o.tail_lines, o.limit_bytes), (Some(5), Some(10)));
        assert_eq!(o.since, Some("2024-01-01T00:00:30Z".parse().unwrap()));
        assert_eq!(o.stream, Some(LogStream::Stderr));
        let (o, _) = log_options(Some("sinceSeconds=30&sinceTime=2024-01-01T00%3A00%3A45Z"), now).unwrap();
        assert_eq!(o.since, Some("2024-01-01T00:00:45Z".parse().unwrap()));
        let (o, _) = log_options(Some("sinceSeconds=30&sinceTime=2024-01-01T00%3A00%3A10Z"), now).unwrap();
        assert_eq!(o.since, Some("2024-01-01T00:00:30Z".parse().unwrap()));
        assert!(log_options(Some("follow=maybe"), now).is_err());
        assert!(log_options(Some("tailLines=-1"), now).is_err());
        assert!(log_options(Some("limitBytes=0"), now).is_err());
        assert_eq!(log_options(None, now).unwrap(), (LogOptions::default(), false));
    }
}
