//! Durations as Kubernetes and Go write them (`30s`, `5m`, `1h30m`, `500ms`): parsed, printed
//! the way Go prints them, and described in CRD schemas with a pattern the API server checks.

use std::{fmt, str::FromStr, time::Duration};

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A duration written as Kubernetes and Go write them: `30s`, `5m`, `1h30m`, `500ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interval(pub Duration);

impl FromStr for Interval {
    type Err = DurationError;

    /// Go's `time.ParseDuration` grammar, unsigned: one or more `<number><unit>` with units `ns`,
    /// `us`/`µs`, `ms`, `s`, `m`, `h` — exactly what [`INTERVAL_PATTERN`] admits, so a duration
    /// `bosun.yaml` accepts is one the API server accepts. Written here rather than taken from a
    /// crate: the general duration parsers also take ISO 8601 and friendly forms (`PT5M`,
    /// `5 mins`) that the CRD schema refuses.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let invalid = || DurationError::Invalid { text: text.to_string() };
        if text.starts_with('-') {
            return Err(DurationError::Negative { text: text.to_string() });
        }
        let mut rest = text;
        if rest.is_empty() {
            return Err(invalid());
        }
        let mut nanos: f64 = 0.0;
        while !rest.is_empty() {
            let number_end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).ok_or_else(invalid)?;
            let (number, tail) = rest.split_at(number_end);
            let digits = |part: &str| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit());
            let well_formed = match number.split_once('.') {
                Some((whole, fraction)) => digits(whole) && digits(fraction),
                None => digits(number),
            };
            if !well_formed {
                return Err(invalid());
            }
            let unit_end = tail.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(tail.len());
            let (unit, tail) = tail.split_at(unit_end);
            let scale = match unit {
                "ns" => 1.0,
                "us" | "µs" => 1e3,
                "ms" => 1e6,
                "s" => 1e9,
                "m" => 60e9,
                "h" => 3600e9,
                _ => return Err(invalid()),
            };
            nanos += number.parse::<f64>().map_err(|_| invalid())? * scale;
            rest = tail;
        }
        if !nanos.is_finite() || nanos > u64::MAX as f64 {
            return Err(invalid());
        }
        Ok(Interval(Duration::from_nanos(nanos.round() as u64)))
    }
}

/// A duration that is not one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DurationError {
    /// Not in Go's form.
    Invalid {
        /// The text given.
        text: String,
    },
    /// Below zero.
    Negative {
        /// The text given.
        text: String,
    },
}

impl fmt::Display for DurationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DurationError::Invalid { text } => write!(f, "{text:?} is not a duration (examples: 30s, 5m, 1h30m)"),
            DurationError::Negative { text } => write!(f, "{text:?} must not be negative"),
        }
    }
}

impl std::error::Error for DurationError {}

/// Written the way Go prints durations: `500ms`, `30s`, `5m0s`, `1h30m0s`.
impl fmt::Display for Interval {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let millis = self.0.as_millis();
        if millis > 0 && millis < 1000 {
            return write!(f, "{millis}ms");
        }
        let whole = self.0.as_secs();
        let (hours, minutes) = (whole / 3600, whole % 3600 / 60);
        let seconds = (whole % 60) as f64 + f64::from(self.0.subsec_millis()) / 1000.0;
        if hours > 0 {
            write!(f, "{hours}h{minutes}m{seconds}s")
        } else if minutes > 0 {
            write!(f, "{minutes}m{seconds}s")
        } else {
            write!(f, "{seconds}s")
        }
    }
}

impl Serialize for Interval {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Interval {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// A duration is a string in the schemas (`30s`, `5m`, `1h30m`), in Go's form as Kubernetes
/// and Flux write them. The pattern lets the API server refuse `5x` when the object is
/// applied: an object the controller cannot read would otherwise be skipped without a word.
pub const INTERVAL_PATTERN: &str = r"^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$";

impl JsonSchema for Interval {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Interval".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": "string", "pattern": INTERVAL_PATTERN, "description": "A duration: 30s, 5m, 1h30m."})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schema_pattern_takes_every_duration_go_writes_and_what_intervals_print() {
        let pattern = regex::Regex::new(INTERVAL_PATTERN).expect("pattern");
        for text in ["30s", "5m", "1h30m", "500ms", "1.5h", "0s", "10m0s", "1h30m0s"] {
            assert!(pattern.is_match(text), "{text}");
            assert!(text.parse::<Interval>().is_ok(), "{text}");
        }
        for interval in [Duration::from_millis(500), Duration::from_secs(90), Duration::from_secs(5400)] {
            assert!(pattern.is_match(&Interval(interval).to_string()), "{interval:?}");
        }
        for text in ["5x", "", "10", "1 hour", "-5m", "PT1H", "5m "] {
            assert!(!pattern.is_match(text), "{text:?}");
        }
    }

    #[test]
    fn intervals_parse_like_go_durations() {
        for (text, seconds) in [("30s", 30.0), ("5m", 300.0), ("1h30m", 5400.0), ("500ms", 0.5)] {
            let interval: Interval = text.parse().expect(text);
            assert_eq!(interval.0.as_secs_f64(), seconds, "{text}");
        }
        assert!("-5s".parse::<Interval>().is_err());
        for text in ["", "5", "5x", "1 hour", "5 mins", "PT1H", ".5s", "5.s", "+5s", "5m "] {
            assert!(text.parse::<Interval>().is_err(), "{text:?}");
        }
        assert_eq!("1.5h2m3s4ms5us6ns".parse::<Interval>().expect("all units").0.as_nanos(), 5_523_004_005_006);
        for (text, shown) in [("90s", "1m30s"), ("2h", "2h0m0s"), ("250ms", "250ms"), ("1.5s", "1.5s")] {
            assert_eq!(text.parse::<Interval>().expect(text).to_string(), shown);
        }
    }
}
