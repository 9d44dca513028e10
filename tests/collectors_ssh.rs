//! Transports against a real `sshd` on 127.0.0.1 (keys generated per run):
//! key auth, known_hosts strict / accept-new / changed key, passphrase from an
//! environment variable, hostile shell quoting (plain and through a command
//! prefix), SFTP download of a multi-MB file, and the `openssh` transport.

#[path = "support/sshd.rs"]
mod sshd;

use std::time::Instant;

use brunt::collectors::definition::render;
use brunt::collectors::quote::sh_quote;
use brunt::collectors::transport::{self, Prefixed, SshTransport, Transport};
use brunt::collectors::CollectorError;
use brunt::profile::collectors::{HostKeyPolicy, TransportKind};

const HOSTILE: &[&str] = &[
    "",
    " ",
    "plain",
    "a b  c",
    "it's",
    "''",
    "\"double\"",
    "$(touch CANARY)",
    "`touch CANARY`",
    "; touch CANARY; ",
    "'; touch CANARY; '",
    "&& touch CANARY ||",
    "| tee CANARY",
    "> CANARY",
    "$HOME ${HOME} $$ $1 $@ $*",
    "\\ \\\\ \\'",
    "line1\nline2\r\n",
    "\ttab",
    "-n",
    "--",
    "*",
    "~",
    "!event",
    "#comment",
    "{a,b}",
    "X=1",
    "ünïcødé ✓",
];

#[test]
fn key_auth_exec_status_and_streams() {
    let s = sshd::Sshd::start();
    let mut t = SshTransport::connect(s.transport()).expect("connect with key");
    let out = t.exec("echo out; echo err >&2; exit 3").expect("exec");
    assert_eq!(out.status, 3);
    assert_eq!(out.stdout, b"out\n");
    assert_eq!(out.stderr, b"err\n");
    // One session, many commands.
    for i in 0..5 {
        let o = t.exec(&format!("echo {i}")).expect("exec again");
        assert_eq!(o.stdout_str().trim(), i.to_string());
    }
}

#[test]
fn wrong_key_is_an_auth_error() {
    let s = sshd::Sshd::start();
    let other = sshd::keygen(s.dir.path(), "not_authorized", "");
    let mut cfg = s.transport();
    cfg.key = Some(other);
    match SshTransport::connect(cfg) {
        Err(CollectorError::Auth { .. }) => {}
        Err(e) => panic!("expected an auth error, got {e}"),
        Ok(_) => panic!("an unauthorized key was accepted"),
    }
}

#[test]
fn passphrase_comes_from_an_environment_variable() {
    let s = sshd::Sshd::start();
    let k = sshd::keygen(s.dir.path(), "id_pass", "correct horse");
    let ak = s.dir.path().join("authorized_keys");
    let mut text = std::fs::read_to_string(&ak).expect("read authorized_keys");
    text.push_str(&format!("{}\n", sshd::pub_line(&k)));
    std::fs::write(&ak, text).expect("write authorized_keys");
    let mut cfg = s.transport();
    cfg.key = Some(k);
    cfg.passphrase_env = Some("BRUNT_TEST_SSH_PASSPHRASE".into());
    // Unset variable: refused up front as a config error.
    match SshTransport::new(cfg.clone()) {
        Err(CollectorError::Config(m)) => assert!(m.contains("BRUNT_TEST_SSH_PASSPHRASE"), "{m}"),
        other => panic!("expected a config error, got {:?}", other.err()),
    }
    std::env::set_var("BRUNT_TEST_SSH_PASSPHRASE", "correct horse");
    let mut t = SshTransport::connect(cfg).expect("connect with passphrase key");
    assert_eq!(t.exec("echo ok").expect("exec").stdout, b"ok\n");
}

