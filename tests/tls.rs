//! HTTPS targets: a rustls server on 127.0.0.1 with a certificate made by
//! `openssl` for this run. brunt must refuse it without the CA, accept it
//! with `tls.ca_file`, and accept it with the explicit `tls.insecure` opt-in.

#[path = "support/certs.rs"]
mod certs;
#[path = "support/cmd.rs"]
mod cmd;
#[path = "support/load.rs"]
mod load;
use certs::make_cert;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use http_body_util::Full;
use hyper::body::Bytes;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;

/// Serve `ok` over TLS until the process ends; returns the address.
fn tls_server(dir: &Path) -> SocketAddr {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(dir.join("cert.pem"))
        .unwrap()
        .map(|c| c.unwrap())
        .collect();
    let key = PrivateKeyDer::from_pem_file(dir.join("key.pem")).unwrap();
    let cfg = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(certs, key)
    .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(cfg));
    let std_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = std_listener.local_addr().unwrap();
    std_listener.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(std_listener).unwrap();
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    continue;
                };
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let svc = service_fn(|_req| async {
                        Ok::<_, hyper::Error>(hyper::Response::new(Full::new(Bytes::from_static(
                            b"ok\n",
                        ))))
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(tls), svc)
                        .await;
                });
            }
        });
    });
    addr
}

#[test]
fn https_needs_the_ca_or_an_explicit_insecure_opt_in() {
    let _g = load::serial();
    let d = tempfile::tempdir().unwrap();
    make_cert(d.path());
    let addr = tls_server(d.path());
    let url = format!("https://127.0.0.1:{}", addr.port());
    let base = r#"
name: tls
target: { url: "{url}", TLS }
requests: [ { path: /, expect: { body_contains: ok, sample: 100% } } ]
shape: { constant: { rate: 50/s, duration: 1s } }
"#;
    let ca = d.path().join("ca.pem");
    let run = |tls: &str| {
        let p = load::profile(&base.replace("TLS", tls), &url);
        let out = tempfile::tempdir().unwrap();
        load::run(&p, out.path()).summary.totals
    };
    let t = run(&format!("tls: {{ ca_file: \"{}\" }}", ca.display()));
    assert_eq!(t.ok, 50, "trusted through ca_file: {t:?}");
    let t = run("tls: { insecure: true }");
    assert_eq!(t.ok, 50, "insecure opt-in");
    // Without the CA the run refuses to start, and says why and what to do.
    let p = load::profile(&base.replace("TLS", "headers: {}"), &url);
    let out = tempfile::tempdir().unwrap();
    let err = brunt::run::execute(
        &p,
        brunt::run::RunOptions {
            out: Some(out.path().into()),
            ..Default::default()
        },
    )
    .err()
    .expect("an unknown CA is refused");
    let msg = err.to_string();
    assert!(
        msg.contains("TLS handshake") && msg.contains("ca_file"),
        "{msg}"
    );
    // A `ca_file` with no certificate in it (empty, or a key by mistake) is
    // refused before the load, naming the file.
    for (name, text) in [
        ("empty.pem", String::new()),
        (
            "key.pem",
            std::fs::read_to_string(d.path().join("key.pem")).unwrap(),
        ),
    ] {
        let wrong = d.path().join(name);
        std::fs::write(&wrong, text).unwrap();
        let p = load::profile(
            &base.replace(
                "TLS",
                &format!("tls: {{ ca_file: \"{}\" }}", wrong.display()),
            ),
            &url,
        );
        let err = brunt::run::execute(
            &p,
            brunt::run::RunOptions {
                out: Some(out.path().join(name)),
                ..Default::default()
            },
        )
        .err()
        .expect("a ca_file without a certificate is refused");
        let msg = err.to_string();
        assert!(
            msg.contains("no certificate") && msg.contains(name),
            "{msg}"
        );
        assert!(!out.path().join(name).join("summary.json").exists());
    }
}
