//! SSH agent authentication against a real sshd: a private `ssh-agent` holds
//! the key (its own socket, killed on drop). In its own test binary because
//! it sets `SSH_AUTH_SOCK` for the process.

#[path = "support/sshd.rs"]
mod sshd;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use brunt::collectors::transport::{SshTransport, Transport};

struct Agent(Child);

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn agent_auth() {
    let s = sshd::Sshd::start();
    let sock = s.dir.path().join("agent.sock");
    let agent = Agent(
        Command::new("ssh-agent")
            .arg("-D")
            .arg("-a")
            .arg(&sock)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("ssh-agent missing: apt-get install -y openssh-client"),
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while !sock.exists() {
        assert!(Instant::now() < deadline, "ssh-agent did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    let st = Command::new("ssh-add")
        .arg(&s.client_key)
        .env("SSH_AUTH_SOCK", &sock)
        .stderr(Stdio::null())
        .status()
        .expect("ssh-add");
    assert!(st.success(), "ssh-add failed");
    std::env::set_var("SSH_AUTH_SOCK", &sock);
    let mut cfg = s.transport();
    cfg.key = None;
    let mut t = SshTransport::connect(cfg).expect("agent auth");
    assert_eq!(
        t.exec("echo via-agent").expect("exec").stdout,
        b"via-agent\n"
    );
    drop(agent);
}
