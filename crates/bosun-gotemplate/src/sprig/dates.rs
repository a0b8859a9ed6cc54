//! Sprig's date functions (date.go) over a `time.Time` object: Go's reference-time layouts
//! (`2006-01-02T15:04:05Z07:00`) for formatting and parsing, and Go's durations.

use std::sync::Arc;

use jiff::tz::{Offset, TimeZone};
use jiff::{Timestamp, Zoned};

use super::{Registry, int_arg, text};
use crate::error::FuncError;
use crate::template::value::{Field, Function, IntKind, TemplateObject, Type, Value};

const NANOS_PER_SECOND: i128 = 1_000_000_000;

/// Go's `time.Time`: an instant in a location.
#[derive(Clone)]
pub struct Time(Zoned);

impl Time {
    fn value(zoned: Zoned) -> Value {
        Value::Object(Arc::new(Time(zoned)))
    }
}

fn time_type() -> Type {
    Type::Named(Arc::from("time.Time"))
}

impl TemplateObject for Time {
    fn type_name(&self) -> String {
        "time.Time".into()
    }

    fn kind(&self) -> &'static str {
        "struct"
    }

    fn string(&self) -> Option<String> {
        Some(format(&self.0, "2006-01-02 15:04:05.999999999 -0700 MST"))
    }

    fn value_key(&self) -> Option<String> {
        Some(format!("{}", self.0.timestamp().as_nanosecond()))
    }

    fn field(&self, _name: &str) -> Field {
        Field::NotFound
    }

    fn method(&self, name: &str) -> Option<Function> {
        let t = self.0.clone();
        let int = |v: i64| Ok(Value::int(v));
        Some(match name {
            "Format" => {
                Function::new([Type::String], Type::String, move |_, a| Ok(Value::from(format(&t, text(&a[0])))))
            }
            "Unix" => Function::new([], Type::INT64, move |_, _| Ok(Value::int64(t.timestamp().as_second()))),
            "UnixNano" => {
                Function::new([], Type::INT64, move |_, _| Ok(Value::int64(t.timestamp().as_nanosecond() as i64)))
            }
            "UTC" => Function::new([], time_type(), move |_, _| Ok(Time::value(t.with_time_zone(TimeZone::UTC)))),
            "Year" => Function::new([], Type::INT, move |_, _| int(i64::from(t.year()))),
            "Day" => Function::new([], Type::INT, move |_, _| int(i64::from(t.day()))),
            "Hour" => Function::new([], Type::INT, move |_, _| int(i64::from(t.hour()))),
            "Minute" => Function::new([], Type::INT, move |_, _| int(i64::from(t.minute()))),
            "Second" => Function::new([], Type::INT, move |_, _| int(i64::from(t.second()))),
            "YearDay" => Function::new([], Type::INT, move |_, _| int(i64::from(t.day_of_year()))),
            "String" => Function::new([], Type::String, move |_, _| {
                Ok(Value::from(format(&t, "2006-01-02 15:04:05.999999999 -0700 MST")))
            }),
            "Add" => Function::new([Type::Int(IntKind::Int64)], time_type(), move |_, a| {
                Ok(Time::value(add_nanos(&t, i128::from(int_arg(&a[0])))))
            }),
            _ => return None,
        })
    }

    fn to_json(&self) -> Result<serde_json::Value, FuncError> {
        Ok(serde_json::Value::String(format(&self.0, "2006-01-02T15:04:05.999999999Z07:00")))
    }
}

fn local_zone() -> TimeZone {
    TimeZone::system()
}

fn add_nanos(t: &Zoned, nanos: i128) -> Zoned {
    let ts = Timestamp::from_nanosecond(t.timestamp().as_nanosecond() + nanos).unwrap_or(t.timestamp());
    ts.to_zoned(t.time_zone().clone())
}

fn now() -> Zoned {
    Timestamp::now().to_zoned(local_zone())
}

