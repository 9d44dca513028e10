//! Bad input never panics: mutated and hostile profiles give an error with
//! a location, quickly.

use std::path::Path;
use std::time::{Duration, Instant};

use brunt::profile::{Profile, ProfileError};

fn shipped() -> Vec<(String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("profiles");
    let mut v: Vec<(String, String)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .map(|p| {
            (
                p.display().to_string(),
                std::fs::read_to_string(&p).unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn mutated_profiles_error_and_never_panic() {
    let mut rng = fastrand::Rng::with_seed(7);
    let mut errors = 0;
    let t = Instant::now();
    for (name, text) in shipped() {
        assert!(
            Profile::from_yaml(&text, Path::new(&name)).is_ok(),
            "{name} parses as shipped"
        );
        let bytes = text.as_bytes();
        for _ in 0..400 {
            let mut b = bytes.to_vec();
            match rng.u8(0..4) {
                0 => b.truncate(rng.usize(0..b.len())),
                1 => {
                    for _ in 0..rng.usize(1..6) {
                        let i = rng.usize(0..b.len());
                        b[i] = rng.u8(..);
                    }
                }
                2 => {
                    let i = rng.usize(0..b.len());
                    let j = (i + rng.usize(0..200)).min(b.len());
                    b.drain(i..j);
                }
                _ => {
                    let i = rng.usize(0..b.len());
                    let junk = [
                        ": ",
                        "{",
                        "]",
                        "- ",
                        "\t",
                        "&a *a",
                        "!!binary",
                        "0x",
                        "999999999999999999999",
                    ][rng.usize(0..9)];
                    b.splice(i..i, junk.bytes());
                }
            }
            let s = String::from_utf8_lossy(&b);
            let r = std::panic::catch_unwind(|| Profile::from_yaml(&s, Path::new("mutant.yaml")));
            match r {
                Err(_) => panic!("panicked on a mutant of {name}:\n{s}"),
                Ok(Err(ProfileError::Syntax { line, .. })) => {
                    assert!(line > 0 || s.trim().is_empty(), "a syntax error has a line");
                    errors += 1;
                }
                Ok(Err(_)) => errors += 1,
                Ok(Ok(_)) => {}
            }
        }
    }
    assert!(errors > 1000, "most mutants are rejected ({errors})");
    assert!(t.elapsed() < Duration::from_secs(60));
}

#[test]
fn yaml_bombs_are_refused_quickly() {
    let mut bomb = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..12 {
        let p = i - 1;
        bomb.push_str(&format!(
            "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
        ));
    }
    bomb.push_str("name: *a11\n");
    let t = Instant::now();
    let r = Profile::from_yaml(&bomb, Path::new("bomb.yaml"));
    assert!(r.is_err());
    assert!(
        t.elapsed() < Duration::from_secs(2),
        "took {:?}",
        t.elapsed()
    );
    let deep = "a: ".to_string() + &"[".repeat(100_000);
    let t = Instant::now();
    assert!(Profile::from_yaml(&deep, Path::new("deep.yaml")).is_err());
    assert!(t.elapsed() < Duration::from_secs(2));
}
