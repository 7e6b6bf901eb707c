//! KubeSchedulerConfiguration (`kubescheduler.config.k8s.io/v1`, upstream
//! `pkg/scheduler/apis/config/v1`): read from YAML or JSON, defaulted as
//! upstream v1 (one `default-scheduler` profile, the default plugin set
//! under `multiPoint`, backoff 1 s → 10 s, parallelism 16), and expanded
//! into each extension point's ordered plugin list.

use std::collections::{BTreeSet, HashMap};

use serde::{Deserialize, Serialize};

use crate::plugins::names;

/// The API group/version this file format is.
pub const API_VERSION: &str = "kubescheduler.config.k8s.io/v1";
/// The profile name used when none is configured.
pub const DEFAULT_SCHEDULER_NAME: &str = "default-scheduler";

/// One plugin in an extension point's list.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PluginRef {
    /// The upstream plugin name (`*` in `disabled` = every default).
    pub name: String,
    /// Score weight (Score and multiPoint only); 0 = default 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<i32>,
}

/// Enabled and disabled plugins of one extension point.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PluginSet {
    /// Added after the defaults (or replacing a default of the same name).
    #[serde(default)]
    pub enabled: Vec<PluginRef>,
    /// Defaults removed (`*` = all of them).
    #[serde(default)]
    pub disabled: Vec<PluginRef>,
}

/// Plugin sets per extension point (upstream `Plugins`).
#[allow(missing_docs)]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Plugins {
    #[serde(default)]
    pub pre_enqueue: PluginSet,
    #[serde(default)]
    pub queue_sort: PluginSet,
    #[serde(default)]
    pub pre_filter: PluginSet,
    #[serde(default)]
    pub filter: PluginSet,
    #[serde(default)]
    pub post_filter: PluginSet,
    #[serde(default)]
    pub pre_score: PluginSet,
    #[serde(default)]
    pub score: PluginSet,
    #[serde(default)]
    pub reserve: PluginSet,
    #[serde(default)]
    pub permit: PluginSet,
    #[serde(default)]
    pub pre_bind: PluginSet,
    #[serde(default)]
    pub bind: PluginSet,
    #[serde(default)]
    pub post_bind: PluginSet,
    /// Enables a plugin at every extension point it implements.
    #[serde(default)]
    pub multi_point: PluginSet,
}

/// A plugin's arguments (`pluginConfig[]`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PluginConfig {
    /// The plugin.
    pub name: String,
    /// Its `*Args` object.
    #[serde(default)]
    pub args: serde_json::Value,
}

/// One scheduling profile (upstream `KubeSchedulerProfile`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Profile {
    /// Pods whose `spec.schedulerName` is this are scheduled with it.
    #[serde(default)]
    pub scheduler_name: String,
    /// Overrides the global percentage for this profile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub percentage_of_nodes_to_score: Option<i32>,
    /// Changes to the default plugin set.
    #[serde(default)]
    pub plugins: Option<Plugins>,
    /// Plugin arguments.
    #[serde(default)]
    pub plugin_config: Vec<PluginConfig>,
}

/// The configuration file (upstream `KubeSchedulerConfiguration`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Configuration {
    /// `kubescheduler.config.k8s.io/v1`.
    #[serde(default)]
    pub api_version: String,
    /// `KubeSchedulerConfiguration`.
    #[serde(default)]
    pub kind: String,
    /// Workers for Filter/Score (default 16).
    #[serde(default = "default_parallelism")]
    pub parallelism: i32,
    /// Percent of nodes to find feasible before scoring (0/absent = adaptive).
    #[serde(default)]
    pub percentage_of_nodes_to_score: Option<i32>,
    /// First back-off (default 1 s).
    #[serde(default = "default_initial_backoff")]
    pub pod_initial_backoff_seconds: i64,
    /// Longest back-off (default 10 s).
    #[serde(default = "default_max_backoff")]
    pub pod_max_backoff_seconds: i64,
    /// Profiles (default: one `default-scheduler`).
    #[serde(default)]
    pub profiles: Vec<Profile>,
}

