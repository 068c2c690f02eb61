//! Mahimahi bandwidth traces: when the bottleneck may deliver.
//!
//! A trace file holds one integer per line, a millisecond timestamp from the start of the link;
//! each line is one delivery opportunity worth [`OPPORTUNITY_BYTES`]. Repeated timestamps are
//! several opportunities in the same millisecond. When the file ends it repeats from the start
//! shifted by its last timestamp (the period), exactly as mahimahi's `LinkQueue` does: the k-th
//! opportunity (0-based, k unbounded) is at `ts[k % n] + (k / n) * period`. A trace whose first
//! timestamp is 0 therefore has two opportunities at every multiple of the period, as in
//! mahimahi. Opportunity times are measured from simulated time zero.
//!
//! Like mahimahi we reject an empty trace, a decreasing timestamp and a zero period (which would
//! put infinitely many opportunities at time 0). Unlike mahimahi we tolerate trailing blank lines
//! and surrounding whitespace (including CRLF line ends), which editors add silently.

use std::fmt;

use mpsched_core::time::{Duration, Time};

/// Bytes one delivery opportunity carries. Mahimahi accounts 1504 bytes (a 1500-byte IP packet
/// plus the 4-byte TUN header it reads) per line, byte-wise across packets.
pub const OPPORTUNITY_BYTES: u32 = 1504;

const NS_PER_MS: u64 = 1_000_000;

/// A loaded trace, shared read-only between every link (and every run) that replays it.
#[derive(Clone)]
pub struct Trace {
    name: String,
    /// Opportunity timestamps of one period, ms, non-decreasing, non-empty.
    ms: Vec<u64>,
    /// The last timestamp, > 0: the shift applied at each repetition.
    period_ms: u64,
}

/// Why a trace cannot be used. Every variant renders as one line that names the file (and the
/// line, when one is at fault), so the CLI can print it as is.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error("{name}: cannot read: {source}")]
    Io {
        name: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{name}:{line}: not a non-negative integer: {text:?}")]
    NotAnInteger {
        name: String,
        line: usize,
        text: String,
    },
    #[error("{name}:{line}: timestamp {text} is too large")]
    TooLarge {
        name: String,
        line: usize,
        text: String,
    },
    #[error("{name}:{line}: timestamp {value} is smaller than the previous one ({previous})")]
    Decreasing {
        name: String,
        line: usize,
        value: u64,
        previous: u64,
    },
    #[error("{name}:{line}: blank line inside the trace")]
    BlankLine { name: String, line: usize },
    #[error("{name}: empty trace (no timestamps)")]
    Empty { name: String },
    #[error("{name}: last timestamp is 0, so the trace lasts no time and cannot repeat")]
    ZeroPeriod { name: String },
}

/// Longest offending text quoted in an error: a binary file must still give a one-line message.
const MAX_QUOTED_CHARS: usize = 40;

impl Trace {
    /// Reads and parses the file at `path`; errors name the file as `path` was written.
    pub fn load(path: &str) -> Result<Trace, TraceError> {
        let bytes = std::fs::read(path).map_err(|source| TraceError::Io {
            name: path.to_string(),
            source,
        })?;
        // Lossy, so that a stray non-UTF-8 byte is reported with its line number rather than as
        // an unlocated I/O error.
        Trace::parse(path, &String::from_utf8_lossy(&bytes))
    }

