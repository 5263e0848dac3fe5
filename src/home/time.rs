//! Loxone time: the one place for the Loxone epoch, "now" and the house's local time.
//!
//! The Miniserver counts time from **2009-01-01** (the Loxone epoch, Unix 1 230 768 000) in two
//! ways, and this module converts both (loxone-protocol.md §3.3, statistics.md A1):
//! - **Loxone seconds** ([`loxone_now`], [`from_loxone_secs`], [`to_loxone_secs`]): seconds since
//!   2009-01-01 00:00 **UTC**, as token expiry (`validUntil`), room-controller override ends and
//!   `activeSince`-style states count them.
//! - **Miniserver-local seconds** ([`HouseTime::from_local_secs`], [`HouseTime::to_local_secs`]):
//!   seconds since 2009-01-01 00:00 on the Miniserver's **wall clock**, as Statistics V1 records
//!   (`binstatisticdata`, the XML `T` column) and intercom bell events (`YYYYMMDDHHMMSS`,
//!   [`HouseTime::parse_compact`]) write them. They need the house's time zone with its
//!   daylight-saving rules: in the spring gap a wall time that never happened maps forward by the
//!   gap (02:30 on 2026-03-29 in Vienna is 01:30 UTC, as if the clock had not been changed yet;
//!   such records occur, statistics.md); in the autumn the repeated hour is ambiguous and maps to
//!   its first occurrence unless the caller passes the previous record's instant, when the
//!   second occurrence is taken if the first would go backwards ([`HouseTime::from_local_secs`]).
//!
//! The house's time zone is [`HouseTime`]: the owner's `[home] time_zone` (an IANA name such as
//! `Europe/Vienna`, read from the system's time zone database `/usr/share/zoneinfo`, or a POSIX
//! TZ rule such as `CET-1CEST,M3.5.0,M10.5.0/3` for a system without one), else the system's own
//! (`TZ`, `/etc/localtime`), else UTC. It also gives local calendar boundaries (start of the local
//! day, ISO week, month, year) and formats instants as ISO 8601 with the local offset.
//!
//! Calendar arithmetic is the `jiff` crate's (IANA time zones, DST, ISO 8601), not ours.

use std::fmt;
use std::time::SystemTime;

use jiff::civil::{self, DateTime};
use jiff::tz::{AmbiguousOffset, TimeZone};
use jiff::{SignedDuration, Timestamp, ZonedDateTime};

/// Unix time of the Loxone epoch, 2009-01-01 00:00:00 UTC (loxone-protocol.md §3.3).
pub const LOXONE_EPOCH_UNIX: u64 = 1_230_768_000;

/// The Loxone epoch as a wall-clock time, 2009-01-01 00:00:00 (Miniserver-local seconds count
/// from here on the house's clock).
const LOCAL_EPOCH: DateTime = civil::date(2009, 1, 1).at(0, 0, 0, 0);

/// Now in Loxone seconds: seconds since 2009-01-01 00:00 UTC (0 if the clock is before 2009).
pub fn loxone_now() -> u64 {
    to_loxone_secs(now()).max(0) as u64
}

/// Now, as an instant.
pub fn now() -> Timestamp {
    Timestamp::now()
}

/// The instant `secs` Loxone seconds (since 2009-01-01 00:00 UTC) after the epoch; `None` when
/// out of range (beyond year 9999).
pub fn from_loxone_secs(secs: i64) -> Option<Timestamp> {
    Timestamp::from_second(secs.checked_add(LOXONE_EPOCH_UNIX as i64)?).ok()
}

/// `t` in Loxone seconds (since 2009-01-01 00:00 UTC; negative before 2009).
pub fn to_loxone_secs(t: Timestamp) -> i64 {
    t.as_second() - LOXONE_EPOCH_UNIX as i64
}

/// `t` as an instant (`SystemTime` and `jiff` instants cover the same range in practice;
/// the Unix epoch when not).
pub fn instant(t: SystemTime) -> Timestamp {
    Timestamp::try_from(t).unwrap_or(Timestamp::UNIX_EPOCH)
}

/// The house's time zone could not be found or read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimeZoneError {
    /// The configured name.
    pub name: String,
    /// The time library's reason.
    pub reason: String,
}

impl fmt::Display for TimeZoneError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "time zone {:?} is unknown ({}); use an IANA name such as \"Europe/Vienna\" \
             (the system's time zone database, package tzdata, under /usr/share/zoneinfo) \
             or a POSIX TZ rule such as \"CET-1CEST,M3.5.0,M10.5.0/3\"",
            self.name, self.reason
        )
    }
}

impl std::error::Error for TimeZoneError {}

/// The house's clock: the Miniserver's time zone with its daylight-saving rules. Cheap to
/// clone. See the module docs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HouseTime {
    tz: TimeZone,
}

