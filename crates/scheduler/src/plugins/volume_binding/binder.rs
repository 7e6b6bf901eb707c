//! The scheduler side of volume binding (upstream
//! `volumebinding/binder.go` and `pkg/volume/util`'s matching helpers):
//! classifying a pod's claims, checking bound PVs' node affinity, finding
//! the smallest available PV for each unbound WaitForFirstConsumer claim or
//! else dynamic provisioning through the claim's StorageClass, and the
//! assume cache that keeps reserved PV/PVC changes visible to later cycles
//! until the informers catch up.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::{Node, ObjectReference, PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::storage::v1::StorageClass;
use rkube_apimachinery::quantity;
use rkube_apimachinery::selector::labels::LabelSelector;

use crate::framework::Listers;
use crate::plugins::helper::node_selector_matches;

/// Set on a PVC the PV controller has finished binding.
pub const ANN_BIND_COMPLETED: &str = "pv.kubernetes.io/bind-completed";
/// Set on a PV bound by a controller (here: the scheduler) rather than pre-bound by a user.
pub const ANN_BOUND_BY_CONTROLLER: &str = "pv.kubernetes.io/bound-by-controller";
/// The node a claim is to be provisioned for.
pub const ANN_SELECTED_NODE: &str = "volume.kubernetes.io/selected-node";
/// The deprecated class annotation, preferred over `spec.storageClassName`.
pub const ANN_STORAGE_CLASS: &str = "volume.beta.kubernetes.io/storage-class";
/// A provisioner that never provisions (local volumes).
pub const NOT_SUPPORTED_PROVISIONER: &str = "kubernetes.io/no-provisioner";

/// Upstream `ErrReasonBindConflict`.
pub const ERR_REASON_BIND_CONFLICT: &str = "node(s) didn't find available persistent volumes to bind";
/// Upstream `ErrReasonNodeConflict`.
pub const ERR_REASON_NODE_CONFLICT: &str = "node(s) had volume node affinity conflict";
/// Upstream `ErrReasonNotEnoughSpace`.
pub const ERR_REASON_NOT_ENOUGH_SPACE: &str = "node(s) did not have enough free storage";
/// Upstream `ErrReasonPVNotExist`.
pub const ERR_REASON_PV_NOT_EXIST: &str = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)";

/// `namespace/name` of a claim.
pub fn claim_key(pvc: &PersistentVolumeClaim) -> String {
    format!("{}/{}", pvc.metadata.namespace.as_deref().unwrap_or(""), pvc.metadata.name.as_deref().unwrap_or(""))
}

fn annotation<'a>(meta: &'a k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta, key: &str) -> Option<&'a str> {
    meta.annotations.as_ref().and_then(|a| a.get(key)).map(String::as_str)
}

/// Upstream `GetPersistentVolumeClaimClass`: the beta annotation, else
/// `spec.storageClassName`, else "".
pub fn claim_class(pvc: &PersistentVolumeClaim) -> String {
    annotation(&pvc.metadata, ANN_STORAGE_CLASS)
        .map(str::to_string)
        .or_else(|| pvc.spec.as_ref().and_then(|s| s.storage_class_name.clone()))
        .unwrap_or_default()
}

/// Upstream `GetPersistentVolumeClass`.
pub fn volume_class(pv: &PersistentVolume) -> String {
    annotation(&pv.metadata, ANN_STORAGE_CLASS)
        .map(str::to_string)
        .or_else(|| pv.spec.as_ref().and_then(|s| s.storage_class_name.clone()))
        .unwrap_or_default()
}

/// Whether the claim is bound and the PV controller finished (upstream `isPVCFullyBound`).
pub fn is_fully_bound(pvc: &PersistentVolumeClaim) -> bool {
    pvc.spec.as_ref().and_then(|s| s.volume_name.as_deref()).is_some_and(|v| !v.is_empty())
        && annotation(&pvc.metadata, ANN_BIND_COMPLETED).is_some()
}