fn default_parallelism() -> i32 {
    16
}
fn default_initial_backoff() -> i64 {
    1
}
fn default_max_backoff() -> i64 {
    10
}

impl Default for Configuration {
    fn default() -> Self {
        let mut c = Configuration {
            api_version: API_VERSION.into(),
            kind: "KubeSchedulerConfiguration".into(),
            parallelism: 16,
            percentage_of_nodes_to_score: None,
            pod_initial_backoff_seconds: 1,
            pod_max_backoff_seconds: 10,
            profiles: Vec::new(),
        };
        c.set_defaults();
        c
    }
}

/// Upstream v1's default plugins (`getDefaultPlugins`), all under
/// multiPoint, with their score weights. Plugins rkube does not implement
/// (yet) are skipped when the framework is built.
pub fn default_multi_point() -> Vec<PluginRef> {
    let p = |name: &str, weight: Option<i32>| PluginRef { name: name.into(), weight };
    vec![
        p(names::SCHEDULING_GATES, None),
        p(names::PRIORITY_SORT, None),
        p(names::NODE_UNSCHEDULABLE, None),
        p(names::NODE_NAME, None),
        p(names::TAINT_TOLERATION, Some(3)),
        p(names::NODE_AFFINITY, Some(2)),
        p(names::NODE_PORTS, None),
        p(names::NODE_RESOURCES_FIT, Some(1)),
        p(names::VOLUME_RESTRICTIONS, None),
        p("NodeVolumeLimits", None),
        p(names::VOLUME_BINDING, None),
        p("VolumeZone", None),
        p(names::POD_TOPOLOGY_SPREAD, Some(2)),
        p(names::INTER_POD_AFFINITY, Some(2)),
        p(names::DEFAULT_PREEMPTION, None),
        p(names::NODE_RESOURCES_BALANCED_ALLOCATION, Some(1)),
        p(names::IMAGE_LOCALITY, Some(1)),
        p(names::DEFAULT_BINDER, None),
    ]
}

/// Upstream's known plugin names that rkube does not implement; the
/// defaults name them, so they are skipped rather than rejected.
pub const UNIMPLEMENTED_DEFAULTS: &[&str] = &["NodeVolumeLimits", "VolumeZone"];

/// The fields of one object of the file format, and what its nested
/// objects are (for strict decoding).
struct Fields {
    known: &'static [&'static str],
    /// (field, schema of the object or of each list item).
    nested: &'static [(&'static str, &'static Fields)],
}

/// Upstream v1 fields rkube reads or accepts. `leaderElection`,
/// `clientConnection`, the debugging fields and `delayCacheUntilActive`
/// are accepted and not used: rkube's scheduler runs inside the server,
/// which owns those settings.
const CONFIGURATION_FIELDS: Fields = Fields {
    known: &[
        "apiVersion",
        "kind",
        "parallelism",
        "percentageOfNodesToScore",
        "podInitialBackoffSeconds",
        "podMaxBackoffSeconds",
        "profiles",
        // Only an empty list: rkube has no HTTP extenders.
        "extenders",
        "leaderElection",
        "clientConnection",
        "enableProfiling",
        "enableContentionProfiling",
        "delayCacheUntilActive",
    ],
    nested: &[("profiles", &PROFILE_FIELDS)],
};
const PROFILE_FIELDS: Fields = Fields {
    known: &["schedulerName", "percentageOfNodesToScore", "plugins", "pluginConfig"],
    nested: &[("plugins", &PLUGINS_FIELDS), ("pluginConfig", &PLUGIN_CONFIG_FIELDS)],
};
const PLUGINS_FIELDS: Fields = Fields {
    known: &[
        "preEnqueue",
        "queueSort",
        "preFilter",
        "filter",
        "postFilter",
        "preScore",
        "score",
        "reserve",
        "permit",
        "preBind",
        "bind",
        "postBind",
        "multiPoint",
    ],
    nested: &[
        ("preEnqueue", &PLUGIN_SET_FIELDS),
        ("queueSort", &PLUGIN_SET_FIELDS),
        ("preFilter", &PLUGIN_SET_FIELDS),
        ("filter", &PLUGIN_SET_FIELDS),
        ("postFilter", &PLUGIN_SET_FIELDS),
        ("preScore", &PLUGIN_SET_FIELDS),
        ("score", &PLUGIN_SET_FIELDS),
        ("reserve", &PLUGIN_SET_FIELDS),
        ("permit", &PLUGIN_SET_FIELDS),
        ("preBind", &PLUGIN_SET_FIELDS),
        ("bind", &PLUGIN_SET_FIELDS),
        ("postBind", &PLUGIN_SET_FIELDS),
        ("multiPoint", &PLUGIN_SET_FIELDS),
    ],
};
const PLUGIN_SET_FIELDS: Fields =
    Fields { known: &["enabled", "disabled"], nested: &[("enabled", &PLUGIN_FIELDS), ("disabled", &PLUGIN_FIELDS)] };
