//! VolumeBinding (upstream `plugins/volumebinding`): places pods whose
//! PersistentVolumeClaims are bound only on nodes their PVs' node affinity
//! allows, and chooses for unbound WaitForFirstConsumer claims either an
//! available PV that fits the node or dynamic provisioning for it, which it
//! then records through the API before the pod is bound.
//!
//! - PreFilter: Skip when the pod has no PVC (or generic ephemeral)
//!   volume; UnschedulableAndUnresolvable when a claim is missing, lost,
//!   being deleted, or unbound with Immediate binding ("pod has unbound
//!   immediate PersistentVolumeClaims"); narrows the nodes to those named by
//!   bound local PVs' `kubernetes.io/hostname` affinity.
//! - Filter: UnschedulableAndUnresolvable with upstream's reasons
//!   ([`binder::ERR_REASON_NODE_CONFLICT`], [`binder::ERR_REASON_BIND_CONFLICT`], …).
//! - Reserve/Unreserve: assume (and revert) the PV claimRefs and the
//!   claims' `volume.kubernetes.io/selected-node` in a cache shared by
//!   later cycles.
//! - PreBind: writes those through the API client, then waits (polling
//!   the informers every second, up to `bindTimeoutSeconds`, default 600)
//!   until every claim is bound with `pv.kubernetes.io/bind-completed`.
//!   Completing a binding is the PV controller's job (and the
//!   provisioner's for dynamic provisioning: rkube's local-path one,
//!   `rkube_controllers::persistentvolume`); without them PreBind for a
//!   pod with unbound claims ends with "binding volumes: context deadline
//!   exceeded" and the pod is retried.
//!   The wait is a plain async sleep loop, so dropping the PreBind future
//!   cancels it.
//!
//! Not modelled: in-tree → CSI PV translation, CSIStorageCapacity
//! (capacity is assumed sufficient), and Score (upstream scores only with
//! the alpha StorageCapacityScoring gate, off in 1.33, where a `shape` arg
//! is rejected as here).

pub mod binder;

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use kube::api::{Api, PostParams};
use rkube_apimachinery::validation::field::{BadValue, ErrorList, FieldError, Path};
use serde::Deserialize;

use self::binder::*;
use crate::framework::*;
use crate::plugins::names;

const STATE_KEY: &str = "VolumeBinding";
const RESERVED_KEY: &str = "ReserveVolumeBinding";
/// Upstream's default `bindTimeoutSeconds`.
pub const DEFAULT_BIND_TIMEOUT_SECONDS: i64 = 600;

/// `VolumeBindingArgs` (v1).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VolumeBindingArgs {
    /// How long PreBind waits for the bindings (seconds; default 600).
    #[serde(default)]
    pub bind_timeout_seconds: Option<i64>,
    /// Score shape (StorageCapacityScoring, alpha and off in 1.33: rejected).
    #[serde(default)]
    pub shape: Option<Vec<super::noderesources::strategies::UtilizationShapePoint>>,
}

/// What PreFilter found, shared with Filter (per-node results) and Reserve.
struct StateData {
    claims: PodVolumeClaims,
    /// Filter's result per feasible node (Filter runs in parallel; upstream
    /// guards the same map with a lock).
    by_node: Arc<Mutex<HashMap<String, PodVolumes>>>,
}

/// What Reserve assumed for the chosen node.
#[derive(Clone)]
struct Reserved {
    all_bound: bool,
    volumes: Option<PodVolumes>,
}

/// The VolumeBinding plugin.
pub struct VolumeBinding {
    cache: Arc<VolumeCache>,
    client: Option<kube::Client>,
    bind_timeout: Duration,
}

/// Builds VolumeBinding from `VolumeBindingArgs`; Err in upstream's validation wording.
pub fn new(args: Option<&serde_json::Value>, handle: &Handle) -> Result<Arc<dyn Plugin>, String> {
    Ok(Arc::new(VolumeBinding::from_args(args, handle)?))
}

