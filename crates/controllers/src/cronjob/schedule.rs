//! CronJob schedules as upstream's controller evaluates them (robfig/cron v3
//! `ParseStandard` plus `pkg/controller/cronjob/utils.go`): five fields
//! (minute, hour, day of month, month, day of week) with `*`, `?`, lists,
//! ranges, steps and month/day names; the descriptors `@yearly`/`@annually`,
//! `@monthly`, `@weekly`, `@daily`/`@midnight`, `@hourly`; `@every <d>`
//! (which ParseStandard, and so the API server, accepts); and a time zone
//! (`spec.timeZone`, or a `TZ=`/`CRON_TZ=` prefix) in which the fields are
//! read. Day of month and day of week combine as in cron: when both are
//! restricted, either matching is enough.

use std::time::Duration;

use jiff::civil::DateTime;
use jiff::tz::TimeZone;
use jiff::{SignedDuration, Timestamp, ToSpan};

/// More missed start times than this: a TooManyMissedTimes warning.
pub const MANY_MISSED: i64 = 100;

/// A parsed schedule.
#[derive(Clone, Debug)]
pub struct Schedule {
    kind: Kind,
    tz: TimeZone,
}

#[derive(Clone, Debug)]
enum Kind {
    Fields { minute: u64, hour: u64, dom: u64, month: u64, dow: u64, dom_star: bool, dow_star: bool },
    Every(Duration),
}

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

/// Bits of one field and whether it was `*`/`?` without a step (robfig's star bit).
fn field(expr: &str, b: &Bounds) -> Result<(u64, bool), String> {
    let mut bits = 0u64;
    let mut star = false;
    for item in expr.split(',') {
        let (range, step) = match item.split_once('/') {
            Some((r, s)) => (r, Some(s.parse::<u32>().map_err(|_| format!("bad step: {item}"))?)),
            None => (item, None),
        };
        let (start, mut end, is_star) = if range == "*" || range == "?" {
            (b.min, b.max, true)
        } else {
            let val = |s: &str| -> Result<u32, String> {
                let l = s.to_lowercase();
                if let Some(i) = b.names.iter().position(|n| *n == l) {
                    return Ok(if b.names.len() == 12 { i as u32 + 1 } else { i as u32 });
                }
                s.parse::<u32>().map_err(|_| format!("failed to parse int from {s}"))
            };
            match range.split_once('-') {
                Some((a, z)) => (val(a)?, val(z)?, false),
                None => {
                    let v = val(range)?;
                    (v, v, false)
                }
            }
        };
        if step.is_some() && !is_star && !range.contains('-') {
            end = b.max; // "N/step" means "N-max/step".
        }
        let step = step.unwrap_or(1);
        if step == 0 || start < b.min || end > b.max || start > end {
            return Err(format!("invalid range: {item}"));
        }
        if is_star && step == 1 {
            star = true;
        }
        let mut v = start;
        while v <= end {
            bits |= 1 << v;
            v += step;
        }
    }
    Ok((bits, star))
}

impl Schedule {
    /// Parses `spec` read in time zone `tz` (IANA name; `None`: UTC, as
    /// upstream's `time.LoadLocation("")`). A `TZ=`/`CRON_TZ=` prefix wins.
    pub fn parse(spec: &str, tz: Option<&str>) -> Result<Schedule, String> {
        let mut spec = spec.trim();
        let mut zone = tz.unwrap_or("UTC").to_string();
        if spec.starts_with("TZ=") || spec.starts_with("CRON_TZ=") {
            let (head, tail) = spec.split_once(' ').ok_or("bad TZ prefix")?;
            zone = head.split_once('=').map(|(_, z)| z.to_string()).unwrap_or_default();
            spec = tail.trim();
        }
        let tz = if zone == "UTC" || zone.is_empty() {
            TimeZone::UTC
        } else {
            TimeZone::get(&zone).map_err(|_| format!("unknown time zone {zone}"))?
        };
        let fields = match spec {
            "@yearly" | "@annually" => "0 0 1 1 *",
            "@monthly" => "0 0 1 * *",
            "@weekly" => "0 0 * * 0",
            "@daily" | "@midnight" => "0 0 * * *",
            "@hourly" => "0 * * * *",
            s if s.starts_with("@every ") => {
                // robfig's `Every`: Go's time.ParseDuration, then whole
                // seconds, at least one (a negative duration gives 1s).
                let nanos = rkube_apimachinery::duration::parse_go_duration_nanos(s["@every ".len()..].trim())?;
                let d = Duration::from_secs((nanos.max(0) as u64 / 1_000_000_000).max(1));
                return Ok(Schedule { kind: Kind::Every(d), tz });
            }
            s if s.starts_with('@') => return Err(format!("unrecognized descriptor: {s}")),
            s => s,
        };
        let f: Vec<&str> = fields.split_whitespace().collect();
        if f.len() != 5 {
            return Err(format!("expected exactly 5 fields, found {}: [{}]", f.len(), f.join(" ")));
        }
        let (minute, _) = field(f[0], &MINUTES)?;
        let (hour, _) = field(f[1], &HOURS)?;
        let (dom, dom_star) = field(f[2], &DOM)?;
        let (month, _) = field(f[3], &MONTHS)?;
        let (dow, dow_star) = field(f[4], &DOW)?;
        Ok(Schedule { kind: Kind::Fields { minute, hour, dom, month, dow, dom_star, dow_star }, tz })
    }

