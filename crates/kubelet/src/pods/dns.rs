//! The pod sandbox's DNS configuration and hostname, as upstream's kubelet
//! (`pkg/kubelet/network/dns/dns.go` `GetPodDNS`,
//! `GeneratePodHostNameAndDomain` in kubelet_pods.go and
//! `util.GetNodenameForKernel`).

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::Pod;

use crate::cri::v1::DnsConfig;

/// Upstream's `validation.MaxDNSNameservers`.
pub const MAX_DNS_NAMESERVERS: usize = 3;
/// Upstream's `validation.MaxDNSSearchPaths`.
pub const MAX_DNS_SEARCH_PATHS: usize = 32;
/// Upstream's `validation.MaxDNSSearchListChars`.
pub const MAX_DNS_SEARCH_LIST_CHARS: usize = 2048;
/// A search domain longer than this (a DNS-1123 subdomain's maximum) is
/// dropped: some resolvers abort on it.
const MAX_SEARCH_DOMAIN_LEN: usize = 253;
/// The kernel's hostname limit (64 bytes with the NUL).
const HOSTNAME_MAX_LEN: usize = 63;
/// The longest FQDN `setHostnameAsFQDN` may produce.
const FQDN_MAX_LEN: usize = 64;

/// The options a ClusterFirst pod gets (upstream's `defaultDNSOptions`).
pub const CLUSTER_FIRST_OPTIONS: [&str; 1] = ["ndots:5"];

/// Event reason for a ClusterFirst pod on a kubelet without cluster DNS.
pub const MISSING_CLUSTER_DNS_REASON: &str = "MissingClusterDNS";
/// Event reason for nameserver/search limits being exceeded.
pub const DNS_CONFIG_FORMING_REASON: &str = "DNSConfigForming";

/// The kubelet's DNS settings (`--cluster-dns`, `--cluster-domain`,
/// `--resolv-conf`). An empty `host_resolv_conf` path means "no resolver
/// config" (upstream's `--resolv-conf=""`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DnsSettings {
    /// Cluster DNS server IPs; empty when none is configured.
    pub cluster_dns: Vec<IpAddr>,
    /// The cluster domain, e.g. `cluster.local`.
    pub cluster_domain: String,
    /// The host resolv.conf the `Default` policy copies.
    pub host_resolv_conf: PathBuf,
}

/// Errors forming a pod's DNS config or hostname; `Display` is upstream's message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DnsError {
    /// The host resolv.conf could not be read: Go's `os.Open` error text,
    /// which upstream returns as is (`open /x: no such file or directory`).
    #[error("open {path}: {message}")]
    ResolvConf { path: String, message: String },
    /// `spec.hostname` or `spec.subdomain` is not a DNS label, or the
    /// hostname truncates to nothing.
    #[error("{0}")]
    InvalidName(String),
    /// `setHostnameAsFQDN` produced more than 64 characters.
    #[error(
        "failed to construct FQDN from pod hostname and cluster domain, FQDN {fqdn} is too long \
         (64 characters is the max, {len} characters requested)"
    )]
    FqdnTooLong { fqdn: String, len: usize },
}

/// An event the kubelet records while forming DNS config (type Warning).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DnsEvent {
    /// `MissingClusterDNS` or `DNSConfigForming`.
    pub reason: &'static str,
    /// Upstream's message.
    pub message: String,
}

/// Upstream's message when a ClusterFirst pod meets a kubelet without
/// cluster DNS (recorded on the node, and on the pod prefixed with
/// `pod: "<name>_<ns>(<uid>)". `).
pub fn missing_cluster_dns_message() -> String {
    "kubelet does not have ClusterDNS IP configured and cannot create Pod using \"ClusterFirst\" policy. \
     Falling back to \"Default\" policy."
        .to_string()
}

/// The CRI DNS config of the pod's sandbox (see
/// [`sandbox_dns_config_with_events`]), dropping the events.
pub fn sandbox_dns_config(pod: &Pod, s: &DnsSettings) -> Result<Option<DnsConfig>, DnsError> {
    sandbox_dns_config_with_events(pod, s).map(|(c, _)| c)
}

