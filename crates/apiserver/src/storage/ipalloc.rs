//! Service ClusterIP and NodePort allocation (upstream's
//! `pkg/registry/core/service/{ipallocator,portallocator}` and the
//! allocation steps of the service REST storage).
//!
//! The [`ServiceAllocator`] is the Service store's [`WriteHooks`]: before a
//! Service is created or updated it allocates a ClusterIP from the service
//! CIDR (or checks the requested one: `provided IP is already allocated`)
//! and NodePorts from the node-port range for `NodePort`/`LoadBalancer`
//! Services (`provided port is already allocated`); the allocations of a
//! write that did not happen are undone, and those no longer used after a
//! committed update (type change) or delete are released. Headless
//! (`clusterIP: None`) and `ExternalName` Services get no ClusterIP.
//!
//! Dynamic ClusterIPs come from the upper band of the range first, as
//! upstream's allocator does, leaving the lower band (at most 256
//! addresses, starting at the first address — the `kubernetes` Service) for
//! static assignment.
//!
//! **Persistence.** Upstream 1.33 records ClusterIP allocations as
//! IPAddress objects (and NodePorts in a bitmap object), created within
//! the allocating request. rkube keeps the authoritative table in memory
//! and rebuilds it from the stored Services before serving any write
//! ([`ServiceAllocator::load`], what upstream's repair loops reconcile
//! against): the Services themselves are the record, so a restart never
//! hands out an address or port twice. The IPAddress objects (and the
//! default ServiceCIDR) are mirrored from the Services by the API server's
//! reconcile loop (`crate::bootstrap`), within 10 s, for what clients read.
//! This holds for one API server per datastore; several API servers on
//! one datastore would need the IPAddress objects as the shared record
//! (create-if-absent per address), which is not done yet.

use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Mutex;

use rkube_apimachinery::strategy::service::{is_headless, needs_node_ports, service_type};
use rkube_apimachinery::validation::{go_string_slice, BadValue, ErrorList, FieldError, Path};
use rkube_apimachinery::{meta, ApiError};
use serde_json::{json, Value};

use super::WriteHooks;

/// The default NodePort range (`--service-node-port-range`).
pub const NODE_PORT_RANGE: (u16, u16) = (30000, 32767);

/// An IPv4 service range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServiceCidr {
    /// The network address.
    pub network: Ipv4Addr,
    /// The prefix length.
    pub prefix: u8,
}

impl ServiceCidr {
    /// The number of addresses in the range.
    pub fn size(&self) -> u64 {
        1u64 << (32 - u32::from(self.prefix))
    }

    /// The address `n` places after the network address.
    pub fn nth(&self, n: u64) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(self.network).wrapping_add(n as u32))
    }

    /// The offset of `ip` in the range, if inside.
    pub fn offset(&self, ip: Ipv4Addr) -> Option<u64> {
        let off = u64::from(u32::from(ip).wrapping_sub(u32::from(self.network)));
        (u32::from(ip) >= u32::from(self.network) && off < self.size()).then_some(off)
    }

    /// The first usable address: the `kubernetes` Service's ClusterIP.
    pub fn first(&self) -> Ipv4Addr {
        self.nth(1)
    }
}

impl Default for ServiceCidr {
    /// `10.43.0.0/16`, rkube's default.
    fn default() -> Self {
        ServiceCidr { network: Ipv4Addr::new(10, 43, 0, 0), prefix: 16 }
    }
}

impl std::fmt::Display for ServiceCidr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.network, self.prefix)
    }
}

#[derive(Default)]
struct State {
    loaded: bool,
    ips: HashSet<Ipv4Addr>,
    ports: HashSet<u16>,
}

/// What one Service holds: its ClusterIP and NodePorts.
#[derive(Debug, Default, PartialEq, Eq)]
struct Holds {
    ip: Option<Ipv4Addr>,
    ports: Vec<u16>,
}

fn holds(svc: &Value) -> Holds {
    let mut h = Holds::default();
    if service_type(svc) != "ExternalName" && !is_headless(svc) {
        h.ip = svc.pointer("/spec/clusterIP").and_then(Value::as_str).and_then(|s| s.parse().ok());
    }
    if needs_node_ports(svc) {
        if let Some(ports) = svc.pointer("/spec/ports").and_then(Value::as_array) {
            h.ports = ports
                .iter()
                .filter_map(|p| p.get("nodePort").and_then(Value::as_u64))
                .filter_map(|n| u16::try_from(n).ok())
                .filter(|n| *n != 0)
                .collect();
        }
    }
    h
}

