//! apimachinery's `resource.Quantity.String()`: the canonical form that
//! printers show for capacities, quota usage and metric values ("1024Mi"
//! prints as "1Gi", "0.5" as "500m", "1000m" as "1").

/// The canonical form of the quantity `s`, or `s` unchanged when it does
/// not parse (or is too large for this exact, nano-precision arithmetic).
pub fn canonical(s: &str) -> String {
    parse(s).map_or_else(|| s.to_string(), |(nanos, format)| format_canonical(nanos, format))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Format {
    BinarySI,
    DecimalSI,
    DecimalExponent,
}

const NANO: i128 = 1_000_000_000;

/// Parses `s` into its value in units of 1e-9 (rounded away from zero, as
/// `ParseQuantity` rounds to nano precision) and its format.
fn parse(s: &str) -> Option<(i128, Format)> {
    let (negative, rest) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let num_end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
    let (number, suffix) = rest.split_at(num_end);
    let (whole, frac) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && frac.is_empty() || frac.contains('.') {
        return None;
    }
    let (format, base2, exp10): (Format, u32, i32) = match suffix {
        "" => (Format::DecimalSI, 0, 0),
        "n" => (Format::DecimalSI, 0, -9),
        "u" => (Format::DecimalSI, 0, -6),
        "m" => (Format::DecimalSI, 0, -3),
        "k" => (Format::DecimalSI, 0, 3),
        "M" => (Format::DecimalSI, 0, 6),
        "G" => (Format::DecimalSI, 0, 9),
        "T" => (Format::DecimalSI, 0, 12),
        "P" => (Format::DecimalSI, 0, 15),
        "E" => (Format::DecimalSI, 0, 18),
        "Ki" => (Format::BinarySI, 10, 0),
        "Mi" => (Format::BinarySI, 20, 0),
        "Gi" => (Format::BinarySI, 30, 0),
        "Ti" => (Format::BinarySI, 40, 0),
        "Pi" => (Format::BinarySI, 50, 0),
        "Ei" => (Format::BinarySI, 60, 0),
        e if e.starts_with(['e', 'E']) => (Format::DecimalExponent, 0, e[1..].parse().ok()?),
        _ => return None,
    };
    let digits = format!("{whole}{frac}");
    let mantissa: i128 = if digits.is_empty() { 0 } else { digits.parse().ok()? };
    let mantissa = mantissa.checked_mul(1i128.checked_shl(base2)?)?;
    // value = mantissa * 10^(exp10 - frac.len()), in nanos: * 10^9.
    let shift = exp10 - frac.len() as i32 + 9;
    let nanos = if shift >= 0 {
        mantissa.checked_mul(10i128.checked_pow(shift as u32)?)?
    } else {
        let div = 10i128.checked_pow(shift.unsigned_abs())?;
        (mantissa + div - 1) / div
    };
    Some((if negative { -nanos } else { nanos }, format))
}

/// `value / factor^n` for the largest `n`, and `n`.
fn remove_factors(mut value: i128, factor: i128) -> (i128, i32) {
    let mut n = 0;
    while value != 0 && value % factor == 0 {
        value /= factor;
        n += 1;
    }
    (value, n)
}

/// `CanonicalizeBytes`: BinarySI for whole values of at least 1024,
/// otherwise a decimal mantissa with a power-of-1000 suffix.
fn format_canonical(nanos: i128, format: Format) -> String {
    if nanos == 0 {
        return "0".into();
    }
    if format == Format::BinarySI && nanos.abs() >= 1024 * NANO && nanos % NANO == 0 {
        let (amount, exp) = remove_factors(nanos / NANO, 1024);
        let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"].get(exp as usize).copied().unwrap_or("");
        return format!("{amount}{suffix}");
    }
    let (mut amount, removed) = remove_factors(nanos, 10);
    let mut exp = removed - 9;
    match exp.rem_euclid(3) {
        1 => {
            amount *= 10;
            exp -= 1;
        }
        2 => {
            amount *= 100;
            exp -= 2;
        }
        _ => {}
    }
    let suffix = match (format, exp) {
        (_, 0) => String::new(),
        (Format::DecimalExponent, e) => format!("e{e}"),
        (_, -9) => "n".into(),
        (_, -6) => "u".into(),
        (_, -3) => "m".into(),
        (_, 3) => "k".into(),
        (_, 6) => "M".into(),
        (_, 9) => "G".into(),
        (_, 12) => "T".into(),
        (_, 15) => "P".into(),
        (_, 18) => "E".into(),
        (_, e) => format!("e{e}"),
    };
    format!("{amount}{suffix}")
}

#[cfg(test)]
mod tests {
    use super::canonical;

    #[test]
    fn quantities_print_canonically() {
        for (input, want) in [
            ("1Gi", "1Gi"),
            ("1024Mi", "1Gi"),
            ("1.5Gi", "1536Mi"),
            ("512", "512"),
            ("100Ki", "100Ki"),
            ("0.5", "500m"),
            ("1000m", "1"),
            ("1500", "1500"),
            ("2000", "2k"),
            ("12e2", "1200"),
            ("1e3", "1e3"),
            ("0", "0"),
            ("0.1Ki", "102400m"),
            ("0.0000000001", "1n"),
            ("-250m", "-250m"),
            ("bogus", "bogus"),
        ] {
            assert_eq!(canonical(input), want, "{input}");
        }
    }
}
