//! JVM helpers: finding the target PID (fixed, `pgrep -f` pattern, or a
//! `jcmd -l` match), reading the JVM's major version, and the `gc-heap-info`
//! parser for `jcmd PID GC.heap_info` (G1, Parallel, Serial, ZGC, Shenandoah).

use std::sync::OnceLock;

use regex::Regex;

use super::error::CollectorError;
use super::quote::sh_quote;
use super::transport::{Transport, HELPER_ENV};
use crate::profile::collectors::TargetConfig;
use crate::vocab::samples::{HeapInfoSample, HeapSpace};

/// Processes that match a `pgrep -f` pattern only because the pattern is on
/// their command line (the shell running our command, ssh, sudo), and the JDK
/// tools brunt's own probes start (a `jcmd` path may contain `java`).
const NOT_TARGETS: &[&str] = &[
    "sh", "bash", "dash", "zsh", "ash", "ksh", "mksh", "ssh", "sshd", "sudo", "timeout", "pgrep",
    "jcmd", "jstack", "jfr", "jps", "jinfo", "jmap",
];

/// A word in the find-PID command itself: every shell and subshell running it
/// (this lane's and the other lane's) has it on its command line.
const FIND_MARK: &str = "brunt-find-pid";

/// Find the target PID the config describes; Ok(None) when no process matches.
pub fn find_pid(t: &mut dyn Transport, cfg: &TargetConfig) -> Result<Option<u32>, CollectorError> {
    if let Some(p) = cfg.pid {
        return Ok(Some(p));
    }
    if let Some(pat) = &cfg.pgrep {
        let cmd = pgrep_command(pat);
        let out = t.exec(&cmd)?.check(&cmd)?;
        return Ok(pick_pgrep(&out.stdout_str(), t.own_pid()));
    }
    if let Some(re) = &cfg.jcmd_match {
        let re = Regex::new(re)
            .map_err(|e| CollectorError::Config(format!("target.jcmd_match: {e}")))?;
        let cmd = format!("{} -l", sh_quote(&cfg.jcmd));
        let out = t.exec(&cmd)?.check(&cmd)?;
        return Ok(pick_jcmd(&out.stdout_str(), &re));
    }
    Ok(None)
}

/// `pgrep -f PATTERN`, less what only matches because of brunt itself: the
/// shell running this command (`$$`) and its subshells, the other lane's
/// find-PID shells (both carry [`FIND_MARK`]), brunt's helpers and their
/// children ([`HELPER_ENV`] in their environment; readable for our own user,
/// which is what they run as), and processes gone before they could be read
/// (a helper that ended between `pgrep` and here: no `comm`, no command line).
/// Prints `PID COMM` per candidate.
fn pgrep_command(pat: &str) -> String {
    format!(
        ": {FIND_MARK}; for p in $(pgrep -f -- {pat}); do \
         [ \"$p\" = \"$$\" ] && continue; \
         c=$(cat /proc/$p/comm 2>/dev/null) || continue; \
         case \"$(tr '\\0' ' ' < /proc/$p/cmdline 2>/dev/null)\" in ''|*{FIND_MARK}*) continue;; esac; \
         tr '\\0' '\\n' < /proc/$p/environ 2>/dev/null | grep -q '^{HELPER_ENV}=' && continue; \
         echo \"$p $c\"; done; true",
        pat = sh_quote(pat)
    )
}

/// The first candidate that is not a shell, a JDK tool or brunt itself.
fn pick_pgrep(out: &str, own_pid: Option<u32>) -> Option<u32> {
    out.lines().find_map(|l| {
        let mut it = l.split_whitespace();
        let pid = it.next()?.parse::<u32>().ok()?;
        let comm = it.next().unwrap_or("");
        (!NOT_TARGETS.contains(&comm) && Some(pid) != own_pid).then_some(pid)
    })
}

fn pick_jcmd(out: &str, re: &Regex) -> Option<u32> {
    out.lines().find_map(|l| {
        let (pid, rest) = l.trim().split_once(' ')?;
        if rest.contains("sun.tools.jcmd.JCmd") || rest.starts_with("jdk.jcmd/") {
            return None;
        }
        let pid = pid.parse::<u32>().ok()?;
        re.is_match(rest).then_some(pid)
    })
}

/// Is process `pid` still there? (`/proc/PID` exists: any user's process, no
/// attach.) A zombie is gone: killed, it stays in `/proc` until its parent
/// reaps it, but it answers no jcmd and its recording is lost.
pub fn alive(t: &mut dyn Transport, pid: u32) -> Result<bool, CollectorError> {
    let cmd = format!(
        "if [ -d /proc/{pid} ] && ! grep -qs '^State:[[:space:]]*[ZX]' /proc/{pid}/status; then echo alive; else echo gone; fi"
    );
    let out = t.exec(&cmd)?.check(&cmd)?;
    Ok(out.stdout_str().trim() == "alive")
}

/// Major version of the JVM at `pid` (`jcmd PID VM.version`).
pub fn java_major(
    t: &mut dyn Transport,
    jcmd: &str,
    pid: u32,
) -> Result<Option<u32>, CollectorError> {
    let cmd = format!("{} {} VM.version", sh_quote(jcmd), pid);
    let out = t.exec(&cmd)?.check(&cmd)?;
    Ok(parse_major(&out.stdout_str()))
}

