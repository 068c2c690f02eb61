//! The resolved scenario: every value in SI units (seconds, bytes, bits per second).
//!
//! Python parses and validates the user's TOML (units, unknown keys, `--set`), then hands this
//! structure over as JSON. `run --json` echoes it back as `scenario`. Field names are a contract
//! between `python/mpsched/scenario.py` and this file.

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub paths: Vec<PathSpec>,
    pub workload: Workload,
    #[serde(default)]
    pub transport: Transport,
    #[serde(default)]
    pub sim: SimOptions,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PathSpec {
    pub name: String,
    /// Forward (data direction) bottleneck.
    pub forward: LinkSpec,
    /// Reverse (ACK direction) link. Default: no rate limit, delay only.
    pub reverse: LinkSpec,
    /// MPTCP backup path (RFC 8684 §3.3.8): the `backup` scheduler uses it only while every
    /// other path is unavailable.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub backup: bool,
    /// Competing traffic on this path's bottleneck (see [`CrossTraffic`]).
    #[serde(default, skip_serializing_if = "CrossTraffic::is_none")]
    pub cross: CrossTraffic,
}

/// Competing traffic sharing a path's forward bottleneck (and its ACK direction) with the
/// connection: `tcp_flows` single-path TCP bulk flows with congestion control `cc`, and a
/// constant-bit-rate load of `cbr_bps` in 1,500-byte packets. The flows start at time 0
/// beside the connection, without handshakes, and send for the whole run.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CrossTraffic {
    #[serde(default)]
    pub tcp_flows: u32,
    /// Congestion control of the TCP flows; `None`: the scenario's `transport.cc`.
    #[serde(default)]
    pub cc: Option<String>,
    #[serde(default)]
    pub cbr_bps: f64,
}

impl CrossTraffic {
    pub fn is_none(&self) -> bool {
        self.tcp_flows == 0 && self.cbr_bps <= 0.0
    }
}

