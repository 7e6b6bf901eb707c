//! The WebSocket-to-WebSocket relay of a translated exec/attach session:
//! the client (kubectl) and the kubelet both speak `v5.channel.k8s.io`, so
//! data frames pass unchanged in both directions — stdin (0) and resize
//! (4) and stream-close signals (255) up, stdout (1), stderr (2) and the
//! closing `Status` on the error channel (3) down. A close from either side
//! is passed on; the other side then has a bounded time to finish its
//! closing handshake, so neither connection outlives the session.

use std::time::Duration;

use futures::{SinkExt, StreamExt};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

/// How long one side may take to close after the other has.
const CLOSE_GRACE: Duration = Duration::from_secs(10);

/// Relays `client` ↔ `kubelet` until both have closed (or one closed and
/// the other did not follow within [`CLOSE_GRACE`]).
pub async fn relay<A, B>(client: WebSocketStream<A>, kubelet: WebSocketStream<B>)
where
    A: AsyncRead + AsyncWrite + Unpin,
    B: AsyncRead + AsyncWrite + Unpin,
{
    let (mut client_tx, mut client_rx) = client.split();
    let (mut kubelet_tx, mut kubelet_rx) = kubelet.split();
    let up = async {
        while let Some(Ok(msg)) = client_rx.next().await {
            let close = matches!(msg, Message::Close(_));
            if forward(msg, &mut kubelet_tx).await.is_err() || close {
                break;
            }
        }
    };
    let down = async {
        while let Some(Ok(msg)) = kubelet_rx.next().await {
            let close = matches!(msg, Message::Close(_));
            if forward(msg, &mut client_tx).await.is_err() || close {
                break;
            }
        }
    };
    let (mut up, mut down) = (std::pin::pin!(up), std::pin::pin!(down));
    tokio::select! {
        _ = &mut up => { let _ = tokio::time::timeout(CLOSE_GRACE, down).await; }
        _ = &mut down => { let _ = tokio::time::timeout(CLOSE_GRACE, up).await; }
    }
}

/// Passes one message on: data and close frames; pings and pongs are
/// answered per hop by the WebSocket layer and not forwarded. A close
/// without a status goes on as a normal closure (1000), as upstream's
/// WebSocket server closes: kubectl takes anything else for an error.
async fn forward<S>(msg: Message, to: &mut S) -> Result<(), S::Error>
where
    S: futures::Sink<Message> + Unpin,
{
    match msg {
        Message::Close(None) => {
            to.send(Message::Close(Some(CloseFrame { code: CloseCode::Normal, reason: "".into() }))).await
        }
        Message::Binary(_) | Message::Text(_) | Message::Close(_) => to.send(msg).await,
        Message::Ping(_) | Message::Pong(_) | Message::Frame(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rest::connect::kubelet::open_channel_stream;
    use crate::rest::connect::location::KubeletLocation;
    use tokio_tungstenite::tungstenite::handshake::server::{Request, Response};
    use tokio_tungstenite::tungstenite::protocol::Role;

    /// A kubelet stand-in speaking v5 over a real WebSocket: echoes stdin
    /// (channel 0) on stdout (1); when the client closes stdin (255, 0) it
    /// reports success on the error channel (3) and closes.
    async fn kubelet(io: tokio::io::DuplexStream) {
        let pick_v5 = |req: &Request, mut resp: Response| {
            let offered = req.headers().get("sec-websocket-protocol").and_then(|v| v.to_str().ok()).unwrap_or("");
            assert_eq!(offered, "v5.channel.k8s.io");
            resp.headers_mut().insert("sec-websocket-protocol", "v5.channel.k8s.io".parse().unwrap());
            Ok(resp)
        };
        let mut ws = tokio_tungstenite::accept_hdr_async(io, pick_v5).await.unwrap();
        while let Some(Ok(Message::Binary(data))) = ws.next().await {
            match data.first() {
                Some(0) => {
                    let mut out = vec![1u8];
                    out.extend_from_slice(&data[1..]);
                    ws.send(Message::Binary(out.into())).await.unwrap();
                }
                Some(255) => {
                    let status = br#"{"metadata":{},"status":"Success"}"#;
                    ws.send(Message::Binary([&[3u8][..], status].concat().into())).await.unwrap();
                    ws.close(None).await.unwrap();
                    break;
                }
                _ => {}
            }
        }
    }

    /// Frames pass both ways unchanged between a v5 client and a v5
    /// kubelet, and the kubelet's close reaches the client after its
    /// status.
    #[tokio::test]
    async fn relays_channels_between_client_and_kubelet() {
        let (kubelet_io, apiserver_to_kubelet) = tokio::io::duplex(1 << 16);
        tokio::spawn(kubelet(kubelet_io));
        let location = KubeletLocation {
            host: "127.0.0.1".into(),
            port: 10250,
            path_and_query: "/exec/default/web/c?command=cat&input=1&output=1".into(),
        };
        let kubelet_ws = open_channel_stream(apiserver_to_kubelet, &location).await.unwrap();

        let (client_io, apiserver_to_client) = tokio::io::duplex(1 << 16);
        let client_side = WebSocketStream::from_raw_socket(apiserver_to_client, Role::Server, None).await;
        let session = tokio::spawn(relay(client_side, kubelet_ws));
        let mut client = WebSocketStream::from_raw_socket(client_io, Role::Client, None).await;

        client.send(Message::Binary(b"\x00hello".to_vec().into())).await.unwrap();
        assert_eq!(client.next().await.unwrap().unwrap(), Message::Binary(b"\x01hello".to_vec().into()));
        client.send(Message::Binary(vec![255u8, 0].into())).await.unwrap();
        let Message::Binary(status) = client.next().await.unwrap().unwrap() else { panic!("expected the status") };
        assert_eq!((status[0], &status[1..]), (3, &br#"{"metadata":{},"status":"Success"}"#[..]));
        // The kubelet closed without a status: the client sees a normal closure.
        let close = client.next().await.unwrap().unwrap();
        assert!(matches!(&close, Message::Close(Some(f)) if f.code == CloseCode::Normal), "{close:?}");
        drop(client);
        tokio::time::timeout(Duration::from_secs(5), session).await.expect("the relay ends").unwrap();
    }
}
