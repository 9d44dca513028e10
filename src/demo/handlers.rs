//! Request routing and the endpoints' behaviour.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONTENT_TYPE, RETRY_AFTER};
use hyper::{Request, Response, StatusCode};
use tokio::sync::{Mutex, Semaphore};

use super::stall::StallSchedule;
use super::{DemoConfig, DemoStats, EndpointStats};

/// Largest body `/echo` accepts (413 above): the demo target must stay cheap.
pub(crate) const ECHO_LIMIT: usize = 1 << 20;
/// Largest `/slow?ms=N` honoured (400 above): keeps a typo from parking a
/// connection for hours.
pub(crate) const SLOW_MAX_MS: u64 = 600_000;

pub(super) type Resp = Response<Full<Bytes>>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Endpoint {
    Fast,
    Slow,
    Contended,
    Shed,
    NoShed,
    Status,
    Echo,
    Health,
    NotFound,
    Cache,
    Login,
    Items,
}

const ENDPOINTS: usize = 12;

/// Size of each `/cache/{id}` value: memory grows by about this per distinct id.
pub(crate) const CACHE_VALUE_BYTES: usize = 10 * 1024;

impl Endpoint {
    fn route(path: &str) -> Endpoint {
        match path {
            "/" | "/fast" => Endpoint::Fast,
            "/slow" => Endpoint::Slow,
            "/contended" => Endpoint::Contended,
            "/shed" => Endpoint::Shed,
            "/noshed" => Endpoint::NoShed,
            "/echo" => Endpoint::Echo,
            "/health" => Endpoint::Health,
            "/login" => Endpoint::Login,
            p if p.starts_with("/status/") => Endpoint::Status,
            p if p.starts_with("/cache/") => Endpoint::Cache,
            p if p.starts_with("/items/") => Endpoint::Items,
            _ => Endpoint::NotFound,
        }
    }
}

#[derive(Default)]
struct Counters {
    requests: AtomicU64,
    completed: AtomicU64,
    shed: AtomicU64,
}

impl Counters {
    fn snapshot(&self) -> EndpointStats {
        EndpointStats {
            requests: self.requests.load(Ordering::Relaxed),
            completed: self.completed.load(Ordering::Relaxed),
            shed: self.shed.load(Ordering::Relaxed),
        }
    }
}

/// State shared by every worker thread of one server.
pub(crate) struct Shared {
    started: Instant,
    slow: Duration,
    contended_hold: Duration,
    shed_cap: usize,
    shed_work: Duration,
    stall: Option<StallSchedule>,
    /// The one contention point of `/contended`: a fair (FIFO) async lock,
    /// so waiters queue without holding a thread each. It guards the instant
    /// the previous holder was due to release it.
    contended: Mutex<Option<Instant>>,
    shed_in_flight: AtomicUsize,
    noshed_permits: Semaphore,
    counters: [Counters; ENDPOINTS],
    connections: AtomicU64,
    stalled: AtomicU64,
    /// `/cache/{id}`: one ~10 KB value and a request count per distinct id, never evicted.
    cache: std::sync::Mutex<HashMap<String, (Bytes, u64)>>,
    /// Tokens `POST /login` issued (kept for the server's life), with
    /// their limits when it asked for any.
    tokens: std::sync::Mutex<HashMap<String, Limit>>,
    /// `/items/{id}` answered 401.
    unauthorized: AtomicU64,
}

impl Shared {
    pub(crate) fn new(cfg: &DemoConfig, started: Instant) -> Shared {
        Shared {
            started,
            slow: cfg.slow,
            contended_hold: cfg.contended_hold,
            shed_cap: cfg.shed_cap,
            shed_work: cfg.shed_work,
            stall: cfg.stall_schedule(),
            contended: Mutex::new(None),
            shed_in_flight: AtomicUsize::new(0),
            noshed_permits: Semaphore::new(cfg.shed_cap),
            counters: Default::default(),
            connections: AtomicU64::new(0),
            stalled: AtomicU64::new(0),
            cache: Default::default(),
            tokens: Default::default(),
            unauthorized: AtomicU64::new(0),
        }
    }

    /// `/login` issued this token.
    pub(super) fn knows_token(&self, token: &str) -> bool {
        self.tokens.lock().is_ok_and(|t| t.contains_key(token))
    }

    pub(crate) fn connection_opened(&self) {
        self.connections.fetch_add(1, Ordering::Relaxed);
    }

    fn counters(&self, ep: Endpoint) -> &Counters {
        &self.counters[ep as usize]
    }