    /// The first activation strictly after `t` (robfig `Next`); `None` when
    /// there is none within five years (e.g. `0 0 30 2 *`).
    pub fn next(&self, t: Timestamp) -> Option<Timestamp> {
        let (minute, hour, dom, month, dow, dom_star, dow_star) = match &self.kind {
            Kind::Every(d) => {
                let whole = Timestamp::from_second(t.as_second()).ok()?;
                return whole.checked_add(SignedDuration::try_from(*d).ok()?).ok();
            }
            Kind::Fields { minute, hour, dom, month, dow, dom_star, dow_star } => {
                (*minute, *hour, *dom, *month, *dow, *dom_star, *dow_star)
            }
        };
        let start = t.to_zoned(self.tz.clone()).datetime();
        // The next whole minute after t.
        let mut dt = start.with().second(0).subsec_nanosecond(0).build().ok()?.checked_add(1.minute()).ok()?;
        let limit = start.year() + 5;
        let day_matches = |d: &DateTime| {
            let dm = dom & (1 << d.day()) != 0;
            let wm = dow & (1 << d.weekday().to_sunday_zero_offset()) != 0;
            if dom_star || dow_star {
                dm && wm
            } else {
                dm || wm
            }
        };
        while dt.year() <= limit {
            if month & (1 << dt.month()) == 0 {
                dt = dt.first_of_month().checked_add(1.month()).ok()?.with().hour(0).minute(0).build().ok()?;
                continue;
            }
            if !day_matches(&dt) {
                dt = dt.date().checked_add(1.day()).ok()?.to_datetime(jiff::civil::Time::midnight());
                continue;
            }
            if hour & (1 << dt.hour()) == 0 {
                dt = dt.with().minute(0).build().ok()?.checked_add(1.hour()).ok()?;
                continue;
            }
            if minute & (1 << dt.minute()) == 0 {
                dt = dt.checked_add(1.minute()).ok()?;
                continue;
            }
            let at = self.tz.to_ambiguous_timestamp(dt).compatible().ok()?;
            if at > t {
                return Some(at);
            }
            dt = dt.checked_add(1.minute()).ok()?;
        }
        None
    }
}

/// What [`most_recent`] found.
#[derive(Debug, PartialEq, Eq)]
pub struct Recent {
    /// Where the search started: lastScheduleTime, else creation (or the
    /// starting deadline when later).
    pub earliest: Timestamp,
    /// The latest activation in (earliest, now], if any.
    pub most_recent: Option<Timestamp>,
    /// Roughly how many activations were missed.
    pub missed: i64,
}

