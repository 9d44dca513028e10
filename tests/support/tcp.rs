//! Scripted TCP servers on 127.0.0.1 for tests: one accept loop that hands
//! every connection (blocking) to the test's handler until `stop`, and a
//! free port for a server started later.
//!
//! Use from an integration test with
//! `#[path = "support/tcp.rs"] mod tcp;`.

#![allow(dead_code)]

use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

/// Listens on a free port and calls `each` with every accepted connection
/// on the accept thread (spawn from `each` to serve several at once).
pub fn serve(
    stop: Arc<AtomicBool>,
    each: impl Fn(TcpStream) + Send + 'static,
) -> (u16, thread::JoinHandle<()>) {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
    let port = l.local_addr().expect("addr").port();
    l.set_nonblocking(true).expect("nonblocking");
    let h = thread::spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            match l.accept() {
                Ok((c, _)) => {
                    let _ = c.set_nonblocking(false);
                    each(c);
                }
                Err(_) => thread::sleep(Duration::from_micros(100)),
            }
        }
    });
    (port, h)
}

/// A port nothing listens on now (bound, then released).
pub fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    l.local_addr().expect("local addr").port()
}
