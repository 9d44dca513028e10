//! A scenario's cookie jar: RFC 6265 rules (domain, path, expiry, `Secure`,
//! `HttpOnly`) by the `cookie_store` crate. A jar lives per virtual user
//! (closed model), per iteration (open model) or per lane (`cookies:
//! per_lane`); it holds nothing and costs nothing until an answer sets a
//! cookie. `Secure` cookies go over TLS and to loopback addresses (a
//! trustworthy origin, as browsers treat it). Cookies live in memory only: nothing here is written anywhere.

use cookie_store::{CookieStore, RawCookie};
use hyper::header::HeaderValue;
use url::Url;

/// One session's cookies; empty (and unallocated) until a `Set-Cookie`.
#[derive(Default)]
pub(crate) struct Jar {
    store: Option<Box<CookieStore>>,
}

impl Jar {
    /// The `Cookie` header a request to `origin` + `path` carries, if any
    /// cookie of the jar matches it.
    pub fn header(&self, origin: &str, path: &str) -> Option<HeaderValue> {
        let store = self.store.as_ref()?;
        store.iter_any().next()?;
        let url = url_of(origin, path)?;
        let mut out = String::new();
        for (name, value) in store.get_request_values(&url) {
            if !out.is_empty() {
                out.push_str("; ");
            }
            out.push_str(name);
            out.push('=');
            out.push_str(value);
        }
        if out.is_empty() {
            return None;
        }
        HeaderValue::from_str(&out).ok()
    }

    /// Keep the cookies an answer to `origin` + `path` set (`Set-Cookie`
    /// values); malformed or rejected ones (a wrong domain, `Secure` over
    /// cleartext) are dropped, as a browser does.
    pub fn store(&mut self, origin: &str, path: &str, set_cookies: &[HeaderValue]) {
        let Some(url) = url_of(origin, path) else {
            return;
        };
        let cookies = set_cookies
            .iter()
            .filter_map(|v| v.to_str().ok())
            .filter_map(|v| RawCookie::parse(v.to_string()).ok());
        self.store
            .get_or_insert_with(Default::default)
            .store_response_cookies(cookies, &url);
    }
}

/// The request's URL as the jar's rules read it.
fn url_of(origin: &str, path: &str) -> Option<Url> {
    Url::parse(&format!("{origin}{path}")).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hv(s: &str) -> HeaderValue {
        HeaderValue::from_str(s).unwrap()
    }

    #[test]
    fn empty_jar_sends_nothing() {
        let j = Jar::default();
        assert!(j.header("http://127.0.0.1:80", "/").is_none());
        assert!(j.store.is_none());
    }

    #[test]
    fn path_secure_and_expiry_rules() {
        let mut j = Jar::default();
        // Nothing is contacted: the jar only reads the URL (a loopback
        // address would count as secure, as in browsers).
        let o = "http://shop.example:8080";
        j.store(
            o,
            "/login",
            &[
                hv("sid=abc; Path=/; HttpOnly"),
                hv("cart=1; Path=/shop"),
                hv("sec=x; Secure; Path=/"),
                hv("old=1; Path=/; Max-Age=0"),
            ],
        );
        assert_eq!(j.header(o, "/items").unwrap(), "sid=abc");
        let shop = j.header(o, "/shop/7").unwrap();
        let shop = shop.to_str().unwrap();
        assert!(
            shop.contains("sid=abc") && shop.contains("cart=1"),
            "{shop}"
        );
        // Another host is not this cookie's domain; `Secure` goes over TLS.
        assert!(j.header("http://other.example:8080", "/").is_none());
        let tls = j.header("https://shop.example:8080", "/").unwrap();
        let tls = tls.to_str().unwrap();
        assert!(tls.contains("sec=x") && tls.contains("sid=abc"), "{tls}");
    }
}
