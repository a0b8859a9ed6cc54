//! CronJob schedules as upstream reads them (robfig/cron's standard parser): five fields —
//! minute, hour, day of month, month, day of week — each `*`, `?`, a value, a range `a-b`, a
//! step `*/n`, `a-b/n` or `a/n`, or a list of those; month and weekday names; `7` as Sunday; the
//! macros `@yearly`/`@annually`, `@monthly`, `@weekly`, `@daily`/`@midnight`, `@hourly`. When both
//! day fields are restricted a day matching either runs, as cron does.

use jiff::{Span, Timestamp, Zoned, tz::TimeZone};

/// Why a schedule cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unparseable schedule {schedule:?}: {why}")]
pub struct CronError {
    /// The schedule.
    pub schedule: String,
    /// What is wrong.
    pub why: String,
}

/// A parsed schedule: the allowed values of each field as bit sets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    minutes: u64,
    hours: u64,
    days: u64,
    months: u64,
    weekdays: u64,
    any_day: bool,
    any_weekday: bool,
}

const MONTHS: [&str; 12] = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];
const WEEKDAYS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

fn value(text: &str, names: &[&str], offset: u32) -> Option<u32> {
    text.parse().ok().or_else(|| {
        let lower = text.to_ascii_lowercase();
        names.iter().position(|n| *n == lower).map(|i| u32::try_from(i).unwrap_or(0) + offset)
    })
}

/// One field's bits; `star` says whether it was `*` or `?` (unrestricted).
fn field(text: &str, low: u32, high: u32, names: &[&str], offset: u32) -> Result<(u64, bool), String> {
    let mut bits = 0u64;
    let mut star = false;
    for part in text.split(',') {
        let (range, step) = match part.split_once('/') {
            Some((range, step)) => {
                let step: u32 = step.parse().map_err(|_| format!("bad step {step:?}"))?;
                if step == 0 {
                    return Err("step of zero".into());
                }
                (range, Some(step))
            }
            None => (part, None),
        };
        let (start, end) = if range == "*" || range == "?" {
            star = step.is_none() && text.split(',').count() == 1;
            (low, high)
        } else if let Some((a, b)) = range.split_once('-') {
            let a = value(a, names, offset).ok_or_else(|| format!("bad value {a:?}"))?;
            let b = value(b, names, offset).ok_or_else(|| format!("bad value {b:?}"))?;
            (a, b)
        } else {
            let a = value(range, names, offset).ok_or_else(|| format!("bad value {range:?}"))?;
            (a, if step.is_some() { high } else { a })
        };
        if start < low || end > high || start > end {
            return Err(format!("{part:?} is beyond {low}-{high}"));
        }
        let mut at = start;
        while at <= end {
            bits |= 1 << at;
            at += step.unwrap_or(1);
        }
    }
    Ok((bits, star))
}

impl Schedule {
    /// Reads a schedule.
    pub fn parse(schedule: &str) -> Result<Schedule, CronError> {
        let error = |why: String| CronError { schedule: schedule.to_string(), why };
        let text = match schedule.trim() {
            "@yearly" | "@annually" => "0 0 1 1 *",
            "@monthly" => "0 0 1 * *",
            "@weekly" => "0 0 * * 0",
            "@daily" | "@midnight" => "0 0 * * *",
            "@hourly" => "0 * * * *",
            other => other,
        };
        let fields: Vec<&str> = text.split_whitespace().collect();
        if fields.len() != 5 {
            return Err(error(format!("expected exactly 5 fields, found {}", fields.len())));
        }
        let (minutes, _) = field(fields[0], 0, 59, &[], 0).map_err(error)?;
        let (hours, _) = field(fields[1], 0, 23, &[], 0).map_err(error)?;
        let (days, any_day) = field(fields[2], 1, 31, &[], 0).map_err(error)?;
        let (months, _) = field(fields[3], 1, 12, &MONTHS, 1).map_err(error)?;
        let (mut weekdays, any_weekday) = field(fields[4], 0, 7, &WEEKDAYS, 0).map_err(error)?;
        if weekdays & (1 << 7) != 0 {
            weekdays |= 1;
        }
        Ok(Schedule { minutes, hours, days, months, weekdays, any_day, any_weekday })
    }

    fn matches(&self, at: &Zoned) -> bool {
        let bit = |set: u64, value: i8| set & (1 << u32::try_from(value).unwrap_or(63)) != 0;
        let day = bit(self.days, at.day());
        let weekday = bit(self.weekdays, at.weekday().to_sunday_zero_offset());
        let day_ok = if self.any_day || self.any_weekday { day && weekday } else { day || weekday };
        bit(self.minutes, at.minute()) && bit(self.hours, at.hour()) && bit(self.months, at.month()) && day_ok
    }

    /// The first scheduled minute after `after`, within five years.
    pub fn next_after(&self, after: Timestamp, zone: &TimeZone) -> Option<Timestamp> {
        let start = after.to_zoned(zone.clone());
        let mut at =
            start.with().second(0).subsec_nanosecond(0).build().ok()?.checked_add(Span::new().minutes(1)).ok()?;
        for _ in 0..(5 * 366 * 24 * 60) {
            if self.matches(&at) {
                return Some(at.timestamp());
            }
            at = at.checked_add(Span::new().minutes(1)).ok()?;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> Timestamp {
        text.parse().expect("timestamp")
    }

    #[test]
    fn next_times_follow_the_fields() {
        let utc = TimeZone::UTC;
        let every = Schedule::parse("* * * * *").expect("schedule");
        assert_eq!(every.next_after(at("2025-01-01T00:00:30Z"), &utc), Some(at("2025-01-01T00:01:00Z")));
        let quarter = Schedule::parse("*/15 9-17 * * mon-fri").expect("schedule");
        assert_eq!(
            quarter.next_after(at("2025-01-03T17:50:00Z"), &utc),
            Some(at("2025-01-06T09:00:00Z")),
            "Friday evening → Monday"
        );
        let hourly = Schedule::parse("@hourly").expect("schedule");
        assert_eq!(hourly.next_after(at("2025-01-01T00:00:00Z"), &utc), Some(at("2025-01-01T01:00:00Z")));
        // Both day fields restricted: either matches (the 1st, or a Sunday).
        let either = Schedule::parse("0 0 1 * 0").expect("schedule");
        assert_eq!(either.next_after(at("2025-01-01T00:00:00Z"), &utc), Some(at("2025-01-05T00:00:00Z")));
        let sunday = Schedule::parse("0 12 * * 7").expect("schedule");
        assert_eq!(sunday.next_after(at("2025-01-01T00:00:00Z"), &utc), Some(at("2025-01-05T12:00:00Z")));
    }

    #[test]
    fn bad_schedules_say_why() {
        assert!(Schedule::parse("* * * *").expect_err("four").to_string().contains("expected exactly 5 fields"));
        assert!(Schedule::parse("61 * * * *").is_err());
        assert!(Schedule::parse("*/0 * * * *").is_err());
        assert!(Schedule::parse("0 0 * foo *").is_err());
    }
}
