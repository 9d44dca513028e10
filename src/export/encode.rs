//! The two encodings of [`Family`]s: OpenMetrics text for the pull endpoint
//! (through `prometheus-client`'s encoder, so escaping, `_total`, `le` and
//! the `# EOF` line follow the spec), and a remote-write `WriteRequest`
//! (protobuf via `prost`, snappy block format via `snap`).
//!
//! The remote-write messages are declared here with `prost` derives rather
//! than generated from `remote.proto`: four small messages, and no `protoc`
//! at build time.

use std::sync::{Arc, Mutex};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric, MetricEncoder};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

use std::collections::BTreeMap;

use super::figures::{Exemplars, Family, Figures, Value};

/// `prometheus-client` collector over the shared figures: each scrape
/// renders them as they are at that moment.
#[derive(Debug)]
pub(super) struct FiguresCollector(pub Arc<Mutex<Figures>>);

/// One sample as `prometheus-client` encodes it.
struct Sample<'a>(&'a Value);

impl EncodeMetric for Sample<'_> {
    fn encode(&self, mut e: MetricEncoder) -> Result<(), std::fmt::Error> {
        match self.0 {
            Value::Counter(v) => {
                e.encode_counter::<prometheus_client::encoding::NoLabelSet, _, u64>(v, None)
            }
            Value::Gauge(v) => e.encode_gauge(v),
            Value::Histogram {
                sum,
                count,
                buckets,
            } => e.encode_histogram::<prometheus_client::encoding::NoLabelSet>(
                *sum, *count, buckets, None,
            ),
        }
    }
    fn metric_type(&self) -> MetricType {
        match self.0 {
            Value::Counter(_) => MetricType::Counter,
            Value::Gauge(_) => MetricType::Gauge,
            Value::Histogram { .. } => MetricType::Histogram,
        }
    }
}

impl Collector for FiguresCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        // A poisoned lock still holds the last figures: serve them.
        let fams = match self.0.lock() {
            Ok(f) => f.families(),
            Err(p) => p.into_inner().families(),
        };
        for fam in &fams {
            let Some((_, first)) = fam.samples.first() else {
                continue;
            };
            let mut me =
                encoder.encode_descriptor(fam.name, fam.help, None, Sample(first).metric_type())?;
            for (labels, v) in &fam.samples {
                let l: Vec<(&str, &str)> = labels.iter().map(|(k, v)| (*k, v.as_str())).collect();
                Sample(v).encode(me.encode_family(&l)?)?;
            }
        }
        Ok(())
    }
}

/// OpenMetrics text of the figures now.
pub(super) fn openmetrics(registry: &Registry) -> String {
    let mut out = String::new();
    // Writing into a String cannot fail.
    let _ = prometheus_client::encoding::text::encode(&mut out, registry);
    out
}

/// `text` (OpenMetrics, as [`openmetrics`] wrote it) with an exemplar
/// `# {trace_id="…"} value timestamp` on each `brunt_latency_seconds`
/// bucket that has one. A bucket line's sample is read from its `phase` and
/// `request` labels, its bucket from its place among that sample's lines
/// (the encoder writes them in bound order, `le` first among the labels).
pub(super) fn with_exemplars(text: &str, ex: &Exemplars) -> String {
    use std::fmt::Write as _;
    if ex.is_empty() {
        return text.to_string();
    }
    const BUCKET: &str = "brunt_latency_seconds_bucket{";
    let mut out = String::with_capacity(text.len() + 64 * ex.len());
    // The labels (but `le`) of the sample whose buckets are being read, and the index.
    let mut at: Option<(BTreeMap<String, String>, usize)> = None;
    for line in text.lines() {
        out.push_str(line);
        if let Some(rest) = line.strip_prefix(BUCKET) {
            let mut labels = parse_labels(rest);
            labels.remove("le");
            let i = match at.take() {
                Some((s, i)) if s == labels => i + 1,
                _ => 0,
            };
            let key = (
                labels.get("phase").cloned().unwrap_or_default(),
                labels.get("request").cloned().unwrap_or_default(),
            );
            at = Some((labels, i));
            if let Some(e) = ex.get(&key).and_then(|b| b.get(&i)) {
                let _ = write!(
                    out,
                    " # {{trace_id=\"{}\"}} {} {:.3}",
                    e.trace_id, e.value_s, e.at_unix_s
                );
            }
        } else {
            at = None;
        }
        out.push('\n');
    }
    out
}

