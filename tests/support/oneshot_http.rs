//! A tiny HTTP server for collector tests that need load without brunt's
//! engine: one `200 ok` per connection (`Connection: close`), until `stop`.

use std::io::{Read, Write};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::thread;

#[path = "tcp.rs"]
mod tcp;

pub fn server(stop: Arc<AtomicBool>) -> (u16, thread::JoinHandle<()>) {
    tcp::serve(stop, |mut c| {
        let mut buf = [0u8; 1024];
        let _ = c.read(&mut buf);
        let _ = c.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
    })
}
