//! Kubernetes resource quantities (`500m`, `1.5`, `128Mi`, `1e3`, `2G`), parsed exactly into
//! billionths, so that sums and comparisons (QoS classes, requests against limits) are those
//! upstream's `resource.Quantity` makes.

/// Why a quantity could not be read (upstream's message).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")]
pub struct QuantityError;

/// A quantity in billionths of its unit (`1` is 1,000,000,000; `1m` is 1,000,000).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Quantity(pub i128);

impl Quantity {
    /// Parses a quantity as upstream does (sign, decimal number, then a binary suffix `Ki`…`Ei`, a
    /// decimal suffix `n`, `u`, `m`, `k`, `M`…`E`, or an exponent `e3`/`E-2`).
    pub fn parse(text: &str) -> Result<Self, QuantityError> {
        let split = text
            .char_indices()
            .find(|(i, c)| !(c.is_ascii_digit() || *c == '.' || (*i == 0 && (*c == '+' || *c == '-'))))
            .map_or(text.len(), |(i, _)| i);
        let (number, suffix) = text.split_at(split);
        let (negative, digits) = match number.as_bytes().first() {
            Some(b'-') => (true, &number[1..]),
            Some(b'+') => (false, &number[1..]),
            _ => (false, number),
        };
        let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
        if whole.is_empty() && fraction.is_empty() || fraction.contains('.') {
            return Err(QuantityError);
        }
        let (binary, decimal_exponent): (i128, i32) = match suffix {
            "" => (1, 0),
            "Ki" => (1 << 10, 0),
            "Mi" => (1 << 20, 0),
            "Gi" => (1 << 30, 0),
            "Ti" => (1 << 40, 0),
            "Pi" => (1 << 50, 0),
            "Ei" => (1 << 60, 0),
            "n" => (1, -9),
            "u" => (1, -6),
            "m" => (1, -3),
            "k" => (1, 3),
            "M" => (1, 6),
            "G" => (1, 9),
            "T" => (1, 12),
            "P" => (1, 15),
            "E" => (1, 18),
            exponent => {
                let rest = exponent.strip_prefix(['e', 'E']).ok_or(QuantityError)?;
                (1, rest.parse::<i32>().map_err(|_| QuantityError)?)
            }
        };
        // digits × 10^(exponent − fraction length) × binary, in billionths.
        let mantissa: i128 = format!("{whole}{fraction}").parse().map_err(|_| QuantityError)?;
        let scale = decimal_exponent - fraction.len() as i32 + 9;
        let value = if scale >= 0 {
            mantissa.checked_mul(10i128.checked_pow(scale as u32).ok_or(QuantityError)?).ok_or(QuantityError)?
        } else {
            // Below a billionth rounds up, as upstream rounds to its smallest scale.
            let divisor = 10i128.checked_pow((-scale) as u32).ok_or(QuantityError)?;
            (mantissa + divisor - 1) / divisor
        };
        let value = value.checked_mul(binary).ok_or(QuantityError)?;
        Ok(Quantity(if negative { -value } else { value }))
    }

    /// Whether the quantity is more than zero.
    pub fn is_positive(self) -> bool {
        self.0 > 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NANO: i128 = 1_000_000_000;

    #[test]
    fn quantities_parse_exactly() {
        let cases = [
            ("1", NANO),
            ("500m", NANO / 2),
            ("0.5", NANO / 2),
            (".25", NANO / 4),
            ("2k", 2000 * NANO),
            ("128Mi", 128 * (1 << 20) * NANO),
            ("1e3", 1000 * NANO),
            ("1E-3", NANO / 1000),
            ("-2", -2 * NANO),
            ("100n", 100),
            ("1Ei", (1i128 << 60) * NANO),
        ];
        for (text, billionths) in cases {
            assert_eq!(Quantity::parse(text), Ok(Quantity(billionths)), "{text}");
        }
        for bad in ["", "abc", "1.2.3", "1Zi", "m", "1e"] {
            assert_eq!(Quantity::parse(bad), Err(QuantityError), "{bad}");
        }
        assert_eq!(Quantity::parse("1000m"), Quantity::parse("1"));
    }
}