impl Default for HouseTime {
    /// The system's time zone ([`HouseTime::system`]).
    fn default() -> Self {
        Self::system()
    }
}

impl HouseTime {
    /// The time zone `name`: an IANA name (`Europe/Vienna`, from the system's time zone
    /// database) or a POSIX TZ rule (`CET-1CEST,M3.5.0,M10.5.0/3`).
    pub fn named(name: &str) -> Result<Self, TimeZoneError> {
        let name = name.trim();
        let err = |e: jiff::Error| TimeZoneError {
            name: name.to_string(),
            reason: e.to_string(),
        };
        let tz = match TimeZone::get(name) {
            Ok(tz) => tz,
            Err(e) if name.contains(',') || name.starts_with(|c: char| c.is_ascii_uppercase()) => {
                TimeZone::posix(name).map_err(|_| err(e))?
            }
            Err(e) => return Err(err(e)),
        };
        Ok(Self { tz })
    }

    /// The system's time zone (`TZ`, else `/etc/localtime`), UTC when it cannot be determined.
    pub fn system() -> Self {
        Self {
            tz: TimeZone::try_system().unwrap_or(TimeZone::UTC),
        }
    }

    /// The jiff time zone behind it (for code that does its own calendar arithmetic, as the
    /// simulator's statistics).
    pub fn time_zone(&self) -> &TimeZone {
        &self.tz
    }

    /// Coordinated Universal Time (tests, and a house that keeps UTC).
    pub fn utc() -> Self {
        Self { tz: TimeZone::UTC }
    }

    /// The zone's IANA name when it has one (`Europe/Vienna`), else its POSIX rule or
    /// offset as text.
    pub fn name(&self) -> String {
        match self.tz.iana_name() {
            Some(n) => n.to_string(),
            None => format!("{:?}", self.tz),
        }
    }

    /// `t` on the house's clock.
    pub fn zoned(&self, t: Timestamp) -> ZonedDateTime {
        t.to_zoned_datetime(self.tz.clone())
    }

    /// `t` as ISO 8601 with the local offset, whole seconds: `2026-03-29T03:00:00+02:00`.
    pub fn format(&self, t: Timestamp) -> String {
        let whole = Timestamp::from_second(t.as_second()).unwrap_or(t);
        whole.display_with_offset(self.tz.to_offset(t)).to_string()
    }

    /// The wall-clock time `local` on the house's clock as an instant. A time in the spring
    /// gap maps forward by the gap (the offset before it); a time in the repeated autumn hour
    /// maps to its first occurrence, or to its second when `after` is given and the first is
    /// not after it (a series read in order: each record passes the previous record's
    /// instant; an hourly series has 02:00 twice, the second right at the first's instant).
    pub fn from_local(&self, local: DateTime, after: Option<Timestamp>) -> Option<Timestamp> {
        let amb = self.tz.to_ambiguous_timestamp(local);
        match amb.offset() {
            AmbiguousOffset::Unambiguous { offset }
            | AmbiguousOffset::Gap { before: offset, .. } => offset.to_timestamp(local).ok(),
            AmbiguousOffset::Fold {
                before,
                after: later,
            } => {
                let first = before.to_timestamp(local).ok()?;
                match after {
                    Some(prev) if first <= prev => later.to_timestamp(local).ok(),
                    _ => Some(first),
                }
            }
        }
    }

    /// Miniserver-local seconds (since 2009-01-01 00:00 on the house's wall clock, as
    /// Statistics V1 records count) as an instant; see [`HouseTime::from_local`] for the DST
    /// gap and the repeated hour. `None` when out of range.
    pub fn from_local_secs(&self, secs: i64, after: Option<Timestamp>) -> Option<Timestamp> {
        let local = LOCAL_EPOCH
            .checked_add(SignedDuration::from_secs(secs))
            .ok()?;
        self.from_local(local, after)
    }

    /// `t` in Miniserver-local seconds (since 2009-01-01 00:00 on the house's wall clock).
    pub fn to_local_secs(&self, t: Timestamp) -> i64 {
        self.zoned(t)
            .datetime()
            .duration_since(LOCAL_EPOCH)
            .as_secs()
    }

    /// A wall-clock text `YYYY-MM-DD HH:MM:SS` (the `T` of a Statistics V1 row, the structure
    /// file's `lastModified`) as Miniserver-local seconds since 2009-01-01 00:00; no zone is
    /// needed (wall clock to wall clock). `None` when it is not one.
    pub fn local_secs_of_text(s: &str) -> Option<i64> {
        let local = DateTime::strptime("%Y-%m-%d %H:%M:%S", s.trim()).ok()?;
        Some(local.duration_since(LOCAL_EPOCH).as_secs())
    }

