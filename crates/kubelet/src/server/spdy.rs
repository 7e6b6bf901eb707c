//! A minimal SPDY/3.1 client for the runtime's streaming server, enough for
//! one remote-command session of protocol `v4.channel.k8s.io` (upstream's
//! `remotecommand` over SPDY): the client opens one stream per channel
//! (`streamtype` header: `error`, `stdin`, `stdout`, `stderr`, `resize`),
//! waits for each SYN_REPLY, then data frames carry the bytes; a data frame
//! with FIN half-closes a stream — which is how stdin's end reaches the
//! command (what v5's channel-255 signal asks for and v4 WebSocket cannot
//! say).
//!
//! Header blocks must be zlib streams primed with the SPDY/3 dictionary.
//! This client never compresses: its blocks are deflate *stored* blocks
//! (each followed by an empty stored block, the sync-flush marker decoders
//! flush on) in one zlib stream whose header names the dictionary by its
//! Adler-32, which any inflater accepts. The server's header blocks are
//! skipped unread (only their stream ids matter). The runtime's SPDY
//! library does no flow control, so neither does this client.

use std::collections::HashMap;

use bytes::Bytes;
use http_body_util::Empty;
use hyper::header;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Adler-32 of the SPDY/3 header dictionary as Go's SPDY library (and so
/// the runtime) uses it (1423 bytes, without a trailing NUL).
const DICTIONARY_ADLER32: u32 = 0xe3c6_a7c2;
/// The remote-command protocol asked of the runtime.
pub const PROTOCOL: &str = "v4.channel.k8s.io";
/// Control frame types used here.
const SYN_STREAM: u16 = 1;
const SYN_REPLY: u16 = 2;
const RST_STREAM: u16 = 3;
const PING: u16 = 6;
const GOAWAY: u16 = 7;
/// How long the runtime may take to reply to the streams.
const REPLY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
/// FIN flag of data and control frames.
const FLAG_FIN: u8 = 0x01;

/// What was read from the runtime.
#[derive(Debug, PartialEq, Eq)]
pub enum Event {
    /// Data on a stream, and whether it ends the stream.
    Data { stream: u32, data: Vec<u8>, fin: bool },
    /// The server replied to a stream.
    Reply(u32),
    /// The server reset a stream.
    Reset(u32),
    /// The server is closing the connection (GOAWAY or EOF).
    GoAway,
}

/// Header-block writer: one zlib stream for the connection.
#[derive(Default)]
pub struct HeaderEncoder {
    started: bool,
}

impl HeaderEncoder {
    /// The next header block for `headers` (lower-case names).
    pub fn encode(&mut self, headers: &[(&str, &str)]) -> Vec<u8> {
        let mut plain = Vec::new();
        plain.extend_from_slice(&(headers.len() as u32).to_be_bytes());
        for (name, value) in headers {
            plain.extend_from_slice(&(name.len() as u32).to_be_bytes());
            plain.extend_from_slice(name.as_bytes());
            plain.extend_from_slice(&(value.len() as u32).to_be_bytes());
            plain.extend_from_slice(value.as_bytes());
        }
        let mut out = Vec::with_capacity(plain.len() + 16);
        if !self.started {
            // CMF 0x78 (deflate, 32K window), FLG with FDICT, check bits so the pair is a multiple of 31.
            let cmf = 0x78u16;
            let mut flg = 0x20u16;
            flg |= (31 - ((cmf * 256 + flg) % 31)) % 31;
            out.extend_from_slice(&[cmf as u8, flg as u8]);
            out.extend_from_slice(&DICTIONARY_ADLER32.to_be_bytes());
            self.started = true;
        }
        for chunk in plain.chunks(0xffff) {
            stored_block(&mut out, chunk);
        }
        stored_block(&mut out, &[]);
        out
    }
}

/// A non-final deflate stored block holding `data` (≤ 65535 bytes).
fn stored_block(out: &mut Vec<u8>, data: &[u8]) {
    let len = data.len() as u16;
    out.push(0x00);
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&(!len).to_le_bytes());
    out.extend_from_slice(data);
}

