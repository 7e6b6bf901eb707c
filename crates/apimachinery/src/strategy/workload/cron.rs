//! CronJob schedules and time zones as the API server checks them.
//!
//! [`parse_standard`] accepts what upstream's `cron.ParseStandard`
//! (robfig/cron v3) accepts — five fields (minute, hour, day of month,
//! month, day of week) with `*`, `?`, lists, ranges, steps and month/day
//! names, the descriptors `@yearly`/`@annually`, `@monthly`, `@weekly`,
//! `@daily`/`@midnight`, `@hourly` and `@every <duration>`, and a leading
//! `TZ=`/`CRON_TZ=` — and fails with that parser's error text, which
//! becomes the `spec.schedule` message. [`time_zone_exists`] is upstream's
//! `time.LoadLocation` over the system time zone database.

/// One field's bounds and names (robfig's `bounds`).
struct Bounds {
    min: u32,
    max: u32,
    names: &'static [&'static str],
}

const MINUTES: Bounds = Bounds { min: 0, max: 59, names: &[] };
const HOURS: Bounds = Bounds { min: 0, max: 23, names: &[] };
const DOM: Bounds = Bounds { min: 1, max: 31, names: &[] };
const MONTHS: Bounds = Bounds {
    min: 1,
    max: 12,
    names: &["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"],
};
const DOW: Bounds = Bounds { min: 0, max: 6, names: &["sun", "mon", "tue", "wed", "thu", "fri", "sat"] };

/// Parses a schedule as `cron.ParseStandard`; the error is that parser's
/// message (e.g. `expected exactly 5 fields, found 1: [error]`).
pub fn parse_standard(spec: &str) -> Result<(), String> {
    if spec.is_empty() {
        return Err("empty spec string".into());
    }
    let mut spec = spec;
    if spec.starts_with("TZ=") || spec.starts_with("CRON_TZ=") {
        let eq = spec.find('=').unwrap_or(0);
        let Some(space) = spec.find(' ') else {
            return Err(format!("provided bad location {}: unknown time zone {}", &spec[eq + 1..], &spec[eq + 1..]));
        };
        let loc = &spec[eq + 1..space];
        if !time_zone_exists(loc) {
            return Err(format!("provided bad location {loc}: unknown time zone {loc}"));
        }
        spec = spec[space..].trim();
    }
    if spec.starts_with('@') {
        return parse_descriptor(spec);
    }
    let fields: Vec<&str> = spec.split_whitespace().collect();
    if fields.len() != 5 {
        return Err(format!("expected exactly 5 fields, found {}: [{}]", fields.len(), fields.join(" ")));
    }
    for (f, b) in fields.iter().zip([&MINUTES, &HOURS, &DOM, &MONTHS, &DOW]) {
        for expr in f.split(',').filter(|e| !e.is_empty()) {
            parse_range(expr, b)?;
        }
    }
    Ok(())
}

/// robfig's `getRange` for one comma-separated item.
fn parse_range(expr: &str, b: &Bounds) -> Result<(), String> {
    let range_and_step: Vec<&str> = expr.split('/').collect();
    let low_high: Vec<&str> = range_and_step[0].split('-').collect();
    let single = low_high.len() == 1;
    let (start, mut end) = if low_high[0] == "*" || low_high[0] == "?" {
        (b.min, b.max)
    } else {
        let start = parse_int_or_name(low_high[0], b.names)?;
        let end = match low_high.len() {
            1 => start,
            2 => parse_int_or_name(low_high[1], b.names)?,
            _ => return Err(format!("too many hyphens: {expr}")),
        };
        (start, end)
    };
    let step = match range_and_step.len() {
        1 => 1,
        2 => {
            let step = must_parse_int(range_and_step[1])?;
            if single {
                end = b.max;
            }
            step
        }
        _ => return Err(format!("too many slashes: {expr}")),
    };
    if start < b.min {
        return Err(format!("beginning of range ({start}) below minimum ({}): {expr}", b.min));
    }
    if end > b.max {
        return Err(format!("end of range ({end}) above maximum ({}): {expr}", b.max));
    }
    if start > end {
        return Err(format!("beginning of range ({start}) beyond end of range ({end}): {expr}"));
    }
    if step == 0 {
        return Err(format!("step of range should be a positive number: {expr}"));
    }
    Ok(())
}

