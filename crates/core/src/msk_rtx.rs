//! Upstream Linux's MPTCP-level retransmission (net/mptcp/protocol.c, Linux 6.18), for the
//! schedulers that model the upstream kernel ([`Scheduler::msk_retransmit`]).
//!
//! A subflow's own timeout does not move its data elsewhere there (v0.9x did, at once). The
//! MPTCP socket has a retransmission timer of its own (`icsk_retransmit_timer` of the msk,
//! `mptcp_retransmit_timer`):
//!
//! * it runs while data is unacknowledged at the data level: started by a push if idle
//!   (`__mptcp_push_pending`), restarted by every advance of the data-ACK and stopped when
//!   everything is acknowledged (`__mptcp_clean_una`);
//! * its interval (`msk->timer_ival`) is set at every push decision (`mptcp_subflow_get_send`
//!   → `__mptcp_set_timeout`, here at every data transmission) to the longest time then left
//!   on an active subflow's pending timer (retransmission or loss probe), counting only
//!   subflows whose `stale_count` is zero, and `TCP_RTO_MIN` (200 ms) when there is none;
//!   every (re)start uses the interval last set, not the timers at the restart
//!   (`mptcp_reset_rtx_timer`);
//! * when it fires (`__mptcp_retrans`), `mptcp_subflow_get_retrans` picks the first subflow
//!   (in list order) that is active and has nothing outstanding at the TCP level; every
//!   subflow it passes over for holding data gets `mptcp_pm_subflow_chk_stale`. The picked
//!   subflow sends again the head data fragment of the connection's retransmission queue:
//!   from the data-ACK to the end of that fragment, at most what was sent already. One
//!   fragment per firing; then the timer restarts;
//! * `mptcp_pm_subflow_chk_stale` counts firings with no ACK on the subflow since the first
//!   (`stale_count`, reset by any ACK: `rcv_tstamp` moved). Beyond `stale_loss_cnt` (4) and
//!   with another active subflow counting fewer than 3, the subflow is marked stale and the
//!   whole retransmission queue is pushed again (`__mptcp_retransmit_pending_data`).
//!
//! Captured on the emulator (docs/fidelity.md): WiFi fails 0.3 s into a 1 MiB download; LTE,
//! idle at the data-level window, sends 292 bytes, then 32,728, then 32,728 of WiFi's data at
//! 0.31 s intervals, and the whole queue at the fifth firing.
//!
//! [`Scheduler::msk_retransmit`]: crate::sched::Scheduler::msk_retransmit

use crate::packet::MAX_PATHS;
use crate::time::{Duration, Time};

/// `TCP_RTO_MIN`: the timer's interval when no subflow has a retransmission timer pending.
pub const RTO_MIN: Duration = Duration::from_millis(200);
/// `net.mptcp.stale_loss_cnt` default.
pub const STALE_LOSS_CNT: u8 = 4;
/// Size of the MPTCP socket's data fragments: the application's data is copied into page
/// fragments of `SKB_FRAG_PAGE_ORDER` (32 KiB, `sk_page_frag_refill`), one `mptcp_data_frag`
/// each, collapsing consecutive writes into the same page (`mptcp_frag_can_collapse_to`).
pub const DFRAG: u64 = 32_768;

/// The MPTCP socket's retransmission timer and each subflow's staleness.
#[derive(Debug, Default)]
pub struct MskRetrans {
    deadline: Option<Time>,
    /// `msk->timer_ival`: the interval `mptcp_subflow_get_send` last computed
    /// (`__mptcp_set_timeout`), which every restart uses; `None` before the first push, read
    /// as `TCP_RTO_MIN`, the value `__mptcp_init_sock` starts it with (no restart comes before
    /// a push: the timer guards data sent).
    timer_ival: Option<Duration>,
    /// `subflow->stale_count`.
    stale_count: [u8; MAX_PATHS],
    /// `subflow->stale_rcv_tstamp`: the subflow's last ACK arrival when counting began.
    stale_stamp: [Option<Time>; MAX_PATHS],
    /// `subflow->stale`.
    stale: [bool; MAX_PATHS],
}

impl MskRetrans {
    /// When the timer fires, if it runs.
    pub fn deadline(&self) -> Option<Time> {
        self.deadline
    }

    /// `mptcp_reset_rtx_timer`: (re)start with the interval the last push set
    /// ([`MskRetrans::set_timeout`]).
    pub fn reset(&mut self, now: Time) {
        self.deadline = Some(now + self.timer_ival.unwrap_or(RTO_MIN));
    }

    /// `__mptcp_set_timeout` at a push decision: the interval later restarts use.
    pub fn set_timeout(&mut self, now: Time, timers: impl Iterator<Item = Option<Time>>) {
        self.timer_ival = Some(self.interval(now, timers));
    }