#[test]
fn known_hosts_strict_accept_new_and_changed_key() {
    let s = sshd::Sshd::start();
    let d = s.dir.path();

    // Unknown host: strict refuses.
    let empty = d.join("kh_empty");
    std::fs::write(&empty, "").expect("write");
    let mut cfg = s.transport();
    cfg.known_hosts = Some(empty.clone());
    match SshTransport::connect(cfg.clone()) {
        Err(CollectorError::UnknownHostKey { .. }) => {}
        other => panic!("unknown host must be refused, got {:?}", other.err()),
    }

    // accept-new records the key; strict then accepts it.
    cfg.host_key = HostKeyPolicy::AcceptNew;
    SshTransport::connect(cfg.clone()).expect("accept-new connects");
    let kh = std::fs::read_to_string(&empty).expect("read");
    assert!(
        kh.contains(&format!("[127.0.0.1]:{} {}", s.port, s.host_pub)),
        "accept-new wrote: {kh}"
    );
    cfg.host_key = HostKeyPolicy::Strict;
    SshTransport::connect(cfg.clone()).expect("recorded key accepted");

    // Hashed known_hosts entries (`ssh-keygen -H`, HashKnownHosts yes) match too.
    let st = std::process::Command::new("ssh-keygen")
        .arg("-H")
        .arg("-f")
        .arg(&empty)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .expect("ssh-keygen -H");
    assert!(st.success());
    assert!(std::fs::read_to_string(&empty)
        .expect("read")
        .starts_with("|1|"));
    SshTransport::connect(cfg.clone()).expect("hashed entry accepted");

    // Changed host key: refused, even with accept-new.
    let impostor = sshd::keygen(d, "impostor_host", "");
    let changed = d.join("kh_changed");
    std::fs::write(
        &changed,
        format!("[127.0.0.1]:{} {}\n", s.port, sshd::pub_line(&impostor)),
    )
    .expect("write");
    cfg.known_hosts = Some(changed.clone());
    for policy in [HostKeyPolicy::Strict, HostKeyPolicy::AcceptNew] {
        cfg.host_key = policy;
        match SshTransport::connect(cfg.clone()) {
            Err(e @ CollectorError::HostKeyChanged { .. }) => {
                assert!(e.to_string().contains("does NOT match"), "{e}");
            }
            other => panic!(
                "{policy:?}: changed key must be refused, got {:?}",
                other.err()
            ),
        }
    }
    assert_eq!(
        std::fs::read_to_string(&changed).expect("read"),
        format!("[127.0.0.1]:{} {}\n", s.port, sshd::pub_line(&impostor)),
        "a refused key must not be written"
    );

    // insecure: explicit opt-in, no check.
    cfg.host_key = HostKeyPolicy::Insecure;
    SshTransport::connect(cfg).expect("insecure connects");
}

/// Every hostile value arrives as exactly one argument, byte for byte, and
/// nothing it contains is executed.
#[test]
fn hostile_values_are_quoted_over_ssh_and_through_a_prefix() {
    let s = sshd::Sshd::start();
    let work = s.dir.path().join("quoting");
    std::fs::create_dir_all(&work).expect("mkdir");
    let cd = format!("cd {} && ", sh_quote(&work.display().to_string()));
    // Where an injected `touch` would land when the command does not `cd` first.
    let canary = work.join("CANARY").display().to_string();

    let mut local: Box<dyn Transport> = Box::new(transport::LocalTransport::new(
        std::time::Duration::from_secs(10),
    ));
    let mut direct: Box<dyn Transport> =
        Box::new(SshTransport::connect(s.transport()).expect("connect"));
    // A prefix that must itself survive quoting (spaces, quotes, $) and shows it ran.
    let prefix = vec!["env".to_string(), "BRUNT_PREFIX=it's $HOME; x".to_string()];
    let mut prefixed = Prefixed::new(
        Box::new(SshTransport::connect(s.transport()).expect("connect")),
        prefix,
    );

    for v in HOSTILE {
        // As a definition placeholder value.
        let cmd = render("printf '%s\\0' {file}", &|k| {
            (k == "file").then(|| v.to_string())
        });
        for (name, t) in [("ssh", &mut direct), ("local", &mut local)] {
            let out = t
                .exec(&format!("{cd}{cmd}"))
                .expect("exec")
                .check("printf")
                .expect("status");
            assert_eq!(out.stdout, format!("{v}\0").into_bytes(), "{name}: {v:?}");
        }
        let out = prefixed
            .exec(&format!("{cd}{cmd}; printf '%s' \"$BRUNT_PREFIX\""))
            .expect("exec")
            .check("printf")
            .expect("status");
        assert_eq!(
            out.stdout,
            format!("{v}\0it's $HOME; x").into_bytes(),
            "prefixed: {v:?}"
        );
    }
    // Hostile pgrep patterns and jcmd paths (profile values) run nothing either.
    for v in HOSTILE {
        let target = brunt::profile::collectors::TargetConfig {
            pgrep: Some(v.replace("CANARY", &canary)),
            ..Default::default()
        };
        brunt::collectors::jvm::find_pid(direct.as_mut(), &target).expect("pgrep runs");
        let _ =
            brunt::collectors::jvm::java_major(direct.as_mut(), &v.replace("CANARY", &canary), 1);
    }
    let left: Vec<_> = std::fs::read_dir(&work)
        .expect("readdir")
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(
        left.is_empty(),
        "a hostile value was executed: created {left:?}"
    );
}