    pub(crate) fn stats(&self) -> DemoStats {
        let c = |ep| self.counters(ep).snapshot();
        DemoStats {
            fast: c(Endpoint::Fast),
            slow: c(Endpoint::Slow),
            contended: c(Endpoint::Contended),
            shed: c(Endpoint::Shed),
            noshed: c(Endpoint::NoShed),
            status: c(Endpoint::Status),
            echo: c(Endpoint::Echo),
            health: c(Endpoint::Health),
            not_found: c(Endpoint::NotFound),
            cache: c(Endpoint::Cache),
            login: c(Endpoint::Login),
            items: c(Endpoint::Items),
            cache_entries: self.cache.lock().map(|m| m.len() as u64).unwrap_or(0),
            connections: self.connections.load(Ordering::Relaxed),
            stalled: self.stalled.load(Ordering::Relaxed),
            unauthorized: self.unauthorized.load(Ordering::Relaxed),
        }
    }

    pub(crate) fn tokens(&self) -> Vec<String> {
        self.tokens
            .lock()
            .map(|t| t.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// Requests per id of `/cache/{id}` since start.
    pub(crate) fn cache_counts(&self) -> HashMap<String, u64> {
        self.cache
            .lock()
            .map(|m| m.iter().map(|(k, (_, n))| (k.clone(), *n)).collect())
            .unwrap_or_default()
    }

    /// Holds a response back until the current stall window (if any) ends:
    /// whatever arrived or was in progress during the window completes at
    /// its end, exactly as if the whole process had been paused.
    async fn stall_gate(&self) {
        let Some(stall) = self.stall else { return };
        let elapsed = self.started.elapsed();
        if let Some((_, end)) = stall.window_at(elapsed) {
            self.stalled.fetch_add(1, Ordering::Relaxed);
            tokio::time::sleep_until((self.started + end).into()).await;
        }
    }
}

/// Decrements the `/shed` in-flight count however the request ends
/// (including a client that hangs up mid-request).
struct InFlight<'a>(&'a AtomicUsize);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

pub(crate) async fn handle(
    shared: Arc<Shared>,
    req: Request<Incoming>,
) -> Result<Resp, Infallible> {
    let ep = Endpoint::route(req.uri().path());
    let counters = shared.counters(ep);
    counters.requests.fetch_add(1, Ordering::Relaxed);
    let resp = match ep {
        Endpoint::Fast | Endpoint::Health => text(StatusCode::OK, "ok\n"),
        Endpoint::Slow => slow(&shared, req.uri().query()).await,
        Endpoint::Contended => contended(&shared).await,
        Endpoint::Shed => {
            // The guard lives past the stall gate: a paused server still
            // counts its stuck requests as in flight.
            let prev = shared.shed_in_flight.fetch_add(1, Ordering::AcqRel);
            let _guard = InFlight(&shared.shed_in_flight);
            let resp = if prev >= shared.shed_cap {
                counters.shed.fetch_add(1, Ordering::Relaxed);
                shed_response()
            } else {
                tokio::time::sleep(shared.shed_work).await;
                text(StatusCode::OK, "ok\n")
            };
            shared.stall_gate().await;
            counters.completed.fetch_add(1, Ordering::Relaxed);
            return Ok(resp);
        }
        Endpoint::NoShed => match shared.noshed_permits.acquire().await {
            Ok(_permit) => {
                tokio::time::sleep(shared.shed_work).await;
                text(StatusCode::OK, "ok\n")
            }
            // Only if the semaphore were closed, which this module never does.
            Err(_) => text(StatusCode::INTERNAL_SERVER_ERROR, "closed\n"),
        },
        Endpoint::Status => status(req.uri().path(), req.uri().query()),
        Endpoint::Echo => echo(req).await,
        Endpoint::Cache => cache(&shared, req.uri().path()),
        Endpoint::Login => login(&shared, req).await,
        Endpoint::Items => items(&shared, &req),
        Endpoint::NotFound => text(StatusCode::NOT_FOUND, "not found\n"),
    };
    shared.stall_gate().await;
    counters.completed.fetch_add(1, Ordering::Relaxed);
    Ok(resp)
}

pub(super) fn text(status: StatusCode, body: &'static str) -> Resp {
    let mut resp = Response::new(Full::new(Bytes::from_static(body.as_bytes())));
    *resp.status_mut() = status;
    resp.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    resp
}

fn shed_response() -> Resp {
    let mut resp = text(StatusCode::SERVICE_UNAVAILABLE, "overloaded\n");
    resp.headers_mut()
        .insert(RETRY_AFTER, HeaderValue::from_static("1"));
    resp
}

/// Value of `key` in a query string (`a=1&b=2`), if present.
fn query_param<'q>(query: Option<&'q str>, key: &str) -> Option<&'q str> {
    query?
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .find(|(k, _)| *k == key)
        .map(|(_, v)| v)
}

