//! Headless Chromium (Debian package `chromium`) for the tests that check a
//! page as a browser runs it: found on PATH, run with a deadline.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub fn path() -> PathBuf {
    for name in ["chromium", "chromium-browser"] {
        if let Some(p) = std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|d| d.join(name))
                .find(|p| p.is_file())
        }) {
            return p;
        }
    }
    panic!("headless Chromium is needed for this test: apt-get install -y chromium");
}

/// The DOM of `url` after its scripts ran for `budget` of virtual time.
pub fn dump_dom(url: &str, budget: Duration, scratch: &Path) -> String {
    let profile = scratch.join("chromium-profile");
    let child = Command::new(path())
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--dump-dom"])
        .arg(format!("--virtual-time-budget={}", budget.as_millis()))
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(url)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start chromium");
    let id = child.id();
    let deadline = Instant::now() + Duration::from_secs(90);
    let waiter = std::thread::spawn(move || child.wait_with_output());
    while !waiter.is_finished() {
        if Instant::now() > deadline {
            let _ = Command::new("kill").arg(id.to_string()).status();
            panic!("chromium did not finish within 90 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = waiter
        .join()
        .expect("chromium waiter")
        .expect("chromium ran");
    String::from_utf8_lossy(&out.stdout).into_owned()
}