/// The instant a sprig date argument means: a time, Unix seconds (`int`, `int32`, `int64`), or
/// — for anything else, as sprig has it — now.
fn date_arg(v: &Value) -> Zoned {
    match v {
        Value::Object(o) => match (&**o as &dyn std::any::Any).downcast_ref::<Time>() {
            Some(t) => t.0.clone(),
            None => now(),
        },
        Value::Int(secs, IntKind::Int | IntKind::Int32 | IntKind::Int64) => {
            Timestamp::from_second(*secs).unwrap_or(Timestamp::UNIX_EPOCH).to_zoned(local_zone())
        }
        _ => now(),
    }
}

fn time_arg(v: &Value) -> Zoned {
    date_arg(v)
}

fn zone(name: &str) -> TimeZone {
    if name == "Local" {
        return local_zone();
    }
    if name.is_empty() || name == "UTC" {
        return TimeZone::UTC;
    }
    TimeZone::get(name).unwrap_or(TimeZone::UTC)
}

pub(super) fn register(r: &mut Registry) {
    use Type::{Any, String as S};
    r.add("now", &[], time_type(), |_| Ok(Time::value(now())));
    r.add("date", &[S, Any], S, |a| {
        Ok(Value::from(format(&date_arg(&a[1]).with_time_zone(local_zone()), text(&a[0]))))
    });
    r.add("dateInZone", &[S, Any, S], S, |a| {
        Ok(Value::from(format(&date_arg(&a[1]).with_time_zone(zone(text(&a[2]))), text(&a[0]))))
    });
    r.alias("date_in_zone", "dateInZone");
    r.add("htmlDate", &[Any], S, |a| {
        Ok(Value::from(format(&date_arg(&a[0]).with_time_zone(local_zone()), "2006-01-02")))
    });
    r.add("htmlDateInZone", &[Any, S], S, |a| {
        Ok(Value::from(format(&date_arg(&a[0]).with_time_zone(zone(text(&a[1]))), "2006-01-02")))
    });
    r.add("dateModify", &[S, time_type()], time_type(), |a| {
        let t = time_arg(&a[1]);
        Ok(Time::value(match parse_duration(text(&a[0])) {
            Ok(d) => add_nanos(&t, d),
            Err(_) => t,
        }))
    });
    r.alias("date_modify", "dateModify");
    r.add("mustDateModify", &[S, time_type()], time_type(), |a| {
        let d = parse_duration(text(&a[0])).map_err(FuncError::new)?;
        Ok(Time::value(add_nanos(&time_arg(&a[1]), d)))
    });
    r.alias("must_date_modify", "mustDateModify");
    r.add("toDate", &[S, S], time_type(), |a| {
        Ok(Time::value(parse(text(&a[1]), text(&a[0]), local_zone()).unwrap_or_else(|_| zero_time())))
    });
    r.add("mustToDate", &[S, S], time_type(), |a| {
        parse(text(&a[1]), text(&a[0]), local_zone()).map(Time::value).map_err(FuncError::new)
    });
    r.add("unixEpoch", &[time_type()], S, |a| Ok(Value::from(time_arg(&a[0]).timestamp().as_second().to_string())));
    r.add("duration", &[Any], S, |a| {
        let secs = match &a[0] {
            Value::String(s) => s.parse::<i64>().unwrap_or(0),
            Value::Int(i, IntKind::Int64) => *i,
            _ => 0,
        };
        Ok(Value::from(duration_string(i128::from(secs) * NANOS_PER_SECOND)))
    });
    r.add("durationRound", &[Any], S, |a| {
        let d: i128 = match &a[0] {
            Value::String(s) => parse_duration(s).unwrap_or(0),
            Value::Int(i, IntKind::Int64) => i128::from(*i),
            Value::Object(o) if (&**o as &dyn std::any::Any).is::<Time>() => since(&time_arg(&a[0])),
            _ => 0,
        };
        Ok(Value::from(duration_round(d)))
    });
    r.add("ago", &[Any], S, |a| {
        let d = since(&date_arg(&a[0]));
        Ok(Value::from(duration_string(round_to_second(d))))
    });
}

fn since(t: &Zoned) -> i128 {
    Timestamp::now().as_nanosecond() - t.timestamp().as_nanosecond()
}

fn round_to_second(d: i128) -> i128 {
    let half = NANOS_PER_SECOND / 2;
    let r = d % NANOS_PER_SECOND;
    let base = d - r;
    if r.abs() >= half { base + NANOS_PER_SECOND * r.signum() } else { base }
}

