//! A throwaway PostgreSQL cluster on 127.0.0.1 for one test: `initdb`
//! (scram-sha-256, a password for `postgres`, an `app` role for services)
//! and `pg_ctl start` as the `postgres` user (initdb refuses root), with
//! `pg_stat_statements` loaded, a table `orders` with one hot row, and
//! `stop`/`start` to make it go away mid-run. Dropped = stopped and removed.
//!
//! Needs Debian's `postgresql` (tests/setup.sh installs it): a missing
//! binary is an error saying so, never a skip.

#![allow(dead_code)]

use std::io::Write;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// The superuser's password (also the `app` role's).
pub const PASSWORD: &str = "brunt-pg-secret-7d1e";

pub struct Postgres {
    pub port: u16,
    pub dir: PathBuf,
    bin: PathBuf,
    _tmp: tempfile::TempDir,
    held: Vec<Child>,
}

fn bin_dir() -> PathBuf {
    let base = Path::new("/usr/lib/postgresql");
    let mut versions: Vec<PathBuf> = std::fs::read_dir(base)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.path().join("bin"))
                .collect()
        })
        .unwrap_or_default();
    versions.retain(|p| p.join("initdb").exists());
    versions.sort();
    versions.pop().unwrap_or_else(|| {
        panic!(
            "PostgreSQL server binaries not found under /usr/lib/postgresql/*/bin: \
             install them with `apt-get install -y postgresql` (tests/setup.sh does)"
        )
    })
}

fn as_postgres(bin: &Path, tool: &str) -> Command {
    let mut c = Command::new("runuser");
    c.args(["-u", "postgres", "--"]).arg(bin.join(tool));
    c
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("no free loopback port")
}

impl Postgres {
    /// A cluster with `max_connections`, started and seeded.
    pub fn start(max_connections: u32) -> Postgres {
        let bin = bin_dir();
        assert!(
            Command::new("psql").arg("--version").output().is_ok(),
            "psql not found: install it with `apt-get install -y postgresql-client`"
        );
        let tmp = tempfile::Builder::new()
            .prefix("brunt-pg-")
            .tempdir_in("/tmp")
            .expect("tempdir");
        let dir = tmp.path().to_path_buf();
        let pw = dir.join("pwfile");
        std::fs::write(&pw, format!("{PASSWORD}\n")).expect("pwfile");
        let st = Command::new("chown")
            .args(["-R", "postgres:postgres"])
            .arg(&dir)
            .status()
            .expect("chown");
        assert!(st.success(), "chown the cluster directory to postgres");
        let out = as_postgres(&bin, "initdb")
            .args(["-D"])
            .arg(dir.join("data"))
            .args(["-U", "postgres", "--auth=scram-sha-256", "--pwfile"])
            .arg(&pw)
            .output()
            .expect("initdb");
        assert!(
            out.status.success(),
            "initdb failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let conf = dir.join("data/postgresql.conf");
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&conf)
            .expect("postgresql.conf");
        writeln!(
            f,
            "shared_preload_libraries = 'pg_stat_statements'\nmax_connections = {max_connections}\nsuperuser_reserved_connections = 3\nfsync = off\nsynchronous_commit = off"
        )
        .expect("conf");
        let mut pg = Postgres {
            port: free_port(),
            dir,
            bin,
            _tmp: tmp,
            held: Vec::new(),
        };
        pg.up();
        pg.sql(
            "CREATE EXTENSION pg_stat_statements; \
             CREATE ROLE app LOGIN PASSWORD 'brunt-pg-secret-7d1e'; \
             CREATE TABLE orders (id int PRIMARY KEY, n int NOT NULL); \
             INSERT INTO orders VALUES (1, 0); GRANT SELECT, UPDATE ON orders TO app;",
        );
        pg
    }

    /// Start (again) on the same port.
    pub fn up(&mut self) {
        let out = as_postgres(&self.bin, "pg_ctl")
            .arg("-D")
            .arg(self.dir.join("data"))
            .arg("-l")
            .arg(self.dir.join("log"))
            .args(["-w", "-t", "30", "-o"])
            .arg(format!(
                "-p {} -k {} -c listen_addresses='127.0.0.1'",
                self.port,
                self.dir.display()
            ))
            .arg("start")
            .output()
            .expect("pg_ctl start");
        assert!(
            out.status.success(),
            "pg_ctl start failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            std::fs::read_to_string(self.dir.join("log")).unwrap_or_default()
        );
    }

    /// Stop now (sessions cut off): the database goes away.
    pub fn down(&mut self) {
        for mut c in self.held.drain(..) {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = as_postgres(&self.bin, "pg_ctl")
            .arg("-D")
            .arg(self.dir.join("data"))
            .args(["-m", "immediate", "-w", "stop"])
            .output();
    }

    /// `psql` as `user` with the password in its environment (tests only).
    pub fn psql(&self, user: &str) -> Command {
        let mut c = Command::new("psql");
        c.args([
            "-X",
            "-q",
            "-A",
            "-t",
            "-v",
            "ON_ERROR_STOP=1",
            "-h",
            "127.0.0.1",
        ])
        .args(["-p", &self.port.to_string(), "-U", user, "-d", "postgres"])
        .env("PGPASSWORD", PASSWORD);
        c
    }

    /// Run SQL as the superuser; its output.
    pub fn sql(&self, sql: &str) -> String {
        let out = self
            .psql("postgres")
            .args(["-c", sql])
            .output()
            .expect("psql");
        assert!(
            out.status.success(),
            "psql `{sql}`: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// A session as `user` that runs `sql` and then stays open (its
    /// standard input held), e.g. idle in a transaction; killed on drop.
    /// Returns its backend pid.
    pub fn hold(&mut self, user: &str, app: &str, sql: &str) -> u32 {
        let mut c = self.psql(user);
        c.env("PGAPPNAME", app)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = c.spawn().expect("psql session");
        let mut stdin = child.stdin.take().expect("stdin");
        writeln!(stdin, "SELECT pg_backend_pid();\n{sql}").expect("write sql");
        stdin.flush().expect("flush");
        // Kept open: the session lives until killed.
        std::mem::forget(stdin);
        // Its first output line is its pid (asking the server instead would
        // take a connection slot of its own).
        let out = child.stdout.take().expect("stdout");
        self.held.push(child);
        let mut line = String::new();
        let mut r = std::io::BufReader::new(out);
        let _ = std::io::BufRead::read_line(&mut r, &mut line);
        // Kept open too: psql dies of SIGPIPE writing to a closed pipe.
        std::mem::forget(r);
        line.trim()
            .parse()
            .unwrap_or_else(|_| panic!("session {app} did not start (got `{}`)", line.trim()))
    }

    /// The `collectors.database` section for this cluster, its password
    /// in the environment variable `var`.
    pub fn database(&self, var: &str) -> brunt::profile::collectors::DatabaseConfig {
        brunt::profile::collectors::DatabaseConfig {
            host: "127.0.0.1".into(),
            port: self.port,
            user: "postgres".into(),
            dbname: "postgres".into(),
            password_env: Some(var.into()),
            psql: "psql".into(),
        }
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        self.down();
    }
}

/// No file under `dir` holds the password.
pub fn assert_no_password(dir: &Path) {
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).expect("read_dir").flatten() {
            let p = e.path();
            if p.is_dir() {
                todo.push(p);
            } else {
                let bytes = std::fs::read(&p).unwrap_or_default();
                assert!(
                    !bytes
                        .windows(PASSWORD.len())
                        .any(|w| w == PASSWORD.as_bytes()),
                    "the database password was written to {}",
                    p.display()
                );
            }
        }
    }
}
