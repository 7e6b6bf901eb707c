//! The ValidatingAdmissionWebhook plugin (upstream
//! `pkg/admission/plugin/webhook/validating`): the matching webhooks of
//! the ValidatingWebhookConfigurations are called in parallel in the
//! validating phase; the first refusal (in webhook order here, where
//! upstream takes whichever arrives first) fails the request.

use std::sync::Arc;

use async_trait::async_trait;
use rkube_apimachinery::{meta, ApiError};
use serde_json::Value;

use super::super::plugins::Stores;
use super::super::{Attributes, Plugin};
use super::source::HookSource;
use super::{call, call_failed, check_dry_run, denied, should_call, Failure, Hook};

/// Audit annotation key prefix for webhooks that failed open.
const FAILED_OPEN_PREFIX: &str = "failed-open.validating.webhook.admission.k8s.io/";

/// The ValidatingAdmissionWebhook plugin.
pub struct ValidatingWebhook {
    stores: Arc<Stores>,
    source: HookSource,
}

impl ValidatingWebhook {
    /// The plugin over the server's stores; `None` without a store of
    /// ValidatingWebhookConfigurations.
    pub fn new(stores: &Stores) -> Option<ValidatingWebhook> {
        let store = stores.get(&("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations"))?.clone();
        Some(ValidatingWebhook { stores: Arc::new(stores.clone()), source: HookSource::new(store) })
    }

    /// Calls one matched webhook; `Err` is the request's refusal.
    async fn invoke(&self, hook: &Hook, index: usize, attrs: &Attributes<'_>, request: Value) -> Result<(), ApiError> {
        let outcome = match check_dry_run(hook, attrs.dry_run) {
            Err(f) => Err(f),
            Ok(()) => call(hook, &self.stores, request, false).await,
        };
        let resp = match outcome {
            Ok(resp) => resp,
            Err(Failure::Refused(e)) => return Err(e),
            Err(Failure::Call(why)) if hook.ignore_failures => {
                tracing::warn!(component = crate::COMPONENT, webhook = %hook.name, error = %why, "failed calling webhook, failing open");
                attrs.request.annotate(format!("{FAILED_OPEN_PREFIX}round_0_index_{index}"), hook.name.clone());
                return Ok(());
            }
            Err(Failure::Call(why)) => return Err(call_failed(&hook.name, &why)),
        };
        for (k, v) in &resp.audit_annotations {
            attrs.request.annotate(format!("{}/{k}", hook.name), v.clone());
        }
        for w in &resp.warnings {
            attrs.request.warn(w.clone());
        }
        if resp.allowed {
            Ok(())
        } else {
            tracing::info!(component = crate::COMPONENT, webhook = %hook.name, "rejected by webhook");
            Err(denied(&hook.name, resp.result.as_ref()))
        }
    }
}

#[async_trait]
impl Plugin for ValidatingWebhook {
    fn name(&self) -> &'static str {
        "ValidatingAdmissionWebhook"
    }

    async fn validate(&self, attrs: &Attributes<'_>, object: Option<&Value>) -> Result<(), ApiError> {
        if super::matcher::is_exempt(attrs) {
            return Ok(());
        }
        let hooks = self.source.hooks().await;
        let mut calls = Vec::new();
        for (i, hook) in hooks.iter().enumerate() {
            if let Some(matched) = should_call(hook, &self.stores, attrs, object).await? {
                let v = super::matcher::views(attrs, &matched, object);
                let (obj, old) = (v.object.as_ref(), v.old.as_ref());
                let request = super::review::admission_request(&meta::new_uid(), attrs, &matched, object, obj, old);
                calls.push(self.invoke(hook, i, attrs, request));
            }
        }
        if calls.is_empty() {
            return Ok(());
        }
        for result in futures::future::join_all(calls).await {
            result?;
        }
        Ok(())
    }
}
