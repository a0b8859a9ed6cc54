//! Sprig's numeric functions (numeric.go, with spf13/cast conversions and shopspring/decimal
//! arithmetic for the `…f` functions).

use rand::Rng;

use super::{Registry, int_arg, text};
use crate::error::FuncError;
use crate::strconv::parse_go_int;
use crate::template::value::indirect;
use crate::template::value::{Type, Value};

pub(super) fn register(r: &mut Registry) {
    use Type::Any;
    let (int, int64, f64t) = (Type::INT, Type::INT64, Type::Float64);
    r.add("int", &[Any], int.clone(), |a| Ok(Value::int(to_int64(&a[0]))));
    r.add("int64", &[Any], int64.clone(), |a| Ok(Value::int64(to_int64(&a[0]))));
    r.add("float64", &[Any], f64t.clone(), |a| Ok(Value::Float(to_float64(&a[0]))));
    r.add("atoi", &[Type::String], int.clone(), |a| Ok(Value::int(atoi(text(&a[0])))));
    r.add("toDecimal", &[Any], int64.clone(), |a| {
        let text = crate::template::fmt::sprint(std::slice::from_ref(&a[0]));
        Ok(Value::int64(i64::from_str_radix(text.strip_prefix('+').unwrap_or(&text), 8).unwrap_or(0)))
    });
    r.add("add1", &[Any], int64.clone(), |a| Ok(Value::int64(to_int64(&a[0]).wrapping_add(1))));
    r.variadic("add", &[], Any, int64.clone(), |a| {
        Ok(Value::int64(a.iter().fold(0i64, |sum, v| sum.wrapping_add(to_int64(v)))))
    });
    r.add("sub", &[Any, Any], int64.clone(), |a| Ok(Value::int64(to_int64(&a[0]).wrapping_sub(to_int64(&a[1])))));
    r.add("div", &[Any, Any], int64.clone(), |a| {
        let d = to_int64(&a[1]);
        if d == 0 {
            return Err(FuncError::new("runtime error: integer divide by zero"));
        }
        Ok(Value::int64(to_int64(&a[0]).wrapping_div(d)))
    });
    r.add("mod", &[Any, Any], int64.clone(), |a| {
        let d = to_int64(&a[1]);
        if d == 0 {
            return Err(FuncError::new("runtime error: integer divide by zero"));
        }
        Ok(Value::int64(to_int64(&a[0]).wrapping_rem(d)))
    });
    r.variadic("mul", &[Any], Any, int64.clone(), |a| {
        Ok(Value::int64(a[1..].iter().fold(to_int64(&a[0]), |p, v| p.wrapping_mul(to_int64(v)))))
    });
    r.add("randInt", &[int.clone(), int.clone()], int.clone(), |a| {
        let (min, max) = (int_arg(&a[0]), int_arg(&a[1]));
        if max - min <= 0 {
            return Err(FuncError::new("invalid argument to Intn"));
        }
        Ok(Value::int(rand::rng().random_range(min..max)))
    });
    r.variadic("max", &[Any], Any, int64.clone(), |a| {
        Ok(Value::int64(a[1..].iter().map(to_int64).fold(to_int64(&a[0]), i64::max)))
    });
    r.alias("biggest", "max");
    r.variadic("min", &[Any], Any, int64.clone(), |a| {
        Ok(Value::int64(a[1..].iter().map(to_int64).fold(to_int64(&a[0]), i64::min)))
    });
    r.variadic("maxf", &[Any], Any, f64t.clone(), |a| {
        Ok(Value::Float(a[1..].iter().map(to_float64).fold(to_float64(&a[0]), go_max)))
    });
    r.variadic("minf", &[Any], Any, f64t.clone(), |a| {
        Ok(Value::Float(a[1..].iter().map(to_float64).fold(to_float64(&a[0]), go_min)))
    });
    r.add("add1f", &[Any], f64t.clone(), |a| decimal_op(&a[0], &[Value::int(1)], Op::Add));
    r.variadic("addf", &[], Any, f64t.clone(), |a| decimal_op(&Value::Float(0.0), &a, Op::Add));
    r.variadic("subf", &[Any], Any, f64t.clone(), |a| decimal_op(&a[0], &a[1..], Op::Sub));
    r.variadic("mulf", &[Any], Any, f64t.clone(), |a| decimal_op(&a[0], &a[1..], Op::Mul));
    r.variadic("divf", &[Any], Any, f64t.clone(), |a| decimal_op(&a[0], &a[1..], Op::Div));
    r.add("floor", &[Any], f64t.clone(), |a| Ok(Value::Float(to_float64(&a[0]).floor())));
    r.add("ceil", &[Any], f64t.clone(), |a| Ok(Value::Float(to_float64(&a[0]).ceil())));
    r.variadic("round", &[Any, int.clone()], f64t.clone(), f64t.clone(), |a| {
        let round_on = a.get(2).map_or(0.5, to_float64);
        let pow = 10f64.powf(int_arg(&a[1]) as f64);
        let digit = pow * to_float64(&a[0]);
        let rounded = if digit.fract() >= round_on { digit.ceil() } else { digit.floor() };
        Ok(Value::Float(rounded / pow))
    });
    r.add("until", &[Type::INT], Type::Slice(int.clone().into()), |a| {
        let count = int_arg(&a[0]);
        Ok(ints(until_step(0, count, if count < 0 { -1 } else { 1 })))
    });
    r.add("untilStep", &[int.clone(), int.clone(), int.clone()], Type::Slice(int.clone().into()), |a| {
        Ok(ints(until_step(int_arg(&a[0]), int_arg(&a[1]), int_arg(&a[2]))))
    });
    r.variadic("seq", &[], int.clone(), Type::String, |a| {
        let p: Vec<i64> = a.iter().map(int_arg).collect();
        let seq = match p.as_slice() {
            [end] => {
                let inc = if *end < 1 { -1 } else { 1 };
                until_step(1, end + inc, inc)
            }
            [start, end] => {
                let step = if end < start { -1 } else { 1 };
                until_step(*start, end + step, step)
            }
            [start, step, end] => {
                let inc = if end < start { -1 } else { 1 };
                if end < start && *step > 0 { Vec::new() } else { until_step(*start, end + inc, *step) }
            }
            _ => Vec::new(),
        };
        Ok(Value::from(seq.iter().map(i64::to_string).collect::<Vec<_>>().join(" ")))
    });
}

