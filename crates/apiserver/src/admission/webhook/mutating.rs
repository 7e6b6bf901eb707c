//! The MutatingAdmissionWebhook plugin (upstream
//! `pkg/admission/plugin/webhook/mutating`): the matching webhooks of the
//! MutatingWebhookConfigurations are called one after another in the
//! mutating phase; each may deny, or answer a JSONPatch that is applied
//! (then the kind's defaults again) before the next one sees the object.
//!
//! Reinvocation (`reinvocationPolicy: IfNeeded`): once every webhook ran,
//! the `IfNeeded` webhooks called before a later webhook changed the
//! object run once more, as upstream's reinvoking chain does (no in-tree
//! plugin mutates after this one, so re-running only this plugin is the
//! same). The kind's validation and the validating plugins then see the
//! final object.

use std::collections::HashSet;
use std::sync::Arc;

use async_trait::async_trait;
use rkube_apimachinery::patch::json_patch;
use rkube_apimachinery::{meta, ApiError};
use serde_json::{json, Value};

use super::super::plugins::Stores;
use super::super::{Attributes, Plugin};
use super::source::HookSource;
use super::{call, call_failed, check_dry_run, denied, should_call, Failure, Hook};

/// Audit annotation key prefix for whether a webhook mutated the object.
const MUTATION_PREFIX: &str = "mutation.webhook.admission.k8s.io/";
/// Audit annotation key prefix for webhooks that failed open.
const FAILED_OPEN_PREFIX: &str = "failed-open.mutation.webhook.admission.k8s.io/";

/// The MutatingAdmissionWebhook plugin.
pub struct MutatingWebhook {
    stores: Arc<Stores>,
    source: HookSource,
}

impl MutatingWebhook {
    /// The plugin over the server's stores; `None` without a store of
    /// MutatingWebhookConfigurations.
    pub fn new(stores: &Stores) -> Option<MutatingWebhook> {
        let store = stores.get(&("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations"))?.clone();
        Some(MutatingWebhook { stores: Arc::new(stores.clone()), source: HookSource::new(store) })
    }

    /// Calls one webhook; `Ok(true)` when it changed the object.
    async fn invoke(
        &self,
        hook: &Hook,
        round: usize,
        index: usize,
        attrs: &Attributes<'_>,
        object: &mut Option<&mut Value>,
    ) -> Result<Option<bool>, ApiError> {
        let Some(matched) = should_call(hook, &self.stores, attrs, object.as_deref()).await? else {
            return Ok(None);
        };
        let outcome = match check_dry_run(hook, attrs.dry_run) {
            Err(f) => Err(f),
            Ok(()) => {
                let v = super::matcher::views(attrs, &matched, object.as_deref());
                let (obj, old) = (v.object.as_ref(), v.old.as_ref());
                let request =
                    super::review::admission_request(&meta::new_uid(), attrs, &matched, object.as_deref(), obj, old);
                match call(hook, &self.stores, request, true).await {
                    Err(f) => Err(f),
                    Ok(resp) => self.apply_response(hook, attrs, object, &v, resp),
                }
            }
        };
        let changed = match outcome {
            Ok(changed) => changed,
            Err(Failure::Refused(e)) => return Err(e),
            Err(Failure::Call(why)) if hook.ignore_failures => {
                tracing::warn!(component = crate::COMPONENT, webhook = %hook.name, error = %why, "failed calling webhook, failing open");
                attrs.request.annotate(format!("{FAILED_OPEN_PREFIX}round_{round}_index_{index}"), hook.name.clone());
                false
            }
            Err(Failure::Call(why)) => return Err(call_failed(&hook.name, &why)),
        };
        let note = json!({"configuration": hook.configuration, "webhook": hook.name, "mutated": changed});
        attrs.request.annotate(format!("{MUTATION_PREFIX}round_{round}_index_{index}"), note.to_string());
        Ok(Some(changed))
    }

    /// Warnings, audit annotations, a denial, or the patch applied.
    fn apply_response(
        &self,
        hook: &Hook,
        attrs: &Attributes<'_>,
        object: &mut Option<&mut Value>,
        view: &super::matcher::Views,
        resp: super::review::Response,
    ) -> Result<bool, Failure> {
        for (k, v) in &resp.audit_annotations {
            attrs.request.annotate(format!("{}/{k}", hook.name), v.clone());
        }
        for w in &resp.warnings {
            attrs.request.warn(w.clone());
        }
        if !resp.allowed {
            return Err(Failure::Refused(denied(&hook.name, resp.result.as_ref())));
        }
        let Some(patch) = resp.patch else { return Ok(false) };
        let ops = json_patch::decode(&patch)
            .map_err(|e| Failure::Call(format!("received undecodable patch in webhook response: {e}")))?;
        if ops.is_empty() {
            return Ok(false);
        }
        let Some(obj) = object.as_deref_mut() else {
            return Err(Failure::Refused(ApiError::Internal(format!(
                "admission webhook {:?} attempted to modify the object, which is not supported for this operation",
                hook.name
            ))));
        };
        if resp.patch_type.as_deref() != Some("JSONPatch") {
            let why = format!("unsupported patch type {:?}", resp.patch_type.unwrap_or_default());
            return Err(Failure::Call(why));
        }
        // The patch applies to what the webhook saw (the matched version),
        // then goes back to the admitted version.
        let seen = view.object.as_ref().unwrap_or(obj);
        let patched = json_patch::apply(seen, &ops).map_err(|e| Failure::Refused(ApiError::Internal(e.to_string())))?;
        let mut patched = match view.conversion {
            Some(c) => c.to_storage(&patched),
            None => patched,
        };
        let info = attrs.resource;
        if let Some(store) = self.stores.get(&(info.group, info.version, info.plural)) {
            if attrs.subresource.is_empty() {
                store.strategy().default(&mut patched);
            }
        }
        let changed = patched != *obj;
        *obj = patched;
        Ok(changed)
    }
}

#[async_trait]
impl Plugin for MutatingWebhook {
    fn name(&self) -> &'static str {
        "MutatingAdmissionWebhook"
    }

    async fn admit(&self, attrs: &Attributes<'_>, object: Option<&mut Value>) -> Result<(), ApiError> {
        if super::matcher::is_exempt(attrs) {
            return Ok(());
        }
        let hooks = self.source.hooks().await;
        if hooks.is_empty() {
            return Ok(());
        }
        let mut object = object;
        let mut invoked_reinvocable: HashSet<&str> = HashSet::new();
        let mut reinvoke: HashSet<&str> = HashSet::new();
        let mut should_reinvoke = false;
        for (i, hook) in hooks.iter().enumerate() {
            let Some(changed) = self.invoke(hook, 0, i, attrs, &mut object).await? else { continue };
            if changed {
                reinvoke.extend(invoked_reinvocable.drain());
                should_reinvoke = true;
            }
            if hook.reinvoke_if_needed {
                invoked_reinvocable.insert(&hook.uid);
            }
        }
        if !should_reinvoke || reinvoke.is_empty() {
            return Ok(());
        }
        for (i, hook) in hooks.iter().enumerate() {
            if reinvoke.contains(hook.uid.as_str()) {
                self.invoke(hook, 1, i, attrs, &mut object).await?;
            }
        }
        Ok(())
    }
}