/// Upstream `mostRecentScheduleTime`: the latest activation after
/// `earliest` (lastScheduleTime or creationTimestamp, raised to
/// `now − startingDeadlineSeconds` when given) that is not after `now`,
/// and the estimated number of missed ones. Errs when two consecutive
/// activations are less than a second apart (an impossible schedule).
pub fn most_recent(
    s: &Schedule,
    created: Timestamp,
    last_schedule: Option<Timestamp>,
    starting_deadline: Option<i64>,
    now: Timestamp,
) -> Result<Recent, String> {
    let mut earliest = last_schedule.unwrap_or(created);
    if let Some(sd) = starting_deadline {
        let deadline = now - SignedDuration::from_secs(sd);
        if deadline > earliest {
            earliest = deadline;
        }
    }
    let none = |earliest| Recent { earliest, most_recent: None, missed: 0 };
    let Some(t1) = s.next(earliest) else { return Ok(none(earliest)) };
    let Some(t2) = s.next(t1) else {
        return Ok(if now < t1 { none(earliest) } else { Recent { earliest, most_recent: Some(t1), missed: 1 } });
    };
    if now < t1 {
        return Ok(none(earliest));
    }
    if now < t2 {
        return Ok(Recent { earliest, most_recent: Some(t1), missed: 1 });
    }
    let between = t2.duration_since(t1).round(jiff::Unit::Second).map_err(|e| e.to_string())?.as_secs();
    if between < 1 {
        return Err("time difference between two schedules is less than 1 second".into());
    }
    let elapsed = now.duration_since(t1).as_secs();
    let missed = elapsed / between + 1;
    // Jump close to now, then walk the schedule (upstream's approximation).
    let mut t = t1 + SignedDuration::from_secs((missed - 2) * between);
    let mut most_recent = None;
    while let Some(n) = s.next(t) {
        if n > now {
            break;
        }
        most_recent = Some(n);
        t = n;
    }
    Ok(Recent { earliest, most_recent, missed })
}

