//! An async server on 127.0.0.1 for tests: a thread running a
//! current-thread tokio runtime whose accept loop hands every connection to
//! the test's handler (a task each) until the server is dropped.
//!
//! Use from an integration test with
//! `#[path = "support/tokio_server.rs"] mod tokio_server;`.

#![allow(dead_code)]

use std::future::Future;

pub struct TokioServer {
    pub port: u16,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl TokioServer {
    /// Listens on a free port; `each` makes the task that serves a connection.
    pub fn start<F, Fut>(each: F) -> TokioServer
    where
        F: Fn(tokio::net::TcpStream) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let port = l.local_addr().expect("addr").port();
        l.set_nonblocking(true).expect("nonblocking");
        let (tx, mut rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async move {
                let l = tokio::net::TcpListener::from_std(l).expect("listener");
                loop {
                    tokio::select! {
                        _ = &mut rx => break,
                        a = l.accept() => {
                            let Ok((s, _)) = a else { continue };
                            tokio::spawn(each(s));
                        }
                    }
                }
            });
        });
        TokioServer {
            port,
            stop: Some(tx),
            thread: Some(thread),
        }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for TokioServer {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