/// A control frame.
fn control(kind: u16, flags: u8, payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::with_capacity(8 + payload.len());
    f.extend_from_slice(&(0x8000u16 | 3).to_be_bytes());
    f.extend_from_slice(&kind.to_be_bytes());
    let len = payload.len() as u32;
    f.push(flags);
    f.extend_from_slice(&len.to_be_bytes()[1..]);
    f.extend_from_slice(payload);
    f
}

/// A SYN_STREAM frame opening `stream` with `header_block`.
pub fn syn_stream(stream: u32, header_block: &[u8]) -> Vec<u8> {
    let mut payload = Vec::with_capacity(10 + header_block.len());
    payload.extend_from_slice(&stream.to_be_bytes());
    payload.extend_from_slice(&0u32.to_be_bytes());
    payload.extend_from_slice(&[0, 0]); // priority 0, slot 0
    payload.extend_from_slice(header_block);
    control(SYN_STREAM, 0, &payload)
}

/// A data frame on `stream`.
pub fn data_frame(stream: u32, data: &[u8], fin: bool) -> Vec<u8> {
    let mut f = Vec::with_capacity(8 + data.len());
    f.extend_from_slice(&(stream & 0x7fff_ffff).to_be_bytes());
    f.push(if fin { FLAG_FIN } else { 0 });
    f.extend_from_slice(&(data.len() as u32).to_be_bytes()[1..]);
    f.extend_from_slice(data);
    f
}

/// Reads the next frame of interest; answers nothing itself (PINGs are
/// returned as raw bytes in `pong` for the caller to write back).
pub async fn read_event<R: AsyncRead + Unpin>(r: &mut R, pong: &mut Option<Vec<u8>>) -> std::io::Result<Event> {
    loop {
        let mut head = [0u8; 8];
        match r.read_exact(&mut head).await {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(Event::GoAway),
            Err(e) => return Err(e),
        }
        let flags = head[4];
        let len = u32::from_be_bytes([0, head[5], head[6], head[7]]) as usize;
        let mut payload = vec![0u8; len];
        r.read_exact(&mut payload).await?;
        if head[0] & 0x80 == 0 {
            let stream = u32::from_be_bytes([head[0], head[1], head[2], head[3]]) & 0x7fff_ffff;
            return Ok(Event::Data { stream, data: payload, fin: flags & FLAG_FIN != 0 });
        }
        let kind = u16::from_be_bytes([head[2], head[3]]);
        let stream_of =
            |p: &[u8]| p.get(..4).map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]) & 0x7fff_ffff).unwrap_or(0);
        match kind {
            SYN_REPLY => return Ok(Event::Reply(stream_of(&payload))),
            RST_STREAM => return Ok(Event::Reset(stream_of(&payload))),
            GOAWAY => return Ok(Event::GoAway),
            PING => {
                let mut frame = head.to_vec();
                frame.extend_from_slice(&payload);
                *pong = Some(frame);
            }
            _ => {} // SETTINGS, WINDOW_UPDATE, HEADERS: nothing to do
        }
        if pong.is_some() {
            // Let the caller answer the ping before reading on.
            return Ok(Event::Data { stream: 0, data: Vec::new(), fin: false });
        }
    }
}

/// Which channel each opened stream carries (v5 channel numbers).
pub type Streams = HashMap<u32, u8>;

