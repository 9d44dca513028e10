//! Small value types of the profile language: rates (`200/s`), levels (a rate
//! in the open model, a number of virtual users in the closed one) and
//! percentages (`0.1%`), growth per hour for leak thresholds (`10MB/h`),
//! byte sizes (`4MiB`).
//! Each parses from YAML strings or numbers.

use std::fmt;
use std::str::FromStr;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

/// A load level: requests per second (open model) or virtual users (closed).
/// Written `200/s`, `12000/m`, `3/h` or a plain number.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Default)]
pub struct Level(pub f64);

impl Level {
    pub fn per_sec(self) -> f64 {
        self.0
    }
}

impl FromStr for Level {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let t = s.trim();
        let (num, div) = if let Some(n) = t.strip_suffix("/s") {
            (n, 1.0)
        } else if let Some(n) = t.strip_suffix("/m") {
            (n, 60.0)
        } else if let Some(n) = t.strip_suffix("/h") {
            (n, 3600.0)
        } else {
            (t, 1.0)
        };
        let v: f64 = num
            .trim()
            .parse()
            .map_err(|_| format!("`{s}` is not a rate: expected e.g. `200/s`, `600/m` or `50`"))?;
        if !v.is_finite() || v < 0.0 {
            return Err(format!("`{s}`: a rate must be zero or positive"));
        }
        Ok(Level(v / div))
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.fract() == 0.0 {
            write!(f, "{}", self.0 as u64)
        } else {
            write!(f, "{:.2}", self.0)
        }
    }
}

/// Reads a number as it is and a string through `FromStr`.
struct NumOrStr<T>(std::marker::PhantomData<T>);

impl<T: FromStr<Err = String> + From<f64>> Visitor<'_> for NumOrStr<T> {
    type Value = T;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a number or a string such as `200/s` or `0.1%`")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
        v.parse().map_err(E::custom)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<T, E> {
        Ok(T::from(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<T, E> {
        Ok(T::from(v as f64))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<T, E> {
        if v < 0 {
            return Err(E::custom(format!("{v}: must be zero or positive")));
        }
        Ok(T::from(v as f64))
    }
}

/// `From<f64>` and a `Deserialize` through [`NumOrStr`], for each number type here.
macro_rules! number_or_string {
    ($($t:ident),*) => {$(
        impl From<f64> for $t {
            fn from(v: f64) -> Self {
                $t(v)
            }
        }

        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                d.deserialize_any(NumOrStr::<$t>(std::marker::PhantomData))
            }
        }

        // The profile's JSON Schema: what the visitor above accepts.
        impl schemars::JsonSchema for $t {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($t).into()
            }
            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!({
                    "type": ["number", "string"],
                    "description": "a number, or a string with its unit such as `200/s`, `0.1%`, `10 MB/h` or `64KiB`"
                })
            }
        }
    )*};
}

number_or_string!(Level, Percent, PerHour, ByteSize);

impl Serialize for Level {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(self.0)
    }
}

/// A fraction written as a percentage (`0.1%`) or a plain fraction (`0.001`).
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Default)]
pub struct Percent(pub f64);

impl FromStr for Percent {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let t = s.trim();
        let (num, scale) = match t.strip_suffix('%') {
            Some(n) => (n, 0.01),
            None => (t, 1.0),
        };
        let v: f64 = num
            .trim()
            .parse()
            .map_err(|_| format!("`{s}` is not a percentage: expected e.g. `0.1%` or `0.001`"))?;
        if !(0.0..=100.0).contains(&v) {
            return Err(format!("`{s}`: out of range"));
        }
        Ok(Percent(v * scale))
    }
}

impl Serialize for Percent {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{}%", self.0 * 100.0))
    }
}

impl fmt::Display for Percent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}%", self.0 * 100.0)
    }
}

/// A growth rate per hour for leak thresholds: `10MB/h`, `512KiB/h`, `5/h`
/// (a count), or a plain number (per hour). Byte units: KB/MB/GB are
/// decimal, KiB/MiB/GiB binary.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Default)]
pub struct PerHour(pub f64);

impl FromStr for PerHour {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let t = s.trim();
        let t = t.strip_suffix("/h").unwrap_or(t).trim();
        let v = amount(t).ok_or_else(|| {
            format!("`{s}` is not a growth rate: expected e.g. `10MB/h`, `5/h` or `20`")
        })?;
        Ok(PerHour(v))
    }
}

impl Serialize for PerHour {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(self.0)
    }
}

/// A count or a byte size: a plain number, or one with a byte unit (KB,
/// MB, GB decimal; KiB, MiB, GiB binary; B). `None` when it is neither or
/// is negative.
fn amount(t: &str) -> Option<f64> {
    const UNITS: [(&str, f64); 7] = [
        ("KiB", 1024.0),
        ("MiB", 1024.0 * 1024.0),
        ("GiB", 1024.0 * 1024.0 * 1024.0),
        ("KB", 1e3),
        ("MB", 1e6),
        ("GB", 1e9),
        ("B", 1.0),
    ];
    let (num, mul) = UNITS
        .iter()
        .find_map(|(u, m)| t.strip_suffix(u).map(|n| (n, *m)))
        .unwrap_or((t, 1.0));
    let v: f64 = num.trim().parse().ok()?;
    (v.is_finite() && v >= 0.0).then_some(v * mul)
}

/// A size in bytes: `512KiB`, `4MiB`, `1MB` or a plain number.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Default)]
pub struct ByteSize(pub f64);

impl ByteSize {
    pub fn bytes(self) -> usize {
        self.0 as usize
    }
}

impl FromStr for ByteSize {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        amount(s.trim()).map(ByteSize).ok_or_else(|| {
            format!("`{s}` is not a size: expected e.g. `4MiB`, `512KB` or `1048576`")
        })
    }
}

impl Serialize for ByteSize {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_parse() {
        assert_eq!("200/s".parse::<Level>().unwrap().0, 200.0);
        assert_eq!("600/m".parse::<Level>().unwrap().0, 10.0);
        assert_eq!("50".parse::<Level>().unwrap().0, 50.0);
        assert!("fast".parse::<Level>().is_err());
        assert!("-3/s".parse::<Level>().is_err());
        assert!((("0.1%".parse::<Percent>().unwrap().0) - 0.001).abs() < 1e-12);
        assert!("150%".parse::<Percent>().is_err());
        assert_eq!("10MB/h".parse::<PerHour>().unwrap().0, 10e6);
        assert_eq!("1MiB/h".parse::<PerHour>().unwrap().0, 1048576.0);
        assert_eq!("5/h".parse::<PerHour>().unwrap().0, 5.0);
        assert!("lots/h".parse::<PerHour>().is_err());
        assert_eq!("4MiB".parse::<ByteSize>().unwrap().bytes(), 4 << 20);
        assert_eq!("1048576".parse::<ByteSize>().unwrap().bytes(), 1 << 20);
        assert!("-1KB".parse::<ByteSize>().is_err() && "big".parse::<ByteSize>().is_err());
    }
}
