//! A kernel TCP subflow as schedulers see it: [`KernelView`], read from `TCP_INFO`
//! (include/uapi/linux/tcp.h, filled by `tcp_get_info`, net/ipv4/tcp.c), and the socket
//! options the proxy sets on every subflow.

use std::os::fd::AsRawFd;

use mpsched_core::packet::PathId;
use mpsched_core::sched::view::{SubflowState, SubflowView};
use mpsched_core::time::Duration;

/// `struct tcp_info` up to `tcpi_snd_wnd` (Linux 5.4+). The kernel copies
/// `min(optlen, sizeof)`, so older kernels leave the tail zero.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct TcpInfo {
    pub state: u8,
    pub ca_state: u8,
    pub retransmits: u8,
    pub probes: u8,
    pub backoff: u8,
    pub options: u8,
    pub wscale: u8,
    /// Bit 0: `tcpi_delivery_rate_app_limited`.
    pub app_limited_bits: u8,
    pub rto: u32,
    pub ato: u32,
    pub snd_mss: u32,
    pub rcv_mss: u32,
    pub unacked: u32,
    pub sacked: u32,
    pub lost: u32,
    pub retrans: u32,
    pub fackets: u32,
    pub last_data_sent: u32,
    pub last_ack_sent: u32,
    pub last_data_recv: u32,
    pub last_ack_recv: u32,
    pub pmtu: u32,
    pub rcv_ssthresh: u32,
    pub rtt: u32,
    pub rttvar: u32,
    pub snd_ssthresh: u32,
    pub snd_cwnd: u32,
    pub advmss: u32,
    pub reordering: u32,
    pub rcv_rtt: u32,
    pub rcv_space: u32,
    pub total_retrans: u32,
    pub pacing_rate: u64,
    pub max_pacing_rate: u64,
    pub bytes_acked: u64,
    pub bytes_received: u64,
    pub segs_out: u32,
    pub segs_in: u32,
    pub notsent_bytes: u32,
    pub min_rtt: u32,
    pub data_segs_in: u32,
    pub data_segs_out: u32,
    pub delivery_rate: u64,
    pub busy_time: u64,
    pub rwnd_limited: u64,
    pub sndbuf_limited: u64,
    pub delivered: u32,
    pub delivered_ce: u32,
    pub bytes_sent: u64,
    pub bytes_retrans: u64,
    pub dsack_dups: u32,
    pub reord_seen: u32,
    pub rcv_ooopack: u32,
    pub snd_wnd: u32,
}

/// Read `TCP_INFO` of a socket.
pub fn tcp_info(fd: &impl AsRawFd) -> std::io::Result<TcpInfo> {
    let mut info = TcpInfo::default();
    let mut len = std::mem::size_of::<TcpInfo>() as libc::socklen_t;
    // SAFETY: `info` is a plain-old-data buffer of `len` bytes; the kernel writes at most that.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut TcpInfo).cast(),
            &mut len,
        )
    };
    if rc == 0 {
        Ok(info)
    } else {
        Err(std::io::Error::last_os_error())
    }
}

