//! The horizontal pod autoscaler controller (upstream
//! `pkg/controller/podautoscaler/horizontal.go`): every
//! `--horizontal-pod-autoscaler-sync-period` (15 s), and when an HPA's
//! spec changes, reads the scale target's `scale` subresource, computes
//! the replica count each metric asks for ([`replicas`], reading
//! `metrics.k8s.io/v1beta1` through [`metrics`]), takes the largest,
//! normalizes it with the stabilization windows, scaling policies and
//! min/max limits ([`behavior`]), writes the new count through the scale
//! subresource, and reports `autoscaling/v2` status: `currentReplicas`,
//! `desiredReplicas`, `currentMetrics`, `lastScaleTime`,
//! `observedGeneration` and the conditions `AbleToScale`, `ScalingActive`
//! and `ScalingLimited` with upstream's reasons and messages; events
//! `SuccessfulRescale`, `FailedRescale`, `FailedGetScale`,
//! `FailedGetResourceMetric`, `FailedComputeMetricsReplicas`, … as the
//! component `horizontal-pod-autoscaler`.
//!
//! Targets: anything with a scale subresource — Deployments,
//! ReplicaSets, StatefulSets and ReplicationControllers by table, other
//! kinds (custom resources) through discovery. A target at 0 replicas is
//! not autoscaled (`ScalingDisabled`), as upstream without the
//! HPAScaleToZero feature. Pods/Object/External metrics need the custom
//! and external metrics APIs, which rkube does not serve: such metrics
//! fail as upstream's do without those APIs.

pub mod behavior;
pub mod metrics;
pub mod replicas;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::autoscaling::v1::Scale;
use k8s_openapi::api::autoscaling::v2::{
    ContainerResourceMetricStatus, HorizontalPodAutoscaler, HorizontalPodAutoscalerCondition,
    HorizontalPodAutoscalerStatus, MetricSpec, MetricStatus, MetricValueStatus, ResourceMetricStatus,
};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, ListParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::Store;
use kube::runtime::watcher;

use crate::events::{Recorder, NORMAL, WARNING};
use crate::runtime::{self, is_conflict, is_not_found, Ctx, Error, Stop};

use behavior::History;
use replicas::Calculator;

/// The controller's name (`--controllers`), also its log component.
pub const NAME: &str = "horizontal-pod-autoscaler-controller";
/// The older name `--controllers` also accepts.
pub const ALIAS: &str = "horizontalpodautoscaling";
/// The kube-system ServiceAccount it runs as (role
/// `system:controller:horizontal-pod-autoscaler`).
pub const SERVICE_ACCOUNT: &str = "horizontal-pod-autoscaler";
/// The events' source component, as upstream.
pub const EVENT_COMPONENT: &str = "horizontal-pod-autoscaler";

/// kube-controller-manager's HPA flags, with their 1.33 defaults ([`Default`]).
#[derive(Clone, Debug)]
pub struct HpaSettings {
    /// `--horizontal-pod-autoscaler-sync-period`: how often every HPA is
    /// reconciled (15 s).
    pub sync_period: Duration,
    /// `--horizontal-pod-autoscaler-tolerance`: the relative usage change
    /// below which nothing scales (0.1).
    pub tolerance: f64,
    /// `--horizontal-pod-autoscaler-cpu-initialization-period`: after a
    /// pod starts, CPU samples count only once it is Ready and a full
    /// window has passed since (5 min).
    pub cpu_initialization_period: Duration,
    /// `--horizontal-pod-autoscaler-initial-readiness-delay`: after that,
    /// an unready pod is still ignored if it turned unready within this
    /// long of starting (30 s).
    pub initial_readiness_delay: Duration,
    /// `--horizontal-pod-autoscaler-downscale-stabilization`: the
    /// scale-down stabilization window when `spec.behavior` does not set
    /// one (5 min).
    pub downscale_stabilization: Duration,
}

