//! Endpoints subsets (upstream `pkg/api/v1/endpoints.RepackSubsets` and the
//! Endpoints controller's capacity rule): addresses grouped so each subset
//! holds the ports shared by exactly the same (ready / not-ready)
//! addresses, sorted; more than [`MAX_CAPACITY`] addresses are truncated.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{EndpointAddress, EndpointPort, EndpointSubset};

/// Upstream's `maxCapacity`: addresses an Endpoints object keeps.
pub const MAX_CAPACITY: usize = 1000;

/// An address's identity while repacking: its IP and target uid.
type AddrKey = (String, String);

fn addr_key(a: &EndpointAddress) -> AddrKey {
    (a.ip.clone(), a.target_ref.as_ref().and_then(|r| r.uid.clone()).unwrap_or_default())
}

/// A port's identity (name, number, protocol, appProtocol); `None` stands
/// for "no ports" (a headless Service without ports).
type PortKey = Option<(String, i32, String, String)>;

fn port_key(p: &EndpointPort) -> PortKey {
    Some((
        p.name.clone().unwrap_or_default(),
        p.port,
        p.protocol.clone().unwrap_or_default(),
        p.app_protocol.clone().unwrap_or_default(),
    ))
}

/// Collects `(address, ready, port)` entries into repacked, sorted subsets
/// (upstream `RepackSubsets` over one single-address subset per entry). An
/// address listed both ready and not ready for a port counts as ready.
#[derive(Default)]
pub struct Packer {
    addrs: BTreeMap<AddrKey, EndpointAddress>,
    ports: BTreeMap<PortKey, Option<EndpointPort>>,
    by_port: BTreeMap<PortKey, BTreeMap<AddrKey, bool>>,
}

impl Packer {
    /// Adds one address for one port (`None`: no ports).
    pub fn add(&mut self, addr: &EndpointAddress, ready: bool, port: Option<&EndpointPort>) {
        let ak = addr_key(addr);
        self.addrs.entry(ak.clone()).or_insert_with(|| addr.clone());
        let pk = port.and_then(port_key);
        self.ports.entry(pk.clone()).or_insert_with(|| port.cloned());
        let r = self.by_port.entry(pk).or_default().entry(ak).or_insert(ready);
        *r |= ready;
    }

    /// The subsets: one per distinct address set, addresses sorted by IP
    /// then uid, ports by name, number and protocol.
    pub fn subsets(self) -> Vec<EndpointSubset> {
        let mut groups: BTreeMap<Vec<(AddrKey, bool)>, Vec<PortKey>> = BTreeMap::new();
        for (pk, addrs) in self.by_port {
            groups.entry(addrs.into_iter().collect()).or_default().push(pk);
        }
        groups
            .into_iter()
            .map(|(addrs, ports)| {
                let pick = |ready: bool| -> Option<Vec<EndpointAddress>> {
                    let v: Vec<_> =
                        addrs.iter().filter(|(_, r)| *r == ready).map(|(k, _)| self.addrs[k].clone()).collect();
                    (!v.is_empty()).then_some(v)
                };
                let ports: Vec<EndpointPort> = ports.iter().filter_map(|pk| self.ports[pk].clone()).collect();
                EndpointSubset {
                    addresses: pick(true),
                    not_ready_addresses: pick(false),
                    ports: (!ports.is_empty()).then_some(ports),
                }
            })
            .collect()
    }
}

fn count(v: &Option<Vec<EndpointAddress>>) -> usize {
    v.as_ref().map_or(0, Vec::len)
}