fn render_shape(shape: &[super::noderesources::strategies::UtilizationShapePoint]) -> String {
    let points: Vec<String> = shape
        .iter()
        .map(|p| format!("config.UtilizationShapePoint{{Utilization:{}, Score:{}}}", p.utilization, p.score))
        .collect();
    format!("[]config.UtilizationShapePoint{{{}}}", points.join(", "))
}

impl VolumeBinding {
    /// Parses, defaults and validates the args.
    pub fn from_args(args: Option<&serde_json::Value>, handle: &Handle) -> Result<VolumeBinding, String> {
        let a: VolumeBindingArgs = match args {
            Some(v) => serde_json::from_value(v.clone()).map_err(|e| e.to_string())?,
            None => VolumeBindingArgs::default(),
        };
        let timeout = a.bind_timeout_seconds.unwrap_or(DEFAULT_BIND_TIMEOUT_SECONDS);
        let mut errs = ErrorList::new();
        if timeout < 0 {
            errs.push(FieldError::invalid(
                &Path::nil().child("bindTimeoutSeconds"),
                timeout,
                "invalid BindTimeoutSeconds, should not be a negative value",
            ));
        }
        if let Some(shape) = &a.shape {
            errs.push(FieldError::invalid(
                &Path::nil().child("shape"),
                BadValue::Raw(render_shape(shape)),
                "unexpected field `shape`, remove it or turn on the feature gate StorageCapacityScoring",
            ));
        }
        if let Some(m) = errs.aggregate_message() {
            return Err(m);
        }
        Ok(VolumeBinding {
            cache: Arc::new(VolumeCache::new(handle.listers.clone())),
            client: handle.client.clone(),
            bind_timeout: Duration::from_secs(timeout as u64),
        })
    }

