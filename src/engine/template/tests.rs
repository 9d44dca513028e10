//! The template compiler's and renderer's unit tests.
use super::*;

#[test]
fn uuid_is_version_4() {
    let mut out = Vec::new();
    push_uuid(&mut out, &mut fastrand::Rng::with_seed(3));
    let s = String::from_utf8(out).expect("ascii");
    assert_eq!(s.len(), 36);
    assert_eq!(&s[14..15], "4");
    assert!(matches!(&s[19..20], "8" | "9" | "a" | "b"), "{s}");
}

#[test]
fn env_folds_into_literal_text_and_values_are_encoded_in_paths() {
    let inputs = Inputs {
        env: [("T".to_string(), "a b/c".to_string())].into(),
        base_dir: None,
    };
    let c = compile(
        "/x/{{ env.T }}",
        "p",
        Escape::Percent,
        &inputs,
        &[],
        Names::default(),
    )
    .expect("compiles");
    assert_eq!(c.literal().as_deref(), Some(&b"/x/a%20b%2Fc"[..]));
    let c = compile(
        "Bearer {{ env.T }}",
        "h",
        Escape::Raw,
        &inputs,
        &[],
        Names::default(),
    )
    .expect("compiles");
    assert_eq!(c.literal().as_deref(), Some(&b"Bearer a b/c"[..]));
    let e = compile(
        "{{ env.BRUNT_SURELY_UNSET_VAR }}",
        "h",
        Escape::Raw,
        &inputs,
        &[],
        Names::default(),
    )
    .expect_err("missing");
    assert!(e.to_string().contains("BRUNT_SURELY_UNSET_VAR"));
}

#[test]
fn values_filled_into_json_strings_are_escaped() {
    let vars = ["x".to_string()];
    let c = compile(
        "id-{{ vars.x }}",
        "m",
        Escape::Json,
        &Inputs::default(),
        &[],
        Names {
            vars: &vars,
            setup: &[],
        },
    )
    .expect("compiles");
    let mut out = Vec::new();
    let v = [Some(Bytes::from_static(b"a\"b\\c\n"))];
    let ctx = Ctx {
        vars: &v,
        ..Ctx::default()
    };
    c.render(&mut WorkerState::detached(), &[], &[], &ctx, &mut out);
    assert_eq!(out, b"id-a\\\"b\\\\c\\n");
}

#[test]
fn seq_interleaves_across_workers_and_shards() {
    let inputs = Inputs::default();
    let c = compile(
        "{{ seq }}",
        "p",
        Escape::Raw,
        &inputs,
        &[],
        Names::default(),
    )
    .expect("compiles");
    let mut seen = Vec::new();
    for shard in 0..2u64 {
        for worker in 0..3u64 {
            let mut w = WorkerState {
                stride: 6,
                offset: shard * 3 + worker,
                ..WorkerState::detached()
            };
            for _ in 0..5 {
                let mut out = Vec::new();
                c.render(&mut w, &[], &[], &Ctx::default(), &mut out);
                seen.push(
                    String::from_utf8(out)
                        .expect("ascii")
                        .parse::<u64>()
                        .expect("int"),
                );
            }
        }
    }
    seen.sort_unstable();
    assert_eq!(seen, (0..30).collect::<Vec<u64>>());
}
