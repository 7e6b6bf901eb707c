//! The UDP/TCP DNS server (hickory-server) over an [`IndexCell`], and the
//! plain forwarder for names outside the cluster zone.

use std::net::SocketAddr;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use hickory_server::net::runtime::Time;
use hickory_server::net::xfer::Protocol;
use hickory_server::proto::op::{Edns, Message, MessageType, Metadata, OpCode, Query, ResponseCode};
use hickory_server::proto::rr::{Name, Record, RecordType};
use hickory_server::server::{Request, RequestHandler, ResponseHandler, ResponseInfo};
use hickory_server::zone_handler::MessageResponseBuilder;
use hickory_server::Server;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, UdpSocket};
use tracing::{debug, warn};

use crate::index::Index;
use crate::lookup::{lookup, Answer};
use crate::DnsError;

/// How long one upstream may take to answer before the next is tried.
pub const UPSTREAM_TIMEOUT: Duration = Duration::from_secs(2);
/// Idle timeout of a client's TCP connection.
pub const TCP_TIMEOUT: Duration = Duration::from_secs(10);
/// The EDNS UDP payload size the server advertises (DNS flag day 2020).
pub const EDNS_PAYLOAD: u16 = 1232;

/// The current index, replaced whole on every change; readers take a cheap
/// `Arc` clone per query.
#[derive(Debug, Clone)]
pub struct IndexCell(Arc<RwLock<Arc<Index>>>);

impl IndexCell {
    /// A cell holding `index`.
    pub fn new(index: Index) -> Self {
        IndexCell(Arc::new(RwLock::new(Arc::new(index))))
    }

    /// Replaces the index (queries in flight keep the old one).
    pub fn set(&self, index: Index) {
        *self.0.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(index);
    }

    /// The current index.
    pub fn get(&self) -> Arc<Index> {
        self.0.read().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

struct Handler {
    index: IndexCell,
    upstream: Arc<Vec<SocketAddr>>,
    /// Round-robin counter for [`rotate_addresses`].
    turn: std::sync::atomic::AtomicUsize,
}

/// Rotates the address records of an answer by `turn` (after any leading
/// CNAME), so that clients taking the first address spread over headless
/// endpoints — the job of the `loadbalance` plugin in k3s's Corefile.
pub fn rotate_addresses(answers: &mut [Record], turn: usize) {
    let start = answers.iter().position(|r| matches!(r.record_type(), RecordType::A | RecordType::AAAA)).unwrap_or(0);
    let addrs = &mut answers[start..];
    if addrs.len() > 1 {
        let n = turn % addrs.len();
        addrs.rotate_left(n);
    }
}

/// Sends `raw` (a whole DNS message) to the upstreams in order, over UDP or
/// TCP; returns the first parsed reply. A truncated UDP reply is returned as
/// is (the client retries over TCP, reaching the TCP path).
pub async fn forward(upstreams: &[SocketAddr], raw: &[u8], protocol: Protocol) -> Option<Message> {
    for up in upstreams {
        let attempt = async {
            let bytes = if protocol == Protocol::Tcp {
                let mut s = TcpStream::connect(up).await?;
                let mut buf = Vec::with_capacity(raw.len() + 2);
                buf.extend_from_slice(&(raw.len() as u16).to_be_bytes());
                buf.extend_from_slice(raw);
                s.write_all(&buf).await?;
                let len = s.read_u16().await? as usize;
                let mut body = vec![0u8; len];
                s.read_exact(&mut body).await?;
                body
            } else {
                let bind: SocketAddr = if up.is_ipv4() { ([0, 0, 0, 0], 0).into() } else { ([0u16; 8], 0).into() };
                let sock = UdpSocket::bind(bind).await?;
                sock.connect(up).await?;
                sock.send(raw).await?;
                let mut buf = vec![0u8; 65535];
                let n = sock.recv(&mut buf).await?;
                buf.truncate(n);
                buf
            };
            Ok::<_, std::io::Error>(bytes)
        };
        match tokio::time::timeout(UPSTREAM_TIMEOUT, attempt).await {
            Ok(Ok(bytes)) => match Message::from_vec(&bytes) {
                Ok(m) => return Some(m),
                Err(e) => debug!(component = "cluster-dns", upstream = %up, error = %e, "unparseable upstream reply"),
            },
            Ok(Err(e)) => debug!(component = "cluster-dns", upstream = %up, error = %e, "upstream failed"),
            Err(_) => debug!(component = "cluster-dns", upstream = %up, "upstream timed out"),
        }
    }
    None
}

/// Resolves an ExternalName target upstream (one recursive query).
async fn chase(upstreams: &[SocketAddr], target: &Name, qtype: RecordType) -> Vec<Record> {
    let mut m = Message::new(rand_id(), MessageType::Query, OpCode::Query);
    m.metadata.recursion_desired = true;
    m.add_query(Query::query(target.clone(), qtype));
    let Ok(raw) = m.to_vec() else { return vec![] };
    forward(upstreams, &raw, Protocol::Udp).await.map(|r| r.answers).unwrap_or_default()
}

fn rand_id() -> u16 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0),
    );
    h.finish() as u16
}