    /// Upstream `podHasPVCs`: whether the pod uses claims, and Err with
    /// upstream's text when one is missing, lost, deleting or not the pod's.
    fn pod_has_pvcs(&self, pod: &k8s_openapi::api::core::v1::Pod) -> Result<bool, String> {
        let ns = pod.metadata.namespace.as_deref().unwrap_or("");
        let pod_name = pod.metadata.name.as_deref().unwrap_or("");
        let mut has = false;
        for v in pod.spec.as_ref().and_then(|s| s.volumes.as_ref()).into_iter().flatten() {
            let (name, ephemeral) = match (&v.persistent_volume_claim, &v.ephemeral) {
                (Some(c), _) => (c.claim_name.clone(), false),
                (None, Some(_)) => (format!("{pod_name}-{}", v.name), true),
                _ => continue,
            };
            has = true;
            let Some(pvc) = self.cache.get_pvc(ns, &name) else {
                return Err(if ephemeral {
                    format!("waiting for ephemeral volume controller to create the persistentvolumeclaim \"{name}\"")
                } else {
                    format!("persistentvolumeclaim \"{name}\" not found")
                });
            };
            if pvc.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Lost") {
                return Err(format!(
                    "persistentvolumeclaim \"{name}\" bound to non-existent persistentvolume \"{}\"",
                    pvc.spec.as_ref().and_then(|s| s.volume_name.as_deref()).unwrap_or("")
                ));
            }
            if pvc.metadata.deletion_timestamp.is_some() {
                return Err(format!("persistentvolumeclaim \"{name}\" is being deleted"));
            }
            if ephemeral {
                let owned = pvc
                    .metadata
                    .owner_references
                    .iter()
                    .flatten()
                    .any(|o| o.controller == Some(true) && Some(&o.uid) == pod.metadata.uid.as_ref());
                if !owned {
                    return Err(format!("PVC {ns}/{name} was not created for pod {ns}/{pod_name} (pod is not owner)"));
                }
            }
        }
        Ok(has)
    }

    /// Upstream `checkBindings` against the informers: Ok(true) when all
    /// done, Ok(false) to keep waiting, Err when a binding was undone.
    fn check_bindings(&self, node: &str, volumes: &PodVolumes, min_rv: &HashMap<String, u64>) -> Result<bool, String> {
        let listers = self.cache.listers();
        let rv = |m: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta| {
            m.resource_version.as_deref().and_then(|r| r.parse::<u64>().ok()).unwrap_or(0)
        };
        let stale = |key: String, meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta| {
            min_rv.get(&key).is_some_and(|&want| rv(meta) < want)
        };
        let node_obj = volumes.node.as_ref();
        for b in &volumes.static_bindings {
            let pv_name = b.pv.metadata.name.as_deref().unwrap_or("");
            let Some(pv) = listers.pvs.get("", pv_name) else {
                return Err(format!("failed to check binding: persistentvolume \"{pv_name}\" not found"));
            };
            let key = claim_key(&b.pvc);
            let (ns, name) = key.split_once('/').unwrap_or(("", ""));
            let Some(pvc) = listers.pvcs.get(ns, name) else {
                return Err(format!("failed to check binding: persistentvolumeclaim \"{name}\" not found"));
            };
            if stale(format!("pv/{pv_name}"), &pv.metadata) {
                return Ok(false);
            }
            if node_obj.is_some_and(|n| !pv_fits_node(&pv, n)) {
                return Err(format!(
                    "pv \"{pv_name}\" node affinity doesn't match node \"{node}\": no matching NodeSelectorTerms"
                ));
            }
            if pv
                .spec
                .as_ref()
                .and_then(|s| s.claim_ref.as_ref())
                .is_none_or(|r| r.uid.as_deref().unwrap_or("").is_empty())
            {
                return Err(format!("ClaimRef got reset for pv \"{pv_name}\""));
            }
            if !is_fully_bound(&pvc) {
                return Ok(false);
            }
        }
        for claim in &volumes.dynamic_provisions {
            let key = claim_key(claim);
            let (ns, name) = key.split_once('/').unwrap_or(("", ""));
            let Some(pvc) = listers.pvcs.get(ns, name) else {
                return Err(format!("failed to check provisioning pvc: persistentvolumeclaim \"{name}\" not found"));
            };
            if stale(format!("pvc/{key}"), &pvc.metadata) {
                return Ok(false);
            }
            let selected = pvc.metadata.annotations.as_ref().and_then(|a| a.get(ANN_SELECTED_NODE));
            if pvc.metadata.annotations.is_none() {
                return Err(format!("selectedNode annotation reset for PVC \"{name}\""));
            }
            if selected.map(String::as_str) != Some(node) {
                return Err(format!("provisioning failed for PVC \"{name}\""));
            }
            let vn = pvc.spec.as_ref().and_then(|s| s.volume_name.as_deref()).unwrap_or("");
            if !vn.is_empty() {
                let Some(pv) = listers.pvs.get("", vn) else { return Ok(false) };
                if node_obj.is_some_and(|n| !pv_fits_node(&pv, n)) {
                    return Err(format!(
                        "pv \"{vn}\" node affinity doesn't match node \"{node}\": no matching NodeSelectorTerms"
                    ));
                }
            }
            if !is_fully_bound(&pvc) {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Upstream `BindPodVolumes`: API updates, then the bounded wait.
    async fn bind_pod_volumes(&self, node: &str, volumes: &PodVolumes) -> Result<(), String> {
        let Some(client) = self.client.clone() else { return Err("no API client to bind volumes with".into()) };
        let mut min_rv = HashMap::new();
        let rv_of = |m: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta| {
            m.resource_version.as_deref().and_then(|r| r.parse::<u64>().ok()).unwrap_or(0)
        };
        for b in &volumes.static_bindings {
            let name = b.pv.metadata.name.clone().unwrap_or_default();
            let api: Api<PersistentVolume> = Api::all(client.clone());
            let updated = api.replace(&name, &PostParams::default(), &b.pv).await.map_err(|e| e.to_string())?;
            min_rv.insert(format!("pv/{name}"), rv_of(&updated.metadata));
        }
        for claim in &volumes.dynamic_provisions {
            let ns = claim.metadata.namespace.clone().unwrap_or_default();
            let name = claim.metadata.name.clone().unwrap_or_default();
            let api: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), &ns);
            let updated = api.replace(&name, &PostParams::default(), claim).await.map_err(|e| e.to_string())?;
            min_rv.insert(format!("pvc/{ns}/{name}"), rv_of(&updated.metadata));
        }
        let deadline = tokio::time::Instant::now() + self.bind_timeout;
        loop {
            tokio::time::sleep(Duration::from_secs(1).min(self.bind_timeout)).await;
            match self.check_bindings(node, volumes, &min_rv) {
                Ok(true) => return Ok(()),
                Ok(false) => {}
                Err(e) => return Err(format!("binding volumes: {e}")),
            }
            if tokio::time::Instant::now() >= deadline {
                return Err("binding volumes: context deadline exceeded".into());
            }
        }
    }

    fn assumed_names(volumes: &PodVolumes) -> (Vec<String>, Vec<String>) {
        (
            volumes.static_bindings.iter().map(|b| b.pv.metadata.name.clone().unwrap_or_default()).collect(),
            volumes.dynamic_provisions.iter().map(|c| claim_key(c)).collect(),
        )
    }
}

