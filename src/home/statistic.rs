//! What the Miniserver records of a control over time, and the seam through which the house
//! asks for it.
//!
//! A Loxone structure file declares a control's statistics in two generations
//! (statistics.md A1, A2; read by `loxone::structure` into [`Statistic`]):
//! - **V1** (`statistic`): one recording per control, up to seven outputs (`V`, `V2`, ...
//!   columns), kept per month, timed in the Miniserver's **local** wall-clock seconds since
//!   2009-01-01;
//! - **V2** (`statisticV2`, firmware 13.1+): groups of data points (`output` is a state name
//!   such as `total`), each group with its recording mode and `accumulated: true` for counters,
//!   timed in Unix UTC seconds; the Miniserver can sum a counter's differences per hour, day,
//!   month or year (`diff`).
//!
//! The seams that answer with these types live beside the house's other seam, the
//! `Controller`: [`super::house::Statistics`] to the Miniserver (the Loxone adapter implements
//! it; `home::history` is its one caller) and [`super::house::Record`] to the server's own
//! record of state changes (the SQLite store implements it). Both answer [`Records`]: times
//! and values, plus the problems met on the way (a record cut short, an error answer), so that
//! a partial answer can say so instead of summing wrong.

/// A control's statistics as its structure file declares them; both empty when it has none.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Statistic {
    /// `statistic` (V1), if present with at least one output.
    pub v1: Option<StatisticV1>,
    /// `statisticV2.groups` (V2), empty when absent.
    pub v2: Vec<StatisticGroup>,
}

impl Statistic {
    /// Whether the Miniserver records anything of this control.
    pub fn is_empty(&self) -> bool {
        self.v1.is_none() && self.v2.is_empty()
    }

    /// The V2 group recording the state `output` and its position among the group's data
    /// points.
    pub fn v2_group_of(&self, output: &str) -> Option<(&StatisticGroup, usize)> {
        self.v2.iter().find_map(|g| {
            g.points
                .iter()
                .position(|p| p.output.eq_ignore_ascii_case(output))
                .map(|i| (g, i))
        })
    }
}

/// `statistic` (V1): `frequency` and the outputs, in the order of the recorded columns.
#[derive(Debug, Clone, PartialEq)]
pub struct StatisticV1 {
    /// 0 none, 1 every change, 2-6 averages (deprecated), 8/9/10/11/12 every 5/10/30/60/15
    /// minutes (per Loxone structure file docs).
    pub frequency: i64,
    pub outputs: Vec<StatisticOutput>,
}

/// One V1 output (a column of the recording).
#[derive(Debug, Clone, PartialEq)]
pub struct StatisticOutput {
    /// Row 0-6.
    pub id: i64,
    /// The name the owner gave it in Loxone Config (`"Gesamtverbrauch"`, `"HDO"`).
    pub name: String,
    /// A printf format such as `%.1f°` (its unit), if given.
    pub format: Option<String>,
    /// 0 line, 1 digital, 2 bar.
    pub visu_type: i64,
}

/// One V2 group: data points recorded together.
#[derive(Debug, Clone, PartialEq)]
pub struct StatisticGroup {
    /// The group id of `getStatistic/.../{group}`.
    pub id: i64,
    /// 0 none, 1 every change (at most one a minute), 7 every change, 8-12 as V1.
    pub mode: i64,
    /// `accumulated: true`: a counter (meter totals); `diff` gives its consumption per unit.
    pub accumulated: bool,
    pub points: Vec<StatisticPoint>,
}

/// One data point of a V2 group.
#[derive(Debug, Clone, PartialEq)]
pub struct StatisticPoint {
    pub title: String,
    pub format: Option<String>,
    /// The state it records (`actual`, `total`, `totalNeg`, `value`, `active`, ...).
    pub output: String,
}

/// `raw` (what was recorded) or `diff` (the sum of a counter's differences per unit) of a V2
/// request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum V2Mode {
    Raw,
    Diff,
}

impl V2Mode {
    /// `raw` or `diff`, as the command spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            V2Mode::Raw => "raw",
            V2Mode::Diff => "diff",
        }
    }
}

/// The unit of a V2 request: every record, or one per Miniserver-local hour, day, month or
/// year.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum V2Unit {
    All,
    Hour,
    Day,
    Month,
    Year,
}

impl V2Unit {
    /// `all`, `hour`, `day`, `month`, `year`, as the command spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            V2Unit::All => "all",
            V2Unit::Hour => "hour",
            V2Unit::Day => "day",
            V2Unit::Month => "month",
            V2Unit::Year => "year",
        }
    }
}

/// One V2 request: `dev/sps/getStatistic/{uuid}/{mode}/{from}/{until}/{unit}/{group}/{output}`,
/// both ends inclusive, in Unix UTC seconds.
#[derive(Debug, Clone, PartialEq)]
pub struct V2Request {
    pub group: i64,
    pub output: String,
    /// How many data points the group has (the body's record width if the Miniserver ignores
    /// the output filter).
    pub group_size: usize,
    pub mode: V2Mode,
    pub unit: V2Unit,
    pub from_unix: i64,
    pub until_unix: i64,
}

/// Which V2 groups the Miniserver has data of (`getStatisticInfo`): group id and the Unix UTC
/// second the recording began.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupSince {
    pub id: i64,
    pub active_since: i64,
}

/// Time-stamped values as read: `times[i]` with the `width` values
/// `values[i * width .. (i + 1) * width]`. Times are Unix UTC seconds (V2), Miniserver-local
/// seconds since 2009-01-01 (V1, converted by `home::history`) or Unix milliseconds (the
/// local record), as the producer documents.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Records {
    pub times: Vec<i64>,
    pub values: Vec<f64>,
    pub width: usize,
    /// What was left out or could not be read, in words (a record cut short, values that are
    /// not finite numbers, an answer larger than the bound). Empty for a clean answer.
    pub problems: Vec<String>,
}

impl Records {
    /// No records of `width` values.
    pub fn empty(width: usize) -> Self {
        Records {
            width,
            ..Records::default()
        }
    }

    /// How many records.
    pub fn len(&self) -> usize {
        self.times.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.times.is_empty()
    }

    /// The values of record `i`.
    pub fn row(&self, i: usize) -> &[f64] {
        &self.values[i * self.width..(i + 1) * self.width]
    }

    /// Adds a record (`values` must have `width` entries).
    pub fn push(&mut self, time: i64, values: &[f64]) {
        debug_assert_eq!(values.len(), self.width);
        self.times.push(time);
        self.values.extend_from_slice(values);
    }

    /// Only column `col`, as records of width 1.
    pub fn column(&self, col: usize) -> Records {
        let mut out = Records::empty(1);
        out.problems = self.problems.clone();
        if col >= self.width {
            return out;
        }
        for i in 0..self.len() {
            out.push(self.times[i], &[self.row(i)[col]]);
        }
        out
    }
}