    /// `mptcp_stop_rtx_timer` (also: the timer fired and is not pending until restarted).
    pub fn stop(&mut self) {
        self.deadline = None;
    }

    /// `mptcp_set_timeout`: the longest remaining time of the subflows' pending timers
    /// (`timers[p]`), skipping subflows whose `stale_count` is not zero; `RTO_MIN` if none.
    pub fn interval(&self, now: Time, timers: impl Iterator<Item = Option<Time>>) -> Duration {
        let mut longest = Duration::ZERO;
        for (p, t) in timers.enumerate() {
            if let Some(t) = t {
                if p < MAX_PATHS && self.stale_count[p] == 0 {
                    longest = longest.max(t.saturating_since(now));
                }
            }
        }
        if longest > Duration::ZERO {
            longest
        } else {
            RTO_MIN
        }
    }

    /// `mptcp_pm_subflow_chk_stale`'s count for subflow `p`, whose last ACK arrived at
    /// `last_ack`: one more firing without progress, or zero once an ACK has arrived since the
    /// count began. Returns whether the count is past `stale_loss_cnt`.
    pub fn count(&mut self, p: usize, last_ack: Option<Time>) -> bool {
        if self.stale_count[p] == 0 {
            self.stale_stamp[p] = last_ack;
            self.stale_count[p] = 1;
        } else if self.stale_stamp[p] == last_ack {
            self.stale_count[p] = self.stale_count[p].saturating_add(1);
        } else {
            self.stale_count[p] = 0;
        }
        !self.stale[p] && self.stale_count[p] > STALE_LOSS_CNT
    }

    /// An active subflow other than `p` with fewer than `stale_loss_cnt - 1` counted firings
    /// (the alternative `mptcp_pm_subflow_chk_stale` looks for before it marks `p` stale).
    pub fn alternative(&self, p: usize, active: impl Iterator<Item = usize>) -> bool {
        let limit = (STALE_LOSS_CNT - 1).max(1);
        active
            .into_iter()
            .any(|q| q != p && self.stale_count[q] < limit)
    }

    pub fn mark_stale(&mut self, p: usize) {
        self.stale[p] = true;
    }

    /// `subflow->stale_count` of `p`.
    pub fn stale_count(&self, p: usize) -> u8 {
        self.stale_count[p]
    }

    pub fn is_stale(&self, p: usize) -> bool {
        self.stale[p]
    }

    /// An ACK arrived on `p`: its staleness ends (the kernel clears `stale` when the subflow
    /// makes progress again, and the next count starts from zero).
    pub fn on_ack(&mut self, p: usize) {
        self.stale[p] = false;
    }

    /// End (DSN) of the data fragment holding `dsn`.
    pub fn dfrag_end(dsn: u64) -> u64 {
        (dsn / DFRAG + 1) * DFRAG
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Time {
        Time::ZERO + Duration::from_millis(v)
    }

    #[test]
    fn interval_is_the_longest_pending_subflow_timer_or_rto_min() {
        let m = MskRetrans::default();
        assert_eq!(m.interval(ms(100), [None, None].into_iter()), RTO_MIN);
        let d = m.interval(ms(100), [Some(ms(400)), Some(ms(250))].into_iter());
        assert_eq!(d, Duration::from_millis(300));
    }

    #[test]
    fn a_counting_subflow_does_not_set_the_interval() {
        let mut m = MskRetrans::default();
        m.count(0, Some(ms(10)));
        let d = m.interval(ms(100), [Some(ms(900)), Some(ms(250))].into_iter());
        assert_eq!(d, Duration::from_millis(150));
    }

    #[test]
    fn stale_after_five_firings_without_an_ack_and_not_after_one_arrives() {
        // stale_count 1..5 with the same rcv_tstamp: past stale_loss_cnt (4) at the fifth.
        let mut m = MskRetrans::default();
        let got: Vec<bool> = (0..5).map(|_| m.count(0, Some(ms(10)))).collect();
        assert_eq!(got, [false, false, false, false, true]);
        // An ACK arrived since: the count restarts.
        let mut m = MskRetrans::default();
        for _ in 0..4 {
            m.count(0, Some(ms(10)));
        }
        assert!(!m.count(0, Some(ms(500))));
        assert_eq!(m.stale_count[0], 0);
    }

    #[test]
    fn an_alternative_must_count_fewer_than_three() {
        let mut m = MskRetrans::default();
        for _ in 0..3 {
            m.count(1, None);
        }
        assert!(!m.alternative(0, [0, 1].into_iter()));
        assert!(m.alternative(0, [0, 1, 2].into_iter()));
    }
}
