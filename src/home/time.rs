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
    /// before it (a series read in order: each record passes the previous record's instant).
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
                    Some(prev) if first < prev => later.to_timestamp(local).ok(),
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