fn volume_name(pvc: &PersistentVolumeClaim) -> &str {
    pvc.spec.as_ref().and_then(|s| s.volume_name.as_deref()).unwrap_or("")
}

/// A claim's storage request in bytes (0 when unset).
pub fn claim_request(pvc: &PersistentVolumeClaim) -> i128 {
    pvc.spec
        .as_ref()
        .and_then(|s| s.resources.as_ref())
        .and_then(|r| r.requests.as_ref())
        .and_then(|r| r.get("storage"))
        .and_then(|q| quantity::value(&q.0))
        .unwrap_or(0)
}

fn volume_capacity(pv: &PersistentVolume) -> i128 {
    pv.spec
        .as_ref()
        .and_then(|s| s.capacity.as_ref())
        .and_then(|c| c.get("storage"))
        .and_then(|q| quantity::value(&q.0))
        .unwrap_or(0)
}

/// Upstream `CheckNodeAffinity`: a PV without required node affinity fits every node.
pub fn pv_fits_node(pv: &PersistentVolume, node: &Node) -> bool {
    match pv.spec.as_ref().and_then(|s| s.node_affinity.as_ref()).and_then(|a| a.required.as_ref()) {
        Some(sel) => node_selector_matches(sel, node),
        None => true,
    }
}

/// Upstream `IsVolumeBoundToClaim`: claimRef names the claim (and its UID when set).
pub fn is_volume_bound_to_claim(pv: &PersistentVolume, pvc: &PersistentVolumeClaim) -> bool {
    let Some(r) = pv.spec.as_ref().and_then(|s| s.claim_ref.as_ref()) else { return false };
    if r.name != pvc.metadata.name || r.namespace != pvc.metadata.namespace {
        return false;
    }
    !(r.uid.as_deref().is_some_and(|u| !u.is_empty()) && r.uid != pvc.metadata.uid)
}

/// Upstream `FindMatchingVolume` on the scheduler path (node given,
/// delayed binding): a PV pre-bound to the claim wins (if it fits the
/// node); otherwise the smallest Available PV of the claim's class with
/// enough capacity, the same volume mode, matching the claim's selector,
/// the node, and every access mode the claim asks for. `excluded` PVs are
/// already chosen for other claims of the pod. Err: the claim's selector
/// does not parse.
pub fn find_matching_volume<'a>(
    pvc: &PersistentVolumeClaim,
    volumes: &'a [Arc<PersistentVolume>],
    node: &Node,
    excluded: &BTreeSet<String>,
) -> Result<Option<&'a Arc<PersistentVolume>>, String> {
    let spec = pvc.spec.clone().unwrap_or_default();
    let requested = claim_request(pvc);
    let class = claim_class(pvc);
    let selector = match &spec.selector {
        Some(s) => Some(
            LabelSelector::from_label_selector_json(&serde_json::to_value(s).map_err(|e| e.to_string())?)
                .map_err(|e| format!("error creating internal label selector for claim: {}: {e}", claim_key(pvc)))?,
        ),
        None => None,
    };
    let claim_mode = spec.volume_mode.as_deref().unwrap_or("Filesystem");
    let mut smallest: Option<(&Arc<PersistentVolume>, i128)> = None;
    for pv in volumes {
        let name = pv.metadata.name.as_deref().unwrap_or("");
        if excluded.contains(name) {
            continue;
        }
        let pv_spec = pv.spec.as_ref();
        if pv_spec.and_then(|s| s.claim_ref.as_ref()).is_some() && !is_volume_bound_to_claim(pv, pvc) {
            continue;
        }
        let capacity = volume_capacity(pv);
        if capacity < requested {
            continue;
        }
        if pv_spec.and_then(|s| s.volume_mode.as_deref()).unwrap_or("Filesystem") != claim_mode {
            continue;
        }
        if pv.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let fits = pv_fits_node(pv, node);
        if is_volume_bound_to_claim(pv, pvc) {
            return Ok(fits.then_some(pv));
        }
        if pv.status.as_ref().and_then(|s| s.phase.as_deref()) != Some("Available") {
            continue;
        }
        if let Some(sel) = &selector {
            let empty = Default::default();
            if !sel.matches(pv.metadata.labels.as_ref().unwrap_or(&empty)) {
                continue;
            }
        }
        if volume_class(pv) != class || !fits {
            continue;
        }
        let pv_modes = pv_spec.and_then(|s| s.access_modes.as_deref()).unwrap_or(&[]);
        if !spec.access_modes.iter().flatten().all(|m| pv_modes.contains(m)) {
            continue;
        }
        if smallest.is_none_or(|(_, q)| q > capacity) {
            smallest = Some((pv, capacity));
        }
    }
    Ok(smallest.map(|(pv, _)| pv))
}