#[async_trait::async_trait]
impl Plugin for VolumeBinding {
    fn name(&self) -> &'static str {
        names::VOLUME_BINDING
    }

    fn extension_points(&self) -> &'static [ExtensionPoint] {
        &[ExtensionPoint::PreFilter, ExtensionPoint::Filter, ExtensionPoint::Reserve, ExtensionPoint::PreBind]
    }

    /// StorageClass, PVC and PV adds/updates, nodes added or relabelled,
    /// CSINode changes (upstream, queueing hints on).
    fn events_to_register(&self) -> Vec<ClusterEvent> {
        vec![
            ClusterEvent { resource: EventResource::StorageClass, actions: action::ADD | action::UPDATE },
            ClusterEvent { resource: EventResource::PersistentVolumeClaim, actions: action::ADD | action::UPDATE },
            ClusterEvent { resource: EventResource::PersistentVolume, actions: action::ADD | action::UPDATE },
            ClusterEvent { resource: EventResource::Node, actions: action::ADD | action::UPDATE_NODE_LABEL },
            ClusterEvent { resource: EventResource::CSINode, actions: action::ADD | action::UPDATE },
        ]
    }

    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        _snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        match self.pod_has_pvcs(&pod.pod) {
            Err(e) => return (None, Status::unresolvable(e)),
            Ok(false) => {
                state.write(STATE_KEY, StateData { claims: PodVolumeClaims::default(), by_node: Default::default() });
                return (None, Status::skip());
            }
            Ok(true) => {}
        }
        let claims = match self.cache.pod_volume_claims(&pod.pod) {
            Ok(c) => c,
            Err(e) => return (None, Status::error(e)),
        };
        if !claims.unbound_immediate.is_empty() {
            return (None, Status::unresolvable("pod has unbound immediate PersistentVolumeClaims"));
        }
        // Bound local PVs pin the pod to their hostnames (upstream GetEligibleNodes).
        let mut eligible: Option<BTreeSet<String>> = None;
        let mut missing = false;
        for pvc in &claims.bound {
            let vn = pvc.spec.as_ref().and_then(|s| s.volume_name.as_deref()).unwrap_or("");
            let Some(pv) = self.cache.get_pv(vn) else {
                missing = true;
                continue;
            };
            let names = local_pv_node_names(&pv);
            if !names.is_empty() {
                eligible = Some(match eligible {
                    None => names,
                    Some(e) => e.intersection(&names).cloned().collect(),
                });
            }
        }
        let result = if missing { None } else { eligible.map(|n| PreFilterResult { node_names: Some(n) }) };
        state.write(STATE_KEY, StateData { claims, by_node: Default::default() });
        (result, Status::success())
    }

    fn filter(&self, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> Status {
        let Some(s) = state.read::<StateData>(STATE_KEY) else {
            return Status::error(format!("error reading \"{STATE_KEY}\" from cycleState: not found"));
        };
        let Some(n) = node.node.as_ref() else { return Status::error("node not found") };
        match self.cache.find_pod_volumes(&s.claims, n) {
            Err(e) => Status::error(e),
            Ok((_, reasons)) if !reasons.is_empty() => Status {
                code: Code::UnschedulableAndUnresolvable,
                reasons: reasons.into_iter().map(str::to_string).collect(),
                plugin: "",
            },
            Ok((volumes, _)) => {
                s.by_node.lock().unwrap().insert(node.node_name().to_string(), volumes);
                Status::success()
            }
        }
    }

    fn reserve(&self, state: &mut CycleState, pod: &PodInfo, node: &str) -> Status {
        let volumes = state.read::<StateData>(STATE_KEY).and_then(|s| s.by_node.lock().unwrap().get(node).cloned());
        let Some(volumes) = volumes else {
            // The pod has no claims (PreFilter skipped).
            state.write(RESERVED_KEY, Reserved { all_bound: true, volumes: None });
            return Status::success();
        };
        let ns = pod.pod.metadata.namespace.as_deref().unwrap_or("");
        let all_bound =
            pod_claim_names(&pod.pod).iter().all(|n| self.cache.get_pvc(ns, n).is_some_and(|c| is_fully_bound(&c)));
        if all_bound {
            state.write(RESERVED_KEY, Reserved { all_bound: true, volumes: None });
            return Status::success();
        }
        let mut assumed = PodVolumes { node: volumes.node.clone(), ..Default::default() };
        for b in &volumes.static_bindings {
            let (pv, dirty) = bind_volume_to_claim(&b.pv, &b.pvc);
            let pv = Arc::new(pv);
            if dirty {
                self.cache.assume_pv(pv.clone());
            }
            assumed.static_bindings.push(BindingInfo { pv, pvc: b.pvc.clone() });
        }
        for c in &volumes.dynamic_provisions {
            let mut clone = (**c).clone();
            clone
                .metadata
                .annotations
                .get_or_insert_with(Default::default)
                .insert(ANN_SELECTED_NODE.into(), node.into());
            let clone = Arc::new(clone);
            self.cache.assume_pvc(clone.clone());
            assumed.dynamic_provisions.push(clone);
        }
        state.write(RESERVED_KEY, Reserved { all_bound: false, volumes: Some(assumed) });
        Status::success()
    }

    fn unreserve(&self, state: &mut CycleState, _pod: &PodInfo, _node: &str) {
        if let Some(Reserved { volumes: Some(v), .. }) = state.read::<Reserved>(RESERVED_KEY) {
            let (pvs, pvcs) = Self::assumed_names(v);
            self.cache.restore(&pvs, &pvcs);
        }
    }

    async fn pre_bind(&self, state: &CycleState, pod: &PodInfo, node: &str) -> Status {
        let Some(r) = state.read::<Reserved>(RESERVED_KEY) else {
            return Status::error(format!("error reading \"{RESERVED_KEY}\" from cycleState: not found"));
        };
        if r.all_bound {
            return Status::success();
        }
        let Some(volumes) = r.volumes.as_ref() else {
            return Status::error(format!("no pod volumes found for node \"{node}\""));
        };
        tracing::debug!(component = "kube-scheduler", pod = %pod.key(), node, "binding volumes");
        match self.bind_pod_volumes(node, volumes).await {
            Ok(()) => {
                // The informers now hold the bound objects.
                let (pvs, pvcs) = Self::assumed_names(volumes);
                self.cache.restore(&pvs, &pvcs);
                Status::success()
            }
            Err(e) => {
                tracing::info!(component = "kube-scheduler", pod = %pod.key(), node, error = %e, "failed to bind volumes");
                Status::error(e)
            }
        }
    }
}

#[cfg(test)]
mod tests;