fn parse_int_or_name(expr: &str, names: &[&str]) -> Result<u32, String> {
    let lower = expr.to_lowercase();
    if let Some(i) = names.iter().position(|n| *n == lower) {
        // Month names count from 1, day names from 0.
        return Ok(if names.len() == 12 { i as u32 + 1 } else { i as u32 });
    }
    must_parse_int(expr)
}

/// robfig's `mustParseInt` with Go's `strconv.Atoi` error text.
fn must_parse_int(expr: &str) -> Result<u32, String> {
    let digits = expr.strip_prefix(['+', '-']).unwrap_or(expr);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("failed to parse int from {expr}: strconv.Atoi: parsing {}: invalid syntax", go_q(expr)));
    }
    let n: i64 = match expr.parse() {
        Ok(n) => n,
        Err(_) => {
            return Err(format!(
                "failed to parse int from {expr}: strconv.Atoi: parsing {}: value out of range",
                go_q(expr)
            ))
        }
    };
    if n < 0 {
        return Err(format!("negative number ({n}) not allowed: {expr}"));
    }
    u32::try_from(n).map_err(|_| format!("end of range ({n}) above maximum: {expr}"))
}

fn go_q(s: &str) -> String {
    crate::validation::go_quote(s)
}

/// robfig's `parseDescriptor`.
fn parse_descriptor(spec: &str) -> Result<(), String> {
    match spec {
        "@yearly" | "@annually" | "@monthly" | "@weekly" | "@daily" | "@midnight" | "@hourly" => Ok(()),
        _ => match spec.strip_prefix("@every ") {
            Some(d) => crate::duration::parse_go_duration_nanos(d)
                .map(|_| ())
                .map_err(|e| format!("failed to parse duration {spec}: {e}")),
            None => Err(format!("unrecognized descriptor: {spec}")),
        },
    }
}

/// Whether `name` is a time zone `time.LoadLocation` finds: `UTC`, or an
/// entry of the IANA database.
pub fn time_zone_exists(name: &str) -> bool {
    name.is_empty() || name == "UTC" || jiff::tz::TimeZone::get(name).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_what_parse_standard_accepts() {
        for ok in [
            "*/5 * * * *",
            "0 0 1 1 *",
            "0-30/10 9-17 * JAN-mar mon,WED,fri",
            "? * * * ?",
            "@hourly",
            "@every 1h30m",
            "TZ=UTC 0 * * * *",
            "5 4 * * sun",
        ] {
            assert_eq!(parse_standard(ok), Ok(()), "{ok}");
        }
    }

    #[test]
    fn errors_match_robfig() {
        assert_eq!(parse_standard("error").unwrap_err(), "expected exactly 5 fields, found 1: [error]");
        assert_eq!(parse_standard("* * * *").unwrap_err(), "expected exactly 5 fields, found 4: [* * * *]");
        assert_eq!(parse_standard("60 * * * *").unwrap_err(), "end of range (60) above maximum (59): 60");
        assert_eq!(parse_standard("* * 0 * *").unwrap_err(), "beginning of range (0) below minimum (1): 0");
        assert_eq!(parse_standard("5-1 * * * *").unwrap_err(), "beginning of range (5) beyond end of range (1): 5-1");
        assert_eq!(parse_standard("*/0 * * * *").unwrap_err(), "step of range should be a positive number: */0");
        assert_eq!(
            parse_standard("x * * * *").unwrap_err(),
            "failed to parse int from x: strconv.Atoi: parsing \"x\": invalid syntax"
        );
        assert_eq!(parse_standard("@often").unwrap_err(), "unrecognized descriptor: @often");
        assert_eq!(
            parse_standard("@every 5").unwrap_err(),
            "failed to parse duration @every 5: time: missing unit in duration \"5\""
        );
        assert_eq!(
            parse_standard("TZ=Mars/Base 0 * * * *").unwrap_err(),
            "provided bad location Mars/Base: unknown time zone Mars/Base"
        );
    }

    #[test]
    fn time_zones() {
        assert!(time_zone_exists("UTC"));
        assert!(time_zone_exists("Europe/Berlin"));
        assert!(!time_zone_exists("Mars/Base"));
    }
}