/// Upstream `MatchTopologySelectorTerms`: no terms match every node; a
/// term matches when each of its `key In values` holds; empty terms match nothing.
pub fn topology_allows(class: &StorageClass, node: &Node) -> bool {
    let terms = class.allowed_topologies.as_deref().unwrap_or(&[]);
    if terms.is_empty() {
        return true;
    }
    let labels = node.metadata.labels.clone().unwrap_or_default();
    terms.iter().any(|t| {
        let exprs = t.match_label_expressions.as_deref().unwrap_or(&[]);
        !exprs.is_empty() && exprs.iter().all(|e| labels.get(&e.key).is_some_and(|v| e.values.contains(v)))
    })
}

/// A pod's claims sorted as upstream's `GetPodVolumeClaims` does.
#[derive(Clone, Debug, Default)]
pub struct PodVolumeClaims {
    /// Fully bound claims.
    pub bound: Vec<Arc<PersistentVolumeClaim>>,
    /// Unbound claims of a WaitForFirstConsumer class and no `volumeName`.
    pub unbound_delay_binding: Vec<Arc<PersistentVolumeClaim>>,
    /// Unbound claims the PV controller should bind (Immediate, or pre-bound by `volumeName`).
    pub unbound_immediate: Vec<Arc<PersistentVolumeClaim>>,
    /// For each class of a delayed claim, every PV of that class.
    pub unbound_volumes_delay_binding: HashMap<String, Vec<Arc<PersistentVolume>>>,
}

/// A static binding to make: `pv` (already carrying its claimRef once assumed) for `pvc`.
#[derive(Clone, Debug)]
pub struct BindingInfo {
    /// The PV.
    pub pv: Arc<PersistentVolume>,
    /// The claim.
    pub pvc: Arc<PersistentVolumeClaim>,
}

/// What a node needs for the pod's volumes (upstream `PodVolumes`).
#[derive(Clone, Debug, Default)]
pub struct PodVolumes {
    /// Claims to bind to existing PVs.
    pub static_bindings: Vec<BindingInfo>,
    /// Claims to provision for this node.
    pub dynamic_provisions: Vec<Arc<PersistentVolumeClaim>>,
    /// The node (PreBind re-checks PV node affinity against it).
    pub node: Option<Arc<Node>>,
}

#[derive(Default)]
struct AssumedObjects {
    /// PV name → (resourceVersion it was assumed from, assumed PV).
    pvs: HashMap<String, (Option<String>, Arc<PersistentVolume>)>,
    /// Claim key → (resourceVersion it was assumed from, assumed PVC).
    pvcs: HashMap<String, (Option<String>, Arc<PersistentVolumeClaim>)>,
}

/// The listers overlaid with assumed (reserved, not yet observed) PVs and
/// PVCs, as upstream's assume cache: an assumed object is used until the
/// informer's copy changes resourceVersion.
pub struct VolumeCache {
    listers: Listers,
    assumed: Mutex<AssumedObjects>,
}