fn setsockopt_raw(fd: &impl AsRawFd, level: i32, name: i32, val: &[u8]) -> std::io::Result<()> {
    // SAFETY: `val` is a valid buffer of the given length for the duration of the call.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            val.as_ptr().cast(),
            val.len() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Per-socket subflow settings (Guo et al., MobiCom 2017, §7.1: decoupled CUBIC on every
/// subflow; socket buffers 8 MB there, short queues here by default).
#[derive(Clone, Debug)]
pub struct SocketOpts {
    /// `TCP_CONGESTION`; the machine default may be anything (bbr here), so it is always set.
    pub cc: String,
    /// `TCP_NOTSENT_LOWAT`: the socket refuses writes beyond this many unsent bytes, so the
    /// scheduler decides late. `None` leaves the kernel default (unlimited).
    pub notsent_lowat: Option<u32>,
    /// `SO_SNDBUF` / `SO_RCVBUF` in bytes; `None` leaves autotuning on.
    pub sndbuf: Option<usize>,
    pub rcvbuf: Option<usize>,
}

impl Default for SocketOpts {
    fn default() -> Self {
        SocketOpts {
            cc: "cubic".into(),
            notsent_lowat: Some(16 * 1024),
            sndbuf: None,
            rcvbuf: None,
        }
    }
}

impl SocketOpts {
    pub fn apply(&self, fd: &impl AsRawFd) -> std::io::Result<()> {
        setsockopt_raw(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            self.cc.as_bytes(),
        )
        .map_err(|e| std::io::Error::new(e.kind(), format!("TCP_CONGESTION {:?}: {e}", self.cc)))?;
        let one: i32 = 1;
        setsockopt_raw(fd, libc::IPPROTO_TCP, libc::TCP_NODELAY, &one.to_ne_bytes())?;
        if let Some(l) = self.notsent_lowat {
            setsockopt_raw(
                fd,
                libc::IPPROTO_TCP,
                libc::TCP_NOTSENT_LOWAT,
                &(l as i32).to_ne_bytes(),
            )?;
        }
        if let Some(b) = self.sndbuf {
            setsockopt_raw(
                fd,
                libc::SOL_SOCKET,
                libc::SO_SNDBUF,
                &(b as i32).to_ne_bytes(),
            )?;
        }
        if let Some(b) = self.rcvbuf {
            setsockopt_raw(
                fd,
                libc::SOL_SOCKET,
                libc::SO_RCVBUF,
                &(b as i32).to_ne_bytes(),
            )?;
        }
        Ok(())
    }
}

/// Linux `tcp_ca_state` values (include/uapi/linux/tcp.h).
const TCP_CA_RECOVERY: u8 = 3;
const TCP_CA_LOSS: u8 = 4;

/// `tcpi_last_ack_recv` is kept in jiffies (10 ms at the coarsest kernel tick, HZ = 100): a
/// silence is judged that much later than the simulator judges it, so that a loopback
/// subflow (sRTT of microseconds) is not silent between two ticks.
pub const JIFFY_SLACK: std::time::Duration = std::time::Duration::from_millis(10);

/// A kernel subflow's snapshot, as [`SubflowView`]. `alive == false` (not connected yet, or
/// failed) reads as a subflow without window space and without an RTT sample.
#[derive(Clone, Copy, Debug, Default)]
pub struct KernelView {
    pub path: PathId,
    pub alive: bool,
    pub info: TcpInfo,
    /// Bytes the proxy may commit beyond the congestion window (it cannot see ACKs as they
    /// arrive, only poll; a little unsent data keeps the pipe fed between polls).
    pub slack: u64,
    /// Since when data has been outstanding (`tcpi_unacked` > 0), as the proxy saw it.
    pub busy_since: Option<std::time::Instant>,
    /// [`SubflowView::silent`] at the last refresh.
    pub silent: bool,
}

impl KernelView {
    /// A new `TCP_INFO` snapshot read at `now`. Silence as the simulator counts it
    /// ([`mpsched_core::subflow::sender::SubflowSender::silence_deadline`]): data outstanding,
    /// and neither an ACK (`tcpi_last_ack_recv`) nor the end of an idle stretch (seen by the
    /// proxy's polls, so up to a poll late) within one probe timeout, 2·sRTT plus 2 ms (plus
    /// rto_min, 200 ms, with one packet out), as Linux `tcp_schedule_loss_probe`, plus
    /// [`JIFFY_SLACK`]: `tcpi_last_ack_recv` counts whole jiffies.
    pub fn update(&mut self, info: TcpInfo, now: std::time::Instant) {
        self.info = info;
        if info.unacked == 0 {
            self.busy_since = None;
            self.silent = false;
            return;
        }
        let since = *self.busy_since.get_or_insert(now);
        let pto = if info.rtt == 0 {
            std::time::Duration::from_secs(1)
        } else {
            let extra = if info.unacked == 1 { 200_000 } else { 2_000 };
            std::time::Duration::from_micros(2 * info.rtt as u64 + extra)
        } + JIFFY_SLACK;
        let quiet = std::time::Duration::from_millis(info.last_ack_recv as u64);
        self.silent = quiet >= pto && now.duration_since(since) >= pto;
    }

    fn mss64(&self) -> u64 {
        self.info.snd_mss.max(1) as u64
    }
    /// Linux `tcp_packets_in_flight`: packets_out - (sacked_out + lost_out) + retrans_out.
    pub fn packets_in_flight(&self) -> u64 {
        let i = &self.info;
        (i.unacked as u64 + i.retrans as u64).saturating_sub(i.sacked as u64 + i.lost as u64)
    }
    /// Bytes the kernel holds for this subflow beyond its congestion window: how far a
    /// decision made now lags per-segment scheduling.
    pub fn committed_beyond_window(&self) -> u64 {
        (self.packets_in_flight() * self.mss64() + self.info.notsent_bytes as u64)
            .saturating_sub(self.info.snd_cwnd as u64 * self.mss64())
    }
}

impl SubflowView for KernelView {
    fn path(&self) -> PathId {
        self.path
    }
    fn mss(&self) -> u32 {
        self.info.snd_mss.max(1)
    }
    fn cwnd(&self) -> u64 {
        self.info.snd_cwnd as u64 * self.mss64()
    }
    fn ssthresh(&self) -> u64 {
        (self.info.snd_ssthresh as u64).saturating_mul(self.mss64())
    }
    fn in_flight(&self) -> u64 {
        self.packets_in_flight() * self.mss64() + self.info.notsent_bytes as u64
    }
    fn segments_in_flight(&self) -> u64 {
        self.in_flight().div_ceil(self.mss64())
    }
    /// `tcpi_unacked` is `packets_out`: SACKed and lost segments stay in it until the
    /// cumulative ACK, as in `sk_wmem_queued`.
    fn outstanding_bytes(&self) -> u64 {
        self.info.unacked as u64 * self.mss64() + self.info.notsent_bytes as u64
    }
    fn packets_out(&self) -> u64 {
        self.outstanding_bytes().div_ceil(self.mss64())
    }
    fn sacked_segments(&self) -> u64 {
        self.info.sacked as u64
    }
    fn has_cwnd_space(&self) -> bool {
        self.alive && self.in_flight() + self.mss64() <= self.cwnd() + self.slack
    }
    fn cwnd_free(&self) -> u64 {
        self.cwnd().saturating_sub(self.in_flight())
    }
    fn srtt(&self) -> Option<Duration> {
        (self.alive && self.info.rtt > 0).then(|| Duration::from_micros(self.info.rtt as u64))
    }
    fn rttvar(&self) -> Duration {
        Duration::from_micros(self.info.rttvar as u64)
    }
    fn min_rtt(&self) -> Option<Duration> {
        (self.alive && self.info.min_rtt > 0 && self.info.min_rtt != u32::MAX)
            .then(|| Duration::from_micros(self.info.min_rtt as u64))
    }
    /// The kernel reports no per-ACK sample; its smoothed RTT stands in.
    fn latest_rtt(&self) -> Option<Duration> {
        self.srtt()
    }
    fn rto(&self) -> Duration {
        Duration::from_micros(self.info.rto as u64)
    }
    fn silent(&self) -> bool {
        self.alive && self.silent
    }
    fn state(&self) -> SubflowState {
        match self.info.ca_state {
            TCP_CA_LOSS => SubflowState::Loss,
            TCP_CA_RECOVERY => SubflowState::Recovery,
            _ if self.info.snd_cwnd < self.info.snd_ssthresh => SubflowState::SlowStart,
            _ => SubflowState::CongestionAvoidance,
        }
    }
    fn bytes_sent(&self) -> u64 {
        self.info.bytes_sent
    }
    fn bytes_acked(&self) -> u64 {
        self.info.bytes_acked
    }
    fn delivery_rate_bps(&self) -> Option<f64> {
        (self.info.delivery_rate > 0).then_some(self.info.delivery_rate as f64 * 8.0)
    }
    fn pacing_rate_bps(&self) -> Option<f64> {
        let r = self.info.pacing_rate;
        (r > 0 && r != u64::MAX).then_some(r as f64 * 8.0)
    }
    fn notsent_bytes(&self) -> u64 {
        self.info.notsent_bytes as u64
    }
    /// Connected and not failed: what Linux MPTCP requires of a subflow before it schedules
    /// on it (`__mptcp_subflow_active`: ESTABLISHED or CLOSE_WAIT), so that `backup` fails
    /// over to its backup paths when the primary is down.
    fn is_established(&self) -> bool {
        self.alive
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn silent_after_a_probe_timeout_without_ack_not_after_idle() {
        // sRTT 50 ms, five packets out: PTO = 102 ms, judged after 112 ms (`JIFFY_SLACK`).
        let info = |last_ack_recv| TcpInfo {
            unacked: 5,
            rtt: 50_000,
            last_ack_recv,
            ..Default::default()
        };
        let t0 = std::time::Instant::now();
        let ms = |n| t0 + std::time::Duration::from_millis(n);
        let mut v = KernelView {
            alive: true,
            ..Default::default()
        };
        // Idle for 10 s, then data: the old ACK is no silence until a PTO of sending passes.
        v.update(info(10_000), t0);
        assert!(!v.silent());
        v.update(info(10_111), ms(111));
        assert!(!v.silent());
        v.update(info(10_112), ms(112));
        assert!(v.silent());
        // An ACK: quiet again for less than a PTO.
        v.update(info(40), ms(150));
        assert!(!v.silent());
        // Everything acknowledged: no silence, whatever the age of the last ACK.
        v.update(
            TcpInfo {
                unacked: 0,
                ..info(500)
            },
            ms(700),
        );
        assert!(!v.silent() && v.busy_since.is_none());
    }

    #[test]
    fn connected_loopback_socket_reports_cwnd_and_mss() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        SocketOpts::default().apply(&c).unwrap();
        let v = KernelView {
            path: 0,
            alive: true,
            info: tcp_info(&c).unwrap(),
            slack: 0,
            ..Default::default()
        };
        // Linux's initial window is 10 segments (RFC 6928, TCP_INIT_CWND).
        assert_eq!(v.info.snd_cwnd, 10);
        assert!(v.mss() > 0);
        assert_eq!(v.cwnd(), 10 * v.mss() as u64);
        assert!(v.has_cwnd_space());
        assert_eq!(v.committed_beyond_window(), 0);
    }

    #[test]
    fn dead_subflow_has_no_space_and_no_rtt() {
        let v = KernelView::default();
        assert!(!v.has_cwnd_space());
        assert_eq!(v.srtt(), None);
    }

    #[test]
    fn unknown_congestion_control_is_reported_by_name() {
        let s = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let opts = SocketOpts {
            cc: "no-such-cc".into(),
            ..SocketOpts::default()
        };
        let e = opts.apply(&s).unwrap_err().to_string();
        assert!(e.contains("no-such-cc"), "{e}");
    }
}
