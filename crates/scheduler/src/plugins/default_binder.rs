//! DefaultBinder (upstream `plugins/defaultbinder`): binds by creating the
//! pod's `binding` subresource (`POST .../pods/<name>/binding`) with the
//! chosen node as target.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Binding, ObjectReference, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, PostParams};

use crate::framework::{CycleState, ExtensionPoint, Handle, Plugin, PodInfo, Status};

use super::names;

/// The plugin with the scheduler's client.
pub struct DefaultBinder {
    client: Option<kube::Client>,
}

/// Builds the plugin; it takes no args.
pub fn new(_args: Option<&serde_json::Value>, handle: &Handle) -> Result<Arc<dyn Plugin>, String> {
    Ok(Arc::new(DefaultBinder { client: handle.client.clone() }))
}

#[async_trait::async_trait]
impl Plugin for DefaultBinder {
    fn name(&self) -> &'static str {
        names::DEFAULT_BINDER
    }
    fn extension_points(&self) -> &'static [ExtensionPoint] {
        &[ExtensionPoint::Bind]
    }
    async fn bind(&self, _state: &CycleState, pod: &PodInfo, node: &str) -> Status {
        let Some(client) = self.client.clone() else { return Status::error("no API client to bind with") };
        let ns = pod.pod.metadata.namespace.clone().unwrap_or_default();
        let name = pod.pod.metadata.name.clone().unwrap_or_default();
        let binding = Binding {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                namespace: Some(ns.clone()),
                uid: pod.pod.metadata.uid.clone(),
                ..Default::default()
            },
            target: ObjectReference { kind: Some("Node".into()), name: Some(node.to_string()), ..Default::default() },
        };
        let api: Api<Pod> = Api::namespaced(client, &ns);
        match api
            .create_subresource::<Binding, serde_json::Value>("binding", &name, &PostParams::default(), &binding)
            .await
        {
            Ok(_) => Status::success(),
            Err(e) => Status::error(e.to_string()),
        }
    }
}
