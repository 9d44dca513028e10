//! The small read-only HTTP/1 endpoint brunt serves while a run runs: hyper
//! on a current-thread runtime of its own thread, one answer per GET from a
//! function of the path, query and `Accept` header. `/metrics` and the
//! live dashboard (`run::dashboard`) both answer through it, so the load's
//! workers never serve a browser or a scraper.

use std::sync::Arc;

/// What was asked.
pub struct Asked<'a> {
    pub method: &'a str,
    pub path: &'a str,
    pub query: &'a str,
    pub accept: &'a str,
}

/// The answer: status, content type, body.
pub type Reply = (u16, &'static str, Vec<u8>);

/// Answers each request; called on the endpoint's thread.
pub type Answer = Arc<dyn Fn(&Asked<'_>) -> Reply + Send + Sync>;

/// Serve `l` until `stop` fires. `what` names the endpoint in warnings.
pub fn serve(
    l: std::net::TcpListener,
    answer: Answer,
    stop: tokio::sync::oneshot::Receiver<()>,
    notices: &crate::vocab::Say,
    what: &str,
) {
    use http_body_util::Full;
    use hyper::body::Bytes;
    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        notices.warn(format!("{what}: cannot start its runtime"));
        return;
    };
    rt.block_on(async move {
        let Ok(listener) = tokio::net::TcpListener::from_std(l) else {
            notices.warn(format!("{what}: cannot listen"));
            return;
        };
        tokio::pin!(stop);
        loop {
            let conn = tokio::select! {
                _ = &mut stop => break,
                c = listener.accept() => c,
            };
            let Ok((stream, _)) = conn else { continue };
            let answer = answer.clone();
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(
                    move |req: hyper::Request<hyper::body::Incoming>| {
                        let accept = req
                            .headers()
                            .get(hyper::header::ACCEPT)
                            .and_then(|v| v.to_str().ok())
                            .unwrap_or("");
                        let asked = Asked {
                            method: req.method().as_str(),
                            path: req.uri().path(),
                            query: req.uri().query().unwrap_or(""),
                            accept,
                        };
                        let (code, ctype, body) = answer(&asked);
                        async move {
                            hyper::Response::builder()
                                .status(code)
                                .header("content-type", ctype)
                                .header("cache-control", "no-store")
                                .body(Full::new(Bytes::from(body)))
                        }
                    },
                );
                let io = hyper_util::rt::TokioIo::new(stream);
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(io, svc)
                    .await;
            });
        }
    });
}