impl PathSpec {
    /// A path as `mpsched` builds one from `rate`, `rtt`, `queue` and `loss`: the forward link
    /// is the bottleneck (drop-tail buffer of `queue_s` of line rate, Bernoulli `loss`), the
    /// ACK direction has delay only, and each direction gets half the RTT.
    pub fn bottleneck(name: &str, rate_bps: f64, rtt_s: f64, queue_s: f64, loss: f64) -> Self {
        PathSpec {
            name: name.into(),
            forward: LinkSpec {
                rate_bps: Some(rate_bps),
                trace: None,
                delay_s: rtt_s / 2.0,
                queue: QueueSpec::Time(queue_s),
                loss,
                outages: vec![],
                handover: None,
            },
            reverse: LinkSpec {
                rate_bps: None,
                trace: None,
                delay_s: rtt_s / 2.0,
                queue: QueueSpec::Unlimited,
                loss: 0.0,
                outages: vec![],
                handover: None,
            },
            backup: false,
            cross: Default::default(),
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    /// Constant line rate, bits per second. `None` with no trace: unlimited (delay only).
    #[serde(default)]
    pub rate_bps: Option<f64>,
    /// Mahimahi trace file; wins over `rate_bps`.
    #[serde(default)]
    pub trace: Option<String>,
    /// One-way propagation delay, seconds.
    pub delay_s: f64,
    /// Drop-tail buffer.
    #[serde(default)]
    pub queue: QueueSpec,
    /// Bernoulli loss probability per packet.
    #[serde(default)]
    pub loss: f64,
    /// Scheduled outages `[start_s, end_s)`: the link delivers nothing and queues nothing new.
    #[serde(default)]
    pub outages: Vec<(f64, f64)>,
    /// Periodic handovers (Cech, TUM 2020, §5): rate and delay change while one lasts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handover: Option<Handover>,
}

/// LTE handovers as Cech, TUM 2020, §5 emulates them after Li et al., SIGCOMM 2018: every
/// `every_s` from `start_s` on, for `duration_s`, the link's rate is multiplied by `rate_factor`
/// (0.1: throughput /10) and its propagation delay by `delay_factor` (3: RTT ×3 when applied
/// to both directions).
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Handover {
    pub start_s: f64,
    pub every_s: f64,
    pub duration_s: f64,
    pub rate_factor: f64,
    pub delay_factor: f64,
}

impl Handover {
    /// Cech, TUM 2020, §5: every 15 s, 2 s long, throughput /10, RTT ×3.
    pub fn cech() -> Self {
        Handover {
            start_s: 15.0,
            every_s: 15.0,
            duration_s: 2.0,
            rate_factor: 0.1,
            delay_factor: 3.0,
        }
    }

    /// Whether a handover is under way at `t_s` seconds.
    pub fn active(&self, t_s: f64) -> bool {
        if t_s < self.start_s || self.every_s <= 0.0 {
            return false;
        }
        (t_s - self.start_s) % self.every_s < self.duration_s
    }
}

#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(tag = "unit", content = "value", rename_all = "lowercase")]
pub enum QueueSpec {
    /// Seconds of line rate (of the mean rate for a trace link).
    Time(f64),
    Packets(u64),
    Bytes(u64),
    /// At most this many packets in the link at once: queued, in transmission or propagating
    /// (a delay line of bounded capacity). With the whole round trip on this direction it
    /// bounds the sender's window, which is how Park et al. (R-TSC), IEEE TMC, set "the maximum
    /// number of in-flight packets W^Loss" below the path's BDP in their Fig. 7 simulations.
    Pipe(u64),
    #[default]
    Unlimited,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum Workload {
    /// Send as much as possible for `duration_s`.
    Bulk { duration_s: f64 },
    /// One download of `size_bytes`.
    Chunk { size_bytes: u64 },
    /// `count` downloads back to back, `think_s` apart (from the end of one to the start of the
    /// next); `hint` = the application marks chunk boundaries (Guo et al., MobiCom 2017, §5 hint API).
    Chunks {
        size_bytes: u64,
        count: u64,
        #[serde(default)]
        think_s: f64,
        #[serde(default = "yes")]
        hint: bool,
    },
    /// A live stream at `rate_bps` for `duration_s` (Park et al. (R-TSC), §II; see
    /// `crate::stream`): CBR when `cv` is 0, else VBR frames every `frame_interval_s`.
    Stream {
        rate_bps: f64,
        duration_s: f64,
        #[serde(default = "default_packet_bytes")]
        packet_bytes: u64,
        #[serde(default)]
        cv: f64,
        #[serde(default = "default_frame_interval")]
        frame_interval_s: f64,
        #[serde(default = "default_playout")]
        playout_delay_s: f64,
    },
}

fn default_packet_bytes() -> u64 {
    1448
}
fn default_frame_interval() -> f64 {
    1.0 / 30.0
}
fn default_playout() -> f64 {
    1.0
}

fn yes() -> bool {
    true
}

/// Linux `tcp_rmem[2]`: the most an autotuned receive buffer grows to.
pub const DEFAULT_RECV_BUFFER: u64 = 6 << 20;

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Transport {
    pub cc: String,
    /// Payload bytes per segment; [`MSS_BY_SCHEDULER`] (the default) picks what Linux uses for
    /// the scheduler's kind of connection ([`Transport::mss_for`]).
    pub mss: u32,
    pub init_cwnd: u32,
    /// Largest send buffer of a subflow (Linux `tcp_wmem[2]`, 4 MiB by default); buffers
    /// start at `tcp_sndbuf_expand`'s size and grow with the congestion window.
    pub send_buffer_bytes: u64,
    /// The connection's send buffer fixed at `send_buffer_bytes`, not autotuned, as an
    /// application's `SO_SNDBUF` locks it (`SOCK_SNDBUF_LOCK`: `tcp_should_expand_sndbuf` and
    /// `__mptcp_sync_sndbuf` leave it alone). Off by default; left out of results while off.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub send_buffer_lock: bool,
    /// The connection-level receive buffer. `None` (the default): autotuned as Linux's
    /// (`tcp_rcv_space_adjust` / `mptcp_rcv_space_adjust`) from `tcp_rmem[1]` = 128 KiB up to
    /// [`DEFAULT_RECV_BUFFER`] (`tcp_rmem[2]`). A size: fixed, all of it offered as window,
    /// as an application's SO_RCVBUF locks it.
    pub recv_buffer_bytes: Option<u64>,
    pub delayed_ack: bool,
    pub min_rto_s: f64,
    /// RFC 5681 §4.1 restart window after an idle period longer than the RTO (Linux's
    /// `net.ipv4.tcp_slow_start_after_idle`, on by default there and here).
    pub slow_start_after_idle: bool,
    /// How CUBIC's slow start ends: "linux" (classic HyStart of tcp_cubic.c, the default),
    /// "hystart++" (RFC 9406) or "off".
    pub hystart: String,
    /// Internal TCP pacing as Linux computes it (`tcp_update_pacing_rate`, EDT departure
    /// times, `tcp_internal_pacing`); off by default.
    pub pacing: bool,
    /// `TCP_NODELAY` on the sender: no Nagle (`tcp_nagle_check`), so a short segment leaves at
    /// once. Nagle runs on the subflows for `linux` (upstream MPTCP) and at the data level for
    /// the schedulers that decide segment by segment (the multipath-tcp.org kernel's
    /// `mptcp_write_xmit`; `SendBuffer::nagle_holds`). Off by default, as in Linux (the kernel
    /// runner sets it on the server's socket when on). Left out of results while off.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub nodelay: bool,
    /// Receiver policy (`mpsched_core::recv`): "default" or "rtsc" (Park et al. (R-TSC), §V).
    /// A scheduler name `NAME+POLICY` overrides it for one run.
    #[serde(skip_serializing_if = "is_default_receiver")]
    pub receiver: String,
}

fn is_default_receiver(r: &str) -> bool {
    r == "default"
}

/// `transport.mss` unset: chosen by the scheduler ([`Transport::mss_for`]).
pub const MSS_BY_SCHEDULER: u32 = 0;
/// Linux TCP over a 1,500-byte MTU: 1,460 less 12 bytes of timestamp option.
pub const MSS_TCP: u32 = 1448;
/// Linux MPTCP data segments: 40 bytes of options (timestamps and DSS) leave 1,420 bytes of
/// payload in a 1,514-byte frame.
pub const MSS_MPTCP: u32 = 1420;

impl Transport {
    /// The MSS a run with `scheduler` uses: the configured one, else 1,448 bytes for
    /// single-path TCP (`single`, `single:NAME`) and 1,420 for every multipath scheduler.
    pub fn mss_for(&self, scheduler: &str) -> u32 {
        if self.mss != MSS_BY_SCHEDULER {
            self.mss
        } else if scheduler == "single" || scheduler.starts_with("single:") {
            MSS_TCP
        } else {
            MSS_MPTCP
        }
    }
}

impl Scenario {
    /// The scenario as a run with `scheduler` sees it: `transport.mss` resolved.
    pub fn resolved_for(&self, scheduler: &str) -> std::borrow::Cow<'_, Scenario> {
        if self.transport.mss != MSS_BY_SCHEDULER {
            return std::borrow::Cow::Borrowed(self);
        }
        let mut sc = self.clone();
        sc.transport.mss = self.transport.mss_for(scheduler);
        std::borrow::Cow::Owned(sc)
    }
}

impl Default for Transport {
    fn default() -> Self {
        Transport {
            cc: "cubic".into(),
            mss: MSS_BY_SCHEDULER,
            init_cwnd: 10,
            send_buffer_bytes: 4 << 20,
            send_buffer_lock: false,
            recv_buffer_bytes: None,
            delayed_ack: true,
            min_rto_s: 0.2,
            slow_start_after_idle: true,
            hystart: "linux".into(),
            pacing: false,
            nodelay: false,
            receiver: "default".into(),
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct SimOptions {
    /// Receiver clock minus sender clock, seconds. No result may depend on it.
    pub clock_offset_s: f64,
    /// Hard stop, simulated seconds (a run that would go on longer is cut and flagged).
    pub max_time_s: f64,
    /// With a packet trace only: record every path's cwnd, srtt and OWD estimate this often
    /// (simulated seconds) into the trace's `sample_*` columns. 0 = never. No effect on results.
    #[serde(skip_serializing_if = "is_zero")]
    pub sample_interval_s: f64,
    /// Scheduled RTT changes (Shi et al., USENIX ATC 2018, Fig. 12, Fig. 15b).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub delay_changes: Vec<DelayChange>,
}

/// From `at_s` on, path number `path` has round-trip propagation delay `rtt_s`, half in each
/// direction.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DelayChange {
    pub path: usize,
    pub at_s: f64,
    pub rtt_s: f64,
}

fn is_zero(v: &f64) -> bool {
    *v == 0.0
}

impl Default for SimOptions {
    fn default() -> Self {
        SimOptions {
            clock_offset_s: 0.0,
            max_time_s: 3600.0,
            sample_interval_s: 0.0,
            delay_changes: Vec::new(),
        }
    }
}