/// The CRI DNS config of the pod's sandbox per `dnsPolicy`, as upstream's
/// `GetPodDNS`:
/// - `ClusterFirst` (default; with hostNetwork it is `Default`) and
///   `ClusterFirstWithHostNet`: the cluster DNS servers, searches
///   `<ns>.svc.<domain> svc.<domain> <domain>` followed by the host's,
///   options `ndots:5`; without cluster DNS it falls back to `Default`
///   with a `MissingClusterDNS` event;
/// - `Default`: the host resolv.conf (servers, searches, options); with no
///   resolv.conf configured, `127.0.0.1` and search `.`;
/// - `None`: nothing but `dnsConfig`.
///
/// `dnsConfig` is then merged: nameservers and searches appended without
/// duplicates, options by name (the pod's value wins). Finally the limits
/// are applied as upstream does — at most 3 nameservers, 32 search domains
/// of at most 253 characters and 2048 characters in all — by omitting the
/// excess, with a `DNSConfigForming` event. Always `Some`.
pub fn sandbox_dns_config_with_events(
    pod: &Pod,
    s: &DnsSettings,
) -> Result<(Option<DnsConfig>, Vec<DnsEvent>), DnsError> {
    let mut events = Vec::new();
    let spec = pod.spec.as_ref();
    let host_network = spec.and_then(|s| s.host_network).unwrap_or(false);
    let policy = spec.and_then(|s| s.dns_policy.as_deref()).unwrap_or("ClusterFirst");
    let resolv: Option<&Path> = (!s.host_resolv_conf.as_os_str().is_empty()).then_some(s.host_resolv_conf.as_path());
    let mut cfg = match resolv {
        Some(path) => read_resolv_conf(path)?,
        None => DnsConfig::default(),
    };
    enum Kind {
        None,
        Cluster,
        Host,
    }
    let kind = match policy {
        "None" => Kind::None,
        "ClusterFirstWithHostNet" => Kind::Cluster,
        "ClusterFirst" if !host_network => Kind::Cluster,
        "ClusterFirst" | "Default" => Kind::Host,
        other => {
            tracing::warn!(component = "kubelet", policy = other, "invalid DNSPolicy, using ClusterFirst");
            Kind::Cluster
        }
    };
    let kind = match kind {
        Kind::Cluster if s.cluster_dns.is_empty() => {
            events.push(DnsEvent {
                reason: MISSING_CLUSTER_DNS_REASON,
                message: format!("pod: {:?}. {}", pod_format(pod), missing_cluster_dns_message()),
            });
            Kind::Host
        }
        k => k,
    };
    match kind {
        Kind::None => cfg = DnsConfig::default(),
        Kind::Cluster => {
            cfg.servers = s.cluster_dns.iter().map(|ip| ip.to_string()).collect();
            cfg.searches = cluster_first_searches(pod, &s.cluster_domain, &cfg.searches);
            cfg.options = CLUSTER_FIRST_OPTIONS.iter().map(|o| o.to_string()).collect();
        }
        Kind::Host => {
            if resolv.is_none() {
                cfg.servers = vec!["127.0.0.1".into()];
                cfg.searches = vec![".".into()];
            }
        }
    }
    if let Some(pc) = spec.and_then(|s| s.dns_config.as_ref()) {
        cfg.servers = omit_duplicates(cfg.servers.into_iter().chain(pc.nameservers.iter().flatten().cloned()));
        cfg.searches = omit_duplicates(cfg.searches.into_iter().chain(pc.searches.iter().flatten().cloned()));
        let extra = pc.options.iter().flatten().map(|o| {
            let name = o.name.clone().unwrap_or_default();
            match o.value.as_deref().filter(|v| !v.is_empty()) {
                Some(v) => format!("{name}:{v}"),
                None => name,
            }
        });
        cfg.options = merge_options(cfg.options.into_iter().chain(extra));
    }
    fit_limits(&mut cfg, &mut events);
    Ok((Some(cfg), events))
}

/// Upstream's `format.Pod`: `<name>_<namespace>(<uid>)`.
fn pod_format(pod: &Pod) -> String {
    let m = &pod.metadata;
    format!(
        "{}_{}({})",
        m.name.as_deref().unwrap_or(""),
        m.namespace.as_deref().unwrap_or(""),
        m.uid.as_deref().unwrap_or("")
    )
}