const PLUGIN_FIELDS: Fields = Fields { known: &["name", "weight"], nested: &[] };
// `args` is checked by each plugin's own args decoding.
const PLUGIN_CONFIG_FIELDS: Fields = Fields { known: &["name", "args"], nested: &[] };

/// Collects the paths of fields `schema` does not know, as upstream's
/// strict decoder names them (`profiles[0].plugins.filter.enabled[0].nam`).
fn unknown_fields(value: &serde_json::Value, path: &str, schema: &Fields, out: &mut Vec<String>) {
    let Some(obj) = value.as_object() else { return };
    for (k, v) in obj {
        let here = if path.is_empty() { k.clone() } else { format!("{path}.{k}") };
        if !schema.known.contains(&k.as_str()) {
            out.push(here);
            continue;
        }
        let Some((_, nested)) = schema.nested.iter().find(|(f, _)| f == k) else { continue };
        match v {
            serde_json::Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    unknown_fields(item, &format!("{here}[{i}]"), nested, out);
                }
            }
            other => unknown_fields(other, &here, nested, out),
        }
    }
}

impl Configuration {
    /// Parses a file's content (YAML, of which JSON is a subset) and
    /// applies defaults and validation. Err: a message naming what is wrong.
    pub fn parse(content: &str) -> Result<Configuration, String> {
        let value: serde_json::Value =
            serde_yaml::from_str(content).map_err(|e| format!("cannot parse the scheduler configuration: {e}"))?;
        let api_version = value.get("apiVersion").and_then(|v| v.as_str()).unwrap_or("");
        let kind = value.get("kind").and_then(|v| v.as_str()).unwrap_or("");
        if kind != "KubeSchedulerConfiguration" || api_version != API_VERSION {
            return Err(format!(
                "no kind \"{kind}\" is registered for version \"{api_version}\" in scheme (want {API_VERSION}, Kind=KubeSchedulerConfiguration)"
            ));
        }
        let mut unknown = Vec::new();
        unknown_fields(&value, "", &CONFIGURATION_FIELDS, &mut unknown);
        if !unknown.is_empty() {
            let list: Vec<String> = unknown.iter().map(|f| format!("unknown field \"{f}\"")).collect();
            return Err(format!("strict decoding error: {}", list.join(", ")));
        }
        if value.get("extenders").and_then(|e| e.as_array()).is_some_and(|e| !e.is_empty()) {
            return Err("extenders: Forbidden: scheduler extenders are not supported by rkube; use plugins".into());
        }
        let mut c: Configuration = serde_json::from_value(value).map_err(|e| format!("strict decoding error: {e}"))?;
        c.set_defaults();
        c.validate()?;
        Ok(c)
    }