/// Upgrades to SPDY at the runtime's `authority`/`path` asking for
/// [`PROTOCOL`], opens the streams `channels` asks for (v5 channel numbers:
/// 3 error, 0 stdin, 1 stdout, 2 stderr, 4 resize) and waits for their
/// replies. Returns the connection and the stream→channel map. Errors are
/// the runtime's answer or the transport failure.
pub async fn open(
    authority: &str,
    path: &str,
    channels: &[u8],
) -> Result<(TokioIo<hyper::upgrade::Upgraded>, Streams), String> {
    let tcp = tokio::net::TcpStream::connect(authority).await.map_err(|e| format!("dial tcp {authority}: {e}"))?;
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(TokioIo::new(tcp)).await.map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        let _ = conn.with_upgrades().await;
    });
    let req = hyper::Request::post(path)
        .header(header::HOST, authority)
        .header(header::CONNECTION, "Upgrade")
        .header(header::UPGRADE, "SPDY/3.1")
        .header("X-Stream-Protocol-Version", PROTOCOL)
        .body(Empty::<Bytes>::new())
        .map_err(|e| e.to_string())?;
    let mut resp = sender.send_request(req).await.map_err(|e| e.to_string())?;
    if resp.status() != hyper::StatusCode::SWITCHING_PROTOCOLS {
        use http_body_util::BodyExt;
        let status = resp.status();
        let body = resp.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
        return Err(format!("{status}: {}", String::from_utf8_lossy(&body).trim()));
    }
    let upgraded = hyper::upgrade::on(&mut resp).await.map_err(|e| e.to_string())?;
    let mut io = TokioIo::new(upgraded);
    let mut encoder = HeaderEncoder::default();
    let mut streams = Streams::new();
    let mut next = 1u32;
    for ch in channels {
        let kind = match ch {
            0 => "stdin",
            1 => "stdout",
            2 => "stderr",
            3 => "error",
            _ => "resize",
        };
        let block = encoder.encode(&[("streamtype", kind)]);
        io.write_all(&syn_stream(next, &block)).await.map_err(|e| e.to_string())?;
        streams.insert(next, *ch);
        next += 2;
    }
    io.flush().await.map_err(|e| e.to_string())?;
    let mut waiting: Vec<u32> = streams.keys().copied().collect();
    let mut pong = None;
    let replies = async {
        while !waiting.is_empty() {
            match read_event(&mut io, &mut pong).await.map_err(|e| e.to_string())? {
                Event::Reply(id) => waiting.retain(|w| *w != id),
                Event::Reset(id) => return Err(format!("the runtime refused stream {id}")),
                Event::GoAway => return Err("the runtime closed the connection".to_string()),
                Event::Data { .. } => {}
            }
            if let Some(p) = pong.take() {
                io.write_all(&p).await.map_err(|e| e.to_string())?;
            }
        }
        Ok(())
    };
    tokio::time::timeout(REPLY_TIMEOUT, replies)
        .await
        .map_err(|_| format!("the runtime did not reply to the streams within {REPLY_TIMEOUT:?}"))??;
    Ok((io, streams))
}