fn zero_time() -> Zoned {
    jiff::civil::date(1, 1, 1)
        .at(0, 0, 0, 0)
        .to_zoned(TimeZone::UTC)
        .unwrap_or_else(|_| Timestamp::UNIX_EPOCH.to_zoned(TimeZone::UTC))
}

fn duration_round(d: i128) -> String {
    let u = d.unsigned_abs();
    let second = 1_000_000_000u128;
    let (minute, hour) = (60 * second, 3600 * second);
    let (day, month, year) = (24 * hour, 30 * 24 * hour, 365 * 24 * hour);
    for (unit, suffix) in [(year, "y"), (month, "mo"), (day, "d"), (hour, "h"), (minute, "m"), (second, "s")] {
        if u > unit {
            return format!("{}{suffix}", u / unit);
        }
    }
    "0s".into()
}

/// Go's `time.Duration.String`: `1h2m3.5s`, `1.5ms`, `0s`.
pub(crate) fn duration_string(d: i128) -> String {
    let neg = d < 0;
    let mut u = d.unsigned_abs();
    let frac = |u: u128, prec: u32| -> (String, u128) {
        let div = 10u128.pow(prec);
        let f = u % div;
        if f == 0 {
            return (String::new(), u / div);
        }
        let digits = format!("{:0width$}", f, width = prec as usize);
        (format!(".{}", digits.trim_end_matches('0')), u / div)
    };
    let body = if u < 1_000_000_000 {
        let (prec, unit) = match u {
            0 => return "0s".into(),
            1..1_000 => (0, "ns"),
            1_000..1_000_000 => (3, "µs"),
            _ => (6, "ms"),
        };
        let (f, whole) = frac(u, prec);
        format!("{whole}{f}{unit}")
    } else {
        let (f, secs) = frac(u, 9);
        u = secs;
        let mut s = format!("{}{f}s", u % 60);
        u /= 60;
        if u > 0 {
            s = format!("{}m{s}", u % 60);
            u /= 60;
            if u > 0 {
                s = format!("{u}h{s}");
            }
        }
        s
    };
    if neg { format!("-{body}") } else { body }
}