fn ints(items: Vec<i64>) -> Value {
    Value::typed_list(Type::INT, items.into_iter().map(Value::int).collect())
}

fn until_step(start: i64, stop: i64, step: i64) -> Vec<i64> {
    let mut v = Vec::new();
    if stop < start {
        if step >= 0 {
            return v;
        }
        let mut i = start;
        while i > stop {
            v.push(i);
            i += step;
        }
        return v;
    }
    if step <= 0 {
        return v;
    }
    let mut i = start;
    while i < stop {
        v.push(i);
        i += step;
    }
    v
}

fn go_max(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() { f64::NAN } else { a.max(b) }
}

fn go_min(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() { f64::NAN } else { a.min(b) }
}

/// Go's `strconv.Atoi`, 0 on error as sprig's `atoi` has it.
fn atoi(s: &str) -> i64 {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return 0;
    }
    s.parse().unwrap_or(0)
}

/// cast's `trimZeroDecimal`: "10.00" is "10", "10.50" stays.
fn trim_zero_decimal(s: &str) -> &str {
    let mut found_zero = false;
    for (i, c) in s.char_indices().rev() {
        match c {
            '.' if found_zero => return &s[..i],
            '0' => found_zero = true,
            _ => return s,
        }
    }
    s
}

/// spf13/cast's `ToInt64`: numbers truncated, strings parsed (Go syntax, base prefixes), bools
/// 1 or 0, anything else 0.
pub(crate) fn to_int64(v: &Value) -> i64 {
    match indirect(v).0 {
        Value::Int(i, _) => i,
        Value::Uint(u, _) => u as i64,
        Value::Float(f) => f as i64,
        Value::Bool(b) => i64::from(b),
        Value::String(s) => match parse_go_int(trim_zero_decimal(&s)) {
            Some((negative, magnitude)) => {
                let m = magnitude as i64;
                if negative { m.wrapping_neg() } else { m }
            }
            None => 0,
        },
        _ => 0,
    }
}

/// spf13/cast's `ToFloat64`.
pub(crate) fn to_float64(v: &Value) -> f64 {
    match indirect(v).0 {
        Value::Int(i, _) => i as f64,
        Value::Uint(u, _) => u as f64,
        Value::Float(f) => f,
        Value::Bool(b) => f64::from(u8::from(b)),
        Value::String(s) => crate::strconv::parse_go_float(&s).unwrap_or(0.0),
        _ => 0.0,
    }
}

/// A decimal number `mantissa × 10^exponent`, as shopspring/decimal computes the `…f`
/// functions: exact sums and products of the floats' shortest decimal forms, quotients
/// rounded to 16 places.
#[derive(Clone, Copy)]
struct Decimal {
    mantissa: i128,
    exponent: i32,
}

