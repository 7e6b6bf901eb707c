//! The canonical text of resource quantities (`resource.Quantity`), as
//! upstream writes every quantity it has decoded: `0.5` reads back as
//! `500m`, `1000m` as `1`, `1024Mi` as `1Gi`, `1.5Gi` as `1536Mi`.
//!
//! Upstream keeps the format the client used — binary suffixes (`Ki` …
//! `Ei`), decimal suffixes (`n` … `E`, or none), or a decimal exponent
//! (`1e3`) — and writes the value with the largest unit that leaves an
//! integer (decimal exponents in steps of 3). A binary quantity below 1024
//! or with a fraction is written in decimal units instead. Precision
//! finer than nano units is rounded up (away from zero), as
//! `ParseQuantity` does.

use serde_json::Value;

/// The quantity `text` canonicalized, or `None` when it is not a quantity
/// (upstream would refuse it; validation reports that).
pub fn canonical(text: &str) -> Option<String> {
    format(parse(text)?)
}

/// Canonicalizes `value` in place if it is a quantity string.
pub fn canonicalize(value: &mut Value) {
    if let Some(c) = value.as_str().and_then(canonical) {
        *value = Value::String(c);
    }
}

/// Canonicalizes every value of the map at `value` (a `ResourceList`:
/// `{cpu: "0.5", memory: "1024Mi"}`).
pub fn canonicalize_list(value: Option<&mut Value>) {
    if let Some(m) = value.and_then(Value::as_object_mut) {
        m.values_mut().for_each(canonicalize);
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    BinarySi,
    DecimalSi,
    DecimalExponent,
}

/// A parsed quantity: `negative`, `mantissa × 10^exponent`, in `format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Quantity {
    negative: bool,
    mantissa: u128,
    exponent: i32,
    format: Format,
}

const BINARY: [(&str, u32); 6] = [("Ki", 1), ("Mi", 2), ("Gi", 3), ("Ti", 4), ("Pi", 5), ("Ei", 6)];
const DECIMAL: [(&str, i32); 10] =
    [("n", -9), ("u", -6), ("m", -3), ("", 0), ("k", 3), ("M", 6), ("G", 9), ("T", 12), ("P", 15), ("E", 18)];

fn parse(text: &str) -> Option<Quantity> {
    let (negative, rest) = match text.as_bytes().first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    let digits_end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
    let (number, suffix) = rest.split_at(digits_end);
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && fraction.is_empty() || fraction.contains('.') {
        return None;
    }
    let digits = format!("{whole}{fraction}");
    let digits = digits.trim_start_matches('0');
    // More digits than fit are not quantities anyone writes; leave them.
    if digits.len() > 30 {
        return None;
    }
    let mut mantissa: u128 = if digits.is_empty() { 0 } else { digits.parse().ok()? };
    let mut exponent = -(fraction.len() as i32);
    let format = if let Some((_, power)) = BINARY.iter().find(|(s, _)| *s == suffix) {
        mantissa = mantissa.checked_mul(1024u128.checked_pow(*power)?)?;
        Format::BinarySi
    } else if let Some((_, e)) = DECIMAL.iter().find(|(s, _)| *s == suffix) {
        exponent += e;
        Format::DecimalSi
    } else if let Some(e) = suffix.strip_prefix(['e', 'E']) {
        if e.is_empty() || !e.trim_start_matches(['+', '-']).bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        exponent += e.parse::<i32>().ok()?;
        Format::DecimalExponent
    } else {
        return None;
    };
    // Round up (away from zero) to nano precision.
    if exponent < -9 {
        let drop = (-9 - exponent) as u32;
        let divisor = 10u128.checked_pow(drop)?;
        mantissa = mantissa.div_ceil(divisor);
        exponent = -9;
    }
    while mantissa != 0 && mantissa % 10 == 0 {
        mantissa /= 10;
        exponent += 1;
    }
    Some(Quantity { negative: negative && mantissa != 0, mantissa, exponent, format })
}

/// `None` when the value does not fit the arithmetic (absurd exponents).
fn format(q: Quantity) -> Option<String> {
    if q.mantissa == 0 {
        return Some("0".into());
    }
    let sign = if q.negative { "-" } else { "" };
    if q.format == Format::BinarySi && q.exponent >= 0 {
        if let Some(value) = 10u128.checked_pow(q.exponent as u32).and_then(|p| q.mantissa.checked_mul(p)) {
            if value >= 1024 {
                let mut unit = "";
                let mut v = value;
                for (suffix, _) in BINARY {
                    if v % 1024 != 0 {
                        break;
                    }
                    v /= 1024;
                    unit = suffix;
                }
                return Some(format!("{sign}{v}{unit}"));
            }
        }
    }
    // Decimal units: the exponent rounded down to a multiple of 3 (at most
    // 18, at least -9), the rest moved into the mantissa.
    let exp3 = q.exponent.div_euclid(3) * 3;
    let exp3 = exp3.clamp(-9, 18);
    let mantissa = q.mantissa.checked_mul(10u128.checked_pow((q.exponent - exp3) as u32)?)?;
    Some(match q.format {
        Format::DecimalExponent if exp3 != 0 => format!("{sign}{mantissa}e{exp3}"),
        Format::DecimalExponent => format!("{sign}{mantissa}"),
        _ => {
            let unit = DECIMAL.iter().find(|(_, e)| *e == exp3).map(|(s, _)| *s).unwrap_or("");
            format!("{sign}{mantissa}{unit}")
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_forms_as_upstream_writes_them() {
        for (input, want) in [
            ("0.5", "500m"),
            ("1000m", "1"),
            ("1500m", "1500m"),
            ("1.5", "1500m"),
            ("2000", "2k"),
            ("1500", "1500"),
            ("100m", "100m"),
            ("0", "0"),
            ("0.0", "0"),
            ("1024Mi", "1Gi"),
            ("1.5Gi", "1536Mi"),
            ("1Gi", "1Gi"),
            ("512Ki", "512Ki"),
            ("1000Ki", "1000Ki"),
            ("0.5Ki", "512"),
            ("100", "100"),
            ("1e3", "1e3"),
            ("12e2", "1200"),
            ("1.5e3", "1500"),
            ("-1Gi", "-1Gi"),
            ("-0.5", "-500m"),
            ("+1", "1"),
            ("1n", "1n"),
            ("0.0000000001", "1n"),
            ("1M", "1M"),
            ("1000k", "1M"),
            ("250M", "250M"),
        ] {
            assert_eq!(canonical(input).as_deref(), Some(want), "{input}");
        }
    }

    #[test]
    fn non_quantities_are_left_alone() {
        for bad in ["", "abc", "1x", "1..5", ".", "1e", "Gi", "1 Gi", "1e99"] {
            assert_eq!(canonical(bad), None, "{bad:?}");
        }
        let mut v = serde_json::json!({"cpu": "0.5", "memory": "1024Mi", "pods": 3});
        canonicalize_list(Some(&mut v));
        assert_eq!(v, serde_json::json!({"cpu": "500m", "memory": "1Gi", "pods": 3}));
    }
}