/// Go's `time.ParseDuration`, in nanoseconds.
pub(crate) fn parse_duration(s: &str) -> Result<i128, String> {
    let invalid = || format!("time: invalid duration {}", crate::strconv::quote(s, false));
    let (neg, mut rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if rest == "0" {
        return Ok(0);
    }
    if rest.is_empty() {
        return Err(invalid());
    }
    let mut total: f64 = 0.0;
    while !rest.is_empty() {
        let num_end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
        let number = &rest[..num_end];
        if number.is_empty() || number == "." {
            return Err(invalid());
        }
        rest = &rest[num_end..];
        let unit_end = rest.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(rest.len());
        let unit = &rest[..unit_end];
        rest = &rest[unit_end..];
        let scale: f64 = match unit {
            "" => return Err(format!("time: missing unit in duration {}", crate::strconv::quote(s, false))),
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            other => {
                return Err(format!(
                    "time: unknown unit {} in duration {}",
                    crate::strconv::quote(other, false),
                    crate::strconv::quote(s, false)
                ));
            }
        };
        total += number.parse::<f64>().map_err(|_| invalid())? * scale;
    }
    let nanos = total.round() as i128;
    Ok(if neg { -nanos } else { nanos })
}

/// A piece of a Go layout.
#[derive(Clone, Copy, PartialEq)]
enum Chunk {
    LongMonth,
    Month,
    NumMonth,
    ZeroMonth,
    LongWeekDay,
    WeekDay,
    Day,
    UnderDay,
    ZeroDay,
    UnderYearDay,
    ZeroYearDay,
    Hour,
    Hour12,
    ZeroHour12,
    Minute,
    ZeroMinute,
    Second,
    ZeroSecond,
    LongYear,
    Year,
    Pm,
    PmLower,
    Tz,
    Iso8601Tz,
    Iso8601SecondsTz,
    Iso8601ShortTz,
    Iso8601ColonTz,
    Iso8601ColonSecondsTz,
    NumTz,
    NumSecondsTz,
    NumShortTz,
    NumColonTz,
    NumColonSecondsTz,
    /// `.000` (fixed digits) or `.999` (trailing zeros dropped), with the separator.
    Frac {
        digits: usize,
        trim: bool,
        separator: char,
    },
}

/// Go's `nextStdChunk`: the literal text before the next layout element, the element and the
/// rest.
fn next_chunk(layout: &str) -> (&str, Option<Chunk>, &str) {
    let b = layout.as_bytes();
    for i in 0..b.len() {
        let rest = &layout[i..];
        let found: Option<(Chunk, usize)> = match b[i] {
            b'J' if rest.starts_with("January") => Some((Chunk::LongMonth, 7)),
            b'J' if rest.starts_with("Jan") => Some((Chunk::Month, 3)),
            b'M' if rest.starts_with("Monday") => Some((Chunk::LongWeekDay, 6)),
            b'M' if rest.starts_with("Mon") => Some((Chunk::WeekDay, 3)),
            b'M' if rest.starts_with("MST") => Some((Chunk::Tz, 3)),
            b'0' if rest.starts_with("002") => Some((Chunk::ZeroYearDay, 3)),
            b'0' => match b.get(i + 1) {
                Some(b'1') => Some((Chunk::ZeroMonth, 2)),
                Some(b'2') => Some((Chunk::ZeroDay, 2)),
                Some(b'3') => Some((Chunk::ZeroHour12, 2)),
                Some(b'4') => Some((Chunk::ZeroMinute, 2)),
                Some(b'5') => Some((Chunk::ZeroSecond, 2)),
                Some(b'6') => Some((Chunk::Year, 2)),
                _ => None,
            },
            b'1' if rest.starts_with("15") => Some((Chunk::Hour, 2)),
            b'1' => Some((Chunk::NumMonth, 1)),
            b'2' if rest.starts_with("2006") => Some((Chunk::LongYear, 4)),
            b'2' => Some((Chunk::Day, 1)),
            b'_' if rest.starts_with("_2") && !rest.starts_with("_2006") => Some((Chunk::UnderDay, 2)),
            b'_' if rest.starts_with("__2") => Some((Chunk::UnderYearDay, 3)),
            b'3' => Some((Chunk::Hour12, 1)),
            b'4' => Some((Chunk::Minute, 1)),
            b'5' => Some((Chunk::Second, 1)),
            b'P' if rest.starts_with("PM") => Some((Chunk::Pm, 2)),
            b'p' if rest.starts_with("pm") => Some((Chunk::PmLower, 2)),
            b'-' if rest.starts_with("-070000") => Some((Chunk::NumSecondsTz, 7)),
            b'-' if rest.starts_with("-07:00:00") => Some((Chunk::NumColonSecondsTz, 9)),
            b'-' if rest.starts_with("-0700") => Some((Chunk::NumTz, 5)),
            b'-' if rest.starts_with("-07:00") => Some((Chunk::NumColonTz, 6)),
            b'-' if rest.starts_with("-07") => Some((Chunk::NumShortTz, 3)),
            b'Z' if rest.starts_with("Z070000") => Some((Chunk::Iso8601SecondsTz, 7)),
            b'Z' if rest.starts_with("Z07:00:00") => Some((Chunk::Iso8601ColonSecondsTz, 9)),
            b'Z' if rest.starts_with("Z0700") => Some((Chunk::Iso8601Tz, 5)),
            b'Z' if rest.starts_with("Z07:00") => Some((Chunk::Iso8601ColonTz, 6)),
            b'Z' if rest.starts_with("Z07") => Some((Chunk::Iso8601ShortTz, 3)),
            c @ (b'.' | b',') if matches!(b.get(i + 1), Some(b'0' | b'9')) => {
                let digit = b[i + 1];
                let run = b[i + 1..].iter().take_while(|&&d| d == digit).count();
                let next_is_digit = b.get(i + 1 + run).is_some_and(u8::is_ascii_digit);
                (!next_is_digit)
                    .then_some((Chunk::Frac { digits: run, trim: digit == b'9', separator: c as char }, run + 1))
            }
            _ => None,
        };
        if let Some((chunk, len)) = found {
            return (&layout[..i], Some(chunk), &layout[i + len..]);
        }
    }
    (layout, None, "")
}

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const DAYS: [&str; 7] = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];