/// Relays a v5 WebSocket client and an opened SPDY session (see [`open`]):
/// client frames (channel byte + data) become data frames of the matching
/// stream, v5's stream-close of stdin (255, 0) a FIN on the stdin stream;
/// the runtime's data becomes client frames. Ends when the runtime has
/// finished the error and output streams (or goes away), closing the
/// client normally, or when the client leaves.
pub async fn relay_v5<S, T>(client: tokio_tungstenite::WebSocketStream<S>, runtime: T, streams: Streams)
where
    S: AsyncRead + AsyncWrite + Unpin,
    T: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    use futures::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
    use tokio_tungstenite::tungstenite::protocol::CloseFrame;
    use tokio_tungstenite::tungstenite::Message;

    let by_channel: HashMap<u8, u32> = streams.iter().map(|(s, c)| (*c, *s)).collect();
    let (mut rt_read, mut rt_write) = tokio::io::split(runtime);
    let (frames_tx, mut frames_rx) = tokio::sync::mpsc::unbounded_channel::<Vec<u8>>();
    let writer = tokio::spawn(async move {
        while let Some(frame) = frames_rx.recv().await {
            if rt_write.write_all(&frame).await.is_err() || rt_write.flush().await.is_err() {
                break;
            }
        }
        let _ = rt_write.shutdown().await;
    });
    let (mut client_tx, mut client_rx) = client.split();
    let up_frames = frames_tx.clone();
    let up = async move {
        while let Some(Ok(msg)) = client_rx.next().await {
            match msg {
                Message::Binary(data) if !data.is_empty() => {
                    let (ch, rest) = (data[0], &data[1..]);
                    let frame = if ch == 255 {
                        // Stream close: the payload names the channel.
                        rest.first().and_then(|c| by_channel.get(c)).map(|s| data_frame(*s, &[], true))
                    } else {
                        by_channel.get(&ch).map(|s| data_frame(*s, rest, false))
                    };
                    if let Some(f) = frame {
                        if up_frames.send(f).is_err() {
                            break;
                        }
                    }
                }
                Message::Close(_) => break,
                _ => {}
            }
        }
    };
    let down = async move {
        let mut open: Vec<u32> = streams.iter().filter(|(_, c)| matches!(c, 1..=3)).map(|(s, _)| *s).collect();
        let mut pong = None;
        while !open.is_empty() {
            let event = match read_event(&mut rt_read, &mut pong).await {
                Ok(e) => e,
                Err(_) => break,
            };
            if let Some(p) = pong.take() {
                let _ = frames_tx.send(p);
            }
            match event {
                Event::Data { stream, data, fin } => {
                    if let Some(ch) = streams.get(&stream) {
                        if !data.is_empty() {
                            let mut frame = Vec::with_capacity(data.len() + 1);
                            frame.push(*ch);
                            frame.extend_from_slice(&data);
                            if client_tx.send(Message::Binary(frame.into())).await.is_err() {
                                return;
                            }
                        }
                        if fin {
                            open.retain(|s| *s != stream);
                        }
                    }
                }
                Event::Reset(stream) => open.retain(|s| *s != stream),
                Event::GoAway => break,
                Event::Reply(_) => {}
            }
        }
        let _ = client_tx.send(Message::Close(Some(CloseFrame { code: CloseCode::Normal, reason: "".into() }))).await;
    };
    let (mut up, mut down) = (std::pin::pin!(up), std::pin::pin!(down));
    let grace = std::time::Duration::from_secs(10);
    tokio::select! {
        _ = &mut up => { let _ = tokio::time::timeout(grace, down).await; }
        _ = &mut down => { let _ = tokio::time::timeout(grace, up).await; }
    }
    writer.abort();
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Header blocks are a valid zlib stream: header with FDICT and the
    /// dictionary id, then stored blocks ending in the sync-flush marker.
    #[test]
    fn header_blocks() {
        let mut enc = HeaderEncoder::default();
        let first = enc.encode(&[("streamtype", "error")]);
        assert_eq!(&first[..2], &[0x78, 0x20]);
        assert_eq!((0x78u32 * 256 + 0x20) % 31, 0);
        assert_eq!(&first[2..6], &DICTIONARY_ADLER32.to_be_bytes());
        let plain_len = 4 + 4 + 10 + 4 + 5;
        assert_eq!(first[6], 0);
        assert_eq!(u16::from_le_bytes([first[7], first[8]]) as usize, plain_len);
        assert_eq!(&first[11..15], &1u32.to_be_bytes());
        assert_eq!(&first[first.len() - 5..], &[0, 0, 0, 0xff, 0xff]);
        // Later blocks continue the stream: no zlib header.
        let second = enc.encode(&[("streamtype", "stdout")]);
        assert_eq!(second[0], 0);
        assert_eq!(second.len(), 5 + plain_len + 1 + 5);
    }

    /// Frames round-trip through the reader; pings are handed back.
    #[tokio::test]
    async fn frames() {
        let mut wire = Vec::new();
        wire.extend(control(SYN_REPLY, 0, &[0, 0, 0, 3, 1, 2]));
        wire.extend(data_frame(3, b"hi", true));
        wire.extend(control(PING, 0, &[0, 0, 0, 2]));
        wire.extend(control(GOAWAY, 0, &[0, 0, 0, 0, 0, 0, 0, 0]));
        let mut r = &wire[..];
        let mut pong = None;
        assert_eq!(read_event(&mut r, &mut pong).await.unwrap(), Event::Reply(3));
        assert_eq!(
            read_event(&mut r, &mut pong).await.unwrap(),
            Event::Data { stream: 3, data: b"hi".to_vec(), fin: true }
        );
        assert_eq!(read_event(&mut r, &mut pong).await.unwrap(), Event::Data { stream: 0, data: vec![], fin: false });
        assert_eq!(pong.take().unwrap(), control(PING, 0, &[0, 0, 0, 2]));
        assert_eq!(read_event(&mut r, &mut pong).await.unwrap(), Event::GoAway);
        assert_eq!(read_event(&mut r, &mut pong).await.unwrap(), Event::GoAway);
        let syn = syn_stream(5, b"xyz");
        assert_eq!(&syn[..8], &[0x80, 3, 0, 1, 0, 0, 0, 13]);
    }
}
