//! A private CA and a server certificate for 127.0.0.1 signed by it, made
//! by `openssl` for one test run (rustls refuses a CA used as the server's
//! own certificate, so a test needs both).
//!
//! Use from an integration test with `#[path = "support/certs.rs"] mod certs;`
//! beside `#[path = "support/cmd.rs"] mod cmd;`.

use std::path::Path;
use std::process::Command;

fn openssl(args: &[&str], dir: &Path) {
    crate::cmd::succeeded(
        Command::new("openssl").args(args).current_dir(dir),
        &format!("openssl {args:?} (apt-get install openssl)"),
    );
}

/// A private CA and a server certificate for 127.0.0.1 signed by it.
pub fn make_cert(dir: &Path) {
    openssl(
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=brunt test CA",
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
        ],
        dir,
    );
    openssl(
        &[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            "/CN=localhost",
            "-keyout",
            "key.pem",
            "-out",
            "server.csr",
        ],
        dir,
    );
    std::fs::write(
        dir.join("ext.cnf"),
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n",
    )
    .unwrap();
    openssl(
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            "ext.cnf",
            "-out",
            "cert.pem",
        ],
        dir,
    );
}