impl Default for HpaSettings {
    fn default() -> Self {
        HpaSettings {
            sync_period: Duration::from_secs(15),
            tolerance: 0.1,
            cpu_initialization_period: Duration::from_secs(300),
            initial_readiness_delay: Duration::from_secs(30),
            downscale_stabilization: Duration::from_secs(300),
        }
    }
}

/// What the controller keeps per HPA key between syncs.
#[derive(Default)]
struct Memory {
    history: History,
    /// When it was last synced, and at which generation.
    last_sync: Option<(Instant, Option<i64>)>,
}

struct Hpa {
    ctx: Arc<Ctx>,
    recorder: Recorder,
    settings: HpaSettings,
    calc: Calculator,
    store: Store<HorizontalPodAutoscaler>,
    memory: Mutex<HashMap<String, Memory>>,
}

/// The message of a client error: the API's `Status` message, or the
/// error itself.
pub(crate) fn describe(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(s) => s.message.clone(),
        other => other.to_string(),
    }
}

/// Runs until `stop`: HPAs are the keys, each reconciled every sync
/// period and when its spec changes.
pub async fn run(ctx: Arc<Ctx>, stop: Stop) {
    let settings = ctx.settings.hpa.clone();
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").map(|h| h.trim().to_string()).unwrap_or_default();
    let recorder = Recorder::new(ctx.client.clone(), EVENT_COMPONENT, &host);
    let controller =
        Controller::new(Api::<HorizontalPodAutoscaler>::all(ctx.reader.clone()), watcher::Config::default());
    let calc = Calculator {
        tolerance: settings.tolerance,
        cpu_initialization_period: settings.cpu_initialization_period,
        initial_readiness_delay: settings.initial_readiness_delay,
    };
    let hpa = Arc::new(Hpa { ctx, recorder, settings, calc, store: controller.store(), memory: Mutex::default() });
    let controller = controller.graceful_shutdown_on(runtime::stopped(stop));
    runtime::drive(NAME, controller.run(reconcile, error_policy, hpa)).await;
}

/// Upstream's HPA queue retries a failed key after the sync period, not
/// with exponential back-off.
fn error_policy(obj: Arc<HorizontalPodAutoscaler>, err: &Error, hpa: Arc<Hpa>) -> Action {
    let key = runtime::key_of(obj.as_ref());
    tracing::warn!(component = NAME, %key, error = %err, "reconcile failed");
    Action::requeue(hpa.settings.sync_period)
}

async fn reconcile(obj: Arc<HorizontalPodAutoscaler>, hpa: Arc<Hpa>) -> Result<Action, Error> {
    let key = runtime::key_of(obj.as_ref());
    let period = hpa.settings.sync_period;
    let now = Instant::now();
    {
        let mut memory = hpa.memory.lock().unwrap_or_else(|e| e.into_inner());
        // Forget HPAs that are gone (upstream drops their state on delete).
        let live: std::collections::HashSet<String> =
            hpa.store.state().iter().map(|h| runtime::key_of(h.as_ref())).collect();
        if !live.is_empty() {
            memory.retain(|k, _| live.contains(k) || *k == key);
        }
        let m = memory.entry(key.clone()).or_default();
        // Status writes (ours included) trigger reconciles too; as upstream's
        // fixed-interval queue, sync at most once a period unless the spec changed.
        if let Some((at, generation)) = m.last_sync {
            let since = now.saturating_duration_since(at);
            if since < period && generation == obj.metadata.generation {
                return Ok(Action::requeue(period - since));
            }
        }
        m.last_sync = Some((now, obj.metadata.generation));
    }
    if let Err(message) = hpa.reconcile_autoscaler(&obj, &key).await {
        tracing::info!(component = NAME, %key, %message, "sync failed");
    }
    Ok(Action::requeue(period))
}