    /// A compact local time `YYYYMMDDHHMMSS` (intercom `lastBellEvents`) as an instant;
    /// `None` when it is not one.
    pub fn parse_compact(&self, s: &str, after: Option<Timestamp>) -> Option<Timestamp> {
        let s = s.trim();
        if s.len() != 14 || !s.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let n = |r: std::ops::Range<usize>| s[r].parse::<i16>().ok();
        let small = |r| n(r).and_then(|v| i8::try_from(v).ok());
        let local = DateTime::new(
            n(0..4)?,
            small(4..6)?,
            small(6..8)?,
            small(8..10)?,
            small(10..12)?,
            small(12..14)?,
            0,
        )
        .ok()?;
        self.from_local(local, after)
    }

    /// `t` as a compact local time `YYYYMMDDHHMMSS` on the house's clock, as a Miniserver
    /// writes intercom bell events (the inverse of [`HouseTime::parse_compact`]).
    pub fn compact(&self, t: Timestamp) -> String {
        self.zoned(t).strftime("%Y%m%d%H%M%S").to_string()
    }

    /// The start of the local day that contains `t` (midnight, or the first instant of a day
    /// whose midnight falls into a gap).
    pub fn start_of_day(&self, t: Timestamp) -> Timestamp {
        self.start_of_date(self.zoned(t).date())
    }

    /// The start of the local ISO week (Monday) that contains `t`.
    pub fn start_of_week(&self, t: Timestamp) -> Timestamp {
        let date = self.zoned(t).date();
        let back = i64::from(date.weekday().to_monday_zero_offset());
        let monday = date
            .checked_sub(jiff::Span::new().days(back))
            .unwrap_or(date);
        self.start_of_date(monday)
    }

    /// The start of the local month that contains `t`.
    pub fn start_of_month(&self, t: Timestamp) -> Timestamp {
        self.start_of_date(self.zoned(t).date().first_of_month())
    }

    /// The start of the local year that contains `t`.
    pub fn start_of_year(&self, t: Timestamp) -> Timestamp {
        self.start_of_date(self.zoned(t).date().first_of_year())
    }

    /// The first instant of the local date `date`.
    pub fn start_of_date(&self, date: civil::Date) -> Timestamp {
        date.to_zoned_datetime(self.tz.clone())
            .and_then(|z| z.start_of_day())
            .map(|z| z.timestamp())
            .unwrap_or(Timestamp::UNIX_EPOCH)
    }

    /// The start of the local `unit` that contains `t` (an hour begins on the local clock's
    /// full hour, so in a zone with a half-hour offset too).
    pub fn start_of(&self, unit: Unit, t: Timestamp) -> Timestamp {
        match unit {
            Unit::Hour => {
                // Whole seconds: `now` carries nanoseconds, an hour begins at :00:00.000.
                let secs = t.as_second();
                let local = secs + i64::from(self.tz.to_offset(t).seconds());
                Timestamp::from_second(secs - local.rem_euclid(3600)).unwrap_or(t)
            }
            Unit::Day => self.start_of_day(t),
            Unit::Week => self.start_of_week(t),
            Unit::Month => self.start_of_month(t),
            Unit::Year => self.start_of_year(t),
        }
    }

    /// The start of the local `unit` after the one that contains `t`: 23 or 25 hours after a
    /// day's start on the days the clock changes.
    pub fn next_start(&self, unit: Unit, t: Timestamp) -> Timestamp {
        let date = self.zoned(t).date();
        let span = match unit {
            Unit::Hour => {
                let start = self.start_of(Unit::Hour, t);
                return start
                    .checked_add(SignedDuration::from_hours(1))
                    .unwrap_or(Timestamp::MAX);
            }
            Unit::Day => jiff::Span::new().days(1),
            Unit::Week => jiff::Span::new().weeks(1),
            Unit::Month => jiff::Span::new().months(1),
            Unit::Year => jiff::Span::new().years(1),
        };
        let first = match unit {
            Unit::Day => date,
            Unit::Week => {
                let back = i64::from(date.weekday().to_monday_zero_offset());
                date.checked_sub(jiff::Span::new().days(back))
                    .unwrap_or(date)
            }
            Unit::Month => date.first_of_month(),
            _ => date.first_of_year(),
        };
        match first.checked_add(span) {
            Ok(next) => self.start_of_date(next),
            Err(_) => Timestamp::MAX,
        }
    }