impl VolumeCache {
    /// A cache over `listers`.
    pub fn new(listers: Listers) -> VolumeCache {
        VolumeCache { listers, assumed: Mutex::new(AssumedObjects::default()) }
    }

    /// The listers.
    pub fn listers(&self) -> &Listers {
        &self.listers
    }

    /// The PV called `name`, assumed version first.
    pub fn get_pv(&self, name: &str) -> Option<Arc<PersistentVolume>> {
        let api = self.listers.pvs.get("", name);
        let assumed = self.assumed.lock().unwrap();
        match (assumed.pvs.get(name), api) {
            (Some((rv, pv)), Some(api)) if api.metadata.resource_version == *rv => Some(pv.clone()),
            (_, api) => api,
        }
    }

    /// The claim `namespace/name`, assumed version first.
    pub fn get_pvc(&self, namespace: &str, name: &str) -> Option<Arc<PersistentVolumeClaim>> {
        let api = self.listers.pvcs.get(namespace, name);
        let assumed = self.assumed.lock().unwrap();
        match (assumed.pvcs.get(&format!("{namespace}/{name}")), api) {
            (Some((rv, pvc)), Some(api)) if api.metadata.resource_version == *rv => Some(pvc.clone()),
            (_, api) => api,
        }
    }

    /// Every PV of `class` (upstream `pvCache.ListPVs`), assumed versions first.
    pub fn list_pvs(&self, class: &str) -> Vec<Arc<PersistentVolume>> {
        let mut pvs: Vec<Arc<PersistentVolume>> = self
            .listers
            .pvs
            .list()
            .into_iter()
            .filter_map(|pv| self.get_pv(pv.metadata.name.as_deref().unwrap_or("")))
            .filter(|pv| volume_class(pv) == class)
            .collect();
        pvs.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        pvs
    }

    /// Records `pv` as assumed over its informer version.
    pub fn assume_pv(&self, pv: Arc<PersistentVolume>) {
        let name = pv.metadata.name.clone().unwrap_or_default();
        let rv = self.listers.pvs.get("", &name).and_then(|p| p.metadata.resource_version.clone());
        self.assumed.lock().unwrap().pvs.insert(name, (rv, pv));
    }

    /// Records `pvc` as assumed over its informer version.
    pub fn assume_pvc(&self, pvc: Arc<PersistentVolumeClaim>) {
        let ns = pvc.metadata.namespace.clone().unwrap_or_default();
        let name = pvc.metadata.name.clone().unwrap_or_default();
        let rv = self.listers.pvcs.get(&ns, &name).and_then(|p| p.metadata.resource_version.clone());
        self.assumed.lock().unwrap().pvcs.insert(format!("{ns}/{name}"), (rv, pvc));
    }

    /// Drops the assumed versions of these objects (Unreserve, or once bound).
    pub fn restore(&self, pvs: &[String], pvcs: &[String]) {
        let mut a = self.assumed.lock().unwrap();
        for n in pvs {
            a.pvs.remove(n);
        }
        for k in pvcs {
            a.pvcs.remove(k);
        }
    }

    /// Upstream `IsDelayBindingMode`: the claim's class exists and binds
    /// WaitForFirstConsumer. Err: the class has no volumeBindingMode.
    pub fn is_delay_binding(&self, pvc: &PersistentVolumeClaim) -> Result<bool, String> {
        let class = claim_class(pvc);
        if class.is_empty() {
            return Ok(false);
        }
        let Some(sc) = self.listers.storage_classes.get("", &class) else { return Ok(false) };
        match sc.volume_binding_mode.as_deref() {
            None => Err(format!("VolumeBindingMode not set for StorageClass \"{class}\"")),
            Some(m) => Ok(m == "WaitForFirstConsumer"),
        }
    }