#[async_trait::async_trait]
impl RequestHandler for Handler {
    async fn handle_request<R: ResponseHandler, T: Time>(&self, request: &Request, mut response: R) -> ResponseInfo {
        let mut edns = Edns::new();
        edns.set_max_payload(EDNS_PAYLOAD);
        let mut builder = MessageResponseBuilder::from_message_request(request);
        if request.edns.is_some() {
            builder.edns(&edns);
        }
        let fail = |code: ResponseCode| {
            let mut m = Metadata::response_from_request(&request.metadata);
            m.response_code = code;
            ResponseInfo::from(hickory_server::proto::op::Header { metadata: m, counts: Default::default() })
        };
        if request.metadata.message_type != MessageType::Query || request.metadata.op_code != OpCode::Query {
            let msg = builder.error_msg(&request.metadata, ResponseCode::NotImp);
            return response.send_response(msg).await.unwrap_or_else(|_| fail(ResponseCode::NotImp));
        }
        let info = match request.request_info() {
            Ok(info) => info,
            Err(_) => {
                let msg = builder.error_msg(&request.metadata, ResponseCode::FormErr);
                return response.send_response(msg).await.unwrap_or_else(|_| fail(ResponseCode::FormErr));
            }
        };
        let query = info.query;
        let answer = {
            let index = self.index.get();
            lookup(&index, query.original().name(), query.query_type())
        };
        let mut meta = Metadata::response_from_request(&request.metadata);
        let result = match answer {
            Answer::Local { rcode, mut answers, authority, additionals, chase: target } => {
                if let Some(target) = target {
                    answers.extend(chase(&self.upstream, &target, query.query_type()).await);
                }
                rotate_addresses(&mut answers, self.turn.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
                meta.authoritative = true;
                meta.response_code = rcode;
                let msg = builder.build(meta, answers.iter(), authority.iter(), std::iter::empty(), additionals.iter());
                response.send_response(msg).await
            }
            Answer::Refused => {
                let msg = builder.error_msg(&request.metadata, ResponseCode::Refused);
                response.send_response(msg).await
            }
            Answer::Forward => match forward(&self.upstream, request.as_slice(), request.protocol()).await {
                Some(reply) => {
                    let mut m = reply.metadata;
                    m.id = request.metadata.id;
                    let msg = builder.build(
                        m,
                        reply.answers.iter(),
                        reply.authorities.iter(),
                        std::iter::empty(),
                        reply.additionals.iter(),
                    );
                    response.send_response(msg).await
                }
                None => {
                    debug!(component = "cluster-dns", name = %query.name(), "no upstream answered");
                    meta.recursion_available = true;
                    meta.response_code = ResponseCode::ServFail;
                    let msg = builder.build_no_records(meta);
                    response.send_response(msg).await
                }
            },
        };
        result.unwrap_or_else(|e| {
            warn!(component = "cluster-dns", error = %e, "sending a DNS response failed");
            fail(ResponseCode::ServFail)
        })
    }
}

/// Binds UDP and TCP on `listen` (errors name `--cluster-dns-port`).
pub async fn bind(listen: SocketAddr) -> Result<(UdpSocket, TcpListener), DnsError> {
    let udp = UdpSocket::bind(listen).await.map_err(|source| DnsError::Bind { addr: listen, proto: "UDP", source })?;
    let tcp =
        TcpListener::bind(listen).await.map_err(|source| DnsError::Bind { addr: listen, proto: "TCP", source })?;
    Ok((udp, tcp))
}

/// Serves DNS on already bound sockets from `index` until `stop` completes.
///
/// Non-cluster names go to `upstream` (tried in order, 2 s each); with no
/// upstream they answer SERVFAIL. No API server is needed: tests and
/// benchmarks feed `index` directly.
pub async fn serve_on(
    udp: UdpSocket,
    tcp: TcpListener,
    index: IndexCell,
    upstream: Vec<SocketAddr>,
    stop: impl std::future::Future<Output = ()> + Send,
) -> Result<(), DnsError> {
    let mut server = Server::new(Handler { index, upstream: Arc::new(upstream), turn: Default::default() });
    server.register_socket(udp);
    server.register_listener(tcp, TCP_TIMEOUT, 64);
    tokio::select! {
        r = server.block_until_done() => r.map_err(|e| DnsError::Serve(e.to_string())),
        _ = stop => server.shutdown_gracefully().await.map_err(|e| DnsError::Serve(e.to_string())),
    }
}

/// [`bind`] then [`serve_on`].
pub async fn serve(
    listen: SocketAddr,
    index: IndexCell,
    upstream: Vec<SocketAddr>,
    stop: impl std::future::Future<Output = ()> + Send,
) -> Result<(), DnsError> {
    let (udp, tcp) = bind(listen).await?;
    serve_on(udp, tcp, index, upstream, stop).await
}