/// `<ns>.svc.<domain> svc.<domain> <domain>` then the host searches, without
/// duplicates; only the host searches when no cluster domain is set.
fn cluster_first_searches(pod: &Pod, domain: &str, host: &[String]) -> Vec<String> {
    if domain.is_empty() {
        return host.to_vec();
    }
    let ns = pod.metadata.namespace.as_deref().unwrap_or("default");
    let cluster = [format!("{ns}.svc.{domain}"), format!("svc.{domain}"), domain.to_string()];
    omit_duplicates(cluster.into_iter().chain(host.iter().cloned()))
}

fn omit_duplicates(items: impl Iterator<Item = String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for i in items {
        if !out.contains(&i) {
            out.push(i);
        }
    }
    out
}

/// Merges `name[:value]` options by name: a later option replaces an
/// earlier one of the same name in its position (upstream's
/// `mergeDNSOptions`, whose order is a Go map's; ours is first appearance).
fn merge_options(items: impl Iterator<Item = String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for o in items {
        let name = o.split(':').next().unwrap_or("").to_string();
        match out.iter_mut().find(|e| e.split(':').next() == Some(name.as_str())) {
            Some(e) => *e = o,
            None => out.push(o),
        }
    }
    out
}

/// Applies the nameserver and search limits (upstream's
/// `formDNSConfigFitsLimits`), recording `DNSConfigForming` events.
fn fit_limits(cfg: &mut DnsConfig, events: &mut Vec<DnsEvent>) {
    if cfg.servers.len() > MAX_DNS_NAMESERVERS {
        cfg.servers.truncate(MAX_DNS_NAMESERVERS);
        events.push(DnsEvent {
            reason: DNS_CONFIG_FORMING_REASON,
            message: format!(
                "Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: {}",
                cfg.servers.join(" ")
            ),
        });
    }
    let mut exceeded = false;
    if cfg.searches.len() > MAX_DNS_SEARCH_PATHS {
        cfg.searches.truncate(MAX_DNS_SEARCH_PATHS);
        exceeded = true;
    }
    let before = cfg.searches.len();
    cfg.searches.retain(|s| s.len() <= MAX_SEARCH_DOMAIN_LEN);
    exceeded |= cfg.searches.len() != before;
    let mut line_len = cfg.searches.join(" ").len();
    if line_len > MAX_DNS_SEARCH_LIST_CHARS {
        // Drop domains from the end until the line fits.
        while line_len > MAX_DNS_SEARCH_LIST_CHARS {
            let Some(last) = cfg.searches.pop() else { break };
            line_len = line_len.saturating_sub(last.len() + 1);
        }
        exceeded = true;
    }
    if exceeded {
        events.push(DnsEvent {
            reason: DNS_CONFIG_FORMING_REASON,
            message: format!(
                "Search Line limits were exceeded, some search paths have been omitted, the applied search line is: {}",
                cfg.searches.join(" ")
            ),
        });
    }
}

/// Parses a resolv.conf (upstream's `parseResolvConf`): lines starting
/// with `#` are comments; `nameserver` lines add servers; the last `search`
/// line wins (a trailing dot is trimmed from each domain except `.`
/// itself, so `a.` and `a` dedupe); the last `options` line wins.
pub fn parse_resolv_conf(text: &str) -> DnsConfig {
    let mut cfg = DnsConfig::default();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = line.split_whitespace().collect();
        match fields.first() {
            Some(&"nameserver") if fields.len() >= 2 => cfg.servers.push(fields[1].to_string()),
            Some(&"search") => {
                cfg.searches = fields[1..]
                    .iter()
                    .map(|s| if *s == "." { s.to_string() } else { s.strip_suffix('.').unwrap_or(s).to_string() })
                    .collect()
            }
            Some(&"options") => cfg.options = fields[1..].iter().map(|s| s.to_string()).collect(),
            _ => {}
        }
    }
    cfg
}