    /// Reads and parses `path`.
    pub fn load(path: &std::path::Path) -> Result<Configuration, String> {
        let content = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Configuration::parse(&content).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Upstream v1 defaulting: one profile, named `default-scheduler`
    /// when its name is empty.
    pub fn set_defaults(&mut self) {
        if self.profiles.is_empty() {
            self.profiles.push(Profile::default());
        }
        for p in &mut self.profiles {
            if p.scheduler_name.is_empty() {
                p.scheduler_name = DEFAULT_SCHEDULER_NAME.into();
            }
        }
        if self.parallelism == 0 {
            self.parallelism = 16;
        }
    }

    /// Upstream's validation of the fields rkube uses, in its wording.
    pub fn validate(&self) -> Result<(), String> {
        let mut errs = Vec::new();
        if self.parallelism <= 0 {
            errs.push(format!(
                "parallelism: Invalid value: {}: should be an integer value greater than zero",
                self.parallelism
            ));
        }
        if self.pod_initial_backoff_seconds <= 0 {
            errs.push(format!(
                "podInitialBackoffSeconds: Invalid value: {}: must be greater than 0",
                self.pod_initial_backoff_seconds
            ));
        }
        if self.pod_max_backoff_seconds < self.pod_initial_backoff_seconds {
            errs.push(format!(
                "podMaxBackoffSeconds: Invalid value: {}: must be greater than or equal to PodInitialBackoffSeconds",
                self.pod_max_backoff_seconds
            ));
        }
        if let Some(p) = self.percentage_of_nodes_to_score {
            if !(0..=100).contains(&p) {
                errs.push(format!("percentageOfNodesToScore: Invalid value: {p}: not in valid range [0-100]"));
            }
        }
        let mut seen = BTreeSet::new();
        let known: BTreeSet<String> = crate::plugins::registry()
            .into_iter()
            .map(|(n, _)| n.to_string())
            .chain(default_multi_point().into_iter().map(|p| p.name))
            .collect();
        for (i, p) in self.profiles.iter().enumerate() {
            if !seen.insert(p.scheduler_name.clone()) {
                errs.push(format!("profiles[{i}].schedulerName: Duplicate value: \"{}\"", p.scheduler_name));
            }
            let mut args_seen = BTreeSet::new();
            for (j, pc) in p.plugin_config.iter().enumerate() {
                if !args_seen.insert(pc.name.clone()) {
                    errs.push(format!("profiles[{i}].pluginConfig[{j}]: Duplicate value: \"{}\"", pc.name));
                }
            }
            if let Some(plugins) = &p.plugins {
                for (point, set) in plugins.points() {
                    for r in &set.enabled {
                        if !known.contains(&r.name) {
                            errs.push(format!(
                                "profiles[{i}].plugins.{point}.enabled: plugin \"{}\" does not exist",
                                r.name
                            ));
                        }
                    }
                }
            }
        }
        if errs.is_empty() {
            Ok(())
        } else {
            Err(errs.join("; "))
        }
    }
}

impl Plugins {
    /// Each extension point's set with its configuration name (multiPoint excluded).
    pub fn points(&self) -> Vec<(&'static str, &PluginSet)> {
        vec![
            ("preEnqueue", &self.pre_enqueue),
            ("queueSort", &self.queue_sort),
            ("preFilter", &self.pre_filter),
            ("filter", &self.filter),
            ("postFilter", &self.post_filter),
            ("preScore", &self.pre_score),
            ("score", &self.score),
            ("reserve", &self.reserve),
            ("permit", &self.permit),
            ("preBind", &self.pre_bind),
            ("bind", &self.bind),
            ("postBind", &self.post_bind),
            ("multiPoint", &self.multi_point),
        ]
    }