    /// An instant in words, relative to `now`: ISO 8601 with an offset
    /// (`2026-11-01T08:00:00Z`, `...+01:00`), a local date and time without one
    /// (`2026-11-01T08:00`, `2026-11-01 08:00`), a local date (`2026-11-01`: its midnight),
    /// `now`, `today` (midnight), `yesterday`, or an offset back from now: `-90min`/`-90m`,
    /// `-24h`, `-7d`, `-2w`, `-3mo`, `-1y`.
    pub fn parse_instant(&self, text: &str, now: Timestamp) -> Result<Timestamp, TimeWordError> {
        let t = text.trim();
        let lower = t.to_lowercase();
        let err = || TimeWordError::new(t, INSTANT_WORDS);
        if lower.is_empty() {
            return Err(err());
        }
        match lower.as_str() {
            "now" => return Ok(now),
            "today" => return Ok(self.start_of_day(now)),
            "yesterday" => {
                return self
                    .back(now, jiff::Span::new().days(1))
                    .map(|y| self.start_of_day(y))
                    .ok_or_else(err)
            }
            _ => {}
        }
        if let Some(rel) = lower.strip_prefix('-') {
            let span = relative_span(rel).ok_or_else(err)?;
            return self.back(now, span).ok_or_else(err);
        }
        if let Ok(ts) = t.parse::<Timestamp>() {
            return Ok(ts);
        }
        let spaced = t.replacen(' ', "T", 1);
        if let Ok(dt) = spaced.parse::<DateTime>() {
            return self.from_local(dt, None).ok_or_else(err);
        }
        if let Ok(date) = t.parse::<civil::Date>() {
            return Ok(self.start_of_date(date));
        }
        Err(err())
    }

    /// A period in words, relative to `now`, as `[from, to)`: `today`, `yesterday`,
    /// `this week`/`last week` (ISO weeks, Monday first), `this month`/`last month`,
    /// `this year`/`last year`, `last 24 hours`, `last 7 days` (also weeks, months, years; and
    /// the offsets of [`HouseTime::parse_instant`], `-24h`: from then until now), a month by
    /// name with or without a year (`October`, `Oktober 2025`; without one the latest that has
    /// begun), a year `2025`, a month `2026-10`, a day `2026-11-01`, or two instants
    /// `FROM/TO` (also `FROM..TO`). A current period (`this month`) ends now.
    pub fn parse_period(
        &self,
        text: &str,
        now: Timestamp,
    ) -> Result<(Timestamp, Timestamp), TimeWordError> {
        let t = text.trim();
        let lower = t.to_lowercase();
        let words: Vec<&str> = lower.split_whitespace().collect();
        let err = || TimeWordError::new(t, PERIOD_WORDS);
        let current = |unit: Unit| (self.start_of(unit, now), now);
        let previous = |unit: Unit| {
            let this = self.start_of(unit, now);
            let before = this
                .checked_sub(SignedDuration::from_secs(1))
                .unwrap_or(this);
            (self.start_of(unit, before), this)
        };
        let unit_of = |w: &str| match w.trim_end_matches('s') {
            "hour" | "stunde" | "stunden" => Some(Unit::Hour),
            "day" | "tag" | "tage" => Some(Unit::Day),
            "week" | "woche" | "wochen" => Some(Unit::Week),
            "month" | "monat" | "monate" => Some(Unit::Month),
            "year" | "jahr" | "jahre" => Some(Unit::Year),
            _ => None,
        };
        match words.as_slice() {
            ["today"] | ["heute"] => return Ok(current(Unit::Day)),
            ["yesterday"] | ["gestern"] => return Ok(previous(Unit::Day)),
            ["this" | "diese" | "dieser" | "dieses", u] => {
                if let Some(unit) = unit_of(u) {
                    return Ok(current(unit));
                }
            }
            ["last" | "previous" | "letzte" | "letzten" | "letzter" | "letztes", u] => {
                if let Some(unit) = unit_of(u) {
                    return Ok(previous(unit));
                }
            }
            ["last" | "past" | "letzte" | "letzten", n, u] => {
                let n: i64 = n.parse().map_err(|_| err())?;
                let unit = unit_of(u).ok_or_else(err)?;
                if !(1..=10_000).contains(&n) {
                    return Err(err());
                }
                let span = match unit {
                    Unit::Hour => jiff::Span::new().hours(n),
                    Unit::Day => jiff::Span::new().days(n),
                    Unit::Week => jiff::Span::new().weeks(n),
                    Unit::Month => jiff::Span::new().months(n),
                    Unit::Year => jiff::Span::new().years(n),
                };
                return Ok((self.back(now, span).ok_or_else(err)?, now));
            }
            _ => {}
        }
        if let Some((a, b)) = t.split_once('/').or_else(|| t.split_once("..")) {
            let from = self.parse_instant(a, now)?;
            let to = self.parse_instant(b, now)?;
            return Ok((from, to));
        }
        if lower.starts_with('-') {
            return Ok((self.parse_instant(t, now)?, now));
        }
        // A month by name, with or without a year.
        if let Some(month) = words.first().and_then(|w| month_number(w)) {
            let this = self.zoned(now).date();
            let year = match words.get(1) {
                Some(y) if words.len() == 2 => y.parse::<i16>().map_err(|_| err())?,
                None if month <= this.month() => this.year(),
                None => this.year() - 1,
                _ => return Err(err()),
            };
            return self.month_period(year, month).ok_or_else(err);
        }
        // `2025`, `2026-10`, `2026-11-01`.
        let digits: Vec<&str> = t.split('-').collect();
        let num = |s: &str| s.parse::<i32>().ok();
        match digits.as_slice() {
            [y] if y.len() == 4 => {
                let year = num(y).ok_or_else(err)? as i16;
                let first = civil::Date::new(year, 1, 1).map_err(|_| err())?;
                let next = civil::Date::new(year.saturating_add(1), 1, 1).map_err(|_| err())?;
                Ok((self.start_of_date(first), self.start_of_date(next)))
            }
            [y, m] if y.len() == 4 => {
                let (year, month) = (num(y).ok_or_else(err)?, num(m).ok_or_else(err)?);
                self.month_period(year as i16, month as i8).ok_or_else(err)
            }
            [_, _, _] => {
                let date: civil::Date = t.parse().map_err(|_| err())?;
                let next = date.tomorrow().map_err(|_| err())?;
                Ok((self.start_of_date(date), self.start_of_date(next)))
            }
            _ => Err(err()),
        }
    }