fn read_resolv_conf(path: &Path) -> Result<DnsConfig, DnsError> {
    std::fs::read_to_string(path).map(|t| parse_resolv_conf(&t)).map_err(|e| {
        // Go's errno texts are strerror's, lower-cased.
        let text = e.raw_os_error().map(|n| std::io::Error::from_raw_os_error(n).to_string()).unwrap_or(e.to_string());
        let text = text.split(" (os error").next().unwrap_or_default();
        let mut chars = text.chars();
        let message = chars.next().map(|c| c.to_lowercase().chain(chars).collect()).unwrap_or_default();
        DnsError::ResolvConf { path: path.display().to_string(), message }
    })
}

/// The pod's hostname and host domain (upstream's
/// `GeneratePodHostNameAndDomain`): `spec.hostname` (which must be a DNS
/// label) or the pod name, truncated to 63 characters with trailing `-`
/// and `.` trimmed; the domain is `<subdomain>.<ns>.svc.<cluster-domain>`
/// when `spec.subdomain` is set (a DNS label), else empty.
pub fn pod_hostname_and_domain(pod: &Pod, cluster_domain: &str) -> Result<(String, String), DnsError> {
    use rkube_apimachinery::validation::names::is_dns1123_label;
    let spec = pod.spec.as_ref();
    let name = pod.metadata.name.clone().unwrap_or_default();
    let mut hostname = name.clone();
    if let Some(h) = spec.and_then(|s| s.hostname.as_deref()).filter(|h| !h.is_empty()) {
        let errs = is_dns1123_label(h);
        if !errs.is_empty() {
            return Err(DnsError::InvalidName(format!(
                "pod Hostname {h:?} is not a valid DNS label: {}",
                errs.join(";")
            )));
        }
        hostname = h.to_string();
    }
    if hostname.len() > HOSTNAME_MAX_LEN {
        let mut cut = HOSTNAME_MAX_LEN;
        while !hostname.is_char_boundary(cut) {
            cut -= 1;
        }
        let truncated = hostname[..cut].trim_end_matches(['-', '.']).to_string();
        tracing::warn!(component = "kubelet", pod = %name, truncated = %truncated, "hostname for pod was too long, truncated it");
        if truncated.is_empty() {
            return Err(DnsError::InvalidName(format!("hostname for pod {name:?} was invalid: {hostname:?}")));
        }
        hostname = truncated;
    }
    let mut domain = String::new();
    if let Some(sub) = spec.and_then(|s| s.subdomain.as_deref()).filter(|s| !s.is_empty()) {
        let errs = is_dns1123_label(sub);
        if !errs.is_empty() {
            return Err(DnsError::InvalidName(format!(
                "pod Subdomain {sub:?} is not a valid DNS label: {}",
                errs.join(";")
            )));
        }
        let ns = pod.metadata.namespace.as_deref().unwrap_or("default");
        domain = format!("{sub}.{ns}.svc.{cluster_domain}");
    }
    Ok((hostname, domain))
}

/// The sandbox's (kernel) hostname, as upstream's kuberuntime sets it:
/// empty for hostNetwork pods (they keep the node's); otherwise the
/// [`pod_hostname_and_domain`] hostname, or `<hostname>.<domain>` when
/// `setHostnameAsFQDN` is true and a subdomain is set — an error beyond 64
/// characters (upstream's `GetNodenameForKernel`).
pub fn sandbox_hostname(pod: &Pod, cluster_domain: &str) -> Result<String, DnsError> {
    let spec = pod.spec.as_ref();
    if spec.and_then(|s| s.host_network).unwrap_or(false) {
        return Ok(String::new());
    }
    let (hostname, domain) = pod_hostname_and_domain(pod, cluster_domain)?;
    if !domain.is_empty() && spec.and_then(|s| s.set_hostname_as_fqdn).unwrap_or(false) {
        let fqdn = format!("{hostname}.{domain}");
        if fqdn.len() > FQDN_MAX_LEN {
            let len = fqdn.len();
            return Err(DnsError::FqdnTooLong { fqdn, len });
        }
        return Ok(fqdn);
    }
    Ok(hostname)
}

#[cfg(test)]
#[path = "dns_tests.rs"]
mod tests;