fn parse_major(s: &str) -> Option<u32> {
    static RE: OnceLock<Option<Regex>> = OnceLock::new();
    let re = RE
        .get_or_init(|| Regex::new(r"(?m)^JDK (\d+)|version (\d+)[.+\-\s]").ok())
        .as_ref()?;
    let c = re.captures(s)?;
    c.get(1).or_else(|| c.get(2))?.as_str().parse().ok()
}

fn to_kb(n: &str, unit: &str) -> Option<u64> {
    let n: u64 = n.parse().ok()?;
    Some(match unit {
        "K" => n,
        "M" => n * 1024,
        "G" => n * 1024 * 1024,
        _ => n / 1024,
    })
}

/// Parse `GC.heap_info` into heap used/committed (kB), metaspace, and per-space figures.
pub fn parse_heap_info(text: &str) -> Result<HeapInfoSample, CollectorError> {
    static RES: OnceLock<Option<[Regex; 4]>> = OnceLock::new();
    let res = RES
        .get_or_init(|| {
            Some([
                // G1 / Parallel / Serial: ` garbage-first heap   total 129024K, used 10240K [...`
                Regex::new(r"^\s*([A-Za-z][\w \-]*?)\s+total (\d+)([KMG]), used (\d+)([KMG])")
                    .ok()?,
                Regex::new(r"^\s*Metaspace\s+used (\d+)([KMG]), committed (\d+)([KMG])").ok()?,
                // ZGC: ` ZHeap           used 10M, capacity 64M, max capacity 1024M`
                Regex::new(r"^\s*ZHeap\s+used (\d+)([KMG]), capacity (\d+)([KMG])").ok()?,
                // Shenandoah: ` 1024M max, 1024M soft max, 256M committed, 30M used`
                Regex::new(r"(\d+)([KMG]) committed, (\d+)([KMG]) used").ok()?,
            ])
        })
        .as_ref()
        .ok_or_else(|| CollectorError::Other("heap regexes".into()))?;
    let mut used = 0u64;
    let mut committed = 0u64;
    let mut found = false;
    let mut m = HeapInfoSample::default();
    for line in text.lines() {
        if let Some(c) = res[0].captures(line) {
            let (Some(t), Some(u)) = (to_kb(&c[2], &c[3]), to_kb(&c[4], &c[5])) else {
                continue;
            };
            m.spaces.insert(
                c[1].trim().to_string(),
                HeapSpace {
                    total_kb: t,
                    used_kb: u,
                },
            );
            committed += t;
            used += u;
            found = true;
        } else if let Some(c) = res[1].captures(line) {
            m.metaspace_used_kb = to_kb(&c[1], &c[2]);
            m.metaspace_committed_kb = to_kb(&c[3], &c[4]);
        } else if let Some(c) = res[2].captures(line) {
            used += to_kb(&c[1], &c[2]).unwrap_or(0);
            committed += to_kb(&c[3], &c[4]).unwrap_or(0);
            found = true;
        } else if let Some(c) = res[3].captures(line) {
            committed += to_kb(&c[1], &c[2]).unwrap_or(0);
            used += to_kb(&c[3], &c[4]).unwrap_or(0);
            found = true;
        }
    }
    if !found {
        let mut head: String = text.chars().take(200).collect();
        head = head.replace('\n', " | ");
        return Err(CollectorError::Parse {
            parser: "gc-heap-info".into(),
            msg: format!("no heap figures in `{head}`"),
        });
    }
    m.heap_used_kb = Some(used);
    m.heap_committed_kb = Some(committed);
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn g1_heap_info() {
        let t = "4242:\n garbage-first heap   total 129024K, used 10240K [0x00000000f8000000, 0x0000000100000000)\n  region size 1024K, 11 young (11264K), 0 survivors (0K)\n Metaspace       used 6500K, committed 6720K, reserved 1114112K\n  class space    used 600K, committed 704K, reserved 1048576K\n";
        let m = parse_heap_info(t).unwrap();
        assert_eq!(m.heap_used_kb, Some(10240));
        assert_eq!(m.heap_committed_kb, Some(129024));
        assert_eq!(m.metaspace_used_kb, Some(6500));
    }

    #[test]
    fn parallel_and_zgc_heap_info() {
        let p = " PSYoungGen      total 76288K, used 3932K [0x1, 0x2)\n  eden space 65536K, 6% used [0x1)\n ParOldGen       total 175104K, used 100K [0x3)\n";
        let m = parse_heap_info(p).unwrap();
        assert_eq!(m.heap_used_kb, Some(4032));
        let z = " ZHeap           used 10M, capacity 64M, max capacity 1024M\n";
        assert_eq!(parse_heap_info(z).unwrap().heap_used_kb, Some(10240));
        assert!(parse_heap_info("Could not attach").is_err());
    }

    #[test]
    fn versions_and_pid_picking() {
        assert_eq!(
            parse_major("4242:\nOpenJDK 64-Bit Server VM version 21.0.8+9-LTS\nJDK 21.0.8\n"),
            Some(21)
        );
        assert_eq!(
            parse_major("1:\nOpenJDK 64-Bit Server VM version 17.0.16+8-Debian-1deb12u1\n"),
            Some(17)
        );
        assert_eq!(pick_pgrep("900 bash\n901 java\n", None), Some(901));
        assert_eq!(pick_pgrep("900 jcmd\n901 java\n", Some(901)), None);
        assert_eq!(pick_pgrep("", None), None);
        let re = Regex::new("JavaTarget").unwrap();
        assert_eq!(
            pick_jcmd(
                "77 sun.tools.jcmd.JCmd -l JavaTarget\n88 JavaTarget 8080\n",
                &re
            ),
            Some(88)
        );
    }
}