/// Allocates Service ClusterIPs and NodePorts (see the module docs).
pub struct ServiceAllocator {
    cidr: ServiceCidr,
    node_ports: (u16, u16),
    state: Mutex<State>,
}

impl ServiceAllocator {
    /// An allocator over `cidr` and the default NodePort range; not usable
    /// until [`ServiceAllocator::load`] ran.
    pub fn new(cidr: ServiceCidr) -> ServiceAllocator {
        ServiceAllocator { cidr, node_ports: NODE_PORT_RANGE, state: Mutex::new(State::default()) }
    }

    /// The service range.
    pub fn cidr(&self) -> ServiceCidr {
        self.cidr
    }

    /// Rebuilds the table from every stored Service (call before serving
    /// writes; again later only with no write in flight).
    pub fn load<'a>(&self, services: impl IntoIterator<Item = &'a Value>) {
        let mut st = self.lock();
        st.ips.clear();
        st.ports.clear();
        for svc in services {
            let h = holds(svc);
            st.ips.extend(h.ip);
            st.ports.extend(h.ports);
        }
        st.loaded = true;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn allocate_ip(&self, st: &mut State) -> Option<Ipv4Addr> {
        let size = self.cidr.size();
        if size < 4 {
            return None;
        }
        // Usable offsets 1..=size-2; static band 1..=band, dynamic the rest.
        let band = (size / 16).clamp(16, 256).min(size - 2);
        let pick = |lo: u64, hi: u64, st: &mut State| -> Option<Ipv4Addr> {
            if hi < lo {
                return None;
            }
            let span = hi - lo + 1;
            let start = random_u64() % span;
            (0..span).map(|i| self.cidr.nth(lo + (start + i) % span)).find(|ip| st.ips.insert(*ip))
        };
        pick(band + 1, size - 2, st).or_else(|| pick(1, band, st))
    }

    fn allocate_port(&self, st: &mut State) -> Option<u16> {
        let (lo, hi) = self.node_ports;
        let span = u64::from(hi - lo) + 1;
        let start = random_u64() % span;
        (0..span).map(|i| lo + ((start + i) % span) as u16).find(|p| st.ports.insert(*p))
    }

    /// Allocates what `obj` needs beyond what `old` holds; on error nothing
    /// stays allocated.
    fn allocate(&self, obj: &mut Value, old: Option<&Value>) -> Result<(), ApiError> {
        let name = meta::name(obj).to_string();
        let old_holds = old.map(holds).unwrap_or_default();
        let mut st = self.lock();
        if !st.loaded {
            return Err(ApiError::ServiceUnavailable(
                "the Service IP and port allocator is not ready yet; retry shortly".into(),
            ));
        }
        let mut taken_ips = Vec::new();
        let mut taken_ports = Vec::new();
        let result = (|| {
            let spec = Path::new("spec");
            let needs_ip = service_type(obj) != "ExternalName" && !is_headless(obj);
            check_families(obj, &name)?;
            if needs_ip {
                let requested = obj.pointer("/spec/clusterIP").and_then(Value::as_str).unwrap_or("").to_string();
                if requested.is_empty() {
                    let ip = self
                        .allocate_ip(&mut st)
                        .ok_or_else(|| ApiError::Internal("failed to allocate a serviceIP: range is full".into()))?;
                    taken_ips.push(ip);
                    obj["spec"]["clusterIP"] = json!(ip.to_string());
                    obj["spec"]["clusterIPs"] = json!([ip.to_string()]);
                } else {
                    let ip: Ipv4Addr = match requested.parse::<IpAddr>() {
                        Ok(IpAddr::V4(ip)) => ip,
                        _ => return Ok(()), // validation reports malformed addresses
                    };
                    if old_holds.ip != Some(ip) {
                        let reason = if self.cidr.offset(ip).is_none_or(|o| o == 0 || o + 1 >= self.cidr.size()) {
                            Some(format!(
                                "the provided IP ({ip}) is not in the valid range. The range of valid IPs is {}",
                                self.cidr
                            ))
                        } else if !st.ips.insert(ip) {
                            Some("provided IP is already allocated".to_string())
                        } else {
                            taken_ips.push(ip);
                            None
                        };
                        if let Some(reason) = reason {
                            let ips: Vec<String> = obj
                                .pointer("/spec/clusterIPs")
                                .and_then(Value::as_array)
                                .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
                                .unwrap_or_else(|| vec![requested.clone()]);
                            let value = BadValue::Raw(go_string_slice(&ips, false));
                            let detail = format!("failed to allocate IP {requested}: {reason}");
                            let errs = ErrorList(vec![FieldError::invalid(&spec.child("clusterIPs"), value, &detail)]);
                            return Err(errs.into_invalid("", "Service", &name));
                        }
                    }
                }
            }
            if needs_node_ports(obj) {
                let count = obj.pointer("/spec/ports").and_then(Value::as_array).map_or(0, Vec::len);
                for i in 0..count {
                    let port = &mut obj["spec"]["ports"][i];
                    let np = port.get("nodePort").and_then(Value::as_i64).unwrap_or(0);
                    if np == 0 {
                        let p = self
                            .allocate_port(&mut st)
                            .ok_or_else(|| ApiError::Internal("failed to allocate a nodePort: range is full".into()))?;
                        taken_ports.push(p);
                        port["nodePort"] = json!(p);
                        continue;
                    }
                    let Ok(np16) = u16::try_from(np) else { continue };
                    if old_holds.ports.contains(&np16) || taken_ports.contains(&np16) {
                        continue;
                    }
                    let (lo, hi) = self.node_ports;
                    let reason = if !(lo..=hi).contains(&np16) {
                        Some(format!("provided port is not in the valid range. The range of valid ports is {lo}-{hi}"))
                    } else if !st.ports.insert(np16) {
                        Some("provided port is already allocated".to_string())
                    } else {
                        taken_ports.push(np16);
                        None
                    };
                    if let Some(reason) = reason {
                        let path = spec.child("ports").index(i).child("nodePort");
                        let errs = ErrorList(vec![FieldError::invalid(&path, np, &reason)]);
                        return Err(errs.into_invalid("", "Service", &name));
                    }
                }
            }
            Ok(())
        })();
        if result.is_err() {
            for ip in &taken_ips {
                st.ips.remove(ip);
            }
            for p in &taken_ports {
                st.ports.remove(p);
            }
        }
        result
    }

    /// Releases what `from` holds and `keep` does not.
    fn release_difference(&self, from: Option<&Value>, keep: Option<&Value>) {
        let Some(from) = from else { return };
        let (from, keep) = (holds(from), keep.map(holds).unwrap_or_default());
        let mut st = self.lock();
        if let Some(ip) = from.ip.filter(|ip| keep.ip != Some(*ip)) {
            st.ips.remove(&ip);
        }
        for p in from.ports.iter().filter(|p| !keep.ports.contains(p)) {
            st.ports.remove(p);
        }
    }

    /// Whether `ip` is allocated (for tests and diagnostics).
    pub fn ip_allocated(&self, ip: Ipv4Addr) -> bool {
        self.lock().ips.contains(&ip)
    }

    /// Whether NodePort `port` is allocated (for tests and diagnostics).
    pub fn port_allocated(&self, port: u16) -> bool {
        self.lock().ports.contains(&port)
    }
}