/// Upstream `truncateEndpoints`: above [`MAX_CAPACITY`] addresses in all,
/// keep ready addresses first (not-ready ones fill what is left), each
/// subset keeping its share rounded up; returns whether it truncated.
pub fn truncate(subsets: &mut [EndpointSubset]) -> bool {
    let ready: usize = subsets.iter().map(|s| count(&s.addresses)).sum();
    let not_ready: usize = subsets.iter().map(|s| count(&s.not_ready_addresses)).sum();
    if ready + not_ready <= MAX_CAPACITY {
        return false;
    }
    let truncate_ready = ready > MAX_CAPACITY;
    let (max, total) = if truncate_ready { (MAX_CAPACITY, ready) } else { (MAX_CAPACITY - ready, not_ready) };
    let mut can_add = max;
    for s in subsets.iter_mut() {
        let n = if truncate_ready { count(&s.addresses) } else { count(&s.not_ready_addresses) };
        let share = ((n as f64 / total as f64) * max as f64).ceil() as usize;
        let keep = share.min(can_add);
        let list = if truncate_ready { &mut s.addresses } else { &mut s.not_ready_addresses };
        if let Some(v) = list.as_mut() {
            v.truncate(keep);
        }
        if truncate_ready {
            can_add -= count(&s.addresses);
            s.not_ready_addresses = None;
        } else {
            can_add -= count(&s.not_ready_addresses);
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(ip: &str) -> EndpointAddress {
        EndpointAddress { ip: ip.into(), ..Default::default() }
    }
    fn port(name: &str, n: i32) -> EndpointPort {
        EndpointPort { name: Some(name.into()), port: n, protocol: Some("TCP".into()), app_protocol: None }
    }

    #[test]
    fn repack_groups_ports_by_address_set_as_upstream() {
        // Upstream TestRepackSubsets "one set, two ports, one IP" style cases.
        let mut p = Packer::default();
        p.add(&addr("1.2.3.4"), true, Some(&port("a", 1)));
        p.add(&addr("1.2.3.4"), true, Some(&port("b", 2)));
        p.add(&addr("5.6.7.8"), false, Some(&port("a", 1)));
        p.add(&addr("5.6.7.8"), false, Some(&port("b", 2)));
        p.add(&addr("9.9.9.9"), true, Some(&port("c", 3)));
        let s = p.subsets();
        assert_eq!(s.len(), 2);
        let ab = s.iter().find(|s| s.ports.as_ref().unwrap().len() == 2).unwrap();
        assert_eq!(ab.addresses.as_ref().unwrap()[0].ip, "1.2.3.4");
        assert_eq!(ab.not_ready_addresses.as_ref().unwrap()[0].ip, "5.6.7.8");
        let c = s.iter().find(|s| s.ports.as_ref().unwrap().len() == 1).unwrap();
        assert_eq!(c.addresses.as_ref().unwrap()[0].ip, "9.9.9.9");
        assert!(c.not_ready_addresses.is_none());

        // No ports (headless without ports): one subset without ports.
        let mut p = Packer::default();
        p.add(&addr("10.0.0.2"), true, None);
        p.add(&addr("10.0.0.1"), true, None);
        let s = p.subsets();
        assert_eq!(s.len(), 1);
        assert!(s[0].ports.is_none());
        let ips: Vec<_> = s[0].addresses.as_ref().unwrap().iter().map(|a| a.ip.as_str()).collect();
        assert_eq!(ips, ["10.0.0.1", "10.0.0.2"]);
    }

    #[test]
    fn truncation_keeps_ready_addresses_first_as_upstream() {
        // Upstream TestTruncateEndpoints: 800 ready + 400 not ready -> 800 + 200.
        let many = |n: usize, off: usize| {
            Some((0..n).map(|i| addr(&format!("10.{}.{}.1", (i + off) / 250, (i + off) % 250))).collect())
        };
        let mut s = vec![EndpointSubset { addresses: many(800, 0), not_ready_addresses: many(400, 800), ports: None }];
        assert!(truncate(&mut s));
        assert_eq!((count(&s[0].addresses), count(&s[0].not_ready_addresses)), (800, 200));
        // 1200 ready across two subsets: 1000 ready kept, proportionally, none not ready.
        let mut s = vec![
            EndpointSubset { addresses: many(600, 0), not_ready_addresses: many(10, 2000), ports: None },
            EndpointSubset { addresses: many(600, 600), not_ready_addresses: None, ports: None },
        ];
        assert!(truncate(&mut s));
        assert_eq!(count(&s[0].addresses) + count(&s[1].addresses), 1000);
        assert_eq!(count(&s[0].addresses), 500);
        assert_eq!(count(&s[0].not_ready_addresses), 0);
        let mut small = vec![EndpointSubset { addresses: many(1000, 0), not_ready_addresses: None, ports: None }];
        assert!(!truncate(&mut small));
    }
}