    /// Upstream `GetPodVolumeClaims` over the pod's PVC volumes (generic
    /// ephemeral volumes by their `<pod>-<volume>` claim). Err: a claim is
    /// missing or its class is misconfigured.
    pub fn pod_volume_claims(&self, pod: &Pod) -> Result<PodVolumeClaims, String> {
        let ns = pod.metadata.namespace.as_deref().unwrap_or("");
        let mut out = PodVolumeClaims::default();
        for name in pod_claim_names(pod) {
            let Some(pvc) = self.get_pvc(ns, &name) else {
                return Err(format!("error getting PVC \"{ns}/{name}\": persistentvolumeclaim \"{name}\" not found"));
            };
            if is_fully_bound(&pvc) {
                out.bound.push(pvc);
            } else if self.is_delay_binding(&pvc)? && volume_name(&pvc).is_empty() {
                out.unbound_delay_binding.push(pvc);
            } else {
                out.unbound_immediate.push(pvc);
            }
        }
        for pvc in &out.unbound_delay_binding {
            let class = claim_class(pvc);
            if let std::collections::hash_map::Entry::Vacant(e) = out.unbound_volumes_delay_binding.entry(class) {
                let pvs = self.list_pvs(e.key());
                e.insert(pvs);
            }
        }
        Ok(out)
    }

    /// Upstream `FindPodVolumes` for one node: the bindings and
    /// provisionings it would need, or the conflict reasons (in upstream
    /// order). Err: an internal problem (class lookup, selector).
    pub fn find_pod_volumes(
        &self,
        claims: &PodVolumeClaims,
        node: &Arc<Node>,
    ) -> Result<(PodVolumes, Vec<&'static str>), String> {
        let mut pv = PodVolumes { node: Some(node.clone()), ..Default::default() };
        let (mut bound_ok, mut pvs_found, mut unbound_ok, mut storage_ok) = (true, true, true, true);
        for pvc in &claims.bound {
            match self.get_pv(volume_name(pvc)) {
                None => {
                    pvs_found = false;
                    break;
                }
                Some(v) if !pv_fits_node(&v, node) => {
                    bound_ok = false;
                    break;
                }
                Some(_) => {}
            }
        }
        let node_name = node.metadata.name.as_deref().unwrap_or("");
        'unbound: {
            if claims.unbound_delay_binding.is_empty() {
                break 'unbound;
            }
            let mut to_match = Vec::new();
            let mut to_provision = Vec::new();
            for pvc in &claims.unbound_delay_binding {
                match annotation(&pvc.metadata, ANN_SELECTED_NODE) {
                    Some(sel) if sel != node_name => {
                        unbound_ok = false;
                        break 'unbound;
                    }
                    Some(_) => to_provision.push(pvc.clone()),
                    None => to_match.push(pvc.clone()),
                }
            }
            // Smallest claims first, so each takes the smallest PV that fits it.
            to_match.sort_by_key(|p| claim_request(p));
            let mut chosen = BTreeSet::new();
            for pvc in to_match {
                let empty = Vec::new();
                let pvs = claims.unbound_volumes_delay_binding.get(&claim_class(&pvc)).unwrap_or(&empty);
                match find_matching_volume(&pvc, pvs, node, &chosen)? {
                    Some(v) => {
                        chosen.insert(v.metadata.name.clone().unwrap_or_default());
                        pv.static_bindings.push(BindingInfo { pv: v.clone(), pvc });
                    }
                    None => {
                        unbound_ok = false;
                        to_provision.push(pvc);
                    }
                }
            }
            if !to_provision.is_empty() {
                (unbound_ok, storage_ok) = (true, true);
                for pvc in to_provision {
                    let class = claim_class(&pvc);
                    if class.is_empty() {
                        return Err(format!("no class for claim \"{}\"", claim_key(&pvc)));
                    }
                    let Some(sc) = self.listers.storage_classes.get("", &class) else {
                        return Err(format!("failed to find storage class \"{class}\""));
                    };
                    if sc.provisioner.is_empty()
                        || sc.provisioner == NOT_SUPPORTED_PROVISIONER
                        || !topology_allows(&sc, node)
                    {
                        unbound_ok = false;
                        pv.dynamic_provisions.clear();
                        break;
                    }
                    // CSIStorageCapacity is not tracked: capacity is assumed sufficient.
                    pv.dynamic_provisions.push(pvc);
                }
            }
        }
        let mut reasons = Vec::new();
        if !bound_ok {
            reasons.push(ERR_REASON_NODE_CONFLICT);
        }
        if !unbound_ok {
            reasons.push(ERR_REASON_BIND_CONFLICT);
        }
        if !storage_ok {
            reasons.push(ERR_REASON_NOT_ENOUGH_SPACE);
        }
        if !pvs_found {
            reasons.push(ERR_REASON_PV_NOT_EXIST);
        }
        Ok((pv, reasons))
    }
}