impl WriteHooks for ServiceAllocator {
    fn before_write(&self, obj: &mut Value, old: Option<&Value>) -> Result<(), ApiError> {
        self.allocate(obj, old)
    }
    fn abort(&self, obj: &Value, old: Option<&Value>) {
        self.release_difference(Some(obj), old);
    }
    fn committed(&self, new: Option<&Value>, old: Option<&Value>) {
        self.release_difference(old, new);
    }
}

/// This cluster serves IPv4 Services only: IPv6 families and required
/// dual stack are refused in upstream's words.
fn check_families(obj: &Value, name: &str) -> Result<(), ApiError> {
    let spec = Path::new("spec");
    let mut errs = ErrorList::new();
    if obj.pointer("/spec/ipFamilyPolicy").and_then(Value::as_str) == Some("RequireDualStack") {
        errs.push(FieldError::invalid(
            &spec.child("ipFamilyPolicy"),
            "RequireDualStack",
            "this cluster is not configured for dual-stack services",
        ));
    }
    for (i, family) in obj.pointer("/spec/ipFamilies").and_then(Value::as_array).into_iter().flatten().enumerate() {
        if let Some(f) = family.as_str().filter(|f| *f != "IPv4") {
            errs.push(FieldError::invalid(&spec.child("ipFamilies").index(i), f, "not configured on this cluster"));
        }
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(errs.into_invalid("", "Service", name))
    }
}

