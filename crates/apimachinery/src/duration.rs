//! Go's `time.ParseDuration`, the duration syntax of Kubernetes flags,
//! `PodMetrics.window` and robfig/cron's `@every` schedules.
//!
//! A duration is a possibly signed sequence of decimal numbers, each with
//! an optional fraction and a unit: `300ms`, `-1.5h`, `2h45m`. Units are
//! `ns`, `us` (or `µs` U+00B5, `μs` U+03BC), `ms`, `s`, `m`, `h`; `0` alone
//! needs no unit. Go's `time.Duration` is an `int64` of nanoseconds, so
//! values beyond about ±292 years are refused, as upstream does.

use std::time::Duration;

/// Unit names and their length in nanoseconds (Go's `unitMap`).
const UNITS: [(&str, u64); 8] = [
    ("ns", 1),
    ("us", 1_000),
    ("µs", 1_000),
    ("μs", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("m", 60_000_000_000),
    ("h", 3_600_000_000_000),
];

const LIMIT: u64 = 1 << 63;

/// Parses `s` as Go's `time.ParseDuration` does, into signed nanoseconds
/// (Go's `time.Duration`, `-2^63 ..= 2^63-1`).
///
/// Errors carry Go's texts: `time: invalid duration "x"` (bad syntax or
/// out of range), `time: missing unit in duration "1"`,
/// `time: unknown unit "d" in duration "1d"`; non-ASCII and control bytes
/// in the quoted input are written as `\xNN`, as Go's `time.quote`.
pub fn parse_go_duration_nanos(s: &str) -> Result<i64, String> {
    let invalid = || format!("time: invalid duration {}", quote(s));
    let mut rest = s.as_bytes();
    let mut neg = false;
    if let Some(&c @ (b'-' | b'+')) = rest.first() {
        neg = c == b'-';
        rest = &rest[1..];
    }
    if rest == b"0" {
        return Ok(0);
    }
    if rest.is_empty() {
        return Err(invalid());
    }
    let mut total: u64 = 0;
    while !rest.is_empty() {
        if !(rest[0] == b'.' || rest[0].is_ascii_digit()) {
            return Err(invalid());
        }
        // Integer part: refused when above 2^63 (Go's leadingInt).
        let int_len = rest.iter().take_while(|c| c.is_ascii_digit()).count();
        let mut whole: u64 = 0;
        for &c in &rest[..int_len] {
            whole = whole
                .checked_mul(10)
                .and_then(|x| x.checked_add(u64::from(c - b'0')))
                .filter(|&x| x <= LIMIT)
                .ok_or_else(invalid)?;
        }
        rest = &rest[int_len..];
        // Fraction: digits past int64 precision are dropped (Go's leadingFraction).
        let mut frac: u64 = 0;
        let mut scale: f64 = 1.0;
        let mut frac_len = 0;
        if rest.first() == Some(&b'.') {
            rest = &rest[1..];
            frac_len = rest.iter().take_while(|c| c.is_ascii_digit()).count();
            let mut overflow = false;
            for &c in &rest[..frac_len] {
                if overflow {
                    continue;
                }
                match frac.checked_mul(10).map(|x| x + u64::from(c - b'0')) {
                    Some(y) if frac <= (LIMIT - 1) / 10 && y <= LIMIT => {
                        frac = y;
                        scale *= 10.0;
                    }
                    _ => overflow = true,
                }
            }
            rest = &rest[frac_len..];
        }
        if int_len == 0 && frac_len == 0 {
            return Err(invalid());
        }
        // Unit: everything up to the next digit or '.'.
        let unit_len = rest.iter().take_while(|&&c| !(c == b'.' || c.is_ascii_digit())).count();
        if unit_len == 0 {
            return Err(format!("time: missing unit in duration {}", quote(s)));
        }
        // The unit ends at an ASCII byte or the end, so it is whole UTF-8.
        let unit_name = std::str::from_utf8(&rest[..unit_len]).map_err(|_| invalid())?;
        rest = &rest[unit_len..];
        let unit = UNITS
            .iter()
            .find(|(name, _)| *name == unit_name)
            .map(|&(_, ns)| ns)
            .ok_or_else(|| format!("time: unknown unit {} in duration {}", quote(unit_name), quote(s)))?;
        if whole > LIMIT / unit {
            return Err(invalid());
        }
        let mut v = whole * unit;
        if frac > 0 {
            // f64 keeps nanosecond accuracy for fractions of an hour.
            v += (frac as f64 * (unit as f64 / scale)) as u64;
            if v > LIMIT {
                return Err(invalid());
            }
        }
        total = total.checked_add(v).filter(|&t| t <= LIMIT).ok_or_else(invalid)?;
    }
    if neg {
        return Ok((-(total as i128)) as i64);
    }
    i64::try_from(total).map_err(|_| invalid())
}

/// Parses `s` as Go's `time.ParseDuration` (see [`parse_go_duration_nanos`]
/// for the syntax and error texts) into a [`Duration`], for the places
/// that need a length of time of zero or more. A negative duration (`-5s`,
/// which Go accepts) is refused with `negative duration "-5s": give a
/// duration of zero or more`; `-0` is zero.
pub fn parse_go_duration(s: &str) -> Result<Duration, String> {
    let nanos = parse_go_duration_nanos(s)?;
    u64::try_from(nanos)
        .map(Duration::from_nanos)
        .map_err(|_| format!("negative duration {}: give a duration of zero or more", quote(s)))
}

/// Go's `time.quote`: `s` in double quotes, `"` and `\` escaped, bytes of
/// non-ASCII characters and control characters as `\xNN`.
fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        if !c.is_ascii() || c < ' ' {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("\\x{b:02x}"));
            }
        } else {
            if c == '"' || c == '\\' {
                out.push('\\');
            }
            out.push(c);
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const NS: i64 = 1;
    const US: i64 = 1_000;
    const MS: i64 = 1_000_000;
    const S: i64 = 1_000_000_000;
    const M: i64 = 60 * S;
    const H: i64 = 60 * M;

    /// Go's `parseDurationTests` (src/time/format_test.go), in nanoseconds.
    #[test]
    fn go_parse_duration_table() {
        let cases: &[(&str, i64)] = &[
            ("0", 0),
            ("5s", 5 * S),
            ("30s", 30 * S),
            ("1478s", 1478 * S),
            ("-5s", -5 * S),
            ("+5s", 5 * S),
            ("-0", 0),
            ("+0", 0),
            ("5.0s", 5 * S),
            ("5.6s", 5 * S + 600 * MS),
            ("5.s", 5 * S),
            (".5s", 500 * MS),
            ("1.0s", S),
            ("1.00s", S),
            ("1.004s", S + 4 * MS),
            ("1.0040s", S + 4 * MS),
            ("100.00100s", 100 * S + MS),
            ("10ns", 10 * NS),
            ("11us", 11 * US),
            ("12µs", 12 * US),
            ("12μs", 12 * US),
            ("13ms", 13 * MS),
            ("14s", 14 * S),
            ("15m", 15 * M),
            ("16h", 16 * H),
            ("3h30m", 3 * H + 30 * M),
            ("10.5s4m", 4 * M + 10 * S + 500 * MS),
            ("-2m3.4s", -(2 * M + 3 * S + 400 * MS)),
            ("1h2m3s4ms5us6ns", H + 2 * M + 3 * S + 4 * MS + 5 * US + 6 * NS),
            ("39h9m14.425s", 39 * H + 9 * M + 14 * S + 425 * MS),
            ("52763797000ns", 52763797000),
            ("0.3333333333333333333h", 20 * M),
            ("9007199254740993ns", (1 << 53) + 1),
            ("9223372036854775807ns", i64::MAX),
            ("9223372036854775.807us", i64::MAX),
            ("9223372036s854ms775us807ns", i64::MAX),
            ("-9223372036854775808ns", i64::MIN),
            ("-9223372036854775.808us", i64::MIN),
            ("-9223372036s854ms775us808ns", i64::MIN),
            ("-2562047h47m16.854775808s", i64::MIN),
            ("0.100000000000000000000h", 6 * M),
            ("0.830103483285477580700h", 49 * M + 48 * S + 372539827),
        ];
        for &(input, want) in cases {
            assert_eq!(parse_go_duration_nanos(input), Ok(want), "{input}");
        }
    }

    /// Go's `parseDurationErrorTests`, with the full error texts.
    #[test]
    fn go_parse_duration_errors() {
        for input in [
            "",
            "-",
            "s",
            ".",
            "-.",
            ".s",
            "+.s",
            "9223372036854775810ns",
            "9223372036854775808ns",
            "-9223372036854775809ns",
            "9223372036854776us",
            "3000000h",
            "9223372036854775.808us",
            "9223372036854ms775us808ns",
        ] {
            assert_eq!(parse_go_duration_nanos(input), Err(format!("time: invalid duration \"{input}\"")), "{input}");
        }
        assert_eq!(parse_go_duration_nanos("3"), Err("time: missing unit in duration \"3\"".into()));
        assert_eq!(parse_go_duration_nanos("1d"), Err("time: unknown unit \"d\" in duration \"1d\"".into()));
        // Go's quote: non-ASCII bytes as \xNN (U+FFFD is ef bf bd).
        assert_eq!(
            parse_go_duration_nanos("\u{FFFD} hello \u{FFFD} world"),
            Err(r#"time: invalid duration "\xef\xbf\xbd hello \xef\xbf\xbd world""#.into())
        );
        assert_eq!(
            parse_go_duration_nanos("1µ"),
            Err(r#"time: unknown unit "\xc2\xb5" in duration "1\xc2\xb5""#.into())
        );
    }

    #[test]
    fn unsigned_form_refuses_negative_durations() {
        assert_eq!(parse_go_duration("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_go_duration("1.5h"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_go_duration("1h2m3s4ms5us6ns"), Ok(Duration::from_nanos(3_723_004_005_006)));
        assert_eq!(parse_go_duration("9223372036854775807ns"), Ok(Duration::from_nanos(i64::MAX as u64)));
        assert_eq!(parse_go_duration("-0"), Ok(Duration::ZERO));
        assert_eq!(parse_go_duration("-5s"), Err("negative duration \"-5s\": give a duration of zero or more".into()));
        assert_eq!(parse_go_duration("1d"), Err("time: unknown unit \"d\" in duration \"1d\"".into()));
    }
}