    /// `t` moved back by `span` on the local calendar (a month back from 31 March is the end
    /// of February).
    fn back(&self, t: Timestamp, span: jiff::Span) -> Option<Timestamp> {
        self.zoned(t).checked_sub(span).ok().map(|z| z.timestamp())
    }

    /// The local month `year`-`month` as `[from, to)`.
    fn month_period(&self, year: i16, month: i8) -> Option<(Timestamp, Timestamp)> {
        let first = civil::Date::new(year, month, 1).ok()?;
        let next = first.last_of_month().tomorrow().ok()?;
        Some((self.start_of_date(first), self.start_of_date(next)))
    }
}

/// A unit of the house's calendar.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Unit {
    Hour,
    Day,
    /// An ISO week, Monday to Sunday.
    Week,
    Month,
    Year,
}

impl Unit {
    /// `hour`, `day`, `week`, `month`, `year`.
    pub fn as_str(self) -> &'static str {
        match self {
            Unit::Hour => "hour",
            Unit::Day => "day",
            Unit::Week => "week",
            Unit::Month => "month",
            Unit::Year => "year",
        }
    }

    /// Parses [`Unit::as_str`]'s names; `None` otherwise.
    pub fn parse(s: &str) -> Option<Unit> {
        [Unit::Hour, Unit::Day, Unit::Week, Unit::Month, Unit::Year]
            .into_iter()
            .find(|u| u.as_str() == s)
    }
}

/// The instants [`HouseTime::parse_instant`] reads, for error messages.
const INSTANT_WORDS: &str = "an ISO 8601 time (2026-11-01T08:00:00Z, 2026-11-01T08:00 local, \
     2026-11-01), now, today, yesterday, or an offset back from now such as -24h, -7d, -2w, \
     -3mo, -1y";

/// The periods [`HouseTime::parse_period`] reads, for error messages.
const PERIOD_WORDS: &str = "today, yesterday, this/last week, this/last month, this/last year, \
     last 7 days (hours, weeks, months, years), -24h, a month (October, October 2025, 2026-10), \
     a year (2025), a day (2026-11-01) or FROM/TO with two ISO 8601 times";

/// A time in words that could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimeWordError {
    /// What was given.
    pub text: String,
    /// What is understood.
    pub expected: &'static str,
}

impl TimeWordError {
    fn new(text: &str, expected: &'static str) -> Self {
        Self {
            text: text.chars().take(80).collect(),
            expected,
        }
    }
}

impl fmt::Display for TimeWordError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:?} is not a time this server reads; use {}",
            self.text, self.expected
        )
    }
}

impl std::error::Error for TimeWordError {}

/// `24h`, `90min`, `90m`, `7d`, `2w`, `3mo`, `1y` (after the `-`) as a span.
fn relative_span(rel: &str) -> Option<jiff::Span> {
    let split = rel.find(|c: char| !c.is_ascii_digit())?;
    let (n, unit) = rel.split_at(split);
    let n: i64 = n.parse().ok().filter(|n| (1..=100_000).contains(n))?;
    Some(match unit.trim() {
        "m" | "min" | "mins" | "minutes" => jiff::Span::new().minutes(n),
        "h" | "hour" | "hours" => jiff::Span::new().hours(n),
        "d" | "day" | "days" => jiff::Span::new().days(n),
        "w" | "week" | "weeks" => jiff::Span::new().weeks(n),
        "mo" | "month" | "months" => jiff::Span::new().months(n),
        "y" | "year" | "years" => jiff::Span::new().years(n),
        _ => return None,
    })
}