/// Upstream's `setCondition`: updates reason and message, and the
/// transition time only when the status changes.
fn set_condition(status: &mut HorizontalPodAutoscalerStatus, type_: &str, value: bool, reason: &str, message: String) {
    let value = if value { "True" } else { "False" };
    let conditions = status.conditions.get_or_insert_with(Vec::new);
    let now = Some(Time(jiff::Timestamp::now()));
    match conditions.iter_mut().find(|c| c.type_ == type_) {
        Some(c) => {
            if c.status != value {
                c.status = value.into();
                c.last_transition_time = now;
            }
            c.reason = Some(reason.into());
            c.message = Some(message);
        }
        None => conditions.push(HorizontalPodAutoscalerCondition {
            type_: type_.into(),
            status: value.into(),
            reason: Some(reason.into()),
            message: Some(message),
            last_transition_time: now,
        }),
    }
}

/// A milli-value as a canonical quantity (upstream's `NewMilliQuantity(v, DecimalSI)`).
pub fn milli_quantity(v: i64) -> Quantity {
    let text = format!("{v}m");
    Quantity(rkube_apimachinery::quantity::canonical(&text).unwrap_or(text))
}

/// The REST path of the scale subresource of `kind` `name` in API version
/// `api_version`: built-in workload kinds by table, others by discovery.
async fn scale_path(
    client: &kube::Client,
    api_version: &str,
    kind: &str,
    ns: &str,
    name: &str,
) -> Result<String, String> {
    let (group, version) = match api_version.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    };
    if version.is_empty() || version.contains('/') {
        return Err(format!("unexpected GroupVersion string: {api_version}"));
    }
    let known = match (group, kind) {
        ("apps", "Deployment") | ("extensions", "Deployment") => Some("deployments"),
        ("apps", "ReplicaSet") | ("extensions", "ReplicaSet") => Some("replicasets"),
        ("apps", "StatefulSet") => Some("statefulsets"),
        ("", "ReplicationController") => Some("replicationcontrollers"),
        _ => None,
    };
    let (group, version) = if known.is_some() && group == "extensions" { ("apps", "v1") } else { (group, version) };
    let resource = match known {
        Some(r) => r.to_string(),
        None => {
            let list = if group.is_empty() {
                client.list_core_api_resources(version).await
            } else {
                client.list_api_group_resources(api_version).await
            };
            let not_found = || format!("no matches for kind {kind:?} in group {group:?}");
            let list = list.map_err(|_| not_found())?;
            list.resources
                .iter()
                .find(|r| r.kind == kind && !r.name.contains('/'))
                .map(|r| r.name.clone())
                .ok_or_else(not_found)?
        }
    };
    let base = if group.is_empty() { format!("/api/{version}") } else { format!("/apis/{group}/{version}") };
    Ok(format!("{base}/namespaces/{ns}/{resource}/{name}/scale"))
}

/// The metrics of an HPA that names none: 80 % CPU utilization
/// (upstream's autoscaling/v2 defaulting, applied here too in case the
/// object was stored without it).
fn default_metrics() -> Vec<MetricSpec> {
    vec![MetricSpec {
        type_: "Resource".into(),
        resource: Some(k8s_openapi::api::autoscaling::v2::ResourceMetricSource {
            name: "cpu".into(),
            target: k8s_openapi::api::autoscaling::v2::MetricTarget {
                type_: "Utilization".into(),
                average_utilization: Some(80),
                ..Default::default()
            },
        }),
        ..Default::default()
    }]
}