const DIVISION_PRECISION: i32 = 16;

impl Decimal {
    fn from_f64(f: f64) -> Option<Decimal> {
        if !f.is_finite() {
            return None;
        }
        let s = format!("{f:e}");
        let (mantissa, exponent) = s.split_once('e')?;
        let exponent: i32 = exponent.parse().ok()?;
        let fraction = mantissa.split_once('.').map_or(0, |(_, frac)| frac.len() as i32);
        let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
        Some(Decimal { mantissa: digits.parse().ok()?, exponent: exponent - fraction })
    }

    fn rescale(self, exponent: i32) -> Option<i128> {
        let shift = u32::try_from(self.exponent - exponent).ok()?;
        self.mantissa.checked_mul(10i128.checked_pow(shift)?)
    }

    fn aligned(a: Decimal, b: Decimal) -> Option<(i128, i128, i32)> {
        let e = a.exponent.min(b.exponent);
        Some((a.rescale(e)?, b.rescale(e)?, e))
    }

    fn add(a: Decimal, b: Decimal) -> Result<Option<Decimal>, FuncError> {
        Ok(Decimal::aligned(a, b).and_then(|(x, y, e)| Some(Decimal { mantissa: x.checked_add(y)?, exponent: e })))
    }

    fn sub(a: Decimal, b: Decimal) -> Result<Option<Decimal>, FuncError> {
        Ok(Decimal::aligned(a, b).and_then(|(x, y, e)| Some(Decimal { mantissa: x.checked_sub(y)?, exponent: e })))
    }

    fn mul(a: Decimal, b: Decimal) -> Result<Option<Decimal>, FuncError> {
        Ok(a.mantissa.checked_mul(b.mantissa).map(|m| Decimal { mantissa: m, exponent: a.exponent + b.exponent }))
    }

    fn div(a: Decimal, b: Decimal) -> Result<Option<Decimal>, FuncError> {
        if b.mantissa == 0 {
            return Err(FuncError::new("decimal division by 0"));
        }
        // round(a / b × 10^16), half away from zero.
        let k = a.exponent - b.exponent + DIVISION_PRECISION;
        let (num, den) = if k >= 0 {
            match a.mantissa.checked_mul(10i128.checked_pow(k as u32).unwrap_or(0)) {
                Some(n) if k < 38 => (n, b.mantissa),
                _ => return Ok(None),
            }
        } else {
            match b.mantissa.checked_mul(10i128.checked_pow((-k) as u32).unwrap_or(0)) {
                Some(d) if -k < 38 => (a.mantissa, d),
                _ => return Ok(None),
            }
        };
        let (q, rem) = (num / den, num % den);
        let round_away = 2 * rem.unsigned_abs() >= den.unsigned_abs();
        let q = if round_away { q + if (num < 0) != (den < 0) { -1 } else { 1 } } else { q };
        Ok(Some(Decimal { mantissa: q, exponent: -DIVISION_PRECISION }))
    }

    fn to_f64(self) -> f64 {
        format!("{}e{}", self.mantissa, self.exponent).parse().unwrap_or(f64::NAN)
    }
}

/// The arithmetic of the `…f` functions.
#[derive(Clone, Copy)]
enum Op {
    Add,
    Sub,
    Mul,
    Div,
}

impl Op {
    fn decimal(self, a: Decimal, b: Decimal) -> Result<Option<Decimal>, FuncError> {
        match self {
            Op::Add => Decimal::add(a, b),
            Op::Sub => Decimal::sub(a, b),
            Op::Mul => Decimal::mul(a, b),
            Op::Div => Decimal::div(a, b),
        }
    }

    fn float(self, a: f64, b: f64) -> f64 {
        match self {
            Op::Add => a + b,
            Op::Sub => a - b,
            Op::Mul => a * b,
            Op::Div => a / b,
        }
    }
}

/// Sprig's `execDecimalOp`: folds `op` over the values as decimals; falls back to float
/// arithmetic where a value does not fit the decimal's range.
fn decimal_op(first: &Value, rest: &[Value], op: Op) -> Result<Value, FuncError> {
    let mut acc = to_float64(first);
    let mut dec = Decimal::from_f64(acc);
    for v in rest {
        let x = to_float64(v);
        dec = match (dec, Decimal::from_f64(x)) {
            (Some(a), Some(b)) => op.decimal(a, b)?,
            _ => None,
        };
        acc = match dec {
            Some(d) => d.to_f64(),
            None => op.float(acc, x),
        };
    }
    Ok(Value::Float(acc))
}