async fn slow(shared: &Shared, query: Option<&str>) -> Resp {
    let delay = match query_param(query, "ms") {
        None => shared.slow,
        Some(v) => match v.parse::<u64>() {
            Ok(ms) if ms <= SLOW_MAX_MS => Duration::from_millis(ms),
            _ => return text(StatusCode::BAD_REQUEST, "ms must be 0..=600000\n"),
        },
    };
    tokio::time::sleep(delay).await;
    text(StatusCode::OK, "ok\n")
}

async fn contended(shared: &Shared) -> Resp {
    let arrived = Instant::now();
    let mut last_release = shared.contended.lock().await;
    // A request that queued starts its hold when the previous one was due
    // to end, not when the hand-off (a wake-up or two) finally reached it:
    // saturated throughput is then exactly 1/hold.
    let start = match *last_release {
        Some(prev) if prev > arrived => prev,
        _ => arrived,
    };
    let release = start + shared.contended_hold;
    hold_until(release).await;
    *last_release = Some(release);
    text(StatusCode::OK, "ok\n")
}

/// Sleeps until `deadline` while the caller holds the contended lock.
/// Tokio's timer rounds up to whole milliseconds (a 2-ms sleep takes 2–3 ms),
/// which would cap `/contended` well below 1/hold; a thread sleep is accurate
/// to tens of microseconds, and only the lock holder ever runs one, so the
/// blocking pool stays at one thread.
async fn hold_until(deadline: Instant) {
    let Some(d) = deadline.checked_duration_since(Instant::now()) else {
        return;
    };
    if d >= Duration::from_millis(50) {
        tokio::time::sleep_until(deadline.into()).await;
        return;
    }
    let slept = tokio::task::spawn_blocking(move || {
        if let Some(d) = deadline.checked_duration_since(Instant::now()) {
            std::thread::sleep(d);
        }
    })
    .await;
    if slept.is_err() {
        // The blocking pool is gone (runtime shutting down): still hold.
        tokio::time::sleep_until(deadline.into()).await;
    }
}

fn status(path: &str, query: Option<&str>) -> Resp {
    let code = path
        .strip_prefix("/status/")
        .and_then(|c| c.parse::<u16>().ok())
        .filter(|c| (200..=599).contains(c))
        .and_then(|c| StatusCode::from_u16(c).ok());
    let Some(code) = code else {
        return text(StatusCode::BAD_REQUEST, "status must be 200..=599\n");
    };
    let mut resp = text(code, "status\n");
    // Opt-in, so a test can also check a 503 *without* Retry-After.
    if let Some(v) = query_param(query, "retry_after") {
        if let Ok(v) = HeaderValue::from_str(v) {
            resp.headers_mut().insert(RETRY_AFTER, v);
        }
    }
    resp
}

/// `GET /cache/{id}`: the id's value, created (~10 KB) on its first request.
fn cache(shared: &Shared, path: &str) -> Resp {
    let id = path.strip_prefix("/cache/").unwrap_or("");
    if id.is_empty() || id.contains('/') {
        return text(StatusCode::BAD_REQUEST, "expected /cache/{id}\n");
    }
    let Ok(mut map) = shared.cache.lock() else {
        return text(StatusCode::INTERNAL_SERVER_ERROR, "cache poisoned\n");
    };
    let entry = map.entry(id.to_string()).or_insert_with(|| {
        // A distinct allocation per id, so memory really grows with distinct ids.
        let mut v = vec![b'.'; CACHE_VALUE_BYTES];
        let n = id.len().min(CACHE_VALUE_BYTES);
        v[..n].copy_from_slice(&id.as_bytes()[..n]);
        (Bytes::from(v), 0)
    });
    entry.1 += 1;
    let body = entry.0.clone();
    drop(map);
    let mut resp = Response::new(Full::new(body));
    resp.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    resp
}

