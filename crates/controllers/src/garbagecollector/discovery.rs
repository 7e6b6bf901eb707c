//! Discovery that tolerates failing groups (upstream client-go
//! `ServerGroupsAndResources` / `ServerPreferredResources`): a group
//! version whose resource list cannot be read is reported in
//! [`Discovered::failed`] while every other group is still returned —
//! kube's `Discovery::run` gives up on the first failure instead.
//! Used by the garbage collector and the namespace controller.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::APIResourceList;
use kube::discovery::{ApiCapabilities, ApiResource, Scope};

/// One resource of one group version.
#[derive(Clone, Debug)]
pub struct Resource {
    /// Its coordinates.
    pub resource: ApiResource,
    /// Scope and verbs.
    pub caps: ApiCapabilities,
    /// Whether its version is the group's preferred one.
    pub preferred: bool,
}

/// What discovery found.
#[derive(Debug, Default)]
pub struct Discovered {
    /// Every top-level resource (no subresources) of every version read.
    pub resources: Vec<Resource>,
    /// `group/version` → error, for the versions that could not be read.
    pub failed: BTreeMap<String, String>,
}

impl Discovered {
    /// Upstream's `ErrGroupDiscoveryFailed` text, if any group failed.
    pub fn error(&self) -> Option<String> {
        if self.failed.is_empty() {
            return None;
        }
        let groups: Vec<String> = self.failed.iter().map(|(gv, e)| format!("{gv}: {e}")).collect();
        Some(format!("unable to retrieve the complete list of server APIs: {}", groups.join(", ")))
    }

    /// The preferred-version resources.
    pub fn preferred(&self) -> impl Iterator<Item = &Resource> {
        self.resources.iter().filter(|r| r.preferred)
    }
}

fn add_list(out: &mut Discovered, list: APIResourceList, preferred: bool) {
    let gv = list.group_version.clone();
    let (group, version) = match gv.split_once('/') {
        Some((g, v)) => (g.to_string(), v.to_string()),
        None => (String::new(), gv.clone()),
    };
    for r in list.resources {
        if r.name.contains('/') {
            continue;
        }
        out.resources.push(Resource {
            resource: ApiResource {
                group: group.clone(),
                version: version.clone(),
                api_version: gv.clone(),
                kind: r.kind.clone(),
                plural: r.name.clone(),
            },
            caps: ApiCapabilities {
                scope: if r.namespaced { Scope::Namespaced } else { Scope::Cluster },
                subresources: Vec::new(),
                operations: r.verbs.clone(),
            },
            preferred,
        });
    }
}

/// Reads `/api`, `/apis` and every group version's resource list. Errors
/// only when the group lists themselves cannot be read.
pub async fn discover(client: &kube::Client) -> Result<Discovered, kube::Error> {
    let mut out = Discovered::default();
    let core = client.list_core_api_versions().await?;
    let groups = client.list_api_groups().await?;
    let mut lists = Vec::new();
    for v in &core.versions {
        lists.push((v.clone(), v == "v1"));
    }
    for g in &groups.groups {
        let preferred = g.preferred_version.as_ref().map(|p| p.group_version.clone());
        for v in &g.versions {
            let is_preferred =
                preferred.as_deref().map_or(v.group_version == g.versions[0].group_version, |p| p == v.group_version);
            lists.push((v.group_version.clone(), is_preferred));
        }
    }
    let results = futures::future::join_all(lists.iter().map(|(gv, _)| async move {
        if gv.contains('/') {
            client.list_api_group_resources(gv).await
        } else {
            client.list_core_api_resources(gv).await
        }
    }))
    .await;
    for ((gv, preferred), r) in lists.into_iter().zip(results) {
        match r {
            Ok(list) => add_list(&mut out, list, preferred),
            Err(e) => {
                out.failed.insert(gv, e.to_string());
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::APIResource;

    #[test]
    fn lists_become_resources_without_subresources_and_failures_read_as_upstream() {
        let mut d = Discovered::default();
        let res = |name: &str, namespaced: bool| APIResource {
            name: name.into(),
            kind: "Deployment".into(),
            namespaced,
            verbs: vec!["list".into(), "delete".into()],
            ..Default::default()
        };
        add_list(
            &mut d,
            APIResourceList {
                group_version: "apps/v1".into(),
                resources: vec![res("deployments", true), res("deployments/scale", true)],
            },
            true,
        );
        assert_eq!(d.resources.len(), 1);
        let r = &d.resources[0];
        assert_eq!((r.resource.group.as_str(), r.resource.version.as_str()), ("apps", "v1"));
        assert_eq!(r.caps.scope, Scope::Namespaced);
        assert!(r.caps.supports_operation("delete"));
        assert_eq!(d.error(), None);
        d.failed.insert("metrics.k8s.io/v1beta1".into(), "boom".into());
        assert_eq!(
            d.error().unwrap(),
            "unable to retrieve the complete list of server APIs: metrics.k8s.io/v1beta1: boom"
        );
    }
}