fn zone_abbreviation(t: &Zoned) -> String {
    let abbreviation = t.time_zone().to_offset_info(t.timestamp()).abbreviation().to_string();
    if abbreviation.is_empty() || abbreviation.starts_with(['+', '-']) {
        return numeric_offset(t.offset(), false, false);
    }
    abbreviation
}

fn numeric_offset(offset: Offset, colon: bool, seconds: bool) -> String {
    let secs = offset.seconds();
    let sign = if secs < 0 { '-' } else { '+' };
    let secs = secs.abs();
    let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    let sep = if colon { ":" } else { "" };
    let mut out = format!("{sign}{h:02}{sep}{m:02}");
    if seconds {
        out.push_str(&format!("{sep}{s:02}"));
    }
    out
}

/// Go's `Time.Format`.
pub(crate) fn format(t: &Zoned, layout: &str) -> String {
    let mut out = String::new();
    let mut layout = layout;
    loop {
        let (prefix, chunk, rest) = next_chunk(layout);
        out.push_str(prefix);
        let Some(chunk) = chunk else { break };
        layout = rest;
        let hour12 = match t.hour() % 12 {
            0 => 12,
            h => h,
        };
        let offset = t.offset();
        match chunk {
            Chunk::LongMonth => out.push_str(MONTHS[t.month() as usize - 1]),
            Chunk::Month => out.push_str(&MONTHS[t.month() as usize - 1][..3]),
            Chunk::NumMonth => out.push_str(&t.month().to_string()),
            Chunk::ZeroMonth => out.push_str(&format!("{:02}", t.month())),
            Chunk::LongWeekDay => out.push_str(DAYS[t.weekday().to_sunday_zero_offset() as usize]),
            Chunk::WeekDay => out.push_str(&DAYS[t.weekday().to_sunday_zero_offset() as usize][..3]),
            Chunk::Day => out.push_str(&t.day().to_string()),
            Chunk::UnderDay => out.push_str(&format!("{:>2}", t.day())),
            Chunk::ZeroDay => out.push_str(&format!("{:02}", t.day())),
            Chunk::UnderYearDay => out.push_str(&format!("{:>3}", t.day_of_year())),
            Chunk::ZeroYearDay => out.push_str(&format!("{:03}", t.day_of_year())),
            Chunk::Hour => out.push_str(&format!("{:02}", t.hour())),
            Chunk::Hour12 => out.push_str(&hour12.to_string()),
            Chunk::ZeroHour12 => out.push_str(&format!("{hour12:02}")),
            Chunk::Minute => out.push_str(&t.minute().to_string()),
            Chunk::ZeroMinute => out.push_str(&format!("{:02}", t.minute())),
            Chunk::Second => out.push_str(&t.second().to_string()),
            Chunk::ZeroSecond => out.push_str(&format!("{:02}", t.second())),
            Chunk::LongYear => out.push_str(&format!("{:04}", t.year())),
            Chunk::Year => out.push_str(&format!("{:02}", t.year().rem_euclid(100))),
            Chunk::Pm => out.push_str(if t.hour() >= 12 { "PM" } else { "AM" }),
            Chunk::PmLower => out.push_str(if t.hour() >= 12 { "pm" } else { "am" }),
            Chunk::Tz => out.push_str(&zone_abbreviation(t)),
            Chunk::Iso8601Tz
            | Chunk::Iso8601SecondsTz
            | Chunk::Iso8601ShortTz
            | Chunk::Iso8601ColonTz
            | Chunk::Iso8601ColonSecondsTz
                if offset.seconds() == 0 =>
            {
                out.push('Z')
            }
            Chunk::Iso8601Tz | Chunk::NumTz => out.push_str(&numeric_offset(offset, false, false)),
            Chunk::Iso8601SecondsTz | Chunk::NumSecondsTz => out.push_str(&numeric_offset(offset, false, true)),
            Chunk::Iso8601ShortTz | Chunk::NumShortTz => out.push_str(&numeric_offset(offset, false, false)[..3]),
            Chunk::Iso8601ColonTz | Chunk::NumColonTz => out.push_str(&numeric_offset(offset, true, false)),
            Chunk::Iso8601ColonSecondsTz | Chunk::NumColonSecondsTz => {
                out.push_str(&numeric_offset(offset, true, true))
            }
            Chunk::Frac { digits, trim, separator } => {
                let nanos = format!("{:09}", t.subsec_nanosecond());
                let mut frac = nanos[..digits.min(9)].to_string();
                if trim {
                    frac = frac.trim_end_matches('0').to_string();
                    if frac.is_empty() {
                        continue;
                    }
                }
                out.push(separator);
                out.push_str(&frac);
            }
        }
    }
    out
}