/// One metric's outcome: (proposed replicas, metric description, status).
type Proposal = (i32, String, MetricStatus);
/// One metric's failure: (condition and event reason, the calculator's
/// error for the event and condition, the error as the metric reports it).
type Failure = (&'static str, String, String);

fn empty_status(spec: &MetricSpec) -> MetricStatus {
    let mut s = MetricStatus { type_: spec.type_.clone(), ..Default::default() };
    if let Some(r) = &spec.resource {
        s.resource = Some(ResourceMetricStatus { name: r.name.clone(), current: MetricValueStatus::default() });
    }
    if let Some(r) = &spec.container_resource {
        s.container_resource = Some(ContainerResourceMetricStatus {
            name: r.name.clone(),
            container: r.container.clone(),
            current: MetricValueStatus::default(),
        });
    }
    s
}

impl Hpa {
    fn warn(&self, obj: &HorizontalPodAutoscaler, reason: &str, message: String) {
        self.recorder.event(obj, WARNING, reason, message);
    }

    /// Writes the status when it changed (upstream's `updateStatusIfNeeded`).
    async fn update_status(
        &self,
        obj: &HorizontalPodAutoscaler,
        original: &Option<HorizontalPodAutoscalerStatus>,
        status: HorizontalPodAutoscalerStatus,
    ) -> Result<(), String> {
        if original.as_ref() == Some(&status) {
            return Ok(());
        }
        let mut updated = obj.clone();
        updated.status = Some(status);
        let ns = obj.metadata.namespace.clone().unwrap_or_default();
        let name = obj.metadata.name.clone().unwrap_or_default();
        let api = Api::<HorizontalPodAutoscaler>::namespaced(self.ctx.client.clone(), &ns);
        match api.replace_status(&name, &PostParams::default(), &updated).await {
            Ok(_) => Ok(()),
            Err(e) if is_not_found(&e) || is_conflict(&e) => Ok(()),
            Err(e) => {
                self.warn(obj, "FailedUpdateStatus", describe(&e));
                Err(format!("failed to update status for {name}: {}", describe(&e)))
            }
        }
    }

    /// Upstream's `reconcileAutoscaler`.
    async fn reconcile_autoscaler(&self, obj: &HorizontalPodAutoscaler, key: &str) -> Result<(), String> {
        let original = obj.status.clone();
        let mut status = obj.status.clone().unwrap_or_default();
        let spec = obj.spec.clone().unwrap_or_default();
        let ns = obj.metadata.namespace.clone().unwrap_or_default();
        let target = &spec.scale_target_ref;
        let reference = format!("{}/{}/{}", target.kind, ns, target.name);
        let client = &self.ctx.client;

        let fetched = async {
            let api_version = target.api_version.clone().unwrap_or_default();
            let path = scale_path(client, &api_version, &target.kind, &ns, &target.name).await?;
            let req = http::Request::get(&path).body(Vec::new()).map_err(|e| e.to_string())?;
            let scale: Scale = client.request(req).await.map_err(|e| describe(&e))?;
            Ok::<_, String>((path, scale))
        };
        let (path, mut scale) = match fetched.await {
            Ok(x) => x,
            Err(e) => {
                self.warn(obj, "FailedGetScale", e.clone());
                let message = format!("the HPA controller was unable to get the target's current scale: {e}");
                set_condition(&mut status, "AbleToScale", false, "FailedGetScale", message);
                self.update_status(obj, &original, status).await?;
                return Err(format!("failed to query scale subresource for {reference}: {e}"));
            }
        };
        set_condition(
            &mut status,
            "AbleToScale",
            true,
            "SucceededGetScale",
            "the HPA controller was able to get the target's current scale".into(),
        );
        let current = scale.spec.as_ref().and_then(|s| s.replicas).unwrap_or(0);
        let now = Instant::now();
        self.with_history(key, |h| h.record_initial(current, now));

        let min = spec.min_replicas.unwrap_or(1);
        let max = spec.max_replicas;
        let mut desired;
        let mut reason = String::new();
        let mut rescale = true;
        let mut metric_statuses = status.current_metrics.clone();
        if current == 0 && min != 0 {
            desired = 0;
            rescale = false;
            let message = "scaling is disabled since the replica count of the target is zero".to_string();
            set_condition(&mut status, "ScalingActive", false, "ScalingDisabled", message);
        } else if current > max {
            reason = "Current number of replicas above Spec.MaxReplicas".into();
            desired = max;
        } else if current < min {
            reason = "Current number of replicas below Spec.MinReplicas".into();
            desired = min;
        } else {
            let metrics = spec.metrics.clone().filter(|m| !m.is_empty()).unwrap_or_else(default_metrics);
            match self.compute_replicas_for_metrics(obj, &scale, &metrics, &mut status).await {
                Ok((proposal, metric, statuses)) => {
                    metric_statuses = Some(statuses);
                    desired = proposal;
                    if desired > current {
                        reason = format!("{metric} above target");
                    }
                    if desired < current {
                        reason = "All metrics below target".into();
                    }
                    let normalized = self.with_history(key, |h| match &spec.behavior {
                        None => h.normalize(now, self.settings.downscale_stabilization, current, desired, min, max),
                        Some(b) => {
                            let b = behavior::with_defaults(b, self.settings.downscale_stabilization);
                            h.normalize_with_behavior(now, &b, current, desired, min, max)
                        }
                    });
                    set_condition(&mut status, "AbleToScale", true, normalized.able.0, normalized.able.1.into());
                    let (r, m) = normalized.limit;
                    set_condition(&mut status, "ScalingLimited", normalized.limited, r, m.into());
                    desired = normalized.replicas;
                    rescale = desired != current;
                }
                Err(e) => {
                    status.current_replicas = Some(current);
                    status.observed_generation = obj.metadata.generation;
                    self.update_status(obj, &original, status).await?;
                    self.warn(obj, "FailedComputeMetricsReplicas", e.clone());
                    return Err(format!(
                        "failed to compute desired number of replicas based on listed metrics for {reference}: {e}"
                    ));
                }
            }
        }

        if rescale {
            scale.spec.get_or_insert_with(Default::default).replicas = Some(desired);
            let body = serde_json::to_vec(&scale).map_err(|e| e.to_string())?;
            let req = http::Request::put(&path)
                .header(http::header::CONTENT_TYPE, "application/json")
                .body(body)
                .map_err(|e| e.to_string())?;
            if let Err(e) = client.request::<Scale>(req).await {
                let e = describe(&e);
                self.warn(obj, "FailedRescale", format!("New size: {desired}; reason: {reason}; error: {e}"));
                let message = format!("the HPA controller was unable to update the target scale: {e}");
                set_condition(&mut status, "AbleToScale", false, "FailedUpdateScale", message);
                status.current_replicas = Some(current);
                status.observed_generation = obj.metadata.generation;
                self.update_status(obj, &original, status).await?;
                return Err(format!("failed to rescale {reference}: {e}"));
            }
            let message = format!("the HPA controller was able to update the target scale to {desired}");
            set_condition(&mut status, "AbleToScale", true, "SucceededRescale", message);
            self.recorder.event(obj, NORMAL, "SuccessfulRescale", format!("New size: {desired}; reason: {reason}"));
            let b = spec.behavior.as_ref().map(|b| behavior::with_defaults(b, self.settings.downscale_stabilization));
            self.with_history(key, |h| h.store_scale_event(b.as_ref(), now, current, desired));
            tracing::info!(component = NAME, hpa = %key, old = current, new = desired, %reason, "successful rescale");
        } else {
            desired = current;
        }
        // setStatus.
        status.current_replicas = Some(current);
        status.desired_replicas = desired;
        status.current_metrics = metric_statuses.filter(|m| !m.is_empty());
        status.observed_generation = obj.metadata.generation;
        if rescale {
            status.last_scale_time = Some(Time(jiff::Timestamp::now()));
        }
        self.update_status(obj, &original, status).await
    }

    fn with_history<T>(&self, key: &str, f: impl FnOnce(&mut History) -> T) -> T {
        let mut memory = self.memory.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut memory.entry(key.to_string()).or_default().history)
    }

    /// Upstream's `computeReplicasForMetrics`: the largest proposal over
    /// the valid metrics, or an error when every metric failed or a
    /// failure might hide a scale-up (some failed and the rest propose
    /// fewer replicas than the target has).
    async fn compute_replicas_for_metrics(
        &self,
        obj: &HorizontalPodAutoscaler,
        scale: &Scale,
        specs: &[MetricSpec],
        status: &mut HorizontalPodAutoscalerStatus,
    ) -> Result<(i32, String, Vec<MetricStatus>), String> {
        let selector = scale.status.as_ref().and_then(|s| s.selector.clone()).unwrap_or_default();
        if selector.is_empty() {
            self.warn(obj, "SelectorRequired", "selector is required".into());
            let message = "the HPA target's scale is missing a selector".to_string();
            set_condition(status, "ScalingActive", false, "InvalidSelector", message);
            return Err("selector is required".into());
        }
        if let Err(e) = rkube_apimachinery::selector::labels::LabelSelector::parse(&selector) {
            let message = format!("couldn't convert selector into a corresponding internal selector object: {e}");
            self.warn(obj, "InvalidSelector", message.clone());
            set_condition(status, "ScalingActive", false, "InvalidSelector", message.clone());
            return Err(message);
        }
        let spec_replicas = scale.spec.as_ref().and_then(|s| s.replicas).unwrap_or(0);
        let ns = obj.metadata.namespace.clone().unwrap_or_default();
        let pods = Api::<Pod>::namespaced(self.ctx.reader.clone(), &ns)
            .list(&ListParams::default().labels(&selector))
            .await
            .map(|l| l.items)
            .map_err(|e| format!("unable to get pods while calculating replica count: {}", describe(&e)));

        let mut replicas = 0;
        let mut metric = String::new();
        let mut statuses = Vec::with_capacity(specs.len());
        let mut invalid = 0;
        let mut first: Option<Failure> = None;
        for spec in specs {
            match self.compute_replicas_for_metric(obj, spec, spec_replicas, &selector, &pods).await {
                Ok((proposal, name, s)) => {
                    if replicas == 0 || proposal > replicas {
                        replicas = proposal;
                        metric = name;
                    }
                    statuses.push(s);
                }
                Err((reason, inner, e)) => {
                    self.warn(obj, reason, inner.clone());
                    if first.is_none() {
                        first = Some((reason, inner, e));
                    }
                    invalid += 1;
                    statuses.push(empty_status(spec));
                }
            }
        }
        if invalid >= specs.len() || (invalid > 0 && replicas < spec_replicas) {
            let none = || ("InvalidMetricSourceType", "no metrics are specified".to_string(), String::new());
            let (reason, inner, e) = first.unwrap_or_else(none);
            let message = format!("the HPA was unable to compute the replica count: {inner}");
            set_condition(status, "ScalingActive", false, reason, message);
            return Err(format!("invalid metrics ({invalid} invalid out of {}), first error is: {e}", specs.len()));
        }
        let message = format!("the HPA was able to successfully calculate a replica count from {metric}");
        set_condition(status, "ScalingActive", true, "ValidMetricFound", message);
        Ok((replicas, metric, statuses))
    }

    /// Upstream's `computeReplicasForMetric` and the `computeStatusFor…Metric` functions.
    async fn compute_replicas_for_metric(
        &self,
        obj: &HorizontalPodAutoscaler,
        spec: &MetricSpec,
        current: i32,
        selector: &str,
        pods: &Result<Vec<Pod>, String>,
    ) -> Result<Proposal, Failure> {
        let ns = obj.metadata.namespace.clone().unwrap_or_default();
        let client = &self.ctx.client;
        let now = jiff::Timestamp::now();
        match spec.type_.as_str() {
            "Resource" | "ContainerResource" => {
                let (name, container, target, reason) = match (&spec.resource, &spec.container_resource) {
                    (Some(r), _) if spec.type_ == "Resource" => {
                        (r.name.clone(), None, r.target.clone(), "FailedGetResourceMetric")
                    }
                    (_, Some(c)) if spec.type_ == "ContainerResource" => (
                        c.name.clone(),
                        Some(c.container.clone()),
                        c.target.clone(),
                        "FailedGetContainerResourceMetric",
                    ),
                    _ => {
                        let e = format!("invalid metric source: {} metric source without its field", spec.type_);
                        return Err(("InvalidMetricSourceType", e.clone(), e));
                    }
                };
                let what = if container.is_some() { "container resource" } else { "resource" };
                let wrap = |e: String| (reason, e.clone(), format!("failed to get {name} utilization: {e}"));
                let fetch = async {
                    let pods = pods.clone()?;
                    let metrics = metrics::get_resource_metric(client, &ns, selector, &name, container.as_deref())
                        .await
                        .map_err(|e| format!("unable to get metrics for resource {name}: {e}"))?;
                    Ok::<_, String>((pods, metrics))
                };
                let mut current_status = MetricValueStatus::default();
                let (proposal, description) = if let Some(average) = &target.average_value {
                    let target_milli = rkube_apimachinery::quantity::milli_value(&average.0).unwrap_or(0) as i64;
                    let (pods, m) = fetch.await.map_err(wrap)?;
                    let (proposal, usage) = self
                        .calc
                        .plain_metric_replicas(current, target_milli, Some(&name), &pods, m, now)
                        .map_err(wrap)?;
                    current_status.average_value = Some(milli_quantity(usage));
                    (proposal, format!("{name} {what}"))
                } else if let Some(utilization) = target.average_utilization {
                    let (pods, m) = fetch.await.map_err(wrap)?;
                    let (proposal, percent, raw) = self
                        .calc
                        .resource_replicas(current, utilization, &name, container.as_deref(), &pods, m, now)
                        .map_err(wrap)?;
                    current_status.average_utilization = Some(percent);
                    current_status.average_value = Some(milli_quantity(raw));
                    (proposal, format!("{name} {what} utilization (percentage of request)"))
                } else {
                    let e = format!(
                        "invalid {what} metric source: neither a utilization target nor a value target was set"
                    );
                    return Err((reason, e.clone(), e));
                };
                let mut s = empty_status(spec);
                if let Some(r) = s.resource.as_mut() {
                    r.current = current_status;
                } else if let Some(r) = s.container_resource.as_mut() {
                    r.current = current_status;
                }
                Ok((proposal, description, s))
            }
            "Pods" => {
                let metric = spec.pods.as_ref().map(|p| p.metric.name.clone()).unwrap_or_default();
                let e = metrics::custom_metrics_unavailable(client).await;
                let inner = format!("unable to get metric {metric}: {e}");
                Err(("FailedGetPodsMetric", inner.clone(), format!("failed to get pods metric value: {inner}")))
            }
            "Object" => {
                let (metric, kind, name) = spec
                    .object
                    .as_ref()
                    .map(|o| (o.metric.name.clone(), o.described_object.kind.clone(), o.described_object.name.clone()))
                    .unwrap_or_default();
                let e = metrics::custom_metrics_unavailable(client).await;
                let inner = format!("unable to get metric {metric}: {kind} on {ns} {name}/{e}");
                Err(("FailedGetObjectMetric", inner.clone(), format!("failed to get object metric value: {inner}")))
            }
            "External" => {
                let (metric, selector) = spec
                    .external
                    .as_ref()
                    .map(|x| (x.metric.name.clone(), x.metric.selector.clone()))
                    .unwrap_or_default();
                let selector = match selector {
                    None => "nil".to_string(),
                    Some(s) => crate::disruption::selector_string(Some(&s)).unwrap_or_default(),
                };
                let e = metrics::external_metrics_unavailable(client).await;
                let inner = format!("unable to get external metric {ns}/{metric}/{selector}: {e}");
                Err((
                    "FailedGetExternalMetric",
                    inner.clone(),
                    format!("failed to get external metric {metric}: {inner}"),
                ))
            }
            other => {
                let e = format!("unknown metric source type {other:?}");
                Err(("InvalidMetricSourceType", e.clone(), e))
            }
        }
    }
}

#[cfg(test)]
mod tests;