/// How long until the controller should look again (upstream
/// `nextScheduleTimeDuration`): the activation after the most recent one
/// (or after `earliest`), plus upstream's 100 ms `nextScheduleDelta`.
pub fn next_schedule_in(
    s: &Schedule,
    created: Timestamp,
    last_schedule: Option<Timestamp>,
    now: Timestamp,
) -> Option<Duration> {
    let from = match most_recent(s, created, last_schedule, None, now) {
        Err(_) => now,
        Ok(r) => r.most_recent.unwrap_or(r.earliest),
    };
    let next = s.next(from)?;
    let d = next.duration_since(now) + SignedDuration::from_millis(100);
    Some(Duration::try_from(d).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn next(spec: &str, tz: Option<&str>, from: &str) -> String {
        Schedule::parse(spec, tz).unwrap().next(ts(from)).map(|t| t.to_string()).unwrap_or_default()
    }

    #[test]
    fn next_activation_as_robfig() {
        // Cases from robfig/cron's TestNext (read in UTC).
        assert_eq!(next("*/15 * * * *", None, "2012-07-09T14:45:00Z"), "2012-07-09T15:00:00Z");
        assert_eq!(next("*/15 * * * *", None, "2012-07-09T14:59:59Z"), "2012-07-09T15:00:00Z");
        assert_eq!(next("0 */2 * * *", None, "2012-07-09T15:45:00Z"), "2012-07-09T16:00:00Z");
        assert_eq!(next("* * 9 * *", None, "2012-07-09T23:59:00Z"), "2012-08-09T00:00:00Z");
        assert_eq!(next("0 0 * * 1", None, "2012-07-09T00:00:00Z"), "2012-07-16T00:00:00Z");
        assert_eq!(next("0 0 29 2 *", None, "2012-07-09T23:35:00Z"), "2016-02-29T00:00:00Z");
        assert_eq!(next("0 0 1,15 * 1", None, "2012-07-09T00:00:00Z"), "2012-07-15T00:00:00Z");
        assert_eq!(next("0 0 30 2 *", None, "2012-07-09T00:00:00Z"), "");
        assert_eq!(next("@hourly", None, "2012-07-09T14:45:00Z"), "2012-07-09T15:00:00Z");
        assert_eq!(next("@weekly", None, "2012-07-09T14:45:00Z"), "2012-07-15T00:00:00Z");
        assert_eq!(next("@yearly", None, "2012-07-09T14:45:00Z"), "2013-01-01T00:00:00Z");
        assert_eq!(next("0 9 * JAN-MAR mon-fri", None, "2012-12-31T10:00:00Z"), "2013-01-01T09:00:00Z");
        assert_eq!(next("@every 90s", None, "2012-07-09T14:45:00.5Z"), "2012-07-09T14:46:30Z");
        // robfig's Every: Go durations, cut to whole seconds, at least 1s.
        assert_eq!(next("@every 1m30.9s", None, "2012-07-09T14:45:00.5Z"), "2012-07-09T14:46:30Z");
        assert_eq!(next("@every 1.5h", None, "2012-07-09T14:45:00Z"), "2012-07-09T16:15:00Z");
        assert_eq!(next("@every 300ms", None, "2012-07-09T14:45:00.5Z"), "2012-07-09T14:45:01Z");
        assert_eq!(next("@every -5s", None, "2012-07-09T14:45:00.5Z"), "2012-07-09T14:45:01Z");
        assert_eq!(Schedule::parse("@every 1d", None).unwrap_err(), "time: unknown unit \"d\" in duration \"1d\"");
    }

    #[test]
    fn time_zone_is_honoured() {
        // 09:00 in New York (EDT, UTC−4) in July.
        assert_eq!(next("0 9 * * *", Some("America/New_York"), "2012-07-09T12:00:00Z"), "2012-07-09T13:00:00Z");
        assert_eq!(next("TZ=Asia/Tokyo 0 9 * * *", None, "2012-07-09T12:00:00Z"), "2012-07-10T00:00:00Z");
        assert!(Schedule::parse("0 9 * * *", Some("Mars/Base")).is_err());
        assert!(Schedule::parse("* * * *", None).is_err());
        assert!(Schedule::parse("@often", None).is_err());
    }

    fn recent(spec: &str, created: &str, last: Option<&str>, deadline: Option<i64>, now: &str) -> Recent {
        let s = Schedule::parse(spec, None).unwrap();
        most_recent(&s, ts(created), last.map(ts), deadline, ts(now)).unwrap()
    }

    #[test]
    fn most_recent_schedule_time_as_upstream() {
        // Cases of upstream TestMostRecentScheduleTime (hourly "0 * * * *").
        let r = recent("0 * * * *", "2016-05-19T10:00:00Z", None, None, "2016-05-19T10:30:00Z");
        assert_eq!((r.most_recent, r.missed), (None, 0));
        let r = recent("0 * * * *", "2016-05-19T09:30:00Z", None, None, "2016-05-19T10:30:00Z");
        assert_eq!((r.most_recent, r.missed), (Some(ts("2016-05-19T10:00:00Z")), 1));
        let r = recent("0 * * * *", "2016-05-19T09:30:00Z", Some("2016-05-19T10:00:00Z"), None, "2016-05-19T12:05:00Z");
        assert_eq!((r.most_recent, r.missed), (Some(ts("2016-05-19T12:00:00Z")), 2));
        // Many missed: more than 100 hours.
        let r = recent("0 * * * *", "2016-05-01T00:30:00Z", None, None, "2016-05-19T12:05:00Z");
        assert_eq!(r.most_recent, Some(ts("2016-05-19T12:00:00Z")));
        assert!(r.missed > MANY_MISSED);
        // startingDeadlineSeconds moves the earliest time forward.
        let r = recent("0 * * * *", "2016-05-01T00:30:00Z", None, Some(600), "2016-05-19T12:05:00Z");
        assert_eq!((r.most_recent, r.missed), (Some(ts("2016-05-19T12:00:00Z")), 1));
        let r = recent("0 * * * *", "2016-05-01T00:30:00Z", None, Some(60), "2016-05-19T12:05:00Z");
        assert_eq!(r.most_recent, None);
        // A schedule with irregular gaps: "30 6-16/4 * * 1-5".
        let r = recent(
            "30 6-16/4 * * 1-5",
            "2016-05-19T00:00:00Z",
            Some("2016-05-19T06:30:00Z"),
            None,
            "2016-05-20T08:00:00Z",
        );
        assert_eq!(r.most_recent, Some(ts("2016-05-20T06:30:00Z")));
    }

    #[test]
    fn next_sync_includes_the_delta() {
        let s = Schedule::parse("*/1 * * * *", None).unwrap();
        let d = next_schedule_in(&s, ts("2016-05-19T10:00:10Z"), None, ts("2016-05-19T10:00:20Z")).unwrap();
        assert_eq!(d, Duration::from_millis(40_100));
    }
}
