//! The checks serde cannot express: cross-field rules, value ranges,
//! budgets and levels placed in the text, and every `{{ }}` template parsed.

use std::path::Path;

use super::locate::{locate, locate_in_section, locate_key, t_fragment, Place};
use super::{template, Model, Profile, ProfileError, RequestSpec};

impl Profile {
    /// [`Profile::validate`], then the checks whose error points at a place
    /// in the text: budgets and levels that send nothing, with line and column.
    pub(super) fn validate_at(&self, text: &str) -> Result<(), (String, Option<(usize, usize)>)> {
        self.validate()
            .map_err(|(m, place)| (m, place.and_then(|p| p.find(text))))?;
        if let Some(z) = self.shape.silent_level(self.load.model) {
            let at = locate_key(text, "shape", z.keys, z.nth);
            return Err((z.message, at));
        }
        let plan = self.shape.compile(self.load.model, 1.0);
        let names = self.budget_names();
        for b in &self.budgets {
            let at = || locate_in_section(text, "budgets", b.expr());
            let mut parsed = b
                .parse()
                .map_err(|e| (format!("budget `{}`: {e}", b.expr()), at()))?;
            parsed
                .resolve(&names)
                .map_err(|e| (format!("budget `{}`: {e}", b.expr()), at()))?;
            if let Some(p) = &parsed.phase {
                if !plan.phases.iter().any(|ph| &ph.info.name == p) {
                    let names: Vec<&str> =
                        plan.phases.iter().map(|ph| ph.info.name.as_str()).collect();
                    return Err((
                        format!(
                            "budget `{}`: no phase named `{p}`; this shape's phases are {}",
                            b.expr(),
                            names.join(", ")
                        ),
                        at(),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Every templated field of the profile, as (key, text): `requests[0].path`, …
    pub fn template_fields(&self) -> Vec<(String, &str)> {
        let mut out: Vec<(String, &str)> = Vec::new();
        for (k, v) in &self.target.headers {
            out.push((format!("target.headers.{k}"), v.as_str()));
        }
        for (key, _, r) in self.all_requests() {
            out.push((format!("{key}.path"), r.path.as_str()));
            for (k, v) in &r.headers {
                out.push((format!("{key}.headers.{k}"), v.as_str()));
            }
            if let Some(b) = &r.body {
                out.push((format!("{key}.body"), b.as_str()));
            }
            if let Some(ws) = &r.ws {
                super::ws::template_fields(&key, ws, &mut out);
            }
            if let Some(g) = &r.grpc {
                g.template_fields(&format!("{key}.grpc"), &mut out);
            }
        }
        for (key, r) in self.once_steps() {
            out.push((format!("{key}.path"), r.path.as_str()));
            for (k, v) in &r.headers {
                out.push((format!("{key}.headers.{k}"), v.as_str()));
            }
            if let Some(b) = &r.body {
                out.push((format!("{key}.body"), b.as_str()));
            }
        }
        out
    }

    /// What is allowed but almost surely not meant, for the caller to warn
    /// about: `${…}` (k6's and the shell's syntax) is sent as written.
    pub fn lint(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (key, value) in self.template_fields() {
            let Some(at) = value.find("${") else {
                continue;
            };
            let inner = value[at + 2..].split('}').next().unwrap_or("");
            let name = inner.strip_prefix("__ENV.").unwrap_or(inner);
            out.push(format!(
                "`{key}`: `${{{inner}}}` is sent as written; brunt's templates read `{{{{ env.{name} }}}}`"
            ));
        }
        out
    }

    /// Whether `var` is extracted by a step before the one `field` belongs to
    /// (`scenarios[S].steps[J]…`).
    fn var_known(&self, field: &str, var: &str) -> bool {
        let num = |s: &str| -> Option<(usize, String)> {
            let (n, r) = s.split_once(']')?;
            Some((n.parse().ok()?, r.to_string()))
        };
        // `setup:` and `teardown:` steps read what their own earlier steps took.
        for (sect, steps) in [("setup[", &self.setup), ("teardown[", &self.teardown)] {
            if let Some((j, _)) = field.strip_prefix(sect).and_then(num) {
                return steps.iter().take(j).any(|st| st.extract.contains_key(var));
            }
        }
        let Some(rest) = field.strip_prefix("scenarios[") else {
            return false;
        };
        let Some((s, rest)) = num(rest) else {
            return false;
        };
        let Some((j, rest)) = rest.strip_prefix(".steps[").and_then(num) else {
            return false;
        };
        // A WebSocket message's text: the earlier messages of its step too.
        let message = rest
            .strip_prefix(".ws.messages[")
            .and_then(num)
            .map(|(m, _)| m);
        self.scenarios.get(s).is_some_and(|sc| {
            let flat = sc.flat_steps();
            let earlier = flat.iter().take(j).any(|st| {
                st.extract.contains_key(var)
                    || st
                        .ws
                        .as_ref()
                        .is_some_and(|ws| super::ws::extracted(ws).any(|(_, k)| k == var))
            });
            let this_step = flat.get(j).and_then(|st| st.ws.as_ref());
            earlier
                || message.zip(this_step).is_some_and(|(m, ws)| {
                    super::ws::extracted(ws).any(|(at, k)| at < ws.send.len() + m && k == var)
                })
        })
    }

    /// Why `{{ setup.NAME }}` cannot be read in `field`, if it cannot: no
    /// `setup:` step extracts it, or it stands in a setup step itself.
    fn setup_unknown(&self, field: &str, name: &str) -> Option<String> {
        if field.starts_with("setup[") {
            return Some(format!(
                "`setup.{name}` is not known yet inside `setup:`; an earlier setup step's value is `vars.{name}`"
            ));
        }
        if self.setup.iter().any(|st| st.extract.contains_key(name)) {
            return None;
        }
        Some(if self.setup.is_empty() {
            format!("`setup.{name}`: the profile has no `setup:` steps to extract it")
        } else {
            format!("`setup.{name}`: no `setup:` step extracts it")
        })
    }

    /// Parse every `{{ }}` of the profile; an error names its file, line and
    /// column (found in `text`, the profile as written) and the field.
    pub(super) fn check_templates(&self, text: &str, path: &Path) -> Result<(), ProfileError> {
        for (name, _) in self.feeders.iter() {
            if !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
                || name.is_empty()
            {
                let message =
                    format!("feeders.{name}: a feeder name is letters, digits, `_` and `-`");
                return Err(match locate_in_section(text, "feeders", name) {
                    Some((line, column)) => ProfileError::Syntax {
                        path: path.to_path_buf(),
                        line: line as u64,
                        column: column as u64,
                        snippet: super::locate::snippet(text, line, column),
                        message,
                    },
                    None => ProfileError::Invalid {
                        path: path.to_path_buf(),
                        message,
                    },
                });
            }
        }
        for (key, value) in self.template_fields() {
            if !template::Template::has_template(value) {
                continue;
            }
            let fail = |fragment: &str, message: String| {
                let message = format!("{message} (in `{key}`)");
                match locate(text, fragment).or_else(|| locate(text, "{{")) {
                    Some((line, column)) => ProfileError::Syntax {
                        path: path.to_path_buf(),
                        line,
                        column,
                        snippet: text
                            .lines()
                            .nth(line as usize - 1)
                            .map(|l| format!("  {line} | {l}"))
                            .unwrap_or_default(),
                        message,
                    },
                    None => ProfileError::Invalid {
                        path: path.to_path_buf(),
                        message,
                    },
                }
            };
            let t = template::Template::parse(value).map_err(|e| fail(&e.fragment, e.message))?;
            for e in t.exprs() {
                if let template::Expr::Var(var) = e {
                    if !self.var_known(&key, var) {
                        let frag = t_fragment(value, &format!("vars.{var}"));
                        return Err(fail(
                            &frag,
                            format!(
                                "`vars.{var}` is not extracted by an earlier step of this scenario"
                            ),
                        ));
                    }
                }
                if let template::Expr::Setup(name) = e {
                    if let Some(m) = self.setup_unknown(&key, name) {
                        let frag = t_fragment(value, &format!("setup.{name}"));
                        return Err(fail(&frag, m));
                    }
                }
                if let template::Expr::Feeder { feeder, .. } = e {
                    if !self.feeders.contains_key(feeder) {
                        let frag = t_fragment(value, &format!("feeder.{feeder}."));
                        return Err(fail(
                            &frag,
                            format!("no feeder named `{feeder}` under `feeders:`"),
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// Checks serde cannot express: cross-field rules and value ranges. An
    /// error says where its cause stands ([`Place`]) when the text can tell.
    pub(super) fn validate(&self) -> Result<(), (String, Option<Place>)> {
        let key = |sect: &'static str, keys: &'static [&'static str], nth: usize| {
            Some(Place::Key(sect, keys, nth))
        };
        if self.name.trim().is_empty() {
            return Err(("`name` must not be empty".into(), key("name", &["name"], 0)));
        }
        if self.requests.is_empty() && self.scenarios.is_empty() {
            return Err((
                "`requests` needs at least one request (or give `scenarios`)".into(),
                key("requests", &["requests"], 0),
            ));
        }
        let url = self.target.url.trim();
        if url != "builtin" {
            target_url(url).map_err(|e| {
                (
                    format!("target.url `{url}`: {e}"),
                    key("target", &["url"], 0),
                )
            })?;
        }
        if self.target.builtin.is_some() && url != "builtin" {
            return Err((
                "target.builtin is only read with `url: builtin`".into(),
                key("target", &["builtin"], 0),
            ));
        }
        if self.target.grpc.is_none() {
            if let Some((key, _, _)) = self
                .all_requests()
                .iter()
                .find(|(_, _, r)| r.grpc.is_some())
            {
                return Err((
                    format!("{key}: a `grpc:` call needs `target.grpc.protos` (the .proto files its method comes from)"),
                    Some(Place::Text(if key.starts_with("requests") { "requests" } else { "scenarios" }, "grpc".into())),
                ));
            }
        }
        for (i, r) in self.requests.iter().enumerate() {
            let which = r.name.clone().unwrap_or_else(|| format!("#{}", i + 1));
            check_request(&format!("request {which}"), r, "requests")?;
            check_ws(&format!("request {which}"), r, "requests", false)?;
            // Keys of scenario steps only: the error points at this
            // request's own occurrence of the key.
            let steps_only =
                |keys: &'static [&'static str], why: &str, set: fn(&RequestSpec) -> bool| {
                    if set(r) {
                        let before = self.requests[..i].iter().filter(|r| set(r)).count();
                        return Err((
                            format!("request {which}: {why}"),
                            key("requests", keys, before),
                        ));
                    }
                    Ok(())
                };
            steps_only(
                &["extract"],
                "`extract` works in scenario steps only",
                |r| !r.extract.is_empty(),
            )?;
            steps_only(
                &["think_time"],
                "`think_time` works in scenario steps only (the pause before the next step)",
                |r| r.think_time.is_some(),
            )?;
            steps_only(
                &["optional"],
                "`optional` works in scenario steps only",
                |r| r.optional,
            )?;
            steps_only(&["repeat"], "`repeat` works in scenario steps only", |r| {
                r.repeat.is_some()
            })?;
            steps_only(
                &["steps"],
                "a block of `steps` works in scenarios only",
                |r| r.is_block(),
            )?;
            steps_only(
                &["refresh"],
                "`refresh` works in scenario steps only",
                |r| r.refresh.is_some(),
            )?;
        }
        self.check_repeats()?;
        let mut think_times = 0;
        for (s, sc) in self.scenarios.iter().enumerate() {
            if sc.steps.is_empty() {
                return Err((
                    format!("scenario `{}`: `steps` needs at least one step", sc.name),
                    key("scenarios", &["steps"], s),
                ));
            }
            if !(sc.weight.is_finite() && sc.weight > 0.0) {
                return Err((
                    format!("scenario `{}`: weight must be above 0", sc.name),
                    Some(Place::Text("scenarios", sc.name.clone())),
                ));
            }
            let flat = sc.flat_steps();
            // The last step's think time is the pause between repetitions of its loop.
            let looped = sc
                .loops()
                .last()
                .is_some_and(|l| l.first + l.len == flat.len());
            for (j, r) in flat.iter().enumerate() {
                let which = r.name.clone().unwrap_or_else(|| format!("#{}", j + 1));
                let what = format!("scenario `{}` step {which}", sc.name);
                check_request(&what, r, "scenarios")?;
                check_ws(&what, r, "scenarios", true)?;
                if j + 1 == flat.len() && r.think_time.is_some() && !looped {
                    return Err((
                        format!(
                            "{what}: `think_time` is the pause before the next step, and the last step has none{}",
                            if self.load.model == Model::Closed {
                                " (load.think_time pauses between a virtual user's iterations)"
                            } else {
                                ""
                            }
                        ),
                        key("scenarios", &["think_time"], think_times),
                    ));
                }
                think_times += usize::from(r.think_time.is_some());
                for (var, x) in &r.extract {
                    check_extract(&what, var, x)
                        .map_err(|m| (m, Some(Place::Text("scenarios", format!("{var}:")))))?;
                }
            }
        }
        for (sect, steps) in [("setup", &self.setup), ("teardown", &self.teardown)] {
            check_once(sect, steps)?;
        }
        for pool in &self.diagnosis.pools {
            regex::Regex::new(&pool.frame).map_err(|e| {
                (
                    format!("diagnosis.pools `{}`: frame: {e}", pool.name),
                    Some(Place::Text("diagnosis", pool.frame.clone())),
                )
            })?;
        }
        let load = |keys: &'static [&'static str], message: &str| {
            Err((message.to_string(), key("load", keys, 0)))
        };
        if self.load.streams_per_connection == 0 {
            return load(
                &["streams_per_connection"],
                "load.streams_per_connection must be at least 1",
            );
        }
        if self.load.max_in_flight == 0 {
            return load(&["max_in_flight"], "load.max_in_flight must be at least 1");
        }
        if self.load.connections == 0 {
            return load(&["connections"], "load.connections must be at least 1");
        }
        if self.load.workers == Some(0) {
            return load(&["workers"], "load.workers must be at least 1");
        }
        if self.load.model == Model::Open && self.load.think_time.is_some() {
            return load(
                &["think_time"],
                "load.think_time applies to the closed model only",
            );
        }
        self.shape
            .validate(self.load.model)
            .map_err(|(m, keys)| (m, Some(Place::Key("shape", keys, 0))))?;
        Ok(())
    }
}

/// The `setup:` or `teardown:` steps (`sect`): each as a scenario step,
/// the last with no `think_time`.
fn check_once(sect: &'static str, steps: &[RequestSpec]) -> Result<(), (String, Option<Place>)> {
    for (j, r) in steps.iter().enumerate() {
        let which = r.name.clone().unwrap_or_else(|| format!("#{}", j + 1));
        let what = format!("{sect} step {which}");
        let other = [("ws", r.ws.is_some()), ("grpc", r.grpc.is_some())];
        if let Some((kind, _)) = other.iter().find(|(_, on)| *on) {
            return Err((
                format!("{what}: a `{kind}:` step cannot be a {sect} step: {sect} steps are HTTP requests sent once"),
                Some(Place::Text(sect, format!("{kind}:"))),
            ));
        }
        check_request(&what, r, sect)?;
        if j + 1 == steps.len() && r.think_time.is_some() {
            return Err((
                format!("{what}: `think_time` is the pause before the next step, and the last step has none"),
                Some(Place::Key(sect, &["think_time"], steps.iter().filter(|s| s.think_time.is_some()).count() - 1)),
            ));
        }
        for (var, x) in &r.extract {
            check_extract(&what, var, x)
                .map_err(|m| (m, Some(Place::Text(sect, format!("{var}:")))))?;
        }
    }
    Ok(())
}

/// A WebSocket step's checks ([`super::ws::check`]) and its messages' `extract`s.
fn check_ws(
    which: &str,
    r: &RequestSpec,
    sect: &'static str,
    scenario: bool,
) -> Result<(), (String, Option<Place>)> {
    let Some(ws) = &r.ws else { return Ok(()) };
    super::ws::check(which, r, ws, sect, scenario)?;
    for (i, m) in ws.all_messages().iter().enumerate() {
        let what = format!("{which}: ws message `{}`", m.label(i + 1));
        for (var, x) in &m.extract {
            check_extract(&what, var, x)
                .map_err(|e| (e, Some(Place::Text(sect, format!("{var}:")))))?;
        }
    }
    Ok(())
}

/// A scenario step's `extract.VAR`: exactly one source, each well formed.
fn check_extract(what: &str, var: &str, x: &super::ExtractSpec) -> Result<(), String> {
    let n = [x.json.is_some(), x.regex.is_some(), x.header.is_some()]
        .iter()
        .filter(|b| **b)
        .count();
    if n != 1 {
        return Err(format!(
            "{what}: extract.{var}: give exactly one of json, regex, header"
        ));
    }
    if let Some(re) = &x.regex {
        regex::Regex::new(re).map_err(|e| format!("{what}: extract.{var}.regex: {e}"))?;
    }
    if let Some(p) = &x.json {
        if !(p.is_empty() || p.starts_with('/')) {
            return Err(format!(
                "{what}: extract.{var}.json `{p}`: a JSON pointer starts with `/`"
            ));
        }
    }
    if let Some(h) = &x.header {
        hyper::header::HeaderName::from_bytes(h.as_bytes())
            .map_err(|_| format!("{what}: extract.{var}.header `{h}` is not a header name"))?;
    }
    Ok(())
}

/// The checks every request (of the mix or a scenario step, in section
/// `sect`) must pass; an error points at the value that caused it.
fn check_request(
    which: &str,
    r: &RequestSpec,
    sect: &'static str,
) -> Result<(), (String, Option<Place>)> {
    let at = |needle: String| Some(Place::Text(sect, needle));
    if let Some(g) = &r.grpc {
        return super::grpc::check_call(which, r, g).map_err(|(m, n)| (m, at(n)));
    }
    if r.path.is_empty() {
        return Err((
            format!("{which}: needs a `path` (or a `grpc:` call)"),
            Some(Place::Text(sect, "-".into())),
        ));
    }
    if !r.path.starts_with('/') {
        return Err((
            format!("{which}: path `{}` must start with `/`", r.path),
            at(r.path.clone()),
        ));
    }
    if !(r.weight.is_finite() && r.weight > 0.0) {
        return Err((
            format!("{which}: weight must be above 0"),
            at(format!("weight: {}", r.weight)),
        ));
    }
    if hyper::Method::from_bytes(r.method.as_bytes()).is_err() {
        return Err((
            format!("{which}: `{}` is not an HTTP method", r.method),
            at(r.method.clone()),
        ));
    }
    if let Some(re) = &r.expect.body_regex {
        regex::Regex::new(re)
            .map_err(|e| (format!("{which}: expect.body_regex: {e}"), at(re.clone())))?;
    }
    for s in &r.expect.status {
        if !(100..=599).contains(s) {
            return Err((
                format!("{which}: expect.status {s} is not an HTTP status"),
                at(s.to_string()),
            ));
        }
    }
    Ok(())
}

/// A target URL, parsed once the way the engine will use it: `http(s)://`
/// only, a host, and a port that is a number in range — an unparsable port is
/// an error, never the scheme's default (the load would go elsewhere).
pub fn target_url(text: &str) -> Result<url::Url, String> {
    let bad = |why: &str| why.to_string();
    if !text.starts_with("http://") && !text.starts_with("https://") {
        return Err(bad("expected `http://…`, `https://…` or `builtin`"));
    }
    let u = url::Url::parse(text).map_err(|e| bad(&e.to_string()))?;
    if u.host_str().is_none_or(str::is_empty) {
        return Err(bad("no host"));
    }
    // WHATWG accepts `host:` with no port and means the default: refuse it.
    let authority = text.split("://").nth(1).unwrap_or("");
    let authority = authority.split(['/', '?', '#']).next().unwrap_or("");
    if authority.ends_with(':') {
        return Err(bad("a `:` with no port after it"));
    }
    Ok(u)
}