    /// The set for the extension point called `point` (configuration name).
    pub fn point(&self, point: &str) -> Option<&PluginSet> {
        self.points().into_iter().find(|(n, _)| *n == point).map(|(_, s)| s)
    }
}

fn is_disabled(set: &PluginSet, name: &str) -> bool {
    set.disabled.iter().any(|d| d.name == "*" || d.name == name)
}

/// Upstream's merge of a profile's plugins with the defaults: the default
/// multiPoint list minus the profile's multiPoint disabled entries (`*` =
/// all), with enabled entries replacing a default of the same name in place
/// and the rest appended.
pub fn merged_multi_point(custom: &PluginSet) -> Vec<PluginRef> {
    let mut out: Vec<PluginRef> = default_multi_point().into_iter().filter(|p| !is_disabled(custom, &p.name)).collect();
    for e in &custom.enabled {
        match out.iter_mut().find(|p| p.name == e.name) {
            Some(p) => *p = e.clone(),
            None => out.push(e.clone()),
        }
    }
    out
}

/// The ordered plugins of extension point `point` for a profile, as
/// upstream's `expandMultiPointPlugins`: first the plugins enabled both at
/// the point and in multiPoint (in the point's order, the point's weight
/// winning), then the multiPoint-only ones that implement the point and
/// are not disabled there, then the point-only ones. `implements(name)`
/// says whether a plugin has the point.
pub fn expand(plugins: &Plugins, point: &str, implements: &dyn Fn(&str) -> bool) -> Vec<PluginRef> {
    let multi = merged_multi_point(&plugins.multi_point);
    let specific = plugins.point(point).cloned().unwrap_or_default();
    let multi_names: HashMap<&str, &PluginRef> = multi.iter().map(|p| (p.name.as_str(), p)).collect();
    let mut out: Vec<PluginRef> = Vec::new();
    for e in &specific.enabled {
        if multi_names.contains_key(e.name.as_str()) {
            out.push(e.clone());
        }
    }
    for m in &multi {
        if is_disabled(&specific, &m.name) || out.iter().any(|p| p.name == m.name) || !implements(&m.name) {
            continue;
        }
        out.push(m.clone());
    }
    for e in &specific.enabled {
        if !out.iter().any(|p| p.name == e.name) {
            out.push(e.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_file_defaults_as_upstream_v1() {
        let c = Configuration::parse("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n")
            .unwrap();
        assert_eq!(c.profiles.len(), 1);
        assert_eq!(c.profiles[0].scheduler_name, "default-scheduler");
        assert_eq!((c.parallelism, c.pod_initial_backoff_seconds, c.pod_max_backoff_seconds), (16, 1, 10));
    }

    #[test]
    fn bad_files_are_rejected_with_the_field() {
        let e = Configuration::parse("apiVersion: v1\nkind: Pod\n").unwrap_err();
        assert!(e.contains("no kind \"Pod\""), "{e}");
        let dup = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- schedulerName: a\n- schedulerName: a\n";
        assert!(Configuration::parse(dup).unwrap_err().contains("profiles[1].schedulerName: Duplicate value: \"a\""));
        let unknown = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- plugins:\n    filter:\n      enabled: [{name: Nope}]\n";
        assert!(Configuration::parse(unknown).unwrap_err().contains("plugin \"Nope\" does not exist"));
        // Strict decoding, as upstream's scheduler config loader.
        let typo = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nparalelism: 4\nprofiles:\n- schedulerName: a\n  plugins:\n    filter:\n      enabled: [{nam: NodeName}]\n";
        assert_eq!(
            Configuration::parse(typo).unwrap_err(),
            r#"strict decoding error: unknown field "paralelism", unknown field "profiles[0].plugins.filter.enabled[0].nam""#
        );
        let accepted = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nleaderElection: {leaderElect: true}\nclientConnection: {qps: 50}\n";
        Configuration::parse(accepted).unwrap();
        let backoff = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\npodInitialBackoffSeconds: 5\npodMaxBackoffSeconds: 2\n";
        assert!(Configuration::parse(backoff).unwrap_err().contains("podMaxBackoffSeconds"));
    }

    #[test]
    fn expansion_orders_overrides_then_multipoint_then_point_only() {
        let plugins: Plugins = serde_json::from_value(serde_json::json!({
            "score": {"enabled": [{"name": "ImageLocality", "weight": 5}, {"name": "Custom"}], "disabled": [{"name": "NodeAffinity"}]},
            "multiPoint": {"disabled": [{"name": "InterPodAffinity"}]}
        }))
        .unwrap();
        let scorers = ["TaintToleration", "NodeAffinity", "NodeResourcesFit", "ImageLocality", "InterPodAffinity"];
        let got = expand(&plugins, "score", &|n| scorers.contains(&n));
        let names: Vec<_> = got.iter().map(|p| (p.name.as_str(), p.weight)).collect();
        assert_eq!(
            names,
            vec![
                ("ImageLocality", Some(5)),
                ("TaintToleration", Some(3)),
                ("NodeResourcesFit", Some(1)),
                ("Custom", None)
            ]
        );
    }
}