    /// Parses trace text; `name` is only used in error messages and [`Trace::name`].
    pub fn parse(name: &str, text: &str) -> Result<Trace, TraceError> {
        let mut ms: Vec<u64> = Vec::new();
        let mut first_blank: Option<usize> = None;
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let field = raw.trim();
            if field.is_empty() {
                first_blank.get_or_insert(line);
                continue;
            }
            if let Some(blank) = first_blank {
                return Err(TraceError::BlankLine {
                    name: name.to_string(),
                    line: blank,
                });
            }
            // `u64::from_str` also accepts a leading '+'; mahimahi's format is digits only.
            if !field.bytes().all(|b| b.is_ascii_digit()) {
                return Err(TraceError::NotAnInteger {
                    name: name.to_string(),
                    line,
                    text: field.chars().take(MAX_QUOTED_CHARS).collect(),
                });
            }
            let value: u64 = field.parse().map_err(|_| TraceError::TooLarge {
                name: name.to_string(),
                line,
                text: field.chars().take(MAX_QUOTED_CHARS).collect(),
            })?;
            if let Some(&previous) = ms.last() {
                if value < previous {
                    return Err(TraceError::Decreasing {
                        name: name.to_string(),
                        line,
                        value,
                        previous,
                    });
                }
            }
            ms.push(value);
        }
        let period_ms = match ms.last() {
            None => {
                return Err(TraceError::Empty {
                    name: name.to_string(),
                })
            }
            Some(0) => {
                return Err(TraceError::ZeroPeriod {
                    name: name.to_string(),
                })
            }
            Some(&last) => last,
        };
        Ok(Trace {
            name: name.to_string(),
            ms,
            period_ms,
        })
    }

    /// The name given to `parse` (the path, for `load`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// One period's opportunity timestamps, ms, as in the file.
    pub fn timestamps_ms(&self) -> &[u64] {
        &self.ms
    }

    /// Opportunities in one period (the number of lines).
    pub fn opportunities_per_period(&self) -> u64 {
        self.ms.len() as u64
    }

    /// The last timestamp: the trace repeats shifted by this much.
    pub fn period_ms(&self) -> u64 {
        self.period_ms
    }

    pub fn period(&self) -> Duration {
        Duration::from_millis(self.period_ms)
    }

    /// Long-run capacity in bits per second: one period's opportunities at 1504 bytes each.
    pub fn mean_rate_bps(&self) -> f64 {
        self.ms.len() as f64 * f64::from(OPPORTUNITY_BYTES) * 8.0 / (self.period_ms as f64 * 1e-3)
    }

    /// Time of the k-th opportunity in ms (k may run past the file: the trace repeats).
    pub fn opportunity_ms(&self, k: u64) -> u64 {
        let n = self.opportunities_per_period();
        self.ms[(k % n) as usize].saturating_add((k / n).saturating_mul(self.period_ms))
    }

    /// Time of the k-th opportunity.
    pub fn opportunity(&self, k: u64) -> Time {
        ms_to_time(self.opportunity_ms(k))
    }

    /// Index of the first opportunity strictly after `t`.
    ///
    /// Strictly, because mahimahi burns every opportunity at or before the current millisecond
    /// before it enqueues an arriving packet: a packet never uses an opportunity of the instant
    /// it arrives. O(log n).
    pub fn first_after(&self, t: Time) -> u64 {
        // Timestamps are whole ms, so `ts * 1e6 > t` iff `ts > floor(t / 1e6)`.
        let m = t.0 / NS_PER_MS;
        let cycle = m / self.period_ms;
        let within = m % self.period_ms;
        // `within < period = ms[n-1]`, so some slot of this cycle qualifies.
        let slot = self.ms.partition_point(|&x| x <= within) as u128;
        let k = u128::from(cycle) * u128::from(self.opportunities_per_period()) + slot;
        u64::try_from(k).unwrap_or(u64::MAX)
    }

    /// Index of the first opportunity at or after `t`.
    pub fn first_at_or_after(&self, t: Time) -> u64 {
        match t.0.checked_sub(1) {
            Some(before) => self.first_after(Time(before)),
            None => 0,
        }
    }

    /// Number of opportunities in `[from, to)`.
    pub fn opportunities_between(&self, from: Time, to: Time) -> u64 {
        if to <= from {
            return 0;
        }
        self.first_at_or_after(to) - self.first_at_or_after(from)
    }

    /// A cursor on the k-th opportunity; stepping it avoids a division per opportunity.
    pub fn cursor(&self, k: u64) -> TraceCursor {
        let n = self.opportunities_per_period();
        TraceCursor {
            index: k,
            slot: (k % n) as usize,
            base_ms: (k / n).saturating_mul(self.period_ms),
        }
    }

    /// The opportunity times from the k-th on, without end.
    pub fn opportunities(&self, k: u64) -> Opportunities<'_> {
        Opportunities {
            trace: self,
            cursor: self.cursor(k),
        }
    }
}

impl fmt::Debug for Trace {
    // The timestamps can number hundreds of thousands; a summary is what a log wants.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Trace")
            .field("name", &self.name)
            .field("opportunities_per_period", &self.ms.len())
            .field("period_ms", &self.period_ms)
            .finish()
    }
}

fn ms_to_time(ms: u64) -> Time {
    Time(ms.saturating_mul(NS_PER_MS))
}

/// A position in a trace's endless opportunity sequence. It holds no borrow, so a link can keep
/// one beside its `Arc<Trace>`; pass the same trace to every call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceCursor {
    index: u64,
    slot: usize,
    base_ms: u64,
}

impl TraceCursor {
    /// k: how many opportunities precede this one.
    pub fn index(&self) -> u64 {
        self.index
    }

    /// Time of the opportunity under the cursor.
    pub fn time(&self, trace: &Trace) -> Time {
        ms_to_time(self.base_ms.saturating_add(trace.ms[self.slot]))
    }

    /// Moves to the next opportunity.
    pub fn advance(&mut self, trace: &Trace) {
        self.index = self.index.saturating_add(1);
        self.slot += 1;
        if self.slot == trace.ms.len() {
            self.slot = 0;
            self.base_ms = self.base_ms.saturating_add(trace.period_ms);
        }
    }
}

/// Iterator over opportunity times; never ends.
#[derive(Clone, Debug)]
pub struct Opportunities<'a> {
    trace: &'a Trace,
    cursor: TraceCursor,
}