/// The labels of a sample line after its `{`, unescaped (`\\`, `\"`, `\n`).
fn parse_labels(s: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut chars = s.chars();
    loop {
        let name: String = chars.by_ref().take_while(|c| *c != '=').collect();
        let name = name.trim_start_matches(',').trim().to_string();
        if name.is_empty() || name.contains('}') || chars.next() != Some('"') {
            return out;
        }
        let mut value = String::new();
        while let Some(c) = chars.next() {
            match c {
                '\\' => match chars.next() {
                    Some('n') => value.push('\n'),
                    Some(o) => value.push(o),
                    None => return out,
                },
                '"' => break,
                c => value.push(c),
            }
        }
        out.insert(name, value);
    }
}

/// The remote-write 1.0 messages (`prometheus/prompb/{remote,types}.proto`).
pub mod prompb {
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct WriteRequest {
        #[prost(message, repeated, tag = "1")]
        pub timeseries: Vec<TimeSeries>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct TimeSeries {
        #[prost(message, repeated, tag = "1")]
        pub labels: Vec<Label>,
        #[prost(message, repeated, tag = "2")]
        pub samples: Vec<Sample>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Label {
        #[prost(string, tag = "1")]
        pub name: String,
        #[prost(string, tag = "2")]
        pub value: String,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Sample {
        #[prost(double, tag = "1")]
        pub value: f64,
        /// Milliseconds since the Unix epoch.
        #[prost(int64, tag = "2")]
        pub timestamp: i64,
    }
}

/// The families as remote-write time series, all stamped `ts_ms`; counters
/// get `_total`, histograms their `_bucket{le}`, `_sum` and `_count` series,
/// the names a scrape of the pull endpoint would give.
pub fn write_request(fams: &[Family], ts_ms: i64) -> prompb::WriteRequest {
    let mut out = Vec::new();
    let mut push = |name: String, labels: &[(&'static str, String)], le: Option<String>, v: f64| {
        let mut l = vec![prompb::Label {
            name: "__name__".into(),
            value: name,
        }];
        l.extend(labels.iter().map(|(k, v)| prompb::Label {
            name: (*k).into(),
            value: v.clone(),
        }));
        if let Some(le) = le {
            l.push(prompb::Label {
                name: "le".into(),
                value: le,
            });
        }
        // Remote-write wants labels sorted by name.
        l.sort_by(|a, b| a.name.cmp(&b.name));
        out.push(prompb::TimeSeries {
            labels: l,
            samples: vec![prompb::Sample {
                value: v,
                timestamp: ts_ms,
            }],
        });
    };
    for fam in fams {
        for (labels, v) in &fam.samples {
            match v {
                Value::Counter(c) => push(format!("{}_total", fam.name), labels, None, *c as f64),
                Value::Gauge(g) => push(fam.name.to_string(), labels, None, *g),
                Value::Histogram {
                    sum,
                    count,
                    buckets,
                } => {
                    let mut cum = 0u64;
                    for (le, n) in buckets {
                        cum += n;
                        let le = if le.is_finite() {
                            dtoa_like(*le)
                        } else {
                            "+Inf".into()
                        };
                        push(format!("{}_bucket", fam.name), labels, Some(le), cum as f64);
                    }
                    push(format!("{}_sum", fam.name), labels, None, *sum);
                    push(format!("{}_count", fam.name), labels, None, *count as f64);
                }
            }
        }
    }
    prompb::WriteRequest { timeseries: out }
}

/// The Prometheus text format 0.0.4, for scrapers that do not ask for
/// OpenMetrics (curl, `promtool check metrics`, older agents). Written here:
/// `prometheus-client` encodes OpenMetrics only, and 0.0.4 is a few lines of
/// fixed layout. It differs where promtool checks: a counter's HELP and
/// TYPE name its `_total` samples, and there is no `# EOF`.
pub fn text_004(fams: &[Family]) -> String {
    use std::fmt::Write as _;
    let mut o = String::new();
    for fam in fams {
        let Some((_, first)) = fam.samples.first() else {
            continue;
        };
        let (name, ty) = match first {
            Value::Counter(_) => (format!("{}_total", fam.name), "counter"),
            Value::Gauge(_) => (fam.name.to_string(), "gauge"),
            Value::Histogram { .. } => (fam.name.to_string(), "histogram"),
        };
        let help = fam.help.replace('\\', "\\\\").replace('\n', "\\n");
        let _ = writeln!(o, "# HELP {name} {help}\n# TYPE {name} {ty}");
        for (labels, v) in &fam.samples {
            match v {
                Value::Counter(c) => sample(&mut o, &name, labels, None, &c.to_string()),
                Value::Gauge(g) => sample(&mut o, &name, labels, None, &number(*g)),
                Value::Histogram {
                    sum,
                    count,
                    buckets,
                } => {
                    let bucket = format!("{name}_bucket");
                    for (le, n) in buckets {
                        let le = if le.is_infinite() {
                            "+Inf".to_string()
                        } else {
                            dtoa_like(*le)
                        };
                        sample(&mut o, &bucket, labels, Some(&le), &n.to_string());
                    }
                    sample(&mut o, &format!("{name}_sum"), labels, None, &number(*sum));
                    sample(
                        &mut o,
                        &format!("{name}_count"),
                        labels,
                        None,
                        &count.to_string(),
                    );
                }
            }
        }
    }
    o
}

/// One sample line: `name{k="v",…,le="…"} value`.
fn sample(o: &mut String, name: &str, labels: &[(&str, String)], le: Option<&str>, value: &str) {
    o.push_str(name);
    let le = le.map(|v| ("le", v.to_string()));
    let all: Vec<&(&str, String)> = labels.iter().chain(le.as_ref()).collect();
    if !all.is_empty() {
        o.push('{');
        for (i, (k, v)) in all.iter().enumerate() {
            if i > 0 {
                o.push(',');
            }
            let v = v
                .replace('\\', "\\\\")
                .replace('"', "\\\"")
                .replace('\n', "\\n");
            o.push_str(&format!("{k}=\"{v}\""));
        }
        o.push('}');
    }
    o.push(' ');
    o.push_str(value);
    o.push('\n');
}

/// A float as both formats write it (`NaN`, `+Inf`, shortest round trip).
fn number(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else {
        format!("{v}")
    }
}

/// `le` as the text encoder writes it (shortest round-trip form), so a
/// pulled and a pushed series of one bucket carry the same label value.
fn dtoa_like(v: f64) -> String {
    let s = format!("{v}");
    if s.contains('.') || s.contains('e') {
        s
    } else {
        format!("{s}.0")
    }
}

/// Protobuf then snappy (block format), the body of a remote-write POST.
pub fn remote_write_body(req: &prompb::WriteRequest) -> Result<Vec<u8>, snap::Error> {
    use prost::Message;
    snap::raw::Encoder::new().compress_vec(&req.encode_to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_004_names_counters_by_their_samples_and_escapes_labels() {
        let fams = vec![
            Family {
                name: "brunt_x",
                help: "a \\ help\nline",
                samples: vec![(
                    vec![("request", "say \"hi\"\\\n".to_string())],
                    Value::Counter(3),
                )],
            },
            Family {
                name: "brunt_h",
                help: "h",
                samples: vec![(
                    vec![],
                    Value::Histogram {
                        sum: 0.5,
                        count: 2,
                        buckets: vec![(0.1, 1), (f64::INFINITY, 2)],
                    },
                )],
            },
        ];
        assert_eq!(
            text_004(&fams),
            "# HELP brunt_x_total a \\\\ help\\nline\n# TYPE brunt_x_total counter\n\
             brunt_x_total{request=\"say \\\"hi\\\"\\\\\\n\"} 3\n\
             # HELP brunt_h h\n# TYPE brunt_h histogram\n\
             brunt_h_bucket{le=\"0.1\"} 1\nbrunt_h_bucket{le=\"+Inf\"} 2\n\
             brunt_h_sum 0.5\nbrunt_h_count 2\n"
        );
    }
    use crate::export::figures::Labels;

    /// Figures of run `r`, shard 1/1, one phase.
    fn figures(phase: &str, requests: &[&str], started_at: f64) -> Arc<Mutex<Figures>> {
        Arc::new(Mutex::new(Figures::new(Labels {
            run: "r".into(),
            shard: "1/1".into(),
            phases: vec![phase.into()],
            requests: requests.iter().map(|r| r.to_string()).collect(),
            started_at,
        })))
    }

    #[test]
    fn openmetrics_carries_a_traced_request_as_the_exemplar_of_its_bucket_and_text_004_none() {
        use crate::metrics::traces::{Hit, Traced};
        use crate::metrics::{new_hist, Class, Stats, Window};
        let f = figures("main", &["a \"q\"", "b"], 1_700_000_000.0);
        let mut s = Stats::default();
        let mut h = new_hist();
        h.record(300_000_000).expect("record");
        s.add_hist(Class::Ok, &h, crate::metrics::hlog::TagKind::Latency);
        s.add_hist(Class::Ok, &h, crate::metrics::hlog::TagKind::Request(0));
        s.traces.offer(Hit {
            trace: 0xabc,
            latency_ns: 300_000_000,
            class: Class::Ok,
            sent_ns: 2_500_000_000,
            request: 0,
        });
        assert_eq!(s.traces, {
            let mut t = Traced::default();
            t.merge(&s.traces);
            t
        });
        let w = Window {
            second: 2,
            phases: vec![(0, s)],
            in_flight: 0,
            sched_lag_us: 0,
            busy_pct: None,
        };
        f.lock().expect("lock").window(&w, 0);
        let mut reg = Registry::default();
        reg.register_collector(Box::new(FiguresCollector(f.clone())));
        let ex = f.lock().expect("lock").exemplars();
        let text = with_exemplars(&openmetrics(&reg), &ex);
        assert!(text.ends_with("# EOF\n"), "{text}");
        let re = regex::Regex::new(
            r#"^brunt_latency_seconds_bucket\{le="([0-9.e+-]+)",run="r",shard="1/1",phase="main",request="a \\"q\\""\} (\d+) # \{trace_id="([0-9a-f]{32})"\} ([0-9.]+) (\d+\.\d{3})$"#,
        )
        .expect("regex");
        let marked: Vec<_> = text.lines().filter_map(|l| re.captures(l)).collect();
        assert_eq!(marked.len(), 1, "{text}");
        let c = &marked[0];
        let le: f64 = c[1].parse().expect("le");
        assert!((0.3..0.4).contains(&le), "the bucket holding 300 ms: {le}");
        assert_eq!(&c[2], "1");
        assert_eq!(&c[3], "00000000000000000000000000000abc");
        assert_eq!(&c[4], "0.3");
        assert_eq!(&c[5], "1700000002.500");
        // Every line before it of that sample is an exemplar-free bucket below 300 ms.
        let before: Vec<&str> = text
            .lines()
            .take_while(|l| !l.contains(" # {"))
            .filter(|l| l.starts_with("brunt_latency_seconds_bucket{") && l.contains("request=\"a"))
            .collect();
        assert!(before.iter().all(|l| l.ends_with(" 0")), "{before:?}");
        assert_eq!(text.matches(" # {").count(), 1);
        let fams = f.lock().expect("lock").families();
        assert!(!text_004(&fams).contains(" # {"));
    }

    #[test]
    fn text_and_protobuf_carry_the_same_series() {
        let f = figures("a", &["get"], 0.0);
        let mut reg = Registry::default();
        reg.register_collector(Box::new(FiguresCollector(f.clone())));
        let text = openmetrics(&reg);
        assert!(
            text.contains("brunt_windows_total{run=\"r\",shard=\"1/1\"} 0"),
            "{text}"
        );
        assert!(text.ends_with("# EOF\n"));
        let fams = f.lock().expect("lock").families();
        let req = write_request(&fams, 1000);
        assert!(req.timeseries.iter().any(|t| t
            .labels
            .iter()
            .any(|l| l.name == "__name__" && l.value == "brunt_windows_total")));
        let body = remote_write_body(&req).expect("snappy");
        let back = snap::raw::Decoder::new()
            .decompress_vec(&body)
            .expect("unsnappy");
        use prost::Message;
        assert_eq!(
            prompb::WriteRequest::decode(back.as_slice()).expect("decode"),
            req
        );
        assert_eq!(dtoa_like(1.0), "1.0");
        assert_eq!(dtoa_like(0.000125992), "0.000125992");
    }
}