#[test]
fn sftp_download_of_a_multi_megabyte_file_then_remove() {
    let s = sshd::Sshd::start();
    let remote = s.dir.path().join("big.bin");
    // 8 MiB of non-repeating bytes.
    let mut data = Vec::with_capacity(8 << 20);
    let mut x: u32 = 0x1234_5678;
    while data.len() < (8 << 20) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        data.extend_from_slice(&x.to_le_bytes());
    }
    std::fs::write(&remote, &data).expect("write");
    let mut t = SshTransport::connect(s.transport()).expect("connect");
    let local = s.dir.path().join("copy.bin");
    let t0 = Instant::now();
    let n = t
        .download(&remote.display().to_string(), &local)
        .expect("download");
    let took = t0.elapsed();
    eprintln!("sftp: {} MiB in {:?}", n >> 20, took);
    assert_eq!(n, data.len() as u64);
    assert!(
        std::fs::read(&local).expect("read") == data,
        "downloaded bytes differ"
    );
    t.remove(&remote.display().to_string()).expect("remove");
    assert!(!remote.exists(), "remote file not removed");
    // Removing a missing file is not an error; downloading one is, without breaking the link.
    t.remove(&remote.display().to_string())
        .expect("remove missing");
    assert!(t.download(&remote.display().to_string(), &local).is_err());
    assert_eq!(t.exec("echo alive").expect("exec").stdout, b"alive\n");
}

#[test]
fn openssh_transport_runs_commands_and_downloads() {
    let s = sshd::Sshd::start();
    let mut cfg = s.transport();
    cfg.kind = TransportKind::Openssh;
    let mut t = transport::from_config(&cfg).expect("openssh transport");
    let v = "it's $(touch CANARY) `x`";
    let out = t
        .exec(&format!("printf '%s' {}", sh_quote(v)))
        .expect("exec")
        .check("printf")
        .expect("status");
    assert_eq!(out.stdout_str(), v);
    let f = s.dir.path().join("small.txt");
    std::fs::write(&f, "hello\n").expect("write");
    let local = s.dir.path().join("small.copy");
    assert_eq!(
        t.download(&f.display().to_string(), &local)
            .expect("download"),
        6
    );
    assert_eq!(std::fs::read(&local).expect("read"), b"hello\n");
    // Strict checking applies to the system ssh as well.
    let mut bad = s.transport();
    bad.kind = TransportKind::Openssh;
    let empty = s.dir.path().join("kh_none");
    std::fs::write(&empty, "").expect("write");
    bad.known_hosts = Some(empty);
    let mut t = transport::from_config(&bad).expect("transport");
    assert!(
        matches!(t.exec("true"), Err(CollectorError::UnknownHostKey { .. })),
        "unknown host accepted by openssh"
    );
}

/// A hung command is cut at `command_timeout`; the link is dropped and a
/// reconnect gives a working session again.
#[test]
fn hung_command_times_out_and_the_session_is_renewed() {
    let s = sshd::Sshd::start();
    let mut cfg = s.transport();
    cfg.command_timeout = std::time::Duration::from_secs(1);
    let mut t = SshTransport::connect(cfg).expect("connect");
    let t0 = Instant::now();
    let r = t.exec("sleep 20");
    assert!(
        t0.elapsed() < std::time::Duration::from_secs(5),
        "timeout not applied: {:?}",
        t0.elapsed()
    );
    assert!(
        matches!(r, Err(ref e) if e.is_link()),
        "expected a link error, got {r:?}"
    );
    assert!(!t.is_connected());
    t.reconnect().expect("reconnect");
    assert_eq!(t.exec("echo back").expect("exec").stdout, b"back\n");
}