/// The claim names of a pod's PVC and generic ephemeral volumes.
pub fn pod_claim_names(pod: &Pod) -> Vec<String> {
    let pod_name = pod.metadata.name.as_deref().unwrap_or("");
    pod.spec
        .as_ref()
        .and_then(|s| s.volumes.as_ref())
        .into_iter()
        .flatten()
        .filter_map(|v| {
            if let Some(c) = &v.persistent_volume_claim {
                Some(c.claim_name.clone())
            } else {
                v.ephemeral.as_ref().map(|_| format!("{pod_name}-{}", v.name))
            }
        })
        .collect()
}

/// Upstream `GetLocalPersistentVolumeNodeNames`: the `kubernetes.io/hostname In`
/// values of a PV's required node affinity (terms ORed, expressions ANDed).
pub fn local_pv_node_names(pv: &PersistentVolume) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let Some(req) = pv.spec.as_ref().and_then(|s| s.node_affinity.as_ref()).and_then(|a| a.required.as_ref()) else {
        return out;
    };
    for term in &req.node_selector_terms {
        let mut nodes: Option<BTreeSet<String>> = None;
        for e in term.match_expressions.iter().flatten() {
            if e.key == "kubernetes.io/hostname" && e.operator == "In" {
                let vals: BTreeSet<String> = e.values.iter().flatten().cloned().collect();
                nodes = Some(match nodes {
                    None => vals,
                    Some(n) => n.intersection(&vals).cloned().collect(),
                });
            }
        }
        out.extend(nodes.unwrap_or_default());
    }
    out
}

/// Upstream `GetBindVolumeToClaim`: `pv` with its claimRef set to `pvc`
/// (and `bound-by-controller` when it was not pre-bound); `dirty` when changed.
pub fn bind_volume_to_claim(pv: &PersistentVolume, pvc: &PersistentVolumeClaim) -> (PersistentVolume, bool) {
    let should_set_bound_by_controller = !is_volume_bound_to_claim(pv, pvc);
    let mut clone = pv.clone();
    let mut dirty = false;
    let r = pv.spec.as_ref().and_then(|s| s.claim_ref.as_ref());
    if r.is_none_or(|r| {
        r.name != pvc.metadata.name || r.namespace != pvc.metadata.namespace || r.uid != pvc.metadata.uid
    }) {
        clone.spec.get_or_insert_with(Default::default).claim_ref = Some(ObjectReference {
            kind: Some("PersistentVolumeClaim".into()),
            api_version: Some("v1".into()),
            namespace: pvc.metadata.namespace.clone(),
            name: pvc.metadata.name.clone(),
            uid: pvc.metadata.uid.clone(),
            resource_version: pvc.metadata.resource_version.clone(),
            ..Default::default()
        });
        dirty = true;
    }
    let anns = clone.metadata.annotations.get_or_insert_with(Default::default);
    if should_set_bound_by_controller && !anns.contains_key(ANN_BOUND_BY_CONTROLLER) {
        anns.insert(ANN_BOUND_BY_CONTROLLER.into(), "yes".into());
        dirty = true;
    }
    (clone, dirty)
}
