//! `/ws`: a WebSocket echo for the README's WebSocket profile — each text
//! or binary message comes back as sent. A `Authorization: Bearer TOKEN`
//! header, when sent, must carry a token `/login` issued (else 401).

use futures_util::{SinkExt, StreamExt};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, AUTHORIZATION, CONNECTION, UPGRADE};
use hyper::{Request, StatusCode};
use hyper_util::rt::TokioIo;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::Role;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

use super::handlers::{text, Resp, Shared};

/// Answer the upgrade (101) and echo on the socket in a task of its own.
pub(super) fn upgrade(shared: &Shared, mut req: Request<Incoming>) -> Resp {
    let upgrading = req
        .headers()
        .get(UPGRADE)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"websocket"));
    let Some(key) = req.headers().get("sec-websocket-key").filter(|_| upgrading) else {
        return text(StatusCode::BAD_REQUEST, "/ws takes a WebSocket upgrade\n");
    };
    let accept = derive_accept_key(key.as_bytes());
    if let Some(auth) = req.headers().get(AUTHORIZATION) {
        let token = auth.to_str().unwrap_or("").trim_start_matches("Bearer ");
        if !shared.knows_token(token) {
            return text(StatusCode::UNAUTHORIZED, "unknown token\n");
        }
    }
    let on = hyper::upgrade::on(&mut req);
    tokio::spawn(async move {
        let Ok(up) = on.await else { return };
        let mut ws = WebSocketStream::from_raw_socket(TokioIo::new(up), Role::Server, None).await;
        while let Some(Ok(m)) = ws.next().await {
            if matches!(m, Message::Text(_) | Message::Binary(_)) && ws.send(m).await.is_err() {
                break;
            }
        }
    });
    let mut resp = text(StatusCode::SWITCHING_PROTOCOLS, "");
    let h = resp.headers_mut();
    h.insert(CONNECTION, HeaderValue::from_static("Upgrade"));
    h.insert(UPGRADE, HeaderValue::from_static("websocket"));
    if let Ok(v) = HeaderValue::from_str(&accept) {
        h.insert("sec-websocket-accept", v);
    }
    resp
}