/// Go's `time.ParseInLocation`, for the layout elements charts use.
pub(crate) fn parse(value: &str, layout: &str, location: TimeZone) -> Result<Zoned, String> {
    let error = |elem: &str, rest: &str| {
        format!(
            "parsing time {} as {}: cannot parse {} as {}",
            crate::strconv::quote(value, false),
            crate::strconv::quote(layout, false),
            crate::strconv::quote(rest, false),
            crate::strconv::quote(elem, false)
        )
    };
    let (mut year, mut month, mut day, mut hour, mut minute, mut second, mut nanos) =
        (1i16, 1i8, 1i8, 0i8, 0i8, 0i8, 0i32);
    let mut pm: Option<bool> = None;
    let mut offset: Option<i32> = None;
    let mut layout_rest = layout;
    let mut v = value;
    let number = |v: &str, min: usize, max: usize| -> Option<(i64, usize)> {
        let len = v.bytes().take(max).take_while(u8::is_ascii_digit).count();
        if len < min {
            return None;
        }
        v[..len].parse().ok().map(|n| (n, len))
    };
    loop {
        let (prefix, chunk, rest) = next_chunk(layout_rest);
        let elem = &layout_rest[prefix.len()..layout_rest.len() - rest.len()];
        v = v.strip_prefix(prefix).ok_or_else(|| error(prefix, v))?;
        let Some(chunk) = chunk else {
            if !v.is_empty() {
                return Err(format!(
                    "parsing time {}: extra text: {}",
                    crate::strconv::quote(value, false),
                    crate::strconv::quote(v, false)
                ));
            }
            break;
        };
        layout_rest = rest;
        let fail = || error(elem, v);
        let take = |v: &mut &str, min: usize, max: usize| -> Result<i64, String> {
            let (n, len) = number(v, min, max).ok_or_else(fail)?;
            *v = &v[len..];
            Ok(n)
        };
        match chunk {
            Chunk::LongYear => year = take(&mut v, 4, 4)? as i16,
            Chunk::Year => {
                let y = take(&mut v, 2, 2)?;
                year = if y >= 69 { 1900 + y } else { 2000 + y } as i16;
            }
            Chunk::ZeroMonth => month = take(&mut v, 2, 2)? as i8,
            Chunk::NumMonth => month = take(&mut v, 1, 2)? as i8,
            Chunk::LongMonth | Chunk::Month => {
                let found = MONTHS.iter().enumerate().find_map(|(i, name)| {
                    let name = if chunk == Chunk::Month { &name[..3] } else { name };
                    v.get(..name.len()).filter(|p| p.eq_ignore_ascii_case(name)).map(|_| (i, name.len()))
                });
                let (i, len) = found.ok_or_else(fail)?;
                month = i as i8 + 1;
                v = &v[len..];
            }
            Chunk::LongWeekDay | Chunk::WeekDay => {
                let found = DAYS.iter().find_map(|name| {
                    let name = if chunk == Chunk::WeekDay { &name[..3] } else { name };
                    v.get(..name.len()).filter(|p| p.eq_ignore_ascii_case(name)).map(|_| name.len())
                });
                v = &v[found.ok_or_else(fail)?..];
            }
            Chunk::ZeroDay => day = take(&mut v, 2, 2)? as i8,
            Chunk::Day => day = take(&mut v, 1, 2)? as i8,
            Chunk::UnderDay => {
                v = v.strip_prefix(' ').unwrap_or(v);
                day = take(&mut v, 1, 2)? as i8;
            }
            Chunk::Hour => hour = take(&mut v, 2, 2)? as i8,
            Chunk::Hour12 => hour = take(&mut v, 1, 2)? as i8,
            Chunk::ZeroHour12 => hour = take(&mut v, 2, 2)? as i8,
            Chunk::Minute => minute = take(&mut v, 1, 2)? as i8,
            Chunk::ZeroMinute => minute = take(&mut v, 2, 2)? as i8,
            Chunk::Second => second = take(&mut v, 1, 2)? as i8,
            Chunk::ZeroSecond => second = take(&mut v, 2, 2)? as i8,
            Chunk::UnderYearDay | Chunk::ZeroYearDay => {
                take(&mut v, 1, 3)?;
            }
            Chunk::Pm | Chunk::PmLower => {
                let p = v.get(..2).ok_or_else(fail)?.to_ascii_uppercase();
                pm = Some(match p.as_str() {
                    "PM" => true,
                    "AM" => false,
                    _ => return Err(fail()),
                });
                v = &v[2..];
            }
            Chunk::Frac { digits, trim, .. } => {
                if let Some(rest) = v.strip_prefix(['.', ',']) {
                    let len = rest.bytes().take_while(u8::is_ascii_digit).count();
                    if !trim && len != digits {
                        return Err(fail());
                    }
                    let frac = format!("{:0<9}", &rest[..len.min(9)]);
                    nanos = frac.parse().map_err(|_| fail())?;
                    v = &rest[len..];
                } else if !trim {
                    return Err(fail());
                }
            }
            Chunk::Tz => {
                let len = v.bytes().take_while(u8::is_ascii_uppercase).count();
                if len < 3 {
                    return Err(fail());
                }
                if matches!(&v[..len], "UTC" | "GMT" | "Z") {
                    offset = Some(0);
                }
                v = &v[len..];
            }
            _ => {
                if matches!(
                    chunk,
                    Chunk::Iso8601Tz
                        | Chunk::Iso8601SecondsTz
                        | Chunk::Iso8601ShortTz
                        | Chunk::Iso8601ColonTz
                        | Chunk::Iso8601ColonSecondsTz
                ) && let Some(rest) = v.strip_prefix('Z')
                {
                    offset = Some(0);
                    v = rest;
                    continue;
                }
                let sign = match v.as_bytes().first() {
                    Some(b'+') => 1,
                    Some(b'-') => -1,
                    _ => return Err(fail()),
                };
                v = &v[1..];
                let h = take(&mut v, 2, 2)?;
                let colon = matches!(
                    chunk,
                    Chunk::NumColonTz | Chunk::NumColonSecondsTz | Chunk::Iso8601ColonTz | Chunk::Iso8601ColonSecondsTz
                );
                let short = matches!(chunk, Chunk::NumShortTz | Chunk::Iso8601ShortTz);
                let with_seconds = matches!(
                    chunk,
                    Chunk::NumSecondsTz
                        | Chunk::NumColonSecondsTz
                        | Chunk::Iso8601SecondsTz
                        | Chunk::Iso8601ColonSecondsTz
                );
                let part = |v: &mut &str| -> Result<i64, String> {
                    if colon {
                        *v = v.strip_prefix(':').ok_or_else(fail)?;
                    }
                    take(v, 2, 2)
                };
                let m = if short { 0 } else { part(&mut v)? };
                let s = if with_seconds { part(&mut v)? } else { 0 };
                offset = Some(sign * (h * 3600 + m * 60 + s) as i32);
            }
        }
    }
    match pm {
        Some(true) if hour < 12 => hour += 12,
        Some(false) if hour == 12 => hour = 0,
        _ => {}
    }
    let civil = jiff::civil::DateTime::new(year, month, day, hour, minute, second, nanos)
        .map_err(|_| format!("parsing time {}: day out of range", crate::strconv::quote(value, false)))?;
    let zone = match offset {
        Some(secs) => TimeZone::fixed(Offset::from_seconds(secs).map_err(|e| e.to_string())?),
        None => location,
    };
    civil.to_zoned(zone).map_err(|e| e.to_string())
}