/// A month's number from its English or German name or three-letter abbreviation.
fn month_number(word: &str) -> Option<i8> {
    const NAMES: [&[&str]; 12] = [
        &["january", "jan", "januar", "jänner", "jaenner"],
        &["february", "feb", "februar"],
        &["march", "mar", "märz", "maerz", "mrz"],
        &["april", "apr"],
        &["may", "mai"],
        &["june", "jun", "juni"],
        &["july", "jul", "juli"],
        &["august", "aug"],
        &["september", "sep", "sept"],
        &["october", "oct", "oktober", "okt"],
        &["november", "nov"],
        &["december", "dec", "dezember", "dez"],
    ];
    NAMES
        .iter()
        .position(|names| names.contains(&word))
        .map(|i| i as i8 + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vienna() -> HouseTime {
        // The POSIX rule of Europe/Vienna: the tests do not depend on the machine's tzdata.
        HouseTime::named("CET-1CEST,M3.5.0,M10.5.0/3").unwrap()
    }

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn local(s: &str) -> DateTime {
        s.parse().unwrap()
    }

    #[test]
    fn loxone_seconds_count_from_2009_utc() {
        assert_eq!(from_loxone_secs(0), Some(ts("2009-01-01T00:00:00Z")));
        assert_eq!(to_loxone_secs(ts("2009-01-01T00:00:00Z")), 0);
        assert_eq!(to_loxone_secs(ts("2026-03-29T01:00:00Z")), 543_978_000);
        assert_eq!(
            from_loxone_secs(543_978_000),
            Some(ts("2026-03-29T01:00:00Z"))
        );
        assert_eq!(from_loxone_secs(i64::MAX), None);
        assert!(loxone_now() > 500_000_000);
    }

    #[test]
    fn local_seconds_are_wall_clock_seconds_since_2009() {
        let t = vienna();
        // 2009-01-01 00:00 in Vienna (CET, +01:00) is 2008-12-31 23:00 UTC.
        assert_eq!(t.from_local_secs(0, None), Some(ts("2008-12-31T23:00:00Z")));
        assert_eq!(t.to_local_secs(ts("2008-12-31T23:00:00Z")), 0);
        // A summer instant: +02:00.
        let summer = ts("2026-07-01T10:00:00Z");
        let secs = t.to_local_secs(summer);
        assert_eq!(
            secs,
            local("2026-07-01T12:00:00")
                .duration_since(LOCAL_EPOCH)
                .as_secs()
        );
        assert_eq!(t.from_local_secs(secs, None), Some(summer));
    }

    #[test]
    fn the_spring_gap_maps_forward() {
        // 2026-03-29: 02:00 CET becomes 03:00 CEST; 02:30 never happens on the wall clock.
        let t = vienna();
        let gap = local("2026-03-29T02:30:00")
            .duration_since(LOCAL_EPOCH)
            .as_secs();
        assert_eq!(
            t.from_local_secs(gap, None),
            Some(ts("2026-03-29T01:30:00Z"))
        );
        assert_eq!(
            t.format(ts("2026-03-29T01:30:00Z")),
            "2026-03-29T03:30:00+02:00"
        );
        let before = local("2026-03-29T01:59:59")
            .duration_since(LOCAL_EPOCH)
            .as_secs();
        assert_eq!(
            t.from_local_secs(before, None),
            Some(ts("2026-03-29T00:59:59Z"))
        );
        let after = local("2026-03-29T03:00:00")
            .duration_since(LOCAL_EPOCH)
            .as_secs();
        assert_eq!(
            t.from_local_secs(after, None),
            Some(ts("2026-03-29T01:00:00Z"))
        );
        // That local day has 23 hours.
        let day = t.start_of_day(ts("2026-03-29T12:00:00Z"));
        let next = t.start_of_day(ts("2026-03-30T12:00:00Z"));
        assert_eq!(day, ts("2026-03-28T23:00:00Z"));
        assert_eq!(next.duration_since(day), SignedDuration::from_hours(23));
    }

    #[test]
    fn the_repeated_autumn_hour_follows_the_series() {
        // 2026-10-25: 03:00 CEST goes back to 02:00 CET; 02:30 happens twice.
        let t = vienna();
        let twice = local("2026-10-25T02:30:00")
            .duration_since(LOCAL_EPOCH)
            .as_secs();
        let first = ts("2026-10-25T00:30:00Z");
        let second = ts("2026-10-25T01:30:00Z");
        assert_eq!(t.from_local_secs(twice, None), Some(first));
        // In a series: after 02:45 CEST (00:45 UTC) the next 02:30 is the second one.
        assert_eq!(
            t.from_local_secs(twice, Some(ts("2026-10-25T00:45:00Z"))),
            Some(second)
        );
        // An hourly series: 02:00 CEST (00:00 UTC), then 02:00 again, which is CET.
        let two = local("2026-10-25T02:00:00")
            .duration_since(LOCAL_EPOCH)
            .as_secs();
        let first_two = t.from_local_secs(two, Some(ts("2026-10-24T23:00:00Z")));
        assert_eq!(first_two, Some(ts("2026-10-25T00:00:00Z")));
        assert_eq!(
            t.from_local_secs(two, first_two),
            Some(ts("2026-10-25T01:00:00Z"))
        );
        assert_eq!(
            HouseTime::local_secs_of_text("2026-10-25 02:00:00"),
            Some(two)
        );
        assert_eq!(HouseTime::local_secs_of_text("2026-10-25T02:00"), None);
        assert_eq!(
            HouseTime::local_secs_of_text("2009-01-01 00:00:00"),
            Some(0)
        );
        // After an earlier record the first occurrence stays.
        assert_eq!(
            t.from_local_secs(twice, Some(ts("2026-10-25T00:15:00Z"))),
            Some(first)
        );
        // Both instants read back as the same wall-clock second.
        assert_eq!(t.to_local_secs(first), twice);
        assert_eq!(t.to_local_secs(second), twice);
        assert_eq!(t.format(first), "2026-10-25T02:30:00+02:00");
        assert_eq!(t.format(second), "2026-10-25T02:30:00+01:00");
        // That local day has 25 hours.
        let day = t.start_of_day(ts("2026-10-25T12:00:00Z"));
        let next = t.start_of_day(ts("2026-10-26T12:00:00Z"));
        assert_eq!(next.duration_since(day), SignedDuration::from_hours(25));
    }

    #[test]
    fn units_begin_on_the_local_calendar() {
        let t = vienna();
        // 2026-03-29 has 23 hours, 2026-10-25 has 25.
        let spring = ts("2026-03-29T10:00:00Z");
        let day = t.start_of(Unit::Day, spring);
        assert_eq!(day, ts("2026-03-28T23:00:00Z"));
        assert_eq!(t.next_start(Unit::Day, spring), ts("2026-03-29T22:00:00Z"));
        let autumn = ts("2026-10-25T10:00:00Z");
        assert_eq!(
            t.next_start(Unit::Day, autumn)
                .duration_since(t.start_of(Unit::Day, autumn)),
            SignedDuration::from_hours(25)
        );
        assert_eq!(
            t.start_of(Unit::Hour, ts("2026-10-25T01:30:00Z")),
            ts("2026-10-25T01:00:00Z")
        );
        assert_eq!(
            t.start_of(Unit::Hour, ts("2026-10-25T01:30:00.123456789Z")),
            ts("2026-10-25T01:00:00Z"),
            "the start of an hour has no fraction of a second"
        );
        assert_eq!(
            t.next_start(Unit::Hour, ts("2026-10-25T01:30:00Z")),
            ts("2026-10-25T02:00:00Z")
        );
        assert_eq!(
            t.next_start(Unit::Month, spring),
            ts("2026-03-31T22:00:00Z")
        );
        assert_eq!(t.next_start(Unit::Year, spring), ts("2026-12-31T23:00:00Z"));
        assert_eq!(t.next_start(Unit::Week, spring), ts("2026-03-29T22:00:00Z"));
        // A half-hour zone: hours begin at :30 UTC.
        let india = HouseTime::named("IST-5:30").unwrap();
        assert_eq!(
            india.start_of(Unit::Hour, ts("2026-01-01T10:10:00Z")),
            ts("2026-01-01T09:30:00Z")
        );
        assert_eq!(Unit::parse("week"), Some(Unit::Week));
        assert_eq!(Unit::parse("fortnight"), None);
    }

    #[test]
    fn instants_and_periods_in_words() {
        let t = vienna();
        // Friday 2026-11-27 12:00 UTC (13:00 CET).
        let now = ts("2026-11-27T12:00:00Z");
        let i = |s: &str| t.parse_instant(s, now).unwrap();
        assert_eq!(i("now"), now);
        assert_eq!(i("-24h"), ts("2026-11-26T12:00:00Z"));
        assert_eq!(i("-90min"), ts("2026-11-27T10:30:00Z"));
        assert_eq!(i("-1mo"), ts("2026-10-27T12:00:00Z"));
        assert_eq!(i("today"), ts("2026-11-26T23:00:00Z"));
        assert_eq!(i("yesterday"), ts("2026-11-25T23:00:00Z"));
        assert_eq!(i("2026-11-01T08:00:00Z"), ts("2026-11-01T08:00:00Z"));
        assert_eq!(i("2026-11-01T08:00:00+01:00"), ts("2026-11-01T07:00:00Z"));
        assert_eq!(i("2026-07-01 08:00"), ts("2026-07-01T06:00:00Z"));
        assert_eq!(i("2026-11-01"), ts("2026-10-31T23:00:00Z"));
        for bad in ["", "soon", "-24x", "-0h", "2026-13-01", "-999999999d"] {
            let e = t.parse_instant(bad, now).unwrap_err();
            assert!(e.to_string().contains("-24h"), "{e}");
        }
        let p = |s: &str| t.parse_period(s, now).unwrap();
        assert_eq!(p("today"), (ts("2026-11-26T23:00:00Z"), now));
        assert_eq!(
            p("Yesterday"),
            (ts("2026-11-25T23:00:00Z"), ts("2026-11-26T23:00:00Z"))
        );
        assert_eq!(
            p("last month"),
            (ts("2026-09-30T22:00:00Z"), ts("2026-10-31T23:00:00Z"))
        );
        assert_eq!(p("this month"), (ts("2026-10-31T23:00:00Z"), now));
        assert_eq!(
            p("last week"),
            (ts("2026-11-15T23:00:00Z"), ts("2026-11-22T23:00:00Z"))
        );
        assert_eq!(p("last year").0, ts("2024-12-31T23:00:00Z"));
        assert_eq!(p("last 7 days"), (ts("2026-11-20T12:00:00Z"), now));
        assert_eq!(p("-24h"), (ts("2026-11-26T12:00:00Z"), now));
        assert_eq!(
            p("October"),
            (ts("2026-09-30T22:00:00Z"), ts("2026-10-31T23:00:00Z"))
        );
        assert_eq!(
            p("Dezember").0,
            ts("2025-11-30T23:00:00Z"),
            "the latest December that began"
        );
        assert_eq!(p("oktober 2025").0, ts("2025-09-30T22:00:00Z"));
        assert_eq!(p("2026-10"), p("October"));
        assert_eq!(p("2025").1, ts("2025-12-31T23:00:00Z"));
        assert_eq!(
            p("2026-03-29").1.duration_since(p("2026-03-29").0),
            SignedDuration::from_hours(23)
        );
        assert_eq!(
            p("2026-11-01T00:00:00Z/2026-11-02T00:00:00Z"),
            (ts("2026-11-01T00:00:00Z"), ts("2026-11-02T00:00:00Z"))
        );
        assert_eq!(p("-7d..now"), (ts("2026-11-20T12:00:00Z"), now));
        for bad in [
            "someday",
            "last fortnight",
            "last 0 days",
            "October 20x5",
            "2026-1x",
        ] {
            let e = t.parse_period(bad, now).unwrap_err();
            assert!(e.to_string().contains("last month"), "{e}");
        }
    }

    #[test]
    fn bell_times_are_local() {
        let t = vienna();
        assert_eq!(
            t.parse_compact("20261127101500", None),
            Some(ts("2026-11-27T09:15:00Z"))
        );
        assert_eq!(t.parse_compact("2026112710150", None), None);
        assert_eq!(t.parse_compact("2026112710150x", None), None);
        assert_eq!(t.parse_compact("20261399101500", None), None);
        // Written as a Miniserver writes them: the wall clock, and back.
        assert_eq!(t.compact(ts("2026-11-27T09:15:00Z")), "20261127101500");
        assert_eq!(t.compact(ts("2026-07-01T22:30:05Z")), "20260702003005");
        assert_eq!(
            t.parse_compact(&t.compact(ts("2026-07-01T22:30:05Z")), None),
            Some(ts("2026-07-01T22:30:05Z"))
        );
    }

    #[test]
    fn calendar_boundaries_are_local() {
        let t = vienna();
        // Sunday 2026-03-29 12:00 UTC (14:00 CEST): the week began on Monday 23 March (CET).
        let at = ts("2026-03-29T12:00:00Z");
        assert_eq!(t.start_of_week(at), ts("2026-03-22T23:00:00Z"));
        assert_eq!(t.start_of_month(at), ts("2026-02-28T23:00:00Z"));
        assert_eq!(t.start_of_year(at), ts("2025-12-31T23:00:00Z"));
        // 2026-11-01 00:30 local is still October in UTC.
        let early = ts("2026-10-31T23:30:00Z");
        assert_eq!(t.start_of_month(early), ts("2026-10-31T23:00:00Z"));
        assert_eq!(t.start_of_day(early), ts("2026-10-31T23:00:00Z"));
    }

    #[test]
    fn zones_by_name_and_errors() {
        assert_eq!(
            HouseTime::utc().format(ts("2026-01-01T00:00:00Z")),
            "2026-01-01T00:00:00+00:00"
        );
        let err = HouseTime::named("Mars/Olympus_Mons").unwrap_err();
        assert!(err.to_string().contains("Mars/Olympus_Mons"), "{err}");
        // The system database, where the machine has one: the IANA rules agree with the POSIX
        // rule above on both 2026 changes.
        if let Ok(v) = HouseTime::named("Europe/Vienna") {
            assert_eq!(v.name(), "Europe/Vienna");
            for at in [
                "2026-03-29T01:30:00Z",
                "2026-10-25T00:30:00Z",
                "2026-10-25T01:30:00Z",
            ] {
                assert_eq!(v.format(ts(at)), vienna().format(ts(at)));
            }
        }
    }
}
