//! systemd-logind over the system D-Bus, as upstream's
//! `pkg/kubelet/nodeshutdown/systemd` uses it: the delay inhibitor's
//! maximum (`InhibitDelayMaxUSec`), a `delay` inhibitor lock on
//! `shutdown` (`Inhibit`, answered with a file descriptor that holds the
//! lock until it is closed), and the `PrepareForShutdown(b)` signal.
//!
//! The system bus is the one `DBUS_SYSTEM_BUS_ADDRESS` names, else
//! `unix:path=/var/run/dbus/system_bus_socket` (zbus's lookup, as the D-Bus
//! specification says).
//!
//! Unlike upstream, rkube never writes logind's configuration (upstream's
//! `OverrideInhibitDelay` writes `/etc/systemd/logind.conf.d/99-kubelet.conf`
//! and reloads logind): a too small `InhibitDelayMaxSec` is reported with
//! what to set instead.

use std::os::fd::OwnedFd;
use std::time::Duration;

use futures::StreamExt;

/// logind's bus name.
pub const LOGIND_SERVICE: &str = "org.freedesktop.login1";
/// logind's manager object.
pub const LOGIND_OBJECT: &str = "/org/freedesktop/login1";
/// logind's manager interface.
pub const LOGIND_INTERFACE: &str = "org.freedesktop.login1.Manager";
/// The inhibitor's `who` (upstream's).
pub const INHIBIT_WHO: &str = "kubelet";
/// The inhibitor's `why` (upstream's).
pub const INHIBIT_WHY: &str = "Kubelet needs time to handle node shutdown";

/// A D-Bus failure, with what was being done.
#[derive(Debug, thiserror::Error)]
#[error("{what}: {source}")]
pub struct LogindError {
    what: &'static str,
    #[source]
    source: zbus::Error,
}

fn err(what: &'static str) -> impl FnOnce(zbus::Error) -> LogindError {
    move |source| LogindError { what, source }
}

/// A connection to the system bus, talking to logind.
#[derive(Clone, Debug)]
pub struct Logind {
    conn: zbus::Connection,
}

impl Logind {
    /// Connects to the system bus (`DBUS_SYSTEM_BUS_ADDRESS` or the
    /// well-known socket). Fails when there is no bus (no systemd).
    pub async fn connect() -> Result<Logind, LogindError> {
        let conn = zbus::Connection::system().await.map_err(err("cannot connect to the system D-Bus"))?;
        Ok(Logind { conn })
    }

    /// Connects to the bus at `address` (a D-Bus address such as
    /// `unix:path=/run/dbus/system_bus_socket`) as if it were the system bus.
    pub async fn connect_to(address: &str) -> Result<Logind, LogindError> {
        let conn = zbus::connection::Builder::address(address)
            .build()
            .await
            .map_err(err("cannot connect to the system D-Bus"))?;
        Ok(Logind { conn })
    }

    /// logind's `InhibitDelayMaxUSec`: how long a delay inhibitor may hold
    /// a shutdown back (logind.conf's `InhibitDelayMaxSec`).
    pub async fn inhibit_delay_max(&self) -> Result<Duration, LogindError> {
        const WHAT: &str = "failed reading InhibitDelayMaxUSec property from logind";
        let reply = self
            .conn
            .call_method(
                Some(LOGIND_SERVICE),
                LOGIND_OBJECT,
                Some("org.freedesktop.DBus.Properties"),
                "Get",
                &(LOGIND_INTERFACE, "InhibitDelayMaxUSec"),
            )
            .await
            .map_err(err(WHAT))?;
        let value: zbus::OwnedVariant = reply.body().deserialize().map_err(err(WHAT))?;
        let usec = u64::try_from(value).map_err(err("InhibitDelayMaxUSec from logind is not a uint64 as expected"))?;
        Ok(Duration::from_micros(usec))
    }

    /// Takes a `delay` inhibitor lock on `shutdown`; the lock holds until
    /// the returned descriptor is closed (dropped).
    pub async fn inhibit_shutdown(&self) -> Result<OwnedFd, LogindError> {
        const WHAT: &str = "failed creating systemd inhibitor";
        let reply = self
            .conn
            .call_method(
                Some(LOGIND_SERVICE),
                LOGIND_OBJECT,
                Some(LOGIND_INTERFACE),
                "Inhibit",
                &("shutdown", INHIBIT_WHO, INHIBIT_WHY, "delay"),
            )
            .await
            .map_err(err(WHAT))?;
        let fd: zbus::OwnedFd =
            reply.body().deserialize().map_err(err("failed storing inhibit lock file descriptor"))?;
        Ok(fd.into())
    }

    /// The `PrepareForShutdown` signals from now on: `true` when a
    /// shutdown begins, `false` when it was cancelled. The stream ends
    /// when the bus connection does.
    pub async fn prepare_for_shutdown(
        &self,
    ) -> Result<impl futures::Stream<Item = Result<bool, String>> + Send + Unpin + 'static, LogindError> {
        const WHAT: &str = "failed to monitor shutdown";
        let rule = zbus::MatchRule::builder()
            .msg_type(zbus::message::Type::Signal)
            .interface(LOGIND_INTERFACE)
            .member("PrepareForShutdown")
            .path(LOGIND_OBJECT)
            .build()
            .map_err(err(WHAT))?;
        let stream = zbus::MessageStream::for_match_rule(rule, &self.conn, None).await.map_err(err(WHAT))?;
        Ok(stream.map(|m| {
            let m = m.map_err(|e| format!("failed obtaining shutdown event: {e}"))?;
            m.body().deserialize::<bool>().map_err(|e| {
                format!("failed obtaining shutdown event, PrepareForShutdown event was not bool type as expected: {e}")
            })
        }))
    }
}
