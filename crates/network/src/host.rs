//! The impure half: routes, the service device and the masquerade table on
//! the host, through the `ip` (iproute2, `-json` for reads) and `nft`
//! commands. Every function acts in the network namespace of the calling
//! thread (the child command inherits it), which is the process's own in
//! production.
//!
//! What these functions touch, and nothing else: routes in the main table
//! marked with protocol [`RTPROT_RKUBE`] whose destination is inside the
//! cluster CIDR or equals the service CIDR, the link named
//! `service_device`, and the nft table `ip <table>`.

use std::io::Write;
use std::net::IpAddr;
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::cidr::Cidr;
use crate::routes::Routes;
use crate::{HostNames, NetworkError, COMPONENT};

/// The route protocol (`ip route ... proto 107`, rtm_protocol) that marks
/// routes rkube-network added, so that reads and removals never pick up the
/// kernel's connected routes (e.g. the local bridge's pod subnet) or anyone
/// else's routes inside the cluster CIDR. Not in iproute2's `rt_protos`.
pub const RTPROT_RKUBE: u8 = 107;

fn run_cmd(program: &str, args: &[&str], stdin: Option<&str>) -> Result<String, NetworkError> {
    let command = format!("{program} {}", args.join(" "));
    let mut cmd = Command::new(program);
    cmd.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd.stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() });
    let mut child = cmd.spawn().map_err(|e| NetworkError::Command {
        command: command.clone(),
        detail: format!(
            "cannot start {program}: {e}; install {} and put it on PATH",
            if program == "nft" { "nftables (nft)" } else { "iproute2 (ip)" }
        ),
    })?;
    if let Some(input) = stdin {
        let mut pipe = child.stdin.take().expect("stdin piped");
        pipe.write_all(input.as_bytes()).map_err(|e| NetworkError::Command {
            command: command.clone(),
            detail: format!("writing its input: {e}"),
        })?;
    }
    let out = child.wait_with_output().map_err(|e| NetworkError::Command {
        command: command.clone(),
        detail: format!("waiting for it: {e}"),
    })?;
    if !out.status.success() {
        return Err(NetworkError::Command {
            command,
            detail: format!("{}: {}", out.status, String::from_utf8_lossy(&out.stderr).trim()),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn ip(args: &[&str]) -> Result<String, NetworkError> {
    run_cmd("ip", args, None)
}

fn ip_json(args: &[&str]) -> Result<Vec<Value>, NetworkError> {
    let mut all = vec!["-json"];
    all.extend_from_slice(args);
    let out = ip(&all)?;
    if out.trim().is_empty() {
        return Ok(Vec::new());
    }
    serde_json::from_str(&out).map_err(|e| NetworkError::Command {
        command: format!("ip {}", all.join(" ")),
        detail: format!("unexpected output ({e}): {out}"),
    })
}

/// Whether an `ip` failure means "already absent" (ESRCH from a route
/// delete, ENODEV/"Cannot find device" from a link operation).
fn is_absent(e: &NetworkError) -> bool {
    let NetworkError::Command { detail, .. } = e else { return false };
    detail.contains("No such process")
        || detail.contains("Cannot find device")
        || detail.contains("does not exist")
}

fn family_flag(c: &Cidr) -> &'static str {
    if c.addr().is_ipv4() {
        "-4"
    } else {
        "-6"
    }
}

fn proto() -> String {
    RTPROT_RKUBE.to_string()
}

/// A route of ours read back from the kernel.
#[derive(Debug, Clone, PartialEq)]
struct KernelRoute {
    dst: Cidr,
    kind: String,
    gateway: Option<IpAddr>,
    dev: Option<String>,
}

/// Our routes (protocol [`RTPROT_RKUBE`]) whose destination is inside
/// `within` (its own prefix included), all types.
fn our_routes_within(within: &Cidr) -> Result<Vec<KernelRoute>, NetworkError> {
    let within_s = within.to_string();
    let p = proto();
    let rows = ip_json(&[family_flag(within), "route", "show", "root", &within_s, "proto", &p])?;
    let mut out = Vec::new();
    for r in rows {
        let Some(dst) = r.get("dst").and_then(Value::as_str) else { continue };
        let dst = if dst == "default" { within_s.clone() } else { dst.to_string() };
        let Ok(dst) = dst.parse::<Cidr>() else { continue };
        if !within.contains(&dst) {
            continue;
        }
        out.push(KernelRoute {
            dst,
            kind: r.get("type").and_then(Value::as_str).unwrap_or("unicast").to_string(),
            gateway: r.get("gateway").and_then(Value::as_str).and_then(|g| g.parse().ok()),
            dev: r.get("dev").and_then(Value::as_str).map(str::to_string),
        });
    }
    Ok(out)
}

/// The per-node routes rkube-network programmed inside `cluster`: unicast
/// routes of protocol [`RTPROT_RKUBE`] with a gateway, destination → gateway.
/// Err: `ip` failed.
pub fn managed_routes(cluster: &Cidr) -> Result<Routes, NetworkError> {
    Ok(our_routes_within(cluster)?
        .into_iter()
        .filter(|r| r.kind == "unicast")
        .filter_map(|r| r.gateway.map(|g| (r.dst, g)))
        .collect())
}

/// `ip route replace <cidr> via <via> proto 107`. Err: `ip` refused (e.g.
/// the gateway is not directly reachable). [`crate::sync_routes`] first
/// checks [`foreign_routes_at`] so this never overwrites another's route.
pub fn replace_route(cidr: &Cidr, via: IpAddr) -> Result<(), NetworkError> {
    let (c, v, p) = (cidr.to_string(), via.to_string(), proto());
    ip(&[family_flag(cidr), "route", "replace", &c, "via", &v, "proto", &p]).map(drop)
}

/// `ip route del <cidr> via <via> proto 107`; a route already gone is success.
pub fn delete_route(cidr: &Cidr, via: IpAddr) -> Result<(), NetworkError> {
    let (c, v, p) = (cidr.to_string(), via.to_string(), proto());
    match ip(&[family_flag(cidr), "route", "del", &c, "via", &v, "proto", &p]) {
        Err(e) if !is_absent(&e) => Err(e),
        _ => Ok(()),
    }
}

/// Whether `via` is a directly reachable neighbour (the kernel's route to it
/// is a connected unicast route without a gateway), and not through one of
/// `avoid_devs` (this node's bridge or service device). Ok(Err(reason)):
/// not usable as a next hop; Err: `ip` failed to run.
pub fn check_next_hop(via: IpAddr, avoid_devs: &[&str]) -> Result<Result<(), String>, NetworkError> {
    let v = via.to_string();
    let rows = match ip_json(&["route", "get", &v]) {
        Ok(rows) => rows,
        Err(NetworkError::Command { detail, .. }) if detail.contains("unreachable") => {
            return Ok(Err("the host has no route to it".into()))
        }
        Err(e) => return Err(e),
    };
    let Some(r) = rows.first() else { return Ok(Err("the host has no route to it".into())) };
    let kind = r.get("type").and_then(Value::as_str).unwrap_or("unicast");
    if kind != "unicast" {
        return Ok(Err(format!("the host's route to it is of type {kind}")));
    }
    if let Some(g) = r.get("gateway").and_then(Value::as_str) {
        return Ok(Err(format!("it is reached through the gateway {g}, not directly (host-gw needs one L2 segment)")));
    }
    let dev = r.get("dev").and_then(Value::as_str).unwrap_or("");
    if avoid_devs.contains(&dev) {
        return Ok(Err(format!("it is routed to this node's own device {dev}")));
    }
    Ok(Ok(()))
}

/// One main-table route as `ip -json route show` prints it, in `ip route`
/// syntax for messages (e.g. `"unicast 10.42.0.0/16 via 192.168.1.1 dev eth0 proto kernel"`).
fn describe_route(r: &Value) -> String {
    let s = |k: &str| r.get(k).and_then(Value::as_str);
    let mut out = format!("{} {}", s("type").unwrap_or("unicast"), s("dst").unwrap_or("?"));
    for (key, word) in [("gateway", "via"), ("dev", "dev"), ("protocol", "proto")] {
        if let Some(v) = s(key) {
            out.push_str(&format!(" {word} {v}"));
        }
    }
    if let Some(m) = r.get("metric").and_then(Value::as_u64) {
        out.push_str(&format!(" metric {m}"));
    }
    out
}

/// The main-table routes (all types, all metrics) whose destination is
/// exactly `dst` (`ip -json route show table main exact <dst>`) that
/// `is_ours` does not recognise, described for a message. `ip route
/// replace` would overwrite such a route (or be shadowed by it), so callers
/// refuse to touch the prefix while one exists. Err: `ip` failed.
pub fn foreign_routes_at(dst: &Cidr, is_ours: impl Fn(&Value) -> bool) -> Result<Vec<String>, NetworkError> {
    let d = dst.to_string();
    let rows = ip_json(&[family_flag(dst), "route", "show", "table", "main", "exact", &d])?;
    Ok(rows.iter().filter(|r| !is_ours(r)).map(describe_route).collect())
}

fn is_rkube_route(r: &Value, kind: &str, dev: Option<&str>) -> bool {
    let s = |k: &str| r.get(k).and_then(Value::as_str);
    s("type").unwrap_or("unicast") == kind
        && s("protocol") == Some(RTPROT_RKUBE.to_string().as_str())
        && (dev.is_none() || s("dev") == dev)
}

/// Whether the route row is the per-node route rkube-network programs
/// (unicast, protocol [`RTPROT_RKUBE`], any next hop: it may be moving).
pub fn is_rkube_node_route(r: &Value) -> bool {
    is_rkube_route(r, "unicast", None)
}

/// `ip route replace blackhole <cluster> proto 107`: packets for pod
/// addresses no more specific route claims are dropped on this machine
/// instead of following the default route out. Refuses
/// ([`NetworkError::Conflict`]) while a route that is not this blackhole
/// (type blackhole, protocol [`RTPROT_RKUBE`]) has exactly the cluster CIDR
/// as destination (a VPN's or container runtime's route, a connected
/// subnet): replacing it would cut the host off from that network.
pub fn ensure_blackhole(cluster: &Cidr) -> Result<(), NetworkError> {
    let foreign = foreign_routes_at(cluster, |r| is_rkube_route(r, "blackhole", None))?;
    if !foreign.is_empty() {
        return Err(NetworkError::Conflict(format!(
            "the cluster CIDR {cluster} is already routed on this host ({}); rkube will not replace that route with its blackhole: \
             choose a free range with --cluster-cidr (on the servers and every agent), or remove that route",
            foreign.join("; ")
        )));
    }
    let (c, p) = (cluster.to_string(), proto());
    ip(&[family_flag(cluster), "route", "replace", "blackhole", &c, "proto", &p]).map(drop)
}

fn link_exists(name: &str) -> Result<bool, NetworkError> {
    match ip(&["link", "show", "dev", name]) {
        Ok(_) => Ok(true),
        Err(e) if is_absent(&e) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Creates (if absent) and brings up the link `device` of type dummy, then
/// `ip route replace <service> dev <device> proto 107`, so ClusterIP traffic
/// that no DNAT rewrote ends on this machine while host→ClusterIP
/// connections still find a route (kube-proxy's DNAT in output rewrites them).
/// A kernel without the dummy driver (no `dummy` module, no modprobe) gets a
/// port-less bridge instead, which also carries no traffic off the machine;
/// that fallback is logged as a warning. Err: `ip` failed.
pub fn ensure_service_device(device: &str, service: &Cidr) -> Result<(), NetworkError> {
    if !link_exists(device)? {
        match ip(&["link", "add", device, "type", "dummy"]) {
            Ok(_) => {}
            Err(NetworkError::Command { detail, .. }) if detail.contains("Unknown device type") => {
                tracing::warn!(
                    component = COMPONENT,
                    device,
                    "the kernel has no dummy link driver (load it with `modprobe dummy`); using an empty bridge as the service device"
                );
                ip(&["link", "add", device, "type", "bridge"])?;
            }
            Err(e) => return Err(e),
        }
        tracing::info!(component = COMPONENT, device, "service device created");
    }
    ip(&["link", "set", device, "up"])?;
    let foreign = foreign_routes_at(service, |r| is_rkube_route(r, "unicast", Some(device)))?;
    if !foreign.is_empty() {
        return Err(NetworkError::Conflict(format!(
            "the service CIDR {service} is already routed on this host ({}); rkube will not replace that route with its \
             route to {device}: choose a free range with --service-cidr (on the servers and every agent), or remove that route",
            foreign.join("; ")
        )));
    }
    let (s, p) = (service.to_string(), proto());
    ip(&[family_flag(service), "route", "replace", &s, "dev", device, "proto", &p]).map(drop)
}

/// The nft script that (re)creates table `ip <table>` atomically with
/// flannel's masquerade rules: in postrouting (srcnat priority), traffic from
/// the cluster CIDR to the cluster CIDR or the service CIDR is left alone,
/// and traffic from the cluster CIDR to anywhere else except multicast
/// (224.0.0.0/4) is masqueraded with fully random source ports. Nothing else.
pub fn masquerade_script(names: &HostNames) -> String {
    let (t, c, s) = (&names.table, &names.cluster_cidr, &names.service_cidr);
    format!(
        "table ip {t}\n\
         delete table ip {t}\n\
         table ip {t} {{\n\
         \tchain postrouting {{\n\
         \t\ttype nat hook postrouting priority srcnat; policy accept;\n\
         \t\tip saddr {c} ip daddr {c} return\n\
         \t\tip saddr {c} ip daddr {s} return\n\
         \t\tip saddr {c} ip daddr != 224.0.0.0/4 masquerade fully-random\n\
         \t}}\n\
         }}\n"
    )
}

/// Applies [`masquerade_script`] in one `nft -f -` transaction (replacing
/// the table's previous contents). Err: `nft` failed.
pub fn ensure_masquerade(names: &HostNames) -> Result<(), NetworkError> {
    run_cmd("nft", &["-f", "-"], Some(&masquerade_script(names))).map(drop)
}

/// The host's own IPv4 addresses (`ip -json -4 addr show`) as (device,
/// address), and the gateways of its main-table IPv4 default routes
/// (`ip -json -4 route show default`). Err: `ip` failed.
pub fn host_addresses_and_gateways() -> Result<(Vec<(String, IpAddr)>, Vec<IpAddr>), NetworkError> {
    let mut addrs = Vec::new();
    for link in ip_json(&["-4", "addr", "show"])? {
        let dev = link.get("ifname").and_then(Value::as_str).unwrap_or("").to_string();
        for a in link.get("addr_info").and_then(Value::as_array).into_iter().flatten() {
            if let Some(ip) = a.get("local").and_then(Value::as_str).and_then(|s| s.parse().ok()) {
                addrs.push((dev.clone(), ip));
            }
        }
    }
    let gateways = ip_json(&["-4", "route", "show", "table", "main", "default"])?
        .iter()
        .filter_map(|r| r.get("gateway").and_then(Value::as_str).and_then(|g| g.parse().ok()))
        .collect();
    Ok((addrs, gateways))
}

/// Removes everything [`ensure_blackhole`], [`replace_route`],
/// [`ensure_service_device`] and [`ensure_masquerade`] created for `names`.
/// Idempotent.
pub fn remove_all(names: &HostNames, cluster: &Cidr, service: &Cidr) -> Result<(), NetworkError> {
    let p = proto();
    for r in our_routes_within(cluster)? {
        let dst = r.dst.to_string();
        let mut args = vec![family_flag(cluster), "route", "del"];
        if r.kind != "unicast" {
            args.push(&r.kind);
        }
        args.push(&dst);
        let gw = r.gateway.map(|g| g.to_string());
        if let Some(g) = &gw {
            args.extend(["via", g]);
        }
        args.extend(["proto", &p]);
        match ip(&args) {
            Err(e) if !is_absent(&e) => return Err(e),
            _ => tracing::info!(component = COMPONENT, route = %dst, via = ?r.gateway, kind = %r.kind, "route removed"),
        }
    }
    for r in our_routes_within(service)? {
        if r.dst == *service && r.dev.as_deref() == Some(names.service_device.as_str()) {
            let s = service.to_string();
            match ip(&[family_flag(service), "route", "del", &s, "dev", &names.service_device, "proto", &p]) {
                Err(e) if !is_absent(&e) => return Err(e),
                _ => {}
            }
        }
    }
    match ip(&["link", "del", "dev", &names.service_device]) {
        Err(e) if !is_absent(&e) => return Err(e),
        Ok(_) => tracing::info!(component = COMPONENT, device = %names.service_device, "service device removed"),
        Err(_) => {}
    }
    let t = &names.table;
    run_cmd("nft", &["-f", "-"], Some(&format!("table ip {t}\ndelete table ip {t}\n"))).map(drop)
}