impl Iterator for Opportunities<'_> {
    type Item = Time;

    fn next(&mut self) -> Option<Time> {
        let t = self.cursor.time(self.trace);
        self.cursor.advance(self.trace);
        Some(t)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (usize::MAX, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Time {
        ms_to_time(v)
    }

    fn trace(text: &str) -> Trace {
        Trace::parse("t.down", text).unwrap()
    }

    fn error(text: &str) -> String {
        Trace::parse("trace.down", text).unwrap_err().to_string()
    }

    #[test]
    fn trace_parses_one_opportunity_per_line() {
        let t = trace("1\n1\n3\n5\n");
        assert_eq!(t.timestamps_ms(), &[1, 1, 3, 5]);
        assert_eq!(t.period_ms(), 5);
        assert_eq!(t.period(), Duration::from_millis(5));
        assert_eq!(t.opportunities_per_period(), 4);
        assert_eq!(t.name(), "t.down");
    }

    #[test]
    fn trace_tolerates_trailing_blank_lines_and_crlf() {
        let t = trace("2\r\n4\r\n\r\n\n  \n");
        assert_eq!(t.timestamps_ms(), &[2, 4]);
    }

    #[test]
    fn trace_repeats_shifted_by_period() {
        let t = trace("0\n2\n5\n");
        let first: Vec<u64> = (0..7).map(|k| t.opportunity_ms(k)).collect();
        // Slot 0 of each repetition coincides with the last slot of the previous one.
        assert_eq!(first, [0, 2, 5, 5, 7, 10, 10]);
        assert_eq!(t.opportunity(4), ms(7));
        assert_eq!(t.opportunity(3_000_000_001), ms(5 * 1_000_000_000 + 2));
    }

    #[test]
    fn trace_cursor_agrees_with_indexing() {
        let t = trace("1\n1\n4\n9\n");
        let mut cursor = t.cursor(6);
        for k in 6..40 {
            assert_eq!(cursor.index(), k);
            assert_eq!(cursor.time(&t), t.opportunity(k));
            cursor.advance(&t);
        }
        let times: Vec<Time> = t.opportunities(2).take(3).collect();
        assert_eq!(times, [ms(4), ms(9), ms(10)]);
    }

    #[test]
    fn trace_first_after_is_strict() {
        let t = trace("1\n1\n4\n9\n");
        assert_eq!(t.first_after(Time::ZERO), 0);
        assert_eq!(t.first_after(ms(1)), 2);
        assert_eq!(t.first_after(Time(ms(1).0 - 1)), 0);
        assert_eq!(t.first_after(Time(ms(1).0 + 1)), 2);
        assert_eq!(t.first_after(ms(8)), 3);
        // 9 ms is the end of period 0 and the base of period 1 (slot 0 at 9 + 1 = 10 ms).
        assert_eq!(t.first_after(ms(9)), 4);
        assert_eq!(t.opportunity(4), ms(10));
        assert_eq!(t.first_after(ms(10)), 6);
        assert_eq!(t.first_at_or_after(ms(10)), 4);
        assert_eq!(t.first_at_or_after(Time::ZERO), 0);
    }

    #[test]
    fn trace_counts_opportunities_in_an_interval() {
        let t = trace("1\n1\n4\n9\n");
        assert_eq!(t.opportunities_between(Time::ZERO, ms(9)), 3);
        assert_eq!(t.opportunities_between(Time::ZERO, Time(ms(9).0 + 1)), 4);
        assert_eq!(t.opportunities_between(ms(9), ms(18)), 4);
        assert_eq!(t.opportunities_between(ms(5), ms(5)), 0);
    }

    #[test]
    fn trace_mean_rate_counts_1504_bytes_per_line() {
        // 12 opportunities in 12 ms: 1504 * 8 bits per ms.
        let text: String = (1..=12).map(|v| format!("{v}\n")).collect();
        assert_eq!(trace(&text).mean_rate_bps(), 1504.0 * 8.0 * 1000.0);
    }

    #[test]
    fn trace_decreasing_line_is_named() {
        let text = "1\n2\n3\n4\n5\n6\n7\n7\n7\n7\n7\n5\n";
        assert_eq!(
            error(text),
            "trace.down:12: timestamp 5 is smaller than the previous one (7)"
        );
    }

    #[test]
    fn trace_garbage_line_is_named() {
        assert_eq!(
            error("1\n2\nabc\n"),
            r#"trace.down:3: not a non-negative integer: "abc""#
        );
        assert_eq!(
            error("-4\n"),
            r#"trace.down:1: not a non-negative integer: "-4""#
        );
        assert_eq!(
            error("99999999999999999999999\n"),
            "trace.down:1: timestamp 99999999999999999999999 is too large"
        );
    }

    #[test]
    fn trace_blank_line_inside_is_named() {
        assert_eq!(
            error("1\n\n2\n"),
            "trace.down:2: blank line inside the trace"
        );
    }

    #[test]
    fn trace_empty_is_an_error() {
        assert_eq!(error(""), "trace.down: empty trace (no timestamps)");
        assert_eq!(error("\n\n"), "trace.down: empty trace (no timestamps)");
    }

    #[test]
    fn trace_zero_period_is_an_error() {
        assert!(error("0\n0\n").starts_with("trace.down: last timestamp is 0"));
    }

    #[test]
    fn trace_missing_file_is_one_line() {
        let message = Trace::load("/nonexistent/trace.down")
            .unwrap_err()
            .to_string();
        assert!(message.starts_with("/nonexistent/trace.down: cannot read: "));
        assert!(!message.contains('\n'));
    }
}