/// A random number from the OS-seeded hasher (no extra dependency).
fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos()));
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn svc(ty: &str, ip: &str, node_port: i64) -> Value {
        json!({"metadata": {"name": "s"}, "spec": {"type": ty, "clusterIP": ip, "ports": [{"port": 80, "nodePort": node_port}]}})
    }

    #[test]
    fn allocates_in_range_refuses_conflicts_and_releases() {
        let a = ServiceAllocator::new(ServiceCidr::default());
        assert_eq!(a.allocate(&mut svc("ClusterIP", "", 0), None).unwrap_err().code(), 503);
        a.load(std::iter::empty());
        let mut s1 = svc("NodePort", "", 0);
        a.allocate(&mut s1, None).unwrap();
        let ip: Ipv4Addr = s1["spec"]["clusterIP"].as_str().unwrap().parse().unwrap();
        assert!(ServiceCidr::default().offset(ip).unwrap() > 256, "dynamic band: {ip}");
        let np = s1["spec"]["ports"][0]["nodePort"].as_u64().unwrap() as u16;
        assert!((30000..=32767).contains(&np));

        let e = a.allocate(&mut svc("ClusterIP", &ip.to_string(), 0), None).unwrap_err();
        assert!(e.to_string().contains("provided IP is already allocated"), "{e}");
        assert!(e.to_string().contains("spec.clusterIPs"), "{e}");
        let e = a.allocate(&mut svc("NodePort", "10.43.0.7", i64::from(np)), None).unwrap_err();
        assert!(e.to_string().contains("spec.ports[0].nodePort: Invalid value: "), "{e}");
        assert!(e.to_string().contains("provided port is already allocated"), "{e}");
        assert!(!a.ip_allocated("10.43.0.7".parse().unwrap()), "a failed allocation is undone");
        let e = a.allocate(&mut svc("ClusterIP", "10.99.0.1", 0), None).unwrap_err();
        assert!(e.to_string().contains("is not in the valid range"), "{e}");

        // Type change NodePort -> ClusterIP releases the port; delete releases the IP.
        let mut s2 = s1.clone();
        s2["spec"]["type"] = json!("ClusterIP");
        s2["spec"]["ports"][0].as_object_mut().unwrap().remove("nodePort");
        a.allocate(&mut s2, Some(&s1)).unwrap();
        a.committed(Some(&s2), Some(&s1));
        assert!(!a.port_allocated(np) && a.ip_allocated(ip));
        a.committed(None, Some(&s2));
        assert!(!a.ip_allocated(ip));

        let mut v6 = svc("ClusterIP", "", 0);
        v6["spec"]["ipFamilies"] = json!(["IPv6"]);
        let e = a.allocate(&mut v6, None).unwrap_err();
        assert!(
            e.to_string().contains(r#"spec.ipFamilies[0]: Invalid value: "IPv6": not configured on this cluster"#),
            "{e}"
        );
        let mut dual = svc("ClusterIP", "", 0);
        dual["spec"]["ipFamilyPolicy"] = json!("RequireDualStack");
        let e = a.allocate(&mut dual, None).unwrap_err();
        assert!(e.to_string().contains("this cluster is not configured for dual-stack services"), "{e}");

        // Headless and ExternalName get nothing; load restores the table.
        let mut headless = svc("ClusterIP", "None", 0);
        a.allocate(&mut headless, None).unwrap();
        assert_eq!(headless["spec"]["clusterIP"], "None");
        a.load([&s1]);
        assert!(a.ip_allocated(ip) && a.port_allocated(np));
    }
}
