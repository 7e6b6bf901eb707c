//! The `tcpSocket` handler (upstream's `pkg/probe/tcp`): success when a TCP
//! connection to host:port opens within the timeout; every dial error is a
//! failure whose message is Go's (`dial tcp 10.0.0.5:80: connect: connection refused`).

use std::time::Duration;

use super::results::{go_io_error, join_host_port, Outcome};

/// Dials `host:port` within `timeout` and closes the connection at once.
pub async fn probe_tcp(host: &str, port: u16, timeout: Duration) -> Outcome {
    match dial(host, port, timeout).await {
        Ok(stream) => {
            drop(stream);
            Outcome::Success(String::new())
        }
        Err(msg) => Outcome::Failure(msg),
    }
}

/// Opens a TCP connection as Go's dialer would, with Go's error text on failure
/// (also used by the HTTP and gRPC handlers).
pub(super) async fn dial(host: &str, port: u16, timeout: Duration) -> Result<tokio::net::TcpStream, String> {
    let addr = join_host_port(host, port);
    let connect = async {
        match host.parse::<std::net::IpAddr>() {
            Ok(ip) => tokio::net::TcpStream::connect((ip, port))
                .await
                .map_err(|e| format!("dial tcp {addr}: connect: {}", go_io_error(&e))),
            Err(_) => {
                let addrs: Vec<_> = tokio::net::lookup_host((host, port))
                    .await
                    .map_err(|e| format!("dial tcp: lookup {host}: {}", go_io_error(&e)))?
                    .collect();
                let mut last = format!("dial tcp: lookup {host}: no such host");
                for a in addrs {
                    match tokio::net::TcpStream::connect(a).await {
                        Ok(s) => return Ok(s),
                        Err(e) => last = format!("dial tcp {a}: connect: {}", go_io_error(&e)),
                    }
                }
                Err(last)
            }
        }
    };
    match tokio::time::timeout(timeout, connect).await {
        Ok(r) => r,
        Err(_) => Err(format!("dial tcp {addr}: i/o timeout")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn tcp_probe_succeeds_on_listening_port() {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = l.local_addr().unwrap().port();
        assert_eq!(probe_tcp("127.0.0.1", port, Duration::from_secs(1)).await, Outcome::Success(String::new()));
    }

    #[tokio::test]
    async fn tcp_probe_fails_with_go_message_when_refused() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        drop(l);
        assert_eq!(
            probe_tcp("127.0.0.1", port, Duration::from_secs(1)).await,
            Outcome::Failure(format!("dial tcp 127.0.0.1:{port}: connect: connection refused"))
        );
    }
}