/// `POST /login`: a new bearer token, `{"token":"…"}`, also set as the
/// session cookie `sid` (any body is read and ignored).
async fn login(shared: &Shared, req: Request<Incoming>) -> Resp {
    let query = req.uri().query().map(str::to_string);
    if req.method() != hyper::Method::POST {
        let mut r = text(StatusCode::METHOD_NOT_ALLOWED, "POST /login\n");
        r.headers_mut()
            .insert(hyper::header::ALLOW, HeaderValue::from_static("POST"));
        return r;
    }
    if Limited::new(req.into_body(), ECHO_LIMIT)
        .collect()
        .await
        .is_err()
    {
        return text(StatusCode::BAD_REQUEST, "body read failed\n");
    }
    let token = format!("{:016x}{:016x}", fastrand::u64(..), fastrand::u64(..));
    let num = |k| query_param(query.as_deref(), k).and_then(|v| v.parse::<u64>().ok());
    let (ttl, uses) = (num("ttl_ms").map(Duration::from_millis), num("uses"));
    if let Ok(mut t) = shared.tokens.lock() {
        let expires = ttl.map(|d| Instant::now() + d);
        t.insert(token.clone(), Limit { expires, uses });
    }
    let expires_in = ttl.map_or(String::new(), |d| {
        format!(",\"expires_in\":{}", d.as_secs_f64())
    });
    let mut resp = Response::new(Full::new(Bytes::from(format!(
        "{{\"token\":\"{token}\"{expires_in}}}\n"
    ))));
    let h = resp.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    if let Ok(v) = HeaderValue::from_str(&format!("sid={token}; Path=/; HttpOnly")) {
        h.insert(hyper::header::SET_COOKIE, v);
    }
    resp
}

/// A token's limits (`POST /login?ttl_ms=N&uses=M`).
#[derive(Debug, Clone, Copy)]
struct Limit {
    expires: Option<Instant>,
    uses: Option<u64>,
}

impl Limit {
    /// Whether the token still holds; takes one use.
    fn take(&mut self) -> bool {
        if self.expires.is_some_and(|e| Instant::now() >= e) {
            return false;
        }
        match self.uses.as_mut() {
            Some(0) => false,
            Some(n) => {
                *n -= 1;
                true
            }
            None => true,
        }
    }
}

/// `GET /items/{id}`: 200 with `Authorization: Bearer <token from /login>`
/// or its `sid` cookie, else 401.
fn items(shared: &Shared, req: &Request<Incoming>) -> Resp {
    let h = req.headers();
    let bearer = h
        .get(hyper::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let sid = || {
        h.get_all(hyper::header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .find_map(|c| c.trim().strip_prefix("sid="))
    };
    let token = bearer.or_else(sid).map(str::trim);
    let known = token.is_some_and(|t| {
        shared
            .tokens
            .lock()
            .is_ok_and(|mut s| s.get_mut(t).is_some_and(Limit::take))
    });
    if !known {
        shared.unauthorized.fetch_add(1, Ordering::Relaxed);
        let mut r = text(StatusCode::UNAUTHORIZED, "unauthorized\n");
        r.headers_mut().insert(
            hyper::header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer"),
        );
        return r;
    }
    let id = req.uri().path().strip_prefix("/items/").unwrap_or("");
    let id: String = id
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .collect();
    let mut resp = Response::new(Full::new(Bytes::from(format!(
        "{{\"id\":\"{id}\",\"name\":\"item {id}\"}}\n"
    ))));
    resp.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    resp
}

async fn echo(req: Request<Incoming>) -> Resp {
    let content_type = req.headers().get(CONTENT_TYPE).cloned();
    let body = match Limited::new(req.into_body(), ECHO_LIMIT).collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => {
            return text(StatusCode::PAYLOAD_TOO_LARGE, "body too large\n")
        }
        Err(_) => return text(StatusCode::BAD_REQUEST, "body read failed\n"),
    };
    let mut resp = Response::new(Full::new(body));
    resp.headers_mut().insert(
        CONTENT_TYPE,
        content_type.unwrap_or(HeaderValue::from_static("application/octet-stream")),
    );
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes() {
        assert_eq!(Endpoint::route("/"), Endpoint::Fast);
        assert_eq!(Endpoint::route("/fast"), Endpoint::Fast);
        assert_eq!(Endpoint::route("/status/418"), Endpoint::Status);
        assert_eq!(Endpoint::route("/nope"), Endpoint::NotFound);
        assert_eq!(Endpoint::route("/cache/7"), Endpoint::Cache);
        assert_eq!(Endpoint::route("/login"), Endpoint::Login);
        assert_eq!(Endpoint::route("/items/3"), Endpoint::Items);
    }

    #[test]
    fn query_params() {
        assert_eq!(query_param(Some("a=1&ms=20"), "ms"), Some("20"));
        assert_eq!(query_param(Some("ms"), "ms"), None);
        assert_eq!(query_param(None, "ms"), None);
    }
}
